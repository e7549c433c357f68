/* main.c - `headroom`, the command-line client of headroomd's REST API:
 * argument parsing (options may come before or after the subcommand),
 * help texts, and dispatch to the subcommands in commands.c. */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "http.h"
#include "hrlimits.h"
#include "util.h"

#define POLL_MS_DEFAULT 500L
#define POLL_MS_MIN 10L
#define POLL_MS_MAX 3600000L

enum cmd {
	CMD_NONE,
	CMD_SUBMIT,
	CMD_LIST,
	CMD_SHOW,
	CMD_CANCEL,
	CMD_EXPORT,
	CMD_CALIBRATE,
	CMD_CALIBRATIONS,
	CMD_LABEL,
	CMD_DELETE,
	CMD_COMPARE,
	CMD_HELP,
	CMD__COUNT
};

static const char general_help[] =
    "usage: headroom [--url URL] COMMAND [ARGS]\n"
    "\n"
    "Command-line client of headroomd, the headroom benchmark daemon.\n"
    "\n"
    "commands:\n"
    "  submit SPEC.json [--wait] [--junit FILE]     submit a run (SPEC - reads stdin)\n"
    "  list [--label K=V] [--since 7d] [--sort K]   list runs, newest first (filters:\n"
    "                                               list --help)\n"
    "  show ID [--json]                             show a run and its summary\n"
    "  label ID K=V... [K-] [--note T] [--pin]      label, annotate or pin a run\n"
    "  delete ID                                    delete a run and its data\n"
    "  compare BASE HEAD [--format F]               compare runs or groups of runs\n"
    "  cancel ID                                    cancel a queued or running run\n"
    "  export ID [--records] [--format F] [-o FILE] export a summary, the records, or\n"
    "                                               AIPerf or vLLM result files\n"
    "  calibrate [--osl N,...] [--rates R,...]      measure this host's client ceiling\n"
    "  calibrations [ID] [--limit N]                past calibrations, or one in full\n"
    "  profile -m MODEL --url URL [AIPerf flags]    a run from `aiperf profile` flags\n"
    "  sweep SPEC --variable PATH (--values|--range|--search) [--slo ...]\n"
    "                                               a sweep, or the largest value within SLOs\n"
    "  sweeps [ID]                                  list sweeps, or print one\n"
    "  tokenize --tokenizer FILE [--count]          token ids of stdin (tokenize --help)\n"
    "  dataset upload|list|show ...                 datasets of prompts (dataset --help)\n"
    "  import FILE [--label K=V] [--jsonl FILE]     a vLLM or AIPerf result file as a run\n"
    "  help [COMMAND]                               help on one command\n"
    "\n"
    "options (anywhere on the line):\n"
    "  --url URL      daemon address; default $HEADROOM_URL, else " HEADROOM_DEFAULT_URL "\n"
    "  --token TOKEN  API token sent as Authorization: Bearer; default $HEADROOM_TOKEN\n"
    "                 (the variable keeps it out of `ps`)\n"
    "  --cacert FILE  CA certificate(s) of an https daemon; default $HEADROOM_CA_FILE\n"
    "  -h, --help     show help (of COMMAND when one is given)\n"
    "  -V, --version  print the version\n"
    "\n"
    "exit codes: 0 success (submit --wait: the run succeeded and passed its\n"
    "checks); 1 the waited-for run ended failed, cancelled or interrupted, or an\n"
    "output could not be written; 2 usage error or unreadable spec; 3 daemon\n"
    "unreachable, error answer or malformed answer; submit --wait only, the first\n"
    "that applies in this order: 4 the run was client_bound (the load generator\n"
    "was the limit), 7 the run is invalid, 5 a threshold gate failed, 6 a\n"
    "regression gate failed; 130 interrupted (Ctrl-C). See docs/cli.md.\n";

static const char submit_help[] =
    "usage: headroom submit SPEC.json [--wait] [--poll-ms N] [--junit FILE]\n"
    "                                 [--markdown FILE]\n"
    "\n"
    "POSTs the run spec (a JSON file, or stdin when SPEC is -) to the daemon and\n"
    "prints the new run's id and state (\"run 12 queued\"); a spec with \"repeat\"\n"
    "queues a group of runs (\"group 3 queued: runs 12 13 14\").\n"
    "\n"
    "  --wait           poll the run until it ends, showing progress on stderr,\n"
    "                   then print its summary (as `headroom show`); for a group,\n"
    "                   each run in turn, one line per run, then the group's\n"
    "                   summary (mean, std and confidence interval across runs)\n"
    "  --poll-ms N      poll every N milliseconds (with --wait; default 500)\n"
    "  --junit FILE     with --wait: write the outcome as JUnit XML (one testsuite\n"
    "                   per run: run state, client verdict, validity, each gate)\n"
    "  --markdown FILE  with --wait: write a Markdown summary for a pull request\n"
    "                   (with --wait the same Markdown is appended to\n"
    "                   $GITHUB_STEP_SUMMARY whenever that is set)\n"
    "\n"
    "Ctrl-C while waiting only stops waiting: the run goes on in the daemon\n"
    "(`headroom cancel ID` stops it); the exit code is then 130.\n"
    "\n"
    "exit codes: 0 submitted (with --wait: the run succeeded and passed its\n"
    "checks); 1 a --junit or --markdown file could not be written; 2 usage error\n"
    "or unreadable spec; 3 daemon unreachable or it rejected the spec (the\n"
    "error's message and field are printed). With --wait, the first that applies\n"
    "in this order (a group: the first over all its runs), with a line on stderr\n"
    "saying why: 1 the run ended failed, cancelled or interrupted; 4 it succeeded\n"
    "but its client verdict is client_bound (the load generator, not the server,\n"
    "was the limit) and the spec does not set client.allow_client_bound; 7 it is\n"
    "invalid (summary.validity: too few requests, too many errors, ...); 5 a\n"
    "threshold gate failed; 6 a regression gate failed.\n";

static const char list_help[] =
    "usage: headroom list [--limit N] [--state S] [--label SEL]... [--name TEXT]\n"
    "                     [--since T] [--until T] [--fingerprint F] [--group G]\n"
    "                     [--sort KEY] [--before ID | --cursor C]\n"
    "\n"
    "Prints a table of runs, newest first: ID, STATE, NAME, CREATED (UTC),\n"
    "DURATION (started to finished; so far, for a running run), VERDICT (the\n"
    "client verdict: ok, client_bound, inconclusive), VALID (yes, no), GATES\n"
    "(pass, fail), and with --sort by a metric the sorted value; - when unknown.\n"
    "\n"
    "  --limit N          at most N runs (1..1000; default: the daemon's, 50)\n"
    "  --state S          only runs in state S: queued, running, succeeded, failed,\n"
    "                     cancelled, interrupted\n"
    "  --label K=V        only runs whose label K is V; K!=V: not V (or no K);\n"
    "                     K: with label K; !K: without it. Repeat for all of them\n"
    "  --name TEXT        only runs whose name contains TEXT (any case)\n"
    "  --since T          only runs created at or after T: 2026-12-01T10:00:00Z,\n"
    "                     2026-12-01, Unix seconds, or 30m, 24h, 7d ago (s m h d w)\n"
    "  --until T          only runs created before T (the same forms)\n"
    "  --fingerprint F    only runs of the spec fingerprint F (16 hex digits)\n"
    "  --group G          only the runs of repeat group G\n"
    "  --sort KEY         -id (default), id, name, -name, or METRIC.STAT /\n"
    "                     -METRIC.STAT (-time_to_first_token.p99: highest first)\n"
    "  --before ID        only runs older than run ID (the next page)\n"
    "  --cursor C         the next page after a page that printed this cursor\n";

static const char show_help[] =
    "usage: headroom show ID [--json]\n"
    "\n"
    "Prints run ID: name, state, reason, times, target, load, progress, then the\n"
    "metrics table (avg min max p99 p90 p50 std), counts and errors by category.\n"
    "\n"
    "  --json   print the daemon's JSON for the run instead\n";

static const char cancel_help[] =
    "usage: headroom cancel ID\n"
    "\n"
    "Cancels run ID: a queued run at once, a running one stops its workers.\n"
    "Prints the run's state; exit code 3 when the run has already finished.\n";

static const char export_help[] =
    "usage: headroom export ID [--format json|csv] [-o FILE]\n"
    "       headroom export ID --records [--format jsonl|csv] [-o FILE]\n"
    "       headroom export ID --telemetry [--format json|csv] [-o FILE]\n"
    "       headroom export ID --client [--format json|csv] [-o FILE]\n"
    "       headroom export ID --format aiperf -o DIR\n"
    "       headroom export ID --format aiperf-json|aiperf-csv|aiperf-jsonl|vllm [-o FILE]\n"
    "\n"
    "Writes the run's summary (default format json), or with --records every\n"
    "per-request record (default format jsonl), as the daemon streams it.\n"
    "--format jsonl implies --records.\n"
    "\n"
    "--format aiperf writes AIPerf's three files into DIR (made when missing):\n"
    "profile_export_aiperf.json, profile_export_aiperf.csv and the per-request\n"
    "profile_export.jsonl; aiperf-json, aiperf-csv and aiperf-jsonl write one of\n"
    "them. --format vllm writes the result JSON of vLLM's bench serve with its\n"
    "per-request arrays (docs/formats.md).\n"
    "\n"
    "  --records          export the per-request records\n"
    "  --telemetry        export the GPU and server telemetry samples\n"
    "  --client           export the load generator's own samples (workers, daemon)\n"
    "  --format F         json or csv (summary), jsonl or csv (records); aiperf,\n"
    "                     aiperf-json, aiperf-csv, aiperf-jsonl, vllm (other tools)\n"
    "  -o, --output FILE  write to FILE (replaced only once complete) instead of\n"
    "                     stdout\n";

static const char calibrate_help[] =
    "usage: headroom calibrate [--osl N,N,...] [--isl N] [--concurrency N]\n"
    "                          [--duration S] [--rates R,R,...] [--max-lag-ms MS]\n"
    "                          [--no-wait]\n"
    "\n"
    "Measures this host's client ceiling: the daemon starts a zero-delay\n"
    "headroom-mock and runs one worker against it in concurrency mode, once per\n"
    "output length, and stores the requests/s and streamed tokens/s it sustained\n"
    "as the host's client profile. Every later run reports its load as a fraction\n"
    "of it (`headroom show`, the summary's client.ceiling). With --rates it also\n"
    "runs the worker open loop (Poisson arrivals) at each rate and keeps the\n"
    "highest it sent on time (schedule lag p99 within --max-lag-ms, no errors,\n"
    "nothing unsent): the ceiling rate and trace runs are then compared with.\n"
    "Each rate times --duration must give at least 100 arrivals. Waits for the\n"
    "result and prints it, unless --no-wait.\n"
    "\n"
    "  --osl N,N,...      output lengths to measure (default 16,128,512)\n"
    "  --isl N            input length (default 128)\n"
    "  --concurrency N    concurrent streams (default 64)\n"
    "  --duration S       seconds per run (default 3)\n"
    "  --rates R,R,...    open-loop rates to try, requests/s (default: none)\n"
    "  --max-lag-ms MS    schedule lag p99 a sustained rate keeps within\n"
    "                     (default 1)\n"
    "  --no-wait          print the calibration's id and return\n";

static const char calibrations_help[] =
    "usage: headroom calibrations [ID] [--limit N]\n"
    "\n"
    "Without ID, lists the calibrations newest first (the newest succeeded one is\n"
    "this host's client profile); with ID, prints that calibration as calibrate\n"
    "does when it ends.\n"
    "\n"
    "  --limit N   how many to list, 1..1000 (default 50)\n";

static const char label_help[] =
    "usage: headroom label ID [K=V]... [K-]... [--note TEXT] [--pin | --unpin]\n"
    "\n"
    "Changes run ID's labels, note and pin (PATCH), then prints its labels, note\n"
    "and pin. K=V sets label K to V, K- removes label K; other labels stay.\n"
    "Without any change it only prints them.\n"
    "\n"
    "  --note TEXT   set the run's note (--note '' removes it)\n"
    "  --pin         pin the run\n"
    "  --unpin       unpin it\n";

static const char delete_help[] =
    "usage: headroom delete ID\n"
    "\n"
    "Deletes run ID with its records, telemetry and samples (\"run 12 deleted\").\n"
    "A running run is refused (exit 3): cancel it first.\n";

static const char compare_help[] =
    "usage: headroom compare BASE HEAD [--format table|markdown|json] [-o FILE]\n"
    "                        [--noise PCT] [--confidence C] [--seed N]\n"
    "\n"
    "Compares HEAD with BASE, metric by metric, with confidence intervals on the\n"
    "differences. BASE and HEAD are each a run (12), runs of one setup (12,13,14),\n"
    "a repeat group (group:5) or a named baseline (baseline:main).\n"
    "\n"
    "table (default): both sides, then METRIC STAT BASE HEAD DIFF DIFF% CI(%)\n"
    "VERDICT, the spec and label differences and the verdict counts. markdown:\n"
    "the same for a pull-request comment. json: the daemon's answer.\n"
    "\n"
    "  --format F        table, markdown or json\n"
    "  -o, --output FILE write to FILE (replaced only once complete)\n"
    "  --noise PCT       the noise band, % of the base: a difference within it is\n"
    "                    never better or worse (daemon default 5)\n"
    "  --confidence C    confidence of the intervals, 0.5..0.999 (default 0.95)\n"
    "  --seed N          seed of the bootstrap resampling (the same seed, the\n"
    "                    same intervals)\n"
    "\n"
    "exit codes: 0 compared (whatever the verdicts); 1 the output could not be\n"
    "written; 2 usage error; 3 the daemon refused (an unknown run, a run not\n"
    "finished) or could not be reached.\n";

static const char help_help[] = "usage: headroom help [COMMAND]\n"
                                "\n"
                                "Prints the help of COMMAND, or the general help.\n";

static int run_help(const struct cli_opts *o);

static const struct command {
	const char *name;
	int (*run)(const struct cli_opts *o);
	int min_pos, max_pos; /* positional arguments after the name */
	const char *help;
} commands[CMD__COUNT] = {
    [CMD_NONE] = {"", NULL, 0, 0, general_help},
    [CMD_SUBMIT] = {"submit", cmd_submit, 1, 1, submit_help},
    [CMD_LIST] = {"list", cmd_list, 0, 0, list_help},
    [CMD_SHOW] = {"show", cmd_show, 1, 1, show_help},
    [CMD_CANCEL] = {"cancel", cmd_cancel, 1, 1, cancel_help},
    [CMD_EXPORT] = {"export", cmd_export, 1, 1, export_help},
    [CMD_CALIBRATE] = {"calibrate", cmd_calibrate, 0, 0, calibrate_help},
    [CMD_CALIBRATIONS] = {"calibrations", cmd_calibrations, 0, 1, calibrations_help},
    [CMD_LABEL] = {"label", cmd_label, 1, INT_MAX, label_help},
    [CMD_DELETE] = {"delete", cmd_delete, 1, 1, delete_help},
    [CMD_COMPARE] = {"compare", cmd_compare, 2, 2, compare_help},
    [CMD_HELP] = {"help", run_help, 0, 1, help_help},
};

enum opt_id {
	OPT_URL,
	OPT_HELP,
	OPT_VERSION,
	OPT_WAIT,
	OPT_POLL_MS,
	OPT_LIMIT,
	OPT_STATE,
	OPT_BEFORE,
	OPT_JSON,
	OPT_FORMAT,
	OPT_RECORDS,
	OPT_TELEMETRY,
	OPT_CLIENT,
	OPT_OUTPUT,
	OPT_OSL,
	OPT_ISL,
	OPT_CONCURRENCY,
	OPT_DURATION,
	OPT_RATES,
	OPT_MAX_LAG,
	OPT_NO_WAIT,
	OPT_LABEL,
	OPT_NAME,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_FINGERPRINT,
	OPT_SORT,
	OPT_GROUP,
	OPT_CURSOR,
	OPT_NOTE,
	OPT_PIN,
	OPT_UNPIN,
	OPT_NOISE,
	OPT_CONFIDENCE,
	OPT_SEED,
	OPT_JUNIT,
	OPT_MARKDOWN,
	OPT__COUNT
};

#define FOR(c) (1u << (c))
#define ANY_CMD (~0u)

static const struct optdef {
	const char *lng;
	char shrt;
	int has_arg;
	unsigned cmds; /* FOR() mask of the commands that take it */
	int repeat;    /* every value is kept (struct parsed.many), not only the last */
} optdefs[OPT__COUNT] = {
    [OPT_URL] = {"url", 0, 1, ANY_CMD},
    [OPT_HELP] = {"help", 'h', 0, ANY_CMD},
    [OPT_VERSION] = {"version", 'V', 0, ANY_CMD},
    [OPT_WAIT] = {"wait", 0, 0, FOR(CMD_SUBMIT)},
    [OPT_POLL_MS] = {"poll-ms", 0, 1, FOR(CMD_SUBMIT)},
    [OPT_LIMIT] = {"limit", 0, 1, FOR(CMD_LIST) | FOR(CMD_CALIBRATIONS)},
    [OPT_STATE] = {"state", 0, 1, FOR(CMD_LIST)},
    [OPT_BEFORE] = {"before", 0, 1, FOR(CMD_LIST)},
    [OPT_JSON] = {"json", 0, 0, FOR(CMD_SHOW)},
    [OPT_FORMAT] = {"format", 0, 1, FOR(CMD_EXPORT) | FOR(CMD_COMPARE)},
    [OPT_RECORDS] = {"records", 0, 0, FOR(CMD_EXPORT)},
    [OPT_TELEMETRY] = {"telemetry", 0, 0, FOR(CMD_EXPORT)},
    [OPT_CLIENT] = {"client", 0, 0, FOR(CMD_EXPORT)},
    [OPT_OUTPUT] = {"output", 'o', 1, FOR(CMD_EXPORT) | FOR(CMD_COMPARE)},
    [OPT_OSL] = {"osl", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_ISL] = {"isl", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_CONCURRENCY] = {"concurrency", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_DURATION] = {"duration", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_RATES] = {"rates", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_MAX_LAG] = {"max-lag-ms", 0, 1, FOR(CMD_CALIBRATE)},
    [OPT_NO_WAIT] = {"no-wait", 0, 0, FOR(CMD_CALIBRATE)},
    [OPT_LABEL] = {"label", 0, 1, FOR(CMD_LIST), 1},
    [OPT_NAME] = {"name", 0, 1, FOR(CMD_LIST)},
    [OPT_SINCE] = {"since", 0, 1, FOR(CMD_LIST)},
    [OPT_UNTIL] = {"until", 0, 1, FOR(CMD_LIST)},
    [OPT_FINGERPRINT] = {"fingerprint", 0, 1, FOR(CMD_LIST)},
    [OPT_SORT] = {"sort", 0, 1, FOR(CMD_LIST)},
    [OPT_GROUP] = {"group", 0, 1, FOR(CMD_LIST)},
    [OPT_CURSOR] = {"cursor", 0, 1, FOR(CMD_LIST)},
    [OPT_NOTE] = {"note", 0, 1, FOR(CMD_LABEL)},
    [OPT_PIN] = {"pin", 0, 0, FOR(CMD_LABEL)},
    [OPT_UNPIN] = {"unpin", 0, 0, FOR(CMD_LABEL)},
    [OPT_NOISE] = {"noise", 0, 1, FOR(CMD_COMPARE)},
    [OPT_CONFIDENCE] = {"confidence", 0, 1, FOR(CMD_COMPARE)},
    [OPT_SEED] = {"seed", 0, 1, FOR(CMD_COMPARE)},
    [OPT_JUNIT] = {"junit", 0, 1, FOR(CMD_SUBMIT)},
    [OPT_MARKDOWN] = {"markdown", 0, 1, FOR(CMD_SUBMIT)},
};

static const char *const run_states[] = {"queued", "running",   "succeeded",
                                         "failed", "cancelled", "interrupted"};

struct parsed {
	enum cmd cmd;
	int seen[OPT__COUNT];
	const char *val[OPT__COUNT]; /* last value given */
	const char **many[OPT__COUNT]; /* every value of a repeat option, in order (owned) */
	int nmany[OPT__COUNT];
	const char **pos;            /* positional arguments after the command, borrowed */
	int npos;
};

/* Prints a usage error and returns EXIT_USAGE. */
static int usage_error(enum cmd cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(enum cmd cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("headroom: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd != CMD_NONE && cmd != CMD_HELP)
		fprintf(stderr, "\nTry 'headroom help %s'.\n", commands[cmd].name);
	else
		fputs("\nTry 'headroom --help'.\n", stderr);
	return EXIT_USAGE;
}

static enum cmd find_command(const char *name)
{
	for (int c = CMD_NONE + 1; c < CMD__COUNT; c++)
		if (strcmp(commands[c].name, name) == 0)
			return (enum cmd)c;
	return CMD_NONE;
}

static int find_long(const char *name, size_t len)
{
	for (int i = 0; i < OPT__COUNT; i++)
		if (strlen(optdefs[i].lng) == len && strncmp(optdefs[i].lng, name, len) == 0)
			return i;
	return -1;
}

static int find_short(char ch)
{
	for (int i = 0; i < OPT__COUNT; i++)
		if (optdefs[i].shrt && optdefs[i].shrt == ch)
			return i;
	return -1;
}

/* Splits argv into command, options and positionals. Returns 0 or EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct parsed *p)
{
	int only_pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (p->cmd == CMD_NONE) {
				p->cmd = find_command(a);
				if (p->cmd == CMD_NONE)
					return usage_error(CMD_NONE, "unknown command '%s'", a);
			} else {
				p->pos[p->npos++] = a;
			}
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		int id;
		const char *value = NULL;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
			id = find_long(a + 2, len);
			if (id < 0)
				return usage_error(p->cmd, "unknown option '%.*s'", (int)(len + 2),
				                   a);
			if (eq) {
				if (!optdefs[id].has_arg)
					return usage_error(p->cmd, "option '--%s' takes no value",
					                   optdefs[id].lng);
				value = eq + 1;
			}
		} else {
			id = find_short(a[1]);
			if (id < 0)
				return usage_error(p->cmd, "unknown option '-%c'", a[1]);
			if (a[2] != '\0') {
				if (!optdefs[id].has_arg)
					return usage_error(p->cmd, "unknown option '%s'", a);
				value = a + 2;
			}
		}
		if (optdefs[id].has_arg && !value) {
			if (i + 1 >= argc)
				return usage_error(p->cmd, "option '--%s' needs a value",
				                   optdefs[id].lng);
			value = argv[++i];
		}
		p->seen[id] = 1;
		p->val[id] = value;
		if (optdefs[id].repeat) {
			if (!p->many[id])
				p->many[id] = xcalloc((size_t)argc, sizeof(*p->many[id]));
			p->many[id][p->nmany[id]++] = value;
		}
	}
	return 0;
}

int cli_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A number in [min, max] (NaN never is) into *out: 0, or -1. */
static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return -1;
	*out = v;
	return 0;
}

/* A run id: decimal digits only, 1..LLONG_MAX. */
static int parse_id(const char *s, long long *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < 1)
		return -1;
	*out = v;
	return 0;
}

/* A time for --since / --until: a relative one (digits and a unit s, m, h,
 * d or w: that long ago) becomes RFC 3339 UTC in buf (n >= 32 bytes); any
 * other non-empty text goes to the daemon as it is (it takes RFC 3339, a
 * date or Unix seconds, and names the option's field when it does not).
 * Returns the text to send, or NULL when s is empty or too far back. */
static const char *parse_since(const char *s, char *buf, size_t n)
{
	static const struct {
		char unit;
		long long seconds;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 604800}};
	size_t len = strlen(s), digits = strspn(s, "0123456789");
	if (!len)
		return NULL;
	if (digits == 0 || digits != len - 1 || digits > 9)
		return s;
	long long ago = -1;
	for (size_t i = 0; i < HR_ARRAY_LEN(units); i++)
		if (s[len - 1] == units[i].unit)
			ago = strtoll(s, NULL, 10) * units[i].seconds;
	if (ago < 0)
		return s;
	time_t t = time(NULL) - (time_t)ago;
	struct tm tm;
	if (ago > 100LL * 366 * 86400 || !gmtime_r(&t, &tm) ||
	    !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		return NULL;
	return buf;
}

/* A --label selector: K=V, K!=V, K or !K with a non-empty K. */
static int is_selector(const char *s)
{
	int absent = *s == '!';
	s += absent;
	size_t k = strcspn(s, "=");
	if (absent)
		return k > 0 && !s[k];
	if (s[k] == '=' && k > 0 && s[k - 1] == '!')
		k--;
	return k > 0;
}

static int is_state(const char *s)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(run_states); i++)
		if (strcmp(run_states[i], s) == 0)
			return 1;
	return 0;
}

/* Checks the options against the command and fills o. Returns 0 or EXIT_USAGE. */
static int build_opts(const struct parsed *p, struct cli_opts *o)
{
	enum cmd cmd = p->cmd;
	for (int i = 0; i < OPT__COUNT; i++)
		if (p->seen[i] && !(optdefs[i].cmds & FOR(cmd)))
			return usage_error(cmd, "option '--%s' does not apply to '%s'",
			                   optdefs[i].lng,
			                   cmd == CMD_NONE ? "headroom" : commands[cmd].name);
	if (p->npos < commands[cmd].min_pos)
		return usage_error(cmd, "'%s' needs %s", commands[cmd].name,
		                   cmd == CMD_SUBMIT    ? "a spec file (or - for stdin)"
		                   : cmd == CMD_COMPARE ? "a BASE and a HEAD (runs 12 13)"
		                                        : "a run id");
	if (p->npos > commands[cmd].max_pos)
		return usage_error(cmd, "unexpected argument '%s'", p->pos[commands[cmd].max_pos]);

	const char *env = getenv("HEADROOM_URL");
	o->url = p->seen[OPT_URL] ? p->val[OPT_URL] : (env && *env ? env : HEADROOM_DEFAULT_URL);
	o->arg = p->npos > 0 ? p->pos[0] : NULL;
	if ((cmd == CMD_SHOW || cmd == CMD_CANCEL || cmd == CMD_EXPORT || cmd == CMD_LABEL ||
	     cmd == CMD_DELETE) &&
	    parse_id(o->arg, &o->id) < 0)
		return usage_error(cmd, "invalid run id '%s'", o->arg);
	if (cmd == CMD_CALIBRATIONS && o->arg && parse_id(o->arg, &o->id) < 0)
		return usage_error(cmd, "invalid calibration id '%s'", o->arg);
	if (cmd == CMD_SUBMIT && !*o->arg)
		return usage_error(cmd, "empty spec file name");

	o->wait = p->seen[OPT_WAIT];
	o->poll_ms = POLL_MS_DEFAULT;
	if (p->seen[OPT_POLL_MS]) {
		if (!o->wait)
			return usage_error(cmd, "--poll-ms only applies with --wait");
		if (cli_parse_long(p->val[OPT_POLL_MS], POLL_MS_MIN, POLL_MS_MAX, &o->poll_ms) < 0)
			return usage_error(cmd,
			                   "--poll-ms wants a number of milliseconds, %ld..%ld",
			                   POLL_MS_MIN, POLL_MS_MAX);
	}
	if (p->seen[OPT_LIMIT] &&
	    cli_parse_long(p->val[OPT_LIMIT], 1, HR_MAX_PAGE_LIMIT, &o->limit) < 0)
		return usage_error(cmd, "--limit wants a number, 1..%d", HR_MAX_PAGE_LIMIT);
	if (p->seen[OPT_STATE]) {
		o->state = p->val[OPT_STATE];
		if (!is_state(o->state))
			return usage_error(
			    cmd,
			    "unknown state '%s' (queued, running, succeeded, failed, "
			    "cancelled, interrupted)",
			    o->state);
	}
	if (p->seen[OPT_BEFORE] && parse_id(p->val[OPT_BEFORE], &o->before) < 0)
		return usage_error(cmd, "invalid run id '%s' for --before", p->val[OPT_BEFORE]);
	o->json = p->seen[OPT_JSON];
	if ((p->seen[OPT_JUNIT] || p->seen[OPT_MARKDOWN]) && !o->wait)
		return usage_error(cmd, "--junit and --markdown only apply with --wait");
	if (p->seen[OPT_JUNIT] && !*(o->junit = p->val[OPT_JUNIT]))
		return usage_error(cmd, "empty --junit file name");
	if (p->seen[OPT_MARKDOWN] && !*(o->markdown = p->val[OPT_MARKDOWN]))
		return usage_error(cmd, "empty --markdown file name");

	if (cmd == CMD_LIST) {
		o->labels = p->many[OPT_LABEL];
		o->nlabels = p->nmany[OPT_LABEL];
		for (int i = 0; i < o->nlabels; i++)
			if (!is_selector(o->labels[i]))
				return usage_error(cmd,
				                   "--label wants K=V, K!=V, K or !K with a label "
				                   "name K, not '%s'",
				                   o->labels[i]);
		o->name = p->val[OPT_NAME];
		if (p->seen[OPT_SINCE] &&
		    !(o->since = parse_since(p->val[OPT_SINCE], o->since_buf, sizeof o->since_buf)))
			return usage_error(cmd, "--since wants a time: 2026-12-01T10:00:00Z, "
			                        "2026-12-01, Unix seconds, or 30m, 24h, 7d");
		if (p->seen[OPT_UNTIL] &&
		    !(o->until = parse_since(p->val[OPT_UNTIL], o->until_buf, sizeof o->until_buf)))
			return usage_error(cmd, "--until wants a time: 2026-12-01T10:00:00Z, "
			                        "2026-12-01, Unix seconds, or 30m, 24h, 7d");
		o->fingerprint = p->val[OPT_FINGERPRINT];
		if (o->fingerprint && (strlen(o->fingerprint) != 16 ||
		                       strspn(o->fingerprint, "0123456789abcdefABCDEF") != 16))
			return usage_error(cmd, "--fingerprint wants 16 hex digits, not '%s'",
			                   o->fingerprint);
		o->sort = p->val[OPT_SORT];
		if (o->sort && !*o->sort)
			return usage_error(cmd, "empty --sort key");
		long long g;
		if (p->seen[OPT_GROUP] && parse_id(p->val[OPT_GROUP], &g) < 0)
			return usage_error(cmd, "invalid group id '%s' for --group",
			                   p->val[OPT_GROUP]);
		o->group = p->val[OPT_GROUP];
		o->cursor = p->val[OPT_CURSOR];
		if (o->cursor && (!*o->cursor || p->seen[OPT_BEFORE]))
			return usage_error(cmd, "--cursor wants a page's cursor, without --before");
	}
	if (cmd == CMD_LABEL) {
		o->changes = p->pos + 1;
		o->nchanges = p->npos - 1;
		for (int i = 0; i < o->nchanges; i++) {
			const char *a = o->changes[i];
			size_t len = strlen(a);
			if (a[0] == '=' || (!strchr(a, '=') && (len < 2 || a[len - 1] != '-')))
				return usage_error(
				    cmd,
				    "'%s' is neither K=V (set label K) nor K- (remove "
				    "it)",
				    a);
		}
		o->set_note = p->seen[OPT_NOTE];
		o->note = p->val[OPT_NOTE];
		if (p->seen[OPT_PIN] && p->seen[OPT_UNPIN])
			return usage_error(cmd, "--pin or --unpin, not both");
		o->pin = p->seen[OPT_PIN] ? 1 : p->seen[OPT_UNPIN] ? -1 : 0;
	}
	if (cmd == CMD_COMPARE) {
		o->head = p->pos[1];
		if (!*o->arg || !*o->head)
			return usage_error(cmd, "empty BASE or HEAD");
		o->format = p->seen[OPT_FORMAT] ? p->val[OPT_FORMAT] : "table";
		if (strcmp(o->format, "table") && strcmp(o->format, "markdown") &&
		    strcmp(o->format, "json"))
			return usage_error(cmd, "--format wants table, markdown or json, not '%s'",
			                   o->format);
		if (p->seen[OPT_OUTPUT] && !*(o->output = p->val[OPT_OUTPUT]))
			return usage_error(cmd, "empty output file name");
		o->has_noise = p->seen[OPT_NOISE];
		if (o->has_noise && parse_double(p->val[OPT_NOISE], 0, 100, &o->noise_pct) < 0)
			return usage_error(cmd, "--noise wants a percentage, 0..100");
		if (p->seen[OPT_CONFIDENCE] &&
		    parse_double(p->val[OPT_CONFIDENCE], 0.5, 0.999, &o->confidence) < 0)
			return usage_error(cmd, "--confidence wants a probability, 0.5..0.999 "
			                        "(0.95 for 95%%)");
		o->has_seed = p->seen[OPT_SEED];
		long seed;
		if (o->has_seed && cli_parse_long(p->val[OPT_SEED], 0, LONG_MAX, &seed) < 0)
			return usage_error(cmd, "--seed wants a whole number, 0 or more");
		o->seed = o->has_seed ? seed : 0;
	}

	if (cmd == CMD_EXPORT) {
		const char *f = p->seen[OPT_FORMAT] ? p->val[OPT_FORMAT] : NULL;
		o->records = p->seen[OPT_RECORDS] || (f && strcmp(f, "jsonl") == 0);
		o->telemetry = p->seen[OPT_TELEMETRY];
		o->client = p->seen[OPT_CLIENT];
		if (o->telemetry + o->records + o->client > 1)
			return usage_error(cmd, "--records, --telemetry and --client are separate "
			                        "exports");
		o->peer = f && (strncmp(f, "aiperf", 6) == 0 || strcmp(f, "vllm") == 0);
		if (o->peer) {
			static const char *const peers[] = {"aiperf", "aiperf-json", "aiperf-csv",
			                                    "aiperf-jsonl", "vllm"};
			int known = 0;
			for (size_t i = 0; i < HR_ARRAY_LEN(peers); i++)
				known |= strcmp(f, peers[i]) == 0;
			if (!known)
				return usage_error(cmd, "unknown format '%s' (aiperf, aiperf-json, "
				                        "aiperf-csv, aiperf-jsonl, vllm)", f);
			if (o->records || o->telemetry || o->client)
				return usage_error(cmd, "--format %s is a file of its own: without "
				                        "--records, --telemetry or --client", f);
			if (strcmp(f, "aiperf") == 0 && !p->seen[OPT_OUTPUT])
				return usage_error(cmd, "--format aiperf writes three files: name "
				                        "their directory with -o DIR");
		}
		if (!f)
			f = o->records ? "jsonl" : "json";
		if (!o->peer && o->records && strcmp(f, "jsonl") != 0 && strcmp(f, "csv") != 0)
			return usage_error(cmd, "records export as jsonl or csv, not '%s'", f);
		if (!o->peer && !o->records && strcmp(f, "json") != 0 && strcmp(f, "csv") != 0)
			return usage_error(cmd, "a summary exports as json or csv, not '%s'", f);
		o->format = f;
		if (p->seen[OPT_OUTPUT]) {
			o->output = p->val[OPT_OUTPUT];
			if (!*o->output)
				return usage_error(cmd, "empty output file name");
		}
	}
	if (cmd == CMD_CALIBRATE) {
		o->wait = !p->seen[OPT_NO_WAIT];
		if (p->seen[OPT_OSL]) {
			o->osl = p->val[OPT_OSL];
			const char *c = o->osl;
			if (!*c || strspn(c, "0123456789,") != strlen(c) || *c == ',' ||
			    c[strlen(c) - 1] == ',' || strstr(c, ",,"))
				return usage_error(cmd, "--osl wants output lengths like 16,128,512");
		}
		if (p->seen[OPT_ISL] && cli_parse_long(p->val[OPT_ISL], 1, 65536, &o->isl) < 0)
			return usage_error(cmd, "--isl wants a number, 1..65536");
		if (p->seen[OPT_CONCURRENCY] &&
		    cli_parse_long(p->val[OPT_CONCURRENCY], 1, 4096, &o->concurrency) < 0)
			return usage_error(cmd, "--concurrency wants a number, 1..4096");
		if (p->seen[OPT_DURATION] &&
		    parse_double(p->val[OPT_DURATION], 0.5, 600, &o->duration_s) < 0)
			return usage_error(cmd, "--duration wants seconds, 0.5..600");
		if (p->seen[OPT_RATES]) {
			/* numbers 1..1000000, each ending at a comma or the end */
			o->rates = p->val[OPT_RATES];
			const char *c = o->rates;
			do {
				char *end;
				errno = 0;
				double r = strtod(c, &end);
				if (end == c || errno || (*end && *end != ',') || !(r >= 1 && r <= 1e6) ||
				    strcspn(c, ",") != strspn(c, "0123456789."))
					return usage_error(cmd, "--rates wants requests/s from 1 to 1000000 "
					                        "like 500,1000,2000");
				c = *end ? end + 1 : end;
			} while (*c || c[-1] == ',');
		}
		if (p->seen[OPT_MAX_LAG] &&
		    parse_double(p->val[OPT_MAX_LAG], 0.01, 1000, &o->max_lag_ms) < 0)
			return usage_error(cmd, "--max-lag-ms wants milliseconds, 0.01..1000");
	}
	return 0;
}

static int run_help(const struct cli_opts *o)
{
	if (!o->arg) {
		fputs(general_help, stdout);
		return EXIT_OK;
	}
	enum cmd c = find_command(o->arg);
	if (c == CMD_NONE)
		return usage_error(CMD_HELP, "unknown command '%s'", o->arg);
	fputs(commands[c].help, stdout);
	return EXIT_OK;
}

/* Commands with flag sets of their own (tokenize, profile, dataset) may come
 * after the global --url: `headroom --url U dataset list` runs as
 * `headroom dataset list --url U` (for profile, whose --url is the
 * inference server, as `--daemon U`). Rewrites argv in place. */
static void hoist_command(int argc, char **argv)
{
	int i = 1;
	while (i < argc && (strcmp(argv[i], "--url") == 0 || strncmp(argv[i], "--url=", 6) == 0))
		i += strcmp(argv[i], "--url") == 0 ? 2 : 1;
	if (i <= 1 || i >= argc)
		return;
	const char *cmd = argv[i];
	if (strcmp(cmd, "tokenize") && strcmp(cmd, "profile") && strcmp(cmd, "dataset") &&
	    strcmp(cmd, "sweep") && strcmp(cmd, "sweeps") && strcmp(cmd, "import"))
		return;
	char *word = argv[i];
	memmove(argv + 2, argv + 1, (size_t)(i - 1) * sizeof *argv);
	argv[1] = word;
	if (strcmp(cmd, "profile") == 0)
		for (int k = 2; k <= i; k++) {
			if (strcmp(argv[k], "--url") == 0)
				argv[k] = (char *)"--daemon";
			else if (strncmp(argv[k], "--url=", 6) == 0)
				argv[k] = xasprintf("--daemon=%s", argv[k] + 6); /* lives as argv does */
		}
}

/* --token TOKEN and --cacert FILE (also --opt=VALUE) anywhere on the line,
 * for every command: taken out of argv (argc updated). Returns 0, or -1
 * for one without its value. */
static int take_credentials(int *argc, char **argv)
{
	const char *token = NULL, *ca = NULL;
	int n = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		int is_tok = strcmp(a, "--token") == 0, is_ca = strcmp(a, "--cacert") == 0;
		if (is_tok || is_ca) {
			if (i + 1 >= *argc) {
				fprintf(stderr, "headroom: %s needs a value\n", a);
				return -1;
			}
			*(is_tok ? &token : &ca) = argv[++i];
		} else if (strncmp(a, "--token=", 8) == 0) {
			token = a + 8;
		} else if (strncmp(a, "--cacert=", 9) == 0) {
			ca = a + 9;
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	*argc = n;
	http_set_credentials(token, ca);
	return 0;
}

int main(int argc, char **argv)
{
	if (take_credentials(&argc, argv) < 0)
		return EXIT_USAGE;
	hoist_command(argc, argv);
	/* commands with their own flag sets: tokenize (local), profile (AIPerf's),
	 * dataset (subcommands) */
	if (argc > 1 && strcmp(argv[1], "tokenize") == 0) {
		int cmd_tokenize(int, char **);
		return cmd_tokenize(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "profile") == 0)
		return cmd_profile(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "sweep") == 0 || strcmp(argv[1], "sweeps") == 0)) {
		int cmd_sweep(int, char **);
		return cmd_sweep(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "dataset") == 0) {
		int cmd_dataset(int, char **);
		return cmd_dataset(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "import") == 0) {
		int cmd_import(int, char **);
		return cmd_import(argc - 1, argv + 1);
	}
	struct parsed p;
	memset(&p, 0, sizeof(p));
	p.pos = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(*p.pos));
	struct cli_opts o;
	memset(&o, 0, sizeof(o));
	int ex = parse_args(argc, argv, &p);
	if (ex != EXIT_OK)
		goto out;
	if (p.seen[OPT_HELP]) {
		fputs(commands[p.cmd].help, stdout);
		goto out;
	}
	if (p.seen[OPT_VERSION]) {
		puts("headroom " HEADROOM_VERSION " (" HEADROOM_COMMIT ")");
		goto out;
	}
	if (p.cmd == CMD_NONE) {
		fputs(general_help, stderr);
		ex = EXIT_USAGE;
		goto out;
	}
	if ((ex = build_opts(&p, &o)) != EXIT_OK)
		goto out;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fputs("headroom: cannot initialise libcurl\n", stderr);
		ex = EXIT_DAEMON;
		goto out;
	}
	ex = commands[p.cmd].run(&o);
	curl_global_cleanup();
out:
	free(p.pos);
	for (int i = 0; i < OPT__COUNT; i++)
		free(p.many[i]);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (ex == EXIT_OK)
			fprintf(stderr, "headroom: cannot write to stdout: %s\n", strerror(errno));
		if (ex == EXIT_OK)
			ex = EXIT_RUN_FAILED;
	}
	return ex;
}
