/* test_spec.c - run spec validation: defaults, every error names its field. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"
#include "spec.h"
#include "tap.h"

static const char *base = "{\"target\":{\"url\":\"http://127.0.0.1:8000\",\"model\":\"m\"},"
			  "\"load\":{\"concurrency\":8,\"requests\":100}}";

static void test_defaults(void)
{
	struct spec s;
	struct spec_error e;
	CHECK_EQ_INT(spec_parse(base, strlen(base), 4, &s, &e), 0);
	CHECK_STR(s.target.url, "http://127.0.0.1:8000");
	CHECK_EQ_INT(s.target.endpoint, SPEC_EP_CHAT);
	CHECK(s.target.stream);
	CHECK_EQ_DBL(s.target.timeout_s, 600);
	CHECK_EQ_DBL(s.workload.isl.mean, 128);
	CHECK_EQ_DBL(s.workload.osl.stddev, 0);
	CHECK_EQ_INT(s.load.concurrency, 8);
	CHECK_EQ_INT(s.load.requests, 100);
	CHECK_EQ_INT(s.workers, 4);
	/* the normalised JSON carries every default */
	CHECK_STR(json_string_value(json_object_get(json_object_get(s.json, "target"), "endpoint")),
		  "chat");
	CHECK_EQ_INT(json_integer_value(json_object_get(s.json, "workers")), 4);
	CHECK(json_is_object(json_object_get(s.json, "labels")));
	/* a normalised spec parses to the same thing (workers stay fixed) */
	struct spec s2;
	CHECK_EQ_INT(spec_from_json(s.json, 1, &s2, &e), 0);
	CHECK_EQ_INT(s2.workers, 4);
	CHECK(json_equal(s.json, s2.json));
	spec_release(&s2);
	spec_release(&s);

	/* default workers never exceed the concurrency */
	const char *c2 = "{\"target\":{\"url\":\"http://h\",\"model\":\"m\"},"
			 "\"load\":{\"concurrency\":2,\"duration_s\":1.5}}";
	CHECK_EQ_INT(spec_parse(c2, strlen(c2), 16, &s, &e), 0);
	CHECK_EQ_INT(s.workers, 2);
	CHECK_EQ_DBL(s.load.duration_s, 1.5);
	CHECK_EQ_INT(s.load.requests, 0);
	spec_release(&s);
}

struct bad {
	const char *json;
	const char *code;
	const char *field;
};

#define T "\"target\":{\"url\":\"http://h\",\"model\":\"m\"}"
#define L "\"load\":{\"requests\":10}"

static const struct bad bads[] = {
	{"{", "invalid_json", ""},
	{"[]", "wrong_type", ""},
	{"{" T "," L ",\"extra\":1}", "unknown_field", "extra"},
	{"{" L "}", "missing_field", "target"},
	{"{\"target\":{\"model\":\"m\"}," L "}", "missing_field", "target.url"},
	{"{\"target\":{\"url\":\"ftp://h\",\"model\":\"m\"}," L "}", "invalid_value", "target.url"},
	{"{\"target\":{\"url\":\"http://h x\",\"model\":\"m\"}," L "}", "invalid_value",
	 "target.url"},
	{"{\"target\":{\"url\":\"http://h\"}," L "}", "missing_field", "target.model"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"stream\":1}," L "}", "wrong_type",
	 "target.stream"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"endpoint\":\"x\"}," L "}",
	 "invalid_value", "target.endpoint"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"nope\":1}," L "}", "unknown_field",
	 "target.nope"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"headers\":{\"X\":1}}," L "}",
	 "wrong_type", "target.headers.X"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"headers\":{\"X\":\"a\\r\\nb\"}}," L
	 "}",
	 "invalid_value", "target.headers.X"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"headers\":{\"a b\":\"x\"}}," L "}",
	 "invalid_value", "target.headers.a b"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_env\":\"1X\"}," L "}",
	 "invalid_value", "target.api_key_env"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"timeout_s\":0}," L "}",
	 "out_of_range", "target.timeout_s"},
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"extra_body\":[]}," L "}",
	 "wrong_type", "target.extra_body"},
	{"{" T ",\"load\":{\"concurrency\":0,\"requests\":1}}", "out_of_range", "load.concurrency"},
	{"{" T ",\"load\":{\"concurrency\":1.5,\"requests\":1}}", "wrong_type",
	 "load.concurrency"},
	{"{" T ",\"load\":{\"concurrency\":\"4\",\"requests\":1}}", "wrong_type",
	 "load.concurrency"},
	{"{" T ",\"load\":{\"requests\":1,\"duration_s\":1}}", "invalid_value", "load.duration_s"},
	{"{" T ",\"load\":{}}", "missing_field", "load.requests"},
	{"{" T ",\"load\":{\"requests\":0}}", "out_of_range", "load.requests"},
	{"{" T ",\"load\":{\"requests\":1e300}}", "out_of_range", "load.requests"},
	{"{" T ",\"load\":{\"duration_s\":-1}}", "out_of_range", "load.duration_s"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"requests\":1}}", "missing_field", "load.rate"},
	{"{" T ",\"load\":{\"mode\":\"burst\",\"requests\":1}}", "invalid_value", "load.mode"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"concurrency\":2,\"requests\":1}}",
	 "invalid_value", "load.concurrency"},
	{"{" T ",\"load\":{\"rate\":5,\"requests\":1}}", "invalid_value", "load.rate"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":0,\"requests\":1}}", "out_of_range",
	 "load.rate"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"arrival\":\"x\",\"requests\":1}}",
	 "invalid_value", "load.arrival"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"smoothness\":2,\"requests\":1}}",
	 "invalid_value", "load.smoothness"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"arrival\":\"gamma\","
	      "\"smoothness\":0,\"requests\":1}}",
	 "out_of_range", "load.smoothness"},
	{"{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"max_concurrency\":2,"
	      "\"requests\":9},\"workers\":3}",
	 "out_of_range", "workers"},
	{"{" T ",\"load\":{\"requests\":9,\"ramp_s\":-1}}", "out_of_range", "load.ramp_s"},
	{"{" T ",\"load\":{\"requests\":9,\"grace_s\":-1}}", "out_of_range", "load.grace_s"},
	{"{" T ",\"load\":{\"requests\":9,\"cancel\":{\"fraction\":0.5}}}", "missing_field",
	 "load.cancel.after_s"},
	{"{" T ",\"load\":{\"requests\":9,\"cancel\":{\"fraction\":2,\"after_s\":1}}}",
	 "out_of_range", "load.cancel.fraction"},
	{"{" T ",\"load\":{\"requests\":9,\"speedup\":2}}", "invalid_value", "load.speedup"},
	{"{" T ",\"load\":{\"mode\":\"trace\"}}", "invalid_value", "load.mode"},
	{"{" T ",\"load\":{\"mode\":\"trace\"},\"workload\":{\"kind\":\"trace\"}}",
	 "missing_field", "workload.trace"},
	{"{" T ",\"load\":{\"mode\":\"trace\"},\"workload\":{\"kind\":\"trace\",\"trace\":"
	      "\"{\\\"timestamp\\\":0,\\\"input_length\\\":5,\\\"output_length\\\":5}\\n"
	      "{\\\"timestamp\\\":1,\\\"input_length\\\":0,\\\"output_length\\\":5}\"}}",
	 "invalid_value", "workload.trace"},
	{"{" T "," L ",\"workload\":{\"trace\":\"x\"}}", "invalid_value", "workload.trace"},
	{"{" T "," L ",\"workload\":{\"sessions\":{}}}", "missing_field",
	 "workload.sessions.turns"},
	{"{" T "," L ",\"workload\":{\"sessions\":{\"turns\":{\"mean\":0}}}}", "out_of_range",
	 "workload.sessions.turns.mean"},
	{"{" T "," L ",\"warmup\":{}}", "missing_field", "warmup.requests"},
	{"{" T ",\"load\":{\"concurrency\":4,\"requests\":9},\"workers\":4,"
	      "\"warmup\":{\"requests\":4,\"load\":{\"concurrency\":1}}}",
	 "out_of_range", "warmup.load.concurrency"},
	{"{" T "," L ",\"warmup\":{\"requests\":1,\"duration_s\":1}}", "invalid_value",
	 "warmup.duration_s"},
	{"{" T "," L ",\"warmup\":{\"requests\":1,\"load\":{\"mode\":\"trace\"}}}",
	 "invalid_value", "warmup.load.mode"},
	{"{" T "," L ",\"warmup\":{\"requests\":1,\"load\":{\"x\":1}}}", "unknown_field",
	 "warmup.load.x"},
	{"{" T "," L ",\"workers\":0}", "out_of_range", "workers"},
	{"{" T "," L ",\"placement\":{\"local\":1},\"workers\":2}", "invalid_value", "workers"},
	{"{" T "," L ",\"placement\":{}}", "invalid_value", "placement"},
	{"{" T "," L ",\"placement\":{\"local\":1},\"classes\":[{\"name\":\"a\"}]}",
	 "invalid_value", "placement"},
	{"{" T "," L ",\"placement\":[]}", "wrong_type", "placement"},
	{"{" T "," L ",\"placement\":{\"local\":1,\"x\":1}}", "unknown_field", "placement.x"},
	{"{" T "," L ",\"placement\":{\"local\":1,\"on_agent_loss\":\"retry\"}}",
	 "invalid_value", "placement.on_agent_loss"},
	{"{" T "," L ",\"placement\":{\"local\":300}}", "out_of_range", "placement.local"},
	{"{" T "," L ",\"placement\":{\"agents\":{}}}", "wrong_type", "placement.agents"},
	{"{" T "," L ",\"placement\":{\"agents\":[{\"workers\":0}]}}", "out_of_range",
	 "placement.agents[0].workers"},
	{"{" T "," L ",\"placement\":{\"agents\":[{\"selector\":{\"a\":1}}]}}", "wrong_type",
	 "placement.agents[0].selector.a"},
	{"{" T "," L ",\"placement\":{\"agents\":[{\"labels\":{}}]}}", "unknown_field",
	 "placement.agents[0].labels"},
	{"{" T ",\"load\":{\"concurrency\":2,\"requests\":9},\"workers\":3}", "out_of_range",
	 "workers"},
	{"{" T "," L ",\"workload\":{\"isl\":{\"mean\":-1}}}", "out_of_range",
	 "workload.isl.mean"},
	{"{" T "," L ",\"workload\":{\"osl\":{\"mean\":1,\"p\":2}}}", "unknown_field",
	 "workload.osl.p"},
	{"{" T "," L ",\"workload\":{\"kind\":\"sharegpt\"}}", "invalid_value", "workload.kind"},
	{"{" T "," L ",\"workload\":{\"seed\":-3}}", "out_of_range", "workload.seed"},
	{"{" T "," L ",\"workload\":{\"tokenizer\":\"/nonexistent/tokenizer.json\"}}",
	 "invalid_value", "workload.tokenizer"},
	{"{" T "," L ",\"workload\":{\"tokenizer\":\"\"}}", "invalid_value",
	 "workload.tokenizer"},
	{"{" T "," L ",\"workload\":{\"tokenizer\":7}}", "wrong_type", "workload.tokenizer"},
	{"{" T "," L ",\"workload\":{\"system_prompt\":{\"tokens\":0}}}", "out_of_range",
	 "workload.system_prompt.tokens"},
	{"{" T "," L ",\"workload\":{\"system_prompt\":5}}", "wrong_type",
	 "workload.system_prompt"},
	{"{\"target\":{\"url\":\"http://x:1\",\"model\":\"m\",\"max_tokens_field\":\"n\"}," L "}",
	 "invalid_value", "target.max_tokens_field"},
	{"{" T "," L ",\"workload\":{\"ignore_eos\":\"yes\"}}", "wrong_type",
	 "workload.ignore_eos"},
	{"{" T "," L ",\"workload\":{\"prefix_prompts\":{\"count\":2}}}", "missing_field",
	 "workload.prefix_prompts.tokens"},
	{"{" T "," L ",\"workload\":{\"prefix_prompts\":{\"count\":2,\"tokens\":3,\"x\":1}}}",
	 "unknown_field", "workload.prefix_prompts.x"},
	{"{" T "," L ",\"workload\":{\"mix\":[]}}", "wrong_type", "workload.mix"},
	{"{" T "," L ",\"workload\":{\"mix\":[{\"isl\":5,\"osl\":5},{\"isl\":0,\"osl\":5}]}}",
	 "out_of_range", "workload.mix[1].isl"},
	{"{" T "," L ",\"workload\":{\"mix\":[{\"isl\":5}]}}", "missing_field",
	 "workload.mix[0].osl"},
	{"{" T "," L ",\"workload\":{\"mix\":[{\"isl\":5,\"osl\":5,\"weight\":0}]}}",
	 "out_of_range", "workload.mix[0].weight"},
	{"{" T "," L ",\"workload\":{\"kind\":\"dataset\"}}", "missing_field",
	 "workload.dataset"},
	{"{" T "," L ",\"workload\":{\"kind\":\"dataset\",\"dataset\":{\"id\":0}}}",
	 "out_of_range", "workload.dataset.id"},
	{"{" T "," L ",\"workload\":{\"dataset\":{\"id\":1}}}", "invalid_value",
	 "workload.dataset"},
	{"{" T "," L ",\"client\":{\"max_loop_busy\":0}}", "out_of_range",
	 "client.max_loop_busy"},
	{"{" T "," L ",\"client\":{\"allow_client_bound\":1}}", "wrong_type",
	 "client.allow_client_bound"},
	{"{" T "," L ",\"client\":{\"verdict\":\"ok\"}}", "unknown_field", "client.verdict"},
	{"{\"target\":{\"mock\":true,\"url\":\"http://x:1\",\"model\":\"m\"}," L "}",
	 "invalid_value", "target.url"},
	{"{" T "," L ",\"labels\":{\"a\":1}}", "wrong_type", "labels.a"},
	{"{" T "," L ",\"labels\":[]}", "wrong_type", "labels"},
	{"{" T "," L ",\"name\":5}", "wrong_type", "name"},
	/* endpoints */
	{"{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"endpoint\":\"embedding\"}," L "}",
	 "invalid_value", "target.endpoint"},
#define TE(ep) "\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"endpoint\":\"" ep "\""
	{"{" TE("embeddings") ",\"stream\":true}," L "}", "invalid_value", "target.stream"},
	{"{" TE("rankings_nim") ",\"stream\":true}," L "}", "invalid_value", "target.stream"},
	{"{" T "," L ",\"workload\":{\"passages\":4}}", "invalid_value", "workload.passages"},
	{"{" TE("rankings_tei") "}," L ",\"workload\":{\"passages\":0}}", "out_of_range",
	 "workload.passages"},
	{"{" TE("rankings_cohere") "}," L ",\"workload\":{\"passages\":1001}}", "out_of_range",
	 "workload.passages"},
	{"{" TE("rankings_cohere") "}," L ",\"workload\":{\"passages\":1000,\"isl\":{\"mean\":"
	 "1000}}}", "out_of_range", "workload.passages"},
	{"{" TE("rankings_nim") "}," L ",\"workload\":{\"batch_size\":2}}", "invalid_value",
	 "workload.batch_size"},
	{"{" TE("embeddings") "}," L ",\"workload\":{\"batch_size\":2049}}", "out_of_range",
	 "workload.batch_size"},
	{"{" TE("embeddings") "}," L ",\"workload\":{\"batch_size\":1.5}}", "wrong_type",
	 "workload.batch_size"},
	{"{" TE("embeddings") "}," L ",\"workload\":{\"sessions\":{\"turns\":{\"mean\":2}}}}",
	 "invalid_value", "workload.sessions"},
	{"{" TE("template") "}," L "}", "missing_field", "target.template"},
	{"{" TE("chat") ",\"template\":{}}," L "}", "invalid_value", "target.template"},
	{"{" TE("template") ",\"template\":[]}," L "}", "wrong_type", "target.template"},
#define TP "\"path\":\"/v1/x\",\"body\":{\"p\":\"{{prompt}}\"}"
	{"{" TE("template") ",\"template\":{" TP ",\"stream_path\":\"a\",\"x\":1}}," L "}",
	 "unknown_field", "target.template.x"},
	{"{" TE("template") ",\"template\":{\"body\":{\"p\":\"{{prompt}}\"}}}," L "}",
	 "missing_field", "target.template.path"},
	{"{" TE("template") ",\"template\":{\"path\":\"v1/x\",\"body\":{}}}," L "}",
	 "invalid_value", "target.template.path"},
	{"{" TE("template") ",\"template\":{\"path\":\"/v1 x\",\"body\":{}}}," L "}",
	 "invalid_value", "target.template.path"},
	{"{" TE("template") ",\"template\":{\"path\":\"/v1/x\"}}," L "}", "missing_field",
	 "target.template.body"},
	{"{" TE("template") ",\"template\":{\"path\":\"/x\",\"body\":[\"{{prompt}}\"]}}," L "}",
	 "wrong_type", "target.template.body"},
	{"{" TE("template") ",\"template\":{\"path\":\"/x\",\"body\":{\"p\":\"{{ prompt }}\"},"
	 "\"stream_path\":\"a\"}}," L "}", "invalid_value", "target.template.body"},
	{"{" TE("template") ",\"template\":{\"path\":\"/x\",\"body\":{\"p\":\"{{prompt}}\",\"a\":"
	 "[1,{\"b\":\"x{{promt}}\"}]},\"stream_path\":\"a\"}}," L "}", "invalid_value",
	 "target.template.body.a[1].b"},
	{"{" TE("template") ",\"template\":{\"path\":\"/x\",\"body\":{\"p\":\"{{prompt}}\","
	 "\"{{id}}\":1},\"stream_path\":\"a\"}}," L "}", "invalid_value",
	 "target.template.body.{{id}}"},
	{"{" TE("template") ",\"template\":{" TP "}}," L "}", "missing_field",
	 "target.template.stream_path"},
	{"{" TE("template") ",\"stream\":false,\"template\":{" TP ",\"stream_path\":\"a\"}}," L
	 "}", "missing_field", "target.template.response_path"},
	{"{" TE("template") ",\"template\":{" TP ",\"stream_path\":\"a..b\"}}," L "}",
	 "invalid_value", "target.template.stream_path"},
	{"{" TE("template") ",\"template\":{" TP ",\"stream_path\":\".a\"}}," L "}",
	 "invalid_value", "target.template.stream_path"},
	{"{" TE("template") ",\"template\":{" TP ",\"stream_path\":5}}," L "}", "wrong_type",
	 "target.template.stream_path"},
	{"{" TE("template") ",\"template\":{" TP ",\"stream_path\":\"a\",\"response_path\":"
	 "\"b.\"}}," L "}", "invalid_value", "target.template.response_path"},
	{"{" T "," L ",\"name\":\"a\",\"name\":\"b\"}", "invalid_json", ""},
};

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		struct spec s;
		struct spec_error e;
		int rc = spec_parse(bads[i].json, strlen(bads[i].json), 2, &s, &e);
		if (!CHECK_EQ_INT(rc, -1))
			spec_release(&s);
		CHECK_STR(e.code, bads[i].code);
		CHECK_STR(e.field, bads[i].field);
		CHECK(e.message[0] != '\0');
	}
}

static void test_modes(void)
{
	struct spec s;
	struct spec_error e;
	const char *r = "{" T ",\"load\":{\"mode\":\"rate\",\"rate\":250.5,\"duration_s\":10,"
			"\"ramp_s\":2},\"warmup\":{\"requests\":20}}";
	CHECK_EQ_INT(spec_parse(r, strlen(r), 4, &s, &e), 0);
	CHECK_EQ_INT(s.load.mode, SPEC_LOAD_RATE);
	CHECK_EQ_DBL(s.load.rate, 250.5);
	CHECK_EQ_INT(s.load.arrival, 1); /* poisson by default */
	CHECK_EQ_DBL(s.load.ramp_s, 2);
	CHECK_EQ_DBL(s.grace_s, 30);
	CHECK_EQ_INT(s.workers, 4);
	CHECK(s.has_warmup);
	/* the warm-up inherits the run's shape */
	CHECK_EQ_INT(s.warmup.mode, SPEC_LOAD_RATE);
	CHECK_EQ_DBL(s.warmup.rate, 250.5);
	CHECK_EQ_INT(s.warmup.requests, 20);
	json_t *wl = json_object_get(json_object_get(s.json, "warmup"), "load");
	CHECK_STR(json_string_value(json_object_get(wl, "arrival")), "poisson");
	spec_release(&s);

	const char *g = "{" T ",\"load\":{\"mode\":\"rate\",\"rate\":5,\"arrival\":\"gamma\","
			"\"smoothness\":0.25,\"max_concurrency\":3,\"requests\":100},"
			"\"warmup\":{\"duration_s\":1,\"load\":{\"mode\":\"concurrency\","
			"\"concurrency\":3}}}";
	CHECK_EQ_INT(spec_parse(g, strlen(g), 8, &s, &e), 0);
	CHECK_EQ_INT(s.load.arrival, 2);
	CHECK_EQ_DBL(s.load.smoothness, 0.25);
	CHECK_EQ_INT(s.workers, 3); /* capped by max_concurrency */
	CHECK_EQ_INT(s.warmup.mode, SPEC_LOAD_CONCURRENCY);
	CHECK_EQ_INT(s.warmup.concurrency, 3);
	spec_release(&s);

	const char *t = "{" T ",\"load\":{\"mode\":\"trace\",\"speedup\":2},\"workload\":{"
			"\"kind\":\"trace\",\"trace\":\"{\\\"timestamp\\\":5,"
			"\\\"input_length\\\":3,\\\"output_length\\\":4}\\n\\n"
			"{\\\"timestamp\\\":1,\\\"input_length\\\":3,"
			"\\\"output_length\\\":4,\\\"session_id\\\":7}\\n\"}}";
	if (CHECK_EQ_INT(spec_parse(t, strlen(t), 2, &s, &e), 0)) {
		CHECK_EQ_INT(s.workload.trace_entries, 2);
		CHECK_EQ_DBL(s.speedup, 2);
		CHECK_EQ_INT(s.load.requests, 0);
		spec_release(&s);
	} else {
		tap_ok(0, "trace spec rejected: %s %s", e.field, e.message);
	}

	const char *ss = "{" T "," L ",\"workload\":{\"sessions\":{\"turns\":{\"mean\":3},"
			 "\"think_time_s\":{\"mean\":0.5,\"stddev\":0.1}}}}";
	CHECK_EQ_INT(spec_parse(ss, strlen(ss), 2, &s, &e), 0);
	CHECK(s.workload.sessions);
	CHECK_EQ_DBL(s.workload.turns.mean, 3);
	CHECK_EQ_DBL(s.workload.think_s.mean, 0.5);
	spec_release(&s);
}

static void test_endpoints(void)
{
	static const struct {
		const char *ep;
		int id;
		const char *path; /* with the default stream */
		bool stream;
		int passages, batch;
	} eps[] = {
	    {"chat", SPEC_EP_CHAT, "/v1/chat/completions", true, 0, 0},
	    {"completions", SPEC_EP_COMPLETIONS, "/v1/completions", true, 0, 0},
	    {"embeddings", SPEC_EP_EMBEDDINGS, "/v1/embeddings", false, 0, 1},
	    {"rankings_nim", SPEC_EP_RANKINGS_NIM, "/v1/ranking", false, 4, 0},
	    {"rankings_cohere", SPEC_EP_RANKINGS_COHERE, "/v2/rerank", false, 4, 0},
	    {"rankings_tei", SPEC_EP_RANKINGS_TEI, "/rerank", false, 4, 0},
	    {"tgi", SPEC_EP_TGI, "/generate_stream", true, 0, 0},
	    {"responses", SPEC_EP_RESPONSES, "/v1/responses", true, 0, 0},
	    {"messages", SPEC_EP_MESSAGES, "/v1/messages", true, 0, 0},
	};
	struct spec s, s2;
	struct spec_error e;
	char buf[512];
	for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
		snprintf(buf, sizeof buf, "{" TE("%s") "}," L "}", eps[i].ep);
		if (!CHECK_EQ_INT(spec_parse(buf, strlen(buf), 2, &s, &e), 0)) {
			tap_ok(0, "%s rejected: %s %s", eps[i].ep, e.field, e.message);
			continue;
		}
		CHECK_EQ_INT(s.target.endpoint, eps[i].id);
		CHECK_STR(spec_endpoint_name(s.target.endpoint), eps[i].ep);
		CHECK_STR(spec_target_path(&s), eps[i].path);
		CHECK_EQ_INT(s.target.stream, eps[i].stream);
		CHECK_EQ_INT(spec_endpoint_generates(eps[i].id), eps[i].stream);
		CHECK_EQ_INT(s.workload.passages, eps[i].passages);
		CHECK_EQ_INT(s.workload.batch_size, eps[i].batch);
		/* the normalised spec says it all and reads back the same */
		json_t *wl = json_object_get(s.json, "workload");
		CHECK_EQ_INT(json_integer_value(json_object_get(wl, "passages")), eps[i].passages);
		CHECK_EQ_INT(json_integer_value(json_object_get(wl, "batch_size")), eps[i].batch);
		CHECK(json_is_boolean(json_object_get(json_object_get(s.json, "target"), "stream")));
		CHECK(!json_object_get(json_object_get(s.json, "target"), "template"));
		CHECK_EQ_INT(spec_from_json(s.json, 2, &s2, &e), 0);
		CHECK(json_equal(s.json, s2.json));
		spec_release(&s2);
		spec_release(&s);
	}
	const char *tgi = "{" TE("tgi") ",\"stream\":false}," L "}";
	CHECK_EQ_INT(spec_parse(tgi, strlen(tgi), 2, &s, &e), 0);
	CHECK_STR(spec_target_path(&s), "/generate");
	spec_release(&s);
	const char *emb = "{" TE("embeddings") "}," L ",\"workload\":{\"batch_size\":8,\"passages\":"
	                  "null}}";
	CHECK_EQ_INT(spec_parse(emb, strlen(emb), 2, &s, &e), 0);
	CHECK_EQ_INT(s.workload.batch_size, 8);
	CHECK(!json_object_get(json_object_get(s.json, "workload"), "passages"));
	spec_release(&s);

	/* a template: placeholders anywhere in strings; braces that are not
	 * a placeholder (a Jinja template) are left alone */
	const char *tp = "{" TE("template") ",\"template\":{\"path\":\"/v1/completions?x=1\","
	                 "\"body\":{\"model\":\"{{model}}\",\"prompt\":\"Q: {{prompt}}\","
	                 "\"max_tokens\":\"{{max_tokens}}\",\"stream\":\"{{stream}}\","
	                 "\"chat_template\":\"{{ messages }}{% x %}\",\"n\":[1,null]},"
	                 "\"stream_path\":\"choices.0.text\",\"response_path\":null}}," L "}";
	if (CHECK_EQ_INT(spec_parse(tp, strlen(tp), 2, &s, &e), 0)) {
		CHECK_EQ_INT(s.target.endpoint, SPEC_EP_TEMPLATE);
		CHECK_STR(spec_target_path(&s), "/v1/completions?x=1");
		CHECK_STR(s.target.stream_path, "choices.0.text");
		CHECK(s.target.response_path == NULL);
		CHECK(json_is_object(s.target.template_body));
		json_t *t = json_object_get(json_object_get(s.json, "target"), "template");
		CHECK(!json_object_get(t, "response_path"));
		CHECK_EQ_INT(spec_from_json(s.json, 2, &s2, &e), 0);
		CHECK(json_equal(s.json, s2.json));
		spec_release(&s2);
		spec_release(&s);
	} else {
		tap_ok(0, "template rejected: %s %s", e.field, e.message);
	}
}

/* target.api_key_header: lower-cased, Authorization (the default) dropped;
 * only a credential header, and only with a key. */
static void test_api_key_header(void)
{
	static const struct {
		const char *header, *want; /* want NULL: the default, not in the JSON */
	} ok[] = {{"X-Api-Key", "x-api-key"}, {"api-key", "api-key"}, {"Authorization", NULL},
		  {"AUTHORIZATION", NULL}, {"X-Goog-Api-Key", "x-goog-api-key"}};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		char j[300];
		snprintf(j, sizeof j,
			 "{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_secret\":"
			 "\"k\",\"api_key_header\":\"%s\"}," L "}",
			 ok[i].header);
		struct spec s, s2;
		struct spec_error e;
		if (!CHECK_EQ_INT(spec_parse(j, strlen(j), 1, &s, &e), 0))
			continue;
		json_t *h = json_object_get(json_object_get(s.json, "target"), "api_key_header");
		if (ok[i].want) {
			CHECK_STR(s.target.api_key_header, ok[i].want);
			CHECK_STR(json_string_value(h), ok[i].want);
		} else {
			CHECK(s.target.api_key_header == NULL);
			CHECK(h == NULL);
		}
		CHECK_EQ_INT(spec_from_json(s.json, 1, &s2, &e), 0);
		CHECK(json_equal(s.json, s2.json)); /* normalised once for all */
		spec_release(&s2);
		spec_release(&s);
	}
	static const char *const bad[] = {
	    /* not a credential header, so outputs would not redact it */
	    "{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_secret\":\"k\","
	    "\"api_key_header\":\"X-Trace\"}," L "}",
	    "{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_secret\":\"k\","
	    "\"api_key_header\":\"x api key\"}," L "}",
	    "{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_secret\":\"k\","
	    "\"api_key_header\":\"x-api-key:\"}," L "}",
	    /* no key to carry */
	    "{\"target\":{\"url\":\"http://h\",\"model\":\"m\",\"api_key_header\":"
	    "\"x-api-key\"}," L "}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct spec s;
		struct spec_error e;
		if (!CHECK_EQ_INT(spec_parse(bad[i], strlen(bad[i]), 1, &s, &e), -1))
			spec_release(&s);
		CHECK_STR(e.field, "target.api_key_header");
	}
}

/* spec.classes: each class a whole spec, on consecutive workers, seeded
 * from the run's seed; batches; errors named under classes[k]. */
static void test_classes(void)
{
	const char *j =
	    "{\"target\":{\"url\":\"http://127.0.0.1:8000\",\"model\":\"m\"},"
	    "\"workload\":{\"seed\":40},\"load\":{\"duration_s\":30,\"grace_s\":5},"
	    "\"goodput\":{\"request_latency\":900},"
	    "\"classes\":[{\"name\":\"chat\",\"load\":{\"mode\":\"rate\",\"rate\":5},"
	    "\"goodput\":{\"time_to_first_token\":200},\"workers\":2},"
	    "{\"name\":\"agents\",\"target\":{\"url\":\"http://127.0.0.2:9000\"},"
	    "\"workload\":{\"isl\":{\"mean\":4000}},"
	    "\"load\":{\"batch\":{\"size\":8,\"interval_s\":4,\"jitter_s\":0.5},"
	    "\"requests\":64}}]}";
	struct spec s;
	struct spec_error e;
	if (!CHECK_EQ_INT(spec_parse(j, strlen(j), 4, &s, &e), 0)) {
		fprintf(stderr, "# %s: %s\n", e.field, e.message);
		return;
	}
	CHECK_EQ_INT(s.n_classes, 2);
	CHECK_STR(s.classes[0].name, "chat");
	CHECK_EQ_INT(s.classes[0].first_worker, 0);
	CHECK_EQ_INT(s.classes[0].workers, 2);
	CHECK_EQ_INT(s.classes[1].first_worker, 2);
	CHECK_EQ_INT(s.classes[1].workers, 2); /* half the default 4 */
	CHECK_EQ_INT(s.workers, 4);
	const struct spec *c0 = s.classes[0].spec, *c1 = s.classes[1].spec;
	CHECK(c0->workload.seed == 41 && c1->workload.seed == 42);
	CHECK(c0->load.mode == SPEC_LOAD_RATE && c0->load.duration_s == 30 && c0->grace_s == 5);
	CHECK(c0->n_slo == 1 && c1->n_slo == 1); /* its own, and the run's */
	CHECK_STR(c1->target.url, "http://127.0.0.2:9000");
	CHECK_STR(c1->target.model, "m");
	CHECK(c1->load.mode == SPEC_LOAD_RATE && c1->load.batch_size == 8 &&
	      c1->load.rate == 2.0 && c1->load.batch_jitter_s == 0.5 &&
	      c1->load.arrival == SCHED_CONSTANT && c1->load.requests == 64 &&
	      c1->load.duration_s == 0);
	CHECK(c1->workload.isl.mean == 4000);
	CHECK_EQ_INT(spec_class_of_worker(&s, 1), 0);
	CHECK_EQ_INT(spec_class_of_worker(&s, 3), 1);
	CHECK_EQ_INT(spec_class_of_worker(&s, 4), -1);
	CHECK(spec_for_worker(&s, 2) == c1);
	/* the normalised spec parses to the same classes (keys may move) */
	char *norm = json_dumps(s.json, JSON_COMPACT | JSON_SORT_KEYS);
	struct spec t;
	if (CHECK_EQ_INT(spec_parse(norm, strlen(norm), 1, &t, &e), 0)) {
		char *again = json_dumps(t.json, JSON_COMPACT | JSON_SORT_KEYS);
		CHECK_STR(again, norm);
		free(again);
		CHECK(t.n_classes == 2 && t.workers == 4 && t.classes[1].spec->workload.seed == 42);
		spec_release(&t);
	}
	free(norm);
	spec_release(&s);

	static const struct {
		const char *classes, *field;
	} bad[] = {
	    {"[{\"name\":\"a\"},{\"name\":\"a\"}]", "classes[1].name"},
	    {"[{\"name\":\"a b\"}]", "classes[0].name"},
	    {"[{}]", "classes[0].name"},
	    {"[{\"name\":\"a\",\"workload\":{}}]", "classes[0].workload"},
	    {"[{\"name\":\"a\",\"target\":{\"api_key_env\":\"K\"}}]",
	     "classes[0].target.api_key_env"},
	    {"[{\"name\":\"a\",\"load\":{\"mode\":\"rate\"}}]", "classes[0].load.rate"},
	    {"[{\"name\":\"a\",\"load\":{\"batch\":{\"size\":4}}}]",
	     "classes[0].load.batch.interval_s"},
	    {"[{\"name\":\"a\",\"load\":{\"batch\":{\"size\":4,\"interval_s\":1},"
	     "\"rate\":3}}]",
	     "classes[0].load.rate"},
	    {"[{\"name\":\"a\",\"load\":{\"mode\":\"concurrency\",\"batch\":{\"size\":4,"
	     "\"interval_s\":1}}}]",
	     "classes[0].load.batch"},
	    {"[]", "classes"},
	    {"{}", "classes"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char buf[1024];
		snprintf(buf, sizeof buf,
			 "{\"target\":{\"url\":\"http://h:1\",\"model\":\"m\"},"
			 "\"load\":{\"duration_s\":3},\"classes\":%s}",
			 bad[i].classes);
		if (!CHECK_EQ_INT(spec_parse(buf, strlen(buf), 1, &s, &e), -1))
			spec_release(&s);
		CHECK_STR(e.field, bad[i].field);
	}
}

/* target.prewarm: kept only when given, a boolean */
static void test_prewarm(void)
{
	struct spec s, s2;
	struct spec_error e;
	const char *none = "{" TE("chat") "}," L "}";
	CHECK_EQ_INT(spec_parse(none, strlen(none), 2, &s, &e), 0);
	CHECK(!s.target.prewarm);
	CHECK(!json_object_get(json_object_get(s.json, "target"), "prewarm"));
	spec_release(&s);
	const char *nul = "{" TE("chat") ",\"prewarm\":null}," L "}";
	CHECK_EQ_INT(spec_parse(nul, strlen(nul), 2, &s, &e), 0);
	CHECK(!json_object_get(json_object_get(s.json, "target"), "prewarm"));
	spec_release(&s);
	const char *on = "{" TE("chat") ",\"prewarm\":true}," L "}";
	if (CHECK_EQ_INT(spec_parse(on, strlen(on), 2, &s, &e), 0)) {
		CHECK(s.target.prewarm);
		CHECK(json_is_true(json_object_get(json_object_get(s.json, "target"), "prewarm")));
		CHECK_EQ_INT(spec_from_json(s.json, 2, &s2, &e), 0);
		CHECK(s2.target.prewarm);
		CHECK(json_equal(s.json, s2.json));
		spec_release(&s2);
		spec_release(&s);
	}
	const char *bad = "{" TE("chat") ",\"prewarm\":1}," L "}";
	CHECK_EQ_INT(spec_parse(bad, strlen(bad), 2, &s, &e), -1);
	CHECK_STR(e.field, "target.prewarm");
	CHECK_STR(e.code, "wrong_type");
}

/* placement (docs/agents.md): parsed, the workers its local count, stored
 * only when given */
static void test_placement(void)
{
	const char *txt = "{\"target\":{\"url\":\"http://127.0.0.1:8000\",\"model\":\"m\"},"
			  "\"load\":{\"concurrency\":8,\"requests\":100},\"placement\":{\"local\":2,"
			  "\"agents\":[{\"selector\":{\"pool\":\"a\"},\"workers\":3},{}]}}";
	struct spec s;
	struct spec_error e;
	CHECK_EQ_INT(spec_parse(txt, strlen(txt), 4, &s, &e), 0);
	CHECK(s.placement.given);
	CHECK_EQ_INT(s.placement.local, 2);
	CHECK_EQ_INT(s.workers, 2);
	CHECK_EQ_INT(s.placement.n_agents, 2);
	CHECK_EQ_INT(s.placement.agents[0].workers, 3);
	CHECK_EQ_INT(s.placement.agents[1].workers, 1);
	CHECK_EQ_INT((int)json_object_size(s.placement.agents[1].selector), 0);
	CHECK(!s.placement.degrade);
	CHECK(!json_object_get(s.json, "workers"));
	json_t *pl = json_object_get(s.json, "placement");
	CHECK_STR(json_string_value(json_object_get(pl, "on_agent_loss")), "fail");
	/* the normalised spec parses to the same thing */
	char *norm = json_dumps(s.json, JSON_COMPACT);
	struct spec s2;
	CHECK_EQ_INT(spec_parse(norm, strlen(norm), 4, &s2, &e), 0);
	CHECK_EQ_INT(s2.placement.local, 2);
	CHECK_EQ_INT(s2.placement.n_agents, 2);
	free(norm);
	spec_release(&s2);
	spec_release(&s);
	/* absent: none stored */
	CHECK_EQ_INT(spec_parse(base, strlen(base), 4, &s, &e), 0);
	CHECK(!s.placement.given);
	CHECK(!json_object_get(s.json, "placement"));
	spec_release(&s);
}

int main(void)
{
	test_prewarm();
	test_placement();
	test_classes();
	test_defaults();
	test_api_key_header();
	test_modes();
	test_endpoints();
	test_errors();
	return tap_done();
}
