/* api_sweeps.c - the sweep routes (docs/sweeps.md, docs/api.md "Sweeps"):
 * POST /sweeps, GET /sweeps, GET /sweeps/{id} (JSON, or CSV with
 * ?format=csv), POST /sweeps/{id}/cancel. The sweep itself is sweep.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiint.h"
#include "auth.h"
#include "runner.h"
#include "runs.h"
#include "spec.h"
#include "sweep.h"
#include "util.h"

/* every spec of the sweep within the submitter's quotas */
static int quota_check(void *ctx, const struct spec *spec, char *msg)
{
	const struct auth_quota *q = ctx;
	const char *field = NULL;
	char why[200];
	if (quota_refused(q, spec, &field, why, sizeof why) < 0) {
		snprintf(msg, 256, "%s (quota %s)", why, field ? field : "?");
		return -1;
	}
	return 0;
}

enum MHD_Result h_sweep_create(struct call *k)
{
	json_error_t je;
	json_t *body = json_loadb(k->body, k->body_len, 0, &je);
	if (!json_is_object(body)) {
		json_decref(body);
		return reply_error(k->conn, 400, "invalid_json", "", "the body must be a JSON object%s%s",
				   body ? "" : ": ", body ? "" : je.text);
	}
	json_t *spec_in = json_object_get(body, "spec");
	if (!json_is_object(spec_in)) {
		json_decref(body);
		return reply_error(k->conn, 400, "missing_field", "spec",
				   "'spec' is required: the base run spec (docs/spec.md)");
	}
	struct spec spec;
	struct spec_error se;
	if (spec_from_json(spec_in, k->a->o.default_workers, &spec, &se) < 0) {
		json_decref(body);
		char f[600];
		snprintf(f, sizeof f, "spec%s%.512s", se.field[0] ? "." : "", se.field);
		return reply_error(k->conn, 400, se.code, f, "'spec': %s", se.message);
	}
	enum MHD_Result reply;
	if (api_admit_spec(k, &spec, "spec.", &reply) < 0) {
		json_decref(body);
		return reply;
	}
	json_t *normalised = json_incref(spec.json);
	spec_release(&spec);
	/* a search that grows without an end could pass any quota on the
	 * variable: a token with load quotas gives the end, which is checked */
	json_t *search = json_object_get(body, "search");
	const struct auth_quota *q = k->auth ? &k->auth->quota : NULL;
	if (json_is_object(search) && !json_is_number(json_object_get(search, "to")) && q &&
	    (q->max_rate > 0 || q->max_concurrency > 0 || q->max_duration_s > 0 ||
	     q->max_requests > 0)) {
		json_decref(normalised);
		json_decref(body);
		return reply_error(k->conn, 403, "quota_exceeded", "search.to",
				   "this token has load quotas: give 'search.to', the end of the "
				   "search, which is checked against them");
	}
	char field[256], msg[256];
	int64_t id = 0;
	struct sweep_queue_limits lim = {
	    .token_max_queued = k->auth ? k->auth->quota.max_queued : 0,
	    .max_queued_runs = k->a->o.max_queued_runs};
	int rc = sweep_create(k->a->store, body, normalised, k->auth ? k->auth->who : NULL,
			      k->auth ? quota_check : NULL, k->auth ? &k->auth->quota : NULL, &lim,
			      &id, field, msg);
	json_decref(body);
	if (rc == -400)
		return reply_error(k->conn, 400, "invalid_value", field, "%s", msg);
	if (rc == -403)
		return reply_error(k->conn, 403, "quota_exceeded", field, "%s", msg);
	if (rc == -429)
		return reply_error(k->conn, 429, "quota_exceeded", "max_queued", "%s", msg);
	if (rc == -503)
		return reply_retry(k->conn, 503, "queue_full", HR_QUEUE_RETRY_AFTER_S, "%s", msg);
	if (rc < 0)
		return reply_internal(k->conn, msg);
	runner_kick(k->a->runner);
	json_t *sw = sweep_get(k->a->store, id);
	if (!sw)
		return reply_internal(k->conn, "cannot read the sweep back");
	return reply_json(k->conn, 201, sw);
}

enum MHD_Result h_sweep_list(struct call *k)
{
	long long limit = 50;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, 1000, &limit) < 0)
		return reply_error(k->conn, 400, "invalid_value", "limit",
				   "'limit' must be an integer from 1 to 1000");
	return reply_json(k->conn, 200,
			  json_pack("{s:o}", "sweeps", sweep_list(k->a->store, (int)limit)));
}

static enum MHD_Result sweep_not_found(struct call *k)
{
	return reply_error(k->conn, 404, "not_found", "id", "no sweep %lld", (long long)k->id);
}

enum MHD_Result h_sweep_get(struct call *k)
{
	const char *fmt = arg(k->conn, "format");
	if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "csv") != 0)
		return reply_error(k->conn, 400, "invalid_value", "format",
				   "'format' must be json or csv");
	if (fmt && strcmp(fmt, "csv") == 0) {
		char *csv = sweep_csv(k->a->store, k->id);
		if (!csv)
			return sweep_not_found(k);
		return reply_text(k->conn, 200, "text/csv; charset=utf-8", csv, strlen(csv));
	}
	json_t *sw = sweep_get(k->a->store, k->id);
	if (!sw)
		return sweep_not_found(k);
	return reply_json(k->conn, 200, sw);
}

/* a run the cancel reached: who cancelled it, and a running one stopped */
static void run_cancelled(void *ctx, int64_t run_id, const char *state)
{
	struct call *k = ctx;
	auth_set_cancelled_by(k->a->store, run_id, k->auth ? k->auth->who : NULL);
	if (strcmp(state, RUN_RUNNING) == 0)
		runner_cancel(k->a->runner, run_id);
}

enum MHD_Result h_sweep_cancel(struct call *k)
{
	const char *state = NULL;
	int rc = sweep_cancel(k->a->store, k->id, &state, run_cancelled, k);
	if (rc == -404)
		return sweep_not_found(k);
	if (rc == -409)
		return reply_error(k->conn, 409, "conflict", NULL, "sweep %lld has already ended (%s)",
				   (long long)k->id, state);
	if (rc < 0)
		return reply_internal(k->conn, "cannot cancel the sweep");
	runner_kick(k->a->runner);
	json_t *sw = sweep_get(k->a->store, k->id);
	return sw ? reply_json(k->conn, 200, sw) : sweep_not_found(k);
}
