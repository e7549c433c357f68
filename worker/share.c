/* share.c - validation of the SCHEDULE payload (see share.h). */
#include "share.h"

#include <math.h>
#include <string.h>

#include "limits.h"
#include "util.h"

#define MAX_SAFE_INT 9007199254740991.0 /* 2^53 - 1: exact in a double */
#define MAX_STRIDE 1000000

/* An integer field: a JSON integer, or a real with no fraction. Returns 1
 * when present and valid, 0 when absent (or null), -1 on error. */
static int get_int(json_t *obj, const char *key, double min, double max, double *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return errf(err, "SCHEDULE: share.%s must be a number", key);
	double d = json_number_value(v);
	if (!isfinite(d) || (!json_is_integer(v) && floor(d) != d))
		return errf(err, "SCHEDULE: share.%s must be an integer", key);
	if (d < min || d > max)
		return errf(err, "SCHEDULE: share.%s must be between %.0f and %.0f", key, min, max);
	*out = d;
	return 1;
}

static int get_real(json_t *obj, const char *key, double min, double max, double *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return errf(err, "SCHEDULE: share.%s must be a number", key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < min || d > max)
		return errf(err, "SCHEDULE: share.%s must be between %g and %g", key, min, max);
	*out = d;
	return 1;
}

static int parse_share(json_t *s, struct share *sh, char *err)
{
	double v;
	int rc;

	if (!json_is_object(s))
		return errf(err, "SCHEDULE: 'share' must be an object");
	memset(sh, 0, sizeof *sh);
	sh->req_id_stride = 1;
	if ((rc = get_int(s, "slots", 1, HR_MAX_CONCURRENCY, &v, err)) < 0)
		return -1;
	if (rc == 0)
		return errf(err, "SCHEDULE: share.slots is required");
	sh->slots = (int)v;
	if ((rc = get_int(s, "requests", 0, (double)HR_MAX_REQUESTS, &v, err)) < 0)
		return -1;
	if (rc)
		sh->requests = (int64_t)v;
	if ((rc = get_real(s, "duration_s", 0, HR_MAX_DURATION_S, &v, err)) < 0)
		return -1;
	if (rc)
		sh->duration_s = v;
	if (sh->requests > 0 && sh->duration_s > 0)
		return errf(err, "SCHEDULE: share has both requests and duration_s");
	if ((rc = get_int(s, "req_id_base", 0, MAX_SAFE_INT, &v, err)) < 0)
		return -1;
	if (rc)
		sh->req_id_base = (uint64_t)v;
	if ((rc = get_int(s, "req_id_stride", 1, MAX_STRIDE, &v, err)) < 0)
		return -1;
	if (rc)
		sh->req_id_stride = (uint64_t)v;
	return 0;
}

int share_parse(json_t *msg, int index, struct spec *spec, struct share *sh, char *err)
{
	struct spec_error se;
	json_t *w = json_object_get(msg, "worker");

	if (w && !json_is_null(w) && !(json_is_integer(w) && json_integer_value(w) == index))
		return errf(err, "SCHEDULE: addressed to another worker (I am %d)", index);
	if (parse_share(json_object_get(msg, "share"), sh, err) < 0)
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
	return 0;
}
