/* http.h - the CLI's tiny blocking HTTP client for the daemon's REST API.
 *
 * A thin wrapper over one libcurl easy handle (reused, so polling keeps
 * its connection). Paths are relative to <base>/api/v1. Bodies of ordinary
 * answers are collected into a dynbuf bounded by HTTP_MAX_BODY; exports
 * stream straight into a FILE instead, never holding the whole body.
 * The caller runs curl_global_init once before http_client_init.
 *
 * Return convention of the request functions: 0 when a complete HTTP
 * answer arrived (whatever its status: check resp->status), or a negative
 * enum http_fail with a message in err (HR_ERRLEN bytes).
 * Thread affinity: one client per thread.
 */
#ifndef HR_CLI_HTTP_H
#define HR_CLI_HTTP_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "dynbuf.h"

#define HTTP_MAX_BODY (64u << 20)       /* largest answer held in memory */
#define HTTP_MAX_ERROR_BODY (64u << 10) /* error body kept while streaming */

enum http_fail {
	HTTP_FAIL_TRANSPORT = -1, /* no complete answer: connect, timeout, reset, oversize */
	HTTP_FAIL_WRITE = -2,     /* streaming: writing to the output failed */
	HTTP_FAIL_STOPPED = -3,   /* the stop flag was raised */
	HTTP_FAIL_READ = -4,      /* upload: reading the file being sent failed */
};

struct http_client {
	void *curl;                        /* CURL *, owned */
	char *base;                        /* owned: "<url>/api/v1" */
	char *url;                         /* owned: the daemon URL as given, for messages */
	const volatile sig_atomic_t *stop; /* borrowed, may be NULL: nonzero aborts a transfer */
};

struct http_resp {
	long status;        /* HTTP status, 0 when none arrived */
	struct dynbuf body; /* the answer (or, for a streamed 2xx, nothing) */
};

/* The bearer token sent as "Authorization: Bearer" and the CA bundle an
 * https daemon is checked against, for every client (borrowed, may be
 * NULL): NULL takes $HEADROOM_TOKEN and $HEADROOM_CA_FILE. */
void http_set_credentials(const char *token, const char *cafile);

/* base_url: http:// or https:// URL of the daemon; a trailing '/' is
 * ignored. Returns 0, or -1 with a message in err. */
int http_client_init(struct http_client *c, const char *base_url, char *err);
void http_client_release(struct http_client *c);

void http_resp_init(struct http_resp *r);
void http_resp_release(struct http_resp *r);

/* GET <base><path> into r (reset first). */
int http_get(struct http_client *c, const char *path, struct http_resp *r, char *err);

/* POST len bytes of body (borrowed; a JSON document, or nothing when len is
 * 0) to <base><path>, answer into r. */
int http_post(struct http_client *c, const char *path, const void *body, size_t len,
              struct http_resp *r, char *err);

/* PATCH with a JSON body, as http_post. */
int http_patch(struct http_client *c, const char *path, const void *body, size_t len,
               struct http_resp *r, char *err);

/* POST size bytes read from in (borrowed; raw, application/octet-stream)
 * to <base><path>, answer into r. No overall time limit: it gives up when
 * less than a byte a second moves for HTTP_UPLOAD_STALL_S. */
int http_upload(struct http_client *c, const char *path, FILE *in, long long size,
                struct http_resp *r, char *err);

/* DELETE <base><path>, answer into r. */
int http_delete(struct http_client *c, const char *path, struct http_resp *r, char *err);

/* s percent-encoded (every byte but A-Z a-z 0-9 - . _ ~). Caller frees. */
char *http_escape(struct http_client *c, const char *s);

/* Appends a query parameter to q: '?' before the first, '&' after; key as
 * given (the caller escapes what needs it), then "=value" percent-encoded,
 * or nothing more when value is NULL. */
void http_query_add(struct dynbuf *q, struct http_client *c, const char *key,
                    const char *value);

/* GET <base><path>; a 2xx body is written to out (borrowed) as it arrives,
 * any other body goes to r->body, which is re-created with the bound
 * HTTP_MAX_ERROR_BODY (the excess is dropped, the transfer goes on). */
int http_get_stream(struct http_client *c, const char *path, FILE *out, struct http_resp *r,
                    char *err);

#endif
