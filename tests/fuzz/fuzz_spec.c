/* fuzz_spec.c - libFuzzer target for run spec validation (lib/spec.c).
 *
 * The input is hostile JSON fed to spec_parse (default workers 2). When it
 * is accepted: 1 <= workers <= the slots (load.concurrency in concurrency
 * mode, load.max_concurrency when a rate or trace run sets one) and the
 * documented bounds, exactly one of load.requests / load.duration_s is > 0
 * (at most one in trace mode, which may replay the whole trace), target.url
 * starts with http:// or https://, a spec without "workers" got min(2,
 * slots), the normalised JSON re-validates through spec_from_json to
 * an equal document (json_equal) and equal typed fields, and it survives
 * json_dumps + spec_parse unchanged too. When it is rejected: err.code is
 * one of the codes spec.h documents, err.message is non-empty and the
 * output spec was left empty. Any violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib \
 *        tests/fuzz/fuzz_spec.c lib/spec.c lib/util.c -ljansson
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "spec.h"

#define DEFAULT_WORKERS 2

static const char *const codes[] = {"invalid_json",  "unknown_field", "wrong_type",
				    "out_of_range",  "missing_field", "invalid_value"};

static void check_error(const struct spec *s, const struct spec_error *err)
{
	int known = 0;
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
		if (strcmp(err->code, codes[i]) == 0)
			known = 1;
	if (!known)
		fprintf(stderr, "unknown error code '%.32s'\n", err->code);
	REQUIRE(known);
	REQUIRE(memchr(err->message, '\0', sizeof err->message) != NULL);
	REQUIRE(memchr(err->field, '\0', sizeof err->field) != NULL);
	REQUIRE(err->message[0] != '\0');
	REQUIRE(s->json == NULL);
}

static int same_str(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static void check_same(const struct spec *a, const struct spec *b)
{
	REQUIRE(json_equal(a->json, b->json));
	REQUIRE(same_str(a->name, b->name));
	REQUIRE(same_str(a->target.url, b->target.url));
	REQUIRE(same_str(a->target.model, b->target.model));
	REQUIRE(same_str(a->target.api_key_env, b->target.api_key_env));
	REQUIRE(a->target.endpoint == b->target.endpoint);
	REQUIRE(a->target.stream == b->target.stream);
	REQUIRE(a->target.timeout_s == b->target.timeout_s);
	REQUIRE(json_equal(a->target.headers, b->target.headers));
	REQUIRE(json_equal(a->target.extra_body, b->target.extra_body));
	REQUIRE(a->workload.kind == b->workload.kind);
	REQUIRE(a->workload.isl.mean == b->workload.isl.mean);
	REQUIRE(a->workload.isl.stddev == b->workload.isl.stddev);
	REQUIRE(a->workload.osl.mean == b->workload.osl.mean);
	REQUIRE(a->workload.osl.stddev == b->workload.osl.stddev);
	REQUIRE(a->workload.seed == b->workload.seed);
	REQUIRE(a->load.mode == b->load.mode);
	REQUIRE(a->load.concurrency == b->load.concurrency);
	REQUIRE(a->load.max_concurrency == b->load.max_concurrency);
	REQUIRE(a->load.rate == b->load.rate);
	REQUIRE(a->load.requests == b->load.requests);
	REQUIRE(a->load.duration_s == b->load.duration_s);
	REQUIRE(a->load.batch_size == b->load.batch_size);
	REQUIRE(a->workers == b->workers);
	REQUIRE(a->n_classes == b->n_classes);
	for (int k = 0; k < a->n_classes; k++) {
		REQUIRE(same_str(a->classes[k].name, b->classes[k].name));
		REQUIRE(a->classes[k].first_worker == b->classes[k].first_worker);
		REQUIRE(a->classes[k].workers == b->classes[k].workers);
		check_same(a->classes[k].spec, b->classes[k].spec);
	}
}

static void check_accepted(const uint8_t *data, size_t size, const struct spec *s)
{
	REQUIRE(json_is_object(s->json));
	REQUIRE(s->name != NULL && strlen(s->name) <= HR_MAX_NAME_LEN);
	REQUIRE(s->target.url != NULL && strlen(s->target.url) <= HR_MAX_URL_LEN);
	REQUIRE(strncmp(s->target.url, "http://", 7) == 0 ||
		strncmp(s->target.url, "https://", 8) == 0);
	REQUIRE(s->target.model != NULL);
	REQUIRE(s->target.endpoint >= 0 && s->target.endpoint < SPEC_EP__COUNT);
	REQUIRE(json_is_object(s->target.headers));
	REQUIRE(json_object_size(s->target.headers) <= HR_MAX_HEADERS);
	REQUIRE(json_is_object(s->target.extra_body));
	REQUIRE(s->target.timeout_s >= 0.001 && s->target.timeout_s <= HR_MAX_TIMEOUT_S);
	REQUIRE(s->workload.isl.mean >= 0 && s->workload.isl.mean <= HR_MAX_ISL);
	REQUIRE(s->workload.osl.mean >= 0 && s->workload.osl.mean <= HR_MAX_OSL);
	REQUIRE(s->workload.isl.stddev >= 0 && s->workload.osl.stddev >= 0);
	int slots = 0; /* what caps the workers; 0: nothing */
	if (s->load.mode == SPEC_LOAD_CONCURRENCY) {
		REQUIRE(s->load.concurrency >= 1 && s->load.concurrency <= HR_MAX_CONCURRENCY);
		slots = s->load.concurrency;
	} else {
		REQUIRE(s->load.mode == SPEC_LOAD_RATE || s->load.mode == SPEC_LOAD_TRACE);
		REQUIRE(s->load.max_concurrency >= 0 &&
		        s->load.max_concurrency <= HR_MAX_CONCURRENCY);
		slots = s->load.max_concurrency;
	}
	if (s->load.mode == SPEC_LOAD_RATE)
		REQUIRE(s->load.rate >= 0.000001 && s->load.rate <= HR_MAX_RATE);
	REQUIRE(s->workers >= 1 && s->workers <= HR_MAX_WORKERS);
	/* with classes the workers are the classes': each class a whole spec
	 * on consecutive workers, capped by its own slots */
	REQUIRE(s->n_classes >= 0 && s->n_classes <= HR_MAX_CLASSES);
	int sum = 0;
	for (int k = 0; k < s->n_classes; k++) {
		const struct spec *c = s->classes[k].spec;
		REQUIRE(c && c->n_classes == 0 && c->workers == s->classes[k].workers);
		REQUIRE(s->classes[k].first_worker == sum && c->workers >= 1);
		int cs = c->load.mode == SPEC_LOAD_CONCURRENCY ? c->load.concurrency
		                                                 : c->load.max_concurrency;
		REQUIRE(cs == 0 || c->workers <= cs);
		REQUIRE(spec_class_of_worker(s, (uint32_t)sum) == k);
		sum += c->workers;
	}
	if (s->n_classes) {
		REQUIRE(s->workers == sum);
		REQUIRE(spec_class_of_worker(s, (uint32_t)sum) == -1);
	} else {
		REQUIRE(slots == 0 || s->workers <= slots);
	}
	if (s->load.mode == SPEC_LOAD_TRACE)
		REQUIRE(!(s->load.requests > 0 && s->load.duration_s > 0));
	else
		REQUIRE((s->load.requests > 0) != (s->load.duration_s > 0));
	REQUIRE(s->load.requests >= 0 && s->load.requests <= HR_MAX_REQUESTS);
	REQUIRE(s->load.duration_s >= 0 && s->load.duration_s <= HR_MAX_DURATION_S);

	/* the normalised document names every defaulted field */
	json_t *ld = json_object_get(s->json, "load");
	REQUIRE(json_is_object(ld));
	if (s->load.mode == SPEC_LOAD_TRACE)
		REQUIRE(!(json_object_get(ld, "requests") && json_object_get(ld, "duration_s")));
	else
		REQUIRE((json_object_get(ld, "requests") != NULL) !=
		        (json_object_get(ld, "duration_s") != NULL));
	REQUIRE(json_is_number(json_object_get(s->json, "workers")));

	/* a spec that gives no workers gets the default, capped by the slots */
	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	REQUIRE(json_is_object(in));
	json_t *w = json_object_get(in, "workers");
	if ((!w || json_is_null(w)) && !s->n_classes) {
		int want = slots > 0 && slots < DEFAULT_WORKERS ? slots : DEFAULT_WORKERS;
		REQUIRE(s->workers == want);
	}
	json_decref(in);

	/* normalising is idempotent: the stored document validates to itself */
	struct spec s2;
	struct spec_error err2;
	if (spec_from_json(s->json, DEFAULT_WORKERS, &s2, &err2) < 0) {
		fprintf(stderr, "normalised spec rejected: %s %s: %s\n", err2.code, err2.field,
			err2.message);
		REQUIRE(!"normalised spec re-validates");
	}
	check_same(s, &s2);
	spec_release(&s2);

	/* and so does its serialised form (what the store keeps) */
	char *text = json_dumps(s->json, JSON_COMPACT);
	REQUIRE(text != NULL);
	struct spec s3;
	if (spec_parse(text, strlen(text), DEFAULT_WORKERS, &s3, &err2) < 0) {
		fprintf(stderr, "serialised spec rejected: %s %s: %s\n", err2.code, err2.field,
			err2.message);
		REQUIRE(!"serialised spec re-validates");
	}
	check_same(s, &s3);
	spec_release(&s3);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spec s;
	struct spec_error err;

	if (spec_parse((const char *)data, size, DEFAULT_WORKERS, &s, &err) < 0) {
		check_error(&s, &err);
		return 0;
	}
	check_accepted(data, size, &s);
	spec_release(&s);
	return 0;
}
