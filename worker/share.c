/* share.c - validation of the SCHEDULE payload (see share.h). */
#include "share.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrlimits.h"
#include "rng.h"
#include "sched.h"
#include "util.h"

#define MAX_SAFE_INT 9007199254740991.0 /* 2^53 - 1: exact in a double */
#define MAX_STRIDE 1000000

/* An integer field: a JSON integer, or a real with no fraction. Returns 1
 * when present and valid, 0 when absent (or null), -1 on error. `where` is
 * the dotted path of obj ("share", "share.rate"). */
static int get_int(json_t *obj, const char *where, const char *key, double min, double max,
                   double *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return errf(err, "SCHEDULE: %s.%s must be a number", where, key);
	double d = json_number_value(v);
	if (!isfinite(d) || (!json_is_integer(v) && floor(d) != d))
		return errf(err, "SCHEDULE: %s.%s must be an integer", where, key);
	if (d < min || d > max)
		return errf(err, "SCHEDULE: %s.%s must be between %.0f and %.0f", where, key, min,
		            max);
	*out = d;
	return 1;
}

static int get_real(json_t *obj, const char *where, const char *key, double min, double max,
                    double *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return errf(err, "SCHEDULE: %s.%s must be a number", where, key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < min || d > max)
		return errf(err, "SCHEDULE: %s.%s must be between %g and %g", where, key, min, max);
	*out = d;
	return 1;
}

/* An optional object member: 1 present, 0 absent or null, -1 not an object. */
static int get_obj(json_t *obj, const char *where, const char *key, json_t **out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return errf(err, "SCHEDULE: %s.%s must be an object", where, key);
	*out = v;
	return 1;
}

static int parse_mode(json_t *s, const char *where, int *mode, char *err)
{
	json_t *v = json_object_get(s, "mode");
	*mode = SPEC_LOAD_CONCURRENCY;
	if (!v || json_is_null(v))
		return 0;
	const char *m = json_string_value(v);
	for (int i = SPEC_LOAD_CONCURRENCY; m && i <= SPEC_LOAD_TRACE; i++)
		if (strcmp(m, spec_mode_name(i)) == 0) {
			*mode = i;
			return 0;
		}
	return errf(err, "SCHEDULE: %s.mode must be \"concurrency\", \"rate\" or \"trace\"", where);
}

static int parse_rate(json_t *s, const char *where, struct share_phase *p, uint64_t def_stream,
                      char *err)
{
	char w[64];
	json_t *r = NULL;
	double v;
	int rc;

	snprintf(w, sizeof w, "%s.rate", where);
	if ((rc = get_obj(s, where, "rate", &r, err)) < 0)
		return -1;
	if (rc == 0)
		return errf(err, "SCHEDULE: %s is required in rate mode", w);
	json_t *law = json_object_get(r, "law");
	p->rate.law = SCHED_POISSON;
	if (law && !json_is_null(law)) {
		const char *l = json_string_value(law);
		p->rate.law = -1;
		for (int i = SCHED_CONSTANT; l && i <= SCHED_GAMMA; i++)
			if (strcmp(l, spec_arrival_name(i)) == 0)
				p->rate.law = i;
		if (p->rate.law < 0)
			return errf(
			    err, "SCHEDULE: %s.law must be \"constant\", \"poisson\" or \"gamma\"",
			    w);
	}
	if ((rc = get_real(r, w, "rate", 1e-6, HR_MAX_RATE, &p->rate.rate, err)) < 0)
		return -1;
	if (rc == 0)
		return errf(err, "SCHEDULE: %s.rate is required", w);
	p->rate.smoothness = 1;
	if (get_real(r, w, "smoothness", 0.001, 1000, &p->rate.smoothness, err) < 0)
		return -1;
	p->rate.ramp_s = p->ramp_s;
	if (get_real(r, w, "ramp_s", 0, HR_MAX_RAMP_S, &p->rate.ramp_s, err) < 0)
		return -1;
	if ((rc = get_int(r, w, "batch_size", 0, HR_MAX_BATCH_SIZE, &v, err)) < 0)
		return -1;
	p->rate.batch_size = rc ? (int)v : 0;
	if (get_real(r, w, "jitter_s", 0, HR_MAX_DURATION_S, &p->rate.jitter_s, err) < 0)
		return -1;
	p->rate.stream = def_stream;
	if ((rc = get_int(r, w, "stream", 0, MAX_SAFE_INT, &v, err)) < 0)
		return -1;
	if (rc)
		p->rate.stream = (uint64_t)v;
	p->rate.total_requests = p->requests;
	if ((rc = get_int(r, w, "total_requests", 0, (double)HR_MAX_REQUESTS, &v, err)) < 0)
		return -1;
	if (rc)
		p->rate.total_requests = (int64_t)v;
	p->rate.duration_s = p->duration_s;
	if (get_real(r, w, "duration_s", 0, HR_MAX_DURATION_S, &p->rate.duration_s, err) < 0)
		return -1;
	if (p->rate.total_requests == 0 && p->rate.duration_s == 0)
		return errf(err, "SCHEDULE: %s needs total_requests or duration_s", w);
	return 0;
}

/* One phase share (the top level, or share.warmup). */
static int parse_phase(json_t *s, const char *where, struct share_phase *p, uint64_t def_stream,
                       char *err)
{
	double v;
	int rc;

	memset(p, 0, sizeof *p);
	p->req_id_stride = 1;
	if (parse_mode(s, where, &p->mode, err) < 0)
		return -1;
	bool conc = p->mode == SPEC_LOAD_CONCURRENCY;
	if ((rc = get_int(s, where, "slots", conc ? 1 : 0, HR_MAX_CONCURRENCY, &v, err)) < 0)
		return -1;
	if (rc == 0 && conc)
		return errf(err, "SCHEDULE: %s.slots is required", where);
	p->slots = rc ? (int)v : 0;
	if ((rc = get_int(s, where, "requests", 0, (double)HR_MAX_REQUESTS, &v, err)) < 0)
		return -1;
	if (rc)
		p->requests = (int64_t)v;
	if (get_real(s, where, "duration_s", 0, HR_MAX_DURATION_S, &p->duration_s, err) < 0)
		return -1;
	if (p->requests > 0 && p->duration_s > 0)
		return errf(err, "SCHEDULE: %s has both requests and duration_s", where);
	if ((rc = get_int(s, where, "req_id_base", 0, MAX_SAFE_INT, &v, err)) < 0)
		return -1;
	if (rc)
		p->req_id_base = (uint64_t)v;
	if ((rc = get_int(s, where, "req_id_stride", 1, MAX_STRIDE, &v, err)) < 0)
		return -1;
	if (rc)
		p->req_id_stride = (uint64_t)v;
	if ((rc = get_int(s, where, "total_slots", 0, HR_MAX_CONCURRENCY, &v, err)) < 0)
		return -1;
	if (rc)
		p->total_slots = (int)v;
	if (get_real(s, where, "ramp_s", 0, HR_MAX_RAMP_S, &p->ramp_s, err) < 0)
		return -1;
	if (p->mode == SPEC_LOAD_RATE && parse_rate(s, where, p, def_stream, err) < 0)
		return -1;
	return 0;
}

static int parse_dist(json_t *o, const char *where, const char *key, double min_mean, double max,
                      struct spec_dist *d, char *err)
{
	char w[96];
	json_t *x = NULL;
	int rc;
	snprintf(w, sizeof w, "%s.%s", where, key);
	if ((rc = get_obj(o, where, key, &x, err)) < 0)
		return -1;
	if (rc == 0)
		return errf(err, "SCHEDULE: %s is required", w);
	d->mean = d->stddev = 0;
	if ((rc = get_real(x, w, "mean", min_mean, max, &d->mean, err)) < 0)
		return -1;
	if (rc == 0)
		return errf(err, "SCHEDULE: %s.mean is required", w);
	return get_real(x, w, "stddev", 0, max, &d->stddev, err) < 0 ? -1 : 0;
}

/* share.dataset: {"path", "format", "options", "sampling", "entries"} */
static int parse_dataset(json_t *o, struct share *sh, char *err)
{
	const char *path = json_string_value(json_object_get(o, "path"));
	const char *fmt = json_string_value(json_object_get(o, "format"));
	const char *sm = json_string_value(json_object_get(o, "sampling"));
	enum ds_format f;
	if (!path || path[0] != '/' || strlen(path) >= sizeof sh->ds_path)
		return errf(err, "SCHEDULE: share.dataset.path must be an absolute path");
	if (!fmt || ds_format_parse(fmt, &f) < 0)
		return errf(err, "SCHEDULE: share.dataset.format is not a dataset format");
	char oerr[HR_ERRLEN];
	if (ds_options_from_json(json_object_get(o, "options"), &sh->ds_opts, oerr) < 0)
		return errf(err, "SCHEDULE: share.dataset.options: %s", oerr);
	if (sm && strcmp(sm, "sequential") == 0)
		sh->ds_sampling = SPEC_SAMPLE_SEQUENTIAL;
	else if (sm && strcmp(sm, "random") == 0)
		sh->ds_sampling = SPEC_SAMPLE_RANDOM;
	else if (sm && strcmp(sm, "shuffle") == 0)
		sh->ds_sampling = SPEC_SAMPLE_SHUFFLE;
	else
		return errf(err, "SCHEDULE: share.dataset.sampling must be sequential, random or "
		                 "shuffle");
	snprintf(sh->ds_path, sizeof sh->ds_path, "%s", path);
	sh->ds_format = (int)f;
	sh->has_dataset = true;
	return 0;
}

/* share.net: {"allow": [ENTRY...], "closed": bool, "self": ["ADDR:PORT"...]}
 * (api/protocol.md). */
static int parse_net(json_t *o, struct netallow *a, char *err)
{
	json_t *allow = json_object_get(o, "allow"), *self = json_object_get(o, "self");
	json_t *closed = json_object_get(o, "closed"), *v;
	size_t i;
	char e2[HR_ERRLEN];
	if ((allow && !json_is_array(allow)) || (self && !json_is_array(self)) ||
	    (closed && !json_is_boolean(closed)))
		return errf(err, "SCHEDULE: share.net.allow and .self must be arrays, .closed a "
				 "boolean");
	a->closed = json_is_true(closed);
	json_array_foreach(allow, i, v) {
		if (!json_is_string(v) || netallow_add(a, json_string_value(v), e2) < 0)
			return errf(err, "SCHEDULE: share.net.allow[%zu]: %s", i,
				    json_is_string(v) ? e2 : "not a string");
	}
	json_array_foreach(self, i, v) {
		/* "ADDR:PORT" or "[ADDR]:PORT" */
		const char *s = json_is_string(v) ? json_string_value(v) : "";
		const char *colon = strrchr(s, ':');
		char host[INET6_ADDRSTRLEN + 2];
		size_t n = colon ? (size_t)(colon - s) : 0;
		if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
			s++;
			n -= 2;
		}
		char *end = NULL;
		long port = colon ? strtol(colon + 1, &end, 10) : 0;
		struct sockaddr_storage ss = {0};
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		if (n > 0 && n < sizeof host) {
			memcpy(host, s, n);
			host[n] = '\0';
			if (inet_pton(AF_INET, host, &s4->sin_addr) == 1)
				ss.ss_family = AF_INET;
			else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1)
				ss.ss_family = AF_INET6;
		}
		if (!ss.ss_family || !end || *end || port < 1 || port > 65535 ||
		    netallow_add_self(a, (struct sockaddr *)&ss, (int)port) < 0)
			return errf(err, "SCHEDULE: share.net.self[%zu] is not ADDR:PORT", i);
	}
	return 0;
}

static int parse_share(json_t *msg, json_t *s, int index, struct share *sh, char *err)
{
	double v;
	int rc;
	json_t *o = NULL;

	if (!json_is_object(s))
		return errf(err, "SCHEDULE: 'share' must be an object");
	memset(sh, 0, sizeof *sh);
	if (parse_phase(s, "share", &sh->prof, RNG_STREAM_ARRIVAL, err) < 0)
		return -1;

	/* who am I: the share's fields, else the message's, else alone; with
	 * traffic classes the message's `class` gives my place in my class's
	 * pool, which the share's fields then describe */
	json_t *cls = json_object_get(msg, "class");
	if (cls && !json_is_null(cls)) {
		if (!json_is_object(cls))
			return errf(err, "SCHEDULE: 'class' must be an object");
		if ((rc = get_int(cls, "class", "workers", 1, HR_MAX_WORKERS, &v, err)) < 0)
			return -1;
		if (rc == 0)
			return errf(err, "SCHEDULE: class.workers is required");
		sh->workers = (int)v;
		if ((rc = get_int(cls, "class", "worker", 0, HR_MAX_WORKERS - 1, &v, err)) < 0)
			return -1;
		if (rc == 0)
			return errf(err, "SCHEDULE: class.worker is required");
		index = (int)v;
		double off = 0;
		if (get_int(cls, "class", "req_offset", 0, MAX_SAFE_INT / 2, &off, err) < 0)
			return -1;
		sh->req_offset = (uint64_t)off;
	} else {
		sh->workers = 1;
		if (json_is_integer(json_object_get(msg, "workers")))
			sh->workers = (int)json_integer_value(json_object_get(msg, "workers"));
	}
	sh->worker = index;
	if ((rc = get_int(s, "share", "workers", 1, HR_MAX_WORKERS, &v, err)) < 0)
		return -1;
	if (rc)
		sh->workers = (int)v;
	if ((rc = get_int(s, "share", "worker", 0, HR_MAX_WORKERS - 1, &v, err)) < 0)
		return -1;
	if (rc && (int)v != index)
		return errf(err, "SCHEDULE: share.worker is %d, but I am %d", (int)v, index);
	if (sh->workers < 1 || sh->workers > HR_MAX_WORKERS || index >= sh->workers)
		return errf(err, "SCHEDULE: share.workers (%d) must be above my index %d",
		            sh->workers, index);

	sh->grace_s = 30;
	if (get_real(s, "share", "grace_s", 0, HR_MAX_GRACE_S, &sh->grace_s, err) < 0)
		return -1;
	if ((rc = get_obj(s, "share", "cancel", &o, err)) < 0)
		return -1;
	if (rc && (get_real(o, "share.cancel", "fraction", 0, 1, &sh->cancel_fraction, err) < 0 ||
	           get_real(o, "share.cancel", "after_s", 0, HR_MAX_TIMEOUT_S, &sh->cancel_after_s,
	                    err) < 0))
		return -1;
	if ((rc = get_obj(s, "share", "sessions", &o, err)) < 0)
		return -1;
	if (rc) {
		sh->sessions = true;
		if (parse_dist(o, "share.sessions", "turns", 1, HR_MAX_TURNS, &sh->turns, err) <
		        0 ||
		    parse_dist(o, "share.sessions", "think_time_s", 0, HR_MAX_THINK_S, &sh->think_s,
		               err) < 0)
			return -1;
	}
	sh->speedup = 1;
	if ((rc = get_obj(s, "share", "trace", &o, err)) < 0)
		return -1;
	if (rc) {
		if (get_real(o, "share.trace", "speedup", 1e-6, 1e6, &sh->speedup, err) < 0 ||
		    get_real(o, "share.trace", "start_s", 0, 1e9, &sh->trace_start_s, err) < 0 ||
		    get_real(o, "share.trace", "end_s", 0, 1e9, &sh->trace_end_s, err) < 0)
			return -1;
		if (sh->trace_end_s > 0 && sh->trace_end_s <= sh->trace_start_s)
			return errf(err,
			            "SCHEDULE: share.trace.end_s must be after start_s (or 0)");
	}
	if ((rc = get_obj(s, "share", "dataset", &o, err)) < 0)
		return -1;
	if (rc && parse_dataset(o, sh, err) < 0)
		return -1;
	if ((rc = get_obj(s, "share", "net", &o, err)) < 0)
		return -1;
	if (rc && parse_net(o, &sh->net, err) < 0)
		return -1;
	if ((rc = get_obj(s, "share", "warmup", &o, err)) < 0)
		return -1;
	if (rc) {
		if (parse_phase(o, "share.warmup", &sh->warm, RNG_STREAM_WARMUP_ARRIVAL, err) < 0)
			return -1;
		if (sh->warm.mode == SPEC_LOAD_TRACE)
			return errf(err, "SCHEDULE: share.warmup.mode cannot be \"trace\"");
		sh->has_warmup = true;
	}
	return 0;
}

int share_parse(json_t *msg, int index, struct spec *spec, struct share *sh, char *err)
{
	struct spec_error se;
	json_t *w = json_object_get(msg, "worker");

	if (w && !json_is_null(w) && !(json_is_integer(w) && json_integer_value(w) == index))
		return errf(err, "SCHEDULE: addressed to another worker (I am %d)", index);
	if (parse_share(msg, json_object_get(msg, "share"), index, sh, err) < 0)
		return -1;
	json_t *js = json_object_get(msg, "spec");
	if (!js)
		return errf(err, "SCHEDULE: 'spec' is missing");
	if (spec_from_json(js, 1, spec, &se) < 0) {
		if (se.field[0])
			return errf(err, "SCHEDULE: invalid spec: %s (%s: %s)", se.message,
			            se.field, se.code);
		return errf(err, "SCHEDULE: invalid spec: %s (%s)", se.message, se.code);
	}
	if ((spec->workload.kind == SPEC_WL_DATASET) != sh->has_dataset) {
		spec_release(spec);
		return errf(err, "SCHEDULE: a dataset spec and share.dataset go together");
	}
	if (sh->prof.mode == SPEC_LOAD_TRACE && !spec->workload.trace && !sh->has_dataset) {
		spec_release(spec);
		return errf(err, "SCHEDULE: share.mode \"trace\" needs a spec with workload.trace");
	}
	if (spec->workload.kind == SPEC_WL_TRACE)
		sh->sessions = false; /* a trace brings its own sessions */
	return 0;
}
