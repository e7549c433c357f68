/* cli.h - what the `headroom` command-line client's files share: its
 * version, exit codes, the parsed command line and the subcommands.
 *
 * main.c parses arguments and dispatches; commands.c runs each subcommand
 * against the daemon (http.h) and renders answers (show.h, table.h);
 * history.c has the history commands (label, delete, compare) and report.c
 * judges finished runs for CI (exit codes, JUnit XML, Markdown).
 */
#ifndef HR_CLI_H
#define HR_CLI_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>

#define HEADROOM_DEFAULT_URL "http://127.0.0.1:8080"

/* Exit codes (docs/cli.md). */
enum cli_exit {
	EXIT_OK = 0,              /* done; for `submit --wait`: the run succeeded */
	EXIT_RUN_FAILED = 1,      /* the run ended failed/cancelled/interrupted; or a local
	                           * output could not be written */
	EXIT_USAGE = 2,           /* bad command line or unusable local input */
	EXIT_DAEMON = 3,          /* daemon unreachable, an error answer, or a malformed one */
	EXIT_CLIENT_BOUND = 4,    /* `submit --wait`: the run succeeded but its client verdict
	                           * is client_bound and its spec does not allow that */
	EXIT_THRESHOLD_GATE = 5,  /* `submit --wait`: a threshold gate failed */
	EXIT_REGRESSION_GATE = 6, /* `submit --wait`: a regression gate failed */
	EXIT_INVALID = 7,         /* `submit --wait`: the run is invalid (summary.validity) */
	EXIT_INTERRUPTED = 130    /* Ctrl-C / SIGTERM while waiting or streaming */
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
	const char **labels; /* list --label selectors as given, in order (borrowed) */
	int nlabels;
	const char *name;  /* list --name, NULL: any */
	const char *since; /* list --since, as the API takes it (points into since_buf
	                    * when the CLI converted a relative time), NULL: any */
	const char *until; /* list --until, the same */
	char since_buf[32], until_buf[32];
	const char *fingerprint;    /* list --fingerprint, NULL: any */
	const char *sort;           /* list --sort, NULL: the daemon's (-id) */
	const char *group;          /* list --group (a group id), NULL: any */
	const char *cursor;         /* list --cursor (a previous page's next_cursor), NULL: none */
	const char *const *changes; /* label: the K=V and K- arguments after the id (borrowed) */
	int nchanges;
	const char *note; /* label --note, with set_note ("" clears the note) */
	int set_note;
	int pin;           /* label: 1 --pin, -1 --unpin, 0 neither */
	const char *head;  /* compare: the HEAD ref (arg is BASE) */
	double noise_pct;  /* compare --noise, with has_noise */
	double confidence; /* compare --confidence, 0: the daemon's */
	long long seed;    /* compare --seed, with has_seed */
	int has_noise, has_seed;
	const char *junit;    /* submit --junit FILE, NULL: none */
	const char *markdown; /* submit --markdown FILE, NULL: none */
	int json;           /* show --json */
	const char *format; /* export / compare --format, NULL: default */
	int records;        /* export --records */
	int telemetry;      /* export --telemetry */
	int client;         /* export --client */
	int peer;           /* export --format aiperf*|vllm: a file of another tool */
	const char *osl;    /* calibrate --osl, NULL: the daemon's default */
	long isl, concurrency; /* calibrate --isl / --concurrency, 0: default */
	double duration_s;  /* calibrate --duration, 0: default */
	const char *rates;  /* calibrate --rates, NULL: none */
	double max_lag_ms;  /* calibrate --max-lag-ms, 0: default */
	const char *output; /* export / compare -o, NULL: stdout */
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
int cmd_label(const struct cli_opts *o);   /* history.c */
int cmd_delete(const struct cli_opts *o);  /* history.c */
int cmd_compare(const struct cli_opts *o); /* history.c */
/* POSTs a spec (JSON text) and, with o->wait, waits as `submit --wait`. */
int cli_submit_text(const struct cli_opts *o, const char *text, size_t len);
/* Prints a daemon's non-2xx answer (r: struct http_resp, http.h) as
 * `error: <message> (field: <field>)`; returns EXIT_DAEMON. */
struct http_resp;
int cli_answer_failure(const struct http_resp *r);
/* A 2xx answer that must be a JSON object (a new reference); NULL, with a
 * message printed, when it is not (view.c). */
json_t *cli_answer_object(const struct http_resp *r);
/* Opens a client for o->url (stop flag: cli_stop): EXIT_OK, or EXIT_USAGE
 * with a message printed (commands.c). */
struct http_client;
int cli_client_open(const struct cli_opts *o, struct http_client *c);
/* Prints why a request failed (rc: enum http_fail, err its message) and
 * returns the exit code for it (commands.c). */
int cli_transport_failure(int rc, const char *err);
enum cli_method { CLI_GET, CLI_POST, CLI_PATCH, CLI_DELETE };
/* One request (body and len: POST and PATCH; DELETE and GET send none),
 * its 2xx answer parsed as an object (a 204 without a body gives an empty
 * one). Returns it (caller decrefs), or NULL with *ex set and the reason
 * printed (commands.c). */
json_t *cli_call(struct http_client *c, enum cli_method m, const char *path, const char *body,
                 size_t len, int *ex);
/* As cli_call, leaving the answer's bytes in r (initialised here; the
 * caller releases it), e.g. to print them as they came. */
json_t *cli_call_resp(struct http_client *c, enum cli_method m, const char *path, const char *body,
                      size_t len, struct http_resp *r, int *ex);
/* An output file: stdout for NULL or "-", the file itself when it is not a
 * regular file (a FIFO), else a temporary file renamed over it once
 * complete (commands.c). */
struct cli_sink {
	FILE *f;
	char *tmp; /* owned, NULL unless writing through a temporary file */
};
/* 0, or -1 with a message printed. */
int cli_sink_open(struct cli_sink *s, const char *output);
/* Keeps the output when ok, else removes a temporary file. 0, or -1 when
 * flushing or renaming failed (printed). */
int cli_sink_close(struct cli_sink *s, const char *output, int ok);
/* For the commands with flag sets of their own (dataset, sweep, import):
 * prints "headroom: MESSAGE" and "Try 'headroom CMD --help'." and returns
 * EXIT_USAGE (commands.c). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Installs the SIGINT/SIGTERM handler that sets cli_stop (commands.c). */
void cli_catch_signals(void);
/* A decimal long in [min, max] into *out: 0, or -1 (main.c). */
int cli_parse_long(const char *s, long min, long max, long *out);
/* A dataset's local media files inlined (inline.c): the JSONL text of file
 * (its directory resolves relative paths) rewritten into out with each
 * local picture as a data: URL and each local clip as "FORMAT,BASE64".
 * Returns 1 (out holds the text to upload), 0 (nothing to inline; out
 * unused) or -1 with err naming the line and field. */
struct dynbuf;
int dataset_inline_files(const char *text, size_t len, const char *file, const char *format,
                         struct dynbuf *out, char *err);
/* `headroom profile`: AIPerf's flags to a run spec (profile.c). */
int cmd_profile(int argc, char **argv);

#endif
