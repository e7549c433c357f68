/* commands.c - the subcommands of `headroom`: each talks to the daemon
 * through http.h, checks every answer (hostile input: wrong types show as
 * "-", malformed answers are errors, never crashes) and maps the outcome
 * to an exit code (cli.h, docs/cli.md). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dynbuf.h"
#include "http.h"
#include "hrlimits.h"
#include "report.h"
#include "show.h"
#include "table.h"
#include "util.h"
#include "view.h"

#define WAIT_QUIET_PRINT_NS 5000000000LL /* non-TTY progress: a line at least this often */
#define WAIT_RETRY_NS 10000000000LL      /* keep polling an unreachable daemon this long */
#define LIST_NAME_WIDTH 48               /* longer names are cut in `list` */

volatile sig_atomic_t cli_stop;

static void on_signal(int sig)
{
	cli_stop = sig;
}

/* SIGINT and SIGTERM set cli_stop; no SA_RESTART, so sleeps wake up. */
void cli_catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("headroom: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'headroom %s --help'.\n", cmd);
	return EXIT_USAGE;
}

int cli_client_open(const struct cli_opts *o, struct http_client *c)
{
	char err[HR_ERRLEN];
	if (http_client_init(c, o->url, err) < 0) {
		fprintf(stderr, "headroom: %s\n", err);
		http_client_release(c);
		return EXIT_USAGE;
	}
	c->stop = &cli_stop;
	return EXIT_OK;
}

int cli_transport_failure(int rc, const char *err)
{
	if (rc == HTTP_FAIL_STOPPED)
		return EXIT_INTERRUPTED;
	fprintf(stderr, "error: %s\n", err);
	return rc == HTTP_FAIL_WRITE ? EXIT_RUN_FAILED : EXIT_DAEMON;
}


static int is_2xx(long status)
{
	return status >= 200 && status < 300;
}

json_t *cli_call_resp(struct http_client *c, enum cli_method m, const char *path, const char *body,
                      size_t len, struct http_resp *r, int *ex)
{
	char err[HR_ERRLEN];
	http_resp_init(r);
	int rc = m == CLI_POST     ? http_post(c, path, body, len, r, err)
	         : m == CLI_PATCH  ? http_patch(c, path, body, len, r, err)
	         : m == CLI_DELETE ? http_delete(c, path, r, err)
	                           : http_get(c, path, r, err);
	json_t *doc = NULL;
	if (rc < 0)
		*ex = cli_transport_failure(rc, err);
	else if (!is_2xx(r->status))
		*ex = cli_answer_failure(r);
	else if (r->status == 204 && r->body.len == 0)
		doc = json_object();
	else if (!(doc = cli_answer_object(r)))
		*ex = EXIT_DAEMON;
	return doc;
}

json_t *cli_call(struct http_client *c, enum cli_method m, const char *path, const char *body,
                 size_t len, int *ex)
{
	struct http_resp r;
	json_t *doc = cli_call_resp(c, m, path, body, len, &r, ex);
	http_resp_release(&r);
	return doc;
}

static int is_terminal(const char *state)
{
	static const char *const terminal[] = {"succeeded", "failed", "cancelled", "interrupted"};
	for (size_t i = 0; i < HR_ARRAY_LEN(terminal); i++)
		if (strcmp(state, terminal[i]) == 0)
			return 1;
	return 0;
}

/* A table with these n column titles: column odd aligned odd_align
 * (TABLE_LEFT or TABLE_RIGHT), every other one the other way. */
static struct table *titled_table(const char *const *titles, size_t n, size_t odd,
                                  enum table_align odd_align)
{
	enum table_align other = odd_align == TABLE_LEFT ? TABLE_RIGHT : TABLE_LEFT;
	struct table *t = table_new(n);
	for (size_t k = 0; k < n; k++)
		table_column(t, k, titles[k], k == odd ? odd_align : other);
	return t;
}

/* Sleeps ms milliseconds unless cli_stop is raised. */
static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (!cli_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One progress line: "run 12: running  sent 10  completed 8/100  errors 0". */
static void progress_text(char *buf, size_t n, long long id, json_t *run, const char *state)
{
	json_t *p = json_object_get(run, "progress");
	char sent[32], done[32], errs[32];
	view_scalar(sent, sizeof(sent), json_object_get(p, "sent"));
	view_scalar(done, sizeof(done), json_object_get(p, "completed"));
	view_scalar(errs, sizeof(errs), json_object_get(p, "errors"));
	char total[40] = "";
	json_t *req =
	    json_object_get(json_object_get(json_object_get(run, "spec"), "load"), "requests");
	if (json_is_integer(req) && json_integer_value(req) > 0)
		snprintf(total, sizeof(total), "/%" JSON_INTEGER_FORMAT, json_integer_value(req));
	char *st = view_clean(state);
	snprintf(buf, n, "run %lld: %.40s  sent %s  completed %s%s  errors %s", id, st, sent, done,
	         total, errs);
	free(st);
}

/* Polls the run until it ends, showing progress on stderr. Returns
 * EXIT_OK with the final run in *out (caller decrefs), or the exit code of
 * a failure (printed): EXIT_DAEMON, EXIT_INTERRUPTED. */
static int poll_run(struct http_client *c, long long id, long poll_ms, json_t **out)
{
	char *path = xasprintf("/runs/%lld", id);
	int tty = isatty(STDERR_FILENO);
	char last_state[64] = "";
	char line[256];
	size_t last_len = 0;
	int64_t last_print = 0, fail_since = -1;
	int ex = EXIT_OK;
	json_t *run = NULL;

	cli_catch_signals();
	for (;;) {
		if (cli_stop) {
			ex = EXIT_INTERRUPTED;
			break;
		}
		char err[HR_ERRLEN];
		struct http_resp r;
		http_resp_init(&r);
		int rc = http_get(c, path, &r, err);
		if (rc == HTTP_FAIL_TRANSPORT) {
			int64_t now = mono_ns();
			http_resp_release(&r);
			if (fail_since < 0) {
				fail_since = now;
				fprintf(stderr, "%swarning: %s; retrying\n",
				        tty && last_len ? "\n" : "", err);
				last_len = 0;
			} else if (now - fail_since > WAIT_RETRY_NS) {
				ex = cli_transport_failure(rc, err);
				break;
			}
			sleep_ms(poll_ms);
			continue;
		}
		fail_since = -1;
		if (rc < 0) {
			ex = cli_transport_failure(rc, err);
		} else if (!is_2xx(r.status)) {
			if (tty && last_len)
				fputc('\n', stderr);
			last_len = 0;
			ex = cli_answer_failure(&r);
		} else if (!(run = cli_answer_object(&r))) {
			ex = EXIT_DAEMON;
		}
		http_resp_release(&r);
		if (ex != EXIT_OK)
			break;

		const char *state = view_str(run, "state");
		if (!state) {
			fprintf(stderr,
			        "error: malformed answer from the daemon: run has no state\n");
			ex = EXIT_DAEMON;
			break;
		}
		progress_text(line, sizeof(line), id, run, state);
		int64_t now = mono_ns();
		int changed = strcmp(state, last_state) != 0;
		if (tty) {
			size_t len = strlen(line);
			fprintf(stderr, "\r%s%*s", line, len < last_len ? (int)(last_len - len) : 0,
			        "");
			last_len = len;
		} else if (changed || now - last_print >= WAIT_QUIET_PRINT_NS) {
			fprintf(stderr, "%s\n", line);
			last_print = now;
		}
		fflush(stderr);
		snprintf(last_state, sizeof(last_state), "%s", state);
		if (is_terminal(state))
			break;
		json_decref(run);
		run = NULL;
		sleep_ms(poll_ms);
	}
	if (tty && last_len)
		fputc('\n', stderr);
	if (ex == EXIT_INTERRUPTED)
		fprintf(stderr,
		        "headroom: stopped waiting; run %lld goes on "
		        "(`headroom cancel %lld` stops it)\n",
		        id, id);
	free(path);
	if (ex != EXIT_OK) {
		json_decref(run);
		run = NULL;
	}
	*out = run;
	return ex;
}

/* --junit and --markdown of submit --wait (and the Markdown appended to
 * $GITHUB_STEP_SUMMARY whenever it is set): EXIT_OK, or EXIT_RUN_FAILED when one could not be
 * written (printed). */
static int write_reports(const struct cli_opts *o, json_t *const *runs, size_t n, json_t *group)
{
	int ex = EXIT_OK;
	struct cli_sink s;
	if (o->junit) {
		if (cli_sink_open(&s, o->junit) < 0)
			ex = EXIT_RUN_FAILED;
		else {
			report_junit(s.f, runs, n);
			if (cli_sink_close(&s, o->junit, 1) < 0)
				ex = EXIT_RUN_FAILED;
		}
	}
	if (o->markdown) {
		if (cli_sink_open(&s, o->markdown) < 0)
			ex = EXIT_RUN_FAILED;
		else {
			report_markdown(s.f, runs, n, group);
			if (cli_sink_close(&s, o->markdown, 1) < 0)
				ex = EXIT_RUN_FAILED;
		}
	}
	/* a GitHub Actions step shows the summary of every waited-for run */
	const char *gh = getenv("GITHUB_STEP_SUMMARY");
	if (gh && *gh) {
		FILE *f = fopen(gh, "a");
		if (f)
			report_markdown(f, runs, n, group);
		if (!f || fclose(f) != 0) {
			fprintf(stderr, "headroom: cannot append to $GITHUB_STEP_SUMMARY (%s): %s\n",
				gh, strerror(errno));
			ex = EXIT_RUN_FAILED;
		}
	}
	return ex;
}

/* submit --wait for one run: its summary, then the exit code it earns. */
static int wait_run(struct http_client *c, const struct cli_opts *o, long long id)
{
	json_t *run;
	int ex = poll_run(c, id, o->poll_ms, &run);
	if (ex != EXIT_OK)
		return ex;
	show_run(stdout, run);
	fflush(stdout);
	ex = report_outcome(run, stderr);
	ex = report_worse(ex, write_reports(o, &run, 1, NULL));
	json_decref(run);
	return ex;
}

/* The group summary: per metric and statistic (avg, p50, p99; a run-level
 * figure's value), the mean, standard deviation and confidence interval of
 * the runs' figures. */
static void group_table(FILE *out, json_t *group)
{
	json_t *gs = json_object_get(group, "summary");
	char id[32], num[32], conf[VIEW_NUMLEN] = "95";
	double x;
	if (view_num(gs, "confidence", &x))
		snprintf(conf, sizeof conf, "%.4g", x * 100);
	fprintf(out,
	        "\ngroup %s: %s of %zu runs succeeded; across runs (%s%% confidence interval of "
	        "the mean):\n",
	        view_scalar(id, sizeof id, json_object_get(group, "id")),
	        view_scalar(num, sizeof num, json_object_get(gs, "repeats")),
	        json_array_size(json_object_get(group, "runs")), conf);
	static const char *const titles[] = {"METRIC", "STAT", "MEAN", "STD", "CI"};
	struct table *t = titled_table(titles, HR_ARRAY_LEN(titles), 0, TABLE_LEFT);
	table_column(t, 1, "STAT", TABLE_LEFT);
	table_column(t, 4, "CI", TABLE_LEFT);
	const char *tag, *stat;
	json_t *m, *st;
	json_object_foreach(json_object_get(gs, "metrics"), tag, m)
	{
		const char *unit = view_str(m, "unit");
		char *label = unit && *unit ? xasprintf("%s (%s)", tag, unit) : xstrdup(tag);
		json_object_foreach(m, stat, st)
		{
			static const char *const shown[] = {"avg", "p50", "p99", "value"};
			size_t k = 0;
			while (k < HR_ARRAY_LEN(shown) && strcmp(shown[k], stat) != 0)
				k++;
			double mean, sd;
			if (k == HR_ARRAY_LEN(shown) || !view_num(st, "mean", &mean))
				continue;
			char a[VIEW_NUMLEN], b[VIEW_NUMLEN] = "-", lo[VIEW_NUMLEN], hi[VIEW_NUMLEN],
			                     ci[2 * VIEW_NUMLEN + 8] = "-";
			if (view_num(st, "std", &sd))
				view_fmt_num(b, sd);
			json_t *c = json_object_get(st, "ci");
			if (json_array_size(c) == 2 && json_is_number(json_array_get(c, 0)) &&
			    json_is_number(json_array_get(c, 1)))
				snprintf(ci, sizeof ci, "[%s, %s]",
				         view_fmt_num(lo, json_number_value(json_array_get(c, 0))),
				         view_fmt_num(hi, json_number_value(json_array_get(c, 1))));
			const char *cells[5] = {label, stat, view_fmt_num(a, mean), b, ci};
			table_add_row(t, cells);
		}
		free(label);
	}
	table_print(t, out, TABLE_PLAIN);
	table_free(t);
}

/* One line per finished run of a group: "run 12 succeeded (client ok,
 * valid, gates passed)". */
static void group_run_line(FILE *out, json_t *run)
{
	json_t *summary = json_object_get(run, "summary");
	json_t *valid = json_object_get(json_object_get(summary, "validity"), "valid");
	json_t *gates = json_object_get(json_object_get(summary, "gates"), "passed");
	char id[32];
	char *st = view_clean(view_str(run, "state"));
	char *verdict = view_clean(view_str(json_object_get(summary, "client"), "verdict"));
	fprintf(out, "run %s %s (client %s%s%s)\n",
	        view_scalar(id, sizeof id, json_object_get(run, "id")), st, verdict,
	        json_is_true(valid)    ? ", valid"
	        : json_is_false(valid) ? ", INVALID"
	                               : "",
	        json_is_true(gates)    ? ", gates passed"
	        : json_is_false(gates) ? ", gates FAILED"
	                               : "");
	free(verdict);
	free(st);
}

/* submit --wait for a repeat group: each run in turn, then the group's
 * summary; the exit code is the worst of the runs'. */
static int wait_group(struct http_client *c, const struct cli_opts *o, long long gid,
                      json_t *run_ids)
{
	size_t n = json_array_size(run_ids), done = 0;
	json_t **runs = xcalloc(n ? n : 1, sizeof(*runs));
	int ex = EXIT_OK, worst = EXIT_OK;
	for (; done < n; done++) {
		json_t *id = json_array_get(run_ids, done);
		if (!json_is_integer(id)) {
			fprintf(stderr,
			        "error: malformed answer from the daemon: a run id is not a "
			        "number\n");
			ex = EXIT_DAEMON;
			break;
		}
		if ((ex = poll_run(c, (long long)json_integer_value(id), o->poll_ms,
		                   &runs[done])) != EXIT_OK)
			break;
		group_run_line(stdout, runs[done]);
		fflush(stdout);
		worst = report_worse(worst, report_outcome(runs[done], stderr));
	}
	json_t *group = NULL;
	if (ex == EXIT_OK) {
		/* the group ends with its last run; give the daemon a moment to say so */
		char *path = xasprintf("/groups/%lld", gid);
		int64_t deadline = mono_ns() + WAIT_RETRY_NS;
		while ((group = cli_call(c, CLI_GET, path, NULL, 0, &ex))) {
			const char *st = view_str(group, "state");
			if ((st && strcmp(st, "finished") == 0) || mono_ns() > deadline || cli_stop)
				break;
			json_decref(group);
			group = NULL;
			sleep_ms(o->poll_ms);
		}
		free(path);
		if (group)
			group_table(stdout, group);
	}
	if (group)
		ex = report_worse(worst, write_reports(o, runs, n, group));
	for (size_t i = 0; i < n; i++)
		json_decref(runs[i]);
	free(runs);
	json_decref(group);
	return ex;
}

/* Reads the spec file (or stdin for "-") into b, bounded by the API's
 * body limit. Returns 0 or an exit code with a message printed. */
static int read_spec(const char *name, struct dynbuf *b)
{
	int use_stdin = strcmp(name, "-") == 0;
	FILE *f = use_stdin ? stdin : fopen(name, "rb");
	if (!f) {
		fprintf(stderr, "headroom: cannot open %s: %s\n", name, strerror(errno));
		return EXIT_USAGE;
	}
	int ex = EXIT_OK;
	char chunk[16384];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (dynbuf_add(b, chunk, n) < 0) {
			fprintf(stderr, "headroom: %s is larger than %u KiB, the daemon's limit\n",
			        use_stdin ? "the spec on stdin" : name, HR_MAX_BODY_BYTES >> 10);
			ex = EXIT_USAGE;
			break;
		}
	}
	if (ex == EXIT_OK && ferror(f)) {
		fprintf(stderr, "headroom: cannot read %s: %s\n", name, strerror(errno));
		ex = EXIT_USAGE;
	}
	if (!use_stdin)
		fclose(f);
	return ex;
}

int cmd_submit(const struct cli_opts *o)
{
	struct dynbuf spec;
	dynbuf_init(&spec, HR_MAX_BODY_BYTES);
	int ex = read_spec(o->arg, &spec);
	if (ex == EXIT_OK)
		ex = cli_submit_text(o, spec.data ? spec.data : "", spec.len);
	dynbuf_release(&spec);
	return ex;
}

int cli_submit_text(const struct cli_opts *o, const char *text, size_t len)
{
	struct http_client c;
	int ex;
	if ((ex = cli_client_open(o, &c)) != EXIT_OK)
		return ex;
	json_t *ans = cli_call(&c, CLI_POST, "/runs", text, len, &ex);
	if (ans) {
		json_t *id = json_object_get(ans, "id");
		if (!json_is_integer(id)) {
			fprintf(stderr, "error: malformed answer from the daemon: no run id\n");
			ex = EXIT_DAEMON;
		} else if (json_is_array(json_object_get(ans, "run_ids"))) {
			json_t *gid = json_object_get(ans, "group_id"),
			       *ids = json_object_get(ans, "run_ids");
			char g[32];
			printf("group %s queued: runs", view_scalar(g, sizeof g, gid));
			size_t i;
			json_t *r;
			json_array_foreach(ids, i, r)
			{
				printf(" %s", view_scalar(g, sizeof g, r));
			}
			putchar('\n');
			fflush(stdout);
			if (o->wait && !json_is_integer(gid)) {
				fprintf(stderr,
				        "error: malformed answer from the daemon: no group id\n");
				ex = EXIT_DAEMON;
			} else if (o->wait) {
				ex = wait_group(&c, o, (long long)json_integer_value(gid), ids);
			}
		} else {
			long long rid = (long long)json_integer_value(id);
			char *st = view_clean(view_str(ans, "state"));
			printf("run %lld %s\n", rid, st);
			free(st);
			fflush(stdout);
			if (o->wait)
				ex = wait_run(&c, o, rid);
		}
		json_decref(ans);
	}
	http_client_release(&c);
	return ex;
}

/* Copies s cut to at most max code points ("..." marks a cut) into a new
 * string. Caller frees. */
static char *cut_width(const char *s, size_t max)
{
	if (view_width(s) <= max)
		return xstrdup(s);
	size_t i = 0, w = 0;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && w++ == max - 3)
			break;
	}
	return xasprintf("%.*s...", (int)i, s);
}

/* Writes s to out as one shell word: as it is when it has only safe
 * characters, else in single quotes. */
static void shell_word(FILE *out, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	                    "_.,:/=+-@%") == strlen(s)) {
		fputs(s, out);
		return;
	}
	fputc('\'', out);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", out);
		else
			fputc(*s, out);
	}
	fputc('\'', out);
}

/* The list's query: GET /runs with o's filters; cursor or before (> 0)
 * ask for a later page. Caller frees. */
static char *list_path(struct http_client *c, const struct cli_opts *o)
{
	struct dynbuf q;
	dynbuf_init(&q, 1u << 20);
	dynbuf_addstr(&q, "/runs");
	char num[32];
	if (o->limit > 0) {
		snprintf(num, sizeof num, "%ld", o->limit);
		http_query_add(&q, c, "limit", num);
	}
	if (o->state)
		http_query_add(&q, c, "state", o->state);
	for (int i = 0; i < o->nlabels; i++) {
		/* label.K=V, label.K!=V, label.K, label.K! (K and V encoded) */
		const char *sel = o->labels[i];
		int absent = *sel == '!';
		sel += absent;
		size_t k = strcspn(sel, "=");
		int not_equal = sel[k] == '=' && k > 0 && sel[k - 1] == '!';
		char *key = xstrndup(sel, k - (size_t)not_equal);
		char *esc = http_escape(c, key);
		char *param = xasprintf("label.%s%s", esc, absent || not_equal ? "!" : "");
		http_query_add(&q, c, param, sel[k] == '=' ? sel + k + 1 : NULL);
		free(param);
		free(esc);
		free(key);
	}
	const char *const params[][2] = {{"name", o->name},    {"since", o->since},
	                                 {"until", o->until},  {"fingerprint", o->fingerprint},
	                                 {"group", o->group},  {"sort", o->sort},
	                                 {"cursor", o->cursor}};
	for (size_t i = 0; i < HR_ARRAY_LEN(params); i++)
		if (params[i][1])
			http_query_add(&q, c, params[i][0], params[i][1]);
	if (o->before > 0) {
		snprintf(num, sizeof num, "%lld", o->before);
		http_query_add(&q, c, "before", num);
	}
	return dynbuf_take(&q, NULL);
}

/* The hint after a page when there are more: the same command with
 * --cursor C (or, from a daemon without cursors, --before ID). */
static void list_hint(const struct cli_opts *o, json_t *ans)
{
	const char *cursor = view_str(ans, "next_cursor");
	json_t *before = json_object_get(ans, "next_before");
	if (!(cursor && *cursor) && !json_is_integer(before))
		return;
	fputs("(more: headroom list", stderr);
	if (o->limit > 0)
		fprintf(stderr, " --limit %ld", o->limit);
	if (o->state)
		fprintf(stderr, " --state %s", o->state);
	for (int i = 0; i < o->nlabels; i++) {
		fputs(" --label ", stderr);
		shell_word(stderr, o->labels[i]);
	}
	const char *const opts[][2] = {{"name", o->name},   {"since", o->since},
	                               {"until", o->until}, {"fingerprint", o->fingerprint},
	                               {"group", o->group}, {"sort", o->sort}};
	for (size_t i = 0; i < HR_ARRAY_LEN(opts); i++)
		if (opts[i][1]) {
			fprintf(stderr, " --%s ", opts[i][0]);
			shell_word(stderr, opts[i][1]);
		}
	if (cursor && *cursor) {
		char *clean = view_clean(cursor);
		fputs(" --cursor ", stderr);
		shell_word(stderr, clean);
		free(clean);
	} else {
		fprintf(stderr, " --before %" JSON_INTEGER_FORMAT, json_integer_value(before));
	}
	fputs(")\n", stderr);
}

/* A list --sort KEY that orders by a metric: METRIC.STAT or -METRIC.STAT. */
static int sorts_by_metric(const char *sort)
{
	return sort && strchr(sort, '.');
}

static void list_row(struct table *t, json_t *run, int64_t now_ms)
{
	char id[32], created[64], dur[32], sortv[VIEW_NUMLEN] = "-";
	view_scalar(id, sizeof(id), json_object_get(run, "id"));
	const char *state = view_str(run, "state");
	const char *name = view_str(run, "name");
	char *cut = cut_width(name ? name : "-", LIST_NAME_WIDTH);
	view_fmt_time(created, sizeof(created), view_str(run, "created_at"));
	int64_t t0, t1;
	snprintf(dur, sizeof(dur), "-");
	if (view_parse_time(view_str(run, "started_at"), &t0) == 0) {
		if (view_parse_time(view_str(run, "finished_at"), &t1) == 0)
			view_fmt_duration(dur, sizeof(dur), t1 - t0);
		else if (state && strcmp(state, "running") == 0)
			view_fmt_duration(dur, sizeof(dur), now_ms - t0);
	}
	json_t *valid = json_object_get(run, "valid");
	const char *gates = view_str(run, "gates");
	double x;
	if (view_num(run, "sort_value", &x))
		view_fmt_num(sortv, x);
	/* a ninth cell for the sort value: table_add_row reads as many as
	 * the table has columns */
	const char *cells[9] = {id,
	                        state,
	                        cut,
	                        created,
	                        dur,
	                        view_str(run, "verdict"),
	                        json_is_true(valid)    ? "yes"
	                        : json_is_false(valid) ? "no"
	                                               : "-",
	                        !gates                         ? "-"
	                        : strcmp(gates, "passed") == 0 ? "pass"
	                        : strcmp(gates, "failed") == 0 ? "fail"
	                                                       : gates,
	                        sortv};
	table_add_row(t, cells);
	free(cut);
}

int cmd_list(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = list_path(&c, o);
	json_t *ans = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
	free(path);
	if (ans) {
		json_t *runs = json_object_get(ans, "runs");
		if (!json_is_array(runs)) {
			fprintf(stderr, "error: malformed answer from the daemon: no runs array\n");
			ex = EXIT_DAEMON;
		} else {
			int with_sort = sorts_by_metric(o->sort);
			static const char *const titles[] = {"ID",      "STATE",    "NAME",
			                                     "CREATED", "DURATION", "VERDICT",
			                                     "VALID",   "GATES"};
			struct table *t = table_new(HR_ARRAY_LEN(titles) + (size_t)with_sort);
			for (size_t k = 0; k < HR_ARRAY_LEN(titles); k++)
				table_column(t, k, titles[k],
				             k == 0 || k == 4 ? TABLE_RIGHT : TABLE_LEFT);
			if (with_sort) {
				char *title = xstrdup(o->sort + (o->sort[0] == '-'));
				for (char *ch = title; *ch; ch++)
					if (*ch >= 'a' && *ch <= 'z')
						*ch = (char)(*ch - 'a' + 'A');
				table_column(t, HR_ARRAY_LEN(titles), title, TABLE_RIGHT);
				free(title);
			}
			int64_t now_ms = wall_ns() / 1000000;
			size_t i;
			json_t *run;
			json_array_foreach(runs, i, run)
			{
				list_row(t, run, now_ms);
			}
			table_print(t, stdout, TABLE_PLAIN);
			table_free(t);
			list_hint(o, ans);
		}
		json_decref(ans);
	}
	http_client_release(&c);
	return ex;
}

int cmd_show(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = xasprintf("/runs/%lld", o->id);
	struct http_resp r;
	json_t *run = cli_call_resp(&c, CLI_GET, path, NULL, 0, &r, &ex);
	if (run && o->json) {
		fwrite(r.body.data, 1, r.body.len, stdout);
		if (r.body.data[r.body.len - 1] != '\n')
			putchar('\n');
	} else if (run) {
		show_run(stdout, run);
	}
	json_decref(run);
	http_resp_release(&r);
	free(path);
	http_client_release(&c);
	return ex;
}

int cmd_cancel(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = xasprintf("/runs/%lld/cancel", o->id);
	json_t *ans = cli_call(&c, CLI_POST, path, "", 0, &ex);
	if (ans) {
		char *st = view_clean(view_str(ans, "state"));
		printf("run %lld %s\n", o->id, st);
		free(st);
		json_decref(ans);
	}
	free(path);
	http_client_release(&c);
	return ex;
}

int cli_sink_open(struct cli_sink *s, const char *output)
{
	s->f = NULL;
	s->tmp = NULL;
	if (!output || strcmp(output, "-") == 0) {
		s->f = stdout;
		return 0;
	}
	struct stat st;
	if (stat(output, &st) == 0 && !S_ISREG(st.st_mode)) {
		s->f = fopen(output, "wb");
	} else {
		s->tmp = xasprintf("%s.XXXXXX", output);
		int fd = mkstemp(s->tmp);
		if (fd >= 0) {
			mode_t mask = umask(0);
			umask(mask);
			if (fchmod(fd, 0666 & ~mask) < 0 || !(s->f = fdopen(fd, "wb")))
				close(fd);
		}
	}
	if (!s->f) {
		fprintf(stderr, "headroom: cannot create %s: %s\n", output, strerror(errno));
		if (s->tmp)
			unlink(s->tmp);
		free(s->tmp);
		s->tmp = NULL;
		return -1;
	}
	return 0;
}

int cli_sink_close(struct cli_sink *s, const char *output, int ok)
{
	int rc = 0;
	if (s->f == stdout) {
		if ((fflush(stdout) != 0 || ferror(stdout)) && ok) {
			fprintf(stderr, "error: cannot write the output: %s\n", strerror(errno));
			rc = -1;
		}
		return rc;
	}
	if (fclose(s->f) != 0 && ok) {
		fprintf(stderr, "error: cannot write %s: %s\n", output, strerror(errno));
		rc = -1;
	}
	if (s->tmp) {
		if (ok && rc == 0 && rename(s->tmp, output) < 0) {
			fprintf(stderr, "error: cannot rename to %s: %s\n", output,
			        strerror(errno));
			rc = -1;
		}
		if (!ok || rc < 0)
			unlink(s->tmp);
		free(s->tmp);
	}
	return rc;
}

/* Streams path's answer into output (stdout when NULL): an exit code. */
static int export_one(struct http_client *c, const char *path, const char *output)
{
	struct cli_sink s;
	if (cli_sink_open(&s, output) < 0)
		return EXIT_RUN_FAILED;
	char err[HR_ERRLEN];
	struct http_resp r;
	http_resp_init(&r);
	int ex = EXIT_OK;
	int rc = http_get_stream(c, path, s.f, &r, err);
	if (rc < 0)
		ex = cli_transport_failure(rc, err);
	else if (!is_2xx(r.status))
		ex = cli_answer_failure(&r);
	if (cli_sink_close(&s, output, ex == EXIT_OK) < 0 && ex == EXIT_OK)
		ex = EXIT_RUN_FAILED;
	http_resp_release(&r);
	return ex;
}

/* --format aiperf: AIPerf's three files in the directory o->output. */
static int export_aiperf_dir(struct http_client *c, const struct cli_opts *o)
{
	static const char *const files[][2] = {{"aiperf-json", "profile_export_aiperf.json"},
	                                       {"aiperf-csv", "profile_export_aiperf.csv"},
	                                       {"aiperf-jsonl", "profile_export.jsonl"}};
	if (mkdir(o->output, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "headroom: cannot create %s: %s\n", o->output, strerror(errno));
		return EXIT_RUN_FAILED;
	}
	int ex = EXIT_OK;
	for (size_t i = 0; i < HR_ARRAY_LEN(files) && ex == EXIT_OK; i++) {
		char *path = xasprintf("/runs/%lld/export?format=%s", o->id, files[i][0]);
		char *out = xasprintf("%s/%s", o->output, files[i][1]);
		ex = export_one(c, path, out);
		free(out);
		free(path);
	}
	return ex;
}

int cmd_export(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	cli_catch_signals();
	if (o->peer && strcmp(o->format, "aiperf") == 0) {
		ex = export_aiperf_dir(&c, o);
		http_client_release(&c);
		return ex;
	}
	char *path;
	if (o->peer)
		path = xasprintf("/runs/%lld/export?format=%s%s", o->id, o->format,
		                 strcmp(o->format, "vllm") == 0 ? "&detail=true" : "");
	else
		path = xasprintf("/runs/%lld/%s?format=%s", o->id,
		                 o->records     ? "records"
		                 : o->telemetry ? "telemetry"
		                 : o->client    ? "client"
		                                : "summary",
		                 o->format);
	ex = export_one(&c, path, o->output);
	free(path);
	http_client_release(&c);
	return ex;
}

/* --- calibrate ------------------------------------------------------------------ */

/* Every open-loop step of a calibration, when it tried any: the evidence
 * behind the OPEN LOOP column. */
static void steps_table(FILE *out, json_t *cal)
{
	static const char *const titles[] = {"OSL",    "RATE/S", "ACHIEVED/S", "LAG P99 MS",
	                                     "ERRORS", "UNSENT", "SUSTAINED",  "RUN"};
	struct table *t = NULL;
	size_t i, j;
	json_t *p, *st;
	json_array_foreach(json_object_get(json_object_get(cal, "result"), "points"), i, p)
	{
		json_array_foreach(json_object_get(p, "open_loop"), j, st)
		{
			if (!t)
				t = titled_table(titles, 8, 6, TABLE_LEFT);
			char osl[VIEW_NUMLEN], rate[VIEW_NUMLEN] = "-", ach[VIEW_NUMLEN] = "-",
			                       lag[VIEW_NUMLEN] = "-", err[VIEW_NUMLEN], uns[VIEW_NUMLEN],
			                       run[32];
			double x;
			if (view_num(st, "rate", &x))
				view_fmt_num(rate, x);
			if (view_num(st, "achieved_rate", &x))
				view_fmt_num(ach, x);
			if (view_num(st, "schedule_lag_p99_ms", &x))
				view_fmt_num(lag, x);
			const char *state = view_str(st, "run_state");
			const char *cells[8] = {
			    view_scalar(osl, sizeof osl, json_object_get(p, "osl")), rate, ach, lag,
			    view_scalar(err, sizeof err, json_object_get(st, "errors")),
			    view_scalar(uns, sizeof uns, json_object_get(st, "unsent")),
			    json_is_true(json_object_get(st, "sustained")) ? "yes"
			    : state && strcmp(state, "failed") == 0       ? "no (the run failed)"
			                                                   : "no",
			    view_scalar(run, sizeof run, json_object_get(st, "run_id"))};
			table_add_row(t, cells);
		}
	}
	if (!t)
		return;
	double lag;
	char l[VIEW_NUMLEN] = "?";
	if (view_num(json_object_get(cal, "params"), "max_lag_ms", &lag))
		view_fmt_num(l, lag);
	fprintf(out, "\nopen loop (sustained: schedule lag p99 within %s ms, no errors, nothing "
	             "unsent)\n",
	        l);
	table_print(t, out, TABLE_PLAIN);
	table_free(t);
}

static void calibration_table(FILE *out, json_t *cal)
{
	json_t *pts = json_object_get(json_object_get(cal, "result"), "points");
	static const char *const titles[] = {"OSL",       "REQUESTS/S", "TOKENS/S", "LOOP BUSY",
	                                     "OPEN LOOP", "RUN",        "LIMIT"};
	struct table *t = titled_table(titles, 7, 6, TABLE_LEFT);
	size_t i;
	json_t *p;
	json_array_foreach(pts, i, p)
	{
		char a[VIEW_NUMLEN], b[VIEW_NUMLEN] = "-", c[VIEW_NUMLEN] = "-",
		                     d[VIEW_NUMLEN] = "-", e[32], f[VIEW_NUMLEN + 8] = "-";
		double x;
		snprintf(e, sizeof e, "%lld",
		         (long long)json_integer_value(json_object_get(p, "run_id")));
		if (view_num(p, "requests_per_s", &x))
			view_fmt_num(b, x);
		if (view_num(p, "tokens_per_s", &x))
			view_fmt_num(c, x);
		if (view_num(p, "loop_busy_avg", &x)) {
			view_fmt_num(d, x * 100);
			strcat(d, "%");
		}
		/* the highest open-loop rate sent on time (at least that when it
		 * was the highest tried); below the lowest tried when none was */
		json_t *steps = json_object_get(p, "open_loop");
		if (view_num(p, "sustained_requests_per_s", &x)) {
			char v[VIEW_NUMLEN];
			snprintf(f, sizeof f, "%s%s",
			         json_is_true(json_object_get(p, "sustained_lower_bound")) ? ">= " : "",
			         view_fmt_num(v, x));
		} else if (json_array_size(steps) &&
		           view_num(json_array_get(steps, 0), "rate", &x)) {
			char lo[VIEW_NUMLEN];
			snprintf(f, sizeof f, "< %s", view_fmt_num(lo, x));
		}
		const char *cells[7] = {view_scalar(a, sizeof a, json_object_get(p, "osl")), b, c, d,
		                        f, e,
		                        json_is_true(json_object_get(p, "client_saturated"))
		                            ? "the worker"
		                            : "the mock or the host (a lower bound)"};
		table_add_row(t, cells);
	}
	table_print(t, out, TABLE_PLAIN);
	table_free(t);
	steps_table(out, cal);
}

/* One calibration's state line, then its table or (on stderr) why it
 * failed. EXIT_OK when it succeeded or is still running, else
 * EXIT_RUN_FAILED. */
static int print_calibration(json_t *cal)
{
	long long id = (long long)json_integer_value(json_object_get(cal, "id"));
	const char *st = view_str(cal, "state");
	printf("calibration %lld %s on host %s\n", id, st ? st : "?",
	       view_str(cal, "host") ? view_str(cal, "host") : "?");
	if (st && strcmp(st, "succeeded") == 0) {
		calibration_table(stdout, cal);
		return EXIT_OK;
	}
	if (st && strcmp(st, "running") == 0)
		return EXIT_OK;
	const char *e = view_str(cal, "error");
	fprintf(stderr, "headroom: calibration %lld failed: %s\n", id, e ? e : "?");
	return EXIT_RUN_FAILED;
}

/* "16,128,512" (checked by the option parser) as a JSON array of integers,
 * or of reals. */
static json_t *number_list(const char *c, int real)
{
	json_t *a = json_array();
	while (*c) {
		char *end;
		json_array_append_new(a, real ? json_real(strtod(c, &end))
		                              : json_integer(strtoll(c, &end, 10)));
		if (end == c) /* nothing read ("."): the daemon names the bad value */
			break;
		c = *end == ',' ? end + 1 : end;
	}
	return a;
}

int cmd_calibrate(const struct cli_opts *o)
{
	json_t *body = json_object();
	if (o->osl)
		json_object_set_new(body, "osl", number_list(o->osl, 0));
	if (o->rates)
		json_object_set_new(body, "rates", number_list(o->rates, 1));
	if (o->max_lag_ms > 0)
		json_object_set_new(body, "max_lag_ms", json_real(o->max_lag_ms));
	if (o->isl)
		json_object_set_new(body, "isl", json_integer(o->isl));
	if (o->concurrency)
		json_object_set_new(body, "concurrency", json_integer(o->concurrency));
	if (o->duration_s > 0)
		json_object_set_new(body, "duration_s", json_real(o->duration_s));
	char *text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK) {
		free(text);
		return ex;
	}
	json_t *cal = cli_call(&c, CLI_POST, "/calibrations", text, strlen(text), &ex);
	free(text);
	if (!cal) {
		http_client_release(&c);
		return ex;
	}
	long long id = (long long)json_integer_value(json_object_get(cal, "id"));
	json_t *runs = json_object_get(cal, "run_ids");
	printf("calibration %lld queued: runs", id);
	size_t i;
	json_t *r;
	json_array_foreach(runs, i, r)
		printf(" %lld", (long long)json_integer_value(r));
	printf("\n");
	fflush(stdout);
	if (!o->wait) {
		json_decref(cal);
		http_client_release(&c);
		return EXIT_OK;
	}
	/* each run in turn: follow its progress as submit --wait does, quietly */
	cli_catch_signals();
	char *path = xasprintf("/calibrations/%lld", id);
	for (;;) {
		const char *st = view_str(cal, "state");
		if (st && strcmp(st, "running") != 0)
			break;
		if (cli_stop) {
			ex = EXIT_INTERRUPTED;
			break;
		}
		sleep_ms(500);
		json_decref(cal);
		cal = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
		if (!cal)
			break;
	}
	free(path);
	if (cal && ex == EXIT_OK)
		ex = print_calibration(cal);
	json_decref(cal);
	http_client_release(&c);
	return ex;
}

/* The UTC time of wall-clock ns as show prints times. */
static const char *fmt_ns(char *buf, size_t n, json_t *ns)
{
	if (!json_is_integer(ns)) {
		snprintf(buf, n, "-");
		return buf;
	}
	time_t t = (time_t)(json_integer_value(ns) / 1000000000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, n, "-");
	return buf;
}

/* A JSON array of numbers as "a,b,c" ("-" when empty). */
static void fmt_list(char *buf, size_t n, json_t *a)
{
	size_t len = 0, i;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach(a, i, v)
	{
		char one[VIEW_NUMLEN];
		int w = snprintf(buf + len, n - len, "%s%s", i ? "," : "", view_scalar(one, sizeof one, v));
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, n, "-");
}

int cmd_calibrations(const struct cli_opts *o)
{
	struct http_client c;
	int ex = cli_client_open(o, &c);
	if (ex != EXIT_OK)
		return ex;
	char *path = o->arg ? xasprintf("/calibrations/%lld", o->id)
	                    : xasprintf("/calibrations?limit=%ld", o->limit > 0 ? o->limit : 50);
	json_t *ans = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
	free(path);
	if (ans && o->arg) {
		ex = print_calibration(ans);
	} else if (ans) {
		json_t *list = json_object_get(ans, "calibrations");
		if (!json_is_array(list)) {
			fprintf(stderr, "error: malformed answer from the daemon: no calibrations array\n");
			ex = EXIT_DAEMON;
		} else {
			static const char *const titles[] = {"ID", "STATE", "HOST", "CREATED", "OSL",
			                                     "RATES"};
			struct table *t = titled_table(titles, 6, 0, TABLE_RIGHT);
			size_t i;
			json_t *cal;
			json_array_foreach(list, i, cal)
			{
				char id[32], created[64], osl[128], rates[256];
				json_t *params = json_object_get(cal, "params");
				fmt_list(osl, sizeof osl, json_object_get(params, "osl"));
				fmt_list(rates, sizeof rates, json_object_get(params, "rates"));
				const char *st = view_str(cal, "state"), *host = view_str(cal, "host");
				const char *cells[6] = {view_scalar(id, sizeof id, json_object_get(cal, "id")),
				                        st ? st : "?", host ? host : "?",
				                        fmt_ns(created, sizeof created,
				                               json_object_get(cal, "created_ns")),
				                        osl, rates};
				table_add_row(t, cells);
			}
			table_print(t, stdout, TABLE_PLAIN);
			table_free(t);
		}
	}
	json_decref(ans);
	http_client_release(&c);
	return ex;
}
