/* test_spill.c - unit tests of lib/spill.c: values read back ascending and
 * complete whether they stayed in memory or went to many sorted runs on
 * disk (including duplicates, extremes and a run of one value), and a
 * directory that cannot take the temporary file is an error, not a loss. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "spill.h"
#include "stats.h"
#include "tap.h"
#include "util.h"

static void check_sorted_copy(size_t n, size_t cap, int dups)
{
	int64_t *v = malloc(n * sizeof *v);
	char err[HR_ERRLEN] = "";
	struct spill *s = spill_new(cap, NULL);
	int ok = 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t h = rng_hash(5, cap, i);
		v[i] = dups ? (int64_t)(h % 7) - 3 : (int64_t)h;
		if (i == 1)
			v[i] = INT64_MIN;
		if (i == 2)
			v[i] = INT64_MAX;
		ok &= spill_push(s, v[i], err) == 0;
	}
	CHECK(ok);
	CHECK_EQ_INT(spill_finish(s, err), 0);
	CHECK_EQ_INT(spill_count(s), n);
	if (cap < n)
		CHECK_EQ_INT(spill_runs(s), (n + cap - 1) / cap);
	else
		CHECK_EQ_INT(spill_runs(s), 0);
	stats_sort_i64(v, n);
	size_t got = 0;
	int64_t x;
	int same = 1;
	while (spill_next(s, &x, err) == 1) {
		same &= got < n && v[got] == x;
		got++;
	}
	tap_ok(same && got == n, "n %zu cap %zu dups %d: %zu values back in order", n, cap, dups,
	       got);
	spill_free(s);
	free(v);
}

static void test_bad_dir(void)
{
	char err[HR_ERRLEN] = "";
	struct spill *s = spill_new(2, "/nonexistent-dir/for/spill");
	int rc = 0;
	for (int i = 0; i < 5 && rc == 0; i++)
		rc = spill_push(s, i, err);
	CHECK_EQ_INT(rc, -1);
	CHECK(strstr(err, "/nonexistent-dir/for/spill") != NULL);
	spill_free(s);
}

int main(void)
{
	check_sorted_copy(0, 10, 0);
	check_sorted_copy(3, 1, 0);
	check_sorted_copy(1000, 5000, 0);
	check_sorted_copy(100000, 100, 0);  /* 1,000 runs */
	check_sorted_copy(100000, 30000, 1); /* 4 runs of duplicates */
	check_sorted_copy(20000, 8192, 0);   /* runs the size of a window */
	test_bad_dir();
	return tap_done();
}
