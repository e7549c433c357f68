/* split.c - dividing a phase's work among workers (see split.h). */
#include "split.h"

int64_t split_even(int64_t total, int n, int i)
{
	if (n < 1 || i < 0 || i >= n || total <= 0)
		return 0;
	return total / n + (i < total % n ? 1 : 0);
}

void split_requests(int64_t requests, int conc, int n, int i, int64_t *base, int64_t *count)
{
	*base = *count = 0;
	if (requests <= 0 || conc < 1 || n < 1 || i < 0 || i >= n)
		return;
	/* the slots of the workers before i: i * (conc / n) + min(i, conc % n) */
	int64_t before = (int64_t)i * (conc / n) + (i < conc % n ? i : conc % n);
	int64_t mine = split_even(conc, n, i);
	int64_t b0 = (int64_t)((__int128)requests * before / conc);
	int64_t b1 = (int64_t)((__int128)requests * (before + mine) / conc);
	*base = b0;
	*count = b1 - b0;
}
