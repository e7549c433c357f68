/* cli.h - what the `headroom` command-line client's files share: its
 * version, exit codes, the parsed command line and the subcommands.
 *
 * main.c parses arguments and dispatches; commands.c runs each subcommand
 * against the daemon (http.h) and renders answers (show.h, table.h).
 */
#ifndef HR_CLI_H
#define HR_CLI_H

#include <jansson.h>
#include <signal.h>

#define HEADROOM_VERSION "0.1.0"
#define HEADROOM_DEFAULT_URL "http://127.0.0.1:8080"

/* Exit codes (docs/cli.md). */
enum cli_exit {
	EXIT_OK = 0,           /* done; for `submit --wait`: the run succeeded */
	EXIT_RUN_FAILED = 1,   /* the run ended failed/cancelled/interrupted; or a local
	                        * output could not be written */
	EXIT_USAGE = 2,        /* bad command line or unusable local input */
	EXIT_DAEMON = 3,       /* daemon unreachable, an error answer, or a malformed one */
	EXIT_CLIENT_BOUND = 4, /* `submit --wait`: the run succeeded but its client verdict
	                        * is client_bound and its spec does not allow that */
	EXIT_INTERRUPTED = 130 /* Ctrl-C / SIGTERM while waiting or streaming */
};

/* The parsed command line. Strings are borrowed from argv / environ. */
struct cli_opts {
	const char *url;    /* daemon base URL */
	const char *arg;    /* the positional argument: SPEC or ID, else NULL */
	long long id;       /* arg as a run id, for commands that take one */
	int wait;           /* submit --wait */
	long poll_ms;       /* submit --poll-ms */
	long limit;         /* list --limit, 0: the daemon's default */
	const char *state;  /* list --state, NULL: any */
	long long before;   /* list --before, 0: from the newest */
	int json;           /* show --json */
	const char *format; /* export --format, NULL: default */
	int records;        /* export --records */
	int telemetry;      /* export --telemetry */
	int client;         /* export --client */
	const char *osl;    /* calibrate --osl, NULL: the daemon's default */
	long isl, concurrency; /* calibrate --isl / --concurrency, 0: default */
	double duration_s;  /* calibrate --duration, 0: default */
	const char *rates;  /* calibrate --rates, NULL: none */
	double max_lag_ms;  /* calibrate --max-lag-ms, 0: default */
	const char *output; /* export -o, NULL: stdout */
};

/* Set by the SIGINT/SIGTERM handler; transfers and waits stop when nonzero. */
extern volatile sig_atomic_t cli_stop;

/* Each returns an enum cli_exit value. */
int cmd_submit(const struct cli_opts *o);
int cmd_list(const struct cli_opts *o);
int cmd_show(const struct cli_opts *o);
int cmd_cancel(const struct cli_opts *o);
int cmd_export(const struct cli_opts *o);
int cmd_calibrate(const struct cli_opts *o);
int cmd_calibrations(const struct cli_opts *o);
/* POSTs a spec (JSON text) and, with o->wait, waits as `submit --wait`. */
int cli_submit_text(const struct cli_opts *o, const char *text, size_t len);
/* Prints a daemon's non-2xx answer (r: struct http_resp, http.h) as
 * `error: <message> (field: <field>)`; returns EXIT_DAEMON. */
struct http_resp;
int cli_answer_failure(const struct http_resp *r);
/* A 2xx answer that must be a JSON object (a new reference); NULL, with a
 * message printed, when it is not (view.c). */
json_t *cli_answer_object(const struct http_resp *r);
/* Installs the SIGINT/SIGTERM handler that sets cli_stop (commands.c). */
void cli_catch_signals(void);
/* A decimal long in [min, max] into *out: 0, or -1 (main.c). */
int cli_parse_long(const char *s, long min, long max, long *out);
/* `headroom profile`: AIPerf's flags to a run spec (profile.c). */
int cmd_profile(int argc, char **argv);

#endif
