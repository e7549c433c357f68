/* fault.c - which generation request of headroom-mock gets an injected
 * failure (--fail-429, --fail-500, --fail-reset, --fail-malformed,
 * --fail-stall, --fail-seed; docs/mock.md, "Failure injection"), and which
 * response ends early as at an EOS token (--early-stop; docs/mock.md,
 * "Early stop").
 *
 * Generation request n (1, 2, ... in the order the mock reads them; the n
 * of its response id chatcmpl-mock-n / cmpl-mock-n) draws
 *
 *   u = (splitmix64_n(seed) >> 11) * 2^-53      in [0, 1)
 *
 * where splitmix64_n(seed) is the n-th output of SplitMix64 started at
 * state `seed` (state += 0x9e3779b97f4a7c15, then the usual finaliser).
 * The unit interval is cut in the order 429, 500, reset, malformed, stall
 * into pieces as long as the probabilities (summed left to right in double
 * precision); u falls in at most one of them, and the rest of the interval
 * is "no failure". The draw depends on nothing else (not on timing, the
 * connection or the other requests), so a client can compute which
 * request fails how; over N requests each count is exactly predictable.
 * What each failure does is in api.c. SplitMix64 also makes the
 * embeddings' vectors (route_pool.c).
 *
 * The early-stop draw of response n is a second, independent stream from
 * the same seed:
 *
 *   v = (splitmix64_n(seed XOR 0x656f732d73746f70) >> 11) * 2^-53
 *
 * (the constant is "eos-stop" in ASCII), and the response ends early when
 * v < --early-stop. What an early end does is in api.c.
 */
#include "mock.h"

#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL
#define EARLY_STOP_SALT 0x656f732d73746f70ULL /* "eos-stop" */

uint64_t mock_splitmix64(uint64_t seed, uint64_t n)
{
	uint64_t z = seed + n * SPLITMIX_GAMMA;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

enum mock_fault fault_draw(const struct mock_config *cfg, uint64_t n)
{
	if (!cfg->faults)
		return FAULT_NONE;
	double u = (double)(mock_splitmix64(cfg->fail_seed, n) >> 11) * 0x1p-53;
	double edge = 0;
	for (int f = FAULT_429; f < FAULT__COUNT; f++) {
		edge += cfg->fail_p[f];
		if (cfg->fail_p[f] > 0 && u < edge)
			return (enum mock_fault)f;
	}
	return FAULT_NONE;
}

bool early_stop_draw(const struct mock_config *cfg, uint64_t n)
{
	if (cfg->early_stop <= 0)
		return false;
	double v = (double)(mock_splitmix64(cfg->fail_seed ^ EARLY_STOP_SALT, n) >> 11) * 0x1p-53;
	return v < cfg->early_stop;
}

const char *fault_name(enum mock_fault f)
{
	static const char *const names[FAULT__COUNT] = {
	    [FAULT_NONE] = "none",
	    [FAULT_429] = "429",
	    [FAULT_500] = "500",
	    [FAULT_RESET] = "reset",
	    [FAULT_MALFORMED] = "malformed",
	    [FAULT_STALL] = "stall",
	};
	return (unsigned)f < FAULT__COUNT ? names[f] : "?";
}
