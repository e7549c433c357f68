/* spill.h - int64 values sorted with bounded memory.
 *
 * Values are pushed in any order, then read back ascending. Up to `cap`
 * of them are held in memory; beyond that each full buffer is sorted and
 * written to an unlinked temporary file as one run, and reading merges
 * the runs (a heap of one 64 KiB window per run). Memory: cap values plus
 * the radix sort's copy of them, plus 64 KiB per run when reading; disk:
 * 8 bytes per value. The summary's load figures (server/summary.c) use it
 * for the start and done times of every request.
 */
#ifndef HR_SPILL_H
#define HR_SPILL_H

#include <stddef.h>
#include <stdint.h>

struct spill;

/* cap >= 1 values in memory; dir for the temporary file (NULL: $TMPDIR,
 * else /tmp). */
struct spill *spill_new(size_t cap, const char *dir);
void spill_free(struct spill *s);
/* 0, or -1 when a run could not be written (err says why). */
int spill_push(struct spill *s, int64_t v, char *err);
/* Ends the pushes: 0 or -1 (err). Then spill_next reads ascending. */
int spill_finish(struct spill *s, char *err);
/* 1 with *v set, 0 at the end, -1 on a read error (err). */
int spill_next(struct spill *s, int64_t *v, char *err);
size_t spill_count(const struct spill *s);
/* runs written to disk (0: everything stayed in memory) */
size_t spill_runs(const struct spill *s);

#endif
