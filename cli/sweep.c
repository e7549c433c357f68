/* sweep.c - `headroom sweep` (a sweep or capacity search of a spec over one
 * variable) and `headroom sweeps [ID]` (list them, or print one), with a
 * flag set of their own (docs/cli.md, docs/sweeps.md). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"
#include "http.h"
#include "util.h"

static const char sweep_help[] =
    "usage: headroom sweep SPEC --variable PATH [--values V,V,... | --range FROM:TO:STEPS[:log]\n"
    "                      | --search FROM[:TO]] [--slo SLO]... [options]\n"
    "       headroom sweeps [ID] [--limit N] [--format table|json|csv]\n"
    "\n"
    "Runs SPEC (a run spec file, - for stdin) at several values of one numeric\n"
    "field, each value as ordinary runs in the history (labelled sweep=ID). With\n"
    "--values or --range every value is run; with --search the daemon finds the\n"
    "largest value within the SLOs: the two ends first, then values inside the\n"
    "bracket until it is narrower than the resolution (docs/sweeps.md).\n"
    "\n"
    "  --variable PATH      the field, e.g. load.rate or load.concurrency\n"
    "  --values V,V,...     the values to run\n"
    "  --range F:T:N[:log]  N values from F to T (evenly, or evenly in log scale)\n"
    "  --search F[:T]       search the largest value in [F, T] meeting every SLO;\n"
    "                       without T, double from F until a value fails; --slo\n"
    "                       with no --values, --range or --search searches from the\n"
    "                       spec's own value\n"
    "  --slo SLO            METRIC:STAT<=MAX, e.g. time_to_first_token:p99<=500\n"
    "                       (ms), or error_rate<=0.01; repeat for several\n"
    "  --resolution R       stop when the bracket is at most R wide (the variable's\n"
    "                       unit); --resolution-rel F: at most F of its lower end\n"
    "                       (default 0.05)\n"
    "  --max-runs N         runs a search may spend (default 16)\n"
    "  --repeats N          runs per value (values), or the most runs of one\n"
    "                       uncertain value (search, default 3)\n"
    "  --confidence C       confidence of each SLO judgement (default 0.95)\n"
    "  --name NAME          the sweep's name\n"
    "  --wait               follow the sweep to its end and print its curve\n"
    "  --poll-ms MS         how often --wait asks (default 1000)\n"
    "  --format F           table (default), json or csv (sweeps ID; sweep --wait)\n"
    "  --url URL            the daemon (default $HEADROOM_URL, else " HEADROOM_DEFAULT_URL ")\n"
    "\n"
    "exit codes: 0 queued, or (--wait) ended with an answer; 1 the sweep failed\n"
    "or was cancelled; 2 usage; 3 the daemon refused or could not be reached;\n"
    "4 a value was client_bound (the load generator was the limit: no capacity\n"
    "is reported); 130 interrupted.\n";

struct sargs {
	const char *url, *spec, *variable, *values, *range, *search, *resolution, *resolution_rel;
	const char *max_runs, *repeats, *confidence, *name, *poll_ms, *format, *limit;
	const char *slo[16];
	int nslo, wait, help, list;
	const char *pos;
};

#define usage(...) cli_usage_error("sweep", __VA_ARGS__)

static int parse(int argc, char **argv, struct sargs *a)
{
	static const struct {
		const char *name;
		size_t off;
	} opts[] = {
	    {"url", offsetof(struct sargs, url)},
	    {"variable", offsetof(struct sargs, variable)},
	    {"values", offsetof(struct sargs, values)},
	    {"range", offsetof(struct sargs, range)},
	    {"search", offsetof(struct sargs, search)},
	    {"resolution", offsetof(struct sargs, resolution)},
	    {"resolution-rel", offsetof(struct sargs, resolution_rel)},
	    {"max-runs", offsetof(struct sargs, max_runs)},
	    {"repeats", offsetof(struct sargs, repeats)},
	    {"confidence", offsetof(struct sargs, confidence)},
	    {"name", offsetof(struct sargs, name)},
	    {"poll-ms", offsetof(struct sargs, poll_ms)},
	    {"format", offsetof(struct sargs, format)},
	    {"limit", offsetof(struct sargs, limit)},
	};
	a->list = strcmp(argv[0], "sweeps") == 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			a->help = 1;
			continue;
		}
		if (strcmp(arg, "--wait") == 0) {
			a->wait = 1;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0 || !arg[2]) {
			if (a->pos)
				return usage("unexpected argument '%s'", arg);
			a->pos = arg;
			continue;
		}
		const char *name = arg + 2, *eq = strchr(name, '='), *val;
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return usage("--%.*s needs a value", (int)len, name);
			val = argv[++i];
		}
		if (len == 3 && strncmp(name, "slo", 3) == 0) {
			if (a->nslo == 16)
				return usage("at most 16 --slo");
			a->slo[a->nslo++] = val;
			continue;
		}
		size_t k = 0;
		while (k < HR_ARRAY_LEN(opts) &&
		       !(strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0))
			k++;
		if (k == HR_ARRAY_LEN(opts))
			return usage("unknown option --%.*s", (int)len, name);
		*(const char **)((char *)a + opts[k].off) = val;
	}
	return EXIT_OK;
}

static int number(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

static json_t *num_json(double v)
{
	return v == floor(v) && fabs(v) < 9e15 ? json_integer((json_int_t)v) : json_real(v);
}

/* "time_to_first_token:p99<=500" or "error_rate<=0.01" */
static json_t *parse_slo(const char *s)
{
	const char *le = strstr(s, "<=");
	double max;
	if (!le || number(le + 2, &max) < 0)
		return NULL;
	char metric[96];
	size_t mlen = (size_t)(le - s);
	if (mlen == 0 || mlen >= sizeof metric)
		return NULL;
	memcpy(metric, s, mlen);
	metric[mlen] = 0;
	char *colon = strchr(metric, ':');
	if (colon) {
		*colon = 0;
		return json_pack("{s:s, s:s, s:o}", "metric", metric, "stat", colon + 1, "max",
				 num_json(max));
	}
	return json_pack("{s:s, s:o}", "metric", metric, "max", num_json(max));
}

static json_t *read_spec(const char *path)
{
	json_error_t je;
	json_t *j = strcmp(path, "-") == 0 ? json_loadf(stdin, 0, &je) : json_load_file(path, 0, &je);
	if (!j)
		fprintf(stderr, "headroom: %s: not a JSON spec: %s (line %d)\n", path, je.text,
			je.line);
	return j;
}

/* The request body from the flags; NULL with a usage message printed. */
static json_t *build_body(const struct sargs *a, int *ex)
{
	*ex = EXIT_USAGE;
	if (!a->pos)
		return usage("'sweep' needs a SPEC file"), NULL;
	if (!a->variable)
		return usage("'sweep' needs --variable"), NULL;
	if (!!a->values + !!a->range + !!a->search > 1)
		return usage("give one of --values, --range or --search"), NULL;
	if (!a->values && !a->range && !a->search && !a->nslo)
		return usage("give --values, --range, or --search (or --slo alone: a search from "
			     "the spec's value)"),
		       NULL;
	/* the flags' shapes first: a bad flag is a usage error whatever SPEC is */
	if (a->range && strchr(a->range, ':') == strrchr(a->range, ':'))
		return usage("--range wants FROM:TO:STEPS[:log]"), NULL;
	if (a->search) {
		char *dup = xstrdup(a->search), *colon = strchr(dup, ':');
		double x;
		if (colon)
			*colon = '\0';
		int ok = number(dup, &x) == 0 && (!colon || number(colon + 1, &x) == 0);
		free(dup);
		if (!ok)
			return usage("--search wants FROM[:TO]"), NULL;
	}
	json_t *spec = read_spec(a->pos);
	if (!spec)
		return NULL;
	json_t *b = json_pack("{s:o, s:s}", "spec", spec, "variable", a->variable);
	if (a->name)
		json_object_set_new(b, "name", json_string(a->name));
	if (a->values) {
		json_t *arr = json_array();
		char *dup = xstrdup(a->values), *save = NULL;
		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			double v;
			if (number(t, &v) < 0) {
				free(dup);
				json_decref(arr);
				json_decref(b);
				return usage("--values: '%s' is not a number", t), NULL;
			}
			json_array_append_new(arr, num_json(v));
		}
		free(dup);
		json_object_set_new(b, "values", arr);
	}
	if (!a->values && !a->range && !a->search) /* --slo alone: a search, the daemon's bracket */
		json_object_set_new(b, "search", json_object());
	if (a->range || a->search) {
		const char *s = a->range ? a->range : a->search;
		char *dup = xstrdup(s), *save = NULL, *part[4] = {0};
		int n = 0;
		for (char *t = strtok_r(dup, ":", &save); t && n < 4; t = strtok_r(NULL, ":", &save))
			part[n++] = t;
		double from, to = 0, steps = 0;
		int ok = n >= 1 && number(part[0], &from) == 0 && (n < 2 || number(part[1], &to) == 0);
		if (a->range)
			ok = ok && n >= 3 && number(part[2], &steps) == 0 &&
			     (n == 3 || strcmp(part[3], "log") == 0 || strcmp(part[3], "linear") == 0);
		else
			ok = ok && n <= 2;
		if (!ok) {
			free(dup);
			json_decref(b);
			return usage(a->range ? "--range wants FROM:TO:STEPS[:log]"
					      : "--search wants FROM[:TO]"),
			       NULL;
		}
		json_t *o = json_pack("{s:o}", "from", num_json(from));
		if (n >= 2)
			json_object_set_new(o, "to", num_json(to));
		if (a->range) {
			json_object_set_new(o, "steps", num_json(steps));
			if (n == 4)
				json_object_set_new(o, "scale", json_string(part[3]));
		}
		free(dup);
		json_object_set_new(b, a->range ? "range" : "search", o);
	}
	json_t *search = json_object_get(b, "search");
	const char *nums[] = {a->resolution, a->resolution_rel, a->max_runs};
	const char *keys[] = {"resolution", "resolution_rel", "max_runs"};
	for (int i = 0; i < 3; i++) {
		double v;
		if (!nums[i])
			continue;
		if (!search || number(nums[i], &v) < 0) {
			json_decref(b);
			return usage(search ? "--%s wants a number" : "--%s applies to --search only",
				     i == 0 ? "resolution" : i == 1 ? "resolution-rel" : "max-runs"),
			       NULL;
		}
		json_object_set_new(search, keys[i], num_json(v));
	}
	double v;
	if (a->repeats) {
		if (number(a->repeats, &v) < 0) {
			json_decref(b);
			return usage("--repeats wants a number"), NULL;
		}
		json_object_set_new(b, "repeats", num_json(v));
	}
	if (a->confidence) {
		if (number(a->confidence, &v) < 0) {
			json_decref(b);
			return usage("--confidence wants a number"), NULL;
		}
		json_object_set_new(b, "confidence", json_real(v));
	}
	if (a->nslo) {
		json_t *arr = json_array();
		for (int i = 0; i < a->nslo; i++) {
			json_t *o = parse_slo(a->slo[i]);
			if (!o) {
				json_decref(arr);
				json_decref(b);
				return usage("--slo wants METRIC:STAT<=MAX or error_rate<=MAX, not '%s'",
					     a->slo[i]),
				       NULL;
			}
			json_array_append_new(arr, o);
		}
		json_object_set_new(b, "slo", arr);
	}
	*ex = EXIT_OK;
	return b;
}

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "-";
}

/* v with prec digits (g: significant, else after the point) and a suffix */
static void num_cell(char *buf, size_t n, json_t *v, char kind, int prec, const char *suffix)
{
	if (!json_is_number(v))
		snprintf(buf, n, "-");
	else if (kind == 'g')
		snprintf(buf, n, "%.*g%s", prec, json_number_value(v), suffix);
	else
		snprintf(buf, n, "%.*f%s", prec, json_number_value(v), suffix);
}

/* The curve as a table, then the answer. */
static void print_sweep(json_t *sw)
{
	json_t *params = json_object_get(sw, "params");
	printf("sweep %lld%s%s: %s over %s, %lld run(s)\n",
	       (long long)json_integer_value(json_object_get(sw, "id")),
	       *str(sw, "name") != '-' && *str(sw, "name") ? " " : "",
	       *str(sw, "name") != '-' ? str(sw, "name") : "", str(sw, "state"),
	       str(params, "variable"), (long long)json_integer_value(json_object_get(sw, "runs_spent")));
	printf("%12s  %-12s %-6s %-13s %10s %10s %10s %10s %10s %10s\n", "VALUE", "OUTCOME", "RUNS",
	       "CLIENT", "REQ/S", "TOK/S", "TTFT P50", "TTFT P99", "ITL P99", "ERRORS");
	size_t i;
	json_t *st;
	json_array_foreach(json_object_get(sw, "steps"), i, st) {
		json_t *runs = json_object_get(st, "runs");
		json_t *last = json_array_get(runs, json_array_size(runs) - 1);
		json_t *f = json_object_get(last, "figures");
		char val[32], rq[32], tk[32], t50[32], t99[32], i99[32], er[32], ids[64] = "";
		num_cell(val, sizeof val, json_object_get(st, "value"), 'g', 6, "");
		num_cell(rq, sizeof rq, json_object_get(f, "request_throughput"), 'f', 1, "");
		num_cell(tk, sizeof tk, json_object_get(f, "output_token_throughput"), 'f', 0, "");
		num_cell(t50, sizeof t50, json_object_get(json_object_get(f, "time_to_first_token"), "p50"),
			 'f', 1, " ms");
		num_cell(t99, sizeof t99, json_object_get(json_object_get(f, "time_to_first_token"), "p99"),
			 'f', 1, " ms");
		num_cell(i99, sizeof i99, json_object_get(json_object_get(f, "inter_token_latency"), "p99"),
			 'f', 1, " ms");
		json_t *erv = json_object_get(f, "error_rate");
		if (json_is_number(erv))
			snprintf(er, sizeof er, "%.2f%%", json_number_value(erv) * 100);
		else
			snprintf(er, sizeof er, "-");
		size_t k;
		json_t *r;
		json_array_foreach(runs, k, r) {
			size_t l = strlen(ids);
			snprintf(ids + l, sizeof ids - l, "%s%lld", k ? "," : "",
				 (long long)json_integer_value(json_object_get(r, "id")));
		}
		printf("%12s  %-12s %-6s %-13s %10s %10s %10s %10s %10s %10s\n", val,
		       str(st, "outcome"), ids, str(last, "verdict"), rq, tk, t50, t99, i99, er);
		json_t *o;
		json_array_foreach(json_object_get(st, "slo"), k, o) {
			char est[32];
			num_cell(est, sizeof est, json_object_get(o, "estimate"), 'g', 4, "");
			printf("%12s    slo %s %s <= %g: %s (%lld of %lld over; estimate %s)\n", "",
			       str(o, "metric"), str(o, "stat"),
			       json_number_value(json_object_get(o, "max")), str(o, "outcome"),
			       (long long)json_integer_value(json_object_get(o, "over")),
			       (long long)json_integer_value(json_object_get(o, "n")), est);
		}
	}
	json_t *res = json_object_get(sw, "result");
	if (json_is_object(res) && json_object_get(res, "stop_reason")) {
		json_t *cap = json_object_get(res, "capacity");
		json_t *pass = json_object_get(res, "pass"), *fail = json_object_get(res, "fail");
		json_t *conf = json_object_get(res, "confidence");
		if (json_is_number(cap))
			printf("capacity: %s = %g (%s)\n", str(params, "variable"),
			       json_number_value(cap), str(res, "stop_reason"));
		else
			printf("capacity: none in the range (%s)\n", str(res, "stop_reason"));
		for (int k = 0; k < 2; k++) {
			json_t *b = k ? fail : pass;
			if (!json_is_object(b))
				continue;
			char *ids = json_dumps(json_object_get(b, "runs"), JSON_COMPACT);
			printf("  %s at %g (runs %s)\n", k ? "does not pass" : "passes",
			       json_number_value(json_object_get(b, "value")), ids ? ids : "[]");
			free(ids);
		}
		printf("  confidence: %.4g per SLO, at least %.4g jointly; %lld run(s)\n",
		       json_number_value(json_object_get(conf, "per_claim")),
		       json_number_value(json_object_get(conf, "joint")),
		       (long long)json_integer_value(json_object_get(res, "runs_spent")));
	} else if (json_is_object(res) && json_is_number(json_object_get(res, "capacity"))) {
		printf("largest value meeting every SLO: %g\n",
		       json_number_value(json_object_get(res, "capacity")));
	}
	if (json_is_string(json_object_get(sw, "error")))
		printf("%s: %s\n", str(sw, "state"), str(sw, "error"));
}

static int exit_of(json_t *sw)
{
	const char *st = str(sw, "state");
	if (strcmp(st, "succeeded") == 0)
		return EXIT_OK;
	if (strcmp(st, "client_bound") == 0)
		return EXIT_CLIENT_BOUND;
	return EXIT_RUN_FAILED;
}

static int output(struct http_client *c, long long id, json_t *sw, const char *format)
{
	if (format && strcmp(format, "json") == 0) {
		char *t = json_dumps(sw, JSON_INDENT(2) | JSON_SORT_KEYS);
		puts(t ? t : "{}");
		free(t);
		return EXIT_OK;
	}
	if (format && strcmp(format, "csv") == 0) {
		char path[64];
		snprintf(path, sizeof path, "/sweeps/%lld?format=csv", id);
		struct http_resp r;
		int ex;
		json_t *j = cli_call_resp(c, CLI_GET, path, NULL, 0, &r, &ex);
		json_decref(j);
		if (r.status == 200)
			fwrite(r.body.data ? r.body.data : "", 1, r.body.len, stdout);
		http_resp_release(&r);
		return r.status == 200 ? EXIT_OK : ex;
	}
	print_sweep(sw);
	return EXIT_OK;
}

int cmd_sweep(int argc, char **argv);
int cmd_sweep(int argc, char **argv)
{
	struct sargs a = {0};
	int ex = parse(argc, argv, &a);
	if (ex != EXIT_OK)
		return ex;
	if (a.help) {
		fputs(sweep_help, stdout);
		return EXIT_OK;
	}
	if (a.format && strcmp(a.format, "table") && strcmp(a.format, "json") &&
	    strcmp(a.format, "csv"))
		return usage("--format wants table, json or csv");
	long poll_ms = 1000, limit = 20;
	if (a.poll_ms && cli_parse_long(a.poll_ms, 50, 600000, &poll_ms) < 0)
		return usage("--poll-ms wants 50..600000");
	if (a.limit && cli_parse_long(a.limit, 1, 1000, &limit) < 0)
		return usage("--limit wants 1..1000");
	long long id = 0;
	json_t *body = NULL;
	if (a.list) {
		if (a.pos) {
			char *end;
			errno = 0;
			id = strtoll(a.pos, &end, 10);
			if (errno || *end || id < 1)
				return usage("invalid sweep id '%s'", a.pos);
		}
	} else {
		body = build_body(&a, &ex);
		if (!body)
			return ex;
	}
	struct cli_opts o = {0};
	const char *env = getenv("HEADROOM_URL");
	o.url = a.url ? a.url : env && *env ? env : HEADROOM_DEFAULT_URL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		json_decref(body);
		fputs("headroom: cannot initialise libcurl\n", stderr);
		return EXIT_DAEMON;
	}
	struct http_client c;
	ex = cli_client_open(&o, &c);
	if (ex != EXIT_OK) {
		json_decref(body);
		curl_global_cleanup();
		return ex;
	}
	json_t *sw = NULL;
	char path[64];
	if (a.list && !id) {
		snprintf(path, sizeof path, "/sweeps?limit=%ld", limit);
		json_t *l = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
		if (l && a.format && strcmp(a.format, "json") == 0) {
			char *t = json_dumps(l, JSON_INDENT(2));
			puts(t ? t : "{}");
			free(t);
		} else if (l) {
			printf("%6s  %-12s %-18s %6s  %-12s %s\n", "ID", "STATE", "VARIABLE", "RUNS",
			       "CAPACITY", "NAME");
			size_t i;
			json_t *s;
			json_array_foreach(json_object_get(l, "sweeps"), i, s) {
				char cap[32];
				num_cell(cap, sizeof cap,
					 json_object_get(json_object_get(s, "result"), "capacity"), 'g', 6, "");
				printf("%6lld  %-12s %-18s %6lld  %-12s %s\n",
				       (long long)json_integer_value(json_object_get(s, "id")),
				       str(s, "state"), str(s, "variable"),
				       (long long)json_integer_value(json_object_get(s, "runs_spent")), cap,
				       str(s, "name"));
			}
		}
		json_decref(l);
		http_client_release(&c);
		curl_global_cleanup();
		return ex;
	}
	if (a.list) {
		snprintf(path, sizeof path, "/sweeps/%lld", id);
		sw = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
	} else {
		char *text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		sw = cli_call(&c, CLI_POST, "/sweeps", text, strlen(text), &ex);
		free(text);
		if (sw) {
			id = json_integer_value(json_object_get(sw, "id"));
			printf("sweep %lld queued\n", id);
			fflush(stdout);
		}
	}
	if (sw && !a.list && a.wait) {
		cli_catch_signals();
		snprintf(path, sizeof path, "/sweeps/%lld", id);
		size_t shown = 0;
		for (;;) {
			/* a line per run as it ends */
			size_t ended = 0, i;
			json_t *st;
			json_array_foreach(json_object_get(sw, "steps"), i, st) {
				if (strcmp(str(st, "outcome"), "pending"))
					ended++;
			}
			if (ended > shown) {
				printf("  %zu value(s) judged, %lld run(s)\n", ended,
				       (long long)json_integer_value(json_object_get(sw, "runs_spent")));
				fflush(stdout);
				shown = ended;
			}
			if (strcmp(str(sw, "state"), "running") != 0)
				break;
			if (cli_stop) {
				ex = EXIT_INTERRUPTED;
				break;
			}
			usleep((useconds_t)poll_ms * 1000);
			json_decref(sw);
			sw = cli_call(&c, CLI_GET, path, NULL, 0, &ex);
			if (!sw)
				break;
		}
	}
	if (sw && ex == EXIT_OK && (a.list || a.wait)) {
		ex = output(&c, id, sw, a.format);
		if (ex == EXIT_OK && a.wait)
			ex = exit_of(sw);
	}
	json_decref(sw);
	http_client_release(&c);
	curl_global_cleanup();
	return ex;
}
