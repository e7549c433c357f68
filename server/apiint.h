/* apiint.h - what the REST API's files share (api.c: routing, runs,
 * exports, datasets; api_history.c: lists, edits, comparisons, baselines,
 * series): the per-request call, and the reply helpers. Not an interface
 * for the rest of the daemon (that is api.h).
 */
#ifndef HR_APIINT_H
#define HR_APIINT_H

#include <microhttpd.h>
#include <stdint.h>

#include "api.h"
#include "apiparse.h"
#include "datasets.h"
#include "hrlimits.h"


struct api {
	struct MHD_Daemon *mhd;
	struct store *store;
	struct runner *runner;
	struct api_opts o;
	char address[300];
	struct auth *auth; /* the request gate (auth.h) */
	char *tls_cert, *tls_key; /* PEM, kept for MHD while it runs */
};

struct call {
	struct api *a;
	struct MHD_Connection *conn;
	int64_t id; /* the {id} path parameter, when the route has one */
	char name[HR_MAX_LABEL_LEN + 1]; /* the {name} path parameter (baselines) */
	const char *body;
	size_t body_len;
	struct ds_upload *upload;        /* POST /datasets: the uploaded file */
	const struct ds_create *create; /* and its query (dataset_query) */
	struct auth_req *auth;          /* who asks, with which role (auth.h) */
};

/* Every answer is queued through api_queue_response (api.c), which notes
 * its status for the daemon's metrics (selfmet.h). */
enum MHD_Result api_queue_response(struct MHD_Connection *c, unsigned status,
				   struct MHD_Response *r);
#define MHD_queue_response(c, s, r) api_queue_response((c), (s), (r))

enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *type,
			   char *text /* taken */, size_t len);
/* Steals body. */
enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *body);
/* {"error": {code, message, field}} with status. field may be NULL. */
enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
			    const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
enum MHD_Result reply_internal(struct MHD_Connection *c, const char *err);
/* An error (field null) with a Retry-After header: 503 busy / queue_full. */
/* The same with one more header, hname: hvalue (WWW-Authenticate...). */
enum MHD_Result reply_error_header(struct MHD_Connection *c, unsigned status, const char *code,
				   const char *hname, const char *hvalue, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
enum MHD_Result reply_retry(struct MHD_Connection *c, unsigned status, const char *code,
			    unsigned retry_after_s, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* 404 for the {id} of a run route. */
enum MHD_Result not_found(struct call *k);
/* The run of the route's {id} (runs_get; run NULL: only that it exists):
 * 0, or -1 with the answer (404, 500) in *ret. */
int api_run_get(struct call *k, int with_spec, json_t **run, enum MHD_Result *ret);
/* A query argument, or NULL. */
const char *arg(struct MHD_Connection *c, const char *name);

/* GET /runs/{id}/export: AIPerf and vLLM result files (api_peers.c). */
enum MHD_Result h_export(struct call *k);

/* POST /imports: other tools' result files as imported runs (api_imports.c). */
enum MHD_Result h_import(struct call *k);

/* The history routes (api_history.c). */
enum MHD_Result h_list(struct call *k);
enum MHD_Result h_patch(struct call *k);
enum MHD_Result h_delete(struct call *k);
enum MHD_Result h_group(struct call *k);
enum MHD_Result h_compare(struct call *k);
enum MHD_Result h_series(struct call *k);
enum MHD_Result h_baseline_put(struct call *k);
enum MHD_Result h_baseline_get(struct call *k);
enum MHD_Result h_baseline_list(struct call *k);
enum MHD_Result h_baseline_delete(struct call *k);

/* What POST /runs checks of a parsed spec beyond its own rules (secrets,
 * credentials, allow-list, dataset): 0, or -1 with *reply answered (error
 * fields under prefix, "spec." for a sweep) and the spec released. */
struct spec;
int api_admit_spec(struct call *k, struct spec *spec, const char *prefix, enum MHD_Result *reply);
/* The caller's quotas against a spec: 0, or -1 with the field and a message. */
struct auth_quota;
int quota_refused(const struct auth_quota *q, const struct spec *sp, const char **field,
		  char *msg, size_t len);

/* The sweep routes (api_sweeps.c). */
enum MHD_Result h_sweep_create(struct call *k);
enum MHD_Result h_sweep_list(struct call *k);
enum MHD_Result h_sweep_get(struct call *k);
enum MHD_Result h_sweep_cancel(struct call *k);

/* The dashboard's routes (api_dash.c). */
enum MHD_Result h_timeseries(struct call *k);
enum MHD_Result h_report(struct call *k);
enum MHD_Result h_distribution(struct call *k);
enum MHD_Result h_requests(struct call *k);
enum MHD_Result h_live(struct call *k);

/* The agents' routes (api_agents.c, docs/agents.md). */
enum MHD_Result h_agent_list(struct call *k);
enum MHD_Result h_agent_enroll(struct call *k);
enum MHD_Result h_agent_revoke(struct call *k);

#endif
