/* dataset.c - `headroom dataset`: upload a dataset file to the daemon
 * (streamed from disk, never held in memory, unless its entries name local
 * pictures or clips: then inlined first, inline.c), list the stored datasets,
 * show one with its statistics and a preview of its entries
 * (docs/datasets.md, docs/cli.md). Answers are hostile input, read with
 * type checks (view.h).
 *
 *   headroom dataset upload FILE --format F [--name N] [filters] [--json]
 *   headroom dataset list [--limit N] [--json]
 *   headroom dataset show ID [--entries N] [--json]
 *   headroom dataset delete ID
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "cli.h"
#include "dataset.h"
#include "dynbuf.h"
#include "http.h"
#include "hrlimits.h"
#include "table.h"
#include "util.h"
#include "view.h"

int cmd_dataset(int argc, char **argv);

static const char dataset_help[] =
    "usage: headroom dataset upload FILE --format F [--name N] [--json]\n"
    "                        [--min-prompt N] [--max-prompt N] [--min-reply N]\n"
    "                        [--max-reply N] [--unit chars|words]\n"
    "       headroom dataset list [--limit N] [--json]\n"
    "       headroom dataset show ID [--entries N] [--json]\n"
    "       headroom dataset delete ID\n"
    "\n"
    "Datasets of prompts, stored by the daemon once per content (SHA-256) and\n"
    "checked on upload: a malformed file is refused with the line and the field\n"
    "at fault. See docs/datasets.md.\n"
    "\n"
    "  upload FILE        send FILE (at most 256 MiB) and print the dataset's id;\n"
    "                     the same bytes sent again give the same dataset;\n"
    "                     pictures and clips its entries name by a local path\n"
    "                     are inlined (data: URLs, \"wav,BASE64\") first\n"
    "  --format F         single_turn, multi_turn, random_pool, mooncake_trace or\n"
    "                     sharegpt (required)\n"
    "  --name N           a name for it (default: the file's name)\n"
    "  --min-prompt N, --max-prompt N, --min-reply N, --max-reply N\n"
    "                     sharegpt: keep the pairs whose prompt and reply lengths\n"
    "                     are within these bounds\n"
    "  --unit chars|words how those lengths count (default chars: code points)\n"
    "  list               the stored datasets, newest first (--limit N: 1..1000)\n"
    "  show ID            one dataset and its statistics; --entries N also shows\n"
    "                     its first N entries (1..100)\n"
    "  delete ID          delete it (refused while a queued or running run uses\n"
    "                     it); its file goes unless another dataset reads it\n"
    "  --json             print the daemon's JSON instead\n"
    "  --url URL          the daemon (default $HEADROOM_URL, else " HEADROOM_DEFAULT_URL ")\n"
    "\n"
    "exit codes: 0 done; 2 usage error or unreadable file; 3 the daemon is\n"
    "unreachable or refused the dataset (its message is printed); 130\n"
    "interrupted.\n";

struct args {
	const char *cmd, *pos, *url, *format, *name, *unit;
	const char *filter[4]; /* min_prompt, max_prompt, min_reply, max_reply */
	long limit, entries;
	int json;
};

static const char *const filter_flags[4] = {"min-prompt", "max-prompt", "min-reply", "max-reply"};
static const char *const filter_params[4] = {"min_prompt", "max_prompt", "min_reply", "max_reply"};

#define usage(...) cli_usage_error("dataset", __VA_ARGS__)


/* Reads argv into a. Returns EXIT_OK, or EXIT_USAGE (printed); *help set
 * when help was asked for. */
static int parse(int argc, char **argv, struct args *a, int *help)
{
	static const char *const valued[] = {"url",       "format",    "name",       "unit",
	                                     "limit",     "entries",   "min-prompt", "max-prompt",
	                                     "min-reply", "max-reply", NULL};
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			*help = 1;
			return EXIT_OK;
		}
		if (strncmp(s, "--", 2) != 0 || s[2] == '\0') {
			if (!a->cmd)
				a->cmd = s;
			else if (!a->pos)
				a->pos = s;
			else
				return usage("unexpected argument '%s'", s);
			continue;
		}
		const char *key = s + 2, *eq = strchr(key, '='), *val = NULL;
		size_t klen = eq ? (size_t)(eq - key) : strlen(key);
		if (klen == 4 && strncmp(key, "json", 4) == 0 && !eq) {
			a->json = 1;
			continue;
		}
		int known = 0;
		for (const char *const *v = valued; *v && !known; v++)
			known = strlen(*v) == klen && strncmp(*v, key, klen) == 0;
		if (!known)
			return usage("unknown option '%s'", s);
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			return usage("option '%s' needs a value", s);
		}
		char name[16];
		snprintf(name, sizeof name, "%.*s", (int)klen, key);
		if (strcmp(name, "url") == 0) {
			a->url = val;
		} else if (strcmp(name, "format") == 0) {
			a->format = val;
		} else if (strcmp(name, "name") == 0) {
			a->name = val;
		} else if (strcmp(name, "unit") == 0) {
			a->unit = val;
		} else if (strcmp(name, "limit") == 0) {
			if (cli_parse_long(val, 1, HR_MAX_PAGE_LIMIT, &a->limit) < 0)
				return usage("--limit wants a number, 1..1000 (not '%s')", val);
		} else if (strcmp(name, "entries") == 0) {
			if (cli_parse_long(val, 1, HR_MAX_DATASET_PREVIEW, &a->entries) < 0)
				return usage("--entries wants a number, 1..100 (not '%s')", val);
		} else {
			for (int k = 0; k < 4; k++)
				if (strcmp(name, filter_flags[k]) == 0)
					a->filter[k] = val;
		}
	}
	return EXIT_OK;
}

/* --- answers ------------------------------------------------------------------------ */



/* GET path; the 2xx answer as an object (NULL with *ex set, printed). With
 * raw, a 2xx answer is also printed as it came. */
static json_t *get(struct http_client *c, const char *path, int raw, int *ex)
{
	char err[HR_ERRLEN];
	struct http_resp r;
	http_resp_init(&r);
	json_t *doc = NULL;
	int rc = http_get(c, path, &r, err);
	if (rc < 0) {
		fprintf(stderr, "error: %s\n", err);
		*ex = rc == HTTP_FAIL_STOPPED ? EXIT_INTERRUPTED : EXIT_DAEMON;
	} else if (r.status < 200 || r.status > 299) {
		*ex = cli_answer_failure(&r);
	} else if (!(doc = cli_answer_object(&r))) {
		*ex = EXIT_DAEMON;
	} else if (raw) {
		fwrite(r.body.data, 1, r.body.len, stdout);
		if (r.body.data[r.body.len - 1] != '\n')
			putchar('\n');
	}
	http_resp_release(&r);
	return doc;
}

static const char *fmt_size(char *buf, size_t n, double bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
	int u = 0;
	while (bytes >= 1024 && u < 3) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%.0f B", bytes);
	else
		snprintf(buf, n, "%.1f %s", bytes, units[u]);
	return buf;
}

static long long int_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* One line: "dataset 3: sharegpt, 1200 entries in 1200 sessions, 1.2 MiB, stored ...". */
static void summary_line(FILE *out, json_t *ds)
{
	char size[32], when[64];
	char *format = view_clean(view_str(ds, "format"));
	long long n = int_of(ds, "entries"), ns = int_of(ds, "sessions");
	fprintf(out, "dataset %lld: %s, %lld %s in %lld %s, %s", int_of(ds, "id"), format, n,
	        n == 1 ? "entry" : "entries", ns, ns == 1 ? "session" : "sessions",
	        fmt_size(size, sizeof size, (double)int_of(ds, "bytes")));
	free(format);
	view_fmt_time(when, sizeof when, view_str(ds, "created_at"));
	fprintf(out, ", stored %s\n", when);
}

/* --- upload ------------------------------------------------------------------------- */

/* A default name: the file's base name, when the daemon would take it. */
static const char *default_name(const char *file)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	size_t n = strlen(base);
	if (n < 1 || n > HR_MAX_NAME_LEN)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)base[i] < 0x20 || base[i] == 0x7f)
			return NULL;
	json_t *utf8 = json_string(base);
	json_decref(utf8);
	return utf8 ? base : NULL;
}

static int upload(struct http_client *c, const struct args *a)
{
	struct stat st;
	FILE *f = fopen(a->pos, "rb");
	if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "headroom: cannot read %s: %s\n", a->pos,
		        f ? "not a regular file" : strerror(errno));
		if (f)
			fclose(f);
		return EXIT_USAGE;
	}
	if ((unsigned long long)st.st_size > HR_MAX_DATASET_BYTES) {
		fprintf(stderr,
		        "headroom: %s is larger than the daemon's bound for a dataset (%u "
		        "MiB)\n",
		        a->pos, HR_MAX_DATASET_BYTES >> 20);
		fclose(f);
		return EXIT_USAGE;
	}
	/* local pictures and clips named by the entries go inlined: the file is
	 * read once for them, and the rewritten text is sent instead */
	struct dynbuf inl;
	dynbuf_init(&inl, HR_MAX_DATASET_BYTES);
	long long size = (long long)st.st_size;
	if (a->format && st.st_size > 0) {
		char ierr[HR_ERRLEN];
		/* mapped, not read into memory: the pages are the file's */
		char *text = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
		int k = text != MAP_FAILED ? dataset_inline_files(text, (size_t)st.st_size, a->pos,
		                                                  a->format, &inl, ierr)
		                           : (snprintf(ierr, sizeof ierr, "cannot read it: %s",
		                                       strerror(errno)),
		                              -1);
		if (text != MAP_FAILED)
			munmap(text, (size_t)st.st_size);
		if (k < 0) {
			fprintf(stderr, "headroom: %s: %s\n", a->pos, ierr);
			fclose(f);
			dynbuf_release(&inl);
			return EXIT_USAGE;
		}
		if (k > 0) {
			fclose(f);
			f = fmemopen(inl.data, inl.len, "rb");
			size = (long long)inl.len;
		}
		if (!f) {
			fprintf(stderr, "headroom: %s: %s\n", a->pos, strerror(errno));
			dynbuf_release(&inl);
			return EXIT_USAGE;
		}
	}
	struct dynbuf q;
	dynbuf_init(&q, 64 * 1024);
	http_query_add(&q, c, "format", a->format);
	const char *name = a->name ? a->name : default_name(a->pos);
	if (name)
		http_query_add(&q, c, "name", name);
	for (int k = 0; k < 4; k++)
		if (a->filter[k])
			http_query_add(&q, c, filter_params[k], a->filter[k]);
	if (a->unit)
		http_query_add(&q, c, "unit", a->unit);
	char *path = xasprintf("/datasets%s", q.data);
	dynbuf_release(&q);

	cli_catch_signals();
	char err[HR_ERRLEN];
	struct http_resp r;
	http_resp_init(&r);
	int rc = http_upload(c, path, f, size, &r, err);
	fclose(f);
	dynbuf_release(&inl);
	free(path);

	int ex = EXIT_OK;
	json_t *ds = NULL;
	if (rc == HTTP_FAIL_READ) {
		fprintf(stderr, "headroom: cannot read %s\n", a->pos);
		ex = EXIT_USAGE;
	} else if (rc < 0) {
		if (rc != HTTP_FAIL_STOPPED)
			fprintf(stderr, "error: %s\n", err);
		ex = rc == HTTP_FAIL_STOPPED ? EXIT_INTERRUPTED : EXIT_DAEMON;
	} else if (r.status != 200 && r.status != 201) {
		ex = cli_answer_failure(&r);
	} else if (!(ds = cli_answer_object(&r))) {
		ex = EXIT_DAEMON;
	} else if (a->json) {
		fwrite(r.body.data, 1, r.body.len, stdout);
		putchar('\n');
	} else {
		summary_line(stdout, ds);
		char *sha = view_clean(view_str(ds, "sha256"));
		printf("%s (sha256 %s)\n",
		       r.status == 201 ? "stored"
		                       : "already stored: the same bytes, format and options",
		       sha);
		free(sha);
	}
	json_decref(ds);
	http_resp_release(&r);
	return ex;
}

/* --- delete ------------------------------------------------------------------------ */

static int delete(struct http_client *c, long long id)
{
	char path[96], err[HR_ERRLEN];
	snprintf(path, sizeof path, "/datasets/%lld", id);
	struct http_resp r;
	http_resp_init(&r);
	int ex = EXIT_OK;
	int rc = http_delete(c, path, &r, err);
	if (rc < 0) {
		fprintf(stderr, "error: %s\n", err);
		ex = rc == HTTP_FAIL_STOPPED ? EXIT_INTERRUPTED : EXIT_DAEMON;
	} else if (r.status != 204) {
		ex = cli_answer_failure(&r);
	} else {
		printf("dataset %lld deleted\n", id);
	}
	http_resp_release(&r);
	return ex;
}

/* --- list and show ------------------------------------------------------------------ */

static int list(struct http_client *c, const struct args *a)
{
	char path[64];
	snprintf(path, sizeof path, "/datasets?limit=%ld", a->limit ? a->limit : 50L);
	int ex = EXIT_OK;
	json_t *ans = get(c, path, a->json, &ex);
	if (!ans || a->json) {
		json_decref(ans);
		return ex;
	}
	json_t *items = json_object_get(ans, "datasets");
	if (!json_is_array(items)) {
		fprintf(stderr, "error: malformed answer from the daemon: no datasets array\n");
		json_decref(ans);
		return EXIT_DAEMON;
	}
	static const char *const titles[] = {"ID",   "FORMAT",  "ENTRIES", "SESSIONS",
	                                     "SIZE", "CREATED", "NAME"};
	struct table *t = table_new(7);
	for (size_t k = 0; k < 7; k++)
		table_column(t, k, titles[k],
		             k == 0 || (k >= 2 && k <= 4) ? TABLE_RIGHT : TABLE_LEFT);
	size_t i;
	json_t *ds;
	json_array_foreach(items, i, ds)
	{
		char id[32], fmt[64], n[32], s[32], size[32] = "-", when[64],
		                                    name[HR_MAX_NAME_LEN + 8];
		view_scalar(id, sizeof id, json_object_get(ds, "id"));
		view_scalar(fmt, sizeof fmt, json_object_get(ds, "format"));
		view_scalar(n, sizeof n, json_object_get(ds, "entries"));
		view_scalar(s, sizeof s, json_object_get(ds, "sessions"));
		if (int_of(ds, "bytes") >= 0)
			fmt_size(size, sizeof size, (double)int_of(ds, "bytes"));
		view_fmt_time(when, sizeof when, view_str(ds, "created_at"));
		view_scalar(name, sizeof name, json_object_get(ds, "name"));
		const char *cells[7] = {id, fmt, n, s, size, when, name};
		table_add_row(t, cells);
	}
	table_print(t, stdout, TABLE_PLAIN);
	table_free(t);
	json_decref(ans);
	return EXIT_OK;
}

static void stats_table(json_t *stats)
{
	static const char *const rows[][2] = {
	    {"prompt_chars", "prompt, characters"}, {"prompt_words", "prompt, words"},
	    {"input_length", "input, tokens"},      {"output_length", "output, tokens"},
	    {"reply_chars", "reply, characters"},   {"reply_words", "reply, words"},
	    {"turns", "turns per session"},         {"hash_ids", "hash_ids per entry"}};
	struct table *t = table_new(5);
	static const char *const titles[] = {"", "COUNT", "MIN", "AVG", "MAX"};
	for (size_t k = 0; k < 5; k++)
		table_column(t, k, titles[k], k ? TABLE_RIGHT : TABLE_LEFT);
	for (size_t r = 0; r < HR_ARRAY_LEN(rows); r++) {
		json_t *d = json_object_get(stats, rows[r][0]);
		if (!json_is_object(d))
			continue;
		char cells[4][VIEW_NUMLEN];
		static const char *const keys[] = {"count", "min", "avg", "max"};
		const char *row[5] = {rows[r][1]};
		for (int k = 0; k < 4; k++) {
			double v;
			row[k + 1] = "-";
			if (!view_num(d, keys[k], &v))
				continue;
			if (k == 2)
				snprintf(cells[k], sizeof cells[k], "%.1f", v);
			else
				snprintf(cells[k], sizeof cells[k], "%.0f", v);
			row[k + 1] = cells[k];
		}
		table_add_row(t, row);
	}
	table_print(t, stdout, TABLE_PLAIN);
	table_free(t);
}

/* The first line of s, at most max code points, as display text. */
static char *one_line(const char *s, size_t max)
{
	if (!s)
		return xstrdup("-");
	size_t i = 0, w = 0;
	while (s[i] && s[i] != '\n' && s[i] != '\r' && w < max) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		w++;
	}
	char *cut = xasprintf("%.*s%s", (int)i, s, s[i] ? "..." : "");
	char *clean = view_clean(cut);
	free(cut);
	return clean;
}

static int show(struct http_client *c, const struct args *a, long long id)
{
	char path[96];
	snprintf(path, sizeof path, "/datasets/%lld", id);
	int ex = EXIT_OK;
	json_t *ds = get(c, path, a->json, &ex);
	if (!ds)
		return ex;
	if (!a->json) {
		summary_line(stdout, ds);
		char *name = view_clean(view_str(ds, "name"));
		char *sha = view_clean(view_str(ds, "sha256"));
		printf("name: %s\nsha256: %s\n", name, sha);
		free(name);
		free(sha);
		json_t *opts = json_object_get(ds, "options");
		if (json_object_size(opts)) {
			char *o = json_dumps(opts, JSON_COMPACT);
			char *oc = view_clean(o);
			printf("options: %s\n", oc);
			free(oc);
			free(o);
		}
		json_t *st = json_object_get(ds, "stats");
		printf(
		    "skipped: %lld, filtered: %lld; with timestamp %lld, delay %lld, extra %lld, "
		    "system prompt %lld\n\n",
		    int_of(st, "skipped"), int_of(st, "filtered"), int_of(st, "with_timestamp"),
		    int_of(st, "with_delay"), int_of(st, "with_extra"), int_of(st, "with_system"));
		stats_table(st);
	}
	json_decref(ds);
	if (!a->entries)
		return EXIT_OK;
	snprintf(path, sizeof path, "/datasets/%lld/entries?limit=%ld", id, a->entries);
	json_t *ans = get(c, path, a->json, &ex);
	if (!ans || a->json) {
		json_decref(ans);
		return ex;
	}
	printf("\n");
	struct table *t = table_new(6);
	static const char *const titles[] = {"#", "LINE", "SESSION", "TURN", "OUT", "PROMPT"};
	for (size_t k = 0; k < 6; k++)
		table_column(t, k, titles[k], k < 5 ? TABLE_RIGHT : TABLE_LEFT);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(ans, "entries"), i, e)
	{
		char n[32], line[32], sess[32], turn[32], out[32], isl[48];
		view_scalar(n, sizeof n, json_object_get(e, "index"));
		view_scalar(line, sizeof line, json_object_get(e, "line"));
		view_scalar(sess, sizeof sess, json_object_get(e, "session"));
		view_scalar(turn, sizeof turn, json_object_get(e, "turn"));
		view_scalar(out, sizeof out, json_object_get(e, "output_length"));
		char *prompt;
		if (json_is_integer(json_object_get(e, "input_length"))) {
			snprintf(isl, sizeof isl, "(%lld tokens)", int_of(e, "input_length"));
			prompt = xstrdup(isl);
		} else {
			prompt = one_line(view_str(e, "text"), 60);
		}
		const char *cells[6] = {n, line, sess, turn, out, prompt};
		table_add_row(t, cells);
		free(prompt);
	}
	table_print(t, stdout, TABLE_PLAIN);
	table_free(t);
	json_decref(ans);
	return EXIT_OK;
}

int cmd_dataset(int argc, char **argv)
{
	struct args a = {0};
	int help = 0;
	int ex = parse(argc, argv, &a, &help);
	if (ex != EXIT_OK)
		return ex;
	if (help || !a.cmd) {
		fputs(dataset_help, help ? stdout : stderr);
		return help ? EXIT_OK : EXIT_USAGE;
	}
	int up = strcmp(a.cmd, "upload") == 0, ls = strcmp(a.cmd, "list") == 0,
	    sh = strcmp(a.cmd, "show") == 0, del = strcmp(a.cmd, "delete") == 0;
	if (!up && !ls && !sh && !del)
		return usage("unknown dataset command '%s' (upload, list, show, delete)", a.cmd);
	if (!up && (a.format || a.name || a.unit || a.filter[0] || a.filter[1] || a.filter[2] ||
	            a.filter[3]))
		return usage("--format, --name and the length filters apply to '%s' only",
		             "upload");
	if (!ls && a.limit)
		return usage("--limit applies to '%s' only", "list");
	if (!sh && a.entries)
		return usage("--entries applies to '%s' only", "show");
	long long id = 0;
	enum ds_format f;
	if (up) {
		if (!a.pos || !*a.pos)
			return usage("'dataset upload' needs a %s", "FILE");
		if (!a.format)
			return usage("'dataset upload' needs %s", "--format");
		if (ds_format_parse(a.format, &f) < 0)
			return usage("unknown format '%s' (single_turn, multi_turn, random_pool, "
			             "mooncake_trace, sharegpt)",
			             a.format);
		long v;
		for (int k = 0; k < 4; k++)
			if (a.filter[k] && cli_parse_long(a.filter[k], 1, HR_MAX_DATASET_TEXT, &v) < 0)
				return usage("--%s wants a length, 1..4194304", filter_flags[k]);
		if (a.unit && strcmp(a.unit, "chars") != 0 && strcmp(a.unit, "words") != 0)
			return usage("--unit wants chars or words, not '%s'", a.unit);
	} else if (sh || del) {
		char *end;
		errno = 0;
		id = a.pos && *a.pos && strspn(a.pos, "0123456789") == strlen(a.pos)
		         ? strtoll(a.pos, &end, 10)
		         : 0;
		if (errno || id < 1)
			return usage("invalid dataset id '%s'", a.pos ? a.pos : "");
	} else if (a.pos) {
		return usage("unexpected argument '%s'", a.pos);
	}
	const char *env = getenv("HEADROOM_URL");
	const char *url = a.url ? a.url : env && *env ? env : HEADROOM_DEFAULT_URL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fputs("headroom: cannot initialise libcurl\n", stderr);
		return EXIT_DAEMON;
	}
	struct http_client c;
	char err[HR_ERRLEN];
	if (http_client_init(&c, url, err) < 0) {
		fprintf(stderr, "headroom: %s\n", err);
		http_client_release(&c);
		curl_global_cleanup();
		return EXIT_USAGE;
	}
	c.stop = &cli_stop;
	ex = up ? upload(&c, &a) : ls ? list(&c, &a) : del ? delete(&c, id) : show(&c, &a, id);
	http_client_release(&c);
	curl_global_cleanup();
	return ex;
}
