/* fuzz_llmmessages.c - libFuzzer target for the Anthropic Messages event
 * and answer readers (worker/llmread.c; the checks are llmfuzz.h's).
 *
 * Build: clang -fsanitize=fuzzer,address -Ilib -Iworker tests/fuzz/fuzz_llmmessages.c \
 *        worker/llmread.c lib/sse.c lib/dynbuf.c lib/util.c -ljansson
 */
#include "llmfuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return llm_fuzz(true, data, size);
}
