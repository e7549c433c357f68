/* sweep.c - sweeps and capacity searches (see sweep.h, docs/sweeps.md). */
#include "sweep.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "log.h"
#include "history.h"
#include "infer.h"
#include "metrics.h"
#include "runs.h"
#include "spec.h"
#include "util.h"

enum { MODE_VALUES = 0, MODE_SEARCH };

struct slo {
	char metric[64];
	char stat[8]; /* "p50".."p99", or "value" for error_rate */
	double q;     /* the percentile as a fraction; error_rate: 0 */
	double max;
};

struct params {
	char name[128];
	char variable[128];
	int integer; /* the variable is an integer in the spec */
	int mode;
	double values[SWEEP_MAX_VALUES];
	int nvalues;
	double from, to, resolution; /* search; resolution absolute (0: relative) */
	int grow; /* search without `to`: double from `from` until a value fails */
	double resolution_rel;
	int max_runs;
	struct slo slo[SWEEP_MAX_SLOS];
	int nslo;
	double confidence;
	int repeats; /* values: runs per value; search: most runs of one value */
	json_t *spec; /* the base spec, normalised (owned) */
	sweep_check_fn check; /* at creation: each value's spec checked */
	void *check_ctx;
};

/* Decisions are taken one at a time (the runner thread, API cancels). */
static pthread_mutex_t decide_mu = PTHREAD_MUTEX_INITIALIZER;

static int bad(char *field, char *msg, const char *f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(char *field, char *msg, const char *f, const char *fmt, ...)
{
	va_list ap;
	snprintf(field, 256, "%s", f);
	va_start(ap, fmt);
	vsnprintf(msg, 256, fmt, ap);
	va_end(ap);
	return -400;
}

/* --- the variable --------------------------------------------------------------- */

static int valid_path(const char *p)
{
	int segs = 0, len = 0;
	for (const char *c = p;; c++) {
		if (*c == '.' || !*c) {
			if (len == 0)
				return 0;
			segs++;
			len = 0;
			if (!*c)
				break;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return 0;
		len++;
	}
	return segs >= 1 && segs <= 4 && strlen(p) < 128;
}

/* The member at a dotted path, or NULL. */
static json_t *at_path(json_t *root, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	json_t *o = root;
	for (char *save = NULL, *seg = strtok_r(buf, ".", &save); seg && o;
	     seg = strtok_r(NULL, ".", &save))
		o = json_is_object(o) ? json_object_get(o, seg) : NULL;
	return o;
}

/* Sets the number at a dotted path, making the objects on the way. */
static int set_path(json_t *root, const char *path, json_t *v /* stolen */)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	json_t *o = root;
	char *save = NULL, *seg = strtok_r(buf, ".", &save);
	while (seg) {
		char *next = strtok_r(NULL, ".", &save);
		if (!json_is_object(o)) {
			json_decref(v);
			return -1;
		}
		if (!next)
			return json_object_set_new(o, seg, v);
		json_t *c = json_object_get(o, seg);
		if (!c) {
			c = json_object();
			json_object_set_new(o, seg, c);
		}
		o = c;
		seg = next;
	}
	json_decref(v);
	return -1;
}

static double as_value(const struct params *p, double v)
{
	return p->integer ? round(v) : v;
}

static json_t *value_json(const struct params *p, double v)
{
	return p->integer ? json_integer((json_int_t)round(v)) : json_real(v);
}

static void value_text(const struct params *p, double v, char *out, size_t n)
{
	if (p->integer)
		snprintf(out, n, "%lld", (long long)round(v));
	else
		snprintf(out, n, "%.10g", v);
}

/* The spec of one run: the base at value, labelled with the sweep, the
 * SLOs as threshold gates (so the summary carries their claims), its seed
 * moved on for a repeat. */
static json_t *step_spec(const struct params *p, int64_t sweep_id, double value, int repeat)
{
	json_t *s = json_deep_copy(p->spec);
	set_path(s, p->variable, value_json(p, value));
	char vt[64], name[400], id[32];
	value_text(p, value, vt, sizeof vt);
	const char *base = p->name[0] ? p->name : json_string_value(json_object_get(s, "name"));
	snprintf(name, sizeof name, "%.120s (%s = %s)", base && *base ? base : "sweep", p->variable,
		 vt);
	json_object_set_new(s, "name", json_string(name));
	json_t *labels = json_object_get(s, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(s, "labels", labels);
	}
	snprintf(id, sizeof id, "%lld", (long long)sweep_id);
	json_object_set_new(labels, "sweep", json_string(id));
	json_object_set_new(labels, "sweep_value", json_string(vt));
	json_t *gates = json_object_get(s, "gates");
	if (!json_is_array(gates)) {
		gates = json_array();
		json_object_set_new(s, "gates", gates);
	}
	for (int i = 0; i < p->nslo; i++) {
		const struct slo *o = &p->slo[i];
		char gname[96];
		snprintf(gname, sizeof gname, "slo %s %s", o->metric, o->stat);
		json_array_append_new(gates, json_pack("{s:s, s:s, s:s, s:s, s:f}", "name", gname,
						       "metric", o->metric, "stat", o->stat, "op",
						       "<=", "value", o->max));
	}
	json_t *validity = json_object_get(s, "validity");
	if (!json_is_object(validity)) {
		validity = json_object();
		json_object_set_new(s, "validity", validity);
	}
	json_object_set_new(validity, "confidence", json_real(p->confidence));
	/* a search stops a hopeless value as soon as it is plainly
	 * oversaturated (satdet.h) rather than run it to the end */
	json_t *load = json_object_get(s, "load");
	if (p->mode == MODE_SEARCH && json_is_object(load))
		json_object_set_new(load, "stop_on_saturation", json_true());
	json_t *wl = json_object_get(s, "workload");
	json_t *seed = json_object_get(wl, "seed");
	if (repeat > 0 && json_is_object(wl))
		json_object_set_new(wl, "seed",
				    json_integer((json_is_integer(seed) ? json_integer_value(seed) : 0) +
						 repeat));
	return s;
}

/* --- parsing -------------------------------------------------------------------- */

static int num(json_t *v, double *out)
{
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return -1;
	*out = json_number_value(v);
	return 0;
}

static int parse_slos(json_t *arr, struct params *p, char *field, char *msg)
{
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return bad(field, msg, "slo", "'slo' must be an array of {metric, stat, max}");
	if (json_array_size(arr) > SWEEP_MAX_SLOS)
		return bad(field, msg, "slo", "'slo' has more than %d entries", SWEEP_MAX_SLOS);
	size_t i;
	json_t *o;
	json_array_foreach(arr, i, o) {
		char f[64];
		struct slo *s = &p->slo[p->nslo];
		if (!json_is_object(o))
			return snprintf(f, sizeof f, "slo[%zu]", i),
			       bad(field, msg, f, "'%s' must be an object", f);
		const char *k;
		json_t *v;
		json_object_foreach(o, k, v) {
			if (strcmp(k, "metric") && strcmp(k, "stat") && strcmp(k, "max")) {
				snprintf(f, sizeof f, "slo[%zu].%.32s", i, k);
				return bad(field, msg, f, "'%s' is not a member of an SLO", f);
			}
		}
		const char *metric = json_string_value(json_object_get(o, "metric"));
		const char *stat = json_string_value(json_object_get(o, "stat"));
		snprintf(f, sizeof f, "slo[%zu].metric", i);
		if (!metric)
			return bad(field, msg, f, "'%s' is required (a metric, or error_rate)", f);
		if (strcmp(metric, "error_rate") == 0) {
			if (stat && strcmp(stat, "value") != 0) {
				snprintf(f, sizeof f, "slo[%zu].stat", i);
				return bad(field, msg, f, "error_rate has no stat but 'value'");
			}
			snprintf(s->stat, sizeof s->stat, "value");
			s->q = 0;
		} else {
			int known = 0;
			for (size_t m = 0; m < metric_defs_count; m++)
				known |= strcmp(metric_defs[m].tag, metric) == 0;
			if (!known || strlen(metric) >= sizeof s->metric)
				return bad(field, msg, f,
					   "'%s': no metric '%.64s' (docs/metrics.md lists them)", f,
					   metric);
			snprintf(f, sizeof f, "slo[%zu].stat", i);
			if (!stat)
				return bad(field, msg, f, "'%s' is required (p50, p90, p95 or p99)", f);
			if (strcmp(stat, "p50") && strcmp(stat, "p75") && strcmp(stat, "p90") &&
			    strcmp(stat, "p95") && strcmp(stat, "p99"))
				return bad(field, msg, f,
					   "'%s' must be p50, p75, p90, p95 or p99 (an SLO is a "
					   "percentile claim)",
					   f);
			snprintf(s->stat, sizeof s->stat, "%s", stat);
			s->q = atof(stat + 1) / 100;
		}
		snprintf(s->metric, sizeof s->metric, "%s", metric);
		snprintf(f, sizeof f, "slo[%zu].max", i);
		if (num(json_object_get(o, "max"), &s->max) < 0)
			return bad(field, msg, f, "'%s' is required: a number", f);
		if (s->q == 0 ? !(s->max > 0 && s->max < 1) : !(s->max > 0))
			return bad(field, msg, f,
				   s->q == 0 ? "'%s' of error_rate must be between 0 and 1 (exclusive)"
					     : "'%s' must be positive",
				   f);
		p->nslo++;
	}
	return 0;
}

static json_t *params_json(const struct params *p)
{
	json_t *o = json_pack("{s:s, s:s, s:f, s:i, s:o}", "name", p->name, "variable", p->variable,
			      "confidence", p->confidence, "repeats", p->repeats, "spec",
			      json_incref(p->spec));
	if (p->mode == MODE_VALUES) {
		json_t *v = json_array();
		for (int i = 0; i < p->nvalues; i++)
			json_array_append_new(v, value_json(p, p->values[i]));
		json_object_set_new(o, "values", v);
	} else {
		json_object_set_new(o, "search",
				    json_pack("{s:o, s:o, s:o, s:f, s:i}", "from", value_json(p, p->from),
					      "to", p->grow ? json_null() : value_json(p, p->to),
					      "resolution",
					      p->resolution > 0 ? json_real(p->resolution) : json_null(),
					      "resolution_rel", p->resolution_rel, "max_runs",
					      p->max_runs));
	}
	json_t *slo = json_array();
	for (int i = 0; i < p->nslo; i++)
		json_array_append_new(slo, json_pack("{s:s, s:s, s:f}", "metric", p->slo[i].metric,
						     "stat", p->slo[i].stat, "max", p->slo[i].max));
	json_object_set_new(o, "slo", slo);
	json_object_set_new(o, "integer", json_boolean(p->integer));
	return o;
}

/* A derived spec must parse for each value the sweep may run. */
static int check_value(const struct params *p, double v, const char *f, char *field, char *msg)
{
	json_t *s = step_spec(p, 1, v, 0);
	struct spec sp;
	struct spec_error se;
	int rc = spec_from_json(s, 1, &sp, &se);
	json_decref(s);
	if (rc < 0) {
		char vt[64];
		value_text(p, v, vt, sizeof vt);
		return bad(field, msg, f, "with %s = %s the spec is refused: %.160s", p->variable, vt,
			   se.message);
	}
	char why[256];
	rc = p->check ? p->check(p->check_ctx, &sp, why) : 0;
	spec_release(&sp);
	if (rc < 0) {
		char vt[64];
		value_text(p, v, vt, sizeof vt);
		bad(field, msg, f, "with %s = %s: %.200s", p->variable, vt, why);
		return -403;
	}
	return 0;
}

static int parse_params(json_t *body, json_t *spec, struct params *p, sweep_check_fn check,
			void *check_ctx, char *field, char *msg)
{
	memset(p, 0, sizeof *p);
	p->spec = spec;
	p->check = check;
	p->check_ctx = check_ctx;
	p->confidence = 0.95;
	p->resolution_rel = 0.05;
	p->max_runs = 16;
	const char *k;
	json_t *v;
	json_object_foreach(body, k, v) {
		static const char *const known[] = {"name",   "spec",  "variable", "values", "range",
						    "search", "slo",   "confidence", "repeats"};
		int ok = 0;
		for (size_t i = 0; i < HR_ARRAY_LEN(known); i++)
			ok |= strcmp(k, known[i]) == 0;
		if (!ok)
			return bad(field, msg, k, "'%.64s' is not a member of a sweep", k);
	}
	json_t *name = json_object_get(body, "name");
	if (name && (!json_is_string(name) || strlen(json_string_value(name)) > 100))
		return bad(field, msg, "name", "'name' must be a string of at most 100 bytes");
	if (name)
		snprintf(p->name, sizeof p->name, "%s", json_string_value(name));
	const char *var = json_string_value(json_object_get(body, "variable"));
	if (!var)
		return bad(field, msg, "variable",
			   "'variable' is required: the dotted path of a numeric spec field, e.g. "
			   "\"load.rate\"");
	if (!valid_path(var) || strncmp(var, "name", 4) == 0 || strncmp(var, "labels", 6) == 0 ||
	    strncmp(var, "repeat", 6) == 0 || strncmp(var, "gates", 5) == 0 ||
	    strncmp(var, "target", 6) == 0 || strncmp(var, "workload.dataset", 16) == 0)
		return bad(field, msg, "variable",
			   "'variable' must be the dotted path of a numeric spec field (lowercase "
			   "names, at most 4 levels, not in name, labels, target, repeat, gates or "
			   "workload.dataset)");
	snprintf(p->variable, sizeof p->variable, "%s", var);
	json_t *cur = at_path(spec, var);
	if (cur && !json_is_number(cur))
		return bad(field, msg, "variable", "spec member '%s' is not a number", var);
	p->integer = json_is_integer(cur);
	if (json_object_get(spec, "repeat"))
		return bad(field, msg, "spec.repeat",
			   "a sweep repeats values itself ('repeats'): leave 'repeat' out of its spec");
	json_t *conf = json_object_get(body, "confidence");
	if (conf && (num(conf, &p->confidence) < 0 || p->confidence < 0.5 ||
		     p->confidence > 0.9999))
		return bad(field, msg, "confidence", "'confidence' must be between 0.5 and 0.9999");
	json_t *rep = json_object_get(body, "repeats");
	int has_values = json_object_get(body, "values") != NULL,
	    has_range = json_object_get(body, "range") != NULL,
	    has_search = json_object_get(body, "search") != NULL;
	if (has_values + has_range + has_search != 1)
		return bad(field, msg, has_values + has_range + has_search ? "search" : "values",
			   "give exactly one of 'values' (a list), 'range' ({from, to, steps}) or "
			   "'search' ({from, to}: the largest value within the SLOs)");
	p->mode = has_search ? MODE_SEARCH : MODE_VALUES;
	p->repeats = p->mode == MODE_SEARCH ? 3 : 1;
	if (rep && (!json_is_integer(rep) || json_integer_value(rep) < 1 ||
		    json_integer_value(rep) > 10))
		return bad(field, msg, "repeats", "'repeats' must be an integer from 1 to 10");
	if (rep)
		p->repeats = (int)json_integer_value(rep);
	int rc = parse_slos(json_object_get(body, "slo"), p, field, msg);
	if (rc < 0)
		return rc;
	if (has_values) {
		json_t *arr = json_object_get(body, "values");
		if (!json_is_array(arr) || json_array_size(arr) < 1 ||
		    json_array_size(arr) > SWEEP_MAX_VALUES)
			return bad(field, msg, "values", "'values' must be an array of 1 to %d numbers",
				   SWEEP_MAX_VALUES);
		size_t i;
		json_array_foreach(arr, i, v) {
			char f[32];
			snprintf(f, sizeof f, "values[%zu]", i);
			if (num(v, &p->values[i]) < 0)
				return bad(field, msg, f, "'%s' must be a number", f);
			p->values[i] = as_value(p, p->values[i]);
			p->nvalues++;
		}
	} else if (has_range) {
		json_t *r = json_object_get(body, "range");
		double from, to, steps_d;
		if (!json_is_object(r))
			return bad(field, msg, "range", "'range' must be {from, to, steps[, scale]}");
		if (num(json_object_get(r, "from"), &from) < 0)
			return bad(field, msg, "range.from", "'range.from' is required: a number");
		if (num(json_object_get(r, "to"), &to) < 0 || !(to > from))
			return bad(field, msg, "range.to", "'range.to' must be a number above from");
		if (num(json_object_get(r, "steps"), &steps_d) < 0 || steps_d != floor(steps_d) ||
		    steps_d < 2 || steps_d > SWEEP_MAX_VALUES)
			return bad(field, msg, "range.steps",
				   "'range.steps' must be an integer from 2 to %d", SWEEP_MAX_VALUES);
		const char *scale = json_string_value(json_object_get(r, "scale"));
		int log_scale = scale && strcmp(scale, "log") == 0;
		if (json_object_get(r, "scale") && (!scale || (!log_scale && strcmp(scale, "linear"))))
			return bad(field, msg, "range.scale", "'range.scale' must be linear or log");
		if (log_scale && !(from > 0))
			return bad(field, msg, "range.from", "a log range needs 'range.from' above 0");
		int steps = (int)steps_d;
		for (int i = 0; i < steps; i++) {
			double t = (double)i / (steps - 1);
			double x = log_scale ? from * pow(to / from, t) : from + (to - from) * t;
			x = as_value(p, x);
			if (p->nvalues && x == p->values[p->nvalues - 1])
				continue; /* integers: no value twice */
			p->values[p->nvalues++] = x;
		}
	} else {
		json_t *s = json_object_get(body, "search");
		if (!json_is_object(s))
			return bad(field, msg, "search",
				   "'search' must be {from, to[, resolution | resolution_rel, "
				   "max_runs]}");
		json_object_foreach(s, k, v) {
			if (strcmp(k, "from") && strcmp(k, "to") && strcmp(k, "resolution") &&
			    strcmp(k, "resolution_rel") && strcmp(k, "max_runs")) {
				char f[64];
				snprintf(f, sizeof f, "search.%.40s", k);
				return bad(field, msg, f, "'%s' is not a member of a search", f);
			}
		}
		json_t *jf = json_object_get(s, "from"), *jt = json_object_get(s, "to");
		if (jf && !json_is_null(jf)) {
			if (num(jf, &p->from) < 0)
				return bad(field, msg, "search.from", "'search.from' must be a number");
		} else if (!cur || !(json_number_value(cur) > 0)) {
			return bad(field, msg, "search.from",
				   "'search.from' is required: the spec has no positive value at '%s' "
				   "to start from",
				   p->variable);
		} else {
			p->from = json_number_value(cur); /* the spec's own value */
		}
		p->from = as_value(p, p->from);
		if (jt && !json_is_null(jt)) {
			if (num(jt, &p->to) < 0)
				return bad(field, msg, "search.to", "'search.to' must be a number");
			p->to = as_value(p, p->to);
			if (!(p->to > p->from))
				return bad(field, msg, "search.to",
					   "'search.to' must be above 'search.from'");
		} else {
			/* no end: the bracket grows, doubling from `from` */
			if (!(p->from > 0))
				return bad(field, msg, "search.from",
					   "a search without 'search.to' doubles from 'search.from', which "
					   "must then be positive");
			p->grow = 1;
		}
		json_t *res = json_object_get(s, "resolution"), *rel = json_object_get(s, "resolution_rel");
		if (res && rel)
			return bad(field, msg, "search.resolution",
				   "give 'resolution' (in the variable's unit) or 'resolution_rel' (a "
				   "fraction), not both");
		if (res && (num(res, &p->resolution) < 0 || !(p->resolution > 0)))
			return bad(field, msg, "search.resolution",
				   "'search.resolution' must be a positive number");
		if (rel && (num(rel, &p->resolution_rel) < 0 || !(p->resolution_rel >= 0.001) ||
			    p->resolution_rel > 1))
			return bad(field, msg, "search.resolution_rel",
				   "'search.resolution_rel' must be between 0.001 and 1");
		if (p->integer && p->resolution < 1 && res)
			return bad(field, msg, "search.resolution",
				   "'%s' is an integer: 'search.resolution' must be at least 1",
				   p->variable);
		json_t *mr = json_object_get(s, "max_runs");
		if (mr && (!json_is_integer(mr) || json_integer_value(mr) < 2 ||
			   json_integer_value(mr) > SWEEP_MAX_RUNS))
			return bad(field, msg, "search.max_runs",
				   "'search.max_runs' must be an integer from 2 to %d", SWEEP_MAX_RUNS);
		if (mr)
			p->max_runs = (int)json_integer_value(mr);
		if (p->nslo == 0)
			return bad(field, msg, "slo",
				   "a search needs at least one SLO ('slo': [{metric, stat, max}])");
	}
	if (p->mode == MODE_VALUES && p->nvalues * p->repeats > SWEEP_MAX_RUNS)
		return bad(field, msg, "repeats", "values x repeats must be at most %d runs",
			   SWEEP_MAX_RUNS);
	/* every value the sweep may run must make a valid spec */
	if (p->mode == MODE_VALUES) {
		for (int i = 0; i < p->nvalues; i++) {
			char f[32];
			snprintf(f, sizeof f, has_range ? "range" : "values[%d]", i);
			if ((rc = check_value(p, p->values[i], f, field, msg)) < 0)
				return rc;
		}
	} else if ((rc = check_value(p, p->from, "search.from", field, msg)) < 0 ||
		   (!p->grow && (rc = check_value(p, p->to, "search.to", field, msg)) < 0)) {
		return rc;
	}
	return 0;
}

/* The stored params back (our own JSON; checked all the same). */
static int load_params(json_t *o, struct params *p)
{
	char field[256], msg[256];
	json_t *spec = json_object_get(o, "spec");
	if (!json_is_object(spec))
		return -1;
	json_t *body = json_deep_copy(o);
	json_object_del(body, "integer");
	json_t *search = json_object_get(body, "search");
	if (search && json_is_null(json_object_get(search, "resolution")))
		json_object_del(search, "resolution");
	if (search && json_object_get(search, "resolution"))
		json_object_del(search, "resolution_rel");
	int rc = parse_params(body, json_incref(spec), p, NULL, NULL, field, msg);
	json_decref(body);
	if (rc < 0) {
		json_decref(p->spec);
		p->spec = NULL;
		return -1;
	}
	/* an integer variable stays one even where the base spec lacks it */
	p->integer = p->integer || json_is_true(json_object_get(o, "integer"));
	return 0;
}

/* --- store ------------------------------------------------------------------------ */

struct create_args {
	struct params *p;
	const char *who;
	int64_t id;
};

static int create_job(struct store_tx *tx, void *arg, char *err)
{
	struct create_args *a = arg;
	static const char sql[] = "INSERT INTO sweeps (name, created_ms, state, params, "
				  "submitted_by) VALUES (?, ?, 'running', ?, ?)";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	json_t *pj = params_json(a->p);
	char *params = json_dumps(pj, JSON_COMPACT);
	json_decref(pj);
	sqlite3_bind_text(st, 1, a->p->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, wall_ns() / 1000000);
	sqlite3_bind_text(st, 3, params, -1, free);
	if (a->who)
		sqlite3_bind_text(st, 4, a->who, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sweep insert: %s", sqlite3_errmsg(tx->db));
	a->id = sqlite3_last_insert_rowid(tx->db);
	return 0;
}

struct link_args {
	int64_t sweep, run, seq;
	double value;
};

static int link_job(struct store_tx *tx, void *arg, char *err)
{
	struct link_args *a = arg;
	static const char sql[] =
	    "INSERT INTO sweep_runs (sweep_id, run_id, value, seq) VALUES (?, ?, ?, ?)";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_int64(st, 1, a->sweep);
	sqlite3_bind_int64(st, 2, a->run);
	sqlite3_bind_double(st, 3, a->value);
	sqlite3_bind_int64(st, 4, a->seq);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sweep run insert: %s", sqlite3_errmsg(tx->db));
	return 0;
}

struct finish_args {
	int64_t id;
	const char *state;
	char *result, *error;
};

static int finish_job(struct store_tx *tx, void *arg, char *err)
{
	struct finish_args *a = arg;
	static const char sql[] = "UPDATE sweeps SET state = ?, finished_ms = ?, result = ?, "
				  "error = ? WHERE id = ? AND state = 'running'";
	sqlite3_stmt *st = store_tx_stmt(tx, sql);
	sqlite3_bind_text(st, 1, a->state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, wall_ns() / 1000000);
	if (a->result)
		sqlite3_bind_text(st, 3, a->result, -1, SQLITE_STATIC);
	if (a->error)
		sqlite3_bind_text(st, 4, a->error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, a->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sweep update: %s", sqlite3_errmsg(tx->db));
	return 0;
}

static void finish(struct store *s, int64_t id, const char *state, json_t *result,
		   const char *error)
{
	struct finish_args a = {.id = id, .state = state};
	a.result = result ? json_dumps(result, JSON_COMPACT) : NULL;
	a.error = error ? xstrdup(error) : NULL;
	char err[HR_ERRLEN];
	if (store_exec(s, finish_job, &a, err) < 0)
		hlog(LOG_INFO, "sweep", "sweep %lld: %s\n", (long long)id, err);
	free(a.result);
	free(a.error);
}

/* The sweep's row: 0 and *out {id, name, state, created, finished, params,
 * result, error, submitted_by}; -404; -1. */
static int read_sweep(struct store *s, int64_t id, json_t **out)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, name, state, created_ms, finished_ms, params, result, "
			       "error, submitted_by FROM sweeps WHERE id = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		int step = sqlite3_step(st);
		if (step == SQLITE_ROW) {
			*out = json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
					 (json_int_t)sqlite3_column_int64(st, 0), "name",
					 runs_col_text(st, 1), "state", runs_col_text(st, 2), "created",
					 runs_col_time(st, 3), "finished", runs_col_time(st, 4),
					 "params", runs_col_json(st, 5), "result", runs_col_json(st, 6),
					 "error", runs_col_text(st, 7), "submitted_by",
					 runs_col_text(st, 8));
			rc = 0;
		} else if (step == SQLITE_DONE) {
			rc = -404;
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

/* The sweep's runs in the order queued: [[run_id, value], ...]. */
static json_t *read_links(struct store *s, int64_t id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	json_t *out = json_array();
	if (sqlite3_prepare_v2(db,
			       "SELECT run_id, value FROM sweep_runs WHERE sweep_id = ? ORDER BY seq",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(out,
					      json_pack("[I, f]", (json_int_t)sqlite3_column_int64(st, 0),
							sqlite3_column_double(st, 1)));
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return out;
}

static int64_t sweep_of_run(struct store *s, int64_t run_id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int64_t id = 0;
	if (sqlite3_prepare_v2(db, "SELECT sweep_id FROM sweep_runs WHERE run_id = ?", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		if (sqlite3_step(st) == SQLITE_ROW)
			id = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return id;
}

/* Runs queued now: all of them, and the submitter's. */
static void queued_counts(struct store *s, const char *who, long long *all, long long *mine)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	*all = *mine = 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT count(*), coalesce(sum(submitted_by = ?), 0) FROM runs "
			       "WHERE state = 'queued'",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, who && *who ? who : "local", -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			*all = sqlite3_column_int64(st, 0);
			*mine = sqlite3_column_int64(st, 1);
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
}

/* Queues one run of the sweep at value: 0, or -1 with err (-429 / -503:
 * lim's bounds, counted in the inserting transaction). */
static int queue_run_lim(struct store *s, int64_t sweep_id, const struct params *p,
			 const char *who, const struct sweep_queue_limits *lim, double value,
			 int repeat, int64_t seq, char *err)
{
	json_t *js = step_spec(p, sweep_id, value, repeat);
	struct spec sp;
	struct spec_error se;
	int rc = spec_from_json(js, 1, &sp, &se);
	json_decref(js);
	if (rc < 0)
		return errf(err, "the spec at this value is refused: %.160s", se.message);
	struct submitter by = {.who = who, .max_queued = lim ? lim->token_max_queued : 0};
	int64_t rid, group = 0;
	int queued = 0;
	rc = history_create_runs(s, sp.json, 1, 0, lim ? lim->max_queued_runs : 0, &by, &queued,
				 &rid, &group, err);
	spec_release(&sp);
	if (rc == -429 || rc == -503)
		return rc;
	if (rc < 0)
		return -1;
	struct link_args l = {.sweep = sweep_id, .run = rid, .seq = seq, .value = value};
	return store_exec(s, link_job, &l, err);
}

/* A later step's run (the runner's decisions): not bounded by the queue,
 * since a search keeps at most two runs queued at once. */
static int queue_run(struct store *s, int64_t sweep_id, const struct params *p, const char *who,
		     double value, int repeat, int64_t seq, char *err)
{
	return queue_run_lim(s, sweep_id, p, who, NULL, value, repeat, seq, err);
}

/* --- judging a step ----------------------------------------------------------------- */

enum outcome { O_PENDING = 0, O_PASS, O_FAIL, O_UNCERTAIN, O_CLIENT_BOUND, O_ERROR };
static const char *const outcome_names[] = {"pending",	 "pass",	 "fail",
					    "uncertain", "client_bound", "error"};

/* "p < limit" claims, pooled: the counts of the step's runs */
static enum outcome judge_counts(long long n, long long over, double q, double conf)
{
	if (n <= 0)
		return O_UNCERTAIN;
	if (q > 0) { /* the q-quantile at most the limit: over ~ at most Binomial(n, 1 - q) */
		if (infer_claim_holds(n, over, q, conf))
			return O_PASS;
		if (over > 0 && 1 - infer_binom_cdf(over - 1, n, 1 - q) <= 1 - conf)
			return O_FAIL;
		return O_UNCERTAIN;
	}
	return O_UNCERTAIN;
}

/* error rate at most max: errors ~ Binomial(n, rate) */
static enum outcome judge_rate(long long n, long long errors, double max, double conf)
{
	if (n <= 0)
		return O_UNCERTAIN;
	if (infer_binom_cdf(errors, n, max) <= 1 - conf)
		return O_PASS;
	if (errors > 0 && 1 - infer_binom_cdf(errors - 1, n, max) <= 1 - conf)
		return O_FAIL;
	return O_UNCERTAIN;
}

/* The claim of a summary for metric stat at limit: n and over; 0 or -1. */
static int find_claim(json_t *summary, const struct slo *o, long long *n, long long *over)
{
	json_t *claims = json_object_get(json_object_get(summary, "validity"), "claims");
	size_t i;
	json_t *c;
	json_array_foreach(claims, i, c) {
		const char *m = json_string_value(json_object_get(c, "metric"));
		const char *st = json_string_value(json_object_get(c, "stat"));
		double lim = json_number_value(json_object_get(c, "limit"));
		if (m && st && strcmp(m, o->metric) == 0 && strcmp(st, o->stat) == 0 &&
		    fabs(lim - o->max) <= 1e-12 * fabs(o->max)) {
			*n = json_integer_value(json_object_get(c, "n"));
			*over = json_integer_value(json_object_get(c, "over"));
			return 0;
		}
	}
	return -1;
}

static double figure(json_t *summary, const char *metric, const char *stat)
{
	json_t *m = json_object_get(json_object_get(summary, "metrics"), metric);
	json_t *v = json_object_get(m, stat);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* One step: every run at one value. */
struct step {
	double value;
	json_t *runs; /* [{id, state, reason, verdict, valid}] */
	int nruns, nfinished;
	enum outcome outcome;
	double margin; /* max over SLOs of estimate / limit (NaN: unknown) */
	json_t *json;
};

/* The figures of one run for the curve */
static json_t *run_figures(json_t *sum)
{
	json_t *o = json_object();
	static const char *const rates[] = {"request_throughput", "output_token_throughput",
					    "goodput"};
	for (size_t i = 0; i < HR_ARRAY_LEN(rates); i++)
		json_object_set_new(o, rates[i], real_or_null(figure(sum, rates[i], "avg")));
	static const char *const lat[] = {"time_to_first_token", "inter_token_latency",
					  "request_latency"};
	for (size_t i = 0; i < HR_ARRAY_LEN(lat); i++) {
		json_t *m = json_object_get(json_object_get(sum, "metrics"), lat[i]);
		json_t *ci = json_object_get(m, "ci");
		json_object_set_new(
		    o, lat[i],
		    json_pack("{s:o, s:o, s:o, s:o, s:o}", "unit", json_string("ms"), "p50",
			      real_or_null(figure(sum, lat[i], "p50")), "p99",
			      real_or_null(figure(sum, lat[i], "p99")), "ci_p50",
			      json_incref(json_object_get(ci, "p50") ? json_object_get(ci, "p50")
								     : json_null()),
			      "ci_p99",
			      json_incref(json_object_get(ci, "p99") ? json_object_get(ci, "p99")
								     : json_null())));
	}
	json_t *c = json_object_get(sum, "counts");
	long long req = json_integer_value(json_object_get(c, "requests"));
	long long errs = json_integer_value(json_object_get(c, "errors"));
	json_object_set_new(o, "requests", json_integer(req));
	json_object_set_new(o, "error_rate", req > 0 ? json_real((double)errs / req) : json_null());
	return o;
}

static void judge_step(const struct params *p, struct step *st, json_t *summaries)
{
	json_t *slo = json_array();
	int any_fail = 0, all_pass = 1;
	st->margin = NAN;
	for (int i = 0; i < p->nslo; i++) {
		const struct slo *o = &p->slo[i];
		long long n = 0, over = 0;
		double est_sum = 0;
		int nest = 0;
		size_t k;
		json_t *sum;
		json_array_foreach(summaries, k, sum) {
			long long rn = 0, rover = 0;
			if (o->q == 0) {
				json_t *c = json_object_get(sum, "counts");
				rn = json_integer_value(json_object_get(c, "requests"));
				rover = json_integer_value(json_object_get(c, "errors"));
				if (rn > 0) {
					est_sum += (double)rover / rn;
					nest++;
				}
			} else if (find_claim(sum, o, &rn, &rover) == 0) {
				double e = figure(sum, o->metric, o->stat);
				if (isfinite(e)) {
					est_sum += e;
					nest++;
				}
			} else if (json_integer_value(json_object_get(
				       json_object_get(sum, "counts"), "valid")) == 0) {
				/* nothing valid: every request missed the objective */
				rn = json_integer_value(
				    json_object_get(json_object_get(sum, "counts"), "requests"));
				rover = rn;
			}
			n += rn;
			over += rover;
		}
		enum outcome oc = o->q == 0 ? judge_rate(n, over, o->max, p->confidence)
					    : judge_counts(n, over, o->q, p->confidence);
		double est = nest ? est_sum / nest : NAN;
		if (isfinite(est) && (isnan(st->margin) || est / o->max > st->margin))
			st->margin = est / o->max;
		any_fail |= oc == O_FAIL;
		all_pass &= oc == O_PASS;
		json_array_append_new(slo, json_pack("{s:s, s:s, s:f, s:I, s:I, s:o, s:s}", "metric",
						     o->metric, "stat", o->stat, "max", o->max, "n",
						     (json_int_t)n, "over", (json_int_t)over,
						     "estimate", real_or_null(est), "outcome",
						     outcome_names[oc]));
	}
	json_object_set_new(st->json, "slo", slo);
	if (p->nslo == 0)
		st->outcome = O_PASS; /* nothing to meet: the curve only */
	else
		st->outcome = any_fail ? O_FAIL : all_pass ? O_PASS : O_UNCERTAIN;
}

/* Builds the steps from the sweep's runs: steps sorted by value. */
static int build_steps(struct store *s, const struct params *p, json_t *links, struct step *steps,
		       int max)
{
	int ns = 0;
	size_t i;
	json_t *l;
	json_array_foreach(links, i, l) {
		double v = json_number_value(json_array_get(l, 1));
		int k = 0;
		while (k < ns && steps[k].value != v)
			k++;
		if (k == ns) {
			if (ns == max)
				continue;
			memset(&steps[ns], 0, sizeof steps[ns]);
			steps[ns].value = v;
			steps[ns].runs = json_array();
			steps[ns].json = json_object();
			ns++;
		}
		struct step *st = &steps[k];
		int64_t rid = json_integer_value(json_array_get(l, 0));
		json_t *run = NULL;
		char err[HR_ERRLEN];
		json_t *r = json_pack("{s:I}", "id", (json_int_t)rid);
		if (runs_get(s, rid, 1, &run, err) == 0) {
			json_object_set(r, "state", json_object_get(run, "state"));
			json_object_set(r, "reason", json_object_get(run, "reason"));
			json_t *sum = json_object_get(run, "summary");
			json_t *cl = json_object_get(json_object_get(sum, "client"), "verdict");
			json_object_set_new(r, "verdict", cl ? json_incref(cl) : json_null());
			json_t *allow = json_object_get(
			    json_object_get(json_object_get(run, "spec"), "client"), "allow_client_bound");
			json_object_set_new(r, "allow_client_bound", json_boolean(json_is_true(allow)));
			json_t *val = json_object_get(json_object_get(sum, "validity"), "valid");
			json_object_set_new(r, "valid", val ? json_incref(val) : json_null());
			if (json_is_object(sum)) {
				json_object_set_new(r, "figures", run_figures(sum));
				json_object_set_new(r, "_summary", json_incref(sum));
			}
			json_decref(run);
		} else {
			json_object_set_new(r, "state", json_string("deleted"));
		}
		json_array_append_new(st->runs, r);
	}
	/* sort by value */
	for (int a = 1; a < ns; a++)
		for (int b = a; b > 0 && steps[b - 1].value > steps[b].value; b--) {
			struct step t = steps[b];
			steps[b] = steps[b - 1];
			steps[b - 1] = t;
		}
	for (int k = 0; k < ns; k++) {
		struct step *st = &steps[k];
		json_t *summaries = json_array();
		enum outcome special = O_PENDING;
		int pending = 0, saturated = 0;
		json_t *r;
		json_array_foreach(st->runs, i, r) {
			const char *state = json_string_value(json_object_get(r, "state"));
			st->nruns++;
			if (!state || !run_state_is_terminal(state)) {
				if (strcmp(state ? state : "", "deleted") != 0)
					pending = 1;
				else
					special = O_ERROR;
				continue;
			}
			st->nfinished++;
			if (strcmp(state, "interrupted") == 0)
				continue; /* a daemon restart: it counts for nothing, run again */
			json_t *sum = json_object_get(r, "_summary");
			const char *verdict = json_string_value(json_object_get(r, "verdict"));
			/* a client_bound run stops a search unless its spec allows it
			 * (client.allow_client_bound: then it is judged as any other) */
			if (verdict && strcmp(verdict, "client_bound") == 0 &&
			    !json_is_true(json_object_get(r, "allow_client_bound")))
				special = O_CLIENT_BOUND;
			long long req = json_integer_value(
			    json_object_get(json_object_get(sum, "counts"), "requests"));
			if (strcmp(state, "succeeded") != 0 && !(strcmp(state, "failed") == 0 && req > 0))
				special = special == O_CLIENT_BOUND ? special : O_ERROR;
			else if (sum)
				json_array_append(summaries, sum);
			if (json_is_true(json_object_get(json_object_get(sum, "saturation"), "stopped")))
				saturated = 1;
		}
		judge_step(p, st, summaries);
		if (json_array_size(summaries) == 0 && special == O_PENDING)
			st->outcome = O_UNCERTAIN; /* no results at this value yet */
		if (saturated) { /* stopped as oversaturated: it cannot pass */
			json_object_set_new(st->json, "saturated", json_true());
			if (p->nslo && st->outcome != O_PENDING)
				st->outcome = O_FAIL;
		}
		json_decref(summaries);
		if (pending)
			st->outcome = O_PENDING;
		else if (special != O_PENDING)
			st->outcome = special;
		json_array_foreach(st->runs, i, r) {
			json_object_del(r, "_summary");
			json_object_del(r, "allow_client_bound");
		}
	}
	return ns;
}

static json_t *steps_json(const struct params *p, struct step *steps, int ns)
{
	json_t *arr = json_array();
	for (int k = 0; k < ns; k++) {
		struct step *st = &steps[k];
		json_object_set_new(st->json, "value", value_json(p, st->value));
		json_object_set_new(st->json, "outcome", json_string(outcome_names[st->outcome]));
		json_object_set(st->json, "runs", st->runs);
		json_array_append(arr, st->json);
	}
	return arr;
}

static void steps_free(struct step *steps, int ns)
{
	for (int k = 0; k < ns; k++) {
		json_decref(steps[k].runs);
		json_decref(steps[k].json);
	}
}

/* --- deciding --------------------------------------------------------------------- */

struct decision {
	int done;          /* 1: the sweep ends with state/result */
	const char *state; /* succeeded, failed, client_bound */
	char error[512];
	json_t *result;
	int queue;      /* 1: queue a run at value */
	double value;
	int repeat;     /* the run's repeat index at that value */
};

static const struct step *find_step(const struct step *steps, int ns, double v)
{
	for (int k = 0; k < ns; k++)
		if (steps[k].value == v)
			return &steps[k];
	return NULL;
}

static json_t *bracket_json(const struct params *p, const struct step *st)
{
	if (!st)
		return json_null();
	json_t *ids = json_array();
	size_t i;
	json_t *r;
	json_array_foreach(st->runs, i, r)
		json_array_append(ids, json_object_get(r, "id"));
	return json_pack("{s:o, s:o, s:s}", "value", value_json(p, st->value), "runs", ids,
			 "outcome", outcome_names[st->outcome]);
}

/* Joint confidence of k claims each at conf (Bonferroni). */
static double joint(const struct params *p)
{
	double j = 1 - p->nslo * (1 - p->confidence);
	return j > 0 ? j : 0;
}

static void decide(const struct params *p, struct step *steps, int ns, int runs_spent,
		   struct decision *d)
{
	memset(d, 0, sizeof *d);
	int pending = 0;
	for (int k = 0; k < ns; k++) {
		if (steps[k].outcome == O_PENDING)
			pending = 1;
	}
	/* a client that could not keep up, or a run that broke, ends a search */
	for (int k = 0; k < ns && p->mode == MODE_SEARCH; k++) {
		char vt[64];
		value_text(p, steps[k].value, vt, sizeof vt);
		if (steps[k].outcome == O_CLIENT_BOUND) {
			d->done = 1;
			d->state = "client_bound";
			snprintf(d->error, sizeof d->error,
				 "at %s = %s the client verdict is client_bound: the load generator, "
				 "not the server, was the limit; give the runs more workers (or hosts) "
				 "and search again",
				 p->variable, vt);
			return;
		}
		if (steps[k].outcome == O_ERROR) {
			d->done = 1;
			d->state = "failed";
			snprintf(d->error, sizeof d->error,
				 "the run at %s = %s did not end with results (see its reason)",
				 p->variable, vt);
			return;
		}
	}
	if (pending)
		return;
	if (p->mode == MODE_VALUES) {
		/* the curve is complete; with SLOs, the largest value passing */
		const struct step *best = NULL;
		for (int k = 0; k < ns; k++)
			if (steps[k].outcome == O_PASS)
				best = &steps[k];
		d->done = 1;
		d->state = "succeeded";
		d->result = json_pack("{s:o, s:o, s:I}", "capacity",
				      p->nslo && best ? value_json(p, best->value) : json_null(),
				      "pass", bracket_json(p, best), "runs_spent",
				      (json_int_t)runs_spent);
		return;
	}
	/* an uncertain value runs again, up to `repeats` runs */
	for (int k = 0; k < ns; k++)
		if (steps[k].outcome == O_UNCERTAIN && steps[k].nruns < p->repeats &&
		    runs_spent < p->max_runs) {
			d->queue = 1;
			d->value = steps[k].value;
			d->repeat = steps[k].nruns;
			return;
		}
	const struct step *lo_st = find_step(steps, ns, p->from);
	const struct step *hi_st = p->grow ? NULL : find_step(steps, ns, p->to);
	if (!lo_st || (!p->grow && !hi_st)) { /* the bracket's ends first */
		d->queue = 1;
		d->value = lo_st ? p->to : p->from;
		return;
	}
	if (p->grow) {
		/* no end given: double the largest value while every value passes */
		int all_pass = 1;
		double top = p->from;
		for (int k = 0; k < ns; k++) {
			all_pass &= steps[k].outcome == O_PASS;
			if (steps[k].value > top)
				top = steps[k].value;
		}
		if (all_pass && runs_spent < p->max_runs && top < p->from * 1048576.0) {
			double next = as_value(p, top * 2);
			if (next <= top)
				next = top + 1;
			d->queue = 1;
			d->value = next;
			return;
		}
	}
	/* the largest passing value below the smallest value that does not pass */
	const struct step *fail = NULL, *pass = NULL;
	for (int k = 0; k < ns; k++)
		if (steps[k].outcome != O_PASS) {
			fail = &steps[k];
			break;
		}
	for (int k = 0; k < ns; k++)
		if (steps[k].outcome == O_PASS && (!fail || steps[k].value < fail->value))
			pass = &steps[k];
	int non_monotonic = 0;
	for (int k = 0; k < ns; k++)
		non_monotonic |= fail && steps[k].outcome == O_PASS && steps[k].value > fail->value;
	const char *why = NULL;
	double next = NAN;
	if (!pass) {
		why = "below_range";
	} else if (!fail) {
		why = "above_range";
	} else {
		double lo = pass->value, hi = fail->value, gap = hi - lo;
		double res = p->resolution > 0 ? p->resolution : p->resolution_rel * fabs(lo);
		if (p->integer && res < 1)
			res = 1;
		if (gap <= res) {
			why = "resolution";
		} else if (runs_spent >= p->max_runs) {
			why = "max_runs";
		} else {
			/* interpolate log(margin) to 1 between the two, kept within the
			 * middle half of the bracket; bisection when a margin is unknown */
			double t = 0.5;
			if (pass->margin > 0 && fail->margin > pass->margin && isfinite(fail->margin))
				t = (0 - log(pass->margin)) / (log(fail->margin) - log(pass->margin));
			if (!(t >= 0.25))
				t = 0.25;
			if (t > 0.75)
				t = 0.75;
			next = as_value(p, lo + gap * t);
			if (next <= lo || next >= hi)
				next = as_value(p, lo + gap / 2);
			if (next <= lo || next >= hi)
				why = "resolution";
		}
	}
	if (!why) {
		d->queue = 1;
		d->value = next;
		return;
	}
	d->done = 1;
	d->state = "succeeded";
	json_t *slo_conf = json_pack("{s:f, s:f, s:s}", "per_claim", p->confidence, "joint",
				     joint(p), "rule",
				     "each SLO of the passing value proven at the per-claim "
				     "confidence; jointly at least 1 - k (1 - confidence)");
	d->result = json_pack("{s:o, s:s, s:o, s:o, s:o, s:I, s:b}", "capacity",
			      pass ? value_json(p, pass->value) : json_null(), "stop_reason", why,
			      "pass", bracket_json(p, pass), "fail", bracket_json(p, fail),
			      "confidence", slo_conf, "runs_spent", (json_int_t)runs_spent,
			      "non_monotonic", non_monotonic);
}

/* --- the interface ------------------------------------------------------------------ */

int sweep_create(struct store *s, json_t *body, json_t *spec_json, const char *who,
		 sweep_check_fn check, void *check_ctx, const struct sweep_queue_limits *lim,
		 int64_t *id, char *field, char *msg)
{
	struct params p;
	if (!json_is_object(body)) {
		json_decref(spec_json);
		return bad(field, msg, "", "the body must be a JSON object");
	}
	int rc = parse_params(body, spec_json, &p, check, check_ctx, field, msg);
	p.check = NULL;
	if (rc < 0) {
		json_decref(spec_json);
		return rc;
	}
	char err[HR_ERRLEN];
	/* the runs queued at once fit the submitter's quota and the queue
	 * (checked again, per run, as each is inserted) */
	long long now_runs = p.mode == MODE_VALUES ? (long long)p.nvalues * p.repeats
						   : p.grow ? 1 : 2;
	if (lim && (lim->token_max_queued > 0 || lim->max_queued_runs > 0)) {
		long long all, mine;
		queued_counts(s, who, &all, &mine);
		if (lim->token_max_queued > 0 && mine + now_runs > lim->token_max_queued) {
			json_decref(p.spec);
			snprintf(field, 256, "max_queued");
			snprintf(msg, 256,
				 "this token has %lld run(s) queued and its max_queued is %lld: the "
				 "sweep's first %lld run(s) are refused",
				 mine, lim->token_max_queued, now_runs);
			return -429;
		}
		if (lim->max_queued_runs > 0 && all + now_runs > lim->max_queued_runs) {
			json_decref(p.spec);
			snprintf(msg, 256,
				 "%lld run(s) are queued and at most %d may be: the sweep's first "
				 "%lld run(s) are refused",
				 all, lim->max_queued_runs, now_runs);
			return -503;
		}
	}
	struct create_args a = {.p = &p, .who = who};
	if (store_exec(s, create_job, &a, err) < 0) {
		json_decref(p.spec);
		snprintf(msg, 256, "%s", err);
		return -1;
	}
	pthread_mutex_lock(&decide_mu);
	int64_t seq = 0;
	if (p.mode == MODE_VALUES) {
		for (int i = 0; i < p.nvalues && rc == 0; i++)
			for (int r = 0; r < p.repeats && rc == 0; r++)
				rc = queue_run_lim(s, a.id, &p, who, lim, p.values[i], r, seq++,
						   err);
	} else {
		rc = queue_run_lim(s, a.id, &p, who, lim, p.from, 0, seq++, err);
		if (rc == 0 && !p.grow)
			rc = queue_run_lim(s, a.id, &p, who, lim, p.to, 0, seq++, err);
	}
	if (rc < 0) {
		finish(s, a.id, "failed", NULL, err);
		snprintf(msg, 256, "%s", err);
	}
	pthread_mutex_unlock(&decide_mu);
	json_decref(p.spec);
	*id = a.id;
	return rc == -429 || rc == -503 ? rc : rc < 0 ? -1 : 0;
}

/* Reads a sweep and its steps; with act, takes its next decision. */
static json_t *evaluate(struct store *s, int64_t id, int act)
{
	json_t *row;
	if (read_sweep(s, id, &row) < 0)
		return NULL;
	struct params p;
	json_t *links = read_links(s, id);
	int have = load_params(json_object_get(row, "params"), &p) == 0;
	struct step *steps = xcalloc(SWEEP_MAX_RUNS, sizeof *steps);
	int ns = 0;
	if (have) {
		ns = build_steps(s, &p, links, steps, SWEEP_MAX_RUNS);
		json_object_set_new(row, "steps", steps_json(&p, steps, ns));
	} else {
		json_object_set_new(row, "steps", json_array());
	}
	json_object_set_new(row, "runs_spent", json_integer((json_int_t)json_array_size(links)));
	const char *state = json_string_value(json_object_get(row, "state"));
	if (have && act && state && strcmp(state, "running") == 0) {
		struct decision d;
		decide(&p, steps, ns, (int)json_array_size(links), &d);
		char err[HR_ERRLEN];
		if (d.queue) {
			const char *who = json_string_value(json_object_get(row, "submitted_by"));
			if (queue_run(s, id, &p, who, d.value, d.repeat,
				      (int64_t)json_array_size(links), err) < 0)
				finish(s, id, "failed", NULL, err);
		} else if (d.done) {
			finish(s, id, d.state, d.result, d.error[0] ? d.error : NULL);
		}
		json_decref(d.result);
	} else if (!have && act && state && strcmp(state, "running") == 0) {
		finish(s, id, "failed", NULL, "the sweep's stored parameters no longer parse");
	}
	steps_free(steps, ns);
	free(steps);
	if (have)
		json_decref(p.spec);
	json_decref(links);
	return row;
}

json_t *sweep_get(struct store *s, int64_t id)
{
	return evaluate(s, id, 0);
}

json_t *sweep_list(struct store *s, int limit)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	json_t *out = json_array();
	if (sqlite3_prepare_v2(db,
			       "SELECT id, name, state, created_ms, finished_ms, result, error, "
			       "submitted_by, json_extract(params, '$.variable'), (SELECT count(*) "
			       "FROM sweep_runs r WHERE r.sweep_id = sweeps.id) FROM sweeps "
			       "ORDER BY id DESC LIMIT ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, limit);
		while (sqlite3_step(st) == SQLITE_ROW)
			json_array_append_new(
			    out, json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "id",
					   (json_int_t)sqlite3_column_int64(st, 0), "name",
					   runs_col_text(st, 1), "state", runs_col_text(st, 2),
					   "created", runs_col_time(st, 3), "finished",
					   runs_col_time(st, 4), "result", runs_col_json(st, 5),
					   "error", runs_col_text(st, 6), "submitted_by",
					   runs_col_text(st, 7), "variable", runs_col_text(st, 8),
					   "runs_spent", (json_int_t)sqlite3_column_int64(st, 9)));
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return out;
}

static void csv_num(struct dynbuf *b, json_t *v)
{
	if (json_is_number(v))
		dynbuf_printf(b, "%.10g", json_number_value(v));
}

char *sweep_csv(struct store *s, int64_t id)
{
	json_t *sw = sweep_get(s, id);
	if (!sw)
		return NULL;
	struct dynbuf b;
	dynbuf_init(&b, (size_t)64 << 20); /* a few KiB in practice: 200 rows at most */
	dynbuf_addstr(&b, "value,run,state,outcome,client_verdict,valid,requests,error_rate,"
			  "request_throughput,output_token_throughput,goodput,ttft_p50_ms,"
			  "ttft_p99_ms,itl_p50_ms,itl_p99_ms,latency_p50_ms,latency_p99_ms\n");
	size_t i, j;
	json_t *st, *r;
	json_array_foreach(json_object_get(sw, "steps"), i, st) {
		json_array_foreach(json_object_get(st, "runs"), j, r) {
			json_t *f = json_object_get(r, "figures");
			csv_num(&b, json_object_get(st, "value"));
			dynbuf_printf(&b, ",%lld,%s,%s,%s,%s,",
				      (long long)json_integer_value(json_object_get(r, "id")),
				      json_string_value(json_object_get(r, "state"))
					  ? json_string_value(json_object_get(r, "state"))
					  : "",
				      json_string_value(json_object_get(st, "outcome")),
				      json_string_value(json_object_get(r, "verdict"))
					  ? json_string_value(json_object_get(r, "verdict"))
					  : "",
				      json_is_boolean(json_object_get(r, "valid"))
					  ? (json_is_true(json_object_get(r, "valid")) ? "true"
										   : "false")
					  : "");
			csv_num(&b, json_object_get(f, "requests"));
			static const char *const cols[] = {"error_rate", "request_throughput",
							   "output_token_throughput", "goodput"};
			for (size_t c = 0; c < HR_ARRAY_LEN(cols); c++) {
				dynbuf_addstr(&b, ",");
				csv_num(&b, json_object_get(f, cols[c]));
			}
			static const char *const lat[] = {"time_to_first_token", "inter_token_latency",
							  "request_latency"};
			for (size_t c = 0; c < HR_ARRAY_LEN(lat); c++) {
				json_t *m = json_object_get(f, lat[c]);
				dynbuf_addstr(&b, ",");
				csv_num(&b, json_object_get(m, "p50"));
				dynbuf_addstr(&b, ",");
				csv_num(&b, json_object_get(m, "p99"));
			}
			dynbuf_addstr(&b, "\n");
		}
	}
	json_decref(sw);
	char *out = dynbuf_take(&b, NULL);
	return out ? out : xstrdup("");
}

int sweep_cancel(struct store *s, int64_t id, const char **state,
		 void (*cancelled)(void *ctx, int64_t run_id, const char *state), void *ctx)
{
	pthread_mutex_lock(&decide_mu);
	json_t *row;
	int rc = read_sweep(s, id, &row);
	if (rc < 0) {
		pthread_mutex_unlock(&decide_mu);
		return rc;
	}
	static char st_buf[32];
	snprintf(st_buf, sizeof st_buf, "%s", json_string_value(json_object_get(row, "state")));
	*state = st_buf;
	json_decref(row);
	if (strcmp(st_buf, "running") != 0) {
		pthread_mutex_unlock(&decide_mu);
		return -409;
	}
	finish(s, id, "cancelled", NULL, "cancelled");
	json_t *links = read_links(s, id);
	size_t i;
	json_t *l;
	json_array_foreach(links, i, l) {
		const char *before;
		char err[HR_ERRLEN];
		int64_t rid = json_integer_value(json_array_get(l, 0));
		if (runs_cancel(s, rid, &before, err) == 0 && cancelled)
			cancelled(ctx, rid, before);
	}
	json_decref(links);
	pthread_mutex_unlock(&decide_mu);
	return 0;
}

void sweep_run_finished(struct store *s, int64_t run_id)
{
	int64_t id = sweep_of_run(s, run_id);
	if (!id)
		return;
	pthread_mutex_lock(&decide_mu);
	json_decref(evaluate(s, id, 1));
	pthread_mutex_unlock(&decide_mu);
}

void sweep_settle_all(struct store *s)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int64_t ids[256];
	int n = 0;
	if (sqlite3_prepare_v2(db, "SELECT id FROM sweeps WHERE state = 'running' LIMIT 256", -1,
			       &st, NULL) == SQLITE_OK)
		while (sqlite3_step(st) == SQLITE_ROW)
			ids[n++] = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	store_reader_put(s, db);
	pthread_mutex_lock(&decide_mu);
	for (int i = 0; i < n; i++)
		json_decref(evaluate(s, ids[i], 1));
	pthread_mutex_unlock(&decide_mu);
}
