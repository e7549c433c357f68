/* spec.c - run spec validation and normalisation (see spec.h). */
#include "spec.h"

#include <ctype.h>
#include <stdlib.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hrlimits.h"
#include "media.h"
#include "metrics.h"
#include "redact.h"
#include "stats.h"
#include "trace.h"
#include "util.h"

/* Validation walks the document with a path for messages. */
struct vctx {
	struct spec_error *err;
	int failed;
};

static int fail(struct vctx *v, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct vctx *v, const char *code, const char *field, const char *fmt, ...)
{
	if (v->failed)
		return -1;
	v->failed = 1;
	snprintf(v->err->code, sizeof v->err->code, "%s", code);
	snprintf(v->err->field, sizeof v->err->field, "%s", field);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->err->message, sizeof v->err->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* Rejects keys of obj that are not in allowed (NULL-terminated). */
static int check_keys(struct vctx *v, json_t *obj, const char *prefix, const char *const *allowed)
{
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val)
	{
		int ok = 0;
		for (const char *const *a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				ok = 1;
		if (!ok) {
			char path[512];
			snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
			return fail(v, "unknown_field", path, "unknown field '%s'", path);
		}
	}
	return 0;
}

static json_t *get_obj(struct vctx *v, json_t *parent, const char *key, const char *path,
                       int required)
{
	json_t *o = json_object_get(parent, key);
	if (!o || json_is_null(o)) {
		if (required) {
			fail(v, "missing_field", path, "'%s' is required", path);
			return NULL;
		}
		o = json_object();
		json_object_set_new(parent, key, o);
		return o;
	}
	if (!json_is_object(o)) {
		fail(v, "wrong_type", path, "'%s' must be an object", path);
		return NULL;
	}
	return o;
}

static const char *get_str(struct vctx *v, json_t *parent, const char *key, const char *path,
                           const char *def, size_t maxlen)
{
	json_t *s = json_object_get(parent, key);
	if (!s || json_is_null(s)) {
		if (!def) {
			fail(v, "missing_field", path, "'%s' is required", path);
			return NULL;
		}
		json_object_set_new(parent, key, json_string(def));
		return json_string_value(json_object_get(parent, key));
	}
	if (!json_is_string(s)) {
		fail(v, "wrong_type", path, "'%s' must be a string", path);
		return NULL;
	}
	if (json_string_length(s) > maxlen) {
		fail(v, "out_of_range", path, "'%s' is longer than %zu bytes", path, maxlen);
		return NULL;
	}
	if (strlen(json_string_value(s)) != json_string_length(s)) {
		fail(v, "invalid_value", path, "'%s' contains a NUL character", path);
		return NULL;
	}
	return json_string_value(s);
}

static int get_bool(struct vctx *v, json_t *parent, const char *key, const char *path, int def)
{
	json_t *b = json_object_get(parent, key);
	if (!b || json_is_null(b)) {
		json_object_set_new(parent, key, json_boolean(def));
		return def;
	}
	if (!json_is_boolean(b))
		return fail(v, "wrong_type", path, "'%s' must be true or false", path);
	return json_is_true(b);
}

/* Numbers: integers are accepted where reals are; reals where integers are
 * expected only when they are whole. */
static int get_num(struct vctx *v, json_t *parent, const char *key, const char *path, double def,
                   int has_def, double min, double max, int integer, double *out)
{
	json_t *n = json_object_get(parent, key);
	if (!n || json_is_null(n)) {
		if (!has_def)
			return fail(v, "missing_field", path, "'%s' is required", path);
		*out = def;
		json_object_set_new(parent, key,
		                    integer ? json_integer((json_int_t)def) : json_real(def));
		return 0;
	}
	if (!json_is_number(n))
		return fail(v, "wrong_type", path, "'%s' must be a number", path);
	double d = json_number_value(n);
	if (integer && (!json_is_integer(n) && floor(d) != d))
		return fail(v, "wrong_type", path, "'%s' must be an integer", path);
	if (!isfinite(d) || d < min || d > max)
		return fail(v, "out_of_range", path, "'%s' must be between %g and %g", path, min,
		            max);
	*out = d;
	return 0;
}

static int check_string_map(struct vctx *v, json_t *obj, const char *path, size_t max_entries)
{
	if (json_object_size(obj) > max_entries)
		return fail(v, "out_of_range", path, "'%s' has more than %zu entries", path,
		            max_entries);
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val)
	{
		char p[512];
		snprintf(p, sizeof p, "%s.%s", path, key);
		if (strlen(key) == 0 || strlen(key) > HR_MAX_LABEL_LEN)
			return fail(v, "invalid_value", p, "keys of '%s' must be 1..%d bytes", path,
			            HR_MAX_LABEL_LEN);
		if (!json_is_string(val))
			return fail(v, "wrong_type", p, "'%s' must be a string", p);
		if (json_string_length(val) > HR_MAX_LABEL_LEN * 16)
			return fail(v, "out_of_range", p, "'%s' is too long", p);
	}
	return 0;
}

static int valid_header_name(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return 0;
	return 1;
}

static int parse_dist(struct vctx *v, json_t *wl, const char *key, double def_mean, double max,
                      struct spec_dist *d)
{
	char path[64], p2[80];
	snprintf(path, sizeof path, "workload.%s", key);
	json_t *o = get_obj(v, wl, key, path, 0);
	if (!o)
		return -1;
	static const char *const keys[] = {"mean", "stddev", NULL};
	if (check_keys(v, o, path, keys) < 0)
		return -1;
	snprintf(p2, sizeof p2, "%s.mean", path);
	if (get_num(v, o, "mean", p2, def_mean, 1, 0, max, 1, &d->mean) < 0)
		return -1;
	snprintf(p2, sizeof p2, "%s.stddev", path);
	return get_num(v, o, "stddev", p2, 0, 1, 0, max, 0, &d->stddev);
}

static const char *const mode_names[] = {"concurrency", "rate", "trace"};
static const char *const law_names[] = {"constant", "poisson", "gamma"};

const char *spec_mode_name(int mode)
{
	return mode >= 0 && mode < 3 ? mode_names[mode] : "?";
}

const char *spec_arrival_name(int law)
{
	return law >= 0 && law < 3 ? law_names[law] : "?";
}

/* Rejects a field that does not apply to the chosen mode. */
static int not_for_mode(struct vctx *v, json_t *o, const char *prefix, const char *key,
                        const char *mode)
{
	json_t *x = json_object_get(o, key);
	if (!x || json_is_null(x)) {
		json_object_del(o, key);
		return 0;
	}
	char path[96];
	snprintf(path, sizeof path, "%s.%s", prefix, key);
	return fail(v, "invalid_value", path, "'%s' does not apply to mode \"%s\"", path, mode);
}

/* load.batch: `size` requests released together every `interval_s` (the
 * arrival law spaces the batches), each request of a batch a further
 * jitter_s * (j + u) / size late (j its place in the batch, u uniform):
 * jobs waking up together. The request rate is size / interval_s. */
static int parse_batch(struct vctx *v, json_t *o, json_t *b, const char *prefix,
                       struct spec_load *out)
{
	char p[128], pb[112];
	snprintf(pb, sizeof pb, "%s.batch", prefix);
	if (!json_is_object(b))
		return fail(v, "wrong_type", pb, "'%s' must be an object {size, interval_s, jitter_s}",
		            pb);
	static const char *const keys[] = {"size", "interval_s", "jitter_s", NULL};
	if (check_keys(v, b, pb, keys) < 0)
		return -1;
	json_t *r = json_object_get(o, "rate");
	if (r && !json_is_null(r)) {
		snprintf(p, sizeof p, "%s.rate", prefix);
		return fail(v, "invalid_value", p,
		            "give '%s' or '%s' (whose rate is size / interval_s), not both", p, pb);
	}
	json_object_del(o, "rate");
	double d;
	snprintf(p, sizeof p, "%s.size", pb);
	if (get_num(v, b, "size", p, 0, 0, 1, HR_MAX_BATCH_SIZE, 1, &d) < 0)
		return -1;
	out->batch_size = (int)d;
	snprintf(p, sizeof p, "%s.interval_s", pb);
	if (get_num(v, b, "interval_s", p, 0, 0, 0.001, HR_MAX_DURATION_S, 0,
	            &out->batch_interval_s) < 0)
		return -1;
	snprintf(p, sizeof p, "%s.jitter_s", pb);
	if (get_num(v, b, "jitter_s", p, 0, 1, 0, HR_MAX_DURATION_S, 0, &out->batch_jitter_s) < 0)
		return -1;
	out->rate = out->batch_size / out->batch_interval_s;
	if (out->rate > HR_MAX_RATE) {
		snprintf(p, sizeof p, "%s.interval_s", pb);
		return fail(v, "out_of_range", p, "'%s' gives more than %g requests per second", pb,
		            (double)HR_MAX_RATE);
	}
	return 0;
}

/* The load shape: mode and its parameters. base (may be NULL) gives the
 * defaults (a warm-up inherits the run's shape). */
static int parse_shape(struct vctx *v, json_t *o, const char *prefix, const struct spec_load *base,
                       struct spec_load *out)
{
	char p[96];
	memset(out, 0, sizeof *out);
	const char *defmode = "concurrency";
	if (base && base->mode != SPEC_LOAD_TRACE)
		defmode = mode_names[base->mode];
	json_t *batch = json_object_get(o, "batch");
	if (batch && json_is_null(batch)) {
		json_object_del(o, "batch");
		batch = NULL;
	}
	if (batch)
		defmode = "rate"; /* batches are a rate-mode arrival process */
	snprintf(p, sizeof p, "%s.mode", prefix);
	const char *mode = get_str(v, o, "mode", p, defmode, 32);
	if (!mode)
		return -1;
	out->mode = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(mode, mode_names[i]) == 0)
			out->mode = i;
	if (out->mode < 0)
		return fail(v, "invalid_value", p,
		            "'%s' must be \"concurrency\", \"rate\" or \"trace\"", p);
	int same = base && base->mode == out->mode;
	double d;
	if (out->mode == SPEC_LOAD_CONCURRENCY) {
		if (not_for_mode(v, o, prefix, "rate", mode) < 0 ||
		    not_for_mode(v, o, prefix, "arrival", mode) < 0 ||
		    not_for_mode(v, o, prefix, "smoothness", mode) < 0 ||
		    not_for_mode(v, o, prefix, "max_concurrency", mode) < 0 ||
		    not_for_mode(v, o, prefix, "batch", mode) < 0)
			return -1;
		snprintf(p, sizeof p, "%s.concurrency", prefix);
		if (get_num(v, o, "concurrency", p, same ? base->concurrency : 1, 1, 1,
		            HR_MAX_CONCURRENCY, 1, &d) < 0)
			return -1;
		out->concurrency = (int)d;
	} else {
		if (not_for_mode(v, o, prefix, "concurrency", mode) < 0)
			return -1;
		if (out->mode == SPEC_LOAD_RATE && batch) {
			if (parse_batch(v, o, batch, prefix, out) < 0)
				return -1;
		} else if (out->mode == SPEC_LOAD_RATE) {
			snprintf(p, sizeof p, "%s.rate", prefix);
			if (get_num(v, o, "rate", p, same ? base->rate : 0, same, 0.000001,
			            HR_MAX_RATE, 0, &out->rate) < 0)
				return -1;
		} else if (batch) {
			snprintf(p, sizeof p, "%s.batch", prefix);
			return fail(v, "invalid_value", p, "'%s' needs mode \"rate\"", p);
		}
		if (out->mode == SPEC_LOAD_RATE) {
			snprintf(p, sizeof p, "%s.arrival", prefix);
			const char *law = get_str(v, o, "arrival", p,
			                          batch ? "constant"
			                          : same ? law_names[base->arrival] : "poisson", 32);
			if (!law)
				return -1;
			out->arrival = -1;
			for (int i = 0; i < 3; i++)
				if (strcmp(law, law_names[i]) == 0)
					out->arrival = i;
			if (out->arrival < 0)
				return fail(v, "invalid_value", p,
				            "'%s' must be \"constant\", \"poisson\" or "
				            "\"gamma\"",
				            p);
			if (out->arrival == 2) {
				snprintf(p, sizeof p, "%s.smoothness", prefix);
				if (get_num(v, o, "smoothness", p,
				            same && base->arrival == 2 ? base->smoothness : 1, 1,
				            HR_MIN_SMOOTHNESS, HR_MAX_SMOOTHNESS, 0,
				            &out->smoothness) < 0)
					return -1;
			} else {
				json_t *sm = json_object_get(o, "smoothness");
				if (sm && !json_is_null(sm)) {
					snprintf(p, sizeof p, "%s.smoothness", prefix);
					return fail(v, "invalid_value", p,
					            "'%s' only applies with arrival \"gamma\"", p);
				}
				json_object_del(o, "smoothness");
				out->smoothness = 1;
			}
		} else {
			if (not_for_mode(v, o, prefix, "rate", mode) < 0 ||
			    not_for_mode(v, o, prefix, "arrival", mode) < 0 ||
			    not_for_mode(v, o, prefix, "smoothness", mode) < 0)
				return -1;
		}
		json_t *mc = json_object_get(o, "max_concurrency");
		if (mc && !json_is_null(mc)) {
			snprintf(p, sizeof p, "%s.max_concurrency", prefix);
			if (get_num(v, o, "max_concurrency", p, 0, 0, 1, HR_MAX_CONCURRENCY, 1,
			            &d) < 0)
				return -1;
			out->max_concurrency = (int)d;
		} else {
			json_object_del(o, "max_concurrency");
			out->max_concurrency = same ? base->max_concurrency : 0;
			if (out->max_concurrency)
				json_object_set_new(o, "max_concurrency",
				                    json_integer(out->max_concurrency));
		}
	}
	snprintf(p, sizeof p, "%s.ramp_s", prefix);
	if (out->mode == SPEC_LOAD_TRACE)
		return not_for_mode(v, o, prefix, "ramp_s", mode);
	return get_num(v, o, "ramp_s", p, same ? base->ramp_s : 0, 1, 0, HR_MAX_RAMP_S, 0,
	               &out->ramp_s);
}

/* requests | duration_s; exactly one when required, at most one otherwise. */
static int parse_limits(struct vctx *v, json_t *o, const char *prefix, int required,
                        struct spec_load *out)
{
	char pr[96], pd[96];
	snprintf(pr, sizeof pr, "%s.requests", prefix);
	snprintf(pd, sizeof pd, "%s.duration_s", prefix);
	json_t *rq = json_object_get(o, "requests"), *du = json_object_get(o, "duration_s");
	if (rq && json_is_null(rq)) {
		json_object_del(o, "requests");
		rq = NULL;
	}
	if (du && json_is_null(du)) {
		json_object_del(o, "duration_s");
		du = NULL;
	}
	if (rq && du)
		return fail(v, "invalid_value", pd, "give either '%s' or '%s', not both", pr, pd);
	if (!rq && !du && required)
		return fail(v, "missing_field", pr, "one of '%s' or '%s' is required", pr, pd);
	double d;
	out->requests = 0;
	out->duration_s = 0;
	if (rq) {
		if (get_num(v, o, "requests", pr, 0, 0, 1, (double)HR_MAX_REQUESTS, 1, &d) < 0)
			return -1;
		out->requests = (int64_t)d;
	} else if (du) {
		if (get_num(v, o, "duration_s", pd, 0, 0, 0.001, HR_MAX_DURATION_S, 0, &d) < 0)
			return -1;
		out->duration_s = d;
	}
	return 0;
}

static int parse_cancel(struct vctx *v, json_t *ld, struct spec *s)
{
	json_t *c = get_obj(v, ld, "cancel", "load.cancel", 0);
	if (!c)
		return -1;
	static const char *const keys[] = {"fraction", "after_s", NULL};
	if (check_keys(v, c, "load.cancel", keys) < 0)
		return -1;
	if (get_num(v, c, "fraction", "load.cancel.fraction", 0, 1, 0, 1, 0, &s->cancel_fraction) <
	    0)
		return -1;
	if (s->cancel_fraction > 0)
		return get_num(v, c, "after_s", "load.cancel.after_s", 0, 0, 0.000001,
		               HR_MAX_TIMEOUT_S, 0, &s->cancel_after_s);
	return get_num(v, c, "after_s", "load.cancel.after_s", 0, 1, 0, HR_MAX_TIMEOUT_S, 0,
	               &s->cancel_after_s);
}

static int parse_trace_window(struct vctx *v, json_t *ld, struct spec *s)
{
	if (s->load.mode != SPEC_LOAD_TRACE) {
		if (not_for_mode(v, ld, "load", "speedup", spec_mode_name(s->load.mode)) < 0 ||
		    not_for_mode(v, ld, "load", "start_s", spec_mode_name(s->load.mode)) < 0 ||
		    not_for_mode(v, ld, "load", "end_s", spec_mode_name(s->load.mode)) < 0)
			return -1;
		s->speedup = 1;
		return 0;
	}
	if (get_num(v, ld, "speedup", "load.speedup", 1, 1, HR_MIN_SPEEDUP, HR_MAX_SPEEDUP, 0,
	            &s->speedup) < 0 ||
	    get_num(v, ld, "start_s", "load.start_s", 0, 1, 0, HR_MAX_TRACE_OFFSET_S, 0,
	            &s->trace_start_s) < 0 ||
	    get_num(v, ld, "end_s", "load.end_s", 0, 1, 0, HR_MAX_TRACE_OFFSET_S, 0,
	            &s->trace_end_s) < 0)
		return -1;
	if (s->trace_end_s > 0 && s->trace_end_s <= s->trace_start_s)
		return fail(v, "out_of_range", "load.end_s",
		            "'load.end_s' must be after 'load.start_s' (or 0 for no end)");
	return 0;
}

/* workload.sessions.tool_time_s: [{weight, mean, stddev}], a mixture */
static int parse_tool_times(struct vctx *v, json_t *tt, struct spec_agent *a)
{
	const char *path = "workload.sessions.tool_time_s";
	if (!json_is_array(tt) || json_array_size(tt) < 1 ||
	    json_array_size(tt) > HR_MAX_TOOL_TIMES)
		return fail(v, "invalid_value", path,
		            "'%s' must be an array of 1 to %d {weight, mean, stddev} objects", path,
		            HR_MAX_TOOL_TIMES);
	static const char *const keys[] = {"weight", "mean", "stddev", NULL};
	size_t i;
	json_t *c;
	json_array_foreach(tt, i, c)
	{
		char p[96], f[128];
		snprintf(p, sizeof p, "%s[%zu]", path, i);
		if (!json_is_object(c))
			return fail(v, "wrong_type", p, "'%s' must be an object", p);
		if (check_keys(v, c, p, keys) < 0)
			return -1;
		struct spec_tool *t = &a->tool[i];
		snprintf(f, sizeof f, "%s.weight", p);
		if (get_num(v, c, "weight", f, 1, 1, 1e-9, 1e9, 0, &t->weight) < 0)
			return -1;
		snprintf(f, sizeof f, "%s.mean", p);
		if (get_num(v, c, "mean", f, 0, 0, 0, HR_MAX_THINK_S, 0, &t->mean) < 0)
			return -1;
		snprintf(f, sizeof f, "%s.stddev", p);
		if (get_num(v, c, "stddev", f, 0, 1, 0, HR_MAX_THINK_S, 0, &t->stddev) < 0)
			return -1;
	}
	a->n_tool = (int)json_array_size(tt);
	return 0;
}

/* workload.sessions.documents: {probability, tokens{mean, stddev}} */
static int parse_documents(struct vctx *v, json_t *se, struct spec_agent *a)
{
	json_t *d = json_object_get(se, "documents");
	if (!d || json_is_null(d)) {
		json_object_del(se, "documents");
		return 0;
	}
	const char *path = "workload.sessions.documents";
	if (!json_is_object(d))
		return fail(v, "wrong_type", path, "'%s' must be an object {probability, tokens}",
		            path);
	static const char *const keys[] = {"probability", "tokens", NULL};
	if (check_keys(v, d, path, keys) < 0)
		return -1;
	if (get_num(v, d, "probability", "workload.sessions.documents.probability", 0, 0, 0, 1, 0,
	            &a->doc_probability) < 0)
		return -1;
	json_t *t = get_obj(v, d, "tokens", "workload.sessions.documents.tokens", 1);
	static const char *const dk[] = {"mean", "stddev", NULL};
	if (!t || check_keys(v, t, "workload.sessions.documents.tokens", dk) < 0 ||
	    get_num(v, t, "mean", "workload.sessions.documents.tokens.mean", 0, 0, 1, HR_MAX_ISL, 1,
	            &a->doc_tokens.mean) < 0 ||
	    get_num(v, t, "stddev", "workload.sessions.documents.tokens.stddev", 0, 1, 0,
	            HR_MAX_ISL, 0, &a->doc_tokens.stddev) < 0)
		return -1;
	return 0;
}

static int parse_sessions(struct vctx *v, json_t *wl, struct spec *s)
{
	json_t *se = json_object_get(wl, "sessions");
	if (!se || json_is_null(se)) {
		json_object_del(wl, "sessions");
		return 0;
	}
	if (!json_is_object(se))
		return fail(v, "wrong_type", "workload.sessions",
		            "'workload.sessions' must be an object");
	static const char *const keys[] = {"turns", "think_time_s", "tool_time_s", "documents",
	                                   NULL};
	if (check_keys(v, se, "workload.sessions", keys) < 0)
		return -1;
	json_t *tt = json_object_get(se, "tool_time_s");
	if (tt && !json_is_null(tt)) {
		json_t *th0 = json_object_get(se, "think_time_s");
		if (th0 && !json_is_null(th0))
			return fail(v, "invalid_value", "workload.sessions.tool_time_s",
			            "give 'workload.sessions.think_time_s' or "
			            "'workload.sessions.tool_time_s', not both");
		if (parse_tool_times(v, tt, &s->workload.agent) < 0)
			return -1;
	} else {
		json_object_del(se, "tool_time_s");
	}
	if (parse_documents(v, se, &s->workload.agent) < 0)
		return -1;
	static const char *const dk[] = {"mean", "stddev", NULL};
	json_t *t = get_obj(v, se, "turns", "workload.sessions.turns", 1);
	if (!t || check_keys(v, t, "workload.sessions.turns", dk) < 0 ||
	    get_num(v, t, "mean", "workload.sessions.turns.mean", 0, 0, 1, HR_MAX_TURNS, 0,
	            &s->workload.turns.mean) < 0 ||
	    get_num(v, t, "stddev", "workload.sessions.turns.stddev", 0, 1, 0, HR_MAX_TURNS, 0,
	            &s->workload.turns.stddev) < 0)
		return -1;
	if (s->workload.agent.n_tool) { /* the tool times replace it */
		s->workload.sessions = 1;
		return 0;
	}
	json_t *th = get_obj(v, se, "think_time_s", "workload.sessions.think_time_s", 0);
	if (!th || check_keys(v, th, "workload.sessions.think_time_s", dk) < 0 ||
	    get_num(v, th, "mean", "workload.sessions.think_time_s.mean", 0, 1, 0, HR_MAX_THINK_S,
	            0, &s->workload.think_s.mean) < 0 ||
	    get_num(v, th, "stddev", "workload.sessions.think_time_s.stddev", 0, 1, 0,
	            HR_MAX_THINK_S, 0, &s->workload.think_s.stddev) < 0)
		return -1;
	s->workload.sessions = 1;
	return 0;
}

/* workload.system_prompt {"tokens"} and workload.prefix_prompts {"count",
 * "tokens"}: prompts shared between requests, for KV-cache studies
 * (docs/spec.md). */
static int parse_shared_prompts(struct vctx *v, json_t *wl, struct spec *s)
{
	static const char *const skeys[] = {"tokens", NULL};
	static const char *const pkeys[] = {"count", "tokens", NULL};
	json_t *sp = json_object_get(wl, "system_prompt");
	double d;
	if (sp && !json_is_null(sp)) {
		if (!json_is_object(sp))
			return fail(v, "wrong_type", "workload.system_prompt",
			            "'workload.system_prompt' must be an object");
		if (check_keys(v, sp, "workload.system_prompt", skeys) < 0 ||
		    get_num(v, sp, "tokens", "workload.system_prompt.tokens", 0, 0, 1, HR_MAX_ISL, 1,
		            &d) < 0)
			return -1;
		s->workload.system_tokens = (int)d;
	} else {
		json_object_del(wl, "system_prompt");
	}
	json_t *pp = json_object_get(wl, "prefix_prompts");
	if (pp && !json_is_null(pp)) {
		if (!json_is_object(pp))
			return fail(v, "wrong_type", "workload.prefix_prompts",
			            "'workload.prefix_prompts' must be an object");
		if (check_keys(v, pp, "workload.prefix_prompts", pkeys) < 0 ||
		    get_num(v, pp, "count", "workload.prefix_prompts.count", 0, 0, 1,
		            HR_MAX_PREFIX_PROMPTS, 1, &d) < 0)
			return -1;
		s->workload.prefix_count = (int)d;
		if (get_num(v, pp, "tokens", "workload.prefix_prompts.tokens", 0, 0, 1, HR_MAX_ISL, 1,
		            &d) < 0)
			return -1;
		s->workload.prefix_tokens = (int)d;
	} else {
		json_object_del(wl, "prefix_prompts");
	}
	if ((s->workload.system_tokens || s->workload.prefix_count) &&
	    s->workload.kind == SPEC_WL_TRACE)
		return fail(v, "invalid_value",
		            s->workload.system_tokens ? "workload.system_prompt"
		                                      : "workload.prefix_prompts",
		            "a trace brings its own prefixes (hash_ids)");
	return 0;
}

/* workload.mix: [{"isl", "osl", "weight"?}, ...]: each request draws one
 * pair, by weight, instead of workload.isl and workload.osl. */
/* workload.token_count: {"isl": "usage"|"tokenizer", "osl": "usage"|
 * "tokenizer"|"chunks", "discrepancy_pct"} (docs/metrics.md, "Token
 * counts"). Counting by tokenizer needs workload.tokenizer, so this is
 * parsed after it. */
static int parse_token_count(struct vctx *v, json_t *wl, struct spec *s)
{
	json_t *tc = get_obj(v, wl, "token_count", "workload.token_count", 0);
	if (!tc)
		return -1;
	static const char *const keys[] = {"isl", "osl", "discrepancy_pct", NULL};
	if (check_keys(v, tc, "workload.token_count", keys) < 0)
		return -1;
	static const char *const names[] = {"usage", "tokenizer", "chunks"};
	const char *paths[2] = {"workload.token_count.isl", "workload.token_count.osl"};
	int *out[2] = {&s->workload.isl_count, &s->workload.osl_count};
	for (int i = 0; i < 2; i++) {
		const char *val = get_str(v, tc, i ? "osl" : "isl", paths[i], "usage", 16);
		if (!val)
			return -1;
		int k = 0, n = i ? 3 : 2; /* chunks count only outputs */
		while (k < n && strcmp(val, names[k]) != 0)
			k++;
		if (k == n)
			return fail(v, "invalid_value", paths[i], "'%s' must be %s", paths[i],
			            i ? "\"usage\", \"tokenizer\" or \"chunks\""
			              : "\"usage\" or \"tokenizer\"");
		if (k == SPEC_COUNT_TOKENIZER && !s->workload.tokenizer)
			return fail(v, "invalid_value", paths[i],
			            "'%s' \"tokenizer\" needs 'workload.tokenizer'", paths[i]);
		*out[i] = k;
	}
	return get_num(v, tc, "discrepancy_pct", "workload.token_count.discrepancy_pct", 10, 1, 0,
	               1e6, 0, &s->workload.discrepancy_pct);
}

static int parse_mix(struct vctx *v, json_t *wl, struct spec *s)
{
	json_t *m = json_object_get(wl, "mix");
	if (!m || json_is_null(m)) {
		json_object_del(wl, "mix");
		return 0;
	}
	if (!json_is_array(m) || json_array_size(m) < 1 || json_array_size(m) > HR_MAX_MIX)
		return fail(v, "wrong_type", "workload.mix",
		            "'workload.mix' must be an array of 1 to %d {\"isl\", \"osl\", "
		            "\"weight\"} objects",
		            HR_MAX_MIX);
	if (s->workload.kind != SPEC_WL_SYNTHETIC)
		return fail(v, "invalid_value", "workload.mix",
		            "'workload.mix' applies to synthetic prompts only");
	static const char *const keys[] = {"isl", "osl", "weight", NULL};
	size_t i;
	json_t *e;
	json_array_foreach(m, i, e)
	{
		char path[64], p2[80];
		snprintf(path, sizeof path, "workload.mix[%zu]", i);
		if (!json_is_object(e))
			return fail(v, "wrong_type", path, "'%s' must be an object", path);
		if (check_keys(v, e, path, keys) < 0)
			return -1;
		double isl, osl, w;
		snprintf(p2, sizeof p2, "%s.isl", path);
		if (get_num(v, e, "isl", p2, 0, 0, 1, HR_MAX_ISL, 1, &isl) < 0)
			return -1;
		snprintf(p2, sizeof p2, "%s.osl", path);
		if (get_num(v, e, "osl", p2, 0, 0, 1, HR_MAX_OSL, 1, &osl) < 0)
			return -1;
		snprintf(p2, sizeof p2, "%s.weight", path);
		if (get_num(v, e, "weight", p2, 1, 1, 1e-9, 1e9, 0, &w) < 0)
			return -1;
		s->workload.mix[i].isl = (int)isl;
		s->workload.mix[i].osl = (int)osl;
		s->workload.mix[i].weight = w;
	}
	s->workload.n_mix = (int)json_array_size(m);
	return 0;
}

/* workload.dataset: {"id", "sampling"?, and "sha256", "format" as the API
 * filled them in when the spec was submitted}. Whether the dataset exists
 * and suits the load mode is the daemon's check (it has the store). */
static int parse_dataset(struct vctx *v, json_t *wl, struct spec *s)
{
	json_t *d = json_object_get(wl, "dataset");
	if (s->workload.kind != SPEC_WL_DATASET) {
		if (d && !json_is_null(d))
			return fail(v, "invalid_value", "workload.dataset",
			            "'workload.dataset' needs 'workload.kind' \"dataset\"");
		json_object_del(wl, "dataset");
		return 0;
	}
	if (!d || json_is_null(d))
		return fail(v, "missing_field", "workload.dataset",
		            "'workload.dataset' (an uploaded dataset's id) is required");
	if (!json_is_object(d))
		return fail(v, "wrong_type", "workload.dataset", "'workload.dataset' must be an object");
	static const char *const keys[] = {"id", "sampling", "sha256", "format", NULL};
	if (check_keys(v, d, "workload.dataset", keys) < 0)
		return -1;
	double id;
	if (get_num(v, d, "id", "workload.dataset.id", 0, 0, 1, 9007199254740991.0, 1, &id) < 0)
		return -1;
	s->workload.dataset_id = (int64_t)id;
	const char *sm = get_str(v, d, "sampling", "workload.dataset.sampling", "", 32);
	if (!sm)
		return -1;
	if (!*sm)
		s->workload.sampling = SPEC_SAMPLE_DEFAULT;
	else if (strcmp(sm, "sequential") == 0)
		s->workload.sampling = SPEC_SAMPLE_SEQUENTIAL;
	else if (strcmp(sm, "random") == 0)
		s->workload.sampling = SPEC_SAMPLE_RANDOM;
	else if (strcmp(sm, "shuffle") == 0)
		s->workload.sampling = SPEC_SAMPLE_SHUFFLE;
	else
		return fail(v, "invalid_value", "workload.dataset.sampling",
		            "'workload.dataset.sampling' must be \"sequential\", \"random\" or "
		            "\"shuffle\"");
	if (!*sm)
		json_object_del(d, "sampling");
	if (!get_str(v, d, "sha256", "workload.dataset.sha256", "", 64) ||
	    !get_str(v, d, "format", "workload.dataset.format", "", 32))
		return -1;
	if (s->workload.sessions)
		return fail(v, "invalid_value", "workload.sessions",
		            "a dataset brings its own conversations: 'workload.sessions' does not "
		            "apply");
	return 0;
}

static int parse_trace(struct vctx *v, json_t *wl, struct spec *s)
{
	json_t *t = json_object_get(wl, "trace");
	if (s->workload.kind != SPEC_WL_TRACE) {
		if (t && !json_is_null(t))
			return fail(v, "invalid_value", "workload.trace",
			            "'workload.trace' needs 'workload.kind' \"trace\"");
		json_object_del(wl, "trace");
		return 0;
	}
	if (!t || json_is_null(t))
		return fail(v, "missing_field", "workload.trace",
		            "'workload.trace' (the trace as JSONL text) is required");
	if (!json_is_string(t))
		return fail(v, "wrong_type", "workload.trace",
		            "'workload.trace' must be a string of JSON lines");
	struct trace tr;
	char err[HR_ERRLEN];
	if (trace_parse(json_string_value(t), json_string_length(t), &tr, err) < 0)
		return fail(v, "invalid_value", "workload.trace", "%s", err);
	s->workload.trace = json_string_value(t);
	s->workload.trace_len = json_string_length(t);
	s->workload.trace_entries = tr.n;
	trace_release(&tr);
	return 0;
}

/* An array of http(s) URLs; def (may be NULL) fills a missing one. */
static json_t *parse_urls(struct vctx *v, json_t *o, const char *key, const char *path,
			  const char *const *def)
{
	json_t *a = json_object_get(o, key);
	if (!a || json_is_null(a)) {
		a = json_array();
		for (; def && *def; def++)
			json_array_append_new(a, json_string(*def));
		json_object_set_new(o, key, a);
		return a;
	}
	if (!json_is_array(a) || json_array_size(a) > HR_MAX_SCRAPE_URLS) {
		fail(v, json_is_array(a) ? "out_of_range" : "wrong_type", path,
		     "'%s' must be an array of at most %d URLs", path, HR_MAX_SCRAPE_URLS);
		return NULL;
	}
	size_t i;
	json_t *u;
	json_array_foreach(a, i, u)
	{
		char p[96];
		snprintf(p, sizeof p, "%s[%zu]", path, i);
		const char *s = json_string_value(u);
		if (!s) {
			fail(v, "wrong_type", p, "'%s' must be a string", p);
			return NULL;
		}
		if (json_string_length(u) > HR_MAX_URL_LEN) {
			fail(v, "out_of_range", p, "'%s' is longer than %d bytes", p, HR_MAX_URL_LEN);
			return NULL;
		}
		int bad = strlen(s) != json_string_length(u) ||
			  (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0);
		for (const char *c = s; *c; c++)
			bad |= (unsigned char)*c <= ' ' || *c == 0x7f;
		if (bad) {
			fail(v, "invalid_value", p,
			     "'%s' must be an http:// or https:// URL without spaces or control "
			     "characters",
			     p);
			return NULL;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(json_string_value(json_array_get(a, k)), s) == 0) {
				fail(v, "invalid_value", p, "'%s' repeats %s[%zu]", p, path, k);
				return NULL;
			}
	}
	return a;
}

static int parse_telemetry(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *t = get_obj(v, root, "telemetry", "telemetry", 0);
	if (!t)
		return -1;
	static const char *const keys[] = {"nvml",	     "interval_ms",  "scrape_timeout_ms",
					   "dcgm_urls",	     "server_metrics", "metrics_urls",
					   NULL};
	if (check_keys(v, t, "telemetry", keys) < 0)
		return -1;
	int b = get_bool(v, t, "nvml", "telemetry.nvml", 1);
	if (b < 0)
		return -1;
	s->telemetry.nvml = b;
	b = get_bool(v, t, "server_metrics", "telemetry.server_metrics", 1);
	if (b < 0)
		return -1;
	s->telemetry.server_metrics = b;
	double d;
	if (get_num(v, t, "interval_ms", "telemetry.interval_ms", 333, 1,
		    HR_MIN_TELEMETRY_INTERVAL_MS, HR_MAX_TELEMETRY_INTERVAL_MS, 1, &d) < 0)
		return -1;
	s->telemetry.interval_ms = (int)d;
	if (get_num(v, t, "scrape_timeout_ms", "telemetry.scrape_timeout_ms", 1000, 1, 10, 60000,
		    1, &d) < 0)
		return -1;
	s->telemetry.scrape_timeout_ms = (int)d;
	static const char *const dcgm_default[] = {"http://localhost:9400/metrics",
						   "http://localhost:9401/metrics", NULL};
	s->telemetry.dcgm_urls = parse_urls(v, t, "dcgm_urls", "telemetry.dcgm_urls",
					    dcgm_default);
	if (!s->telemetry.dcgm_urls)
		return -1;
	s->telemetry.metrics_urls = parse_urls(v, t, "metrics_urls", "telemetry.metrics_urls",
					       NULL);
	return s->telemetry.metrics_urls ? 0 : -1;
}

/* goodput: {"<metric>": limit, ...} - service level objectives, as
 * AIPerf's --goodput: a valid request is good when every per-request
 * metric named meets its limit (a latency in ms at most, the output token
 * throughput per user at least). */
static int parse_goodput(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *g = json_object_get(root, "goodput");
	if (!g || json_is_null(g)) {
		json_object_del(root, "goodput");
		return 0;
	}
	if (!json_is_object(g))
		return fail(v, "wrong_type", "goodput",
		            "'goodput' must be an object of metric: limit pairs");
	if (json_object_size(g) == 0 || json_object_size(g) > HR_MAX_SLOS)
		return fail(v, "invalid_value", "goodput", "'goodput' needs 1 to %d objectives",
		            HR_MAX_SLOS);
	const char *k;
	json_t *val;
	json_object_foreach(g, k, val)
	{
		char path[160];
		snprintf(path, sizeof path, "goodput.%.100s", k);
		int idx = -1;
		for (size_t i = 0; i < metric_defs_count; i++)
			if (strcmp(metric_defs[i].tag, k) == 0 && metric_defs[i].scope == METRIC_VALID &&
			    (strcmp(metric_defs[i].unit, "ms") == 0 ||
			     strcmp(metric_defs[i].unit, "tokens/sec/user") == 0))
				idx = (int)i;
		if (idx < 0)
			return fail(v, "unknown_field", path,
			            "'%s': goodput takes per-request latencies in ms "
			            "(time_to_first_token, inter_token_latency, request_latency, ...) "
			            "and output_token_throughput_per_user",
			            path);
		if (!json_is_number(val) || !(json_number_value(val) > 0) ||
		    json_number_value(val) > 1e9)
			return fail(v, "out_of_range", path, "'%s' must be a number above 0", path);
		struct spec_slo *o = &s->slo[s->n_slo++];
		o->metric = idx;
		o->limit = json_number_value(val);
		o->at_least = strcmp(metric_defs[idx].unit, "ms") != 0;
	}
	return 0;
}

static int parse_client(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *c = get_obj(v, root, "client", "client", 0);
	if (!c)
		return -1;
	static const char *const keys[] = {"allow_client_bound", "max_loop_busy",
					   "max_busy_share", "max_lag_ms", NULL};
	if (check_keys(v, c, "client", keys) < 0)
		return -1;
	int b = get_bool(v, c, "allow_client_bound", "client.allow_client_bound", 0);
	if (b < 0)
		return -1;
	s->client.allow_client_bound = b;
	if (get_num(v, c, "max_loop_busy", "client.max_loop_busy", 0.9, 1, 0.05, 1, 0,
		    &s->client.max_loop_busy) < 0 ||
	    get_num(v, c, "max_busy_share", "client.max_busy_share", 0.2, 1, 0, 1, 0,
		    &s->client.max_busy_share) < 0 ||
	    get_num(v, c, "max_lag_ms", "client.max_lag_ms", 10, 1, 0.01, 60000, 0,
		    &s->client.max_lag_ms) < 0)
		return -1;
	return 0;
}

/* --- judging: repeat, validity, gates (docs/compare.md) ----------------- */

const char *const spec_op_names[4] = {"<", "<=", ">", ">="};

static int parse_repeat(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *r = json_object_get(root, "repeat");
	if (!r || json_is_null(r)) {
		json_object_del(root, "repeat");
		return 0;
	}
	if (!json_is_object(r))
		return fail(v, "wrong_type", "repeat", "'repeat' must be an object");
	static const char *const keys[] = {"count", "cooldown_s", NULL};
	double count, cool;
	if (check_keys(v, r, "repeat", keys) < 0 ||
	    get_num(v, r, "count", "repeat.count", 0, 0, 2, HR_MAX_REPEAT, 1, &count) < 0 ||
	    get_num(v, r, "cooldown_s", "repeat.cooldown_s", 0, 1, 0, 3600, 0, &cool) < 0)
		return -1;
	s->repeat.count = (int)count;
	s->repeat.cooldown_s = cool;
	return 0;
}

/* "p50".."p99" (a reported percentile) into its number; -1 when not one. */
static double pct_of_name(const char *name)
{
	for (int i = 0; i < STATS_NPCT; i++)
		if (strcmp(stats_pct_names[i], name) == 0)
			return stats_pcts[i];
	return -1;
}

static int parse_validity(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *o = get_obj(v, root, "validity", "validity", 0);
	if (!o)
		return -1;
	static const char *const keys[] = {"min_requests", "min_duration_s", "max_error_rate",
					   "percentile",   "confidence",     "max_clock_error_ms",
					   NULL};
	double minreq;
	if (check_keys(v, o, "validity", keys) < 0 ||
	    get_num(v, o, "min_requests", "validity.min_requests", 0, 1, 0, 1e12, 1, &minreq) < 0 ||
	    get_num(v, o, "min_duration_s", "validity.min_duration_s", 0, 1, 0, 1e7, 0,
		    &s->validity.min_duration_s) < 0 ||
	    get_num(v, o, "max_error_rate", "validity.max_error_rate", 0.05, 1, 0, 1, 0,
		    &s->validity.max_error_rate) < 0 ||
	    get_num(v, o, "confidence", "validity.confidence", 0.95, 1, 0.5, 0.9999, 0,
		    &s->validity.confidence) < 0)
		return -1;
	s->validity.min_requests = (int64_t)minreq;
	/* kept only when given, so specs without it keep their fingerprints */
	s->validity.max_clock_error_ms = 1;
	json_t *mce = json_object_get(o, "max_clock_error_ms");
	if (mce && !json_is_null(mce)) {
		if (get_num(v, o, "max_clock_error_ms", "validity.max_clock_error_ms", 1, 0, 0.001,
			    60000, 0, &s->validity.max_clock_error_ms) < 0)
			return -1;
	} else {
		json_object_del(o, "max_clock_error_ms");
	}
	const char *pct = get_str(v, o, "percentile", "validity.percentile", "p99", 8);
	if (!pct)
		return -1;
	s->validity.percentile = strcmp(pct, "none") == 0 ? 0 : pct_of_name(pct);
	if (s->validity.percentile < 0 || s->validity.percentile == 1 ||
	    s->validity.percentile == 5 || s->validity.percentile == 10)
		return fail(v, "invalid_value", "validity.percentile",
			    "'validity.percentile' must be p25, p50, p75, p90, p95, p99 or none");
	return 0;
}

static int parse_regression(struct vctx *v, json_t *g, const char *path, struct spec_gate *out)
{
	char p[96];
	snprintf(p, sizeof p, "%s.regression", path);
	json_t *r = json_object_get(g, "regression");
	if (!json_is_object(r))
		return fail(v, "wrong_type", p, "'%s' must be an object", p);
	static const char *const keys[] = {"baseline", "max_pct", "confidence", NULL};
	if (check_keys(v, r, p, keys) < 0)
		return -1;
	char bp[112];
	snprintf(bp, sizeof bp, "%s.baseline", p);
	json_t *b = json_object_get(r, "baseline");
	if (json_is_integer(b) && json_integer_value(b) > 0) {
		out->baseline_run = (int64_t)json_integer_value(b);
	} else if (json_is_string(b) && json_string_length(b) >= 1 &&
		   json_string_length(b) <= HR_MAX_LABEL_LEN &&
		   strlen(json_string_value(b)) == json_string_length(b)) {
		out->baseline = json_string_value(b);
	} else {
		return fail(v, b ? "invalid_value" : "missing_field", bp,
			    "'%s' must name a baseline (a string) or a run id (a positive integer)",
			    bp);
	}
	char mp[112], cp[112];
	snprintf(mp, sizeof mp, "%s.max_pct", p);
	snprintf(cp, sizeof cp, "%s.confidence", p);
	if (get_num(v, r, "max_pct", mp, 5, 1, 0, 1000, 0, &out->max_pct) < 0 ||
	    get_num(v, r, "confidence", cp, 0.95, 1, 0.5, 0.9999, 0, &out->confidence) < 0)
		return -1;
	out->regression = 1;
	return 0;
}

static int parse_gates(struct vctx *v, json_t *root, struct spec *s)
{
	json_t *a = json_object_get(root, "gates");
	if (!a || json_is_null(a)) {
		json_object_del(root, "gates");
		return 0;
	}
	if (!json_is_array(a))
		return fail(v, "wrong_type", "gates", "'gates' must be an array");
	if (json_array_size(a) > HR_MAX_GATES)
		return fail(v, "out_of_range", "gates", "'gates' has more than %d entries",
			    HR_MAX_GATES);
	size_t i;
	json_t *g;
	json_array_foreach(a, i, g)
	{
		char path[48], fp[80];
		snprintf(path, sizeof path, "gates[%zu]", i);
		if (!json_is_object(g))
			return fail(v, "wrong_type", path, "'%s' must be an object", path);
		static const char *const keys[] = {"name", "metric", "stat", "op",
						   "value", "regression", NULL};
		if (check_keys(v, g, path, keys) < 0)
			return -1;
		struct spec_gate *out = &s->gates[s->n_gates];
		memset(out, 0, sizeof *out);
		snprintf(fp, sizeof fp, "%s.metric", path);
		out->metric = get_str(v, g, "metric", fp, NULL, HR_MAX_LABEL_LEN);
		if (!out->metric)
			return -1;
		const struct metric_info *mi = metric_info(out->metric);
		if (!mi)
			return fail(v, "invalid_value", fp,
				    "'%s': no metric '%.100s' (docs/compare.md lists them)", fp,
				    out->metric);
		snprintf(fp, sizeof fp, "%s.stat", path);
		const char *stat = get_str(v, g, "stat", fp, mi->run_level ? "value" : "avg", 8);
		if (!stat)
			return -1;
		out->stat = metric_stat_index(stat);
		if (out->stat < 0 || (mi->run_level && out->stat != 0) ||
		    (!mi->run_level && strcmp(stat, "value") == 0))
			return fail(v, "invalid_value", fp,
				    mi->run_level ? "'%s': %s is one number per run: its stat is "
						    "\"value\""
						  : "'%s': %s has avg, min, max, std, p1, p5, p10, "
						    "p25, p50, p75, p90, p95 and p99",
				    fp, out->metric);
		int has_reg = json_object_get(g, "regression") != NULL;
		int has_op = json_object_get(g, "op") || json_object_get(g, "value");
		if (has_reg == has_op)
			return fail(v, "invalid_value", path,
				    "'%s' needs either 'op' and 'value' (a threshold) or "
				    "'regression' (against a baseline)",
				    path);
		if (has_reg) {
			if (parse_regression(v, g, path, out) < 0)
				return -1;
		} else {
			snprintf(fp, sizeof fp, "%s.op", path);
			const char *op = get_str(v, g, "op", fp, NULL, 4);
			if (!op)
				return -1;
			out->op = -1;
			for (int k = 0; k < 4; k++)
				if (strcmp(spec_op_names[k], op) == 0)
					out->op = k;
			if (out->op < 0)
				return fail(v, "invalid_value", fp,
					    "'%s' must be \"<\", \"<=\", \">\" or \">=\"", fp);
			snprintf(fp, sizeof fp, "%s.value", path);
			if (get_num(v, g, "value", fp, 0, 0, -1e15, 1e15, 0, &out->value) < 0)
				return -1;
		}
		/* a default name says what the gate checks */
		json_t *nm = json_object_get(g, "name");
		if (!nm || json_is_null(nm)) {
			char def[HR_MAX_LABEL_LEN + 64];
			if (out->regression)
				snprintf(def, sizeof def, "%s.%s regression", out->metric,
					 stat);
			else
				snprintf(def, sizeof def, "%s.%s %s %.17g", out->metric, stat,
					 spec_op_names[out->op], out->value);
			json_object_set_new(g, "name", json_string(def));
		}
		snprintf(fp, sizeof fp, "%s.name", path);
		out->name = get_str(v, g, "name", fp, NULL, HR_MAX_NAME_LEN);
		if (!out->name)
			return -1;
		if (!*out->name)
			return fail(v, "invalid_value", fp, "'%s' must not be empty", fp);
		s->n_gates++;
	}
	return 0;
}

/* --- endpoints --------------------------------------------------------- */

#define GEN_STREAMED (SPEC_EPF_GENERATES | SPEC_EPF_STREAMS | SPEC_EPF_STREAM_DEF)
const struct spec_endpoint_info spec_endpoints[SPEC_EP__COUNT] = {
    [SPEC_EP_CHAT] = {"chat", "/v1/chat/completions", NULL, {"chat"},
                      GEN_STREAMED | SPEC_EPF_IMAGES | SPEC_EPF_AUDIO},
    [SPEC_EP_COMPLETIONS] = {"completions", "/v1/completions", NULL, {"completions"},
                             GEN_STREAMED},
    [SPEC_EP_EMBEDDINGS] = {"embeddings", "/v1/embeddings", NULL, {"embeddings"},
                            SPEC_EPF_BATCH},
    [SPEC_EP_RANKINGS_NIM] = {"rankings_nim", "/v1/ranking", NULL, {"rankings", "nim_rankings"},
                              SPEC_EPF_PASSAGES},
    [SPEC_EP_RANKINGS_COHERE] = {"rankings_cohere", "/v2/rerank", NULL, {"cohere_rankings"},
                                 SPEC_EPF_PASSAGES},
    [SPEC_EP_RANKINGS_TEI] = {"rankings_tei", "/rerank", NULL, {"hf_tei_rankings"},
                              SPEC_EPF_PASSAGES},
    [SPEC_EP_TGI] = {"tgi", "/generate", "/generate_stream", {"huggingface_generate", "tgi"},
                     GEN_STREAMED},
    [SPEC_EP_TEMPLATE] = {"template", "", NULL, {NULL}, GEN_STREAMED},
    [SPEC_EP_EMBEDDINGS_NIM] = {"nim_embeddings", "/v1/embeddings", NULL, {"nim_embeddings"},
                                SPEC_EPF_BATCH},
    [SPEC_EP_EMBEDDINGS_COHERE] = {"cohere_embeddings", "/v2/embed", NULL,
                                   {"cohere_embeddings"}, SPEC_EPF_BATCH},
    [SPEC_EP_EMBEDDINGS_TEI] = {"tei_embeddings", "/embed", NULL, {NULL}, SPEC_EPF_BATCH},
    [SPEC_EP_VLLM_GENERATE] = {"vllm_generate", "/inference/v1/generate", NULL,
                               {"vllm_generate"}, SPEC_EPF_GENERATES},
    [SPEC_EP_SGLANG_GENERATE] = {"sglang_generate", "/generate", NULL, {"sglang_generate"},
                                 GEN_STREAMED},
    [SPEC_EP_RAW] = {"raw", "/", NULL, {"raw"}, SPEC_EPF_STREAMS | SPEC_EPF_RAW},
    [SPEC_EP_RESPONSES] = {"responses", "/v1/responses", NULL, {"responses"}, GEN_STREAMED},
    [SPEC_EP_MESSAGES] = {"messages", "/v1/messages", NULL, {"messages", "anthropic_messages"},
                          GEN_STREAMED},
    [SPEC_EP_AUDIO_TRANSCRIPTION] = {"audio_transcription", "/v1/audio/transcriptions", NULL,
                                     {"audio_transcription"},
                                     SPEC_EPF_STREAMS | SPEC_EPF_AUDIO | SPEC_EPF_AUDIO_FILE},
    [SPEC_EP_IMAGE_GENERATION] = {"image_generation", "/v1/images/generations", NULL,
                                  {"image_generation"}, SPEC_EPF_STREAMS},
    [SPEC_EP_IMAGE_EDIT] = {"image_edit", "/v1/images/edits", NULL, {"image_edit"},
                            SPEC_EPF_STREAMS | SPEC_EPF_IMAGES | SPEC_EPF_IMAGE_FILE},
    [SPEC_EP_IMAGE_RETRIEVAL] = {"image_retrieval", "/v1/infer", NULL, {"image_retrieval"},
                                 SPEC_EPF_IMAGES | SPEC_EPF_IMAGE_NEEDED},
    [SPEC_EP_CHAT_EMBEDDINGS] = {"chat_embeddings", "/v1/embeddings", NULL, {"chat_embeddings"},
                                 SPEC_EPF_IMAGES},
};

/* An AIPerf endpoint type name, or headroom's own name for a type (the
 * template endpoint excepted: it needs a spec's template). */
int spec_endpoint_from_aiperf(const char *name)
{
	for (int i = 0; i < SPEC_EP__COUNT; i++)
		for (int k = 0; k < 3 && spec_endpoints[i].aiperf[k]; k++)
			if (strcmp(name, spec_endpoints[i].aiperf[k]) == 0)
				return i;
	for (int i = 0; i < SPEC_EP__COUNT; i++)
		if (i != SPEC_EP_TEMPLATE && strcmp(name, spec_endpoints[i].name) == 0)
			return i;
	return -1;
}

const char *const spec_template_placeholders[] = {"prompt", "max_tokens", "model", "stream", NULL};

bool spec_endpoint_generates(int ep)
{
	return ep >= 0 && ep < SPEC_EP__COUNT && (spec_endpoints[ep].flags & SPEC_EPF_GENERATES);
}

static bool is_rankings(int ep)
{
	return spec_endpoints[ep].flags & SPEC_EPF_PASSAGES;
}

static int parse_endpoint(struct vctx *v, json_t *t, struct spec *s)
{
	const char *ep = get_str(v, t, "endpoint", "target.endpoint", "chat", 32);
	if (!ep)
		return -1;
	char names[1024] = "";
	size_t used = 0;
	for (int i = 0; i < SPEC_EP__COUNT; i++) {
		if (strcmp(ep, spec_endpoints[i].name) == 0) {
			s->target.endpoint = i;
			return 0;
		}
		int n = snprintf(names + used, sizeof names - used, "%s\"%s\"", i ? ", " : "",
		                 spec_endpoints[i].name);
		if (n > 0 && (size_t)n < sizeof names - used)
			used += (size_t)n;
	}
	return fail(v, "invalid_value", "target.endpoint", "'target.endpoint' must be one of %s",
	            names);
}

/* A dotted JSON path (response_path, stream_path): 1 to SPEC_MAX_JSON_PATH
 * printable bytes, segments separated by '.', none empty. Absent or null:
 * removed, and missing_field when required (why says when). Returns the
 * path, or NULL (absent, or failed: see v->failed). */
static const char *get_json_path(struct vctx *v, json_t *o, const char *key, const char *path,
                                 bool required, const char *why)
{
	json_t *x = json_object_get(o, key);
	if (!x || json_is_null(x)) {
		json_object_del(o, key);
		if (required)
			fail(v, "missing_field", path, "'%s' is required %s", path, why);
		return NULL;
	}
	const char *p = get_str(v, o, key, path, NULL, SPEC_MAX_JSON_PATH);
	if (!p)
		return NULL;
	int segs = 1;
	bool bad = !*p;
	for (const char *c = p; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			bad = true;
		if (*c == '.') {
			segs++;
			if (c == p || c[1] == '.' || c[1] == '\0')
				bad = true;
		}
	}
	if (bad || segs > SPEC_MAX_JSON_PATH_SEGS) {
		fail(v, "invalid_value", path,
		     "'%s' must be a dotted path such as \"choices.0.text\" (at most %d "
		     "non-empty segments, no control characters)",
		     path, SPEC_MAX_JSON_PATH_SEGS);
		return NULL;
	}
	return p;
}

/* The placeholders in one string of a template body: {{name}} with name
 * of letters, digits and '_' must be a known one (other uses of braces,
 * such as a Jinja template's "{{ x }}", are left alone). Counts
 * {{prompt}} in *prompts. */
static int scan_placeholders(struct vctx *v, const char *str, size_t len, const char *path,
                             int *prompts)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (str[i] != '{' || str[i + 1] != '{')
			continue;
		size_t a = i + 2, b = a;
		while (b < len && (isalnum((unsigned char)str[b]) || str[b] == '_'))
			b++;
		if (b == a || b + 1 >= len || str[b] != '}' || str[b + 1] != '}')
			continue;
		int known = -1;
		for (int k = 0; spec_template_placeholders[k]; k++)
			if (strlen(spec_template_placeholders[k]) == b - a &&
			    memcmp(spec_template_placeholders[k], str + a, b - a) == 0)
				known = k;
		if (known < 0)
			return fail(v, "invalid_value", path,
			            "'%s' has the unknown placeholder '{{%.*s}}' (known: {{prompt}}, "
			            "{{max_tokens}}, {{model}}, {{stream}})",
			            path, (int)(b - a > 64 ? 64 : b - a), str + a);
		if (known == 0)
			++*prompts;
		i = b + 1;
	}
	return 0;
}

#define TEMPLATE_MAX_DEPTH 64

/* Every string of a template body (keys included), depth-first. */
static int scan_template(struct vctx *v, json_t *x, char *path, size_t plen, int depth,
                         int *prompts)
{
	size_t cap = 512;
	if (depth > TEMPLATE_MAX_DEPTH)
		return fail(v, "invalid_value", "target.template.body",
		            "'target.template.body' is nested deeper than %d levels",
		            TEMPLATE_MAX_DEPTH);
	if (json_is_string(x))
		return scan_placeholders(v, json_string_value(x), json_string_length(x), path,
		                         prompts);
	if (json_is_array(x)) {
		size_t i;
		json_t *e;
		json_array_foreach(x, i, e)
		{
			snprintf(path + plen, cap - plen, "[%zu]", i);
			if (scan_template(v, e, path, strlen(path), depth + 1, prompts) < 0)
				return -1;
			path[plen] = '\0';
		}
	} else if (json_is_object(x)) {
		const char *k;
		json_t *e;
		json_object_foreach(x, k, e)
		{
			snprintf(path + plen, cap - plen, ".%s", k);
			if (scan_placeholders(v, k, strlen(k), path, prompts) < 0 ||
			    scan_template(v, e, path, strlen(path), depth + 1, prompts) < 0)
				return -1;
			path[plen] = '\0';
		}
	}
	return 0;
}

/* target.template {path, body, response_path, stream_path}: with endpoint
 * "template" only (docs/spec.md). */
/* A path as sent after the URL: '/' first, printable ASCII, no space or
 * '#' (a query string may follow). */
static int path_ok(const char *p)
{
	bool bad = p[0] != '/';
	for (const char *c = p; *c; c++)
		bad |= (unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f || *c == '#';
	return !bad;
}

/* target.path: the request path of the endpoint replaced (kept only when
 * given, so that specs without it keep their fingerprints). */
static int parse_target_path(struct vctx *v, json_t *t, struct spec *s)
{
	json_t *pj = json_object_get(t, "path");
	s->target.path = NULL;
	if (!pj || json_is_null(pj)) {
		json_object_del(t, "path");
		return 0;
	}
	const char *p = get_str(v, t, "path", "target.path", NULL, HR_MAX_URL_LEN);
	if (!p)
		return -1;
	if (s->target.endpoint == SPEC_EP_TEMPLATE)
		return fail(v, "invalid_value", "target.path",
		            "'target.path' does not apply to endpoint \"template\": its path is "
		            "'target.template.path'");
	if (!path_ok(p))
		return fail(v, "invalid_value", "target.path",
		            "'target.path' must start with '/' and be printable ASCII without "
		            "spaces or '#' (\"/openai/deployments/d1/chat/completions?api-version=1\")");
	s->target.path = p;
	return 0;
}

/* target.prewarm: the workers open their slots' connections before time
 * zero (kept only when given, like target.path). */
static int parse_prewarm(struct vctx *v, json_t *t, struct spec *s)
{
	json_t *b = json_object_get(t, "prewarm");
	s->target.prewarm = false;
	if (!b || json_is_null(b)) {
		json_object_del(t, "prewarm");
		return 0;
	}
	if (!json_is_boolean(b))
		return fail(v, "wrong_type", "target.prewarm", "'target.prewarm' must be true or false");
	s->target.prewarm = json_is_true(b);
	return 0;
}

static int parse_template(struct vctx *v, json_t *t, struct spec *s)
{
	json_t *tp = json_object_get(t, "template");
	if (s->target.endpoint != SPEC_EP_TEMPLATE) {
		if (tp && !json_is_null(tp))
			return fail(v, "invalid_value", "target.template",
			            "'target.template' needs 'target.endpoint' \"template\"");
		json_object_del(t, "template");
		return 0;
	}
	if (!tp || json_is_null(tp))
		return fail(v, "missing_field", "target.template",
		            "'target.template' ({\"path\", \"body\", \"response_path\", "
		            "\"stream_path\"}) is required with 'target.endpoint' \"template\"");
	if (!json_is_object(tp))
		return fail(v, "wrong_type", "target.template",
		            "'target.template' must be an object");
	static const char *const keys[] = {"path", "body", "response_path", "stream_path", NULL};
	if (check_keys(v, tp, "target.template", keys) < 0)
		return -1;
	const char *p = get_str(v, tp, "path", "target.template.path", NULL, HR_MAX_URL_LEN);
	if (!p)
		return -1;
	if (!path_ok(p))
		return fail(v, "invalid_value", "target.template.path",
		            "'target.template.path' must start with '/' and be printable ASCII "
		            "without spaces or '#' (\"/v1/completions\")");
	s->target.template_path = p;
	json_t *body = json_object_get(tp, "body");
	if (!body || json_is_null(body))
		return fail(v, "missing_field", "target.template.body",
		            "'target.template.body' (the request body, with placeholders) is "
		            "required");
	if (!json_is_object(body))
		return fail(v, "wrong_type", "target.template.body",
		            "'target.template.body' must be a JSON object");
	char path[512] = "target.template.body";
	int prompts = 0;
	if (scan_template(v, body, path, strlen(path), 0, &prompts) < 0)
		return -1;
	if (!prompts)
		return fail(v, "invalid_value", "target.template.body",
		            "'target.template.body' must contain the placeholder \"{{prompt}}\" in "
		            "a string");
	s->target.template_body = body;
	s->target.response_path =
	    get_json_path(v, tp, "response_path", "target.template.response_path",
	                  !s->target.stream, "when 'target.stream' is false");
	if (v->failed)
		return -1;
	s->target.stream_path = get_json_path(v, tp, "stream_path", "target.template.stream_path",
	                                      s->target.stream, "when 'target.stream' is true");
	return v->failed ? -1 : 0;
}

/* target.raw (endpoint "raw"): {"body": any JSON value, a string sent as
 * its bytes; "content_type"}. */
static int parse_raw(struct vctx *v, json_t *t, struct spec *s)
{
	json_t *rp = json_object_get(t, "raw");
	s->target.raw_body = NULL;
	s->target.raw_content_type = NULL;
	if (s->target.endpoint != SPEC_EP_RAW) {
		if (rp && !json_is_null(rp))
			return fail(v, "invalid_value", "target.raw",
			            "'target.raw' needs 'target.endpoint' \"raw\"");
		json_object_del(t, "raw");
		return 0;
	}
	if (!rp || json_is_null(rp))
		return fail(v, "missing_field", "target.raw",
		            "'target.raw' ({\"body\", \"content_type\"}) is required with "
		            "'target.endpoint' \"raw\"");
	if (!json_is_object(rp))
		return fail(v, "wrong_type", "target.raw", "'target.raw' must be an object");
	static const char *const keys[] = {"body", "content_type", NULL};
	if (check_keys(v, rp, "target.raw", keys) < 0)
		return -1;
	json_t *body = json_object_get(rp, "body");
	if (!body || json_is_null(body))
		return fail(v, "missing_field", "target.raw.body",
		            "'target.raw.body' (the request body: a string sent as given, or any "
		            "other JSON value) is required");
	char *dump = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t n = json_is_string(body) ? json_string_length(body) : dump ? strlen(dump) : 0;
	free(dump);
	if (n > SPEC_MAX_RAW_BODY)
		return fail(v, "out_of_range", "target.raw.body",
		            "'target.raw.body' must be at most %d bytes as sent, not %zu",
		            SPEC_MAX_RAW_BODY, n);
	s->target.raw_body = body;
	json_t *ct = json_object_get(rp, "content_type");
	if (ct && !json_is_null(ct)) {
		const char *c = get_str(v, rp, "content_type", "target.raw.content_type", NULL, 200);
		if (!c)
			return -1;
		bool ok = *c != '\0';
		for (const char *q = c; *q; q++)
			ok = ok && (unsigned char)*q >= ' ' && *q != 0x7f;
		if (!ok)
			return fail(v, "invalid_value", "target.raw.content_type",
			            "'target.raw.content_type' must be a non-empty printable header "
			            "value");
		s->target.raw_content_type = c;
	} else {
		json_object_del(rp, "content_type");
	}
	return 0;
}

/* Rejects a workload field that does not apply to the endpoint. */
static int not_for_endpoint(struct vctx *v, json_t *wl, const char *key, const char *what, int ep)
{
	json_t *x = json_object_get(wl, key);
	if (!x || json_is_null(x)) {
		json_object_del(wl, key);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "workload.%s", key);
	return fail(v, "invalid_value", path, "'%s' applies to %s only, not to endpoint \"%s\"",
	            path, what, spec_endpoints[ep].name);
}

/* workload.passages (rankings) and workload.batch_size (embeddings):
 * texts per request besides the query, each drawn from workload.isl. */
static int parse_items(struct vctx *v, json_t *wl, struct spec *s)
{
	int ep = s->target.endpoint;
	double d;
	if (is_rankings(ep)) {
		if (get_num(v, wl, "passages", "workload.passages", 4, 1, 1, SPEC_MAX_PASSAGES, 1,
		            &d) < 0)
			return -1;
		s->workload.passages = (int)d;
		if ((d + 1) * s->workload.isl.mean > HR_MAX_ISL)
			return fail(v, "out_of_range", "workload.passages",
			            "('workload.passages' + 1) x 'workload.isl.mean' must be at most "
			            "%d tokens",
			            HR_MAX_ISL);
	} else if (not_for_endpoint(v, wl, "passages", "the rankings endpoints", ep) < 0) {
		return -1;
	}
	if (spec_endpoints[ep].flags & SPEC_EPF_BATCH) {
		if (get_num(v, wl, "batch_size", "workload.batch_size", 1, 1, 1, SPEC_MAX_BATCH, 1,
		            &d) < 0)
			return -1;
		s->workload.batch_size = (int)d;
		if (d * s->workload.isl.mean > HR_MAX_ISL)
			return fail(v, "out_of_range", "workload.batch_size",
			            "'workload.batch_size' x 'workload.isl.mean' must be at most %d "
			            "tokens",
			            HR_MAX_ISL);
	} else if (not_for_endpoint(v, wl, "batch_size", "the embeddings endpoints", ep) < 0) {
		return -1;
	}
	if (s->workload.sessions && ep == SPEC_EP_VLLM_GENERATE)
		return fail(v, "invalid_value", "workload.sessions",
		            "multi-turn sessions are not available with \"vllm_generate\" (its "
		            "answer is token ids, not text to carry into the next turn)");
	if (s->workload.sessions && !spec_endpoint_generates(ep))
		return fail(v, "invalid_value", "workload.sessions",
		            "multi-turn sessions need a generation endpoint (chat, completions, tgi "
		            "or template), not \"%s\"",
		            spec_endpoints[ep].name);
	return 0;
}

/* workload.images and workload.audio: synthetic pictures and clips in the
 * user message of every request (the endpoints flagged SPEC_EPF_IMAGES /
 * SPEC_EPF_AUDIO). Absent or null: removed, none; given: every member
 * filled, so a spec without them keeps its fingerprint. */
/* target.extra_body of an endpoint that uploads a form: its members are
 * form fields (scalars), and not the worker's own (NULL-terminated). */
static int form_extra_body(struct vctx *v, const struct spec *s, const char *const *own)
{
	const char *key;
	json_t *val;
	const char *name = spec_endpoints[s->target.endpoint].name;
	json_object_foreach(s->target.extra_body, key, val)
	{
		char path[300];
		snprintf(path, sizeof path, "target.extra_body.%.200s", key);
		if (!json_is_string(val) && !json_is_number(val) && !json_is_boolean(val))
			return fail(v, "invalid_value", path,
			            "'%s' must be a string, number or boolean: the members of "
			            "'target.extra_body' are form fields for endpoint \"%s\"",
			            path, name);
		for (const char *const *o = own; *o; o++)
			if (strcmp(key, *o) == 0)
				return fail(v, "invalid_value", path,
				            "'%s' is the worker's own form field for endpoint \"%s\"",
				            path, name);
	}
	return 0;
}

static int parse_images(struct vctx *v, json_t *wl, struct spec *s)
{
	int ep = s->target.endpoint;
	bool file = spec_endpoints[ep].flags & SPEC_EPF_IMAGE_FILE;
	bool needed = spec_endpoints[ep].flags & SPEC_EPF_IMAGE_NEEDED;
	json_t *o = json_object_get(wl, "images");
	if ((file || needed) && (!o || json_is_null(o))) { /* the input: always described */
		o = json_object();
		json_object_set_new(wl, "images", o);
	}
	if (!o || json_is_null(o) || !(spec_endpoints[ep].flags & SPEC_EPF_IMAGES))
		return not_for_endpoint(v, wl, "images",
		                        "the chat, image_edit, image_retrieval and chat_embeddings "
		                        "endpoints",
		                        ep);
	if (!json_is_object(o))
		return fail(v, "wrong_type", "workload.images", "'workload.images' must be an object");
	static const char *const keys[] = {"count", "width", "height", "format", "quality", "pool",
	                                   NULL};
	if (check_keys(v, o, "workload.images", keys) < 0)
		return -1;
	struct spec_images *im = &s->workload.images;
	double c, w, h, q = 0, pool;
	if (get_num(v, o, "count", "workload.images.count", 1, 1, 0, SPEC_MAX_MEDIA_COUNT, 1, &c) <
	        0 ||
	    get_num(v, o, "width", "workload.images.width", 512, 1, 1, MEDIA_MAX_SIDE, 1, &w) < 0 ||
	    get_num(v, o, "height", "workload.images.height", 512, 1, 1, MEDIA_MAX_SIDE, 1, &h) <
	        0 ||
	    get_num(v, o, "pool", "workload.images.pool", 8, 1, 1, SPEC_MAX_MEDIA_POOL, 1, &pool) <
	        0)
		return -1;
	const char *f = get_str(v, o, "format", "workload.images.format", "png", 16);
	if (!f)
		return -1;
	if (strcmp(f, "png") == 0)
		im->format = MEDIA_PNG;
	else if (strcmp(f, "jpeg") == 0)
		im->format = MEDIA_JPEG;
	else
		return fail(v, "invalid_value", "workload.images.format",
		            "'workload.images.format' must be \"png\" or \"jpeg\"");
	if (im->format == MEDIA_JPEG) {
		if (get_num(v, o, "quality", "workload.images.quality", 85, 1, 1, 100, 1, &q) < 0)
			return -1;
	} else if (json_object_get(o, "quality") && !json_is_null(json_object_get(o, "quality"))) {
		return fail(v, "invalid_value", "workload.images.quality",
		            "'workload.images.quality' applies to format \"jpeg\" only");
	} else {
		json_object_del(o, "quality");
	}
	double raw = w * h * 3;
	if (c * raw > SPEC_MAX_MEDIA_REQ_BYTES)
		return fail(v, "out_of_range", "workload.images",
		            "'workload.images' count x width x height x 3 must be at most %u bytes "
		            "per request",
		            SPEC_MAX_MEDIA_REQ_BYTES);
	if (pool * raw > SPEC_MAX_MEDIA_POOL_BYTES)
		return fail(v, "out_of_range", "workload.images.pool",
		            "'workload.images' pool x width x height x 3 must be at most %u bytes",
		            SPEC_MAX_MEDIA_POOL_BYTES);
	*im = (struct spec_images){(int)c, (int)w, (int)h, im->format, (int)q, (int)pool};
	if (file && c != 1)
		return fail(v, "invalid_value", "workload.images.count",
		            "'workload.images.count' must be 1 for endpoint \"%s\" (one file a "
		            "request)",
		            spec_endpoints[ep].name);
	if (needed && c < 1)
		return fail(v, "out_of_range", "workload.images.count",
		            "'workload.images.count' must be 1 to %d for endpoint \"%s\"",
		            SPEC_MAX_MEDIA_COUNT, spec_endpoints[ep].name);
	static const char *const own[] = {"image", "prompt", NULL};
	return file ? form_extra_body(v, s, own) : 0;
}

static int parse_audio(struct vctx *v, json_t *wl, struct spec *s)
{
	int ep = s->target.endpoint;
	bool file = spec_endpoints[ep].flags & SPEC_EPF_AUDIO_FILE;
	json_t *o = json_object_get(wl, "audio");
	if (file && (!o || json_is_null(o))) { /* the clip uploaded: always described */
		o = json_object();
		json_object_set_new(wl, "audio", o);
	}
	if (!o || json_is_null(o) || !(spec_endpoints[ep].flags & SPEC_EPF_AUDIO))
		return not_for_endpoint(v, wl, "audio", "the chat and audio_transcription endpoints",
		                        ep);
	if (!json_is_object(o))
		return fail(v, "wrong_type", "workload.audio", "'workload.audio' must be an object");
	static const char *const keys[] = {"count", "duration_s", "sample_rate", "format", "pool",
	                                   NULL};
	if (check_keys(v, o, "workload.audio", keys) < 0)
		return -1;
	double c, d, rate, pool;
	if (get_num(v, o, "count", "workload.audio.count", 1, 1, 0, SPEC_MAX_MEDIA_COUNT, 1, &c) <
	        0 ||
	    get_num(v, o, "duration_s", "workload.audio.duration_s", 5, 1, 0.001,
	            MEDIA_MAX_AUDIO_MS / 1000.0, 0, &d) < 0 ||
	    get_num(v, o, "sample_rate", "workload.audio.sample_rate", 16000, 1, MEDIA_MIN_RATE,
	            MEDIA_MAX_RATE, 1, &rate) < 0 ||
	    get_num(v, o, "pool", "workload.audio.pool", 8, 1, 1, SPEC_MAX_MEDIA_POOL, 1, &pool) <
	        0)
		return -1;
	const char *f = get_str(v, o, "format", "workload.audio.format", "wav", 16);
	if (!f)
		return -1;
	if (strcmp(f, "wav") != 0)
		return fail(v, "invalid_value", "workload.audio.format",
		            "'workload.audio.format' must be \"wav\"");
	if (file && c != 1)
		return fail(v, "invalid_value", "workload.audio.count",
		            "'workload.audio.count' must be 1 for endpoint \"%s\" (one file a "
		            "request)",
		            spec_endpoints[ep].name);
	static const char *const own[] = {"file", "stream", NULL};
	if (file && form_extra_body(v, s, own) < 0)
		return -1;
	int ms = (int)lround(d * 1000);
	if (ms < 1)
		ms = 1;
	double raw = (double)ms / 1000 * rate * 2;
	double img = (double)s->workload.images.count * s->workload.images.width *
	             s->workload.images.height * 3;
	if (c * raw + img > SPEC_MAX_MEDIA_REQ_BYTES)
		return fail(v, "out_of_range", "workload.audio",
		            "the media of one request (images: count x width x height x 3, audio: "
		            "count x duration_s x sample_rate x 2) must be at most %u bytes",
		            SPEC_MAX_MEDIA_REQ_BYTES);
	if (pool * raw > SPEC_MAX_MEDIA_POOL_BYTES)
		return fail(v, "out_of_range", "workload.audio.pool",
		            "'workload.audio' pool x duration_s x sample_rate x 2 must be at most %u "
		            "bytes",
		            SPEC_MAX_MEDIA_POOL_BYTES);
	s->workload.audio = (struct spec_audio){(int)c, ms, (int)rate, (int)pool};
	return 0;
}

/* --- traffic classes (docs/classes.md) ------------------------------------ */

/* The target fields a class may set over the run's (the API key stays the run's). */
static const char *const class_target_keys[] = {
    "url", "endpoint", "model", "stream", "headers", "extra_body", "timeout_s", "mock",
    "max_tokens_field", "template", "transport", "path", "raw", "prewarm", NULL};

static int class_name_ok(const char *n)
{
	if (!*n)
		return 0;
	for (; *n; n++)
		if (!isalnum((unsigned char)*n) && *n != '_' && *n != '-' && *n != '.')
			return 0;
	return 1;
}

/* Class k's whole spec as JSON: base (the run's fields as given, without
 * classes, gates, repeat and validity) with the class's fields over it.
 * The class's target is merged key by key; its workload replaces the
 * run's; its load replaces the run's shape, taking the run's bound
 * (requests or duration_s), grace and cancellation when it sets none;
 * its goodput replaces the run's. A class without a workload seed gets
 * the run's seed + k + 1, so that its prompts and arrivals differ from
 * every other class's and still follow from the one seed. */
static json_t *class_merge(json_t *base, json_t *c, int k, uint64_t run_seed)
{
	json_t *m = json_deep_copy(base);
	json_t *ct = json_object_get(c, "target");
	if (ct) {
		json_t *mt = json_object_get(m, "target");
		if (!json_is_object(mt)) {
			mt = json_object();
			json_object_set_new(m, "target", mt);
		}
		if (json_object_get(ct, "url"))
			json_object_del(mt, "mock");
		if (json_is_true(json_object_get(ct, "mock")))
			json_object_del(mt, "url");
		json_object_update(mt, ct);
	}
	json_t *cw = json_object_get(c, "workload");
	if (cw)
		json_object_set(m, "workload", cw);
	json_t *mw = json_object_get(m, "workload");
	if (!json_is_object(mw)) {
		mw = json_object();
		json_object_set_new(m, "workload", mw);
	}
	if (!json_object_get(mw, "seed") || !cw) {
		json_t *copy = json_deep_copy(mw);
		json_object_set_new(copy, "seed", json_integer((json_int_t)((run_seed + (uint64_t)k + 1) &
		                                                             0x1fffffffffffffull)));
		json_object_set_new(m, "workload", copy);
	}
	json_t *cl = json_object_get(c, "load");
	if (cl) {
		json_t *bl = json_object_get(base, "load");
		json_t *ml = json_deep_copy(cl);
		if (json_is_object(bl) && json_is_object(ml)) {
			if (!json_object_get(ml, "requests") && !json_object_get(ml, "duration_s")) {
				if (json_object_get(bl, "requests"))
					json_object_set(ml, "requests", json_object_get(bl, "requests"));
				if (json_object_get(bl, "duration_s"))
					json_object_set(ml, "duration_s", json_object_get(bl, "duration_s"));
			}
			static const char *const inherit[] = {"grace_s", "cancel", "stop_on_saturation",
			                                      NULL};
			for (const char *const *key = inherit; *key; key++)
				if (!json_object_get(ml, *key) && json_object_get(bl, *key))
					json_object_set(ml, *key, json_object_get(bl, *key));
		}
		json_object_set_new(m, "load", ml);
	}
	json_t *cg = json_object_get(c, "goodput");
	if (cg)
		json_object_set(m, "goodput", cg);
	json_t *cwk = json_object_get(c, "workers");
	if (cwk)
		json_object_set(m, "workers", cwk);
	return m;
}

/* spec.classes: each class parsed as a whole spec (errors named under
 * classes[k]), then written back normalised: name, workers, and the
 * class's complete target, workload, load and goodput. */
static int parse_classes(struct vctx *v, json_t *root, json_t *given, int default_workers,
                         struct spec *s)
{
	json_t *arr = json_object_get(root, "classes");
	if (!arr || json_is_null(arr)) {
		json_object_del(root, "classes");
		return 0;
	}
	if (!json_is_array(arr))
		return fail(v, "wrong_type", "classes", "'classes' must be an array of objects");
	size_t n = json_array_size(arr);
	if (n < 1 || n > HR_MAX_CLASSES)
		return fail(v, "out_of_range", "classes", "'classes' needs 1 to %d classes",
		            HR_MAX_CLASSES);
	/* the run's workers are the classes': given at the top (a normalised
	 * spec has it), it must be their sum */
	json_t *gw = json_object_get(given, "workers");
	if (gw && !json_is_null(gw) && !json_is_integer(gw))
		return fail(v, "invalid_value", "workers",
		            "with 'classes', give 'workers' per class (classes[k].workers)");
	json_t *base = json_deep_copy(given);
	static const char *const run_only[] = {"classes", "gates", "repeat", "validity", "workers",
	                                       NULL};
	for (const char *const *key = run_only; *key; key++)
		json_object_del(base, *key);
	/* every class gets its share of the default pool, at least one worker */
	int defw = default_workers < 1 ? 1 : default_workers;
	defw = (defw + (int)n - 1) / (int)n;
	int total = 0, rc = 0;
	for (size_t k = 0; k < n && rc == 0; k++) {
		char path[64], fp[96];
		snprintf(path, sizeof path, "classes[%zu]", k);
		json_t *c = json_array_get(arr, k);
		if (!json_is_object(c)) {
			rc = fail(v, "wrong_type", path, "'%s' must be an object", path);
			break;
		}
		static const char *const ckeys[] = {"name", "target", "workload", "load", "goodput",
		                                    "workers", NULL};
		if (check_keys(v, c, path, ckeys) < 0) {
			rc = -1;
			break;
		}
		snprintf(fp, sizeof fp, "%s.name", path);
		const char *name = get_str(v, c, "name", fp, NULL, HR_MAX_CLASS_NAME);
		if (!name) {
			rc = -1;
			break;
		}
		if (!class_name_ok(name)) {
			rc = fail(v, "invalid_value", fp,
			          "'%s' must be letters, digits, '_', '-' or '.' (up to %d)", fp,
			          HR_MAX_CLASS_NAME);
			break;
		}
		for (size_t j = 0; j < k && rc == 0; j++)
			if (strcmp(s->classes[j].name, name) == 0)
				rc = fail(v, "invalid_value", fp,
				          "'%s': another class (classes[%zu]) is named \"%s\"", fp, j,
				          name);
		if (rc)
			break;
		static const char *const objs[] = {"target", "workload", "load", "goodput", NULL};
		for (const char *const *key = objs; *key && rc == 0; key++) {
			json_t *o = json_object_get(c, *key);
			snprintf(fp, sizeof fp, "%s.%s", path, *key);
			if (o && !json_is_object(o))
				rc = fail(v, "wrong_type", fp, "'%s' must be an object", fp);
			else if (o && json_object_size(o) == 0)
				rc = fail(v, "invalid_value", fp,
				          "'%s' is empty: give its fields, or leave it out to take "
				          "the run's",
				          fp);
		}
		if (rc)
			break;
		json_t *ct = json_object_get(c, "target");
		if (ct) {
			snprintf(fp, sizeof fp, "%s.target", path);
			if (check_keys(v, ct, fp, class_target_keys) < 0) {
				rc = -1;
				break;
			}
		}
		json_t *m = class_merge(base, c, (int)k, s->workload.seed);
		struct spec *cs = xcalloc(1, sizeof *cs);
		struct spec_error ce;
		if (spec_from_json(m, defw, cs, &ce) < 0) {
			json_decref(m);
			free(cs);
			char f[640];
			snprintf(f, sizeof f, "%s%s%.500s", path, ce.field[0] ? "." : "", ce.field);
			rc = fail(v, ce.code, f, "class \"%s\": %.700s", name, ce.message);
			break;
		}
		json_decref(m);
		/* a worker with nothing to send is useless */
		if (cs->load.mode == SPEC_LOAD_CONCURRENCY && cs->load.requests > 0 &&
		    cs->load.requests < cs->workers) {
			cs->workers = (int)cs->load.requests;
			json_object_set_new(cs->json, "workers", json_integer(cs->workers));
		}
		if (total + cs->workers > HR_MAX_WORKERS) {
			spec_release(cs);
			free(cs);
			snprintf(fp, sizeof fp, "%s.workers", path);
			rc = fail(v, "out_of_range", fp, "the classes' workers add up to more than %d",
			          HR_MAX_WORKERS);
			break;
		}
		struct spec_class *sc = &s->classes[s->n_classes++];
		sc->spec = cs;
		sc->first_worker = total;
		sc->workers = cs->workers;
		total += cs->workers;
		/* normalised: the class as the workers run it */
		json_t *norm = json_pack("{s:s, s:i, s:O, s:O, s:O}", "name", name, "workers",
		                         cs->workers, "target", json_object_get(cs->json, "target"),
		                         "workload", json_object_get(cs->json, "workload"), "load",
		                         json_object_get(cs->json, "load"));
		if (json_object_get(cs->json, "goodput"))
			json_object_set(norm, "goodput", json_object_get(cs->json, "goodput"));
		json_array_set_new(arr, k, norm);
		sc->name = json_string_value(json_object_get(norm, "name"));
	}
	json_decref(base);
	if (rc)
		return -1;
	if (json_is_integer(gw) && json_integer_value(gw) != total)
		return fail(v, "invalid_value", "workers",
		            "with 'classes', give 'workers' per class (classes[k].workers): "
		            "'workers' is their sum (%d)",
		            total);
	s->workers = total;
	json_object_set_new(root, "workers", json_integer(total));
	return 0;
}

int spec_class_of_worker(const struct spec *s, uint32_t w)
{
	for (int k = 0; k < s->n_classes; k++)
		if (w >= (uint32_t)s->classes[k].first_worker &&
		    w < (uint32_t)(s->classes[k].first_worker + s->classes[k].workers))
			return k;
	return -1;
}

const struct spec *spec_for_worker(const struct spec *s, uint32_t w)
{
	int k = spec_class_of_worker(s, w);
	return k < 0 ? s : s->classes[k].spec;
}

/* placement (docs/agents.md): kept only when given, so specs without it
 * keep their fingerprints. */
static int parse_placement(struct vctx *v, json_t *root, json_t *given, struct spec *s)
{
	json_t *o = json_object_get(root, "placement");
	if (!o || json_is_null(o)) {
		json_object_del(root, "placement");
		return 0;
	}
	if (!json_is_object(o))
		return fail(v, "wrong_type", "placement", "'placement' must be an object");
	static const char *const keys[] = {"local", "agents", "on_agent_loss", NULL};
	if (check_keys(v, o, "placement", keys) < 0)
		return -1;
	if (json_object_get(root, "classes") && !json_is_null(json_object_get(root, "classes")))
		return fail(v, "invalid_value", "placement",
		            "'placement' cannot be combined with 'classes'");
	if (json_object_get(given, "workers"))
		return fail(v, "invalid_value", "workers",
		            "with 'placement' the workers are placement.local plus each "
		            "placement.agents entry's workers on every agent it selects: leave "
		            "'workers' out");
	double local;
	if (get_num(v, o, "local", "placement.local", 0, 1, 0, HR_MAX_WORKERS, 1, &local) < 0)
		return -1;
	json_t *ag = json_object_get(o, "agents");
	if (!ag || json_is_null(ag)) {
		ag = json_array();
		json_object_set_new(o, "agents", ag);
	}
	if (!json_is_array(ag))
		return fail(v, "wrong_type", "placement.agents", "'placement.agents' must be an array");
	if (json_array_size(ag) > HR_MAX_PLACEMENT)
		return fail(v, "out_of_range", "placement.agents",
		            "'placement.agents' has more than %d entries", HR_MAX_PLACEMENT);
	s->placement.given = 1;
	s->placement.local = (int)local;
	size_t i;
	json_t *e;
	json_array_foreach(ag, i, e)
	{
		char path[64], p2[96];
		snprintf(path, sizeof path, "placement.agents[%zu]", i);
		if (!json_is_object(e))
			return fail(v, "wrong_type", path, "'%s' must be an object", path);
		static const char *const ekeys[] = {"selector", "workers", NULL};
		if (check_keys(v, e, path, ekeys) < 0)
			return -1;
		snprintf(p2, sizeof p2, "%s.selector", path);
		json_t *sel = get_obj(v, e, "selector", p2, 0);
		if (!sel || check_string_map(v, sel, p2, HR_MAX_LABELS) < 0)
			return -1;
		snprintf(p2, sizeof p2, "%s.workers", path);
		double w;
		if (get_num(v, e, "workers", p2, 1, 1, 1, HR_MAX_WORKERS, 1, &w) < 0)
			return -1;
		s->placement.agents[i].selector = sel;
		s->placement.agents[i].workers = (int)w;
		s->placement.n_agents++;
	}
	if (s->placement.local == 0 && s->placement.n_agents == 0)
		return fail(v, "invalid_value", "placement",
		            "'placement' places no worker: give 'local' or 'agents'");
	const char *loss = get_str(v, o, "on_agent_loss", "placement.on_agent_loss", "fail", 16);
	if (!loss)
		return -1;
	if (strcmp(loss, "fail") != 0 && strcmp(loss, "degrade") != 0)
		return fail(v, "invalid_value", "placement.on_agent_loss",
		            "'placement.on_agent_loss' must be \"fail\" or \"degrade\"");
	s->placement.degrade = strcmp(loss, "degrade") == 0;
	return 0;
}

static int validate(struct vctx *v, json_t *root, json_t *given, int default_workers,
                    struct spec *s)
{
	static const char *const top[] = {"name",	"labels",    "target", "workload",
	                                  "load",	"workers",   "warmup", "telemetry",
	                                  "client",	"goodput",   "repeat",
	                                  "validity",	"gates",     "classes",
	                                  "placement",	NULL};
	if (check_keys(v, root, "", top) < 0)
		return -1;
	s->name = get_str(v, root, "name", "name", "", HR_MAX_NAME_LEN);
	if (!s->name)
		return -1;
	json_t *labels = get_obj(v, root, "labels", "labels", 0);
	if (!labels || check_string_map(v, labels, "labels", HR_MAX_LABELS) < 0)
		return -1;

	/* target */
	json_t *t = get_obj(v, root, "target", "target", 1);
	if (!t)
		return -1;
	static const char *const tkeys[] = {"url",        "endpoint",    "model",
	                                    "stream",     "api_key_env", "headers",
	                                    "extra_body", "timeout_s",   "mock",
	                                    "api_key_secret", "max_tokens_field", "template",
	                                    "api_key_header", "transport", "path", "raw",
	                                    "prewarm", NULL};
	if (check_keys(v, t, "target", tkeys) < 0)
		return -1;
	int mock = get_bool(v, t, "mock", "target.mock", 0);
	if (mock < 0)
		return -1;
	s->target.mock = mock;
	if (mock) {
		/* the daemon starts a headroom-mock for the run and fills in
		 * target.url before the workers see the spec */
		json_t *u = json_object_get(t, "url");
		if (u && !json_is_null(u) &&
		    !(json_is_string(u) && strcmp(json_string_value(u), SPEC_MOCK_URL) == 0))
			return fail(v, "invalid_value", "target.url",
			            "give 'target.url' or 'target.mock', not both");
		json_object_set_new(t, "url", json_string(SPEC_MOCK_URL));
	}
	s->target.url = get_str(v, t, "url", "target.url", NULL, HR_MAX_URL_LEN);
	if (!s->target.url)
		return -1;
	if (strncmp(s->target.url, "http://", 7) != 0 && strncmp(s->target.url, "https://", 8) != 0)
		return fail(v, "invalid_value", "target.url",
		            "'target.url' must start with http:// or https://");
	for (const char *c = s->target.url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return fail(v, "invalid_value", "target.url",
			            "'target.url' contains whitespace or control characters");
	if (parse_endpoint(v, t, s) < 0)
		return -1;
	s->target.model = get_str(v, t, "model", "target.model", NULL, HR_MAX_NAME_LEN);
	if (!s->target.model)
		return -1;
	/* embeddings and rankings answer in one piece: not streamed */
	unsigned epf = spec_endpoints[s->target.endpoint].flags;
	int stream = get_bool(v, t, "stream", "target.stream", (epf & SPEC_EPF_STREAM_DEF) != 0);
	if (stream < 0)
		return -1;
	if (stream && !(epf & SPEC_EPF_STREAMS))
		return fail(v, "invalid_value", "target.stream",
		            "'target.stream' must be false with endpoint \"%s\" (its answer is not "
		            "streamed)",
		            spec_endpoints[s->target.endpoint].name);
	s->target.stream = stream;
	json_t *ake = json_object_get(t, "api_key_env");
	if (ake && !json_is_null(ake)) {
		s->target.api_key_env =
		    get_str(v, t, "api_key_env", "target.api_key_env", NULL, 128);
		if (!s->target.api_key_env)
			return -1;
		const char *e = s->target.api_key_env;
		int ok = *e && !isdigit((unsigned char)*e);
		for (; *e; e++)
			ok = ok && (isalnum((unsigned char)*e) || *e == '_');
		if (!ok)
			return fail(v, "invalid_value", "target.api_key_env",
			            "'target.api_key_env' must name an environment variable");
	} else {
		json_object_del(t, "api_key_env");
		s->target.api_key_env = NULL;
	}
	const char *mtf = get_str(v, t, "max_tokens_field", "target.max_tokens_field", "max_tokens",
	                          32);
	if (!mtf)
		return -1;
	if (strcmp(mtf, "max_tokens") == 0)
		s->target.max_tokens_field = SPEC_MAXTOK_MAX_TOKENS;
	else if (strcmp(mtf, "max_completion_tokens") == 0)
		s->target.max_tokens_field = SPEC_MAXTOK_COMPLETION;
	else
		return fail(v, "invalid_value", "target.max_tokens_field",
		            "'target.max_tokens_field' must be \"max_tokens\" or "
		            "\"max_completion_tokens\"");
	json_t *aks = json_object_get(t, "api_key_secret");
	if (aks && !json_is_null(aks)) {
		/* the name of a secret the daemon holds (docs/spec.md): only the
		 * name is stored; the key reaches the workers at run time */
		if (s->target.api_key_env)
			return fail(v, "invalid_value", "target.api_key_secret",
			            "give 'target.api_key_env' or 'target.api_key_secret', not both");
		s->target.api_key_secret =
		    get_str(v, t, "api_key_secret", "target.api_key_secret", NULL, 128);
		if (!s->target.api_key_secret)
			return -1;
		const char *e = s->target.api_key_secret;
		int ok = *e && *e != '.';
		for (; *e; e++)
			ok = ok && (isalnum((unsigned char)*e) || *e == '_' || *e == '-' || *e == '.');
		if (!ok)
			return fail(v, "invalid_value", "target.api_key_secret",
			            "'target.api_key_secret' must be a secret's name (letters, digits, "
			            "'_', '-', '.'; not starting with '.')");
	} else {
		json_object_del(t, "api_key_secret");
		s->target.api_key_secret = NULL;
	}
	json_t *akh = json_object_get(t, "api_key_header");
	s->target.api_key_header = NULL;
	if (akh && !json_is_null(akh)) {
		/* which header carries the key: one the redaction rules treat as
		 * a credential, so that no output could ever show it */
		const char *h = get_str(v, t, "api_key_header", "target.api_key_header", NULL, 128);
		if (!h)
			return -1;
		if (!s->target.api_key_secret && !s->target.api_key_env)
			return fail(v, "invalid_value", "target.api_key_header",
			            "'target.api_key_header' names the header that carries "
			            "'target.api_key_secret': give that too");
		if (!valid_header_name(h))
			return fail(v, "invalid_value", "target.api_key_header",
			            "'target.api_key_header' is not a valid header name");
		if (!redact_header_name(h))
			return fail(v, "invalid_value", "target.api_key_header",
			            "'target.api_key_header' must be a header redacted as a credential: "
			            "Authorization, or a name containing key, token, secret, auth... "
			            "(docs/security.md)");
		char lower[129];
		size_t n = strlen(h);
		for (size_t i = 0; i <= n; i++)
			lower[i] = (char)tolower((unsigned char)h[i]);
		if (strcmp(lower, "authorization") == 0) {
			json_object_del(t, "api_key_header"); /* the default */
		} else {
			json_object_set_new(t, "api_key_header", json_string(lower));
			s->target.api_key_header =
			    json_string_value(json_object_get(t, "api_key_header"));
		}
	} else {
		json_object_del(t, "api_key_header");
	}
	s->target.headers = get_obj(v, t, "headers", "target.headers", 0);
	if (!s->target.headers ||
	    check_string_map(v, s->target.headers, "target.headers", HR_MAX_HEADERS) < 0)
		return -1;
	const char *hk;
	json_t *hv;
	json_object_foreach(s->target.headers, hk, hv)
	{
		char p[512];
		snprintf(p, sizeof p, "target.headers.%s", hk);
		if (!valid_header_name(hk))
			return fail(v, "invalid_value", p, "'%s' is not a valid header name", hk);
		if (strpbrk(json_string_value(hv), "\r\n"))
			return fail(v, "invalid_value", p,
			            "header values may not contain CR or LF");
	}
	s->target.extra_body = get_obj(v, t, "extra_body", "target.extra_body", 0);
	if (!s->target.extra_body)
		return -1;
	if (get_num(v, t, "timeout_s", "target.timeout_s", 600, 1, 0.001, HR_MAX_TIMEOUT_S, 0,
	            &s->target.timeout_s) < 0)
		return -1;
	const char *tr = get_str(v, t, "transport", "target.transport", "auto", 16);
	if (!tr)
		return -1;
	if (strcmp(tr, "auto") == 0)
		s->target.transport = SPEC_TRANSPORT_AUTO;
	else if (strcmp(tr, "native") == 0)
		s->target.transport = SPEC_TRANSPORT_NATIVE;
	else if (strcmp(tr, "curl") == 0)
		s->target.transport = SPEC_TRANSPORT_CURL;
	else
		return fail(v, "invalid_value", "target.transport",
		            "'target.transport' must be \"auto\", \"native\" or \"curl\"");
	if (s->target.transport == SPEC_TRANSPORT_NATIVE && strncmp(s->target.url, "http://", 7) != 0)
		return fail(v, "invalid_value", "target.transport",
		            "'target.transport' \"native\" speaks plain http:// only; use \"curl\" "
		            "or \"auto\" for an https:// target");
	if (parse_template(v, t, s) < 0 || parse_target_path(v, t, s) < 0 ||
	    parse_raw(v, t, s) < 0 || parse_prewarm(v, t, s) < 0)
		return -1;

	/* workload */
	json_t *wl = get_obj(v, root, "workload", "workload", 0);
	if (!wl)
		return -1;
	static const char *const wkeys[] = {"kind",  "isl",       "osl",     "seed", "sessions",
	                                    "trace", "tokenizer", "dataset", "system_prompt",
	                                    "prefix_prompts", "mix", "ignore_eos", "passages",
	                                    "batch_size", "token_count", "block_size", "images",
	                                    "audio", NULL};
	if (check_keys(v, wl, "workload", wkeys) < 0)
		return -1;
	const char *kind = get_str(v, wl, "kind", "workload.kind", "synthetic", 32);
	if (!kind)
		return -1;
	if (strcmp(kind, "synthetic") == 0)
		s->workload.kind = SPEC_WL_SYNTHETIC;
	else if (strcmp(kind, "trace") == 0)
		s->workload.kind = SPEC_WL_TRACE;
	else if (strcmp(kind, "dataset") == 0)
		s->workload.kind = SPEC_WL_DATASET;
	else
		return fail(v, "invalid_value", "workload.kind",
		            "'workload.kind' must be \"synthetic\", \"trace\" or \"dataset\"");
	if (parse_dist(v, wl, "isl", 128, HR_MAX_ISL, &s->workload.isl) < 0 ||
	    parse_dist(v, wl, "osl", 128, HR_MAX_OSL, &s->workload.osl) < 0)
		return -1;
	double seed;
	if (get_num(v, wl, "seed", "workload.seed", 0, 1, 0, 9007199254740991.0, 1, &seed) < 0)
		return -1;
	s->workload.seed = (uint64_t)seed;
	if (parse_sessions(v, wl, s) < 0 || parse_trace(v, wl, s) < 0 ||
	    parse_dataset(v, wl, s) < 0 || parse_items(v, wl, s) < 0 ||
	    parse_images(v, wl, s) < 0 || parse_audio(v, wl, s) < 0)
		return -1;
	if (parse_shared_prompts(v, wl, s) < 0 || parse_mix(v, wl, s) < 0)
		return -1;
	int ie = get_bool(v, wl, "ignore_eos", "workload.ignore_eos", 0);
	if (ie < 0)
		return -1;
	s->workload.ignore_eos = ie;
	json_t *tkz = json_object_get(wl, "tokenizer");
	if (tkz && !json_is_null(tkz)) {
		/* a file on the daemon's host, loaded by each worker: prompts of
		 * exact token lengths (docs/spec.md) */
		s->workload.tokenizer =
		    get_str(v, wl, "tokenizer", "workload.tokenizer", NULL, HR_MAX_PATH_LEN);
		if (!s->workload.tokenizer)
			return -1;
		if (!*s->workload.tokenizer || access(s->workload.tokenizer, R_OK) != 0)
			return fail(v, "invalid_value", "workload.tokenizer",
			            "'workload.tokenizer' must name a readable tokenizer file "
			            "(tokenizer.json, .tiktoken or a tiktoken JSON encoder) on the "
			            "daemon's host");
	}
	if (parse_token_count(v, wl, s) < 0)
		return -1;
	double bs; /* AIPerf's --prompt-input-tokens-block-size, and Mooncake's */
	if (get_num(v, wl, "block_size", "workload.block_size", 512, 1, 1, HR_MAX_ISL, 1, &bs) < 0)
		return -1;
	s->workload.block_size = (int)bs;

	/* load (the profiling phase) */
	json_t *ld = get_obj(v, root, "load", "load", 1);
	if (!ld)
		return -1;
	static const char *const lkeys[] = {"mode",       "concurrency",     "rate",   "arrival",
	                                    "smoothness", "max_concurrency", "ramp_s", "requests",
	                                    "batch",
	                                    "duration_s", "grace_s",         "cancel", "speedup",
	                                    "start_s",    "end_s",           "stop_on_saturation",
	                                    NULL};
	if (check_keys(v, ld, "load", lkeys) < 0)
		return -1;
	if (parse_shape(v, ld, "load", NULL, &s->load) < 0 ||
	    parse_limits(v, ld, "load", s->load.mode != SPEC_LOAD_TRACE, &s->load) < 0)
		return -1;
	if (s->workload.kind != SPEC_WL_DATASET &&
	    (s->load.mode == SPEC_LOAD_TRACE) != (s->workload.kind == SPEC_WL_TRACE))
		return fail(v, "invalid_value", "load.mode",
		            "'load.mode' \"trace\" and 'workload.kind' \"trace\" go together");
	if (s->workload.sessions && s->workload.kind == SPEC_WL_TRACE)
		return fail(v, "invalid_value", "workload.sessions",
		            "trace replay takes its sessions from the trace's session_id");
	if (get_num(v, ld, "grace_s", "load.grace_s", 30, 1, 0, HR_MAX_GRACE_S, 0, &s->grace_s) < 0)
		return -1;
	/* kept only when true, so specs without it keep their fingerprints */
	json_t *sat = json_object_get(ld, "stop_on_saturation");
	if (sat && !json_is_null(sat) && !json_is_boolean(sat))
		return fail(v, "wrong_type", "load.stop_on_saturation",
		            "'load.stop_on_saturation' must be true or false");
	s->stop_on_saturation = json_is_true(sat);
	if (sat && !s->stop_on_saturation)
		json_object_del(ld, "stop_on_saturation");
	if (parse_cancel(v, ld, s) < 0 || parse_trace_window(v, ld, s) < 0)
		return -1;

	/* warm-up: its own limit, and a load shape defaulting to the run's */
	json_t *wu = json_object_get(root, "warmup");
	if (wu && json_is_null(wu)) {
		json_object_del(root, "warmup");
		wu = NULL;
	}
	if (wu) {
		if (!json_is_object(wu))
			return fail(v, "wrong_type", "warmup", "'warmup' must be an object");
		static const char *const ukeys[] = {"requests", "duration_s", "load", NULL};
		if (check_keys(v, wu, "warmup", ukeys) < 0)
			return -1;
		json_t *wl2 = get_obj(v, wu, "load", "warmup.load", 0);
		if (!wl2)
			return -1;
		static const char *const wlk[] = {"mode",    "concurrency", "rate",
		                                  "arrival", "smoothness",  "max_concurrency",
		                                  "ramp_s",  NULL};
		if (check_keys(v, wl2, "warmup.load", wlk) < 0)
			return -1;
		if (parse_shape(v, wl2, "warmup.load", &s->load, &s->warmup) < 0 ||
		    parse_limits(v, wu, "warmup", 1, &s->warmup) < 0)
			return -1;
		if (s->warmup.mode == SPEC_LOAD_TRACE)
			return fail(v, "invalid_value", "warmup.load.mode",
			            "a warm-up cannot replay a trace: use \"concurrency\" or "
			            "\"rate\"");
		s->has_warmup = 1;
	}

	if (parse_telemetry(v, root, s) < 0)
		return -1;
	if (parse_client(v, root, s) < 0)
		return -1;
	if (parse_goodput(v, root, s) < 0)
		return -1;
	if (parse_repeat(v, root, s) < 0 || parse_validity(v, root, s) < 0 ||
	    parse_gates(v, root, s) < 0 || parse_placement(v, root, given, s) < 0)
		return -1;
	json_t *classes = json_object_get(root, "classes");
	if (classes && !json_is_null(classes))
		return parse_classes(v, root, given, default_workers, s);
	json_object_del(root, "classes");

	/* workers: default from the core count, never more than the slots */
	int cap =
	    s->load.mode == SPEC_LOAD_CONCURRENCY ? s->load.concurrency : s->load.max_concurrency;
	int defw = default_workers < 1 ? 1 : default_workers;
	if (cap > 0 && defw > cap)
		defw = cap;
	double w;
	if (s->placement.given) { /* the agents' workers are counted at the start */
		json_object_del(root, "workers");
		s->workers = s->placement.local;
		return 0;
	}
	if (get_num(v, root, "workers", "workers", defw, 1, 1, HR_MAX_WORKERS, 1, &w) < 0)
		return -1;
	s->workers = (int)w;
	if (cap > 0 && s->workers > cap)
		return fail(v, "out_of_range", "workers",
		            "'workers' (%d) exceeds the run's %s (%d): a worker needs a slot",
		            s->workers,
		            s->load.mode == SPEC_LOAD_CONCURRENCY ? "'load.concurrency'"
		                                                  : "'load.max_concurrency'",
		            cap);
	/* the warm-up is split across the same workers: each needs a slot there too */
	if (s->has_warmup) {
		int wcap = s->warmup.mode == SPEC_LOAD_CONCURRENCY ? s->warmup.concurrency
		                                                   : s->warmup.max_concurrency;
		if (wcap > 0 && s->workers > wcap)
			return fail(v, "out_of_range",
			            s->warmup.mode == SPEC_LOAD_CONCURRENCY
			                ? "warmup.load.concurrency"
			                : "warmup.load.max_concurrency",
			            "the warm-up's %s (%d) is below 'workers' (%d): every worker "
			            "needs a warm-up slot",
			            s->warmup.mode == SPEC_LOAD_CONCURRENCY ? "concurrency"
			                                                    : "max_concurrency",
			            wcap, s->workers);
	}
	return 0;
}

int spec_from_json(json_t *root, int default_workers, struct spec *out, struct spec_error *err)
{
	struct vctx v = {.err = err, .failed = 0};
	memset(out, 0, sizeof *out);
	memset(err, 0, sizeof *err);
	if (!json_is_object(root)) {
		fail(&v, "wrong_type", "", "the run spec must be a JSON object");
		return -1;
	}
	out->json = json_deep_copy(root);
	if (!out->json)
		xalloc_die();
	if (validate(&v, out->json, root, default_workers, out) < 0) {
		spec_release(out);
		return -1;
	}
	return 0;
}

int spec_parse(const char *text, size_t len, int default_workers, struct spec *out,
               struct spec_error *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		memset(out, 0, sizeof *out);
		memset(err, 0, sizeof *err);
		snprintf(err->code, sizeof err->code, "invalid_json");
		snprintf(err->message, sizeof err->message,
		         "not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
		         jerr.column);
		return -1;
	}
	int rc = spec_from_json(root, default_workers, out, err);
	json_decref(root);
	return rc;
}

void spec_release(struct spec *s)
{
	for (int k = 0; k < s->n_classes; k++) {
		spec_release(s->classes[k].spec);
		free(s->classes[k].spec);
	}
	if (s->json)
		json_decref(s->json);
	memset(s, 0, sizeof *s);
}

const char *spec_endpoint_name(int ep)
{
	return ep >= 0 && ep < SPEC_EP__COUNT ? spec_endpoints[ep].name : "?";
}

const char *spec_endpoint_path(int ep)
{
	return spec_endpoints[ep >= 0 && ep < SPEC_EP__COUNT ? ep : SPEC_EP_CHAT].path;
}

const char *spec_target_path(const struct spec *s)
{
	if (s->target.endpoint == SPEC_EP_TEMPLATE && s->target.template_path)
		return s->target.template_path;
	if (s->target.path)
		return s->target.path;
	if (s->target.stream && spec_endpoints[s->target.endpoint].stream_path)
		return spec_endpoints[s->target.endpoint].stream_path;
	return spec_endpoint_path(s->target.endpoint);
}
