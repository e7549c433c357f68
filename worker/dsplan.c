/* dsplan.c - which dataset entry each request takes (dsplan.h). */
#include "dsplan.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "trace.h"
#include "util.h"

int dsplan_init(struct dsplan *p, const struct share *sh, uint64_t seed, char *err)
{
	memset(p, 0, sizeof *p);
	struct ds_error de;
	if (dataset_load_file(sh->ds_path, (enum ds_format)sh->ds_format, &sh->ds_opts, &p->ds,
	                      &de) < 0)
		return errf(err, "workload.dataset: %s", de.message);
	p->sampling = sh->ds_sampling;
	p->seed = seed;
	p->sessions = p->ds.format == DS_MULTI_TURN;
	p->units = p->sessions ? p->ds.n_sessions : p->ds.n;
	for (size_t i = 0; p->sessions && i < p->ds.n_sessions; i++)
		if (p->ds.s[i].n == 0) {
			dataset_release(&p->ds);
			return errf(err, "workload.dataset: conversation %zu has no turns", i + 1);
		}
	if (p->units == 0) {
		dataset_release(&p->ds);
		return errf(err, "workload.dataset: the dataset has no entries to send");
	}
	if (p->sampling == SPEC_SAMPLE_SHUFFLE) {
		p->perm = xmalloc(p->units * sizeof *p->perm);
		for (size_t i = 0; i < p->units; i++)
			p->perm[i] = (uint32_t)i;
		for (size_t i = p->units - 1; i > 0; i--) { /* Fisher-Yates, seeded */
			size_t j = (size_t)(rng_uniform(seed, RNG_STREAM_DATASET, i) * (double)(i + 1));
			if (j > i)
				j = i;
			uint32_t t = p->perm[i];
			p->perm[i] = p->perm[j];
			p->perm[j] = t;
		}
	}
	return 0;
}

void dsplan_release(struct dsplan *p)
{
	dataset_release(&p->ds);
	free(p->perm);
	free(p->order);
	memset(p, 0, sizeof *p);
}

uint32_t dsplan_unit(const struct dsplan *p, uint64_t k)
{
	switch (p->sampling) {
	case SPEC_SAMPLE_RANDOM: {
		uint64_t u = (uint64_t)(rng_uniform(p->seed, RNG_STREAM_DATASET, k) * (double)p->units);
		return (uint32_t)(u < p->units ? u : p->units - 1);
	}
	case SPEC_SAMPLE_SHUFFLE:
		return p->perm[k % p->units];
	default:
		return (uint32_t)(k % p->units);
	}
}

struct timed_index {
	double t_ms;
	uint32_t i;
};

static int by_time(const void *a, const void *b)
{
	const struct timed_index *x = a, *y = b;
	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i; /* stable: file order on ties */
}

void dsplan_trace(struct dsplan *p, struct trace *out)
{
	const struct dataset *d = &p->ds;
	if (d->format != DS_MOONCAKE_TRACE) { /* (mooncake entries are sorted already) */
		/* the keys travel with the indices: qsort has no context argument */
		struct timed_index *keys = xmalloc((d->n ? d->n : 1) * sizeof *keys);
		for (size_t i = 0; i < d->n; i++)
			keys[i] = (struct timed_index){d->e[i].t_ms, (uint32_t)i};
		qsort(keys, d->n, sizeof *keys, by_time);
		free(p->order);
		p->order = xmalloc((d->n ? d->n : 1) * sizeof *p->order);
		for (size_t i = 0; i < d->n; i++)
			p->order[i] = keys[i].i;
		free(keys);
	}
	out->n = d->n;
	out->e = xcalloc(d->n ? d->n : 1, sizeof *out->e);
	for (size_t i = 0; i < d->n; i++) {
		const struct ds_entry *e = &d->e[p->order ? p->order[i] : i];
		struct trace_entry *t = &out->e[i];
		t->t_ms = e->t_ms;
		t->isl = e->isl;
		t->osl = e->osl;
		t->line = e->line;
		t->n_hash = e->n_hash;
		if (e->n_hash) {
			t->hash_ids = xmalloc(e->n_hash * sizeof *t->hash_ids);
			memcpy(t->hash_ids, d->hash + e->hash_off, e->n_hash * sizeof *t->hash_ids);
		}
		/* the trace plan groups turns by session id text */
		const struct ds_session *s =
		    d->format == DS_MOONCAKE_TRACE ? &d->s[e->session] : NULL;
		if (s && (s->n > 1 || s->id.len)) {
			const char *id = ds_text(d, s->id);
			t->session = id ? xstrdup(id) : xasprintf("#%u", e->session);
		}
	}
}

uint32_t dsplan_timed_entry(const struct dsplan *p, uint64_t k)
{
	return p->order && k < p->ds.n ? p->order[k] : (uint32_t)(k % p->ds.n);
}
