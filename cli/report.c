/* report.c - finished runs judged for CI: the exit code of `submit --wait`
 * and its reason lines, JUnit XML (one testsuite per run: run state,
 * client verdict, validity, each gate) and a Markdown summary (verdict,
 * gates, key metrics; a repeat group's figures across runs). */
#include "report.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dynbuf.h"
#include "http.h"
#include "show.h"
#include "util.h"
#include "view.h"

#define TEXT_LEN 1024 /* a gate's name, condition or detail line */

/* --- the outcome ---------------------------------------------------------------- */

static long long run_id(json_t *run)
{
	json_t *id = json_object_get(run, "id");
	return json_is_integer(id) ? (long long)json_integer_value(id) : 0;
}

static int rank(int ex)
{
	switch (ex) {
	case EXIT_OK:
		return 0;
	case EXIT_REGRESSION_GATE:
		return 1;
	case EXIT_THRESHOLD_GATE:
		return 2;
	case EXIT_INVALID:
		return 3;
	case EXIT_CLIENT_BOUND:
		return 4;
	case EXIT_RUN_FAILED:
		return 5;
	default:
		return 6;
	}
}

int report_worse(int a, int b)
{
	return rank(b) > rank(a) ? b : a;
}

static int is_client_bound(json_t *summary)
{
	json_t *cl = json_object_get(summary, "client");
	const char *v = view_str(cl, "verdict");
	return v && strcmp(v, "client_bound") == 0 &&
	       !json_is_true(json_object_get(cl, "allow_client_bound"));
}

/* The reasons of a list of {"code", "message"} as "a; b" into b. */
static void reason_list(struct dynbuf *b, json_t *list)
{
	size_t i;
	json_t *r;
	json_array_foreach(list, i, r)
	{
		const char *m = view_str(r, "message");
		if (!m)
			m = view_str(r, "code");
		if (m)
			dynbuf_printf(b, "%s%s", b->len ? "; " : "", m);
	}
}

int report_outcome(json_t *run, FILE *why)
{
	long long id = run_id(run);
	const char *state = view_str(run, "state");
	if (!state || strcmp(state, "succeeded") != 0) {
		if (why) {
			char *st = view_clean(state);
			const char *reason = view_str(run, "reason");
			char *r = view_clean(reason && *reason ? reason : "");
			fprintf(why, "headroom: run %lld ended %s%s%s\n", id, st, *r ? ": " : "",
			        r);
			free(r);
			free(st);
		}
		return EXIT_RUN_FAILED;
	}
	json_t *summary = json_object_get(run, "summary");
	int ex = EXIT_OK;
	if (is_client_bound(summary)) {
		if (why)
			fprintf(
			    why,
			    "headroom: run %lld is client_bound: the load generator, not the "
			    "server, was the limit (set client.allow_client_bound in the spec to "
			    "accept that)\n",
			    id);
		ex = report_worse(ex, EXIT_CLIENT_BOUND);
	}
	json_t *validity = json_object_get(summary, "validity");
	if (json_is_false(json_object_get(validity, "valid"))) {
		if (why) {
			struct dynbuf b;
			dynbuf_init(&b, 1u << 16);
			reason_list(&b, json_object_get(validity, "reasons"));
			char *r = view_clean(b.len ? b.data : "no reason given");
			fprintf(why, "headroom: run %lld is invalid: %s\n", id, r);
			free(r);
			dynbuf_release(&b);
		}
		ex = report_worse(ex, EXIT_INVALID);
	}
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(json_object_get(summary, "gates"), "results"), i, g)
	{
		if (!json_is_false(json_object_get(g, "passed")))
			continue;
		const char *kind = view_str(g, "kind");
		int regression = kind && strcmp(kind, "regression") == 0;
		if (why) {
			char name[TEXT_LEN], cond[TEXT_LEN], detail[TEXT_LEN];
			show_gate_name(name, sizeof name, g);
			show_gate_condition(cond, sizeof cond, g);
			if (regression)
				show_gate_baseline(detail, sizeof detail, g, summary);
			else
				show_gate_actual(detail, sizeof detail, g, summary);
			fprintf(why, "headroom: run %lld failed the %s gate %s%s%s", id,
			        regression ? "regression" : "threshold", name,
			        strcmp(name, cond) ? ": " : "", strcmp(name, cond) ? cond : "");
			fprintf(why, regression ? "; %s\n" : " (actual %s)\n", detail);
		}
		ex = report_worse(ex, regression ? EXIT_REGRESSION_GATE : EXIT_THRESHOLD_GATE);
	}
	return ex;
}

/* The reason lines of report_outcome as a string (caller frees), or NULL
 * when there are none. */
static char *outcome_text(json_t *run, int *ex)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		xalloc_die();
	*ex = report_outcome(run, m);
	fclose(m);
	if (len == 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* What an exit code says about a run, for headlines. */
static const char *outcome_words(int ex)
{
	switch (ex) {
	case EXIT_OK:
		return "passed";
	case EXIT_RUN_FAILED:
		return "the run did not succeed";
	case EXIT_CLIENT_BOUND:
		return "client-bound (the load generator was the limit)";
	case EXIT_INVALID:
		return "invalid";
	case EXIT_THRESHOLD_GATE:
		return "a threshold gate failed";
	case EXIT_REGRESSION_GATE:
		return "a regression gate failed";
	default:
		return "failed";
	}
}

/* Seconds from started_at to finished_at, or -1. */
static double run_seconds(json_t *run)
{
	int64_t t0, t1;
	if (view_parse_time(view_str(run, "started_at"), &t0) == 0 &&
	    view_parse_time(view_str(run, "finished_at"), &t1) == 0 && t1 >= t0)
		return (double)(t1 - t0) / 1000;
	return -1;
}

/* --- JUnit XML -------------------------------------------------------------------- */

enum jstatus { J_PASS, J_FAIL, J_SKIP };

struct jcase {
	const char *classname;
	char *name, *message, *type, *detail; /* owned; message etc. NULL when passed */
	enum jstatus status;
	double time;
};

struct jsuite {
	struct jcase *cases;
	size_t n, cap;
};

static void jadd(struct jsuite *s, const char *classname, const char *name, enum jstatus st,
                 const char *message, const char *type, const char *detail, double time)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->cases = xrealloc(s->cases, s->cap * sizeof(*s->cases));
	}
	s->cases[s->n++] = (struct jcase){classname,
	                                  xstrdup(name),
	                                  message ? xstrdup(message) : NULL,
	                                  type ? xstrdup(type) : NULL,
	                                  detail ? xstrdup(detail) : NULL,
	                                  st,
	                                  time};
}

static void jsuite_release(struct jsuite *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->cases[i].name);
		free(s->cases[i].message);
		free(s->cases[i].type);
		free(s->cases[i].detail);
	}
	free(s->cases);
}

/* s as XML character data (attr: inside a double-quoted attribute, where
 * line breaks and tabs are written as references): markup escaped, and
 * characters XML does not allow (C0 controls, U+FFFE, U+FFFF) as '?'. */
static void xml_put(FILE *out, const char *s, int attr)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '&')
			fputs("&amp;", out);
		else if (*p == '<')
			fputs("&lt;", out);
		else if (*p == '>')
			fputs("&gt;", out);
		else if (*p == '"')
			fputs("&quot;", out);
		else if (*p == '\'')
			fputs("&apos;", out);
		else if (attr && (*p == '\n' || *p == '\r' || *p == '\t'))
			fprintf(out, "&#%d;", *p);
		else if (*p < 0x20 && *p != '\n' && *p != '\r' && *p != '\t')
			fputc('?', out);
		else if (p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)) {
			fputc('?', out);
			p += 2;
		} else
			fputc(*p, out);
	}
}

static void xml_attr(FILE *out, const char *name, const char *value)
{
	fprintf(out, " %s=\"", name);
	xml_put(out, value, 1);
	fputc('"', out);
}

/* A gate's detail: condition, actual figure, baseline and message, one per
 * line. Caller frees. */
static char *gate_detail(json_t *g, json_t *summary)
{
	char cond[TEXT_LEN], actual[TEXT_LEN], base[TEXT_LEN];
	struct dynbuf b;
	dynbuf_init(&b, 1u << 16);
	dynbuf_printf(&b, "condition: %s\nactual: %s\n", show_gate_condition(cond, sizeof cond, g),
	              show_gate_actual(actual, sizeof actual, g, summary));
	if (*show_gate_baseline(base, sizeof base, g, summary))
		dynbuf_printf(&b, "%s\n", base);
	const char *msg = view_str(g, "message");
	if (msg && *msg)
		dynbuf_printf(&b, "%s\n", msg);
	return dynbuf_take(&b, NULL);
}

/* The testcases of one run. */
static void run_cases(struct jsuite *s, json_t *run)
{
	long long id = run_id(run);
	const char *state = view_str(run, "state");
	int ok = state && strcmp(state, "succeeded") == 0;
	double secs = run_seconds(run);
	char msg[TEXT_LEN];
	if (ok) {
		jadd(s, "headroom.run", "run state", J_PASS, NULL, NULL, NULL, secs > 0 ? secs : 0);
	} else {
		const char *reason = view_str(run, "reason");
		snprintf(msg, sizeof msg, "run %lld ended %s", id,
		         state ? state : "in no known state");
		jadd(s, "headroom.run", "run state", J_FAIL, msg, state ? state : "unknown",
		     reason ? reason : msg, secs > 0 ? secs : 0);
	}

	json_t *summary = json_object_get(run, "summary");
	json_t *cl = json_object_get(summary, "client");
	const char *verdict = view_str(cl, "verdict");
	if (!verdict) {
		jadd(s, "headroom.run", "client verdict", J_SKIP,
		     "no client verdict in the summary", NULL, NULL, 0);
	} else if (is_client_bound(summary)) {
		struct dynbuf b;
		dynbuf_init(&b, 1u << 16);
		reason_list(&b, json_object_get(cl, "reasons"));
		snprintf(msg, sizeof msg,
		         "run %lld is client_bound: the load generator, not the server, was the "
		         "limit",
		         id);
		jadd(s, "headroom.run", "client verdict", J_FAIL, msg, "client_bound",
		     b.len ? b.data : msg, 0);
		dynbuf_release(&b);
	} else {
		jadd(s, "headroom.run", "client verdict", J_PASS, NULL, NULL, NULL, 0);
	}

	json_t *validity = json_object_get(summary, "validity");
	json_t *valid = json_object_get(validity, "valid");
	if (json_is_false(valid)) {
		struct dynbuf b;
		dynbuf_init(&b, 1u << 16);
		reason_list(&b, json_object_get(validity, "reasons"));
		snprintf(msg, sizeof msg, "run %lld is invalid", id);
		jadd(s, "headroom.run", "validity", J_FAIL, msg, "invalid", b.len ? b.data : msg,
		     0);
		dynbuf_release(&b);
	} else if (json_is_true(valid)) {
		jadd(s, "headroom.run", "validity", J_PASS, NULL, NULL, NULL, 0);
	} else {
		jadd(s, "headroom.run", "validity", J_SKIP, "no validity in the summary", NULL,
		     NULL, 0);
	}

	json_t *results = json_object_get(json_object_get(summary, "gates"), "results");
	size_t i;
	json_t *g;
	char name[TEXT_LEN];
	if (json_is_array(results)) {
		json_array_foreach(results, i, g)
		{
			show_gate_name(name, sizeof name, g);
			json_t *passed = json_object_get(g, "passed");
			if (json_is_true(passed)) {
				jadd(s, "headroom.gates", name, J_PASS, NULL, NULL, NULL, 0);
				continue;
			}
			char *detail = gate_detail(g, summary);
			const char *m = view_str(g, "message");
			char cond[TEXT_LEN], actual[TEXT_LEN];
			if (!m || !*m) {
				snprintf(msg, sizeof msg, "%s failed (actual %s)",
				         show_gate_condition(cond, sizeof cond, g),
				         show_gate_actual(actual, sizeof actual, g, summary));
				m = msg;
			}
			const char *kind = view_str(g, "kind");
			jadd(s, "headroom.gates", name, json_is_false(passed) ? J_FAIL : J_SKIP, m,
			     kind ? kind : "gate", detail, 0);
			free(detail);
		}
		return;
	}
	/* no results (the run ended without a summary): the spec's gates, skipped */
	json_array_foreach(json_object_get(json_object_get(run, "spec"), "gates"), i, g)
	{
		show_gate_name(name, sizeof name, g);
		jadd(s, "headroom.gates", name, J_SKIP, "not judged: the run has no gate results",
		     NULL, NULL, 0);
	}
}

static size_t count(const struct jsuite *s, enum jstatus st)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += s->cases[i].status == st;
	return n;
}

static void suite_xml(FILE *out, const struct jsuite *s, json_t *run)
{
	char num[64], when[64] = "";
	snprintf(num, sizeof num, "headroom run %lld", run_id(run));
	fputs("  <testsuite", out);
	xml_attr(out, "name", num);
	fprintf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\"", s->n,
	        count(s, J_FAIL), count(s, J_SKIP));
	double secs = run_seconds(run);
	fprintf(out, " time=\"%.3f\"", secs > 0 ? secs : 0);
	int64_t ms;
	const char *t0 = view_str(run, "started_at");
	if (!t0)
		t0 = view_str(run, "created_at");
	if (view_parse_time(t0, &ms) == 0) {
		time_t t = (time_t)(ms / 1000);
		struct tm tm;
		if (gmtime_r(&t, &tm) && strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm))
			xml_attr(out, "timestamp", when);
	}
	fputs(">\n    <properties>\n", out);
	static const char *const props[] = {"id",     "name",        "state",
	                                    "reason", "fingerprint", "group_id"};
	for (size_t k = 0; k < HR_ARRAY_LEN(props); k++) {
		json_t *v = json_object_get(run, props[k]);
		char val[TEXT_LEN];
		if (!v || json_is_null(v) || json_is_object(v) || json_is_array(v))
			continue;
		fputs("      <property", out);
		xml_attr(out, "name", props[k]);
		xml_attr(out, "value", view_scalar(val, sizeof val, v));
		fputs("/>\n", out);
	}
	fputs("    </properties>\n", out);
	for (size_t i = 0; i < s->n; i++) {
		const struct jcase *c = &s->cases[i];
		fputs("    <testcase", out);
		xml_attr(out, "classname", c->classname);
		xml_attr(out, "name", c->name);
		fprintf(out, " time=\"%.3f\"", c->time);
		if (c->status == J_PASS) {
			fputs("/>\n", out);
			continue;
		}
		fputs(">\n      <", out);
		fputs(c->status == J_FAIL ? "failure" : "skipped", out);
		xml_attr(out, "message", c->message);
		if (c->status == J_FAIL) {
			xml_attr(out, "type", c->type);
			fputc('>', out);
			xml_put(out, c->detail, 0);
			fputs("</failure>\n", out);
		} else {
			fputs("/>\n", out);
		}
		fputs("    </testcase>\n", out);
	}
	fputs("  </testsuite>\n", out);
}

void report_junit(FILE *out, json_t *const *runs, size_t n)
{
	struct jsuite *suites = xcalloc(n ? n : 1, sizeof(*suites));
	size_t tests = 0, failures = 0, skipped = 0;
	double secs = 0;
	for (size_t i = 0; i < n; i++) {
		run_cases(&suites[i], runs[i]);
		tests += suites[i].n;
		failures += count(&suites[i], J_FAIL);
		skipped += count(&suites[i], J_SKIP);
		double t = run_seconds(runs[i]);
		secs += t > 0 ? t : 0;
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out,
	        "<testsuites name=\"headroom\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
	        "skipped=\"%zu\" time=\"%.3f\">\n",
	        tests, failures, skipped, secs);
	for (size_t i = 0; i < n; i++) {
		suite_xml(out, &suites[i], runs[i]);
		jsuite_release(&suites[i]);
	}
	fputs("</testsuites>\n", out);
	free(suites);
}

/* --- Markdown ------------------------------------------------------------------- */

char *report_md_text(const char *s)
{
	struct dynbuf b;
	dynbuf_init(&b, HTTP_MAX_BODY); /* as long as any string of an answer */
	const unsigned char *start = (const unsigned char *)(s ? s : "-");
	for (const unsigned char *p = start; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			dynbuf_addstr(&b, " ");
		else if (*p == '<')
			dynbuf_addstr(&b, "&lt;");
		else if (*p == '>')
			dynbuf_addstr(&b, "&gt;");
		else if (*p == '&')
			dynbuf_addstr(&b, "&amp;");
		else if (strchr("\\`*[]|~", *p) ||
		         (*p == '_' && (p == start || !isalnum(p[-1]) || !isalnum(p[1])))) {
			/* '_' inside a word is no emphasis in GitHub's Markdown */
			char esc[3] = {'\\', (char)*p, 0};
			dynbuf_addstr(&b, esc);
		} else {
			dynbuf_add(&b, p, 1);
		}
	}
	return dynbuf_take(&b, NULL);
}

/* Writes s escaped for Markdown. */
static void md_put(FILE *out, const char *s)
{
	char *t = report_md_text(s);
	fputs(t, out);
	free(t);
}

static const char *mark(int ok)
{
	return ok ? "✅" : "❌";
}

/* The per-request metrics and the throughputs a summary shows first. */
static const char *const key_latencies[] = {"time_to_first_token", "inter_token_latency",
                                            "request_latency"};
static const char *const key_throughputs[] = {"request_throughput", "output_token_throughput",
                                              "total_token_throughput"};

/* "Time to First Token (ms)", escaped. Caller frees. */
static char *md_metric(const char *tag, const char *unit)
{
	char *name = show_metric_name(tag);
	char *label = unit && *unit ? xasprintf("%s (%s)", name, unit) : xstrdup(name);
	char *t = report_md_text(label);
	free(label);
	free(name);
	return t;
}

static void md_key_metrics(FILE *out, json_t *summary)
{
	json_t *metrics = json_object_get(summary, "metrics");
	int header = 0;
	for (size_t i = 0; i < HR_ARRAY_LEN(key_latencies); i++) {
		json_t *m = json_object_get(metrics, key_latencies[i]);
		if (!json_is_object(m))
			continue;
		if (!header++)
			fputs("\n| metric | p50 | p99 | avg |\n|---|---:|---:|---:|\n", out);
		char *label = md_metric(key_latencies[i], view_str(m, "unit"));
		fprintf(out, "| %s", label);
		free(label);
		static const char *const stats[] = {"p50", "p99", "avg"};
		for (size_t k = 0; k < HR_ARRAY_LEN(stats); k++) {
			char num[VIEW_NUMLEN];
			double x;
			fprintf(out, " | %s",
			        view_num(m, stats[k], &x) ? view_fmt_num(num, x) : "-");
		}
		fputs(" |\n", out);
	}
	header = 0;
	for (size_t i = 0; i < HR_ARRAY_LEN(key_throughputs); i++) {
		json_t *m = json_object_get(metrics, key_throughputs[i]);
		double x;
		if (!json_is_object(m) || !view_num(m, "avg", &x))
			continue;
		if (!header++)
			fputs("\n| throughput | |\n|---|---:|\n", out);
		char *label = md_metric(key_throughputs[i], view_str(m, "unit"));
		char num[VIEW_NUMLEN];
		fprintf(out, "| %s | %s |\n", label, view_fmt_num(num, x));
		free(label);
	}
}

static void md_gates(FILE *out, json_t *summary)
{
	json_t *results = json_object_get(json_object_get(summary, "gates"), "results");
	if (!json_array_size(results))
		return;
	fputs("\n| gate | kind | condition | actual | result |\n|---|---|---|---:|---|\n", out);
	size_t i;
	json_t *g;
	json_array_foreach(results, i, g)
	{
		char name[TEXT_LEN], cond[TEXT_LEN], actual[TEXT_LEN];
		json_t *passed = json_object_get(g, "passed");
		fputs("| ", out);
		md_put(out, show_gate_name(name, sizeof name, g));
		fputs(" | ", out);
		md_put(out, view_str(g, "kind"));
		fputs(" | ", out);
		md_put(out, show_gate_condition(cond, sizeof cond, g));
		fputs(" | ", out);
		md_put(out, show_gate_actual(actual, sizeof actual, g, summary));
		fprintf(out, " | %s |\n",
		        json_is_true(passed)    ? "✅ pass"
		        : json_is_false(passed) ? "❌ **fail**"
		                                : "-");
	}
	json_array_foreach(results, i, g)
	{
		char name[TEXT_LEN], base[TEXT_LEN];
		if (!*show_gate_baseline(base, sizeof base, g, summary))
			continue;
		fputs("\n- ", out);
		md_put(out, show_gate_name(name, sizeof name, g));
		fputs(": ", out);
		md_put(out, base);
	}
	fputc('\n', out);
}

/* The cells of a run's facts: state, client verdict, validity, gates. */
static const char *validity_word(json_t *summary)
{
	json_t *v = json_object_get(json_object_get(summary, "validity"), "valid");
	return json_is_true(v) ? "valid" : json_is_false(v) ? "**invalid**" : "-";
}

static void gates_words(char *buf, size_t n, json_t *summary)
{
	json_t *results = json_object_get(json_object_get(summary, "gates"), "results");
	size_t pass = 0, fail = 0, i;
	json_t *g;
	json_array_foreach(results, i, g)
	{
		pass += json_is_true(json_object_get(g, "passed"));
		fail += json_is_false(json_object_get(g, "passed"));
	}
	if (!json_is_array(results))
		snprintf(buf, n, "-");
	else if (fail)
		snprintf(buf, n, "%zu passed, **%zu failed**", pass, fail);
	else
		snprintf(buf, n, "%zu passed", pass);
}

/* One run's section; level: the heading's '#' count. */
static void md_run(FILE *out, json_t *run, int level)
{
	int ex;
	char *why = outcome_text(run, &ex);
	json_t *summary = json_object_get(run, "summary");
	fprintf(out, "%.*s %s headroom run %lld: ", level, "######", mark(ex == EXIT_OK),
	        run_id(run));
	md_put(out, view_str(run, "name"));
	fprintf(out, " — %s\n\n", outcome_words(ex));
	fputs("| | |\n|---|---|\n| state | ", out);
	md_put(out, view_str(run, "state"));
	double secs = run_seconds(run);
	char dur[32];
	if (secs >= 0)
		fprintf(out, " (took %s)",
		        view_fmt_duration(dur, sizeof dur, (int64_t)(secs * 1000)));
	fputs(" |\n| client verdict | ", out);
	md_put(out, view_str(json_object_get(summary, "client"), "verdict"));
	fprintf(out, " |\n| validity | %s |\n", validity_word(summary));
	char gates[128];
	gates_words(gates, sizeof gates, summary);
	fprintf(out, "| gates | %s |\n", gates);
	if (why) {
		fputc('\n', out);
		for (char *line = strtok(why, "\n"); line; line = strtok(NULL, "\n")) {
			fputs("- ", out);
			md_put(out, strncmp(line, "headroom: ", 10) == 0 ? line + 10 : line);
			fputc('\n', out);
		}
	}
	free(why);
	md_gates(out, summary);
	md_key_metrics(out, summary);
}

/* A repeat group's figures across runs for the key metrics. */
static void md_group_metrics(FILE *out, json_t *group)
{
	json_t *gs = json_object_get(group, "summary");
	json_t *metrics = json_object_get(gs, "metrics");
	if (!json_is_object(metrics))
		return;
	double conf;
	char c[VIEW_NUMLEN], num[VIEW_NUMLEN];
	fprintf(out,
	        "\nAcross runs (%s runs succeeded; %s%% confidence intervals of the mean):\n\n",
	        view_scalar(num, sizeof num, json_object_get(gs, "repeats")),
	        view_num(gs, "confidence", &conf) && snprintf(c, sizeof c, "%.4g", conf * 100) > 0
	            ? c
	            : "95");
	fputs("| metric | stat | mean | std | CI |\n|---|---|---:|---:|---|\n", out);
	for (size_t i = 0; i < HR_ARRAY_LEN(key_latencies) + HR_ARRAY_LEN(key_throughputs); i++) {
		const char *tag = i < HR_ARRAY_LEN(key_latencies)
		                      ? key_latencies[i]
		                      : key_throughputs[i - HR_ARRAY_LEN(key_latencies)];
		json_t *m = json_object_get(metrics, tag);
		if (!json_is_object(m))
			continue;
		static const char *const stats[] = {"p50", "p99", "avg", "value"};
		for (size_t k = 0; k < HR_ARRAY_LEN(stats); k++) {
			json_t *st = json_object_get(m, stats[k]);
			double mean, sd;
			if (!view_num(st, "mean", &mean))
				continue;
			char *label = md_metric(tag, view_str(m, "unit"));
			char a[VIEW_NUMLEN], b[VIEW_NUMLEN] = "-", lo[VIEW_NUMLEN], hi[VIEW_NUMLEN];
			if (view_num(st, "std", &sd))
				view_fmt_num(b, sd);
			json_t *ci = json_object_get(st, "ci");
			fprintf(out, "| %s | %s | %s | %s | ", label, stats[k],
			        view_fmt_num(a, mean), b);
			if (json_array_size(ci) == 2 && json_is_number(json_array_get(ci, 0)) &&
			    json_is_number(json_array_get(ci, 1)))
				fprintf(out, "%s .. %s |\n",
				        view_fmt_num(lo, json_number_value(json_array_get(ci, 0))),
				        view_fmt_num(hi, json_number_value(json_array_get(ci, 1))));
			else
				fputs("- |\n", out);
			free(label);
		}
	}
}

void report_markdown(FILE *out, json_t *const *runs, size_t n, json_t *group)
{
	if (!group && n == 1) {
		md_run(out, runs[0], 3);
		fputc('\n', out);
		return;
	}
	int ex = EXIT_OK;
	for (size_t i = 0; i < n; i++)
		ex = report_worse(ex, report_outcome(runs[i], NULL));
	char gid[32];
	fprintf(out, "### %s headroom group %s: ", mark(ex == EXIT_OK),
	        view_scalar(gid, sizeof gid, json_object_get(group, "id")));
	md_put(out, n ? view_str(runs[0], "name") : NULL);
	fprintf(out, " — %zu runs, %s\n\n", n, outcome_words(ex));
	fputs("| run | state | client verdict | validity | gates | result |\n"
	      "|---:|---|---|---|---|---|\n",
	      out);
	for (size_t i = 0; i < n; i++) {
		json_t *summary = json_object_get(runs[i], "summary");
		char gates[128];
		gates_words(gates, sizeof gates, summary);
		int rex = report_outcome(runs[i], NULL);
		fprintf(out, "| %lld | ", run_id(runs[i]));
		md_put(out, view_str(runs[i], "state"));
		fputs(" | ", out);
		md_put(out, view_str(json_object_get(summary, "client"), "verdict"));
		fprintf(out, " | %s | %s | %s %s |\n", validity_word(summary), gates,
		        mark(rex == EXIT_OK), outcome_words(rex));
	}
	md_group_metrics(out, group);
	for (size_t i = 0; i < n; i++) {
		int rex = report_outcome(runs[i], NULL);
		fprintf(out, "\n<details><summary>run %lld: %s</summary>\n\n", run_id(runs[i]),
		        outcome_words(rex));
		md_run(out, runs[i], 4);
		fputs("\n</details>\n", out);
	}
	fputc('\n', out);
}
