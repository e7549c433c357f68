/* test_split.c - the work split (lib/split.c): every split covers its
 * whole exactly once, whatever the pool size. */
#include <stdlib.h>
#include <string.h>

#include "split.h"
#include "tap.h"

/* slots and concurrency-mode requests: sums, proportions, contiguity */
static void test_requests(void)
{
	static const int64_t counts[] = {0, 1, 2, 3, 7, 10, 99, 100, 101, 1000, 123457,
					 100000000};
	int bad = 0;
	for (int conc = 1; conc <= 40; conc++)
		for (int n = 1; n <= conc; n++) {
			int64_t slots = 0;
			for (int i = 0; i < n; i++) {
				int64_t s = split_even(conc, n, i);
				bad += s < conc / n || s > conc / n + 1;
				slots += s;
			}
			bad += slots != conc;
			for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
				int64_t R = counts[c], next = 0;
				for (int i = 0; i < n; i++) {
					int64_t base, cnt;
					split_requests(R, conc, n, i, &base, &cnt);
					bad += base != next || cnt < 0;
					/* within one request of its slots' share */
					double share = (double)R * (double)split_even(conc, n, i) / conc;
					bad += (double)cnt < share - 1 || (double)cnt > share + 1;
					next = base + cnt;
				}
				bad += next != R;
			}
		}
	CHECK_EQ_INT(bad, 0);
}

/* rate arrivals: each taken by exactly one worker, the limits summing */
static void test_arrivals(void)
{
	int bad = 0;
	for (int n = 1; n <= 17; n++) {
		for (uint64_t k = 0; k < 2000; k++) {
			int takers = 0;
			for (int i = 0; i < n; i++)
				takers += split_takes(k, n, i);
			bad += takers != 1;
		}
		for (int64_t total = 0; total < 200; total++) {
			int64_t sum = 0;
			for (int i = 0; i < n; i++)
				sum += split_even(total, n, i);
			bad += sum != total;
			/* a worker's limit is how many of the first `total` arrivals it takes */
			for (int i = 0; i < n; i++) {
				int64_t taken = 0;
				for (int64_t k = 0; k < total; k++)
					taken += split_takes((uint64_t)k, n, i);
				bad += taken != split_even(total, n, i);
			}
		}
	}
	CHECK_EQ_INT(bad, 0);
}

/* local units map one to one onto global ones */
static void test_units(void)
{
	int bad = 0;
	for (int n = 1; n <= 9; n++) {
		unsigned char seen[1000];
		memset(seen, 0, sizeof seen);
		for (int i = 0; i < n; i++)
			for (uint64_t u = 0; u * (uint64_t)n + (uint64_t)i < sizeof seen; u++) {
				uint64_t g = split_global(u, n, i);
				bad += g >= sizeof seen || seen[g]++ != 0;
				bad += !split_takes(g, n, i);
			}
		for (size_t g = 0; g < sizeof seen; g++)
			bad += seen[g] != 1;
	}
	CHECK_EQ_INT(bad, 0);
	/* out of range: nothing */
	CHECK_EQ_INT(split_even(10, 0, 0), 0);
	CHECK_EQ_INT(split_even(10, 3, 3), 0);
	int64_t b, c;
	split_requests(10, 4, 2, 5, &b, &c);
	CHECK(b == 0 && c == 0);
}

int main(void)
{
	test_requests();
	test_arrivals();
	test_units();
	return tap_done();
}
