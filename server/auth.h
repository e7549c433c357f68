/* auth.h - identities and roles (docs/security.md): API tokens stored
 * only as SHA-256 hashes, the roles read < submit < admin, the gate every
 * request passes before its body is read (Host, Origin, bearer token,
 * role, Content-Type), the audit log of writes, and who submitted and who
 * cancelled each run.
 *
 * Modes. A daemon on a loopback address whose store has never held a
 * token (and without --require-tokens) is open as before: every request is
 * "local" with every role. Once a token has been made (even if it was
 * revoked since: revoking a leaked token must never open the API), or
 * with --require-tokens, or on any address beyond loopback, every /api/v1
 * route but GET /healthz needs "Authorization: Bearer <token>".
 *
 * Threading: the token and audit functions may be called from any
 * thread (reads borrow a pooled reader, writes go through the store
 * thread); the gate runs on MHD's threads.
 */
#ifndef HR_AUTH_H
#define HR_AUTH_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

#include "store.h"

enum auth_role { AUTH_NONE = 0, AUTH_READ = 1, AUTH_SUBMIT = 2, AUTH_ADMIN = 3 };

#define AUTH_NAME_MAX 64     /* a token's name: 1..64 of [A-Za-z0-9._-], not all digits */
#define AUTH_TOKEN_LEN 46    /* "hr_" + 43 base64url characters (32 random bytes) */
#define AUTH_MAX_HOSTS 16    /* --allowed-host, at most */
#define AUTH_PATH_MAX 256    /* an audited path longer than this is cut */
#define AUTH_AUDIT_MAX 1000  /* GET /audit?limit, at most */

/* "read", "submit", "admin" ("none" for AUTH_NONE). */
/* A token's quotas (docs/security.md, "Quotas"); 0: no limit. */
struct auth_quota {
	double max_rate;         /* load.rate */
	long long max_concurrency; /* load.concurrency, load.max_concurrency */
	double max_duration_s;   /* load.duration_s (a run must be bounded by time) */
	long long max_requests;  /* load.requests (a run must be bounded by a count) */
	long long max_queued;    /* the token's runs queued at once */
	long long max_dataset_mb; /* one dataset upload */
};

/* Reads the quota members of obj (max_rate...; others ignored, each
 * optional, null for none) into q. Returns 0, or -1 with the member's name
 * in field and a message in err. */
int auth_quota_parse(json_t *obj, struct auth_quota *q, const char **field, char *err);
/* The quotas as an object (every member, null for none). */
json_t *auth_quota_json(const struct auth_quota *q);

const char *auth_role_name(int role);
/* The role named s, or -1. */
int auth_role_parse(const char *s);

/* --- tokens and the audit log in the store (also `headroomd token ...`) ---- */

/* Makes a token named name with role: its secret goes into token
 * (AUTH_TOKEN_LEN + 1 bytes), shown once; *out (may be NULL) the token's
 * object as listed. Returns 0; -400 for a bad name, -409 when the name is
 * taken (err says which); -1 on a store failure. */
int auth_token_create(struct store *s, const char *name, int role, const struct auth_quota *q,
		      char *token, json_t **out, char *err);
/* {"tokens": [{id, name, role, created_at, revoked_at, last_used_at}]}:
 * every token, oldest first, never a hash. */
int auth_token_list(struct store *s, json_t **out, char *err);
/* Revokes the token with this id (id > 0) or else this name. Returns 0,
 * -404 when there is none, -409 when it was already revoked, -1. */
int auth_token_revoke(struct store *s, int64_t id, const char *name, char *err);
/* {"entries": [{id, at, who, method, path, status, detail}], "next_before"}:
 * newest first, at most limit, ids below before (0: from the newest). */
int auth_audit_list(struct store *s, int limit, int64_t before, json_t **out, char *err);

/* Who asked to cancel run id (waits for the store; who submitted a run is
 * stored with it, history_create_runs). */
int auth_set_cancelled_by(struct store *s, int64_t id, const char *who);
/* Adds "submitted_by" and "cancelled_by" (string or null) to run, the
 * object of run id. */
void auth_run_members(struct store *s, int64_t id, json_t *run);

/* --- the gate -------------------------------------------------------------- */

struct auth_opts {
	int require_tokens;     /* --require-tokens */
	int insecure_plaintext; /* --insecure-plaintext: beyond loopback without TLS */
	const char *tls_cert, *tls_key; /* --tls-cert, --tls-key: PEM files */
	const char *allowed_hosts[AUTH_MAX_HOSTS]; /* --allowed-host */
	int n_allowed_hosts;
};

struct auth;

/* What the gate learnt about one request (kept for its whole life). */
struct auth_req {
	char who[AUTH_NAME_MAX + 1]; /* the token's name, "local", or "" */
	int role;                    /* the caller's role (AUTH_NONE: not known) */
	int audit;                   /* a write that was authenticated: logged when done */
	char method[16];
	char path[AUTH_PATH_MAX + 1];
	char detail[160];            /* set by a handler, may stay empty */
	struct auth_quota quota;     /* the token's quotas (none for "local") */
};

/* Checks the listen address before anything binds: beyond loopback needs
 * TLS (tls_cert and tls_key) unless insecure_plaintext. Returns 0, or -1
 * with err. *loopback says whether sa is a loopback address. */
int auth_check_listen(const struct sockaddr *sa, const struct auth_opts *o, int *loopback,
		      char *err);
/* Reads the TLS files (o->tls_cert, o->tls_key) into *cert and *key (NUL
 * terminated, caller frees). Returns 0, or -1 with err naming the file. */
int auth_read_tls(const struct auth_opts *o, char **cert, char **key, char *err);
/* The gate's state for a daemon bound to host (as given to --listen) and
 * port. Warnings (a wildcard address without --allowed-host, plaintext
 * beyond loopback) are written to stderr here. */
struct auth *auth_new(const struct auth_opts *o, const char *host, int port, int loopback,
		      int tls);
void auth_free(struct auth *g);

/* Runs on a request's first call, before its body is read. need is the
 * role its route needs (AUTH_NONE: none). Fills r. Returns 0 to go on,
 * or -1 when it queued the refusal (its result in *ret): 421 for a Host
 * that is not allowed, 403 for a write from a foreign Origin, 401 (with
 * WWW-Authenticate: Bearer) without a valid token when one is needed, 403
 * for a role too low, 415 for a body that is not application/json, 503
 * when no reader came free within reader_wait_ms. */
int auth_admit(struct auth *g, struct store *s, int reader_wait_ms, struct MHD_Connection *conn,
	       const char *method, const char *url, int need, int json_body, struct auth_req *r,
	       enum MHD_Result *ret);
/* Runs when the request is done: an audited request is logged with the
 * status it was answered (asynchronously through the store). */
void auth_done(struct store *s, struct MHD_Connection *conn, const struct auth_req *r);

/* --- the routes (api.c's table) --------------------------------------------- */

struct call;
enum MHD_Result auth_h_token_create(struct call *k);
enum MHD_Result auth_h_token_list(struct call *k);
enum MHD_Result auth_h_token_revoke(struct call *k);
enum MHD_Result auth_h_audit(struct call *k);

/* `headroomd token create|list|revoke ...` (argv after "token"): on the
 * data directory, with or without a daemon running. Returns the exit
 * status. */
int auth_token_command(int argc, char **argv);

#endif
