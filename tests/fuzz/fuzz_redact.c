/* fuzz_redact.c - libFuzzer target for lib/redact.c.
 *
 * The input is a URL (any bytes up to the first NUL). redact_url into a
 * buffer of every size from 0 to five times the input's plus 32: the result is
 * always terminated; -1 only leaves "" or happens when the buffer is too
 * small for the full answer; when it fits, the answer is the same whatever
 * the size, and redacting it again gives the same answer (idempotent). The
 * header name predicate must not crash.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib \
 *        tests/fuzz/fuzz_redact.c lib/redact.c -ljansson
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *in = malloc(size + 1);
	memcpy(in, data, size);
	in[size] = '\0';
	size_t n = strlen(in);
	(void)redact_header_name(in);
	size_t big = 5 * n + 32; /* each redaction adds at most 10 bytes per 3 of input */
	char *full = malloc(big);
	int rf = redact_url(in, full, big);
	REQUIRE(rf == 0 || rf == 1);
	if (rf == 0)
		REQUIRE(strcmp(full, in) == 0);
	char *again = malloc(big);
	int ra = redact_url(full, again, big);
	REQUIRE(ra >= 0);
	REQUIRE(strcmp(again, full) == 0); /* idempotent */
	char *out = malloc(big);
	for (size_t cap = 0; cap < big; cap++) {
		memset(out, 'Z', big);
		int r = redact_url(in, out, cap);
		if (cap == 0) {
			REQUIRE(r == -1);
			continue;
		}
		REQUIRE(memchr(out, '\0', cap) != NULL);
		if (r == -1)
			REQUIRE(out[0] == '\0' && strlen(full) + 1 > cap);
		else
			REQUIRE(r == rf && strcmp(out, full) == 0);
	}
	free(out);
	free(again);
	free(full);
	free(in);
	return 0;
}
