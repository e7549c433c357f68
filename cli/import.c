/* import.c - `headroom import FILE`: another tool's result file (vLLM's
 * bench serve result JSON, AIPerf's profile_export_aiperf.json with its
 * profile_export.jsonl, a GuideLLM report in JSON or YAML) sent to POST
 * /api/v1/imports and kept as imported runs (docs/formats.md, "Imports";
 * docs/cli.md). */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "http.h"
#include "hrlimits.h"
#include "util.h"

int cmd_import(int argc, char **argv);

static const char import_help[] =
    "usage: headroom import FILE [--label K=V]... [--jsonl FILE] [--format F]\n"
    "                       [--name N] [--json]\n"
    "\n"
    "Reads another tool's result file into the run history as a read-only\n"
    "imported run (one per benchmark of a GuideLLM report), and prints each\n"
    "run's id. See docs/formats.md (\"Imports\").\n"
    "\n"
    "  FILE               vLLM's result JSON (benchmark_serving.py --save-result,\n"
    "                     `vllm bench serve`), with or without its per-request\n"
    "                     arrays, AIPerf's profile_export_aiperf.json, or\n"
    "                     GuideLLM's benchmarks report (benchmarks.json or\n"
    "                     benchmarks.yaml: one run per benchmark)\n"
    "  --jsonl FILE       AIPerf's per-request profile_export.jsonl, for its\n"
    "                     records (without it an AIPerf file is summary only)\n"
    "  --label K=V        a label for the run (repeatable)\n"
    "  --format F         auto (default: detected), vllm, aiperf or guidellm\n"
    "  --name N           the run's name (default: \"<producer> import\"; a report\n"
    "                     of several benchmarks names them \"N 1/3\", \"N 2/3\"...)\n"
    "  --json             print what the daemon answers: the imported run, or\n"
    "                     {\"runs\": [...]} for a GuideLLM report\n"
    "  --url URL          the daemon (default $HEADROOM_URL, else " HEADROOM_DEFAULT_URL ")\n"
    "\n"
    "exit codes: 0 imported; 2 usage error or unreadable file; 3 the daemon is\n"
    "unreachable or refused the file (its message names the field, and the\n"
    "line of a JSONL or YAML file); 130 interrupted.\n";

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage(const char *fmt, ...)
{
	va_list ap;
	fputs("headroom: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'headroom import --help'.\n", stderr);
	return EXIT_USAGE;
}

/* The whole of a regular file, as a JSON string (NULL, printed, when it
 * cannot be read, is too large or is not UTF-8 text). */
static json_t *read_text(const char *path)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "headroom: cannot read %s: %s\n", path,
			f ? "not a regular file" : strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	if ((unsigned long long)st.st_size > HR_MAX_IMPORT_BYTES) {
		fprintf(stderr, "headroom: %s is larger than an import may be (%u MiB)\n", path,
			HR_MAX_IMPORT_BYTES >> 20);
		fclose(f);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = xmalloc(n + 1);
	size_t got = fread(buf, 1, n, f);
	int bad = ferror(f) || got != n;
	fclose(f);
	if (bad) {
		fprintf(stderr, "headroom: cannot read %s\n", path);
		free(buf);
		return NULL;
	}
	json_t *s = json_stringn(buf, n);
	free(buf);
	if (!s)
		fprintf(stderr, "headroom: %s is not UTF-8 text\n", path);
	return s;
}

int cmd_import(int argc, char **argv)
{
	const char *file = NULL, *jsonl = NULL, *format = NULL, *name = NULL, *url = NULL;
	int json = 0;
	json_t *labels = json_object();
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			json_decref(labels);
			fputs(import_help, stdout);
			return EXIT_OK;
		}
		if (strcmp(s, "--json") == 0) {
			json = 1;
			continue;
		}
		if (strncmp(s, "--", 2) != 0 || !s[2]) {
			if (file) {
				json_decref(labels);
				return usage("unexpected argument '%s'", s);
			}
			file = s;
			continue;
		}
		static const char *const valued[] = {"--label", "--jsonl", "--format", "--name",
						     "--url"};
		const char *val = NULL;
		int which = -1;
		for (int k = 0; k < (int)HR_ARRAY_LEN(valued) && which < 0; k++) {
			size_t l = strlen(valued[k]);
			if (strcmp(s, valued[k]) == 0) {
				which = k;
				if (i + 1 >= argc) {
					json_decref(labels);
					return usage("option '%s' needs a value", s);
				}
				val = argv[++i];
			} else if (strncmp(s, valued[k], l) == 0 && s[l] == '=') {
				which = k;
				val = s + l + 1;
			}
		}
		if (which < 0) {
			json_decref(labels);
			return usage("unknown option '%s'", s);
		}
		if (which == 0) {
			const char *eq = strchr(val, '=');
			if (!eq || eq == val) {
				json_decref(labels);
				return usage("--label wants KEY=VALUE, not '%s'", val);
			}
			char *key = xstrndup(val, (size_t)(eq - val));
			json_object_set_new(labels, key, json_string(eq + 1));
			free(key);
		} else {
			const char **slot[] = {NULL, &jsonl, &format, &name, &url};
			*slot[which] = val;
		}
	}
	if (!file) {
		json_decref(labels);
		return usage("'import' needs a %s", "FILE");
	}
	json_t *text = read_text(file), *jtext = jsonl ? read_text(jsonl) : NULL;
	if (!text || (jsonl && !jtext)) {
		json_decref(text);
		json_decref(jtext);
		json_decref(labels);
		return EXIT_USAGE;
	}
	json_t *body = json_pack("{s:o, s:o}", "file", text, "labels", labels);
	if (jtext)
		json_object_set_new(body, "jsonl", jtext);
	if (format)
		json_object_set_new(body, "format", json_string(format));
	if (name)
		json_object_set_new(body, "name", json_string(name));
	char *doc = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (!doc) {
		fputs("headroom: cannot encode the import\n", stderr);
		return EXIT_USAGE;
	}
	const char *env = getenv("HEADROOM_URL");
	struct cli_opts o = {.url = url ? url : env && *env ? env : HEADROOM_DEFAULT_URL};
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(doc);
		fputs("headroom: cannot initialise libcurl\n", stderr);
		return EXIT_DAEMON;
	}
	struct http_client c;
	int ex = cli_client_open(&o, &c);
	if (ex == EXIT_OK) {
		cli_catch_signals();
		struct http_resp r;
		json_t *run = cli_call_resp(&c, CLI_POST, "/imports", doc, strlen(doc), &r, &ex);
		if (run && json) {
			fwrite(r.body.data, 1, r.body.len, stdout);
			fputc('\n', stdout);
		} else if (run) {
			/* one run, or a GuideLLM report's {"runs": [...]} */
			json_t *list = json_object_get(run, "runs");
			size_t n = json_is_array(list) ? json_array_size(list) : 1;
			for (size_t i = 0; i < n; i++) {
				json_t *one = json_is_array(list) ? json_array_get(list, i) : run;
				json_t *imp = json_object_get(one, "import");
				long long recs = json_integer_value(json_object_get(imp, "records"));
				const char *prod = json_string_value(json_object_get(imp, "producer"));
				const char *state = json_string_value(json_object_get(one, "state"));
				printf("imported run %lld (%s, %s; %s)\n",
				       (long long)json_integer_value(json_object_get(one, "id")),
				       prod ? prod : "?", state ? state : "?",
				       recs ? "per-request records" : "summary only");
			}
		}
		json_decref(run);
		http_resp_release(&r);
		http_client_release(&c);
	}
	curl_global_cleanup();
	free(doc);
	return ex;
}
