/* history.c - the commands on the run history: `label` (PATCH a run's
 * labels, note and pin), `delete` (DELETE a run) and `compare` (GET
 * /compare, rendered as a table, as Markdown for a pull request, or the
 * daemon's JSON as it came). Answers are untrusted: read with type checks,
 * printed through view.h (and report_md_text for Markdown). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "http.h"
#include "report.h"
#include "show.h"
#include "table.h"
#include "util.h"
#include "view.h"

#define CELL_LEN 256  /* a value in a difference line, cut */
#define NAME_LEN 1024 /* a side's description */

/* --- label and delete --------------------------------------------------------------- */

/* The PATCH body of `label`: labels set (K=V) and removed (K-, null), the
 * note ("" removes it: null) and the pin. NULL, with a message printed,
 * when a label is not UTF-8. */
static json_t *label_body(const struct cli_opts *o)
{
	json_t *body = json_object(), *labels = json_object();
	for (int i = 0; i < o->nchanges; i++) {
		const char *a = o->changes[i], *eq = strchr(a, '=');
		char *key = eq ? xstrndup(a, (size_t)(eq - a)) : xstrndup(a, strlen(a) - 1);
		json_t *v = eq ? json_string(eq + 1) : json_null();
		if (!v || json_object_set_new(labels, key, v) < 0) {
			fprintf(stderr, "headroom: '%s' is not UTF-8 text\n", a);
			free(key);
			json_decref(labels);
			json_decref(body);
			return NULL;
		}
		free(key);
	}
	if (json_object_size(labels))
		json_object_set_new(body, "labels", labels);
	else
		json_decref(labels);
	if (o->set_note) {
		json_t *note = *o->note ? json_string(o->note) : json_null();
		if (!note) {
			fputs("headroom: --note is not UTF-8 text\n", stderr);
			json_decref(body);
			return NULL;
		}
		json_object_set_new(body, "note", note);
	}
	if (o->pin)
		json_object_set_new(body, "pinned", json_boolean(o->pin > 0));
	return body;
}

int cmd_label(const struct cli_opts *o)
{
	json_t *body = label_body(o);
	if (!body)
		return EXIT_USAGE;
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK) {
		json_decref(body);
		return ex;
	}
	char *path = xasprintf("/runs/%lld", o->id);
	char *text = json_object_size(body) ? json_dumps(body, JSON_COMPACT) : NULL;
	json_t *run = text ? cli_call(&c, CLI_PATCH, path, text, strlen(text), &ex)
	                   : cli_call(&c, CLI_GET, path, NULL, 0, &ex);
	if (run) {
		char *name = view_clean(view_str(run, "name"));
		printf("run %lld: %s\n", o->id, name);
		free(name);
		json_t *labels = json_object_get(run, "labels");
		if (!json_is_object(labels) || json_object_size(labels) == 0)
			printf("  %-9s %s\n", "labels", "-");
		show_labels(stdout, run);
		json_decref(run);
	}
	free(text);
	free(path);
	json_decref(body);
	http_client_release(&c);
	return ex;
}

int cmd_delete(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = xasprintf("/runs/%lld", o->id);
	json_t *ans = cli_call(&c, CLI_DELETE, path, NULL, 0, &ex);
	if (ans)
		printf("run %lld deleted\n", o->id);
	json_decref(ans);
	free(path);
	http_client_release(&c);
	return ex;
}

/* --- compare ------------------------------------------------------------------------ */

/* Any JSON value as one line of text (objects and arrays compact),
 * cleaned and cut to CELL_LEN code points. Caller frees. */
static char *any_text(json_t *v)
{
	char buf[CELL_LEN];
	if (!v || json_is_null(v))
		return xstrdup("-");
	if (!json_is_object(v) && !json_is_array(v))
		return xstrdup(view_scalar(buf, sizeof buf, v));
	char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	char *c = view_clean(dump ? dump : "-");
	free(dump);
	size_t i = 0, w = 0;
	for (; c[i]; i++)
		if (((unsigned char)c[i] & 0xc0) != 0x80 && w++ == CELL_LEN - 4)
			break;
	if (c[i]) {
		char *cut = xasprintf("%.*s...", (int)i, c);
		free(c);
		return cut;
	}
	return c;
}

/* A number with the unit ("20.50 ms"), signed when sign ("+2.10 ms"); "-"
 * when v is not a number. */
static const char *num_unit(char *buf, size_t n, json_t *v, const char *unit, int sign)
{
	char num[VIEW_NUMLEN];
	if (!json_is_number(v)) {
		snprintf(buf, n, "-");
		return buf;
	}
	double x = json_number_value(v);
	view_fmt_num(num, x);
	snprintf(buf, n, "%s%s%s%s", sign && x > 0 && strcmp(num, "-") ? "+" : "", num,
	         unit && *unit ? " " : "", unit && *unit ? unit : "");
	return buf;
}

/* "[+8.80, +11.70]" from a two-number array, else "-". */
static const char *ci_text(char *buf, size_t n, json_t *ci)
{
	json_t *lo = json_array_get(ci, 0), *hi = json_array_get(ci, 1);
	if (json_array_size(ci) != 2 || !json_is_number(lo) || !json_is_number(hi)) {
		snprintf(buf, n, "-");
		return buf;
	}
	char a[VIEW_NUMLEN + 2], b[VIEW_NUMLEN + 2];
	show_pct(a, json_number_value(lo));
	show_pct(b, json_number_value(hi));
	a[strlen(a) - 1] = b[strlen(b) - 1] = '\0'; /* the title says (%) */
	snprintf(buf, n, "[%s, %s]", a, b);
	return buf;
}

/* The cells of one metric row: METRIC STAT BASE HEAD DIFF DIFF% CI(%)
 * VERDICT, as text (not yet escaped for Markdown). */
struct row {
	char metric[CELL_LEN], stat[64], base[VIEW_NUMLEN + 64], head[VIEW_NUMLEN + 64],
	    diff[VIEW_NUMLEN + 64], pct[VIEW_NUMLEN + 2], ci[2 * VIEW_NUMLEN + 8], verdict[64];
};

static void metric_row(struct row *r, json_t *m)
{
	char unit_buf[64];
	view_scalar(r->metric, sizeof r->metric, json_object_get(m, "metric"));
	view_scalar(r->stat, sizeof r->stat, json_object_get(m, "stat"));
	const char *unit = view_str(m, "unit")
	                       ? view_scalar(unit_buf, sizeof unit_buf, json_object_get(m, "unit"))
	                       : NULL;
	num_unit(r->base, sizeof r->base, json_object_get(m, "base"), unit, 0);
	num_unit(r->head, sizeof r->head, json_object_get(m, "head"), unit, 0);
	num_unit(r->diff, sizeof r->diff, json_object_get(m, "diff"), unit, 1);
	double d;
	if (view_num(m, "diff_pct", &d))
		show_pct(r->pct, d);
	else
		snprintf(r->pct, sizeof r->pct, "-");
	ci_text(r->ci, sizeof r->ci, json_object_get(m, "ci_pct"));
	view_scalar(r->verdict, sizeof r->verdict, json_object_get(m, "verdict"));
}

/* "run 12: llama3 c16, 640 records" / "runs 12,13,14: ..., 3 runs, 1920
 * records" for one side of the comparison. */
static void side_text(char *buf, size_t n, json_t *side)
{
	struct dynbuf b;
	dynbuf_init(&b, 1u << 16);
	json_t *runs = json_object_get(side, "runs");
	dynbuf_addstr(&b, json_array_size(runs) == 1 ? "run " : "runs ");
	size_t i;
	json_t *r;
	json_array_foreach(runs, i, r)
	{
		char id[32];
		dynbuf_printf(&b, "%s%s", i ? "," : "", view_scalar(id, sizeof id, r));
	}
	const char *name = view_str(side, "name");
	if (name)
		dynbuf_printf(&b, ": %s", name);
	char num[32];
	json_t *nr = json_object_get(side, "n_runs");
	if (json_is_integer(nr) && json_integer_value(nr) > 1)
		dynbuf_printf(&b, ", %s runs", view_scalar(num, sizeof num, nr));
	json_t *rec = json_object_get(side, "records");
	if (json_is_integer(rec))
		dynbuf_printf(&b, ", %s records", view_scalar(num, sizeof num, rec));
	char *c = view_clean(b.data ? b.data : "-");
	snprintf(buf, n, "%s", c);
	free(c);
	dynbuf_release(&b);
}

/* "**2 worse**, 1 better, 30 unchanged, 5 inconclusive" (md: with the bold
 * worse), "changed" only when there are any. */
static void counts_text(char *buf, size_t n, json_t *counts, int md)
{
	static const char *const kinds[] = {"worse", "better", "unchanged", "inconclusive",
	                                    "changed"};
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < HR_ARRAY_LEN(kinds); i++) {
		json_t *v = json_object_get(counts, kinds[i]);
		long long k = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
		if (i == 4 && k == 0)
			continue;
		int bold = md && i == 0 && k > 0;
		int w = snprintf(buf + len, n - len, "%s%s%lld %s%s", len ? ", " : "",
		                 bold ? "**" : "", k, kinds[i], bold ? "**" : "");
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
}

/* "compared by requests at 95% confidence, noise 5%, 2000 resamples, seed 1" */
static void method_text(char *buf, size_t n, json_t *ans)
{
	char level[64], conf[VIEW_NUMLEN], noise[VIEW_NUMLEN], res[32], seed[32];
	double c, x;
	view_scalar(level, sizeof level, json_object_get(ans, "level"));
	snprintf(conf, sizeof conf, "-");
	if (view_num(ans, "confidence", &c))
		snprintf(conf, sizeof conf, "%.4g", c * 100);
	snprintf(noise, sizeof noise, "-");
	if (view_num(ans, "noise_pct", &x))
		snprintf(noise, sizeof noise, "%.4g", x);
	snprintf(buf, n, "compared by %s at %s%% confidence, noise %s%%, %s resamples, seed %s",
	         level, conf, noise,
	         view_scalar(res, sizeof res, json_object_get(ans, "resamples")),
	         view_scalar(seed, sizeof seed, json_object_get(ans, "seed")));
}

/* The differences list of the answer (spec_differences: "field";
 * label_differences: "label") as a table whose first column is titled
 * title (text), or a Markdown table under a heading (md). */
static void differences(FILE *out, json_t *ans, const char *member, const char *key,
                        const char *title, int md)
{
	json_t *list = json_object_get(ans, member);
	if (!json_array_size(list))
		return;
	struct table *t = NULL;
	if (md) {
		fprintf(out, "\n**%s differences**\n\n| %s | base | head |\n|---|---|---|\n",
		        strcmp(key, "field") == 0 ? "Spec" : "Label", title);
	} else {
		t = table_new(3);
		table_column(t, 0, title, TABLE_LEFT);
		table_column(t, 1, "BASE", TABLE_LEFT);
		table_column(t, 2, "HEAD", TABLE_LEFT);
		fputc('\n', out);
	}
	size_t i;
	json_t *d;
	json_array_foreach(list, i, d)
	{
		char *k = any_text(json_object_get(d, key));
		char *b = any_text(json_object_get(d, "base"));
		char *h = any_text(json_object_get(d, "head"));
		if (md) {
			char *mk = report_md_text(k), *mb = report_md_text(b),
			     *mh = report_md_text(h);
			fprintf(out, "| %s | %s | %s |\n", mk, mb, mh);
			free(mk);
			free(mb);
			free(mh);
		} else {
			const char *cells[3] = {k, b, h};
			table_add_row(t, cells);
		}
		free(k);
		free(b);
		free(h);
	}
	if (t) {
		table_print(t, out, TABLE_PLAIN);
		table_free(t);
	}
}

static void warnings(FILE *out, json_t *ans, int md)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(ans, "warnings"), i, w)
	{
		char side[32], code[64];
		view_scalar(side, sizeof side, json_object_get(w, "side"));
		view_scalar(code, sizeof code, json_object_get(w, "code"));
		const char *msg = view_str(w, "message");
		if (md) {
			char *m = report_md_text(msg ? msg : code), *s = report_md_text(side);
			fprintf(out, "> ⚠️ %s: %s\n", s, m);
			free(m);
			free(s);
		} else {
			char *m = view_clean(msg ? msg : code);
			fprintf(out, "warning: %s: %s\n", side, m);
			free(m);
		}
	}
}

static void compare_table(FILE *out, json_t *ans)
{
	char text[NAME_LEN];
	char ref[CELL_LEN];
	json_t *base = json_object_get(ans, "base"), *head = json_object_get(ans, "head");
	side_text(text, sizeof text, base);
	fprintf(out, "base  %s = %s\n", view_scalar(ref, sizeof ref, json_object_get(base, "ref")),
	        text);
	side_text(text, sizeof text, head);
	fprintf(out, "head  %s = %s\n", view_scalar(ref, sizeof ref, json_object_get(head, "ref")),
	        text);
	method_text(text, sizeof text, ans);
	fprintf(out, "%s\n", text);
	warnings(out, ans, 0);
	fputc('\n', out);

	static const char *const titles[] = {"METRIC", "STAT",  "BASE",  "HEAD",
	                                     "DIFF",   "DIFF%", "CI(%)", "VERDICT"};
	struct table *t = table_new(HR_ARRAY_LEN(titles));
	for (size_t k = 0; k < HR_ARRAY_LEN(titles); k++)
		table_column(t, k, titles[k], k >= 2 && k <= 5 ? TABLE_RIGHT : TABLE_LEFT);
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(ans, "metrics"), i, m)
	{
		struct row r;
		metric_row(&r, m);
		const char *cells[8] = {r.metric, r.stat, r.base, r.head,
		                        r.diff,   r.pct,  r.ci,   r.verdict};
		table_add_row(t, cells);
	}
	table_print(t, out, TABLE_PLAIN);
	table_free(t);
	differences(out, ans, "spec_differences", "field", "SPEC FIELD", 0);
	differences(out, ans, "label_differences", "label", "LABEL", 0);
	counts_text(text, sizeof text, json_object_get(ans, "counts"), 0);
	fprintf(out, "\n%s\n", text);
}

/* Markdown rows of the metrics whose verdict is (unchanged) or is not
 * (!unchanged) "unchanged". Returns how many. */
static size_t md_rows(FILE *out, json_t *ans, int unchanged)
{
	size_t i, n = 0;
	json_t *m;
	json_array_foreach(json_object_get(ans, "metrics"), i, m)
	{
		const char *v = view_str(m, "verdict");
		if ((v && strcmp(v, "unchanged") == 0) != unchanged)
			continue;
		if (!n++)
			fputs("| metric | stat | base | head | diff | diff % | CI (%) | verdict |\n"
			      "|---|---|---:|---:|---:|---:|---|---|\n",
			      out);
		struct row r;
		metric_row(&r, m);
		const char *cells[8] = {r.metric, r.stat, r.base, r.head,
		                        r.diff,   r.pct,  r.ci,   r.verdict};
		for (size_t k = 0; k < 8; k++) {
			char *c = report_md_text(cells[k]);
			int bold = k == 7 && strcmp(r.verdict, "worse") == 0;
			fprintf(out, "| %s%s%s ", bold ? "**" : "", c, bold ? "**" : "");
			free(c);
		}
		fputs("|\n", out);
	}
	return n;
}

static void compare_markdown(FILE *out, json_t *ans)
{
	char text[NAME_LEN], ref[CELL_LEN];
	json_t *base = json_object_get(ans, "base"), *head = json_object_get(ans, "head");
	char *b = report_md_text(view_scalar(ref, sizeof ref, json_object_get(base, "ref")));
	char *h = report_md_text(view_scalar(ref, sizeof ref, json_object_get(head, "ref")));
	fprintf(out, "### headroom compare: %s → %s\n\n", b, h);
	free(b);
	free(h);
	counts_text(text, sizeof text, json_object_get(ans, "counts"), 1);
	fprintf(out, "%s\n\n", text);
	for (int k = 0; k < 2; k++) {
		side_text(text, sizeof text, k ? head : base);
		char *t = report_md_text(text);
		fprintf(out, "- %s: %s\n", k ? "head" : "base", t);
		free(t);
	}
	fputc('\n', out);
	if (json_array_size(json_object_get(ans, "warnings"))) {
		warnings(out, ans, 1);
		fputc('\n', out);
	}
	if (!md_rows(out, ans, 0))
		fputs("No metric changed.\n", out);
	size_t i, same = 0;
	json_t *m;
	json_array_foreach(json_object_get(ans, "metrics"), i, m)
	{
		const char *v = view_str(m, "verdict");
		same += v && strcmp(v, "unchanged") == 0;
	}
	if (same) {
		fprintf(out, "\n<details><summary>%zu unchanged</summary>\n\n", same);
		md_rows(out, ans, 1);
		fputs("\n</details>\n", out);
	}
	differences(out, ans, "spec_differences", "field", "field", 1);
	differences(out, ans, "label_differences", "label", "label", 1);
	method_text(text, sizeof text, ans);
	char *t = report_md_text(text);
	fprintf(out, "\n<sub>%s</sub>\n", t);
	free(t);
}

static char *compare_path(struct http_client *c, const struct cli_opts *o)
{
	struct dynbuf q;
	dynbuf_init(&q, 1u << 16);
	dynbuf_addstr(&q, "/compare");
	http_query_add(&q, c, "base", o->arg);
	http_query_add(&q, c, "head", o->head);
	char num[64];
	if (o->confidence > 0) {
		fmt_double(num, o->confidence);
		http_query_add(&q, c, "confidence", num);
	}
	if (o->has_noise) {
		fmt_double(num, o->noise_pct);
		http_query_add(&q, c, "noise_pct", num);
	}
	if (o->has_seed) {
		snprintf(num, sizeof num, "%lld", o->seed);
		http_query_add(&q, c, "seed", num);
	}
	return dynbuf_take(&q, NULL);
}

int cmd_compare(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = compare_path(&c, o);
	struct http_resp r;
	json_t *ans = cli_call_resp(&c, CLI_GET, path, NULL, 0, &r, &ex);
	free(path);
	struct cli_sink s;
	if (ans && cli_sink_open(&s, o->output) < 0) {
		ex = EXIT_RUN_FAILED;
	} else if (ans) {
		if (strcmp(o->format, "json") == 0) {
			fwrite(r.body.data, 1, r.body.len, s.f);
			if (r.body.data[r.body.len - 1] != '\n')
				fputc('\n', s.f);
		} else if (strcmp(o->format, "markdown") == 0) {
			compare_markdown(s.f, ans);
		} else {
			compare_table(s.f, ans);
		}
		if (cli_sink_close(&s, o->output, 1) < 0)
			ex = EXIT_RUN_FAILED;
	}
	json_decref(ans);
	http_resp_release(&r);
	http_client_release(&c);
	return ex;
}
