/* api_dash.c - the routes that serve the dashboard's charts: a run's
 * records bucketed on its clock (GET /api/v1/runs/{id}/timeseries). */
#include <stdlib.h>
#include <string.h>

#include "apiint.h"
#include "dynbuf.h"
#include "runs.h"
#include "timeseries.h"
#include "util.h"

enum MHD_Result h_timeseries(struct call *k)
{
	long long step = 0;
	const char *s = arg(k->conn, "step_ms");
	if (s && parse_int(s, 1, 86400000, &step) < 0)
		return reply_error(k->conn, 400, "out_of_range", "step_ms",
				   "'step_ms' must be an integer from 1 to 86400000 (ms)");
	json_t *run;
	char err[HR_ERRLEN];
	int rc = runs_get(k->a->store, k->id, 0, &run, err);
	if (rc == -404)
		return not_found(k);
	if (rc < 0)
		return reply_internal(k->conn, err);
	json_decref(run);
	struct dynbuf out;
	dynbuf_init(&out, SIZE_MAX / 2);
	rc = ts_build(k->a->store, k->id, step, &out, err);
	if (rc == -2) {
		dynbuf_release(&out);
		return reply_error(k->conn, 400, "out_of_range", "step_ms", "%s", err);
	}
	if (rc < 0) {
		dynbuf_release(&out);
		return reply_internal(k->conn, err);
	}
	size_t len;
	char *text = dynbuf_take(&out, &len);
	return reply_text(k->conn, 200, "application/json", text, len);
}
