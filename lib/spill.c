/* spill.c - int64 values sorted with bounded memory (see spill.h). */
#include "spill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"
#include "util.h"

#define SPILL_WINDOW 8192 /* values read at a time from one run */

struct run {
	off_t off;     /* in values */
	size_t len;    /* values */
	size_t next;   /* values of the run read so far */
	int64_t *win;  /* window: win[pos..have) */
	size_t pos, have;
};

struct spill {
	size_t cap;
	int64_t *buf;
	size_t nbuf, total;
	char *dir;
	int fd; /* -1 until the first run */
	struct run *runs;
	size_t nruns;
	size_t mem_pos; /* reading the buffer alone */
	size_t *heap;   /* run indices by their current value */
	size_t nheap;
	int finished;
};

struct spill *spill_new(size_t cap, const char *dir)
{
	struct spill *s = xcalloc(1, sizeof *s);
	s->cap = cap ? cap : 1;
	s->fd = -1;
	const char *d = dir ? dir : getenv("TMPDIR");
	s->dir = xstrdup(d && *d ? d : "/tmp");
	return s;
}

void spill_free(struct spill *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	for (size_t i = 0; i < s->nruns; i++)
		free(s->runs[i].win);
	free(s->runs);
	free(s->heap);
	free(s->buf);
	free(s->dir);
	free(s);
}

static int write_all(int fd, const void *p, size_t len, off_t off)
{
	const char *c = p;
	while (len) {
		ssize_t w = pwrite(fd, c, len, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Sorts the buffer and writes it as a run. */
static int flush_run(struct spill *s, char *err)
{
	if (s->fd < 0) {
		size_t n = strlen(s->dir) + 32;
		char *path = xmalloc(n);
		snprintf(path, n, "%s/headroom-spill-XXXXXX", s->dir);
		s->fd = mkstemp(path);
		if (s->fd >= 0)
			unlink(path);
		free(path);
		if (s->fd < 0)
			return errf(err, "cannot create a temporary file in %s: %s", s->dir,
				    strerror(errno));
	}
	stats_sort_i64(s->buf, s->nbuf);
	off_t off = s->nruns ? s->runs[s->nruns - 1].off + (off_t)s->runs[s->nruns - 1].len : 0;
	if (write_all(s->fd, s->buf, s->nbuf * sizeof *s->buf, off * (off_t)sizeof *s->buf) < 0)
		return errf(err, "cannot write a temporary file in %s: %s", s->dir,
			    errno ? strerror(errno) : "short write");
	s->runs = xrealloc(s->runs, (s->nruns + 1) * sizeof *s->runs);
	s->runs[s->nruns++] = (struct run){.off = off, .len = s->nbuf};
	s->nbuf = 0;
	return 0;
}

int spill_push(struct spill *s, int64_t v, char *err)
{
	if (!s->buf)
		s->buf = xmalloc(s->cap * sizeof *s->buf);
	if (s->nbuf == s->cap && flush_run(s, err) < 0)
		return -1;
	s->buf[s->nbuf++] = v;
	s->total++;
	return 0;
}

/* Refills run r's window; 0 when it is exhausted, -1 on error. */
static int refill(struct spill *s, struct run *r, char *err)
{
	size_t want = r->len - r->next;
	if (want > SPILL_WINDOW)
		want = SPILL_WINDOW;
	r->pos = r->have = 0;
	if (!want)
		return 0;
	size_t bytes = want * sizeof *r->win, got = 0;
	off_t off = (r->off + (off_t)r->next) * (off_t)sizeof *r->win;
	while (got < bytes) {
		ssize_t n = pread(s->fd, (char *)r->win + got, bytes - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return errf(err, "cannot read a temporary file back: %s",
				    n < 0 ? strerror(errno) : "it is shorter than written");
		got += (size_t)n;
	}
	r->next += want;
	r->have = want;
	return 1;
}

static int64_t head(const struct spill *s, size_t h)
{
	const struct run *r = &s->runs[s->heap[h]];
	return r->win[r->pos];
}

static void sift_down(struct spill *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < s->nheap && head(s, l) < head(s, m))
			m = l;
		if (l + 1 < s->nheap && head(s, l + 1) < head(s, m))
			m = l + 1;
		if (m == i)
			return;
		size_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

int spill_finish(struct spill *s, char *err)
{
	s->finished = 1;
	if (!s->nruns) { /* everything in memory */
		stats_sort_i64(s->buf, s->nbuf);
		return 0;
	}
	if (s->nbuf && flush_run(s, err) < 0)
		return -1;
	free(s->buf);
	s->buf = NULL;
	s->heap = xmalloc(s->nruns * sizeof *s->heap);
	for (size_t i = 0; i < s->nruns; i++) {
		struct run *r = &s->runs[i];
		r->win = xmalloc(SPILL_WINDOW * sizeof *r->win);
		int rc = refill(s, r, err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			s->heap[s->nheap++] = i;
	}
	for (size_t i = s->nheap; i-- > 0;)
		sift_down(s, i);
	return 0;
}

int spill_next(struct spill *s, int64_t *v, char *err)
{
	if (!s->nruns) {
		if (s->mem_pos >= s->nbuf)
			return 0;
		*v = s->buf[s->mem_pos++];
		return 1;
	}
	if (!s->nheap)
		return 0;
	struct run *r = &s->runs[s->heap[0]];
	*v = r->win[r->pos++];
	if (r->pos == r->have) {
		int rc = refill(s, r, err);
		if (rc < 0)
			return -1;
		if (rc == 0)
			s->heap[0] = s->heap[--s->nheap];
	}
	sift_down(s, 0);
	return 1;
}

size_t spill_count(const struct spill *s)
{
	return s->total;
}

size_t spill_runs(const struct spill *s)
{
	return s->nruns;
}
