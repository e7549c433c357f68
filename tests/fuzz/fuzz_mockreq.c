/* fuzz_mockreq.c - libFuzzer target for headroom-mock's quick reader of
 * chat and text completion request bodies (gen_parse_fast in
 * mock/genreq.c), held to the jansson reading it stands in for
 * (api_parse_gen_json in mock/route_openai.c).
 *
 * Input: byte 0's low bit picks chat (1) or text completions (0); the rest
 * is the request body, parsed from a private buffer of exactly its size
 * (so that overreads are caught). Checked: whenever the quick reader takes
 * a body, jansson's reading succeeds too and gives the same request
 * (stream, include_usage, max_tokens, ignore_eos, min_tokens,
 * prompt_tokens); when it gives up, jansson's reading runs as the mock
 * would run it. Any violation aborts.
 *
 * Build: see tests/CMakeLists.txt (the mock's sources but main.c are
 * compiled in).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "mock.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool chat = data[0] & 1;
	size_t len = size - 1;
	char *body = malloc(len ? len : 1);
	REQUIRE(body != NULL);
	if (len)
		memcpy(body, data + 1, len);
	struct gen_req a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	char err[HR_ERRLEN];
	bool fast = gen_parse_fast(body, len, chat, &a);
	int rc = api_parse_gen_json(body, len, chat, &b, err);
	if (fast) {
		REQUIRE(rc == 0);
		REQUIRE(a.stream == b.stream);
		REQUIRE(a.include_usage == b.include_usage);
		REQUIRE(a.max_tokens == b.max_tokens);
		REQUIRE(a.ignore_eos == b.ignore_eos);
		REQUIRE(a.min_tokens == b.min_tokens);
		REQUIRE(a.prompt_tokens == b.prompt_tokens);
		REQUIRE(!a.details && !a.seed_given && !a.prefix && !a.pq);
	}
	free(body);
	return 0;
}
