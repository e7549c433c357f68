/* http.c - blocking GET/POST/PATCH/DELETE to the daemon over one reused libcurl
 * easy handle: bounded in-memory answers, or a 2xx body streamed to a FILE;
 * uploads streamed from a FILE. */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "hrlimits.h"
#include "util.h"

#define HTTP_CONNECT_TIMEOUT_MS 10000L
#define HTTP_TIMEOUT_MS 120000L  /* whole exchange, in-memory answers */
#define HTTP_STREAM_STALL_S 120L /* streaming: abort after this long below 1 byte/s */
#define HTTP_UPLOAD_STALL_S 300L /* uploads: the same (the daemon parses at the end) */

/* --token / $HEADROOM_TOKEN and --cacert / $HEADROOM_CA_FILE (http.h) */
static const char *cred_token, *cred_cafile;

void http_set_credentials(const char *token, const char *cafile)
{
	cred_token = token;
	cred_cafile = cafile;
}

struct xfer {
	struct http_client *c;
	struct http_resp *r;
	FILE *out;       /* streaming only, borrowed */
	FILE *in;        /* uploads only, borrowed */
	int read_failed; /* uploads: reading in failed */
	int checked, ok; /* streaming: status looked at / it is 2xx */
	int overflow;    /* in-memory body passed its bound */
	int write_failed, write_errno;
};

int http_client_init(struct http_client *c, const char *base_url, char *err)
{
	memset(c, 0, sizeof(*c));
	size_t len = strlen(base_url);
	if (strncasecmp(base_url, "http://", 7) != 0 && strncasecmp(base_url, "https://", 8) != 0)
		return errf(err, "daemon URL must start with http:// or https://: %.200s",
		            base_url);
	if (len > HR_MAX_URL_LEN)
		return errf(err, "daemon URL is longer than %d bytes", HR_MAX_URL_LEN);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)base_url[i] <= 0x20 || base_url[i] == 0x7f)
			return errf(err, "daemon URL contains a space or control character");
	while (len > 0 && base_url[len - 1] == '/')
		len--;
	c->curl = curl_easy_init();
	if (!c->curl)
		return errf(err, "cannot initialise libcurl");
	c->url = xstrndup(base_url, len);
	c->base = xasprintf("%s/api/v1", c->url);
	return 0;
}

void http_client_release(struct http_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->url);
	memset(c, 0, sizeof(*c));
}

void http_resp_init(struct http_resp *r)
{
	r->status = 0;
	dynbuf_init(&r->body, HTTP_MAX_BODY);
}

void http_resp_release(struct http_resp *r)
{
	dynbuf_release(&r->body);
}

static struct curl_slist *hdr_add(struct curl_slist *l, const char *h)
{
	struct curl_slist *n = curl_slist_append(l, h);
	if (!n)
		xalloc_die();
	return n;
}

static size_t collect_cb(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (dynbuf_add(&x->r->body, p, len) < 0) {
		x->overflow = 1;
		return 0;
	}
	return len;
}

static size_t stream_cb(char *p, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	if (!x->checked) {
		long code = 0;
		curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &code);
		x->ok = code >= 200 && code < 300;
		x->checked = 1;
	}
	if (x->ok) {
		if (len && fwrite(p, 1, len, x->out) != len) {
			x->write_failed = 1;
			x->write_errno = errno;
			return 0;
		}
		return len;
	}
	/* error answer: keep its head for the message, drop the rest */
	size_t room = x->r->body.max - x->r->body.len;
	dynbuf_add(&x->r->body, p, len < room ? len : room);
	return len;
}

static size_t upload_cb(char *buf, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t got = fread(buf, 1, size * n, x->in);
	if (got == 0 && ferror(x->in)) {
		x->read_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	return got;
}

static int progress_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	struct xfer *x = ud;
	return x->c->stop && *x->c->stop ? 1 : 0;
}

/* Runs one exchange with the options set by the caller plus the common
 * ones (the answer goes to x->out when set, else into x->r->body); frees
 * hdrs; leaves the handle reset (its connection stays cached). */
static int perform(struct xfer *x, const char *path, struct curl_slist *hdrs, char *err)
{
	CURL *h = x->c->curl;
	char ebuf[CURL_ERROR_SIZE];
	ebuf[0] = '\0';
	char *url = xasprintf("%s%s", x->c->base, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, HTTP_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "headroom/" HEADROOM_VERSION);
	const char *tok = cred_token ? cred_token : getenv("HEADROOM_TOKEN");
	const char *ca = cred_cafile ? cred_cafile : getenv("HEADROOM_CA_FILE");
	if (tok && *tok) {
		char *h_auth = xasprintf("Authorization: Bearer %s", tok);
		hdrs = hdr_add(hdrs, h_auth);
		free(h_auth);
	}
	if (ca && *ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, x->out ? stream_cb : collect_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);

	x->r->status = 0;
	dynbuf_reset(&x->r->body);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_reset(h);
	curl_slist_free_all(hdrs);
	free(url);

	if (rc == CURLE_OK) {
		x->r->status = code;
		return 0;
	}
	if (x->write_failed) {
		errf(err, "cannot write the output: %s", strerror(x->write_errno));
		return HTTP_FAIL_WRITE;
	}
	if (x->read_failed) {
		errf(err, "cannot read the file being sent");
		return HTTP_FAIL_READ;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK && x->c->stop && *x->c->stop) {
		errf(err, "interrupted");
		return HTTP_FAIL_STOPPED;
	}
	if (x->overflow)
		return errf(err, "the daemon's answer is larger than %u MiB", HTTP_MAX_BODY >> 20);
	return errf(err, "daemon at %.200s: %s", x->c->url,
	            ebuf[0] ? ebuf : curl_easy_strerror(rc));
}

char *http_escape(struct http_client *c, const char *s)
{
	char *esc = curl_easy_escape(c->curl, s, 0);
	if (!esc)
		xalloc_die();
	char *out = xstrdup(esc);
	curl_free(esc);
	return out;
}

void http_query_add(struct dynbuf *q, struct http_client *c, const char *key, const char *value)
{
	dynbuf_printf(q, "%c%s", strchr(q->data ? q->data : "", '?') ? '&' : '?', key);
	if (value) {
		char *esc = http_escape(c, value);
		dynbuf_printf(q, "=%s", esc);
		free(esc);
	}
}

int http_get(struct http_client *c, const char *path, struct http_resp *r, char *err)
{
	struct xfer x = {.c = c, .r = r};
	struct curl_slist *hdrs = hdr_add(NULL, "Accept: application/json");
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS);
	return perform(&x, path, hdrs, err);
}

/* Sends len bytes of body (a JSON document, or nothing when len is 0) with
 * method: the common part of http_post and http_patch. */
static int send_body(struct http_client *c, const char *method, const char *path,
                     const void *body, size_t len, struct http_resp *r, char *err)
{
	struct xfer x = {.c = c, .r = r};
	struct curl_slist *hdrs = hdr_add(NULL, "Accept: application/json");
	hdrs = hdr_add(hdrs, len ? "Content-Type: application/json" : "Content-Type:");
	hdrs = hdr_add(hdrs, "Expect:");
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	if (strcmp(method, "POST") != 0)
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, len ? (const char *)body : "");
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS);
	return perform(&x, path, hdrs, err);
}

int http_post(struct http_client *c, const char *path, const void *body, size_t len,
              struct http_resp *r, char *err)
{
	return send_body(c, "POST", path, body, len, r, err);
}

int http_patch(struct http_client *c, const char *path, const void *body, size_t len,
               struct http_resp *r, char *err)
{
	return send_body(c, "PATCH", path, body, len, r, err);
}

int http_upload(struct http_client *c, const char *path, FILE *in, long long size,
                struct http_resp *r, char *err)
{
	struct xfer x = {.c = c, .r = r, .in = in};
	struct curl_slist *hdrs = hdr_add(NULL, "Accept: application/json");
	hdrs = hdr_add(hdrs, "Content-Type: application/octet-stream");
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
	curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, upload_cb);
	curl_easy_setopt(c->curl, CURLOPT_READDATA, &x);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, HTTP_UPLOAD_STALL_S);
	return perform(&x, path, hdrs, err);
}

int http_delete(struct http_client *c, const char *path, struct http_resp *r, char *err)
{
	struct xfer x = {.c = c, .r = r};
	struct curl_slist *hdrs = hdr_add(NULL, "Accept: application/json");
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS);
	return perform(&x, path, hdrs, err);
}

int http_get_stream(struct http_client *c, const char *path, FILE *out, struct http_resp *r,
                    char *err)
{
	struct xfer x = {.c = c, .r = r, .out = out};
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, HTTP_STREAM_STALL_S);
	dynbuf_release(&r->body);
	dynbuf_init(&r->body, HTTP_MAX_ERROR_BODY);
	return perform(&x, path, NULL, err);
}
