/* card.c - a run's credibility card: gathered at its start, completed at its
 * end, stored in run_cards and shown as one list of items (see card.h,
 * docs/card.md). */
#include "card.h"

#include <ctype.h>
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "dynbuf.h"
#include "log.h"
#include "prom.h"
#include "redact.h"
#include "util.h"

#define CARD_VERSION 1

/* --- the client host --------------------------------------------------------------- */

/* The value of the first line of a /proc file starting with key (up to its
 * colon), trimmed, into out; 0, or -1 when absent. */
static int proc_field(const char *path, const char *key, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512];
	size_t kl = strlen(key);
	int rc = -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, kl) != 0)
			continue;
		char *p = line + kl;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != ':')
			continue;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		size_t n = strcspn(p, "\r\n");
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		snprintf(out, cap, "%.*s", (int)n, p);
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

static json_t *client_host(void)
{
	json_t *o = json_object();
	char buf[256];
	if (proc_field("/proc/cpuinfo", "model name", buf, sizeof buf) == 0 ||
	    proc_field("/proc/cpuinfo", "Model", buf, sizeof buf) == 0 ||
	    proc_field("/proc/cpuinfo", "Hardware", buf, sizeof buf) == 0)
		json_object_set_new(o, "cpu", json_string(buf));
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n > 0)
		json_object_set_new(o, "cores", json_integer(n));
	if (proc_field("/proc/meminfo", "MemTotal", buf, sizeof buf) == 0) {
		long long kb = strtoll(buf, NULL, 10); /* "16314272 kB" */
		if (kb > 0)
			json_object_set_new(o, "memory_bytes", json_integer(kb * 1024));
	}
	struct utsname u;
	if (uname(&u) == 0) {
		snprintf(buf, sizeof buf, "%.60s %.120s %.60s", u.sysname, u.release, u.machine);
		json_object_set_new(o, "kernel", json_string(buf));
	}
	json_object_set_new(o, "headroom", json_pack("{s:s, s:s}", "version", HEADROOM_VERSION,
						     "build", HEADROOM_COMMIT));
	return o;
}

/* --- fetches from the target ------------------------------------------------------- */

struct fetch {
	struct dynbuf body;
	json_t *headers; /* identity headers: name (lower case) -> value */
	const struct netallow *allow;
	char host[256];
	char refused[200];
	char cerr[CURL_ERROR_SIZE];
};

/* Response headers that say what the server is: Server, X-Powered-By and
 * any *-Version; never one the redaction rules call a credential. */
static int identity_header(const char *name)
{
	size_t n = strlen(name);
	if (redact_header_name(name))
		return 0;
	return strcmp(name, "server") == 0 || strcmp(name, "x-powered-by") == 0 ||
	       (n > 8 && strcmp(name + n - 8, "-version") == 0);
}

static size_t on_header(char *p, size_t size, size_t nitems, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * nitems;
	const char *colon = memchr(p, ':', len);
	if (!colon || colon == p || (size_t)(colon - p) > 100 ||
	    json_object_size(f->headers) >= CARD_MAX_HEADERS)
		return len;
	char name[101];
	size_t nl = (size_t)(colon - p);
	for (size_t i = 0; i < nl; i++)
		name[i] = (char)tolower((unsigned char)p[i]);
	name[nl] = '\0';
	if (!identity_header(name))
		return len;
	const char *v = colon + 1;
	size_t vl = len - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	if (vl > CARD_MAX_VALUE_LEN)
		vl = CARD_MAX_VALUE_LEN;
	char val[CARD_MAX_VALUE_LEN + 1];
	size_t k = 0;
	for (size_t i = 0; i < vl; i++) /* printable ASCII only */
		val[k++] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
	val[k] = '\0';
	json_object_set_new(f->headers, name, json_string(val));
	return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct dynbuf *b = ud;
	return dynbuf_add(b, p, size * n) < 0 ? 0 : size * n;
}

/* The allow-list decides, on the resolved address, as for the scraper. */
static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct fetch *f = ud;
	char why[sizeof f->refused];
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	if (f->allow && !netallow_check(f->allow, &a->addr, f->host[0] ? f->host : NULL, why,
					sizeof why)) {
		if (!f->refused[0])
			memcpy(f->refused, why, sizeof why);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype, a->protocol);
}

/* GET url into f (body bounded by max). headers: extra request headers
 * (may be NULL). Returns 0 on a 200 answer, else -1 with why. */
static int fetch_get(struct fetch *f, const char *url, size_t max, struct curl_slist *headers,
		     char *why, size_t why_len)
{
	dynbuf_init(&f->body, max);
	f->headers = json_object();
	CURL *e = curl_easy_init();
	if (!e)
		xalloc_die();
	CURLU *u = curl_url();
	char *host = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host)
		snprintf(f->host, sizeof f->host, "%s", host);
	curl_free(host);
	curl_url_cleanup(u);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, f);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &f->body);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->cerr);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, CARD_FETCH_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CARD_FETCH_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_USERAGENT, "headroomd/" HEADROOM_VERSION " card");
	if (headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	CURLcode rc = curl_easy_perform(e);
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	if (rc != CURLE_OK && f->refused[0]) {
		snprintf(why, why_len, "address not allowed: %.150s", f->refused);
		return -1;
	}
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%.200s", f->cerr[0] ? f->cerr : curl_easy_strerror(rc));
		return -1;
	}
	if (status != 200) {
		snprintf(why, why_len, "HTTP %ld", status);
		return -1;
	}
	return 0;
}

static void fetch_release(struct fetch *f)
{
	dynbuf_release(&f->body);
	json_decref(f->headers);
	f->headers = NULL;
}

/* url without its trailing slashes, then suffix (a new string). */
static char *url_join(const char *base, const char *suffix)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	if (strcmp(suffix, "/v1/models") == 0 && n >= 3 && strncmp(base + n - 3, "/v1", 3) == 0)
		suffix = "/models"; /* a base URL that already ends in /v1 */
	return xasprintf("%.*s%s", (int)n, base, suffix);
}

/* Endpoints whose servers list their models at GET /v1/models as
 * {"data": [{"id": ...}]}: OpenAI's API and its compatible servers (vLLM,
 * SGLang, TensorRT-LLM, NIM's LLM containers), and Anthropic's. */
static int openai_style(int ep)
{
	switch (ep) {
	case SPEC_EP_CHAT:
	case SPEC_EP_COMPLETIONS:
	case SPEC_EP_EMBEDDINGS:
	case SPEC_EP_RESPONSES:
	case SPEC_EP_MESSAGES:
	case SPEC_EP_CHAT_EMBEDDINGS:
	case SPEC_EP_AUDIO_TRANSCRIPTION:
	case SPEC_EP_IMAGE_GENERATION:
	case SPEC_EP_IMAGE_EDIT:
		return 1;
	default:
		return 0;
	}
}

/* The model ids of an OpenAI /v1/models answer (bounded), or NULL. */
static json_t *model_ids(const struct dynbuf *b, int *truncated)
{
	json_error_t je;
	json_t *doc = b->data ? json_loadb(b->data, b->len, 0, &je) : NULL;
	json_t *data = json_object_get(doc, "data");
	if (!json_is_array(data)) {
		json_decref(doc);
		return NULL;
	}
	json_t *ids = json_array();
	size_t i;
	json_t *m;
	json_array_foreach(data, i, m) {
		const char *id = json_string_value(json_object_get(m, "id"));
		if (!id)
			continue;
		if (json_array_size(ids) >= CARD_MAX_MODELS) {
			*truncated = 1;
			break;
		}
		char v[CARD_MAX_VALUE_LEN + 1];
		snprintf(v, sizeof v, "%s", id);
		json_array_append_new(ids, json_string(v));
	}
	json_decref(doc);
	return ids;
}

/* The *_info series of a metrics page (build and model information, e.g.
 * vllm:cache_config_info, *_build_info): name -> {label: value}. */
static void prom_info(const struct dynbuf *b, json_t *out)
{
	struct prom_doc doc;
	if (prom_parse(b->data ? b->data : "", b->len, 0, &doc, NULL) < 0) {
		prom_doc_release(&doc);
		return;
	}
	for (size_t i = 0; i < doc.nfamilies; i++) {
		const struct prom_family *fam = &doc.families[i];
		size_t n = strlen(fam->name);
		if (n < 5 || strcmp(fam->name + n - 5, "_info") != 0 || !fam->nsamples)
			continue;
		if (json_object_size(out) >= CARD_MAX_INFO)
			break;
		const struct prom_sample *sm = &fam->samples[0];
		json_t *labels = json_object();
		for (size_t k = 0; k < sm->nlabels && k < PROM_MAX_LABELS; k++) {
			char v[CARD_MAX_VALUE_LEN + 1];
			snprintf(v, sizeof v, "%s", sm->labels[k].value);
			json_object_set_new(labels, sm->labels[k].name, json_string(v));
		}
		json_object_set_new(out, fam->name, labels);
	}
	prom_doc_release(&doc);
}

static json_t *server_identity(const struct spec *spec, const struct netallow *allow,
			       const char *key)
{
	json_t *o = json_object();
	const char *url = spec->target.url;
	char red[1024];
	if (redact_url(url, red, sizeof red) >= 0)
		json_object_set_new(o, "url", json_string(red));
	json_object_set_new(o, "endpoint", json_string(spec_endpoint_name(spec->target.endpoint)));
	if (spec->target.model)
		json_object_set_new(o, "requested_model", json_string(spec->target.model));
	char why[300];
	if (openai_style(spec->target.endpoint)) {
		struct curl_slist *h = NULL;
		const char *name;
		json_t *v;
		json_object_foreach(spec->target.headers, name, v) {
			if (!json_is_string(v))
				continue;
			char *line = xasprintf("%s: %s", name, json_string_value(v));
			h = curl_slist_append(h, line);
			free(line);
		}
		if (spec->target.endpoint == SPEC_EP_MESSAGES) { /* as the workers send it */
			int given = 0;
			json_object_foreach(spec->target.headers, name, v)
				given = given || strcasecmp(name, "anthropic-version") == 0;
			if (!given)
				h = curl_slist_append(h, "anthropic-version: 2023-06-01");
		}
		if (key) { /* the way the workers send it (spec.h, target.api_key_header) */
			const char *hn = spec->target.api_key_header;
			char *line = hn && strcmp(hn, "authorization") != 0
					     ? xasprintf("%s: %s", hn, key)
					     : xasprintf("Authorization: Bearer %s", key);
			h = curl_slist_append(h, line);
			explicit_bzero(line, strlen(line));
			free(line);
		}
		char *mu = url_join(url, "/v1/models");
		struct fetch f = {.allow = allow};
		if (fetch_get(&f, mu, CARD_MAX_MODELS_BYTES, h, why, sizeof why) == 0) {
			int trunc = 0;
			json_t *ids = model_ids(&f.body, &trunc);
			if (ids) {
				json_object_set_new(o, "models", ids);
				if (trunc)
					json_object_set_new(o, "models_truncated", json_true());
			} else {
				json_object_set_new(o, "models_error",
						    json_string("GET /v1/models: not an OpenAI "
								"model list"));
			}
		} else {
			char msg[400];
			snprintf(msg, sizeof msg, "GET /v1/models: %s", why);
			json_object_set_new(o, "models_error", json_string(msg));
		}
		if (f.headers && json_object_size(f.headers))
			json_object_set(o, "headers", f.headers);
		fetch_release(&f);
		free(mu);
		for (struct curl_slist *p = h; p; p = p->next)
			explicit_bzero(p->data, strlen(p->data));
		curl_slist_free_all(h);
	} else {
		json_object_set_new(o, "models_error",
				    json_string("the endpoint has no OpenAI model list"));
	}
	/* the *_info series of the pages the run scrapes */
	json_t *info = json_object();
	int pages = 0, got = 0;
	char first_err[300] = "";
	if (spec->telemetry.server_metrics || json_array_size(spec->telemetry.metrics_urls)) {
		char *urls[5];
		int nu = 0;
		if (spec->telemetry.server_metrics)
			urls[nu++] = url_join(url, "/metrics");
		size_t i;
		json_t *u;
		json_array_foreach(spec->telemetry.metrics_urls, i, u) {
			if (nu >= 5)
				break;
			urls[nu++] = xstrdup(json_string_value(u));
		}
		for (int k = 0; k < nu; k++) {
			struct fetch f = {.allow = allow};
			pages++;
			if (fetch_get(&f, urls[k], HR_MAX_SCRAPE_BYTES, NULL, why, sizeof why) == 0) {
				got++;
				prom_info(&f.body, info);
				if (!json_object_get(o, "headers") && json_object_size(f.headers))
					json_object_set(o, "headers", f.headers);
			} else if (!first_err[0]) {
				char r[200];
				if (redact_url(urls[k], r, sizeof r) < 0)
					snprintf(r, sizeof r, "a metrics page");
				snprintf(first_err, sizeof first_err, "%.150s: %.140s", r, why);
			}
			fetch_release(&f);
			free(urls[k]);
		}
	}
	json_object_set_new(o, "metrics_pages", json_integer(pages));
	json_object_set_new(o, "metrics_info", info);
	if (pages && !got)
		json_object_set_new(o, "metrics_error", json_string(first_err));
	return o;
}

/* --- credentials ------------------------------------------------------------------ */

/* Every string of the card: the key (when known) and anything shaped like
 * a bearer token go, URLs are redacted; a member whose name says it holds
 * a credential inside a headers object is dropped. */
static void scrub(json_t *v, const char *key, int headers)
{
	if (json_is_object(v)) {
		const char *name;
		json_t *m;
		void *tmp;
		json_object_foreach_safe(v, tmp, name, m) {
			if (headers && redact_header_name(name)) {
				json_object_del(v, name);
				continue;
			}
			if (json_is_string(m)) {
				const char *s = json_string_value(m);
				char out[1024];
				int bad = (key && *key && strstr(s, key)) ||
					  strncasecmp(s, "bearer ", 7) == 0 ||
					  strncasecmp(s, "basic ", 6) == 0;
				if (bad)
					json_object_set_new(v, name, json_string(REDACTED));
				else if (strstr(s, "://") && redact_url(s, out, sizeof out) != 0)
					json_object_set_new(v, name, json_string(
									     out[0] ? out : REDACTED));
			} else {
				scrub(m, key, strcmp(name, "headers") == 0);
			}
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *m = json_array_get(v, i);
			const char *s = json_string_value(m);
			if (s && ((key && *key && strstr(s, key)) ||
				  strncasecmp(s, "bearer ", 7) == 0))
				json_array_set_new(v, i, json_string(REDACTED));
			else
				scrub(m, key, 0);
		}
	}
}

/* --- storing ----------------------------------------------------------------------- */

struct store_args {
	int64_t run_id;
	char *text;
};

static int store_job(struct store_tx *tx, void *arg, char *err)
{
	struct store_args *a = arg;
	sqlite3_stmt *st = store_tx_stmt(tx, "INSERT INTO run_cards (run_id, card, updated_ms) "
					     "VALUES (?1, ?2, ?3) ON CONFLICT (run_id) DO UPDATE "
					     "SET card = ?2, updated_ms = ?3");
	sqlite3_bind_int64(st, 1, a->run_id);
	sqlite3_bind_text(st, 2, a->text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, wall_ns() / 1000000);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "card: %s", sqlite3_errmsg(tx->db));
	return 0;
}

static void card_store(struct store *s, int64_t id, json_t *card)
{
	struct store_args a = {id, json_dumps(card, JSON_COMPACT | JSON_REAL_PRECISION(17))};
	char err[HR_ERRLEN];
	if (!a.text || store_exec(s, store_job, &a, err) < 0)
		hlog(LOG_WARN, "card", "run %lld: cannot store the card: %s\n", (long long)id,
		     a.text ? err : "not serialisable");
	free(a.text);
}

/* --- the run's start and end ------------------------------------------------------- */

json_t *card_begin(struct store *s, int64_t run_id, json_t *spec_json, const struct spec *spec,
		   const struct netallow *allow, const char *key)
{
	json_t *card = json_object();
	json_object_set_new(card, "card_version", json_integer(CARD_VERSION));
	json_object_set_new(card, "gathered_ms", json_integer(wall_ns() / 1000000));
	json_object_set_new(card, "client", client_host());
	json_object_set_new(card, "server", server_identity(spec, allow, key));
	json_t *load = json_object_get(spec_json, "load");
	json_object_set_new(card, "load", load ? json_deep_copy(load) : json_null());
	json_t *wu = json_object_get(spec_json, "warmup");
	json_object_set_new(card, "warmup", wu ? json_deep_copy(wu) : json_null());
	json_t *classes = json_object_get(spec_json, "classes");
	if (json_is_array(classes)) { /* traffic classes: each class's load */
		json_t *cl = json_array();
		size_t i;
		json_t *c;
		json_array_foreach(classes, i, c) {
			json_t *name = json_object_get(c, "name");
			json_t *ld = json_object_get(c, "load");
			json_array_append_new(cl, json_pack("{s:O?, s:O?}", "name", name, "load",
							   ld));
		}
		json_object_set_new(card, "classes", cl);
	}
	scrub(card, key, 0);
	card_store(s, run_id, card);
	return card;
}

/* The names of the GPUs the run's telemetry found (NVML, DCGM, the
 * server's pages), each once with how many carried it. */
static json_t *telemetry_gpus(struct store *s, int64_t run_id)
{
	json_t *out = json_array();
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(name, ''), count(DISTINCT coalesce(uuid, gpu)) "
				   "FROM telemetry_gpus WHERE run_id = ? GROUP BY 1 ORDER BY 1",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		while (sqlite3_step(st) == SQLITE_ROW && json_array_size(out) < 16) {
			const char *n = (const char *)sqlite3_column_text(st, 0);
			json_array_append_new(out, json_pack("{s:s, s:i}", "name",
							     n && *n ? n : "unnamed GPU", "count",
							     sqlite3_column_int(st, 1)));
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return out;
}

static json_t *lengths(json_t *m)
{
	if (!json_is_object(m))
		return json_null();
	json_t *o = json_object();
	static const char *const keep[] = {"count", "avg", "std", "min", "p50", "p90", "p99", "max"};
	for (size_t i = 0; i < HR_ARRAY_LEN(keep); i++) {
		json_t *v = json_object_get(m, keep[i]);
		if (v)
			json_object_set(o, keep[i], v);
	}
	return o;
}

void card_end(struct store *s, int64_t run_id, json_t *card, json_t *summary)
{
	if (!card)
		return;
	json_t *metrics = json_object_get(summary, "metrics");
	json_object_set_new(card, "isl",
			    lengths(json_object_get(metrics, "input_sequence_length")));
	json_object_set_new(card, "osl",
			    lengths(json_object_get(metrics, "output_sequence_length")));
	/* traffic classes: each class's lengths as well */
	const char *cname;
	json_t *cs;
	json_t *per = json_object();
	json_object_foreach(json_object_get(summary, "classes"), cname, cs)
	{
		json_t *cm = json_object_get(cs, "metrics");
		json_object_set_new(
		    per, cname,
		    json_pack("{s:o, s:o}", "isl", lengths(json_object_get(cm, "input_sequence_length")),
			      "osl", lengths(json_object_get(cm, "output_sequence_length"))));
	}
	if (json_object_size(per))
		json_object_set_new(card, "class_lengths", per);
	else
		json_decref(per);
	json_t *client = json_object_get(summary, "client");
	if (json_is_object(client))
		json_object_set_new(card, "verdict",
				    json_pack("{s:O?, s:O?}", "verdict",
					      json_object_get(client, "verdict"), "reasons",
					      json_object_get(client, "reasons")));
	else
		json_object_set_new(card, "verdict", json_null());
	json_object_set_new(card, "gpus", telemetry_gpus(s, run_id));
	json_object_set_new(card, "ended_ms", json_integer(wall_ns() / 1000000));
	scrub(card, NULL, 0);
	card_store(s, run_id, card);
	json_decref(card);
}

/* --- reading and showing ----------------------------------------------------------- */

json_t *card_read(struct store *s, int64_t run_id)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	json_t *out = NULL;
	if (sqlite3_prepare_v2(db, "SELECT card FROM run_cards WHERE run_id = ?", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_int64(st, 1, run_id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *t = (const char *)sqlite3_column_text(st, 0);
			out = t ? json_loads(t, 0, NULL) : NULL;
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return out;
}

/* A member by dotted path ("server.headers.server"), or NULL. */
static json_t *at(json_t *o, const char *path)
{
	char seg[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		snprintf(seg, sizeof seg, "%.*s", (int)n, path);
		o = json_object_get(o, seg);
		path += n + (path[n] == '.');
	}
	return o;
}

static const char *label_of(json_t *labels, const char *name)
{
	const char *v = json_string_value(json_object_get(labels, name));
	return v && *v ? v : NULL;
}

/* Appends one item: value (taken; NULL or null: unknown), its text, its
 * source; unknown ones say how to fill them (a label of the item's key
 * first, then `more`). A label of the item's key fills a gap. */
static void item(json_t *items, json_t *labels, const char *key, const char *title,
		 json_t *value, const char *text, const char *source, const char *more)
{
	json_t *it = json_pack("{s:s, s:s}", "key", key, "title", title);
	const char *lab = label_of(labels, key);
	if ((!value || json_is_null(value)) && lab) {
		json_decref(value);
		value = json_string(lab);
		text = lab;
		char src[80];
		snprintf(src, sizeof src, "label %s", key);
		json_object_set_new(it, "source", json_string(src));
	} else if (value && !json_is_null(value)) {
		json_object_set_new(it, "source", json_string(source));
	}
	if (!value || json_is_null(value)) {
		json_decref(value);
		char fill[300];
		snprintf(fill, sizeof fill, "set label \"%s\"%s%s", key, more ? "; " : "",
			 more ? more : "");
		json_object_set_new(it, "value", json_null());
		json_object_set_new(it, "text", json_string("unknown"));
		json_object_set_new(it, "unknown", json_true());
		json_object_set_new(it, "fill", json_string(fill));
	} else {
		json_object_set_new(it, "value", value);
		json_object_set_new(it, "text", json_string(text ? text : ""));
		json_object_set_new(it, "unknown", json_false());
	}
	json_array_append_new(items, it);
}

/* A string member as an item value (or NULL). */
static json_t *str_at(json_t *o, const char *path, const char **text)
{
	json_t *v = at(o, path);
	if (!json_is_string(v) || !*json_string_value(v))
		return NULL;
	*text = json_string_value(v);
	return json_incref(v);
}

static double num(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "avg 16, p50 16, p90 16, p99 16 (min 16, max 16, 20 requests)" */
static void length_text(json_t *l, char *buf, size_t cap)
{
	snprintf(buf, cap, "avg %.4g, p50 %.4g, p90 %.4g, p99 %.4g (min %.4g, max %.4g, %lld "
			   "requests)",
		 num(json_object_get(l, "avg")), num(json_object_get(l, "p50")),
		 num(json_object_get(l, "p90")), num(json_object_get(l, "p99")),
		 num(json_object_get(l, "min")), num(json_object_get(l, "max")),
		 (long long)json_integer_value(json_object_get(l, "count")));
}

/* Appends each traffic class's lengths to buf: "; interactive avg 48, p99
 * 48; agents avg 2000, p99 2000". */
static void class_lengths(json_t *per, const char *which, char *buf, size_t cap)
{
	const char *name;
	json_t *v;
	json_object_foreach(per, name, v)
	{
		json_t *l = json_object_get(v, which);
		size_t n = strlen(buf);
		if (!json_is_object(l) || n + 1 >= cap)
			continue;
		snprintf(buf + n, cap - n, "; %s avg %.4g, p99 %.4g", name,
			 num(json_object_get(l, "avg")), num(json_object_get(l, "p99")));
	}
}

/* A spec load object in words: "concurrency 4, 20 requests". */
static void load_text(json_t *ld, char *buf, size_t cap)
{
	struct dynbuf b;
	dynbuf_init(&b, cap);
	const char *mode = json_string_value(json_object_get(ld, "mode"));
	dynbuf_printf(&b, "%s", mode ? mode : "load");
	if (json_is_number(json_object_get(ld, "concurrency")))
		dynbuf_printf(&b, " %g", num(json_object_get(ld, "concurrency")));
	if (json_is_number(json_object_get(ld, "rate")))
		dynbuf_printf(&b, " %g/s", num(json_object_get(ld, "rate")));
	const char *arr = json_string_value(json_object_get(ld, "arrival"));
	json_t *batch = json_object_get(ld, "batch"); /* load.batch: the law spaces batches */
	if (json_is_object(batch))
		dynbuf_printf(&b, " batches of %g every %g s (%s), jitter %g s",
			      num(json_object_get(batch, "size")),
			      num(json_object_get(batch, "interval_s")), arr ? arr : "constant",
			      num(json_object_get(batch, "jitter_s")));
	else if (arr)
		dynbuf_printf(&b, " %s arrivals", arr);
	if (num(json_object_get(ld, "max_concurrency")) > 0)
		dynbuf_printf(&b, ", at most %g in flight", num(json_object_get(ld, "max_concurrency")));
	if (num(json_object_get(ld, "ramp_s")) > 0)
		dynbuf_printf(&b, ", ramp %g s", num(json_object_get(ld, "ramp_s")));
	if (num(json_object_get(ld, "requests")) > 0)
		dynbuf_printf(&b, ", %g requests", num(json_object_get(ld, "requests")));
	if (num(json_object_get(ld, "duration_s")) > 0)
		dynbuf_printf(&b, ", %g s", num(json_object_get(ld, "duration_s")));
	snprintf(buf, cap, "%s", b.data ? b.data : "");
	dynbuf_release(&b);
}

json_t *card_view(json_t *c, json_t *labels)
{
	json_t *items = json_array();
	const char *t = NULL;
	char buf[600];
	int ended = c && json_object_get(c, "ended_ms") != NULL;
	const char *notrec = c ? NULL : "this run has no recorded card";
	json_t *v;
	/* the client host */
	v = str_at(c, "client.cpu", &t);
	item(items, labels, "client_cpu", "Client CPU", v, t,
	     "/proc/cpuinfo", notrec);
	v = at(c, "client.cores");
	if (json_is_integer(v))
		snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
	item(items, labels, "client_cores", "Client cores (online)",
	     json_is_integer(v) ? json_incref(v) : NULL, buf, "sysconf(_SC_NPROCESSORS_ONLN)",
	     notrec);
	v = at(c, "client.memory_bytes");
	if (json_is_integer(v))
		snprintf(buf, sizeof buf, "%.1f GiB", (double)json_integer_value(v) / 1073741824.0);
	item(items, labels, "client_memory", "Client memory",
	     json_is_integer(v) ? json_incref(v) : NULL, buf, "/proc/meminfo MemTotal", notrec);
	v = str_at(c, "client.kernel", &t);
	item(items, labels, "client_kernel", "Client kernel", v, t,
	     "uname", notrec);
	v = at(c, "client.headroom");
	if (json_is_object(v))
		snprintf(buf, sizeof buf, "headroom %s (%s)",
			 json_string_value(json_object_get(v, "version")) ?: "?",
			 json_string_value(json_object_get(v, "build")) ?: "?");
	item(items, labels, "headroom", "headroom version",
	     json_is_object(v) ? json_incref(v) : NULL, buf, "headroomd --version", notrec);
	/* the server */
	v = str_at(c, "server.url", &t);
	item(items, labels, "server_url", "Server URL", v, t, "spec",
	     notrec);
	json_t *sw = str_at(c, "server.headers.server", &t);
	const char *src = "Server header";
	if (!sw) {
		sw = str_at(c, "server.headers.x-powered-by", &t);
		src = "X-Powered-By header";
	}
	item(items, labels, "server", "Server software", sw, t, src,
	     "the server sent no Server or X-Powered-By header");
	/* a version: a *-version header, else a version label of a *_info series */
	json_t *ver = NULL;
	const char *vsrc = NULL;
	json_t *hdrs = at(c, "server.headers");
	const char *name;
	json_object_foreach(hdrs, name, v) {
		size_t n = strlen(name);
		if (n > 8 && strcmp(name + n - 8, "-version") == 0 && json_is_string(v)) {
			ver = json_incref(v);
			snprintf(buf, sizeof buf, "%s", json_string_value(v));
			vsrc = "response header";
			break;
		}
	}
	json_t *info = at(c, "server.metrics_info");
	json_t *lbls;
	if (!ver)
		json_object_foreach(info, name, lbls) {
			/* the client library's own (python_info) is not the server's */
			json_t *vv = json_object_get(lbls, "version");
			if (json_is_string(vv) && strncmp(name, "python_", 7) != 0) {
				ver = json_incref(vv);
				snprintf(buf, sizeof buf, "%s", json_string_value(vv));
				vsrc = "metrics *_info";
				break;
			}
		}
	const char *slash = t ? strchr(t, '/') : NULL;
	if (!ver && sw && slash && slash[1] && strcmp(src, "Server header") == 0) {
		/* "name/version" */
		snprintf(buf, sizeof buf, "%.*s", (int)strcspn(slash + 1, " "), slash + 1);
		ver = json_string(buf);
		vsrc = "Server header";
	}
	item(items, labels, "server_version", "Server version", ver, buf, vsrc,
	     "no *-version header or version label in the server's metrics");
	json_t *models = at(c, "server.models");
	if (json_array_size(models)) {
		struct dynbuf b;
		dynbuf_init(&b, sizeof buf - 1);
		size_t i;
		json_array_foreach(models, i, v) dynbuf_printf(&b, "%s%s", i ? ", " : "",
							       json_string_value(v));
		snprintf(buf, sizeof buf, "%s", b.data ? b.data : "");
		dynbuf_release(&b);
	}
	char mhint[400];
	snprintf(mhint, sizeof mhint, "%s%s%s%s",
		 json_string_value(at(c, "server.models_error")) ?: "no model list",
		 at(c, "server.requested_model") ? " (the spec asked for " : "",
		 json_string_value(at(c, "server.requested_model")) ?: "",
		 at(c, "server.requested_model") ? ")" : "");
	item(items, labels, "model", "Model(s) served",
	     json_array_size(models) ? json_incref(models) : NULL, buf, "GET /v1/models",
	     c ? mhint : notrec);
	/* precision: a dtype or quantization label of the server's *_info series */
	json_t *prec = NULL;
	json_object_foreach(info, name, lbls) {
		static const char *const keys[] = {"quantization", "dtype", "precision"};
		for (size_t k = 0; k < HR_ARRAY_LEN(keys) && !prec; k++) {
			json_t *pv = json_object_get(lbls, keys[k]);
			if (json_is_string(pv) && *json_string_value(pv) &&
			    strcmp(json_string_value(pv), "None") != 0) {
				prec = json_incref(pv);
				snprintf(buf, sizeof buf, "%s", json_string_value(pv));
			}
		}
		if (prec)
			break;
	}
	item(items, labels, "precision", "Precision", prec, buf, "metrics *_info",
	     "the server does not state it");
	/* GPUs: what telemetry found */
	json_t *gpus = at(c, "gpus");
	if (json_array_size(gpus)) {
		struct dynbuf b;
		dynbuf_init(&b, sizeof buf - 1);
		size_t i;
		json_array_foreach(gpus, i, v) dynbuf_printf(
			&b, "%s%lld x %s", i ? ", " : "",
			(long long)json_integer_value(json_object_get(v, "count")),
			json_string_value(json_object_get(v, "name")));
		snprintf(buf, sizeof buf, "%s", b.data ? b.data : "");
		dynbuf_release(&b);
	}
	item(items, labels, "gpu", "GPU(s)", json_array_size(gpus) ? json_incref(gpus) : NULL, buf,
	     "telemetry", "or sample the GPUs: telemetry.nvml on their host, telemetry.dcgm_urls");
	item(items, labels, "hardware", "Server hardware", NULL, NULL, NULL,
	     "the server host is not measured");
	if (json_object_size(info)) {
		struct dynbuf b;
		dynbuf_init(&b, sizeof buf - 1);
		int first = 1;
		json_object_foreach(info, name, v) {
			dynbuf_printf(&b, "%s%s", first ? "" : ", ", name);
			first = 0;
		}
		snprintf(buf, sizeof buf, "%s", b.data ? b.data : "");
		dynbuf_release(&b);
	}
	char ihint[400];
	snprintf(ihint, sizeof ihint, "%s",
		 json_string_value(at(c, "server.metrics_error"))
			 ?: (json_integer_value(at(c, "server.metrics_pages")) > 0
				     ? "the server's metrics have no *_info series"
				     : "scrape the server's /metrics: telemetry.server_metrics"));
	item(items, labels, "server_info", "Server build and model info",
	     json_object_size(info) ? json_incref(info) : NULL, buf, "metrics *_info",
	     c ? ihint : notrec);
	/* what was sent */
	const char *ended_hint = c ? (ended ? "the run has no summary" : "known when the run ends")
				   : notrec;
	json_t *l = at(c, "isl");
	if (json_is_object(l))
		length_text(l, buf, sizeof buf);
	class_lengths(at(c, "class_lengths"), "isl", buf, sizeof buf);
	item(items, labels, "isl", "Input lengths sent (tokens)",
	     json_is_object(l) ? json_incref(l) : NULL, buf, "summary", ended_hint);
	l = at(c, "osl");
	if (json_is_object(l))
		length_text(l, buf, sizeof buf);
	class_lengths(at(c, "class_lengths"), "osl", buf, sizeof buf);
	item(items, labels, "osl", "Output lengths received (tokens)",
	     json_is_object(l) ? json_incref(l) : NULL, buf, "summary", ended_hint);
	json_t *classes = at(c, "classes");
	json_t *ld = at(c, "load");
	if (json_array_size(classes)) {
		struct dynbuf b;
		dynbuf_init(&b, sizeof buf - 1);
		size_t i;
		json_array_foreach(classes, i, v) {
			char one[200];
			load_text(json_object_get(v, "load"), one, sizeof one);
			dynbuf_printf(&b, "%s%s: %s", i ? "; " : "",
				      json_string_value(json_object_get(v, "name")) ?: "?", one);
		}
		snprintf(buf, sizeof buf, "%s", b.data ? b.data : "");
		dynbuf_release(&b);
		item(items, labels, "load", "Arrivals and concurrency (per class)",
		     json_incref(classes), buf, "spec classes", notrec);
	} else {
		if (json_is_object(ld))
			load_text(ld, buf, sizeof buf);
		item(items, labels, "load", "Arrivals and concurrency",
		     json_is_object(ld) ? json_incref(ld) : NULL, buf, "spec load", notrec);
	}
	json_t *wu = at(c, "warmup");
	if (json_is_object(wu)) {
		snprintf(buf, sizeof buf, "%s", "warm-up");
		if (json_is_number(json_object_get(wu, "requests")))
			snprintf(buf, sizeof buf, "%g requests", num(json_object_get(wu, "requests")));
		else if (json_is_number(json_object_get(wu, "duration_s")))
			snprintf(buf, sizeof buf, "%g s", num(json_object_get(wu, "duration_s")));
	}
	item(items, labels, "warmup", "Warm-up",
	     json_is_object(wu) ? json_incref(wu) : (c ? json_string("none") : NULL),
	     json_is_object(wu) ? buf : "none", "spec warmup", notrec);
	json_t *vd = at(c, "verdict");
	const char *vs = json_string_value(json_object_get(vd, "verdict"));
	item(items, labels, "client_verdict", "Client verdict", vs ? json_incref(vd) : NULL, vs,
	     "docs/client.md", ended_hint);
	json_t *out = json_pack("{s:b, s:b, s:o}", "recorded", c != NULL, "complete", ended,
				"items", items);
	scrub(out, NULL, 0);
	return out;
}

void card_run_member(struct store *s, int64_t id, json_t *run)
{
	json_t *c = card_read(s, id);
	json_object_set_new(run, "card", card_view(c, json_object_get(run, "labels")));
	json_decref(c);
}
