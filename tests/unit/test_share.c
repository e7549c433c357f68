/* test_share.c - the SCHEDULE share builder (server/share.c): each
 * worker's share of slots and requests adds up to the run's, request
 * indices never collide across workers, phases and classes, and the
 * dataset, warm-up and allow-list travel as api/protocol.md says. */
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "share.h"
#include "tap.h"

#define T "\"target\":{\"url\":\"http://127.0.0.1:8000\",\"model\":\"m\"}"

static int parse(const char *j, int workers, struct spec *s)
{
	struct spec_error e;
	if (!CHECK_EQ_INT(spec_parse(j, strlen(j), workers, s, &e), 0)) {
		fprintf(stderr, "# %s: %s\n", e.field, e.message);
		return -1;
	}
	return 0;
}

static long long geti(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const char *gets(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* concurrency with a request count: slots and requests split exactly,
 * the request indices contiguous ranges one after the other */
static void test_concurrency_requests(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"concurrency\":10,\"requests\":101}}", 3, &s) < 0)
		return;
	struct netallow net = {0};
	struct share_in in = {.run_id = 42, .spec = &s, .workers = 3, .net = &net};
	long long slots = 0, next = 0;
	for (int i = 0; i < 3; i++) {
		json_t *m = share_schedule(&in, i);
		json_t *sh = json_object_get(m, "share");
		CHECK_EQ_INT(geti(m, "run_id"), 42);
		CHECK_EQ_INT(geti(m, "worker"), i);
		CHECK_EQ_INT(geti(m, "workers"), 3);
		CHECK(json_is_object(json_object_get(m, "spec")));
		CHECK(!json_object_get(m, "class"));
		CHECK_STR(gets(sh, "mode"), "concurrency");
		CHECK_EQ_INT(geti(sh, "worker"), i);
		CHECK_EQ_INT(geti(sh, "workers"), 3);
		CHECK_EQ_INT(geti(sh, "total_slots"), 10);
		CHECK_EQ_INT(geti(sh, "req_id_base"), next);
		CHECK_EQ_INT(geti(sh, "req_id_stride"), 1);
		slots += geti(sh, "slots");
		next += geti(sh, "requests");
		CHECK(!json_object_get(sh, "warmup") && !json_object_get(sh, "dataset"));
		json_decref(m);
	}
	CHECK_EQ_INT(slots, 10);
	CHECK_EQ_INT(next, 101);
	spec_release(&s);
}

/* concurrency for a duration: the workers interleave their request
 * indices (base i, stride n); with a warm-up, its indices start at
 * WARMUP_REQ_OFFSET, clear of the run's */
static void test_concurrency_duration_warmup(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"concurrency\":4,\"duration_s\":2},"
	          "\"warmup\":{\"requests\":8}}",
	          4, &s) < 0)
		return;
	struct netallow net = {0};
	struct share_in in = {.run_id = 1, .spec = &s, .workers = 4, .net = &net};
	long long wreq = 0;
	for (int i = 0; i < 4; i++) {
		json_t *m = share_schedule(&in, i);
		json_t *sh = json_object_get(m, "share"), *wu = json_object_get(sh, "warmup");
		CHECK_EQ_INT(geti(sh, "slots"), 1);
		CHECK_EQ_INT(geti(sh, "requests"), 0);
		CHECK_EQ_INT(geti(sh, "req_id_base"), i);
		CHECK_EQ_INT(geti(sh, "req_id_stride"), 4);
		CHECK_EQ_DBL(json_number_value(json_object_get(sh, "duration_s")), 2);
		if (CHECK(json_is_object(wu))) {
			CHECK_EQ_INT(geti(wu, "worker"), i);
			CHECK(geti(wu, "req_id_base") >= WARMUP_REQ_OFFSET);
			CHECK_EQ_INT(geti(wu, "req_id_base"), WARMUP_REQ_OFFSET + wreq);
			wreq += geti(wu, "requests");
		}
		json_decref(m);
	}
	CHECK_EQ_INT(wreq, 8);
	spec_release(&s);
}

/* rate: the global request count and the arrival law travel as they are
 * (each worker takes its own arrivals), the ceiling split */
static void test_rate(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"mode\":\"rate\",\"max_concurrency\":5,"
	          "\"requests\":100,\"batch\":{\"size\":4,\"interval_s\":2,\"jitter_s\":0.5}}}",
	          2, &s) < 0)
		return;
	struct netallow net = {0};
	struct share_in in = {.run_id = 7, .spec = &s, .workers = 2, .net = &net};
	long long slots = 0;
	for (int i = 0; i < 2; i++) {
		json_t *m = share_schedule(&in, i);
		json_t *sh = json_object_get(m, "share"), *rt = json_object_get(sh, "rate");
		CHECK_STR(gets(sh, "mode"), "rate");
		CHECK_EQ_INT(geti(sh, "requests"), 100);
		CHECK_EQ_INT(geti(sh, "total_slots"), 5);
		CHECK_EQ_INT(geti(sh, "req_id_base"), 0);
		CHECK_EQ_INT(geti(sh, "req_id_stride"), 1);
		slots += geti(sh, "slots");
		if (CHECK(json_is_object(rt))) {
			CHECK_EQ_INT(geti(rt, "total_requests"), 100);
			CHECK_EQ_DBL(json_number_value(json_object_get(rt, "rate")),
			             2); /* 4 / 2 s */
			CHECK_EQ_INT(geti(rt, "batch_size"), 4);
			CHECK_EQ_DBL(json_number_value(json_object_get(rt, "jitter_s")), 0.5);
			CHECK(gets(rt, "law") != NULL);
		}
		json_decref(m);
	}
	CHECK_EQ_INT(slots, 5);
	spec_release(&s);
}

/* classes: worker gi is worker i of its class's pool; the share is that
 * pool's, its request indices offset by the class */
static void test_classes(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"duration_s\":30},"
	          "\"classes\":[{\"name\":\"chat\",\"load\":{\"mode\":\"rate\",\"rate\":5},"
	          "\"workers\":2},{\"name\":\"bulk\",\"load\":{\"concurrency\":6,"
	          "\"requests\":60},\"workers\":3}]}",
	          4, &s) < 0)
		return;
	CHECK_EQ_INT(s.workers, 5);
	struct netallow net = {0};
	struct share_in in = {.run_id = 3, .spec = &s, .workers = 5, .net = &net};
	long long bulk = 0;
	for (int gi = 0; gi < 5; gi++) {
		json_t *m = share_schedule(&in, gi);
		json_t *sh = json_object_get(m, "share"), *cl = json_object_get(m, "class");
		int k = gi < 2 ? 0 : 1, i = gi < 2 ? gi : gi - 2;
		CHECK_EQ_INT(geti(m, "worker"), gi);
		CHECK_EQ_INT(geti(m, "workers"), 5);
		if (CHECK(json_is_object(cl))) {
			CHECK_STR(gets(cl, "name"), k ? "bulk" : "chat");
			CHECK_EQ_INT(geti(cl, "worker"), i);
			CHECK_EQ_INT(geti(cl, "workers"), k ? 3 : 2);
			CHECK_EQ_INT(geti(cl, "req_offset"), k * CLASS_REQ_OFFSET);
		}
		CHECK_EQ_INT(geti(sh, "worker"), i);
		CHECK_EQ_INT(geti(sh, "workers"), k ? 3 : 2);
		CHECK_STR(gets(sh, "mode"), k ? "concurrency" : "rate");
		if (k) {
			CHECK_EQ_INT(geti(sh, "slots"), 2);
			CHECK_EQ_INT(geti(sh, "req_id_base"), CLASS_REQ_OFFSET + bulk);
			bulk += geti(sh, "requests");
		} else {
			CHECK_EQ_INT(geti(sh, "req_id_base"), 0);
		}
		/* the spec a worker gets is its class's */
		json_t *load = json_object_get(json_object_get(m, "spec"), "load");
		CHECK_STR(gets(load, "mode"), k ? "concurrency" : "rate");
		json_decref(m);
	}
	CHECK_EQ_INT(bulk, 60);
	spec_release(&s);
}

/* the dataset: its file and how it is read; a random pool is drawn from
 * by default, other formats walked */
static void test_dataset(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"concurrency\":2,\"requests\":10}}", 1, &s) < 0)
		return;
	struct dataset_ref ds = {
	    .format = DS_RANDOM_POOL, .path = (char *)"/data/x.jsonl", .entries = 77};
	struct netallow net = {0};
	struct share_in in = {.run_id = 5, .spec = &s, .workers = 1, .ds = {&ds}, .net = &net};
	json_t *m = share_schedule(&in, 0);
	json_t *d = json_object_get(json_object_get(m, "share"), "dataset");
	if (CHECK(json_is_object(d))) {
		CHECK_STR(gets(d, "path"), "/data/x.jsonl");
		CHECK_STR(gets(d, "format"), ds_format_name(DS_RANDOM_POOL));
		CHECK_STR(gets(d, "sampling"), "random");
		CHECK_EQ_INT(geti(d, "entries"), 77);
		CHECK(json_is_object(json_object_get(d, "options")));
	}
	json_decref(m);
	ds.format = DS_SINGLE_TURN;
	m = share_schedule(&in, 0);
	d = json_object_get(json_object_get(m, "share"), "dataset");
	CHECK_STR(gets(d, "sampling"), "sequential");
	json_decref(m);
	spec_release(&s);
}

/* share.net: the allow-list as given, the daemon's own addresses */
static void test_net(void)
{
	struct spec s;
	if (parse("{" T ",\"load\":{\"concurrency\":1,\"requests\":1}}", 1, &s) < 0)
		return;
	struct netallow net = {0};
	char err[HR_ERRLEN];
	CHECK_EQ_INT(netallow_add(&net, "127.0.0.1:8000", err), 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = {htonl(0x7f000001)}};
	CHECK_EQ_INT(netallow_add_self(&net, (const struct sockaddr *)&sa, 8080), 0);
	struct share_in in = {.run_id = 9, .spec = &s, .workers = 1, .net = &net};
	json_t *m = share_schedule(&in, 0);
	json_t *n = json_object_get(json_object_get(m, "share"), "net");
	CHECK_EQ_INT(json_array_size(json_object_get(n, "allow")), 1);
	CHECK_STR(json_string_value(json_array_get(json_object_get(n, "allow"), 0)),
	          "127.0.0.1:8000");
	CHECK_STR(json_string_value(json_array_get(json_object_get(n, "self"), 0)),
	          "127.0.0.1:8080");
	CHECK(json_is_false(json_object_get(n, "closed")));
	json_decref(m);
	spec_release(&s);
}

int main(void)
{
	test_concurrency_requests();
	test_concurrency_duration_warmup();
	test_rate();
	test_classes();
	test_dataset();
	test_net();
	return tap_done();
}
