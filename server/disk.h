/* disk.h - the store's health: free space on the data directory against
 * the daemon's floor (--min-free-mb), and whether the store's latest
 * commit failed. The runner checks the floor before each run; GET
 * /api/v1/healthz reports a degraded store (docs/operations.md).
 */
#ifndef HR_DISK_H
#define HR_DISK_H

#include <jansson.h>

#include "store.h"

/* Default of --min-free-mb. */
#define HR_MIN_FREE_MB_DEFAULT 256

/* Set once at start-up, before any thread reads them: the data directory
 * (borrowed, must outlive the daemon) and the floor in MiB (0: none). */
void disk_configure(const char *data_dir, long long min_free_mb);

/* Free space for an unprivileged writer on the data directory, in MiB,
 * or -1 with err. */
long long disk_free_mb(char *err);

/* 0 when the free space is at or above the floor (or cannot be read: the
 * store then reports its own errors); -1 with why (HR_ERRLEN bytes), a
 * sentence naming the directory, the free space and the floor. */
int disk_check_floor(char *why);

/* The store's reserve: DATA/headroom.reserve, HR_STORE_RESERVE_MB of
 * allocated space that the runner gives back (deletes) when the store
 * fails for lack of room, so that the run's end (state, reason, summary)
 * can still be written to a full disk. Made at start-up and before each
 * run when missing. disk_reserve_make returns 0 (held) or -1 with err.
 * 8 MiB: a run's end after a full disk (its summary with intervals, its
 * run_metrics rows and the index updates, through the WAL) was measured
 * to need between 2 and 4 MiB (test_durability); twice that for margin. */
#define HR_STORE_RESERVE_MB 8
int disk_reserve_make(char *err);
/* Deletes the reserve; returns 1 if it was held. */
int disk_reserve_release(void);

/* NULL when the store is healthy (the last commit succeeded, the free
 * space is at or above the floor, the reserve is held), else a new object
 * for healthz's "store" member: {"reason", "free_mb", "min_free_mb",
 * "last_commit_failed", "commit_failures", "reserve_held"}. Any thread. */
json_t *disk_store_health(struct store *s);

#endif
