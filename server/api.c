/* api.c - REST routes, request bodies, JSON and streamed responses. */
#include "api.h"
#include "apiint.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "auth.h"
#include "backup.h"
#include "calibrate.h"
#include "card.h"
#include "client.h"
#include "datasets.h"
#include "disk.h"
#include "dynbuf.h"
#include "export.h"
#include "history.h"
#include "hrlimits.h"
#include "live.h"
#include "redact.h"
#include "runs.h"
#include "spec.h"
#include "summary.h"
#include "selfmet.h"
#include "sweep.h"
#include "telesum.h"
#include "util.h"
#include "web_assets.h"

#define EXPORT_BLOCK (64u * 1024u)

/* Per-request state, kept in MHD's con_cls across upload calls. */
struct req {
	struct dynbuf body;
	int too_large;
	struct ds_upload *upload; /* POST /datasets: the body streams to a file instead */
	struct ds_create create;  /* POST /datasets: its query, checked as it arrived */
	struct auth_req auth;     /* who asks (auth_admit on the first call) */
	/* for the daemon's metrics (selfmet.h): when it began, its route
	 * pattern, method and the status it was answered with */
	int64_t t0;
	const char *route;
	char method[8];
	unsigned status;
	unsigned long long id; /* the request's number, for the access log */
	char path[256];        /* its path, for the access log (truncated) */
};

static unsigned long long request_counter;

/* The status of the answer queued on this thread during the current call
 * of on_request (every answer goes through api_queue_response). */
static _Thread_local unsigned answered_status;

enum MHD_Result api_queue_response(struct MHD_Connection *c, unsigned status,
				   struct MHD_Response *r)
{
	answered_status = status;
	return (MHD_queue_response)(c, status, r);
}

/* --- responses --------------------------------------------------------------- */

enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *type,
				  char *text /* taken */, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Steals body. */
enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(body);
	if (!s) {
		/* only reachable through a bug (e.g. invalid UTF-8 slipped through) */
		static const char fixed[] = "{\"error\":{\"code\":\"internal\",\"message\":"
					    "\"response could not be encoded\",\"field\":null}}";
		s = xstrdup(fixed);
		status = 500;
	}
	size_t n = strlen(s);
	return reply_text(c, status, "application/json", s, n);
}

/* The error answer {"error": {code, message, field}}, with one more header
 * when hname is not NULL (Retry-After, WWW-Authenticate). */
static enum MHD_Result reply_error_v(struct MHD_Connection *c, unsigned status, const char *code,
				     const char *field, const char *hname, const char *hvalue,
				     const char *fmt, va_list ap)
{
	char msg[512], fld[256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	/* messages quote client input (URLs, field names), possibly truncated
	 * mid-character: JSON needs valid UTF-8 */
	utf8_sanitize(msg);
	snprintf(fld, sizeof fld, "%s", field ? field : "");
	utf8_sanitize(fld);
	json_t *e = json_pack("{s:{s:s, s:s, s:o}}", "error", "code", code, "message", msg,
			      "field", fld[0] ? json_string(fld) : json_null());
	if (!hname)
		return reply_json(c, status, e);
	char *text = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	if (!text)
		return reply_internal(c, "the answer could not be encoded");
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, hname, hvalue);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
			    const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ret = reply_error_v(c, status, code, field, NULL, NULL, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result reply_error_header(struct MHD_Connection *c, unsigned status, const char *code,
				   const char *hname, const char *hvalue, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ret = reply_error_v(c, status, code, NULL, hname, hvalue, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result reply_retry(struct MHD_Connection *c, unsigned status, const char *code,
			    unsigned retry_after_s, const char *fmt, ...)
{
	char ra[16];
	snprintf(ra, sizeof ra, "%u", retry_after_s);
	va_list ap;
	va_start(ap, fmt);
	enum MHD_Result ret =
		reply_error_v(c, status, code, NULL, MHD_HTTP_HEADER_RETRY_AFTER, ra, fmt, ap);
	va_end(ap);
	return ret;
}

enum MHD_Result reply_internal(struct MHD_Connection *c, const char *err)
{
	hlog(LOG_ERROR, "api", "internal error: %s\n", err);
	return reply_error(c, 500, "internal", NULL, "internal error: %s", err);
}

const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* --- handlers ------------------------------------------------------------------ */

/* POST /backups: a backup into a new directory under --backup-dir, named
 * by the time (admin; docs/operations.md, "Backups") */
static enum MHD_Result h_backup(struct call *k)
{
	if (k->body_len && !(k->body_len == 2 && memcmp(k->body, "{}", 2) == 0))
		return reply_error(k->conn, 400, "invalid_value", NULL,
				   "a backup takes no parameters: send no body, or {}");
	if (mkdir(k->a->o.backup_dir, 0700) < 0 && errno != EEXIST)
		return reply_internal(k->conn, "cannot create the backup directory");
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	char *dest = NULL;
	struct stat st;
	for (int i = 0; i < 100; i++) { /* a second one within the same second */
		free(dest);
		dest = i ? xasprintf("%s/%s-%d", k->a->o.backup_dir, stamp, i)
			 : xasprintf("%s/%s", k->a->o.backup_dir, stamp);
		if (stat(dest, &st) < 0)
			break;
	}
	json_t *info = NULL;
	char err[HR_ERRLEN];
	int rc = backup_make(k->a->store, dest, &info, err);
	free(dest);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 201, info);
}

/* GET /metrics: the daemon's own, in the Prometheus text format */
static enum MHD_Result h_metrics(struct call *k)
{
	char *text = selfmet_render(k->a->store);
	return reply_text(k->conn, 200, "text/plain; version=0.0.4; charset=utf-8", text,
			  strlen(text));
}

/* Readiness: the store answers and takes writes, the disk is above its
 * floor, the run loop is alive. 200 or 503, with each check. */
#define READY_RUNNER_IDLE_S 300.0
static enum MHD_Result h_readyz(struct call *k)
{
	int q, r, ready = 1;
	char why[HR_ERRLEN] = "", msg[200] = "";
	json_t *checks = json_object();
	if (runs_counts(k->a->store, &q, &r) < 0) {
		ready = 0;
		json_object_set_new(checks, "store", json_string("the store cannot be read"));
	} else if (store_commit_status(k->a->store, NULL, msg, sizeof msg)) {
		ready = 0;
		json_object_set_new(checks, "store",
				    json_sprintf("the last store commit failed: %s", msg));
	} else {
		json_object_set_new(checks, "store", json_string("ok"));
	}
	if (disk_check_floor(why) < 0) {
		ready = 0;
		json_object_set_new(checks, "disk", json_string(why));
	} else {
		json_object_set_new(checks, "disk", json_string("ok"));
	}
	double idle = selfmet_runner_idle_s();
	if (idle > READY_RUNNER_IDLE_S) {
		ready = 0;
		json_object_set_new(checks, "runner",
				    json_sprintf("the run loop has shown no sign of life for %.0f s",
						 idle > 1e8 ? -1.0 : idle));
	} else {
		json_object_set_new(checks, "runner", json_string("ok"));
	}
	return reply_json(k->conn, ready ? 200 : 503,
			  json_pack("{s:b, s:o}", "ready", ready, "checks", checks));
}

static enum MHD_Result h_healthz(struct call *k)
{
	int q, r;
	if (runs_counts(k->a->store, &q, &r) < 0)
		return reply_internal(k->conn, "cannot read the run queue");
	/* still 200 (liveness): a degraded store is said, with why (disk.h) */
	json_t *store = disk_store_health(k->a->store);
	json_t *h = json_pack("{s:s, s:s, s:i, s:i}", "status", store ? "degraded" : "ok",
			      "version", HEADROOM_VERSION, "queued", q, "running", r);
	if (store)
		json_object_set_new(h, "store", store);
	return reply_json(k->conn, 200, h);
}

/* A URL whose host is a literal address the allow-list refuses (or whose
 * port it does not list) is refused at submission, naming field; names are
 * judged when connecting (docs/security.md, "Targets"). 0 or -1. */
static int url_refused(const struct netallow *allow, const char *url, char *field,
		       size_t field_len, const char *name, char *why)
{
	if (!allow || !url || netallow_check_url(allow, url, why, 200) != 0)
		return 0;
	snprintf(field, field_len, "%s", name);
	return -1;
}

static int spec_targets_refused(const struct netallow *allow, const struct spec *sp,
				char *field, size_t field_len, char *why)
{
	if (!sp->target.mock &&
	    url_refused(allow, sp->target.url, field, field_len, "target.url", why) < 0)
		return -1;
	json_t *lists[] = {sp->telemetry.dcgm_urls, sp->telemetry.metrics_urls};
	const char *names[] = {"telemetry.dcgm_urls", "telemetry.metrics_urls"};
	for (int l = 0; l < 2; l++) {
		size_t i;
		json_t *u;
		json_array_foreach(lists[l], i, u) {
			char name[64];
			snprintf(name, sizeof name, "%s[%zu]", names[l], i);
			if (url_refused(allow, json_string_value(u), field, field_len, name, why) < 0)
				return -1;
		}
	}
	return 0;
}

/* The caller's quotas against the spec (docs/security.md, "Quotas"): 0, or
 * -1 with the field and a message. */
int quota_refused(const struct auth_quota *q, const struct spec *sp, const char **field,
			 char *msg, size_t len)
{
	const struct spec_load *ld = &sp->load;
	if (q->max_rate > 0 && ld->mode == SPEC_LOAD_RATE && ld->rate > q->max_rate) {
		*field = "load.rate";
		snprintf(msg, len, "'load.rate' %g is above this token's max_rate %g", ld->rate,
			 q->max_rate);
		return -1;
	}
	if (q->max_concurrency > 0) {
		long long c = ld->mode == SPEC_LOAD_CONCURRENCY ? ld->concurrency : ld->max_concurrency;
		if (c <= 0 || c > q->max_concurrency) {
			*field = ld->mode == SPEC_LOAD_CONCURRENCY ? "load.concurrency"
								  : "load.max_concurrency";
			snprintf(msg, len, "'%s' must be given and at most this token's "
					   "max_concurrency %lld", *field, q->max_concurrency);
			return -1;
		}
	}
	/* a run is bounded by time or by a count: each bound within its
	 * quota, and a token with only one of the two quotas must use that one */
	if (q->max_duration_s > 0 && (ld->duration_s > q->max_duration_s ||
				      (ld->duration_s <= 0 && q->max_requests <= 0))) {
		*field = "load.duration_s";
		snprintf(msg, len, "'load.duration_s' must be given and at most this token's "
				   "max_duration_s %g", q->max_duration_s);
		return -1;
	}
	if (q->max_requests > 0 && (ld->requests > q->max_requests ||
				    (ld->requests <= 0 && q->max_duration_s <= 0))) {
		*field = "load.requests";
		snprintf(msg, len, "'load.requests' must be given and at most this token's "
				   "max_requests %lld", q->max_requests);
		return -1;
	}
	return 0;
}

/* A field name under a prefix ("spec." for a sweep's spec). */
#define PF_LEN 320
static const char *pf(const char *prefix, const char *field, char *buf)
{
	snprintf(buf, PF_LEN, "%.8s%.300s", prefix, field);
	return buf;
}

/* What POST /runs checks of a parsed spec beyond its own rules: secrets,
 * credentials, the allow-list, the dataset it names (whose content it
 * records in the spec). 0: admitted; -1: *reply answered (fields under
 * prefix) and the spec released. */
int api_admit_spec(struct call *k, struct spec *spec, const char *prefix, enum MHD_Result *reply)
{
	char err[HR_ERRLEN], pfb[PF_LEN];
	/* credentials come from declared secrets only (docs/security.md#secrets):
	 * never from the daemon's environment by a name the caller chooses,
	 * and never as literal values, which would be stored and shown */
	if (spec->target.api_key_env) {
		spec_release(spec);
		*reply = reply_error(k->conn, 400, "invalid_value",
		                     pf(prefix, "target.api_key_env", pfb),
		                     "API keys come from secrets the daemon declares: name one as "
		                     "'target.api_key_secret' (headroomd --secret)");
		return -1;
	}
	if (spec->target.api_key_secret) {
		const char *url = json_string_value(
		    json_object_get(json_object_get(spec->json, "target"), "url"));
		/* target.mock: no url yet (the host is checked when the run starts) */
		if (secrets_allow(k->a->o.secrets, spec->target.api_key_secret, url, err,
		                  sizeof err) < 0) {
			spec_release(spec);
			const char *colon = strchr(err, ':');
			char fld[32];
			snprintf(fld, sizeof fld, "%.*s", colon ? (int)(colon - err) : 0, err);
			*reply = reply_error(k->conn, 400, "invalid_value", pf(prefix, fld, pfb),
			                     "%s", colon ? colon + 2 : err);
			return -1;
		}
	}
	char cred[300];
	if (redact_spec_find(spec->json, cred, sizeof cred)) {
		spec_release(spec);
		*reply =
		    reply_error(k->conn, 400, "invalid_value", pf(prefix, cred, pfb),
		                "'%s' looks like a credential (a sensitive header, URL user-info "
		                "or a token-like query parameter), which would be stored and shown "
		                "with the run: send credentials through a declared secret "
		                "('target.api_key_secret')",
		                cred);
		return -1;
	}
	char tfield[64], twhy[200];
	if (spec_targets_refused(k->a->o.allow, spec, tfield, sizeof tfield, twhy) < 0) {
		spec_release(spec);
		*reply = reply_error(k->conn, 400, "target_not_allowed", pf(prefix, tfield, pfb),
		                     "address not allowed: %s", twhy);
		return -1;
	}
	if (spec->workload.kind == SPEC_WL_DATASET) {
		/* the dataset must exist and suit the load; the stored spec names
		 * it by content too (sha256, format), for the run's history */
		struct dataset_ref ref;
		int dr = datasets_ref(k->a->store, spec->workload.dataset_id, &ref, err);
		if (dr == -404) {
			spec_release(spec);
			*reply = reply_error(k->conn, 400, "invalid_value",
			                     pf(prefix, "workload.dataset.id", pfb),
			                     "no dataset %lld (GET /api/v1/datasets lists them)",
			                     (long long)spec->workload.dataset_id);
			return -1;
		}
		if (dr < 0) {
			spec_release(spec);
			*reply = reply_internal(k->conn, err);
			return -1;
		}
		/* a trace replays in trace mode only; a fixed schedule (entries
		 * with timestamps) in trace mode, or sampled like the others */
		int trace_data = ref.format == DS_MOONCAKE_TRACE;
		int trace_mode = spec->load.mode == SPEC_LOAD_TRACE;
		if (trace_data ? !trace_mode : trace_mode && !ref.timed) {
			dataset_ref_release(&ref);
			spec_release(spec);
			*reply = reply_error(
			    k->conn, 400, "invalid_value", pf(prefix, "load.mode", pfb),
			    trace_data ? "dataset %lld is a trace: replay it with "
			                 "'load.mode' \"trace\""
			               : "dataset %lld has no timestamps: 'load.mode' must "
			                 "be \"concurrency\" or \"rate\"",
			    (long long)spec->workload.dataset_id);
			return -1;
		}
		json_t *d = json_object_get(json_object_get(spec->json, "workload"), "dataset");
		/* a spec taken from an earlier run names its dataset by content
		 * too: the id must still hold those bytes, read that way */
		const char *want = json_string_value(json_object_get(d, "sha256"));
		const char *wfmt = json_string_value(json_object_get(d, "format"));
		if ((want && *want && strcmp(want, ref.sha256) != 0) ||
		    (wfmt && *wfmt && strcmp(wfmt, ds_format_name(ref.format)) != 0)) {
			int sha_bad = want && *want && strcmp(want, ref.sha256) != 0;
			long long ds_id = (long long)spec->workload.dataset_id;
			dataset_ref_release(&ref);
			spec_release(spec);
			*reply = reply_error(
			    k->conn, 400, "invalid_value",
			    pf(prefix,
			       sha_bad ? "workload.dataset.sha256" : "workload.dataset.format",
			       pfb),
			    "dataset %lld is not the one this spec names (its %s differs)", ds_id,
			    sha_bad ? "sha256" : "format");
			return -1;
		}
		json_object_set_new(d, "sha256", json_string(ref.sha256));
		json_object_set_new(d, "format", json_string(ds_format_name(ref.format)));
		if (!json_object_get(d, "sampling")) /* the default, by the format */
			json_object_set_new(
			    d, "sampling",
			    json_string(ref.format == DS_RANDOM_POOL ? "random" : "sequential"));
		dataset_ref_release(&ref);
	}
	return 0;
}

static enum MHD_Result h_create(struct call *k)
{
	struct spec spec;
	struct spec_error se;
	char err[HR_ERRLEN];
	if (spec_parse(k->body, k->body_len, k->a->o.default_workers, &spec, &se) < 0)
		return reply_error(k->conn, 400, se.code, se.field, "%s", se.message);
	enum MHD_Result reply;
	if (api_admit_spec(k, &spec, "", &reply) < 0)
		return reply;
	int64_t ids[HR_MAX_REPEAT], group = 0;
	int count = spec.repeat.count > 1 ? spec.repeat.count : 1;
	const char *qfield = NULL;
	char qmsg[200];
	if (k->auth && quota_refused(&k->auth->quota, &spec, &qfield, qmsg, sizeof qmsg) < 0) {
		spec_release(&spec);
		return reply_error(k->conn, 403, "quota_exceeded", qfield, "%s", qmsg);
	}
	struct submitter by = {.who = k->auth ? k->auth->who : NULL,
			       .max_queued = k->auth ? k->auth->quota.max_queued : 0};
	int queued = 0;
	int rc = history_create_runs(k->a->store, spec.json, count, spec.repeat.cooldown_s,
				     k->a->o.max_queued_runs, &by, &queued, ids, &group, err);
	spec_release(&spec);
	if (rc == -429)
		return reply_error(k->conn, 429, "quota_exceeded", "max_queued",
				   "this token has %lld run(s) queued and its max_queued is %lld: "
				   "this submission of %d is refused; retry when they have started",
				   by.queued, by.max_queued, count);
	if (rc == -503)
		return reply_retry(k->conn, 503, "queue_full", HR_QUEUE_RETRY_AFTER_S,
				   "%d run(s) are queued and at most %d may be: this submission "
				   "of %d is refused; retry when runs have ended, or cancel queued "
				   "ones",
				   queued, k->a->o.max_queued_runs, count);
	if (rc < 0)
		return reply_internal(k->conn, err);
	runner_kick(k->a->runner);
	int64_t id = ids[0];
	char url[64];
	snprintf(url, sizeof url, "/api/v1/runs/%lld", (long long)id);
	json_t *ans = json_pack("{s:I, s:s, s:s}", "id", (json_int_t)id, "state", "queued", "url",
				url);
	if (group) {
		json_t *all = json_array();
		for (int i = 0; i < count; i++)
			json_array_append_new(all, json_integer(ids[i]));
		json_object_set_new(ans, "group_id", json_integer(group));
		json_object_set_new(ans, "run_ids", all);
	}
	char *s = json_dumps(ans, JSON_COMPACT);
	json_decref(ans);
	if (!s)
		return reply_internal(k->conn, "the answer could not be encoded");
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s,
								 MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, url);
	enum MHD_Result ret = MHD_queue_response(k->conn, 201, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result not_found(struct call *k)
{
	return reply_error(k->conn, 404, "not_found", "id", "no run with id %lld",
			   (long long)k->id);
}

int api_run_get(struct call *k, int with_spec, json_t **run, enum MHD_Result *ret)
{
	json_t *r;
	char err[HR_ERRLEN];
	int rc = runs_get(k->a->store, k->id, with_spec, &r, err);
	if (rc < 0) {
		*ret = rc == -404 ? not_found(k) : reply_internal(k->conn, err);
		return -1;
	}
	if (run)
		*run = r;
	else
		json_decref(r);
	return 0;
}

/* GET /runs/{id}: the run's members, then its spec and summary spliced in
 * as stored. Parsing and re-encoding them was most of the answer's cost
 * (~0.9 ms of CPU for a 14 KB run, on the same cores as the workers while
 * a client polls; docs/performance.md, section 4). */
static enum MHD_Result h_get(struct call *k)
{
	json_t *out;
	char *spec, *summary, err[HR_ERRLEN];
	int rc = runs_get_text(k->a->store, k->id, &out, &spec, &summary, err);
	if (rc < 0)
		return rc == -404 ? not_found(k) : reply_internal(k->conn, err);
	auth_run_members(k->a->store, k->id, out);
	card_run_member(k->a->store, k->id, out);
	char *head = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(out);
	size_t n = head ? strlen(head) : 0;
	if (n < 2 || head[n - 1] != '}') { /* a member jansson could not encode */
		free(head);
		free(spec);
		free(summary);
		return reply_json(k->conn, 200, NULL);
	}
	struct dynbuf b;
	dynbuf_init(&b, n + (spec ? strlen(spec) : 4) + (summary ? strlen(summary) : 4) + 32);
	dynbuf_add(&b, head, n - 1);
	dynbuf_addstr(&b, n > 2 ? ",\"spec\":" : "\"spec\":");
	dynbuf_addstr(&b, spec ? spec : "null");
	dynbuf_addstr(&b, ",\"summary\":");
	dynbuf_addstr(&b, summary ? summary : "null");
	dynbuf_addstr(&b, "}");
	free(head);
	free(spec);
	free(summary);
	size_t len;
	char *text = dynbuf_take(&b, &len);
	return reply_text(k->conn, 200, "application/json", text, len);
}

/* GET /runs/{id}/card: the run's credibility card (card.h, docs/card.md). */
static enum MHD_Result h_card(struct call *k)
{
	json_t *run;
	enum MHD_Result ret;
	if (api_run_get(k, 0, &run, &ret) < 0)
		return ret;
	json_t *c = card_read(k->a->store, k->id);
	json_t *out = card_view(c, json_object_get(run, "labels"));
	json_decref(c);
	json_decref(run);
	json_object_set_new(out, "run_id", json_integer((json_int_t)k->id));
	return reply_json(k->conn, 200, out);
}

static enum MHD_Result h_cancel(struct call *k)
{
	const char *state;
	char err[HR_ERRLEN];
	int rc = runs_cancel(k->a->store, k->id, &state, err);
	if (rc == -404)
		return not_found(k);
	if (rc == -409)
		return reply_error(k->conn, 409, "conflict", NULL,
				   "run %lld has already finished (%s)", (long long)k->id, state);
	if (rc < 0)
		return reply_internal(k->conn, err);
	auth_set_cancelled_by(k->a->store, k->id, k->auth->who);
	sweep_run_finished(k->a->store, k->id); /* a queued run of a sweep ends here */
	if (strcmp(state, RUN_CANCELLED) == 0) /* a queued run: its live streams end too */
		live_end(k->id, RUN_CANCELLED);
	if (strcmp(state, RUN_RUNNING) == 0)
		runner_cancel(k->a->runner, k->id);
	return reply_json(k->conn, 202,
			  json_pack("{s:I, s:s, s:b}", "id", (json_int_t)k->id, "state", state,
				    "cancel_requested", 1));
}

static int want_format(struct call *k, const char *const *allowed, const char **fmt)
{
	const char *f = arg(k->conn, "format");
	*fmt = allowed[0];
	if (!f)
		return 0;
	for (const char *const *a = allowed; *a; a++)
		if (strcmp(f, *a) == 0) {
			*fmt = *a;
			return 0;
		}
	return -1;
}

static enum MHD_Result h_summary(struct call *k)
{
	static const char *const fmts[] = {"json", "csv", NULL};
	const char *fmt;
	if (want_format(k, fmts, &fmt) < 0)
		return reply_error(k->conn, 400, "invalid_value", "format",
				   "'format' must be json or csv");
	int rc;
	char *text = runs_summary_text(k->a->store, k->id, &rc);
	if (rc == -404)
		return not_found(k);
	if (rc == -409)
		return reply_error(k->conn, 409, "not_ready", NULL,
				   "run %lld has no summary yet", (long long)k->id);
	if (!text)
		return reply_internal(k->conn, "cannot read the summary");
	if (strcmp(fmt, "json") == 0)
		return reply_text(k->conn, 200, "application/json", text, strlen(text));
	json_t *j = json_loads(text, 0, NULL);
	free(text);
	if (!j)
		return reply_internal(k->conn, "stored summary is not valid JSON");
	char *csv = summary_to_csv(j);
	json_decref(j);
	return reply_text(k->conn, 200, "text/csv; charset=utf-8", csv, strlen(csv));
}

/* A run's time series (telemetry, client samples), exported as one JSON
 * document {"run_id", "t0_wall_ns", <extra members>, "samples": [...]} or
 * as CSV, streamed from a cursor. */
struct series {
	const char *what;  /* for the error when it cannot be opened */
	size_t buf_bound;  /* the row buffer's bound (the longest row, and a block) */
	const char *csv_header;
	void *(*open)(struct store *s, int64_t run_id, int64_t t0_wall);
	int (*next)(void *cur, int csv, struct dynbuf *out);
	void (*close)(void *cur);
	/* extra JSON members after t0_wall_ns (",\"sources\":[...]"), or NULL */
	void (*json_extra)(struct store *s, int64_t run_id, struct dynbuf *out);
};

/* A streamed export: the response pulls rows from a cursor as the client
 * reads, so memory stays at one block whatever the run's size. Records and
 * the time series differ only in how the next row is appended (row_next). */
struct row_stream {
	struct rec_cursor *rec;   /* records export, or ... */
	void *cur;                /* ... a time series export (struct series) */
	const struct series *ser;
	enum export_format fmt;   /* records: JSONL or CSV */
	struct export_classes classes; /* records: the run's traffic classes */
	int csv;                  /* a time series: CSV, else one JSON document */
	struct dynbuf buf;
	size_t off;
	int rows, eof, failed;
};

/* Appends the next row to rs->buf: 1, 0 at the end, -1 on error. */
static int row_next(struct row_stream *rs)
{
	if (rs->rec) {
		const struct hr_record *r;
		int rc = rec_cursor_next(rs->rec, &r);
		if (rc == 1 && export_record_ex(&rs->buf, rs->fmt, r,
						export_class_name(&rs->classes, r->worker)) < 0)
			return -1;
		return rc;
	}
	if (!rs->csv && rs->rows)
		dynbuf_add(&rs->buf, ",", 1);
	size_t mark = rs->buf.len;
	int rc = rs->ser->next(rs->cur, rs->csv, &rs->buf);
	if (rc != 1 && !rs->csv) {
		if (rs->rows)
			rs->buf.len = mark - 1; /* the separator had nothing after it */
		dynbuf_addstr(&rs->buf, "]}\n");
	}
	return rc;
}

static ssize_t row_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct row_stream *rs = cls;
	while (rs->buf.len - rs->off < max && !rs->eof) {
		if (rs->off) { /* compact what was already sent */
			memmove(rs->buf.data, rs->buf.data + rs->off, rs->buf.len - rs->off);
			rs->buf.len -= rs->off;
			rs->off = 0;
		}
		int rc = row_next(rs);
		if (rc == 1) {
			rs->rows++;
		} else {
			rs->eof = 1;
			rs->failed = rc < 0;
		}
	}
	size_t avail = rs->buf.len - rs->off;
	if (avail == 0)
		return rs->failed ? MHD_CONTENT_READER_END_WITH_ERROR
				  : MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = avail < max ? avail : max;
	memcpy(out, rs->buf.data + rs->off, n);
	rs->off += n;
	return (ssize_t)n;
}

static void row_stream_free(void *cls)
{
	struct row_stream *rs = cls;
	rec_cursor_free(rs->rec);
	if (rs->ser)
		rs->ser->close(rs->cur);
	dynbuf_release(&rs->buf);
	free(rs);
}

/* Answers 200 with rs streamed (taking ownership of it). */
static enum MHD_Result reply_stream(struct MHD_Connection *c, struct row_stream *rs,
				    const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, EXPORT_BLOCK, row_stream_read, rs, row_stream_free);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* A streamed export's cursor outlives its handler, so it reads through a
 * reader of the export pool, never the API's (store.h): export_begin takes
 * one without waiting and binds it to this thread, so that the cursor's
 * store_reader() gets it; export_end binds the API's reader again and, if
 * no cursor kept the export reader, returns it. -1 when none is free: the
 * request is answered 503 busy (export_busy). */
static int export_begin(struct call *k, sqlite3 **api_db, sqlite3 **ex)
{
	*ex = store_export_reader(k->a->store);
	if (!*ex)
		return -1;
	*api_db = store_reader_bind(k->a->store, *ex);
	return 0;
}

static void export_end(struct call *k, sqlite3 *api_db, sqlite3 *ex, int kept)
{
	store_reader_bind(k->a->store, api_db);
	if (!kept)
		store_reader_put(k->a->store, ex);
}

static enum MHD_Result export_busy(struct call *k)
{
	return reply_retry(k->conn, 503, "busy", HR_RETRY_AFTER_S,
			   "all %d export readers are taken by downloads in progress: retry "
			   "in a moment",
			   store_export_readers(k->a->store));
}

static enum MHD_Result h_records(struct call *k)
{
	static const char *const fmts[] = {"jsonl", "csv", NULL};
	const char *fmt;
	if (want_format(k, fmts, &fmt) < 0)
		return reply_error(k->conn, 400, "invalid_value", "format",
				   "'format' must be jsonl or csv");
	enum MHD_Result ret;
	json_t *run;
	if (api_run_get(k, 1, &run, &ret) < 0)
		return ret;
	struct row_stream *rs = xcalloc(1, sizeof *rs);
	export_classes_of(json_object_get(run, "spec"), &rs->classes);
	json_decref(run);
	rs->fmt = strcmp(fmt, "csv") == 0 ? EXPORT_CSV : EXPORT_JSONL;
	dynbuf_init(&rs->buf, (size_t)HR_MAX_CHUNKS_PER_REQUEST * 24 + EXPORT_BLOCK * 2);
	sqlite3 *api_db, *ex;
	if (export_begin(k, &api_db, &ex) < 0) {
		row_stream_free(rs);
		return export_busy(k);
	}
	rs->rec = rec_cursor_open(k->a->store, k->id);
	export_end(k, api_db, ex, rs->rec != NULL);
	if (!rs->rec) {
		row_stream_free(rs);
		return reply_internal(k->conn, "cannot open the records");
	}
	if (rs->fmt == EXPORT_CSV)
		export_csv_header_ex(&rs->buf, rs->classes.n > 0);
	return reply_stream(k->conn, rs,
			    rs->fmt == EXPORT_CSV ? "text/csv; charset=utf-8"
						  : "application/x-ndjson");
}

static void *tele_open(struct store *s, int64_t id, int64_t t0)
{
	return tele_cursor_open(s, id, t0);
}

static int tele_next(void *cur, int csv, struct dynbuf *out)
{
	return tele_cursor_next(cur, csv, out);
}

static void tele_close(void *cur)
{
	tele_cursor_free(cur);
}

static void tele_sources_member(struct store *s, int64_t id, struct dynbuf *out)
{
	tele_export_members(s, id, out); /* sources, gpus, clock */
}

static void *client_open(struct store *s, int64_t id, int64_t t0)
{
	(void)t0;
	return client_cursor_open(s, id, 1);
}

static int client_next(void *cur, int csv, struct dynbuf *out)
{
	return client_cursor_next(cur, csv, out);
}

static void client_close(void *cur)
{
	client_cursor_free(cur);
}

static const struct series telemetry_series = {
    "the telemetry", (size_t)HR_MAX_SCRAPE_BYTES + EXPORT_BLOCK * 2, tele_csv_header,
    tele_open,	     tele_next,					     tele_close,
    tele_sources_member,
};

static const struct series client_series = {
    "the client samples", EXPORT_BLOCK * 4, client_csv_header, client_open,
    client_next,	  client_close,	    NULL,
};

static enum MHD_Result reply_series(struct call *k, const struct series *ser)
{
	static const char *const fmts[] = {"json", "csv", NULL};
	const char *fmt;
	if (want_format(k, fmts, &fmt) < 0)
		return reply_error(k->conn, 400, "invalid_value", "format",
				   "'format' must be json or csv");
	int64_t t0 = runs_t0_wall(k->a->store, k->id);
	if (t0 == -404)
		return not_found(k);
	if (t0 < 0)
		return reply_internal(k->conn, "cannot read the run");
	struct row_stream *rs = xcalloc(1, sizeof *rs);
	rs->csv = strcmp(fmt, "csv") == 0;
	dynbuf_init(&rs->buf, ser->buf_bound);
	sqlite3 *api_db, *ex;
	if (export_begin(k, &api_db, &ex) < 0) {
		row_stream_free(rs);
		return export_busy(k);
	}
	rs->cur = ser->open(k->a->store, k->id, t0);
	export_end(k, api_db, ex, rs->cur != NULL);
	if (!rs->cur) {
		row_stream_free(rs);
		char msg[64];
		snprintf(msg, sizeof msg, "cannot open %s", ser->what);
		return reply_internal(k->conn, msg);
	}
	rs->ser = ser;
	if (rs->csv) {
		dynbuf_addstr(&rs->buf, ser->csv_header);
	} else {
		dynbuf_printf(&rs->buf, "{\"run_id\":%lld,\"t0_wall_ns\":", (long long)k->id);
		if (t0)
			dynbuf_printf(&rs->buf, "%lld", (long long)t0);
		else
			dynbuf_addstr(&rs->buf, "null");
		if (ser->json_extra)
			ser->json_extra(k->a->store, k->id, &rs->buf);
		dynbuf_addstr(&rs->buf, ",\"samples\":[");
	}
	return reply_stream(k->conn, rs, rs->csv ? "text/csv; charset=utf-8" : "application/json");
}

static enum MHD_Result h_telemetry(struct call *k)
{
	return reply_series(k, &telemetry_series);
}

static enum MHD_Result h_client(struct call *k)
{
	return reply_series(k, &client_series);
}

static enum MHD_Result h_calib_create(struct call *k)
{
	json_error_t je;
	json_t *body = json_loadb(k->body, k->body_len, 0, &je);
	if (!body && k->body_len == 0)
		body = json_object(); /* every field has a default */
	if (!body)
		return reply_error(k->conn, 400, "invalid_json", "", "the body is not JSON: %s",
				   je.text);
	char field[256], msg[256];
	int64_t id;
	int rc = calib_create(k->a->store, body, &id, field, msg);
	json_decref(body);
	if (rc == -400)
		return reply_error(k->conn, 400, "invalid_value", field, "%s", msg);
	if (rc < 0)
		return reply_internal(k->conn, msg);
	runner_kick(k->a->runner);
	json_t *cal = calib_get(k->a->store, id);
	if (!cal)
		return reply_internal(k->conn, "cannot read the calibration back");
	return reply_json(k->conn, 201, cal);
}

static enum MHD_Result h_calib_list(struct call *k)
{
	long long limit = HR_DEFAULT_PAGE_LIMIT;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, HR_MAX_PAGE_LIMIT, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to %d", HR_MAX_PAGE_LIMIT);
	json_t *o = json_pack("{s:o}", "calibrations", calib_list(k->a->store, (int)limit));
	return reply_json(k->conn, 200, o);
}

static enum MHD_Result h_calib_get(struct call *k)
{
	json_t *cal = calib_get(k->a->store, k->id);
	if (!cal)
		return reply_error(k->conn, 404, "not_found", "id", "no calibration %lld",
				   (long long)k->id);
	return reply_json(k->conn, 200, cal);
}

/* --- datasets (docs/datasets.md) ------------------------------------------------------------ */

static enum MHD_Result dataset_not_found(struct call *k)
{
	return reply_error(k->conn, 404, "not_found", "id", "no dataset with id %lld",
			   (long long)k->id);
}

/* 400 invalid_dataset: the error names the line (or null) and the field. */
static enum MHD_Result reply_bad_dataset(struct MHD_Connection *c, const struct ds_error *de)
{
	json_t *e = json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "code", "invalid_dataset",
			      "message", de->message[0] ? de->message : "invalid dataset", "field",
			      de->field[0] ? json_string(de->field) : json_null(), "line",
			      de->line ? json_integer(de->line) : json_null());
	return reply_json(c, 400, e);
}

/* An optional length filter of the query: 1..HR_MAX_DATASET_TEXT. */
static int filter_arg(struct MHD_Connection *conn, const char *name, uint32_t *out, int *given)
{
	const char *s = arg(conn, name);
	long long v;
	*out = 0;
	if (!s)
		return 0;
	if (parse_int(s, 1, HR_MAX_DATASET_TEXT, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	*given = 1;
	return 0;
}

/* The query of POST /datasets into *c: 0, or -1 with the error reply
 * queued (*ret). Checked when the request arrives, before its body is
 * read; the handler takes the result (call.create). */
static int query_fail(enum MHD_Result *ret, enum MHD_Result r)
{
	*ret = r;
	return -1;
}

static int dataset_query(struct MHD_Connection *conn, struct ds_create *c, enum MHD_Result *ret)
{
	const char *f = arg(conn, "format");
	if (!f)
		return query_fail(ret, reply_error(conn, 400, "missing_field", "format",
				   "'format' is required: single_turn, multi_turn, random_pool, "
				   "mooncake_trace or sharegpt"));
	if (ds_format_parse(f, &c->format) < 0)
		return query_fail(ret, reply_error(conn, 400, "invalid_value", "format",
				   "'format' must be single_turn, multi_turn, random_pool, "
				   "mooncake_trace or sharegpt"));
	c->name = arg(conn, "name");
	if (c->name) {
		size_t n = strlen(c->name);
		int ok = n >= 1 && n <= HR_MAX_NAME_LEN;
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)c->name[i] >= 0x20 && c->name[i] != 0x7f;
		json_t *utf8 = ok ? json_string(c->name) : NULL; /* NULL: not UTF-8 */
		json_decref(utf8);
		if (!utf8)
			return query_fail(ret, reply_error(conn, 400, "invalid_value", "name",
					   "'name' must be 1 to %d bytes of UTF-8 text without "
					   "control characters",
					   HR_MAX_NAME_LEN));
	}
	static const char *const filters[] = {"min_prompt", "max_prompt", "min_reply", "max_reply"};
	uint32_t *dst[] = {&c->opts.min_prompt, &c->opts.max_prompt, &c->opts.min_reply,
			   &c->opts.max_reply};
	int given = 0;
	for (size_t i = 0; i < HR_ARRAY_LEN(filters); i++)
		if (filter_arg(conn, filters[i], dst[i], &given) < 0)
			return query_fail(ret, reply_error(conn, 400, "out_of_range", filters[i],
					   "'%s' must be an integer from 1 to %u", filters[i],
					   HR_MAX_DATASET_TEXT));
	const char *unit = arg(conn, "unit");
	if (unit && strcmp(unit, "chars") != 0 && strcmp(unit, "words") != 0)
		return query_fail(ret, reply_error(conn, 400, "invalid_value", "unit",
				   "'unit' must be chars or words"));
	c->opts.unit = unit && strcmp(unit, "words") == 0 ? DS_UNIT_WORDS : DS_UNIT_CHARS;
	if ((given || unit) && c->format != DS_SHAREGPT)
		return query_fail(ret, reply_error(conn, 400, "invalid_value", unit && !given ? "unit" : "format",
				   "length filters (min_prompt, max_prompt, min_reply, max_reply, "
				   "unit) apply to the sharegpt format only"));
	if (c->opts.max_prompt && c->opts.min_prompt > c->opts.max_prompt)
		return query_fail(ret, reply_error(conn, 400, "invalid_value", "max_prompt",
				   "'max_prompt' is below 'min_prompt'"));
	if (c->opts.max_reply && c->opts.min_reply > c->opts.max_reply)
		return query_fail(ret, reply_error(conn, 400, "invalid_value", "max_reply",
				   "'max_reply' is below 'min_reply'"));
	return 0;
}

static enum MHD_Result h_dataset_create(struct call *k)
{
	if (!k->upload || !k->create)
		return reply_internal(k->conn, "the upload was not kept");
	if (k->auth && k->auth->quota.max_dataset_mb > 0 &&
	    ds_upload_bytes(k->upload) > (uint64_t)k->auth->quota.max_dataset_mb << 20)
		return reply_error(k->conn, 413, "quota_exceeded", "max_dataset_mb",
				   "the upload is %llu bytes, above this token's max_dataset_mb %lld",
				   (unsigned long long)ds_upload_bytes(k->upload),
				   k->auth->quota.max_dataset_mb);
	json_t *out;
	struct ds_error de;
	char err[HR_ERRLEN];
	int rc = datasets_create(k->a->store, k->upload, k->create, &out, &de, err);
	if (rc == -400)
		return reply_bad_dataset(k->conn, &de);
	if (rc < 0)
		return reply_internal(k->conn, err);
	char url[64];
	snprintf(url, sizeof url, "/api/v1/datasets/%lld",
		 (long long)json_integer_value(json_object_get(out, "id")));
	char *s = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(out);
	if (!s)
		return reply_internal(k->conn, "the dataset could not be encoded");
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, url);
	enum MHD_Result ret = MHD_queue_response(k->conn, (unsigned)rc, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result h_dataset_list(struct call *k)
{
	long long limit = HR_DEFAULT_PAGE_LIMIT;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, HR_MAX_PAGE_LIMIT, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to %d", HR_MAX_PAGE_LIMIT);
	json_t *out;
	char err[HR_ERRLEN];
	if (datasets_list(k->a->store, (int)limit, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

static enum MHD_Result h_dataset_get(struct call *k)
{
	json_t *out;
	char err[HR_ERRLEN];
	int rc = datasets_get(k->a->store, k->id, &out, err);
	if (rc == -404)
		return dataset_not_found(k);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

static enum MHD_Result h_dataset_delete(struct call *k)
{
	int64_t run;
	char err[HR_ERRLEN];
	int rc = datasets_delete(k->a->store, k->id, &run, err);
	if (rc == -404)
		return dataset_not_found(k);
	if (rc == -409)
		return reply_error(k->conn, 409, "conflict", "id",
				   "dataset %lld is used by run %lld, which is queued or running: "
				   "cancel it or wait for it to end",
				   (long long)k->id, (long long)run);
	if (rc < 0)
		return reply_internal(k->conn, err);
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(k->conn, 204, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result h_dataset_entries(struct call *k)
{
	long long limit = 10, offset = 0;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, HR_MAX_DATASET_PREVIEW, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to %d", HR_MAX_DATASET_PREVIEW);
	const char *o = arg(k->conn, "offset");
	if (o && parse_int(o, 0, HR_MAX_DATASET_ENTRIES - 1, &offset) < 0)
		return reply_error(k->conn, 400, "out_of_range", "offset",
				   "'offset' must be an integer from 0 to %d",
				   HR_MAX_DATASET_ENTRIES - 1);
	json_t *out;
	char err[HR_ERRLEN];
	int rc = datasets_entries(k->a->store, k->id, (size_t)offset, (size_t)limit, &out, err);
	if (rc == -404)
		return dataset_not_found(k);
	if (rc < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

/* --- routing ---------------------------------------------------------------------- */

struct route {
	const char *method;
	const char *path; /* "{id}" matches a run id */
	enum MHD_Result (*fn)(struct call *k);
};

static const struct route routes[] = {
	{"GET", "/api/v1/healthz", h_healthz},
	{"GET", "/api/v1/readyz", h_readyz},
	{"POST", "/api/v1/backups", h_backup},
	{"GET", "/metrics", h_metrics},
	{"POST", "/api/v1/runs", h_create},
	{"GET", "/api/v1/runs", h_list},
	{"GET", "/api/v1/runs/{id}", h_get},
	{"PATCH", "/api/v1/runs/{id}", h_patch},
	{"DELETE", "/api/v1/runs/{id}", h_delete},
	{"POST", "/api/v1/runs/{id}/cancel", h_cancel},
	{"GET", "/api/v1/runs/{id}/summary", h_summary},
	{"GET", "/api/v1/runs/{id}/card", h_card},
	{"GET", "/api/v1/runs/{id}/records", h_records},
	{"GET", "/api/v1/runs/{id}/telemetry", h_telemetry},
	{"GET", "/api/v1/runs/{id}/client", h_client},
	{"GET", "/api/v1/runs/{id}/export", h_export},
	{"GET", "/api/v1/runs/{id}/timeseries", h_timeseries},
	{"GET", "/api/v1/runs/{id}/report.html", h_report},
	{"GET", "/api/v1/runs/{id}/distribution", h_distribution},
	{"GET", "/api/v1/runs/{id}/requests", h_requests},
	{"GET", "/api/v1/runs/{id}/live", h_live},
	{"POST", "/api/v1/calibrations", h_calib_create},
	{"GET", "/api/v1/calibrations", h_calib_list},
	{"GET", "/api/v1/calibrations/{id}", h_calib_get},
	{"POST", "/api/v1/sweeps", h_sweep_create},
	{"GET", "/api/v1/sweeps", h_sweep_list},
	{"GET", "/api/v1/sweeps/{id}", h_sweep_get},
	{"POST", "/api/v1/sweeps/{id}/cancel", h_sweep_cancel},
	{"GET", "/api/v1/groups/{id}", h_group},
	{"GET", "/api/v1/compare", h_compare},
	{"GET", "/api/v1/series", h_series},
	{"GET", "/api/v1/baselines", h_baseline_list},
	{"GET", "/api/v1/baselines/{name}", h_baseline_get},
	{"PUT", "/api/v1/baselines/{name}", h_baseline_put},
	{"DELETE", "/api/v1/baselines/{name}", h_baseline_delete},
	{"POST", "/api/v1/imports", h_import},
	{"POST", "/api/v1/datasets", h_dataset_create},
	{"GET", "/api/v1/datasets", h_dataset_list},
	{"GET", "/api/v1/datasets/{id}", h_dataset_get},
	{"DELETE", "/api/v1/datasets/{id}", h_dataset_delete},
	{"GET", "/api/v1/datasets/{id}/entries", h_dataset_entries},
	{"POST", "/api/v1/tokens", auth_h_token_create},
	{"GET", "/api/v1/tokens", auth_h_token_list},
	{"DELETE", "/api/v1/tokens/{id}", auth_h_token_revoke},
	{"GET", "/api/v1/audit", auth_h_audit},
	{"GET", "/api/v1/agents", h_agent_list},
	{"POST", "/api/v1/agents", h_agent_enroll},
	{"DELETE", "/api/v1/agents/{name}", h_agent_revoke},
};

/* The role each route needs (auth.h, docs/security.md): every GET not
 * listed needs read, any other method not listed needs admin; the
 * dashboard's files, outside /api/, need none. */
static const struct {
	const char *method, *path;
	int role;
} route_roles[] = {
	{"GET", "/api/v1/healthz", AUTH_NONE},
	{"GET", "/api/v1/readyz", AUTH_NONE},
	{"POST", "/api/v1/runs", AUTH_SUBMIT},
	{"POST", "/api/v1/runs/{id}/cancel", AUTH_SUBMIT},
	{"PATCH", "/api/v1/runs/{id}", AUTH_SUBMIT},
	{"POST", "/api/v1/datasets", AUTH_SUBMIT},
	{"POST", "/api/v1/imports", AUTH_SUBMIT},
	{"POST", "/api/v1/calibrations", AUTH_SUBMIT},
	{"POST", "/api/v1/sweeps", AUTH_SUBMIT},
	{"POST", "/api/v1/sweeps/{id}/cancel", AUTH_SUBMIT},
	{"PUT", "/api/v1/baselines/{name}", AUTH_SUBMIT},
	{"DELETE", "/api/v1/runs/{id}", AUTH_ADMIN},
	{"DELETE", "/api/v1/datasets/{id}", AUTH_ADMIN},
	{"DELETE", "/api/v1/baselines/{name}", AUTH_ADMIN},
	{"GET", "/api/v1/tokens", AUTH_ADMIN},
	{"POST", "/api/v1/tokens", AUTH_ADMIN},
	{"DELETE", "/api/v1/tokens/{id}", AUTH_ADMIN},
	{"GET", "/api/v1/audit", AUTH_ADMIN},
	{"POST", "/api/v1/agents", AUTH_ADMIN},
	{"DELETE", "/api/v1/agents/{name}", AUTH_ADMIN},
};

void api_list_routes(FILE *out)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(routes); i++)
		fprintf(out, "%s %s\n", routes[i].method, routes[i].path);
}

static int route_role(const char *method, const char *url)
{
	if (strcmp(url, "/metrics") == 0) /* the daemon's own metrics: read */
		return strcmp(method, "GET") == 0 ? AUTH_READ : AUTH_ADMIN;
	if (strncmp(url, "/api/", 5) != 0)
		return AUTH_NONE;
	for (size_t i = 0; i < HR_ARRAY_LEN(route_roles); i++) {
		int64_t id;
		if (strcmp(route_roles[i].method, method) == 0 &&
		    api_match(route_roles[i].path, url, &id, NULL))
			return route_roles[i].role;
	}
	return strcmp(method, "GET") == 0 ? AUTH_READ : AUTH_ADMIN;
}

/* One embedded file. Scripts and styles come only from the daemon itself
 * (no inline script, no other origin): Content-Security-Policy. */
static int reply_asset(struct MHD_Connection *conn, const struct web_asset *w,
		       enum MHD_Result *ret)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(w->size, (void *)w->data,
								 MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, w->type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; script-src 'self'; style-src 'self' "
				"'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	*ret = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	return 1;
}

/* The dashboard: static files compiled in from web/, outside /api/v1. Any
 * other GET that accepts HTML (a deep link: /runs/42, /compare?base=1&head=2)
 * gets the page itself, which routes on its URL. */
static int serve_asset(struct MHD_Connection *conn, const char *url, const char *method,
		       enum MHD_Result *ret)
{
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return 0;
	if (strcmp(url, "/") == 0)
		url = "/index.html";
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);
	int html = accept && strstr(accept, "text/html");
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < web_assets_count; i++) {
			if (strcmp(web_assets[i].path, url) == 0)
				return reply_asset(conn, &web_assets[i], ret);
		}
		if (!html)
			return 0;
		url = "/index.html";
	}
	return 0;
}

static enum MHD_Result dispatch(struct api *a, struct MHD_Connection *conn, const char *url,
				const char *method, struct req *rq)
{
	enum MHD_Result ret;
	if (strncmp(url, "/api/", 5) != 0 && strcmp(url, "/metrics") != 0 &&
	    serve_asset(conn, url, method, &ret))
		return ret;
	struct call k = {.a = a, .conn = conn, .auth = &rq->auth};
	int path_known = 0;
	for (size_t i = 0; i < HR_ARRAY_LEN(routes); i++) {
		int64_t id = 0;
		if (!api_match(routes[i].path, url, &id, k.name))
			continue;
		path_known = 1;
		if (strcmp(routes[i].method, method) != 0)
			continue;
		k.id = id;
		if (strstr(routes[i].path, "{id}") && id <= 0)
			return reply_error(conn, 404, "not_found", "id",
					   "'%s' does not end in a valid id", url);
		k.body = rq->body.data ? rq->body.data : "";
		k.body_len = rq->body.len;
		k.upload = rq->upload;
		k.create = rq->upload ? &rq->create : NULL;
		/* admission: one reader for the whole request, waited for within
		 * a bound; a handler never waits on the pool itself (store.h) */
		sqlite3 *db = store_reader_timed(a->store, a->o.reader_wait_ms);
		if (!db)
			return reply_retry(conn, 503, "busy", HR_RETRY_AFTER_S,
					   "no database reader came free within %d ms: the daemon "
					   "is busy; retry in a moment",
					   a->o.reader_wait_ms);
		store_reader_bind(a->store, db);
		ret = routes[i].fn(&k);
		store_reader_unbind(a->store);
		return ret;
	}
	if (path_known)
		return reply_error(conn, 405, "method_not_allowed", NULL,
				   "%s is not allowed on %s", method, url);
	return reply_error(conn, 404, "not_found", NULL, "no such route: %s", url);
}

static enum MHD_Result reply_too_large(struct MHD_Connection *conn, int dataset, size_t bound)
{
	if (dataset)
		return reply_error(conn, 413, "body_too_large", NULL,
				   "the dataset is larger than %u bytes", HR_MAX_DATASET_BYTES);
	return reply_error(conn, 413, "body_too_large", NULL,
			   "request body is larger than %zu bytes", bound);
}

/* The route pattern a request is counted under (GET /metrics). */
static const char *route_label(const char *url, const char *method)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(routes); i++) {
		int64_t id;
		char name[HR_MAX_LABEL_LEN + 1];
		if (strcmp(routes[i].method, method) == 0 && api_match(routes[i].path, url, &id, name))
			return routes[i].path;
	}
	return strncmp(url, "/api/", 5) != 0 ? "dashboard" : "other";
}

static enum MHD_Result on_request_inner(void *cls, struct MHD_Connection *conn, const char *url,
					const char *method, const char *upload_data,
					size_t *upload_data_size, void **con_cls)
{
	struct api *a = cls;
	struct req *rq = *con_cls;
	if (!rq) {
		rq = xcalloc(1, sizeof *rq);
		/* a dataset upload has its own, larger bound and goes to a file;
		 * an import (a result file) has a larger bound in memory */
		int64_t unused;
		int dataset = strcmp(method, "POST") == 0 &&
			      api_match("/api/v1/datasets", url, &unused, NULL);
		int import = strcmp(method, "POST") == 0 &&
			     api_match("/api/v1/imports", url, &unused, NULL);
		size_t bound = import ? HR_MAX_IMPORT_BYTES : HR_MAX_BODY_BYTES;
		dynbuf_init(&rq->body, bound);
		*con_cls = rq;
		rq->t0 = mono_ns();
		rq->route = route_label(url, method);
		rq->id = __atomic_add_fetch(&request_counter, 1, __ATOMIC_RELAXED);
		snprintf(rq->path, sizeof rq->path, "%s", url);
		snprintf(rq->method, sizeof rq->method, "%s", method);
		/* Host, Origin, token, role and Content-Type, before a byte of
		 * the body is read (auth.h) */
		enum MHD_Result aret;
		int json_body = !dataset && strncmp(url, "/api/", 5) == 0 &&
				(strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
				 strcmp(method, "PATCH") == 0);
		if (auth_admit(__atomic_load_n(&a->auth, __ATOMIC_ACQUIRE), a->store, a->o.reader_wait_ms, conn, method, url,
			       route_role(method, url), json_body, &rq->auth, &aret) < 0)
			return aret;
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		long long n;
		if (cl && parse_int(cl, 0, INT64_MAX, &n) == 0 &&
		    n > (long long)(dataset ? HR_MAX_DATASET_BYTES : bound))
			return reply_too_large(conn, dataset, bound);
		if (dataset) {
			/* a bad query is answered before a byte of the body is read */
			enum MHD_Result qret;
			if (dataset_query(conn, &rq->create, &qret) < 0)
				return qret;
			char err[HR_ERRLEN];
			rq->upload = ds_upload_begin(a->store, err);
			if (!rq->upload)
				return reply_internal(conn, err);
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		/* a body that outgrows the bound (chunked uploads have no length
		 * up front) is read and discarded; the 413 goes on the final call */
		if (rq->upload) {
			if (!rq->too_large && ds_upload_bytes(rq->upload) + *upload_data_size >
						  HR_MAX_DATASET_BYTES) {
				rq->too_large = 1;
				ds_upload_discard(rq->upload);
			} else if (!rq->too_large) {
				ds_upload_write(rq->upload, upload_data, *upload_data_size);
			}
		} else if (!rq->too_large &&
			   dynbuf_add(&rq->body, upload_data, *upload_data_size) < 0) {
			rq->too_large = 1;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (rq->too_large)
		return reply_too_large(conn, rq->upload != NULL, rq->body.max);
	return dispatch(a, conn, url, method, rq);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	answered_status = 0;
	enum MHD_Result ret =
	    on_request_inner(cls, conn, url, method, upload_data, upload_data_size, con_cls);
	struct req *rq = *con_cls;
	if (rq && answered_status)
		rq->status = answered_status;
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;
	if (!rq)
		return;
	if (rq->status) {
		double secs = (double)(mono_ns() - rq->t0) / 1e9;
		selfmet_http(rq->route ? rq->route : "other", rq->method, rq->status, secs);
		if (log_access_enabled()) {
			char client[INET6_ADDRSTRLEN] = "?";
			const union MHD_ConnectionInfo *ci =
			    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
			if (ci && ci->client_addr) {
				const struct sockaddr *sa = ci->client_addr;
				if (sa->sa_family == AF_INET)
					inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
						  client, sizeof client);
				else if (sa->sa_family == AF_INET6)
					inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
						  client, sizeof client);
			}
			hlog_access(rq->id, client, rq->auth.who[0] ? rq->auth.who : "local", rq->method,
				    rq->path, rq->status, secs);
		}
	}
	auth_done(((struct api *)cls)->store, conn, &rq->auth);
	dynbuf_release(&rq->body);
	ds_upload_free(rq->upload);
	free(rq);
	*con_cls = NULL;
}

/* --- lifecycle ------------------------------------------------------------------------ */

int api_start(struct store *s, struct runner *r, const struct api_opts *o, struct api **out,
	      char *err)
{
	char host[256];
	int port;
	if (parse_hostport(o->listen, host, &port, err) < 0)
		return -1;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char portstr[8];
	snprintf(portstr, sizeof portstr, "%d", port);
	int gai = getaddrinfo(host, portstr, &hints, &ai);
	if (gai != 0)
		return errf(err, "cannot resolve %s: %s", host, gai_strerror(gai));
	struct api *a = xcalloc(1, sizeof *a);
	a->store = s;
	a->runner = r;
	a->o = *o;
	if (a->o.reader_wait_ms <= 0)
		a->o.reader_wait_ms = HR_READER_WAIT_MS;
	if (a->o.max_connections <= 0)
		a->o.max_connections = HR_MAX_CONNECTIONS;
	if (a->o.max_connections_per_client <= 0)
		a->o.max_connections_per_client = HR_MAX_CONNECTIONS_PER_CLIENT;
	if (a->o.max_queued_runs <= 0)
		a->o.max_queued_runs = HR_MAX_QUEUED_RUNS;
	/* suspend and resume: the live streams (live.h) */
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* beyond loopback: TLS or the explicit opt-out, checked before binding */
	int loopback = 0;
	struct MHD_OptionItem tls[] = {{MHD_OPTION_END, 0, NULL}, {MHD_OPTION_END, 0, NULL},
				       {MHD_OPTION_END, 0, NULL}};
	if (auth_check_listen(ai->ai_addr, &o->auth, &loopback, err) < 0 ||
	    auth_read_tls(&o->auth, &a->tls_cert, &a->tls_key, err) < 0) {
		freeaddrinfo(ai);
		free(a);
		return -1;
	}
	if (a->tls_cert) {
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, a->tls_cert};
		tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, a->tls_key};
	}
	a->mhd = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, a,
				  MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_THREAD_POOL_SIZE,
				  (unsigned)4, MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)a->o.max_connections,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				  (unsigned)a->o.max_connections_per_client, MHD_OPTION_ARRAY, tls,
				  MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!a->mhd) {
		free(a->tls_cert);
		free(a->tls_key);
		free(a);
		return errf(err, "cannot listen on %s (address in use%s?)", o->listen,
			    o->auth.tls_cert ? ", or a TLS certificate and key that do not load" : "");
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(a->mhd, MHD_DAEMON_INFO_LISTEN_FD);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int bound = port;
	if (info && getsockname(info->listen_fd, (struct sockaddr *)&ss, &sl) == 0)
		bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						       : ((struct sockaddr_in *)&ss)->sin_port);
	snprintf(a->address, sizeof a->address, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
		 bound);
	/* requests that come before this are refused (503): the allowed
	 * names need the port bound */
	__atomic_store_n(&a->auth, auth_new(&o->auth, host, bound, loopback, a->tls_cert != NULL),
			 __ATOMIC_RELEASE);
	*out = a;
	return 0;
}

const char *api_address(const struct api *a)
{
	return a->address;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	live_shutdown(); /* MHD stops with no connection suspended */
	MHD_stop_daemon(a->mhd);
	auth_free(a->auth);
	free(a->tls_cert);
	free(a->tls_key);
	free(a);
}
