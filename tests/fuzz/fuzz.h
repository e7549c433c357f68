/* fuzz.h - what every libFuzzer target here shares: the entry point's
 * declaration and REQUIRE, which aborts (a finding) when an invariant of
 * the code under test does not hold. */
#ifndef HR_FUZZ_H
#define HR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                                              \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__,       \
			        #cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
