/* spec.h - the run specification: parse, validate, normalise (docs/spec.md).
 *
 * A spec arrives as JSON from the API (hostile input). spec_parse checks
 * every field's type and range, rejects unknown fields, fills defaults and
 * produces both a typed struct (for the daemon's scheduler) and the
 * normalised JSON that is stored with the run and sent to workers. Errors
 * name the offending field as a dotted path ("load.concurrency").
 *
 * Version 1 (the interface contract; later versions only add fields):
 *   {name, labels{}, target{url, endpoint, model, stream, api_key_env,
 *    headers{}, extra_body{}, timeout_s}, workload{kind, isl{mean,stddev},
 *    osl{mean,stddev}, seed}, load{mode, concurrency, requests|duration_s},
 *    workers}
 */
#ifndef HR_SPEC_H
#define HR_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum spec_endpoint { SPEC_EP_CHAT = 0, SPEC_EP_COMPLETIONS };
enum spec_load_mode { SPEC_LOAD_CONCURRENCY = 0 };
enum spec_workload_kind { SPEC_WL_SYNTHETIC = 0 };

struct spec_dist {
	double mean, stddev;
};

struct spec {
	const char *name; /* borrowed from json (valid while json lives) */
	struct {
		const char *url, *model, *api_key_env; /* api_key_env may be NULL */
		int endpoint;
		bool stream;
		double timeout_s;
		json_t *headers;    /* borrowed: object of string values */
		json_t *extra_body; /* borrowed: object, may be empty */
	} target;
	struct {
		int kind;
		struct spec_dist isl, osl;
		uint64_t seed;
	} workload;
	struct {
		int mode;
		int concurrency;
		int64_t requests; /* 0 when the run is bounded by duration */
		double duration_s; /* 0 when bounded by requests */
	} load;
	int workers;
	json_t *json; /* owned: the normalised spec (all defaults filled) */
};

struct spec_error {
	char code[32];     /* invalid_json, unknown_field, wrong_type, out_of_range,
			      missing_field, invalid_value */
	char field[512];   /* dotted path, "" for the whole document */
	char message[768];
};

/* Parse text (not necessarily NUL-terminated). default_workers is used when
 * the spec gives none (capped by the concurrency). Returns 0 and fills out
 * (release with spec_release), or -1 and fills err. */
int spec_parse(const char *text, size_t len, int default_workers, struct spec *out,
	       struct spec_error *err);
/* Same, from an already parsed object (borrowed; the spec keeps its own copy). */
int spec_from_json(json_t *root, int default_workers, struct spec *out, struct spec_error *err);
void spec_release(struct spec *s);

const char *spec_endpoint_name(int ep);
/* Path appended to target.url for the endpoint ("/v1/chat/completions"). */
const char *spec_endpoint_path(int ep);

#endif
