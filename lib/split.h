/* split.h - how one phase's work is divided among a pool of workers.
 *
 * The one definition both sides use: the daemon, which tells each worker
 * its share (server/share.c), and the workers, which take their part of
 * the global schedule (worker/load.c). Pure functions of their arguments,
 * so that a run's merged traffic is the requested one however many
 * workers share it (api/protocol.md, "SCHEDULE payload"; the unit test
 * checks every split covers its whole exactly once).
 *
 *   slots     concurrency C over n workers: C / n each, the first C % n
 *             one more (split_even);
 *   requests  a concurrency run's R requests in proportion to the slots,
 *             exact in sum by cumulative floors: worker i sends the
 *             global indices [R * S_i / C, R * S_{i+1} / C) where S_i is
 *             the slots of the workers before it (split_requests);
 *   arrivals  a rate schedule's arrival k is worker k mod n's
 *             (split_takes), its request limit its even part of the
 *             total (split_even);
 *   units     a worker's local unit u (a slot's session, a slot in a
 *             ramp) is global unit u * n + i (split_global).
 */
#ifndef HR_SPLIT_H
#define HR_SPLIT_H

#include <stdint.h>

/* Worker i's part of total split over n as evenly as possible. */
int64_t split_even(int64_t total, int n, int i);

/* A concurrency run's requests: worker i's first global request index and
 * count, in proportion to its slots of conc. */
void split_requests(int64_t requests, int conc, int n, int i, int64_t *base, int64_t *count);

/* Whether arrival k of a rate schedule is worker i's (of n). */
static inline int split_takes(uint64_t k, int n, int i)
{
	return k % (uint64_t)n == (uint64_t)i;
}

/* The global index of worker i's (of n) local unit u. */
static inline uint64_t split_global(uint64_t u, int n, int i)
{
	return u * (uint64_t)n + (uint64_t)i;
}

#endif
