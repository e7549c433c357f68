/* trace.c - parsing Mooncake-style JSONL traces (see trace.h). */
#include "trace.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "util.h"

static int get_len(json_t *o, const char *key, uint32_t line, int max, int32_t *out, char *err)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return errf(err, "line %u: '%s' is required", line, key);
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
		return errf(err, "line %u: '%s' must be an integer from 1 to %d", line, key, max);
	*out = (int32_t)json_integer_value(v);
	return 0;
}

static int parse_line(const char *s, size_t n, uint32_t line, struct trace_entry *e, char *err)
{
	json_error_t je;
	json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return errf(err, "line %u: not valid JSON: %s", line, je.text);
	int rc = -1;
	memset(e, 0, sizeof *e);
	e->line = line;
	if (!json_is_object(o)) {
		errf(err, "line %u: must be a JSON object", line);
		goto out;
	}
	json_t *ts = json_object_get(o, "timestamp");
	if (!ts) {
		errf(err, "line %u: 'timestamp' is required", line);
		goto out;
	}
	/* bounded as a dataset's timestamps are: replay turns it into
	 * nanoseconds, and NaN, infinities and huge values have none */
	double t_ms = json_is_number(ts) ? json_number_value(ts) : NAN;
	if (!(t_ms >= 0 && t_ms <= HR_MAX_DATASET_TIME_MS)) {
		errf(err, "line %u: 'timestamp' must be a number of milliseconds from 0 to 1e12",
		     line);
		goto out;
	}
	e->t_ms = t_ms;
	if (get_len(o, "input_length", line, HR_MAX_ISL, &e->isl, err) < 0 ||
	    get_len(o, "output_length", line, HR_MAX_OSL, &e->osl, err) < 0)
		goto out;
	json_t *h = json_object_get(o, "hash_ids");
	if (h && !json_is_null(h)) {
		if (!json_is_array(h) || json_array_size(h) > HR_MAX_TRACE_HASH_IDS) {
			errf(err, "line %u: 'hash_ids' must be an array of at most %d integers",
			     line, HR_MAX_TRACE_HASH_IDS);
			goto out;
		}
		e->n_hash = (uint32_t)json_array_size(h);
		e->hash_ids = e->n_hash ? xcalloc(e->n_hash, sizeof *e->hash_ids) : NULL;
		for (uint32_t i = 0; i < e->n_hash; i++) {
			json_t *x = json_array_get(h, i);
			if (!json_is_integer(x) || json_integer_value(x) < 0) {
				errf(err, "line %u: 'hash_ids' item %u must be an integer >= 0",
				     line, i);
				goto out;
			}
			e->hash_ids[i] = (uint64_t)json_integer_value(x);
		}
	}
	json_t *sid = json_object_get(o, "session_id");
	if (sid && !json_is_null(sid)) {
		if (json_is_string(sid) && json_string_length(sid) > 0 &&
		    json_string_length(sid) <= 256 &&
		    strlen(json_string_value(sid)) == json_string_length(sid))
			e->session = xstrdup(json_string_value(sid));
		else if (json_is_integer(sid))
			e->session = xasprintf("%lld", (long long)json_integer_value(sid));
		else {
			errf(err, "line %u: 'session_id' must be a string (1..256 bytes) or an "
				  "integer",
			     line);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(o);
	if (rc < 0) {
		free(e->hash_ids);
		free(e->session);
		memset(e, 0, sizeof *e);
	}
	return rc;
}

static int by_time(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;
	if (x->t_ms != y->t_ms)
		return x->t_ms < y->t_ms ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line; /* stable */
}

int trace_parse(const char *text, size_t len, struct trace *out, char *err)
{
	out->e = NULL;
	out->n = 0;
	size_t cap = 0;
	uint32_t line = 0;
	const char *p = text, *end = text + len, *s;
	size_t n;
	while (next_text_line(&p, end, &s, &n, &line)) {
		if (out->n == HR_MAX_TRACE_ENTRIES) {
			trace_release(out);
			return errf(err, "line %u: more than %d entries", line, HR_MAX_TRACE_ENTRIES);
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 256;
			out->e = xrealloc(out->e, cap * sizeof *out->e);
		}
		if (parse_line(s, n, line, &out->e[out->n], err) < 0) {
			trace_release(out);
			return -1;
		}
		out->n++;
	}
	if (out->n == 0) {
		trace_release(out);
		return errf(err, "the trace has no entries");
	}
	qsort(out->e, out->n, sizeof *out->e, by_time);
	return 0;
}

void trace_release(struct trace *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].hash_ids);
		free(t->e[i].session);
	}
	free(t->e);
	t->e = NULL;
	t->n = 0;
}

uint64_t trace_session_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}
