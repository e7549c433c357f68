/* auth.c - identities and roles: API tokens (stored as SHA-256 hashes),
 * the request gate (Host, Origin, bearer token, role, Content-Type), the
 * audit log, the token and audit routes, and `headroomd token ...`
 * (auth.h, docs/security.md).
 *
 * Tokens are looked up by the SHA-256 of the presented token, never
 * compared as secrets: SQLite's index compares hashes, and what the
 * timing of that comparison could reveal is how many leading bytes of the
 * hash of the attacker's own guess match a stored hash, which brings no
 * one closer to a token whose hash that is (finding one is a preimage of
 * SHA-256). So no constant-time comparison is needed. The tokens have 256
 * random bits, so a fast unsalted hash is enough (nothing to brute-force).
 */
#include "auth.h"
#include "apiint.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "runs.h"
#include "util.h"

/* 401 with the challenge a client needs to know a token is wanted. */
#define reply_unauthorized(conn, ...)                                                      \
	reply_error_header(conn, 401, "unauthorized", MHD_HTTP_HEADER_WWW_AUTHENTICATE,     \
			   "Bearer realm=\"headroom\"", __VA_ARGS__)

#define TOUCH_EVERY_MS 60000 /* last_used_at is written at most once a minute per token */
#define TLS_FILE_MAX (1u << 20)

static int64_t now_ms(void)
{
	return wall_ns() / 1000000;
}

const char *auth_role_name(int role)
{
	switch (role) {
	case AUTH_READ:
		return "read";
	case AUTH_SUBMIT:
		return "submit";
	case AUTH_ADMIN:
		return "admin";
	default:
		return "none";
	}
}

int auth_role_parse(const char *s)
{
	for (int r = AUTH_READ; r <= AUTH_ADMIN; r++)
		if (s && strcmp(s, auth_role_name(r)) == 0)
			return r;
	return -1;
}

/* --- tokens ------------------------------------------------------------------------ */

static int name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n < 1 || n > AUTH_NAME_MAX)
		return 0;
	int digits = 1;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
		if (c < '0' || c > '9')
			digits = 0;
	}
	return !digits; /* an all-digit name would read as an id */
}

/* hex of SHA-256(s): out holds 65 bytes. */
static int sha256_hex(const char *s, size_t n, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (EVP_Digest(s, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
		return -1;
	for (unsigned i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* "hr_" + base64url (no padding) of 32 random bytes. */
static int new_token(char *out)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[33] = {0};
	size_t got = 0;
	while (got < 32) {
		ssize_t n = getrandom(r + got, 32 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	char *p = out;
	memcpy(p, "hr_", 3);
	p += 3;
	for (int i = 0; i < 32; i += 3) {
		unsigned v = (unsigned)r[i] << 16 | (unsigned)r[i + 1] << 8 |
			     (i + 2 < 32 ? r[i + 2] : 0);
		*p++ = b64[v >> 18 & 63];
		*p++ = b64[v >> 12 & 63];
		*p++ = b64[v >> 6 & 63];
		if (i + 2 < 32)
			*p++ = b64[v & 63];
	}
	*p = '\0';
	return (p - out) == AUTH_TOKEN_LEN ? 0 : -1;
}

#define QUOTA_COLS "max_rate, max_concurrency, max_duration_s, max_requests, max_queued, max_dataset_mb"
#define TOKEN_COLS "id, name, role, created_at, revoked_at, last_used_at, " QUOTA_COLS

static const char *const quota_names[] = {"max_rate",	  "max_concurrency", "max_duration_s",
					  "max_requests", "max_queued",	     "max_dataset_mb"};

/* The quotas from six columns of st starting at col. */
static void quota_cols(sqlite3_stmt *st, int col, struct auth_quota *q)
{
	memset(q, 0, sizeof *q);
	q->max_rate = sqlite3_column_double(st, col);
	q->max_concurrency = sqlite3_column_int64(st, col + 1);
	q->max_duration_s = sqlite3_column_double(st, col + 2);
	q->max_requests = sqlite3_column_int64(st, col + 3);
	q->max_queued = sqlite3_column_int64(st, col + 4);
	q->max_dataset_mb = sqlite3_column_int64(st, col + 5);
}

static json_t *num_or_null(double v, int integer)
{
	if (v <= 0)
		return json_null();
	return integer ? json_integer((json_int_t)v) : json_real(v);
}

json_t *auth_quota_json(const struct auth_quota *q)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "max_rate", num_or_null(q->max_rate, 0),
			 "max_concurrency", num_or_null((double)q->max_concurrency, 1),
			 "max_duration_s", num_or_null(q->max_duration_s, 0), "max_requests",
			 num_or_null((double)q->max_requests, 1), "max_queued",
			 num_or_null((double)q->max_queued, 1), "max_dataset_mb",
			 num_or_null((double)q->max_dataset_mb, 1));
}

int auth_quota_parse(json_t *obj, struct auth_quota *q, const char **field, char *err)
{
	static const double max[] = {HR_MAX_RATE,	HR_MAX_CONCURRENCY, HR_MAX_DURATION_S,
				     HR_MAX_REQUESTS,	1000000,	    1000000};
	memset(q, 0, sizeof *q);
	for (int i = 0; i < 6; i++) {
		json_t *v = json_object_get(obj, quota_names[i]);
		if (!v || json_is_null(v))
			continue;
		int integer = i != 0 && i != 2;
		double d = json_is_number(v) ? json_number_value(v) : -1;
		if (!json_is_number(v) || (integer && !json_is_integer(v)) || !(d > 0) ||
		    d > max[i]) {
			*field = quota_names[i];
			return errf(err, "'%s' must be %s above 0 and at most %g (or null: no limit)",
				    quota_names[i], integer ? "an integer" : "a number", max[i]);
		}
		switch (i) {
		case 0: q->max_rate = d; break;
		case 1: q->max_concurrency = (long long)d; break;
		case 2: q->max_duration_s = d; break;
		case 3: q->max_requests = (long long)d; break;
		case 4: q->max_queued = (long long)d; break;
		default: q->max_dataset_mb = (long long)d; break;
		}
	}
	return 0;
}

static json_t *token_row(sqlite3_stmt *st)
{
	struct auth_quota q;
	quota_cols(st, 6, &q);
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "id",
			 (json_int_t)sqlite3_column_int64(st, 0), "name", runs_col_text(st, 1), "role",
			 runs_col_text(st, 2), "created_at", runs_col_time(st, 3), "revoked_at",
			 runs_col_time(st, 4), "last_used_at", runs_col_time(st, 5), "quotas",
			 auth_quota_json(&q));
}

static void bind_pos(sqlite3_stmt *st, int i, double v, int integer)
{
	if (v <= 0)
		sqlite3_bind_null(st, i);
	else if (integer)
		sqlite3_bind_int64(st, i, (sqlite3_int64)v);
	else
		sqlite3_bind_double(st, i, v);
}

struct create_args {
	const struct auth_quota *q;
	const char *name, *role, *hash;
	int64_t id, at;
	int taken;
};

static int create_job(struct store_tx *tx, void *arg, char *err)
{
	struct create_args *a = arg;
	static const char q[] = "SELECT 1 FROM api_tokens WHERE name = ?";
	static const char ins[] = "INSERT INTO api_tokens (name, role, hash, created_at, "
				  QUOTA_COLS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	sqlite3_stmt *st = store_tx_stmt(tx, q);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW) {
		a->taken = 1;
		return 0;
	}
	st = store_tx_stmt(tx, ins);
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->role, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->hash, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->at);
	bind_pos(st, 5, a->q->max_rate, 0);
	bind_pos(st, 6, (double)a->q->max_concurrency, 1);
	bind_pos(st, 7, a->q->max_duration_s, 0);
	bind_pos(st, 8, (double)a->q->max_requests, 1);
	bind_pos(st, 9, (double)a->q->max_queued, 1);
	bind_pos(st, 10, (double)a->q->max_dataset_mb, 1);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	a->id = sqlite3_last_insert_rowid(tx->db);
	return 0;
}

int auth_token_create(struct store *s, const char *name, int role, const struct auth_quota *q,
		      char *token, json_t **out, char *err)
{
	static const struct auth_quota none;
	if (!q)
		q = &none;
	if (!name_ok(name)) {
		errf(err, "a token's name is 1 to %d characters of A-Z a-z 0-9 . _ -, not all "
			  "digits",
		     AUTH_NAME_MAX);
		return -400;
	}
	if (role < AUTH_READ || role > AUTH_ADMIN) {
		errf(err, "the role must be read, submit or admin");
		return -400;
	}
	char hash[65];
	if (new_token(token) < 0 || sha256_hex(token, strlen(token), hash) < 0)
		return errf(err, "cannot make a random token");
	struct create_args a = {.q = q, .name = name, .role = auth_role_name(role), .hash = hash,
				.at = now_ms()};
	if (store_exec(s, create_job, &a, err) < 0)
		return -1;
	if (a.taken) {
		errf(err, "a token named '%s' exists already (names stay taken after a revoke)",
		     name);
		return -409;
	}
	if (out) {
		char at[32];
		fmt_time_ms(at, a.at);
		*out = json_pack("{s:I, s:s, s:s, s:s, s:n, s:n, s:o}", "id", (json_int_t)a.id,
				 "name", name, "role", a.role, "created_at", at, "revoked_at",
				 "last_used_at", "quotas", auth_quota_json(q));
	}
	return 0;
}

int auth_token_list(struct store *s, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	json_t *arr = json_array();
	int r;
	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(arr, token_row(st));
	if (r != SQLITE_DONE) {
		json_decref(arr);
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	*out = json_pack("{s:o}", "tokens", arr);
	rc = 0;
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

struct revoke_args {
	int64_t id;
	const char *name;
	int rc;
};

static int revoke_job(struct store_tx *tx, void *arg, char *err)
{
	struct revoke_args *a = arg;
	static const char by_id[] = "SELECT id, revoked_at FROM api_tokens WHERE id = ?";
	static const char by_name[] = "SELECT id, revoked_at FROM api_tokens WHERE name = ?";
	static const char upd[] = "UPDATE api_tokens SET revoked_at = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, a->id > 0 ? by_id : by_name);
	if (a->id > 0)
		sqlite3_bind_int64(st, 1, a->id);
	else
		sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
		a->rc = -404;
		return 0;
	}
	int64_t id = sqlite3_column_int64(st, 0);
	int revoked = sqlite3_column_type(st, 1) != SQLITE_NULL;
	sqlite3_reset(st);
	if (revoked) {
		a->rc = -409;
		return 0;
	}
	st = store_tx_stmt(tx, upd);
	sqlite3_bind_int64(st, 1, now_ms());
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	a->id = id;
	a->rc = 0;
	return 0;
}

int auth_token_revoke(struct store *s, int64_t id, const char *name, char *err)
{
	struct revoke_args a = {.id = id, .name = name ? name : ""};
	if (store_exec(s, revoke_job, &a, err) < 0)
		return -1;
	if (a.rc == -404 && id > 0)
		errf(err, "no token with id %lld", (long long)id);
	else if (a.rc == -404)
		errf(err, "no token named '%s'", a.name);
	if (a.rc == -409)
		errf(err, "the token was revoked already");
	return a.rc;
}

/* --- the audit log and the runs' members -------------------------------------------- */

struct audit_entry {
	int64_t at;
	unsigned status;
	char who[AUTH_NAME_MAX + 1], method[16], path[AUTH_PATH_MAX + 1], detail[160];
};

static int audit_job(struct store_tx *tx, void *arg, char *err)
{
	struct audit_entry *e = arg;
	static const char ins[] = "INSERT INTO audit_log (at, who, method, path, status, detail) "
				  "VALUES (?, ?, ?, ?, ?, ?)";
	sqlite3_stmt *st = store_tx_stmt(tx, ins);
	sqlite3_bind_int64(st, 1, e->at);
	sqlite3_bind_text(st, 2, e->who, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, e->method, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, e->path, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, (int)e->status);
	if (e->detail[0])
		sqlite3_bind_text(st, 6, e->detail, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		hlog(LOG_INFO, "auth", "audit log: %s\n", sqlite3_errmsg(tx->db));
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	}
	return 0;
}

int auth_audit_list(struct store *s, int limit, int64_t before, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT id, at, who, method, path, status, detail FROM audit_log "
				   "WHERE ?1 = 0 OR id < ?1 ORDER BY id DESC LIMIT ?2",
			       -1, &st, NULL) != SQLITE_OK) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_int64(st, 1, before);
	sqlite3_bind_int(st, 2, limit + 1);
	json_t *arr = json_array();
	int r, n = 0;
	int64_t last = 0, more = 0;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == limit) {
			more = 1;
			break;
		}
		last = sqlite3_column_int64(st, 0);
		json_array_append_new(arr, json_pack("{s:I, s:o, s:o, s:o, s:o, s:i, s:o}", "id",
						     (json_int_t)last, "at", runs_col_time(st, 1), "who",
						     runs_col_text(st, 2), "method", runs_col_text(st, 3),
						     "path", runs_col_text(st, 4), "status",
						     sqlite3_column_int(st, 5), "detail",
						     runs_col_text(st, 6)));
		n++;
	}
	if (r != SQLITE_ROW && r != SQLITE_DONE) {
		json_decref(arr);
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	*out = json_pack("{s:o, s:o}", "entries", arr, "next_before",
			 more ? json_integer(last) : json_null());
	rc = 0;
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

struct who_args {
	const int64_t *ids;
	int n;
	const char *who;
};

static int who_job(struct store_tx *tx, void *arg, char *err)
{
	struct who_args *a = arg;
	static const char can[] = "UPDATE runs SET cancelled_by = ? WHERE id = ?";
	for (int i = 0; i < a->n; i++) {
		sqlite3_stmt *st = store_tx_stmt(tx, can);
		sqlite3_bind_text(st, 1, a->who, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, a->ids[i]);
		if (sqlite3_step(st) != SQLITE_DONE)
			return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	}
	return 0;
}

int auth_set_cancelled_by(struct store *s, int64_t id, const char *who)
{
	struct who_args a = {.ids = &id, .n = 1, .who = who && *who ? who : "local"};
	char err[HR_ERRLEN];
	return store_exec(s, who_job, &a, err);
}

void auth_run_members(struct store *s, int64_t id, json_t *run)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	json_t *sub = json_null(), *can = json_null();
	if (sqlite3_prepare_v2(db, "SELECT submitted_by, cancelled_by FROM runs WHERE id = ?", -1,
			       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			json_decref(sub);
			json_decref(can);
			sub = runs_col_text(st, 0);
			can = runs_col_text(st, 1);
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	json_object_set_new(run, "submitted_by", sub);
	json_object_set_new(run, "cancelled_by", can);
}

/* --- listening ------------------------------------------------------------------------ */

int auth_check_listen(const struct sockaddr *sa, const struct auth_opts *o, int *loopback,
		      char *err)
{
	int lo = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		lo = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		lo = IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
	}
	*loopback = lo;
	if (!o->tls_cert != !o->tls_key)
		return errf(err, "--tls-cert and --tls-key go together: give both or neither");
	if (!lo && !o->tls_cert && !o->insecure_plaintext)
		return errf(err, "listening beyond loopback needs TLS: give --tls-cert FILE and "
				 "--tls-key FILE (or, knowing that tokens then cross the network "
				 "in the clear, --insecure-plaintext; docs/security.md)");
	return 0;
}

static char *read_small_file(const char *path, const char *what, char *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		errf(err, "cannot read the %s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	char *buf = xmalloc(TLS_FILE_MAX + 1);
	size_t n = fread(buf, 1, TLS_FILE_MAX + 1, f);
	int bad = ferror(f);
	fclose(f);
	if (bad || n == 0 || n > TLS_FILE_MAX) {
		errf(err, "the %s %s is %s", what, path,
		     bad ? "unreadable" : n == 0 ? "empty" : "larger than 1 MiB");
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (!strstr(buf, "-----BEGIN ")) {
		errf(err, "the %s %s is not PEM (no -----BEGIN line)", what, path);
		free(buf);
		return NULL;
	}
	return buf;
}

int auth_read_tls(const struct auth_opts *o, char **cert, char **key, char *err)
{
	*cert = *key = NULL;
	if (!o->tls_cert)
		return 0;
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return errf(err, "this libmicrohttpd was built without TLS: --tls-cert cannot work");
	*cert = read_small_file(o->tls_cert, "TLS certificate", err);
	if (!*cert)
		return -1;
	*key = read_small_file(o->tls_key, "TLS key", err);
	if (!*key) {
		free(*cert);
		*cert = NULL;
		return -1;
	}
	return 0;
}

/* --- the gate ------------------------------------------------------------------------- */

struct auth {
	int loopback, require, tls, check_host;
	char *hosts[AUTH_MAX_HOSTS + 8];
	int nhosts;
};

/* host (an IPv6 literal bracketed), with ":port" unless port is 0 */
static void add_host(struct auth *g, const char *host, int port)
{
	int v6 = strchr(host, ':') && host[0] != '[';
	if (g->nhosts == (int)HR_ARRAY_LEN(g->hosts))
		return;
	if (port)
		g->hosts[g->nhosts++] = xasprintf(v6 ? "[%s]:%d" : "%s:%d", host, port);
	else
		g->hosts[g->nhosts++] = xasprintf(v6 ? "[%s]" : "%s", host);
}

struct auth *auth_new(const struct auth_opts *o, const char *host, int port, int loopback,
		      int tls)
{
	struct auth *g = xcalloc(1, sizeof *g);
	g->loopback = loopback;
	g->require = o->require_tokens || !loopback;
	g->tls = tls;
	g->check_host = 1;
	for (int i = 0; i < o->n_allowed_hosts; i++)
		g->hosts[g->nhosts++] = xstrdup(o->allowed_hosts[i]);
	int wildcard = !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ||
		       strcmp(host, "[::]") == 0;
	if (wildcard && o->n_allowed_hosts == 0) {
		g->check_host = 0;
		hlog(LOG_WARN, "auth", "warning: listening on every address without "
				"--allowed-host: the Host header is not checked (tokens are "
				"required; docs/security.md)\n");
	} else if (!wildcard) {
		/* at any port: a rebinding page's Host is the attacker's name,
		 * whatever the port; these names are no attacker's */
		add_host(g, host, 0);
		if (loopback) {
			add_host(g, "localhost", 0);
			add_host(g, "127.0.0.1", 0);
			add_host(g, "::1", 0);
		}
	}
	if (!loopback && !tls)
		fprintf(stderr,
			"headroomd: WARNING: --insecure-plaintext: listening beyond loopback "
			"WITHOUT TLS. API tokens and every answer cross the network in the "
			"clear; anyone on the path can read and reuse them. Use --tls-cert and "
			"--tls-key (docs/security.md).\n");
	return g;
}

void auth_free(struct auth *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nhosts; i++)
		free(g->hosts[i]);
	free(g);
}

/* Length of the host part of "host[:port]" / "[v6]:port". */
static size_t host_part(const char *h)
{
	if (h[0] == '[') {
		const char *e = strchr(h, ']');
		return e ? (size_t)(e - h + 1) : strlen(h);
	}
	const char *c = strchr(h, ':');
	return c ? (size_t)(c - h) : strlen(h);
}

/* An entry with a port matches exactly; without one, the host at any port. */
static int host_allowed(const struct auth *g, const char *h, size_t n)
{
	if (!g->check_host)
		return 1;
	for (int i = 0; i < g->nhosts; i++) {
		const char *e = g->hosts[i];
		size_t en = strlen(e);
		int has_port = host_part(e) < en;
		if (has_port ? (en == n && strncasecmp(e, h, n) == 0)
			     : (host_part(h) <= n && en == host_part(h) &&
				strncasecmp(e, h, en) == 0))
			return 1;
	}
	return 0;
}


struct found {
	struct auth_quota quota;
	int any, known, revoked, role;
	int64_t id, last_used;
	char name[AUTH_NAME_MAX + 1];
};

/* Whether any token was ever made, and the one whose hash is hash. */
static int lookup(sqlite3 *db, const char *hash, struct found *f)
{
	sqlite3_stmt *st = NULL;
	memset(f, 0, sizeof *f);
	if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM api_tokens)", -1, &st, NULL) !=
		    SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return -1;
	}
	f->any = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (!hash || !f->any)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT id, name, role, revoked_at, last_used_at, " QUOTA_COLS
				   " FROM api_tokens WHERE hash = ?", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		f->known = 1;
		f->id = sqlite3_column_int64(st, 0);
		snprintf(f->name, sizeof f->name, "%s", (const char *)sqlite3_column_text(st, 1));
		f->role = auth_role_parse((const char *)sqlite3_column_text(st, 2));
		f->revoked = sqlite3_column_type(st, 3) != SQLITE_NULL;
		f->last_used = sqlite3_column_int64(st, 4);
		quota_cols(st, 5, &f->quota);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

struct touch_args {
	int64_t id, at;
};

static int touch_job(struct store_tx *tx, void *arg, char *err)
{
	struct touch_args *a = arg;
	static const char upd[] = "UPDATE api_tokens SET last_used_at = ? WHERE id = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, upd);
	sqlite3_bind_int64(st, 1, a->at);
	sqlite3_bind_int64(st, 2, a->id);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
}

static int is_write(const char *method)
{
	return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
	       strcmp(method, "OPTIONS") != 0;
}

/* The media type of Content-Type ct is application/json (parameters such as
 * charset allowed). */
static int is_json_type(const char *ct)
{
	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	static const char j[] = "application/json";
	if (strncasecmp(ct, j, sizeof j - 1) != 0)
		return 0;
	ct += sizeof j - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

int auth_admit(struct auth *g, struct store *s, int reader_wait_ms, struct MHD_Connection *conn,
	       const char *method, const char *url, int need, int json_body, struct auth_req *r,
	       enum MHD_Result *ret)
{
	memset(r, 0, sizeof *r);
	if (!g) {
		*ret = reply_retry(conn, 503, "busy", HR_RETRY_AFTER_S,
				   "the daemon is still starting: retry in a moment");
		return -1;
	}
	snprintf(r->method, sizeof r->method, "%s", method);
	snprintf(r->path, sizeof r->path, "%s", url);
	utf8_sanitize(r->path);
	/* Host: a browser always sends it, so a page on another name that
	 * resolves here (DNS rebinding) is refused; clients without one are
	 * no browser */
	const char *host =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (host && !host_allowed(g, host, strlen(host))) {
		*ret = reply_error(conn, 421, "host_not_allowed", NULL,
				   "the Host '%.100s' is not a name of this daemon: add it with "
				   "--allowed-host (docs/security.md)",
				   host);
		return -1;
	}
	/* Origin: a write from a page of another origin (a browser says so) */
	const char *origin =
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	if (origin && is_write(method)) {
		const char *h = NULL;
		if (strncasecmp(origin, "http://", 7) == 0)
			h = origin + 7;
		else if (strncasecmp(origin, "https://", 8) == 0)
			h = origin + 8;
		size_t n = h ? strlen(h) : 0;
		int ok = h && n > 0 && !strchr(h, '/') &&
			 ((host && strlen(host) == n && strncasecmp(host, h, n) == 0) ||
			  (g->check_host && host_allowed(g, h, n)));
		if (!ok) {
			*ret = reply_error(conn, 403, "origin_not_allowed", NULL,
					   "a write from the origin '%.100s' is refused: only pages "
					   "of this daemon's own names may write (docs/security.md)",
					   origin);
			return -1;
		}
	}
	if (need == AUTH_NONE)
		return 0;
	const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_AUTHORIZATION);
	char hash[65];
	const char *hp = NULL;
	if (authz) {
		const char *t = authz;
		if (strncasecmp(t, "Bearer ", 7) != 0) {
			*ret = reply_unauthorized(conn, "the Authorization header must be "
							"'Bearer <token>'");
			return -1;
		}
		t += 7;
		while (*t == ' ')
			t++;
		size_t n = strlen(t);
		while (n && t[n - 1] == ' ')
			n--;
		if (n == 0 || n > 200 || sha256_hex(t, n, hash) < 0) {
			*ret = reply_unauthorized(conn, "the bearer token is not a token");
			return -1;
		}
		hp = hash;
	}
	sqlite3 *db = store_reader_timed(s, reader_wait_ms);
	if (!db) {
		*ret = reply_retry(conn, 503, "busy", HR_RETRY_AFTER_S,
				   "no database reader came free within %d ms to check the "
				   "token: retry in a moment",
				   reader_wait_ms);
		return -1;
	}
	struct found f;
	int rc = lookup(db, hp, &f);
	store_reader_put(s, db);
	if (rc < 0) {
		*ret = reply_internal(conn, "cannot read the tokens");
		return -1;
	}
	if (!hp) {
		if (g->require || f.any) {
			*ret = reply_unauthorized(
				conn, "this route needs a token: send 'Authorization: Bearer "
				      "<token>' (make one with `headroomd token create`, "
				      "docs/security.md)");
			return -1;
		}
		snprintf(r->who, sizeof r->who, "local");
		r->role = AUTH_ADMIN;
	} else if (!f.known || f.role < 0) {
		*ret = reply_unauthorized(conn, "the bearer token is not known to this daemon");
		return -1;
	} else if (f.revoked) {
		*ret = reply_unauthorized(conn, "the bearer token '%s' was revoked", f.name);
		return -1;
	} else {
		snprintf(r->who, sizeof r->who, "%s", f.name);
		r->role = f.role;
		r->quota = f.quota;
		int64_t now = now_ms();
		if (now - f.last_used >= TOUCH_EVERY_MS) {
			struct touch_args *ta = xmalloc(sizeof *ta);
			*ta = (struct touch_args){.id = f.id, .at = now};
			store_post(s, touch_job, ta, free);
		}
	}
	r->audit = is_write(method);
	if (r->role < need) {
		*ret = reply_error(conn, 403, "forbidden", NULL,
				   "%s %s needs the '%s' role; the token '%s' has '%s'", method,
				   r->path, auth_role_name(need), r->who,
				   auth_role_name(r->role));
		return -1;
	}
	if (json_body) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_TRANSFER_ENCODING);
		const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);
		int body = te || (cl && strspn(cl, "0 \t") != strlen(cl));
		if (body && !is_json_type(ct)) {
			*ret = reply_error(conn, 415, "unsupported_media_type", NULL,
					   "the body must be sent as Content-Type: application/json "
					   "(it was %.80s)",
					   ct ? ct : "not given");
			return -1;
		}
	}
	return 0;
}

void auth_done(struct store *s, struct MHD_Connection *conn, const struct auth_req *r)
{
	if (!r->audit)
		return;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
	struct audit_entry *e = xcalloc(1, sizeof *e);
	e->at = now_ms();
	e->status = ci ? ci->http_status : 0;
	memcpy(e->who, r->who, sizeof e->who);
	memcpy(e->method, r->method, sizeof e->method);
	memcpy(e->path, r->path, sizeof e->path);
	memcpy(e->detail, r->detail, sizeof e->detail);
	store_post(s, audit_job, e, free);
}

/* --- the routes --------------------------------------------------------------------------- */

enum MHD_Result auth_h_token_create(struct call *k)
{
	json_error_t je;
	json_t *b = json_loadb(k->body, k->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!b)
		return reply_error(k->conn, 400, "invalid_json", NULL, "the body is not JSON: %s",
				   je.text);
	enum MHD_Result ret;
	const char *key;
	json_t *v;
	json_t *name = json_object_get(b, "name"), *role = json_object_get(b, "role");
	if (!json_is_object(b)) {
		ret = reply_error(k->conn, 400, "wrong_type", NULL, "the body must be an object");
		goto out;
	}
	json_object_foreach(b, key, v) {
		if (strcmp(key, "name") != 0 && strcmp(key, "role") != 0 &&
		    strncmp(key, "max_", 4) != 0) {
			ret = reply_error(k->conn, 400, "unknown_field", key,
					  "unknown member '%.64s'", key);
			goto out;
		}
	}
	if (!name || !role) {
		ret = reply_error(k->conn, 400, "missing_field", name ? "role" : "name",
				  "'%s' is required", name ? "role" : "name");
		goto out;
	}
	if (!json_is_string(name) || !json_is_string(role)) {
		ret = reply_error(k->conn, 400, "wrong_type", json_is_string(name) ? "role" : "name",
				  "'%s' must be a string", json_is_string(name) ? "role" : "name");
		goto out;
	}
	int r = auth_role_parse(json_string_value(role));
	if (r < 0) {
		ret = reply_error(k->conn, 400, "invalid_value", "role",
				  "'role' must be read, submit or admin");
		goto out;
	}
	char token[AUTH_TOKEN_LEN + 1], err[HR_ERRLEN];
	struct auth_quota q;
	const char *qfield = NULL;
	if (auth_quota_parse(b, &q, &qfield, err) < 0) {
		ret = reply_error(k->conn, 400, "invalid_value", qfield, "%s", err);
		goto out;
	}
	json_object_foreach(b, key, v) {
		int known = strncmp(key, "max_", 4) != 0;
		for (int i = 0; i < 6 && !known; i++)
			known = strcmp(key, quota_names[i]) == 0;
		if (!known) {
			ret = reply_error(k->conn, 400, "unknown_field", key,
					  "unknown member '%.64s'", key);
			goto out;
		}
	}
	json_t *out;
	int rc = auth_token_create(k->a->store, json_string_value(name), r, &q, token, &out, err);
	if (rc == -400)
		ret = reply_error(k->conn, 400, "invalid_value", "name", "%s", err);
	else if (rc == -409)
		ret = reply_error(k->conn, 409, "conflict", "name", "%s", err);
	else if (rc < 0)
		ret = reply_internal(k->conn, err);
	else {
		if (k->auth)
			snprintf(k->auth->detail, sizeof k->auth->detail, "token '%s' (%s) made",
				 json_string_value(name), auth_role_name(r));
		json_object_set_new(out, "token", json_string(token));
		ret = reply_json(k->conn, 201, out);
	}
out:
	json_decref(b);
	return ret;
}

enum MHD_Result auth_h_token_list(struct call *k)
{
	json_t *out;
	char err[HR_ERRLEN];
	if (auth_token_list(k->a->store, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

enum MHD_Result auth_h_token_revoke(struct call *k)
{
	char err[HR_ERRLEN];
	int rc = auth_token_revoke(k->a->store, k->id, NULL, err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", "id", "no token with id %lld",
				   (long long)k->id);
	if (rc == -409)
		return reply_error(k->conn, 409, "conflict", NULL,
				   "token %lld was revoked already", (long long)k->id);
	if (rc < 0)
		return reply_internal(k->conn, err);
	if (k->auth)
		snprintf(k->auth->detail, sizeof k->auth->detail, "token %lld revoked",
			 (long long)k->id);
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(k->conn, 204, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result auth_h_audit(struct call *k)
{
	long long limit = 100, before = 0;
	const char *l = arg(k->conn, "limit");
	if (l && parse_int(l, 1, AUTH_AUDIT_MAX, &limit) < 0)
		return reply_error(k->conn, 400, "out_of_range", "limit",
				   "'limit' must be an integer from 1 to %d", AUTH_AUDIT_MAX);
	const char *b = arg(k->conn, "before");
	if (b && parse_int(b, 1, INT64_MAX, &before) < 0)
		return reply_error(k->conn, 400, "out_of_range", "before",
				   "'before' must be an entry id (a positive integer)");
	json_t *out;
	char err[HR_ERRLEN];
	if (auth_audit_list(k->a->store, (int)limit, before, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

/* --- headroomd token ... -------------------------------------------------------------------- */

static void token_usage(FILE *f)
{
	fputs("usage: headroomd token create --name NAME --role read|submit|admin [--data DIR]\n"
	      "         [--max-rate R] [--max-concurrency N] [--max-duration-s S]\n"
	      "         [--max-requests N] [--max-queued N] [--max-dataset-mb M]\n"
	      "       headroomd token list [--data DIR]\n"
	      "       headroomd token revoke NAME|ID [--data DIR]\n"
	      "\n"
	      "Works on the data directory (default ./headroom-data), with or without a\n"
	      "daemon running. create prints the new token once, on stdout: it is stored\n"
	      "only as a hash and cannot be shown again. Roles: read (every GET), submit\n"
	      "(also runs, cancels, edits, datasets, calibrations, baselines), admin (also\n"
	      "deletions, tokens and the audit log). docs/security.md.\n",
	      f);
}

/* --max-rate R ... into q, checked by auth_quota_parse. -1 (said) or 0. */
static int quota_args(const char *const *qargs, int nq, struct auth_quota *q)
{
	json_t *o = json_object();
	char err[HR_ERRLEN];
	const char *field = NULL;
	for (int i = 0; i < nq; i += 2) {
		char key[40], *end;
		snprintf(key, sizeof key, "max_%s", qargs[i] + 6);
		for (char *c = key; *c; c++)
			if (*c == '-')
				*c = '_';
		int known = 0;
		for (int k = 0; k < 6; k++)
			known |= strcmp(key, quota_names[k]) == 0;
		double d = strtod(qargs[i + 1], &end);
		if (!known || *end || end == qargs[i + 1]) {
			fprintf(stderr, "headroomd token create: %s %s\n", qargs[i],
				known ? "needs a number" : "is unknown");
			json_decref(o);
			return -1;
		}
		int integer = strcmp(key, "max_rate") != 0 && strcmp(key, "max_duration_s") != 0;
		json_object_set_new(o, key,
				    integer && d == (double)(long long)d ? json_integer((json_int_t)d)
									  : json_real(d));
	}
	int rc = auth_quota_parse(o, q, &field, err);
	json_decref(o);
	if (rc < 0)
		fprintf(stderr, "headroomd token create: --%s: %s\n", field ? field : "max", err);
	return rc;
}

int auth_token_command(int argc, char **argv)
{
	const char *data = "headroom-data", *name = NULL, *role = NULL, *target = NULL;
	const char *qargs[12]; /* --max-* OPTION VALUE pairs, checked as the API checks them */
	int nq = 0;
	if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
		token_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 0;
	}
	const char *cmd = argv[0];
	if (strcmp(cmd, "create") != 0 && strcmp(cmd, "list") != 0 && strcmp(cmd, "revoke") != 0) {
		fprintf(stderr, "headroomd token: unknown command '%s'\n", cmd);
		token_usage(stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0) {
			token_usage(stdout);
			return 0;
		} else if (a[0] != '-' && strcmp(cmd, "revoke") == 0 && !target) {
			target = a;
			continue;
		} else if (!v) {
			fprintf(stderr, "headroomd token: %s needs a value (or is unknown)\n", a);
			return 2;
		} else if (strcmp(a, "--data") == 0) {
			data = v;
		} else if (strcmp(a, "--name") == 0 && strcmp(cmd, "create") == 0) {
			name = v;
		} else if (strcmp(a, "--role") == 0 && strcmp(cmd, "create") == 0) {
			role = v;
		} else if (strncmp(a, "--max-", 6) == 0 && strcmp(cmd, "create") == 0 && nq < 12) {
			qargs[nq++] = a;
			qargs[nq++] = v;
		} else {
			fprintf(stderr, "headroomd token %s: unknown option %s\n", cmd, a);
			token_usage(stderr);
			return 2;
		}
		i++;
	}
	if (strcmp(cmd, "create") == 0 && (!name || !role)) {
		fprintf(stderr, "headroomd token create: --name and --role are required\n");
		return 2;
	}
	int r = role ? auth_role_parse(role) : 0;
	if (r < 0) {
		fprintf(stderr, "headroomd token create: --role must be read, submit or admin\n");
		return 2;
	}
	if (strcmp(cmd, "revoke") == 0 && !target) {
		fprintf(stderr, "headroomd token revoke: say which token (NAME or ID)\n");
		return 2;
	}
	struct auth_quota quota;
	if (quota_args(qargs, nq, &quota) < 0)
		return 2;
	/* create makes the store if need be; list and revoke need one */
	char err[HR_ERRLEN];
	struct store *s = NULL;
	struct store_opts so = {.readers = 1, .exports = 1};
	if (strcmp(cmd, "create") != 0 ? store_open_existing(data, "token", &s) < 0
				       : store_open(data, &so, &s, err) < 0) {
		if (strcmp(cmd, "create") == 0)
			fprintf(stderr, "headroomd token: %s\n", err);
		return 1;
	}
	int status = 0;
	if (strcmp(cmd, "create") == 0) {
		char token[AUTH_TOKEN_LEN + 1];
		int rc = auth_token_create(s, name, r, &quota, token, NULL, err);
		if (rc < 0) {
			fprintf(stderr, "headroomd token create: %s\n", err);
			status = rc == -1 ? 1 : 2;
		} else {
			printf("%s\n", token);
			fprintf(stderr, "token '%s' (%s) made; it is shown only this once (stored as "
					"a hash)\n",
				name, auth_role_name(r));
		}
	} else if (strcmp(cmd, "list") == 0) {
		json_t *out;
		if (auth_token_list(s, &out, err) < 0) {
			fprintf(stderr, "headroomd token list: %s\n", err);
			status = 1;
		} else {
			printf("%-6s %-24s %-7s %-24s %-24s %s\n", "ID", "NAME", "ROLE", "CREATED",
			       "REVOKED", "LAST USED");
			size_t i;
			json_t *t;
			json_array_foreach(json_object_get(out, "tokens"), i, t) {
				const char *rv = json_string_value(json_object_get(t, "revoked_at"));
				const char *lu = json_string_value(json_object_get(t, "last_used_at"));
				printf("%-6lld %-24s %-7s %-24s %-24s %s\n",
				       (long long)json_integer_value(json_object_get(t, "id")),
				       json_string_value(json_object_get(t, "name")),
				       json_string_value(json_object_get(t, "role")),
				       json_string_value(json_object_get(t, "created_at")),
				       rv ? rv : "-", lu ? lu : "-");
			}
			json_decref(out);
		}
	} else {
		long long id = 0;
		int by_id = parse_int(target, 1, INT64_MAX, &id) == 0;
		int rc = auth_token_revoke(s, by_id ? id : 0, by_id ? NULL : target, err);
		if (rc < 0) {
			fprintf(stderr, "headroomd token revoke: %s\n", err);
			status = 1;
		} else {
			fprintf(stderr, "token %s revoked\n", target);
		}
	}
	store_free(s);
	return status;
}
