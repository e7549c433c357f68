/* agents.c - remote load hosts: enrolment, the agent socket with its ZAP
 * handler, the live table of connections and the relays of remote workers
 * (agents.h, docs/agents.md). */
#include "agents.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include "curvekey.h"
#include "hrlimits.h"
#include "log.h"
#include "proto.h"
#include "runs.h"
#include "util.h"

#define MAX_CONNS 256
#define MAX_ENROLLED 1024
#define ZAP_EP "inproc://zeromq.zap.01"
#define RELOAD_NS 2000000000LL       /* enrolments read again (revocations take effect) */
#define RELAY_STUCK_NS 10000000000LL /* a run's socket taking nothing: that worker is lost */
#define FETCH_WINDOW 4               /* file chunks sent to a connection per pass of the hub loop */
#define ZAP_RELOAD_NS 500000000LL    /* an unknown key reads them again at most this often */

struct conn {
	int used, welcomed;
	unsigned char rid[256];
	size_t ridlen;
	char name[AGENT_NAME_MAX + 1];
	char enrolled[AGENT_NAME_MAX + 1];
	char key[CURVEKEY_Z85]; /* the key it authenticated with */
	char host[256], version[64], addr[64];
	int cores, in_use;
	json_t *labels; /* enrolled labels, then the announced ones they do not set */
	int64_t last_seen, last_hb_ms, since_ms;
	int fetching, ffd; /* a file being sent (hub thread only) */
	uint64_t foff;
	char fsha[65];
};

struct enrolled {
	char name[AGENT_NAME_MAX + 1];
	char key[CURVEKEY_Z85];
	json_t *labels;
};

struct rwk {
	int used, state, status;
	int conn;
	char conn_name[AGENT_NAME_MAX + 1];
	void *dealer; /* hub thread only */
	char why[256];
};

enum cmd_kind { CMD_SPAWN, CMD_END };

struct cmd {
	struct cmd *next;
	int kind;
	int64_t run;
	char endpoint[300];
	char conn[AGENT_NAME_MAX + 1];
	int n;
	int idx[HR_MAX_WORKERS];
	char *api_key;
	json_t *files; /* daemon path -> SHA-256 */
};

static struct hub {
	int started;
	struct store *store;
	char data_dir[1024];
	char listen[256];
	void *ctx, *router, *zap;
	int evfd;
	pthread_t thread;
	atomic_int stop;
	pthread_mutex_t mu; /* guards everything below */
	struct conn c[MAX_CONNS];
	struct enrolled e[MAX_ENROLLED];
	int ne;
	int64_t run; /* the run whose remote workers rw holds */
	struct rwk rw[HR_MAX_WORKERS];
	struct cmd *q, **qtail;
	json_t *files; /* the run's files agents may fetch: SHA-256 -> path */
} H = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* --- enrolments in the store ------------------------------------------------------------ */

static int name_ok(const char *s)
{
	return agentproto_name_ok(s, AGENT_NAME_MAX);
}

int agents_parse_labels(const char *text, json_t *out, char *err)
{
	char buf[4096];
	if (strlen(text) >= sizeof buf)
		return errf(err, "labels are too long");
	snprintf(buf, sizeof buf, "%s", text);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return errf(err, "labels must be k=v,k=v");
		*eq = 0;
		if (!name_ok(t) || !name_ok(eq + 1))
			return errf(err,
			            "a label's key and value are 1 to %d characters of A-Z a-z "
			            "0-9 . _ -",
			            AGENT_NAME_MAX);
		if (json_object_size(out) >= 32)
			return errf(err, "at most 32 labels");
		json_object_set_new(out, t, json_string(eq + 1));
	}
	return 0;
}

static int labels_ok(json_t *labels, char *err)
{
	if (!json_is_object(labels))
		return errf(err, "'labels' must be an object of strings");
	if (json_object_size(labels) > 32)
		return errf(err, "at most 32 labels");
	const char *k;
	json_t *v;
	json_object_foreach(labels, k, v)
	{
		if (!json_is_string(v) || !name_ok(k) || !name_ok(json_string_value(v)))
			return errf(err,
			            "a label's key and value are 1 to %d characters of A-Z a-z "
			            "0-9 . _ -",
			            AGENT_NAME_MAX);
	}
	return 0;
}

struct enroll_args {
	const char *name, *key;
	char *labels;
	int64_t at;
	int taken; /* 1 name, 2 key */
};

static int enroll_job(struct store_tx *tx, void *arg, char *err)
{
	struct enroll_args *a = arg;
	sqlite3_stmt *st = store_tx_stmt(tx, "SELECT name = ?1 FROM agents WHERE name = ?1 OR "
	                                     "public_key = ?2");
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		a->taken = sqlite3_column_int(st, 0) ? 1 : 2;
		sqlite3_reset(st);
		return 0;
	}
	sqlite3_reset(st);
	st = store_tx_stmt(tx, "INSERT INTO agents (name, public_key, labels, enrolled_ms) "
	                       "VALUES (?, ?, ?, ?)");
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->labels, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->at);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	return 0;
}

static int64_t now_ms(void)
{
	return wall_ns() / 1000000;
}

int agents_enroll(struct store *s, const char *name, const char *key, json_t *labels, json_t **out,
                  char *field, char *err)
{
	field[0] = 0;
	if (!name || !name_ok(name)) {
		strcpy(field, "name");
		errf(err, "an agent's name is 1 to %d characters of A-Z a-z 0-9 . _ -",
		     AGENT_NAME_MAX);
		return -400;
	}
	if (!key || !curvekey_valid(key)) {
		strcpy(field, "public_key");
		errf(err, "'public_key' must be a Z85 CURVE public key (40 characters, as "
		          "headroom-agent keygen writes it)");
		return -400;
	}
	json_t *own = labels ? json_incref(labels) : json_object();
	if (labels_ok(own, err) < 0) {
		json_decref(own);
		strcpy(field, "labels");
		return -400;
	}
	struct enroll_args a = {.name = name, .key = key, .at = now_ms()};
	a.labels = json_dumps(own, JSON_COMPACT | JSON_SORT_KEYS);
	int rc = store_exec(s, enroll_job, &a, err);
	free(a.labels);
	if (rc < 0) {
		json_decref(own);
		return -1;
	}
	if (a.taken) {
		json_decref(own);
		strcpy(field, a.taken == 1 ? "name" : "public_key");
		errf(err,
		     a.taken == 1 ? "an agent named '%s' is enrolled already"
		                  : "that public key is enrolled already (as another agent)",
		     name);
		return -409;
	}
	if (out) {
		char at[32];
		fmt_time_ms(at, a.at);
		*out = json_pack("{s:s, s:s, s:o, s:s}", "name", name, "public_key", key, "labels",
		                 own, "enrolled_at", at);
	} else {
		json_decref(own);
	}
	hlog(LOG_INFO, "agents", "agent '%s' enrolled\n", name);
	return 0;
}

struct revoke_args {
	const char *name;
	int found;
};

static int revoke_job(struct store_tx *tx, void *arg, char *err)
{
	struct revoke_args *a = arg;
	sqlite3_stmt *st = store_tx_stmt(tx, "DELETE FROM agents WHERE name = ?");
	sqlite3_bind_text(st, 1, a->name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "sqlite: %s", sqlite3_errmsg(tx->db));
	a->found = sqlite3_changes(tx->db) > 0;
	return 0;
}

int agents_revoke(struct store *s, const char *name, char *err)
{
	struct revoke_args a = {.name = name};
	if (store_exec(s, revoke_job, &a, err) < 0)
		return -1;
	if (!a.found) {
		errf(err, "no agent named '%s' is enrolled", name);
		return -404;
	}
	hlog(LOG_INFO, "agents", "agent '%s' revoked: its key is refused from now on\n", name);
	return 0;
}

/* The enrolments into H.e. Called without H.mu: the store is read first
 * (an API request holds its reader while it takes H.mu, agents_list), then
 * the table is swapped under H.mu. A reader not free within a second
 * leaves the table as it was: 0 then, 1 when it was read. */
static int reload(void)
{
	sqlite3 *db = store_reader_timed(H.store, 1000);
	if (!db)
		return 0;
	struct enrolled *ne = xmalloc(sizeof *ne * MAX_ENROLLED);
	int n = 0;
	sqlite3_stmt *st = NULL;
	int ok = sqlite3_prepare_v2(db, "SELECT name, public_key, labels FROM agents ORDER BY name",
	                            -1, &st, NULL) == SQLITE_OK;
	while (ok && sqlite3_step(st) == SQLITE_ROW && n < MAX_ENROLLED) {
		struct enrolled *e = &ne[n];
		const char *nm = (const char *)sqlite3_column_text(st, 0);
		const char *k = (const char *)sqlite3_column_text(st, 1);
		const char *l = (const char *)sqlite3_column_text(st, 2);
		if (!nm || !k || strlen(nm) > AGENT_NAME_MAX || strlen(k) != 40)
			continue;
		memcpy(e->name, nm, strlen(nm) + 1);
		memcpy(e->key, k, 41);
		e->labels = l ? json_loads(l, 0, NULL) : NULL;
		if (!json_is_object(e->labels)) {
			json_decref(e->labels);
			e->labels = json_object();
		}
		n++;
	}
	sqlite3_finalize(st);
	store_reader_put(H.store, db);
	if (ok) {
		pthread_mutex_lock(&H.mu);
		for (int i = 0; i < H.ne; i++)
			json_decref(H.e[i].labels);
		memcpy(H.e, ne, sizeof *ne * (size_t)n);
		H.ne = n;
		pthread_mutex_unlock(&H.mu);
	}
	free(ne);
	return ok;
}

static const struct enrolled *enrolled_by_key(const char *key)
{
	for (int i = 0; i < H.ne; i++)
		if (strcmp(H.e[i].key, key) == 0)
			return &H.e[i];
	return NULL;
}

static json_t *conn_json(const struct conn *c)
{
	char hb[32], since[32];
	fmt_time_ms(hb, c->last_hb_ms);
	fmt_time_ms(since, c->since_ms);
	return json_pack("{s:s, s:s, s:s, s:i, s:s, s:O, s:s, s:s, s:i}", "name", c->name, "host",
	                 c->host, "address", c->addr, "cores", c->cores, "version", c->version,
	                 "labels", c->labels, "connected_at", since, "last_heartbeat", hb,
	                 "workers_in_use", c->in_use);
}

int agents_list(struct store *s, json_t **out, char *err)
{
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db,
	                       "SELECT name, public_key, labels, enrolled_ms FROM agents "
	                       "ORDER BY name",
	                       -1, &st, NULL) != SQLITE_OK) {
		errf(err, "sqlite: %s", sqlite3_errmsg(db));
		goto out;
	}
	json_t *arr = json_array();
	pthread_mutex_lock(&H.mu);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *key = (const char *)sqlite3_column_text(st, 1);
		const char *lab = (const char *)sqlite3_column_text(st, 2);
		char at[32];
		fmt_time_ms(at, sqlite3_column_int64(st, 3));
		json_t *labels = lab ? json_loads(lab, 0, NULL) : NULL;
		if (!json_is_object(labels)) {
			json_decref(labels);
			labels = json_object();
		}
		json_t *conns = json_array(), *first = NULL;
		int workers = 0;
		for (int i = 0; i < MAX_CONNS; i++) {
			const struct conn *c = &H.c[i];
			if (!c->used || !c->welcomed || strcmp(c->enrolled, name ? name : "") != 0)
				continue;
			json_t *cj = conn_json(c);
			if (!first)
				first = cj;
			workers += c->in_use;
			json_array_append_new(conns, cj);
		}
		json_t *a =
		    json_pack("{s:s, s:s, s:o, s:s, s:s, s:o}", "name", name ? name : "",
		              "public_key", key ? key : "", "labels", labels, "enrolled_at", at,
		              "state", first ? "connected" : "disconnected", "connections", conns);
		static const char *const copy[] = {"host", "cores", "version", "last_heartbeat"};
		for (size_t k = 0; k < sizeof copy / sizeof *copy; k++)
			json_object_set(a, copy[k],
			                first ? json_object_get(first, copy[k]) : json_null());
		json_object_set_new(a, "workers_in_use", json_integer(workers));
		json_array_append_new(arr, a);
	}
	int listening = H.started;
	pthread_mutex_unlock(&H.mu);
	*out = json_pack("{s:o, s:b}", "agents", arr, "listening", listening);
	rc = 0;
out:
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

/* --- the hub thread ---------------------------------------------------------------------- */

static void send_frames_f(void *sock, const void *const *p, const size_t *n, int k, int flags)
{
	for (int i = 0; i < k; i++)
		if (zmq_send(sock, p[i], n[i], (i + 1 < k ? ZMQ_SNDMORE : 0) | flags) < 0)
			return;
}

static void send_frames(void *sock, const void *const *p, const size_t *n, int k)
{
	send_frames_f(sock, p, n, k, 0);
}

/* flags: ZMQ_DONTWAIT where a message may be dropped rather than wait */
static void send_ctl_f(const struct conn *c, json_t *o, int flags)
{
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		xalloc_die();
	const void *p[3] = {c->rid, "c", s};
	size_t n[3] = {c->ridlen, 1, strlen(s)};
	send_frames_f(H.router, p, n, 3, flags);
	free(s);
}

static void send_ctl(const struct conn *c, json_t *o)
{
	send_ctl_f(c, o, 0);
}

static void send_ctl_rid(const void *rid, size_t rl, json_t *o)
{
	struct conn t = {.ridlen = rl};
	memcpy(t.rid, rid, rl);
	send_ctl(&t, o);
}

/* ZAP (RFC 27): a connection's CURVE key must be enrolled; its name is the user id */
static void zap_answer(void)
{
	zmq_msg_t f[8];
	int n = 0, more = 1;
	while (more) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, H.zap, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			return;
		}
		more = zmq_msg_more(&m);
		if (n < 8)
			f[n++] = m;
		else
			zmq_msg_close(&m);
	}
	const char *status = "400", *text = "unknown key", *user = "";
	char key[CURVEKEY_Z85] = "", addr[64] = "";
	if (n >= 7 && zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0 &&
	    zmq_msg_size(&f[6]) == 32) {
		zmq_z85_encode(key, zmq_msg_data(&f[6]), 32);
		size_t al =
		    zmq_msg_size(&f[3]) < sizeof addr - 1 ? zmq_msg_size(&f[3]) : sizeof addr - 1;
		memcpy(addr, zmq_msg_data(&f[3]), al);
		pthread_mutex_lock(&H.mu);
		int e = enrolled_by_key(key) != NULL;
		pthread_mutex_unlock(&H.mu);
		/* enrolled a moment ago, perhaps: read again, but at most every
		 * ZAP_RELOAD_NS (anyone with the daemon's public key can knock) */
		static int64_t last_miss;
		int64_t now = mono_ns();
		if (!e && (last_miss == 0 || now - last_miss >= ZAP_RELOAD_NS)) {
			last_miss = now;
			reload();
			pthread_mutex_lock(&H.mu);
			e = enrolled_by_key(key) != NULL;
			pthread_mutex_unlock(&H.mu);
		}
		if (e) { /* the user id is the key: its enrolment is looked up at each hello */
			status = "200";
			text = "OK";
			user = key;
		}
		if (!e)
			hlog(LOG_WARN, "agents",
			     "refused a connection from %s: its key %.8s... is not "
			     "enrolled (headroomd agent enroll)\n",
			     addr, key);
	}
	if (n >= 2) {
		const void *p[6] = {"1.0", zmq_msg_data(&f[1]), status, text, user, ""};
		size_t l[6] = {3, zmq_msg_size(&f[1]), 3, strlen(text), strlen(user), 0};
		send_frames(H.zap, p, l, 6);
	}
	for (int i = 0; i < n; i++)
		zmq_msg_close(&f[i]);
}

static int conn_by_rid(const void *rid, size_t rl)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (H.c[i].used && H.c[i].ridlen == rl && memcmp(H.c[i].rid, rid, rl) == 0)
			return i;
	return -1;
}

static void fetch_end(struct conn *c)
{
	if (c->fetching)
		close(c->ffd);
	c->fetching = 0;
}

static void close_worker(struct rwk *w)
{
	if (w->dealer)
		zmq_close(w->dealer);
	w->dealer = NULL;
}

/* The connection is gone: its workers in the run are lost. H.mu held. */
static void drop_conn(int ci, const char *why)
{
	struct conn *c = &H.c[ci];
	for (int i = 0; i < HR_MAX_WORKERS; i++) {
		struct rwk *w = &H.rw[i];
		if (w->used && w->conn == ci && w->state == AGENT_W_RUNNING) {
			w->state = AGENT_W_LOST;
			snprintf(w->why, sizeof w->why, "agent '%s' (host %.64s) %.96s", c->name,
			         c->host, why);
			close_worker(w);
		}
	}
	fetch_end(c);
	json_decref(c->labels);
	memset(c, 0, sizeof *c);
}

static void on_hello(const void *rid, size_t rl, json_t *o, const char *user, const char *addr)
{
	json_t *proto = json_object_get(o, "protocol"), *wp = json_object_get(o, "worker_protocol");
	const char *ver = json_string_value(json_object_get(o, "version"));
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *host = json_string_value(json_object_get(o, "host"));
	json_t *labels = json_object_get(o, "labels"), *cores = json_object_get(o, "cores");
	char err[HR_ERRLEN];
	if (!json_is_integer(proto) || json_integer_value(proto) != AGENT_PROTO_VERSION ||
	    !json_is_integer(wp) || json_integer_value(wp) != PROTO_VERSION) {
		char why[400];
		snprintf(
		    why, sizeof why,
		    "protocol mismatch: this daemon (headroom " HEADROOM_VERSION ") speaks agent "
		    "protocol %d and worker protocol %d, the agent (headroom %.40s) speaks %lld "
		    "and %lld: run the same headroom version on both",
		    AGENT_PROTO_VERSION, PROTO_VERSION, ver ? ver : "?",
		    json_is_integer(proto) ? (long long)json_integer_value(proto) : -1LL,
		    json_is_integer(wp) ? (long long)json_integer_value(wp) : -1LL);
		hlog(LOG_WARN, "agents", "refused agent '%.64s' from %s: %s\n", name ? name : "?",
		     addr, why);
		send_ctl_rid(
		    rid, rl,
		    json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason", why, "fatal", 1));
		return;
	}
	/* the same release on both sides: the schedule a worker draws (lib/sched.c,
	 * lib/split.c) and its measurements must be the daemon's own, which the
	 * protocol numbers alone do not promise */
	if (ver && strcmp(ver, HEADROOM_VERSION) != 0) {
		char why[300];
		snprintf(why, sizeof why,
		         "version mismatch: this daemon is headroom " HEADROOM_VERSION
		         ", the agent is headroom %.40s: run the same headroom version on both "
		         "(a worker's schedule and measurements must be the daemon's own)",
		         ver);
		hlog(LOG_WARN, "agents", "refused agent '%.64s' from %s: %s\n", name ? name : "?",
		     addr, why);
		send_ctl_rid(
		    rid, rl,
		    json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason", why, "fatal", 1));
		return;
	}
	if (!name || !name_ok(name) || !host || !agentproto_name_ok(host, 255) || !ver ||
	    !agentproto_name_ok(ver, 63) || !json_is_integer(cores) ||
	    json_integer_value(cores) < 1 || json_integer_value(cores) > 1000000 ||
	    (labels && labels_ok(labels, err) < 0)) {
		hlog(LOG_WARN, "agents", "refused an agent from %s: a malformed hello\n", addr);
		send_ctl_rid(rid, rl,
		             json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason",
		                       "malformed hello (name, host, version, cores, "
		                       "labels)",
		                       "fatal", 1));
		return;
	}
	pthread_mutex_lock(&H.mu);
	/* the connection's key (ZAP's user id) is still enrolled: a revoked
	 * key's connection, still open, is refused here */
	const struct enrolled *e = enrolled_by_key(user);
	if (!e) {
		pthread_mutex_unlock(&H.mu);
		hlog(LOG_WARN, "agents",
		     "refused agent '%s' from %s: its key is not enrolled (any "
		     "more)\n",
		     name, addr);
		send_ctl_rid(rid, rl,
		             json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason",
		                       "this agent's key is not enrolled (revoked?)", "fatal", 0));
		return;
	}
	int ci = conn_by_rid(rid, rl), free_i = -1;
	for (int i = 0; i < MAX_CONNS; i++) {
		if (!H.c[i].used) {
			if (free_i < 0)
				free_i = i;
			continue;
		}
		if (i != ci && strcmp(H.c[i].name, name) == 0) {
			char why[300], other[64];
			snprintf(other, sizeof other, "%s", H.c[i].addr);
			pthread_mutex_unlock(&H.mu);
			snprintf(
			    why, sizeof why,
			    "an agent named '%s' is connected already (from %s): give each agent "
			    "its own --name",
			    name, other);
			hlog(LOG_WARN, "agents",
			     "refused a second connection named '%s' from %s: one "
			     "is connected already from %s\n",
			     name, addr, other);
			send_ctl_rid(rid, rl,
			             json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason", why,
			                       "fatal", 0));
			return;
		}
	}
	if (ci < 0)
		ci = free_i;
	if (ci < 0) {
		pthread_mutex_unlock(&H.mu);
		send_ctl_rid(rid, rl,
		             json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason",
		                       "too many agents connected", "fatal", 0));
		return;
	}
	struct conn *c = &H.c[ci];
	int fresh = !c->used;
	if (fresh) {
		c->used = 1;
		memcpy(c->rid, rid, rl);
		c->ridlen = rl;
		c->since_ms = now_ms();
	}
	c->welcomed = 1;
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->enrolled, sizeof c->enrolled, "%s", e->name);
	memcpy(c->key, e->key, sizeof c->key);
	char ename[AGENT_NAME_MAX + 1];
	snprintf(ename, sizeof ename, "%s", e->name);
	snprintf(c->host, sizeof c->host, "%s", host);
	snprintf(c->version, sizeof c->version, "%s", ver);
	snprintf(c->addr, sizeof c->addr, "%s", addr);
	c->cores = (int)json_integer_value(cores);
	json_decref(c->labels);
	c->labels = json_deep_copy(e->labels);
	if (labels)
		json_object_update_missing(c->labels, labels);
	c->last_seen = mono_ns();
	c->last_hb_ms = now_ms();
	pthread_mutex_unlock(&H.mu);
	if (fresh)
		hlog(LOG_INFO, "agents",
		     "agent '%s' connected from %s (host %s, %d cores, headroom "
		     "%s, enrolled as '%s')\n",
		     name, addr, host, (int)json_integer_value(cores), ver, ename);
	send_ctl_rid(rid, rl, json_pack("{s:s, s:s}", "type", "welcome", "enrolled", ename));
}

/* "fetch": one of the run's files (a dataset, a tokenizer) by its SHA-256,
 * sent in chunks, to a connection with a worker in the run; nothing else
 * is served */
static void on_fetch(int ci, json_t *o)
{
	const char *sha = json_string_value(json_object_get(o, "sha256"));
	struct conn *c = &H.c[ci];
	char path[4200] = "";
	pthread_mutex_lock(&H.mu);
	/* only to an agent with a worker in the current run */
	int serves = 0;
	for (int i = 0; i < HR_MAX_WORKERS && !serves; i++)
		serves = H.rw[i].used && H.rw[i].conn == ci;
	const char *p = sha && serves ? json_string_value(json_object_get(H.files, sha)) : NULL;
	if (p)
		snprintf(path, sizeof path, "%s", p);
	pthread_mutex_unlock(&H.mu);
	int fd = path[0] ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0) {
		send_ctl(c, json_pack("{s:s, s:s}", "type", "missing", "sha256", p ? sha : ""));
		return;
	}
	fetch_end(c); /* an agent asks for one file at a time */
	c->fetching = 1;
	c->ffd = fd;
	c->foff = 0;
	snprintf(c->fsha, sizeof c->fsha, "%s", sha);
}

/* The files being sent: at most FETCH_WINDOW chunks a connection per pass
 * of the hub loop, none while its queue is full (tried again on the next
 * pass). Returns 1 while a file is still being sent. */
static int fetch_pump(void)
{
	static char buf[AGENT_BLOB_CHUNK];
	int going = 0;
	for (int ci = 0; ci < MAX_CONNS; ci++) {
		struct conn *c = &H.c[ci];
		for (int k = 0; c->used && c->fetching && k < FETCH_WINDOW; k++) {
			ssize_t r = pread(c->ffd, buf, sizeof buf, (off_t)c->foff);
			if (r < 0) {
				send_ctl_f(
				    c,
				    json_pack("{s:s, s:s}", "type", "missing", "sha256", c->fsha),
				    ZMQ_DONTWAIT);
				fetch_end(c);
				break;
			}
			int last = r < (ssize_t)sizeof buf;
			json_t *h =
			    json_pack("{s:s, s:I, s:I, s:b}", "sha256", c->fsha, "offset",
			              (json_int_t)c->foff, "size", (json_int_t)r, "last", last);
			char *hs = json_dumps(h, JSON_COMPACT);
			json_decref(h);
			if (!hs)
				xalloc_die();
			/* ROUTER_MANDATORY: the first frame is refused (EAGAIN) while
			 * the connection's queue is full, and then nothing is sent */
			if (zmq_send(H.router, c->rid, c->ridlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
				free(hs);
				if (zmq_errno() != EAGAIN)
					fetch_end(c);
				break;
			}
			zmq_send(H.router, "b", 1, ZMQ_SNDMORE | ZMQ_DONTWAIT);
			zmq_send(H.router, hs, strlen(hs), ZMQ_SNDMORE | ZMQ_DONTWAIT);
			zmq_send(H.router, buf, (size_t)r, ZMQ_DONTWAIT);
			free(hs);
			c->foff += (uint64_t)r;
			if (last) {
				hlog(LOG_INFO, "agents",
				     "sent file %.12s... (%llu bytes) to agent '%s'\n", c->fsha,
				     (unsigned long long)c->foff, c->name);
				fetch_end(c);
			}
		}
		going |= c->used && c->fetching;
	}
	return going;
}

int agents_file_sha256(const char *path, char *hex)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
	char *buf = xmalloc(1 << 16);
	ssize_t r;
	while (ok && (r = read(fd, buf, 1 << 16)) > 0)
		ok = EVP_DigestUpdate(md, buf, (size_t)r) == 1;
	ok = ok && r == 0;
	free(buf);
	close(fd);
	unsigned char d[32];
	unsigned dl = 0;
	ok = ok && EVP_DigestFinal_ex(md, d, &dl) == 1 && dl == 32;
	EVP_MD_CTX_free(md);
	if (!ok)
		return -1;
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

/* A remote worker's message the run's socket did not take yet (its queue
 * full): the agent socket is not read until it goes, which slows the agents
 * down through TCP, but the hub thread goes on (hub thread only). */
static struct {
	void *d;
	int idx;
	int64_t run, since;
	zmq_msg_t f[2];
} P;

static void pending_drop(void)
{
	zmq_msg_close(&P.f[0]);
	zmq_msg_close(&P.f[1]);
	P.d = NULL;
}

/* 1 when nothing waits any more */
static int pending_send(void)
{
	if (!P.d)
		return 1;
	pthread_mutex_lock(&H.mu);
	struct rwk *w = &H.rw[P.idx];
	int live = P.run == H.run && w->dealer == P.d && w->state == AGENT_W_RUNNING;
	pthread_mutex_unlock(&H.mu);
	if (!live) {
		pending_drop();
		return 1;
	}
	if (zmq_msg_send(&P.f[0], P.d, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0) {
		zmq_msg_send(&P.f[1], P.d, ZMQ_DONTWAIT);
		pending_drop();
		return 1;
	}
	if (zmq_errno() == EAGAIN && mono_ns() - P.since < RELAY_STUCK_NS)
		return 0;
	pthread_mutex_lock(&H.mu);
	if (P.run == H.run && w->dealer == P.d && w->state == AGENT_W_RUNNING) {
		w->state = AGENT_W_LOST;
		snprintf(w->why, sizeof w->why,
		         "the run's socket took none of its messages for %lld s",
		         RELAY_STUCK_NS / 1000000000LL);
		close_worker(w);
	}
	pthread_mutex_unlock(&H.mu);
	hlog(LOG_WARN, "agents", "remote worker %d lost: the run's socket took no message\n",
	     P.idx);
	pending_drop();
	return 1;
}

/* Returns 1 when the socket was drained (a heartbeat may otherwise still
 * wait in its queue: no agent is declared lost then). */
static int from_agents(void)
{
	if (!pending_send())
		return 0;
	for (int k = 0; k < 256; k++) {
		zmq_msg_t f[5];
		int n = 0, more = 1;
		while (more) {
			zmq_msg_t m;
			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, H.router, ZMQ_DONTWAIT) < 0) {
				zmq_msg_close(&m);
				break;
			}
			more = zmq_msg_more(&m);
			if (n < 5)
				f[n++] = m;
			else {
				zmq_msg_close(&m);
				n = 6;
			}
		}
		if (n == 0)
			return 1;
		if (n > 5) {
			for (int i = 0; i < 5; i++)
				zmq_msg_close(&f[i]);
			continue;
		}
		if (n < 2 || zmq_msg_size(&f[0]) > sizeof H.c[0].rid || zmq_msg_size(&f[1]) != 1)
			goto next;
		const void *rid = zmq_msg_data(&f[0]);
		size_t rl = zmq_msg_size(&f[0]);
		char kind = *(const char *)zmq_msg_data(&f[1]);
		/* the key the message came with (ZAP's user id): a routing id's
		 * messages count only with the key that connection said hello with */
		const char *uid = zmq_msg_gets(&f[1], "User-Id");
		pthread_mutex_lock(&H.mu);
		int ci = conn_by_rid(rid, rl);
		int other = ci >= 0 && strcmp(H.c[ci].key, uid ? uid : "") != 0;
		if (ci >= 0 && !other)
			H.c[ci].last_seen = mono_ns();
		pthread_mutex_unlock(&H.mu);
		if (other) {
			hlog(LOG_WARN, "agents",
			     "dropped a message: its key %.8s... is not the key its connection "
			     "was welcomed with\n",
			     uid ? uid : "(none)");
			goto next;
		}
		if (kind == 'c' && n == 3) {
			json_t *o = json_loadb(zmq_msg_data(&f[2]), zmq_msg_size(&f[2]), 0, NULL);
			const char *t = json_string_value(json_object_get(o, "type"));
			if (!json_is_object(o) || !t) {
				json_decref(o);
				goto next;
			}
			if (strcmp(t, "hello") == 0) {
				const char *user = zmq_msg_gets(&f[2], "User-Id");
				const char *addr = zmq_msg_gets(&f[2], "Peer-Address");
				on_hello(rid, rl, o, user ? user : "", addr ? addr : "?");
			} else if (ci < 0) {
				/* not (or no longer) known: it must say hello again */
				send_ctl_rid(rid, rl, json_pack("{s:s}", "type", "who"));
			} else if (strcmp(t, "hb") == 0) {
				json_t *w = json_object_get(o, "workers");
				pthread_mutex_lock(&H.mu);
				H.c[ci].last_hb_ms = now_ms();
				if (json_is_integer(w) && json_integer_value(w) >= 0 &&
				    json_integer_value(w) <= HR_MAX_WORKERS)
					H.c[ci].in_use = (int)json_integer_value(w);
				pthread_mutex_unlock(&H.mu);
			} else if (strcmp(t, "exited") == 0) {
				json_t *run = json_object_get(o, "run"),
				       *wi = json_object_get(o, "worker");
				json_t *st = json_object_get(o, "status");
				pthread_mutex_lock(&H.mu);
				if (json_is_integer(run) && json_integer_value(run) == H.run &&
				    json_is_integer(wi) && json_integer_value(wi) >= 0 &&
				    json_integer_value(wi) < HR_MAX_WORKERS &&
				    json_is_integer(st)) {
					struct rwk *w = &H.rw[json_integer_value(wi)];
					if (w->used && w->conn == ci &&
					    w->state == AGENT_W_RUNNING) {
						w->state = AGENT_W_EXITED;
						w->status = (int)json_integer_value(st);
					}
				}
				pthread_mutex_unlock(&H.mu);
			} else if (strcmp(t, "fetch") == 0) {
				on_fetch(ci, o);
			} else if (strcmp(t, "bye") == 0) {
				/* a clean stop: gone now, not after 3 s of silence */
				pthread_mutex_lock(&H.mu);
				hlog(LOG_INFO, "agents", "agent '%s' (host %s, %s) stopped\n",
				     H.c[ci].name, H.c[ci].host, H.c[ci].addr);
				drop_conn(ci, "stopped");
				pthread_mutex_unlock(&H.mu);
			}
			json_decref(o);
		} else if (kind == 'w' && n == 5 && ci >= 0) {
			int64_t run;
			int idx;
			if (agentproto_chan(zmq_msg_data(&f[2]), zmq_msg_size(&f[2]), &run, &idx) <
			    0)
				goto next;
			pthread_mutex_lock(&H.mu);
			struct rwk *w = &H.rw[idx];
			void *d =
			    run == H.run && w->used && w->conn == ci && w->state == AGENT_W_RUNNING
			        ? w->dealer
			        : NULL;
			pthread_mutex_unlock(&H.mu);
			/* not waiting: a run's socket that does not take it now holds
			 * the message in P, and the agent socket is not read until it
			 * goes (back-pressure through TCP to the agents and their
			 * workers); the hub thread goes on */
			if (d && zmq_msg_send(&f[3], d, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0) {
				zmq_msg_send(&f[4], d, ZMQ_DONTWAIT);
			} else if (d && zmq_errno() == EAGAIN) {
				P.d = d;
				P.idx = idx;
				P.run = run;
				P.since = mono_ns();
				zmq_msg_init(&P.f[0]);
				zmq_msg_init(&P.f[1]);
				zmq_msg_move(&P.f[0], &f[3]);
				zmq_msg_move(&P.f[1], &f[4]);
				for (int i = 0; i < n; i++)
					zmq_msg_close(&f[i]);
				return 0;
			}
		}
	next:
		for (int i = 0; i < n; i++)
			zmq_msg_close(&f[i]);
	}
	return 0;
}

/* runner -> remote worker i: its two frames, to the agent */
static void from_runner(int i)
{
	for (int k = 0; k < 64; k++) {
		struct rwk *w = &H.rw[i];
		if (!w->dealer)
			return;
		zmq_msg_t f[2];
		zmq_msg_init(&f[0]);
		if (zmq_msg_recv(&f[0], w->dealer, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&f[0]);
			return;
		}
		zmq_msg_init(&f[1]);
		int ok = zmq_msg_more(&f[0]) && zmq_msg_recv(&f[1], w->dealer, ZMQ_DONTWAIT) >= 0 &&
		         !zmq_msg_more(&f[1]);
		pthread_mutex_lock(&H.mu);
		struct conn *c = w->conn >= 0 && H.c[w->conn].used ? &H.c[w->conn] : NULL;
		unsigned char rid[256];
		size_t rl = c ? c->ridlen : 0;
		if (c)
			memcpy(rid, c->rid, rl);
		pthread_mutex_unlock(&H.mu);
		if (ok && c) {
			char chan[48];
			int l = snprintf(chan, sizeof chan, "%lld:%d", (long long)H.run, i);
			if (zmq_send(H.router, rid, rl, ZMQ_SNDMORE) >= 0 &&
			    zmq_send(H.router, "w", 1, ZMQ_SNDMORE) >= 0 &&
			    zmq_send(H.router, chan, (size_t)l, ZMQ_SNDMORE) >= 0 &&
			    zmq_msg_send(&f[0], H.router, ZMQ_SNDMORE) >= 0)
				zmq_msg_send(&f[1], H.router, 0);
		}
		zmq_msg_close(&f[0]);
		zmq_msg_close(&f[1]);
	}
}

static void do_spawn(struct cmd *m)
{
	pthread_mutex_lock(&H.mu);
	if (H.run != m->run) {
		for (int i = 0; i < HR_MAX_WORKERS; i++)
			close_worker(&H.rw[i]);
		memset(H.rw, 0, sizeof H.rw);
		H.run = m->run;
		json_decref(H.files);
		H.files = json_object();
	}
	const char *fpath;
	json_t *fsha;
	json_object_foreach(m->files, fpath, fsha)
	    json_object_set_new(H.files, json_string_value(fsha), json_string(fpath));
	int ci = -1;
	for (int i = 0; i < MAX_CONNS; i++)
		if (H.c[i].used && H.c[i].welcomed && strcmp(H.c[i].name, m->conn) == 0)
			ci = i;
	json_t *ws = json_array();
	for (int k = 0; k < m->n; k++) {
		struct rwk *w = &H.rw[m->idx[k]];
		close_worker(w);
		memset(w, 0, sizeof *w);
		w->used = 1;
		w->conn = ci;
		snprintf(w->conn_name, sizeof w->conn_name, "%s", m->conn);
		if (ci < 0) {
			w->state = AGENT_W_LOST;
			snprintf(w->why, sizeof w->why,
			         "agent '%s' was gone before its workers started", m->conn);
			continue;
		}
		w->dealer = zmq_socket(H.ctx, ZMQ_DEALER);
		proto_socket_defaults(w->dealer);
		char id[16];
		int l = snprintf(id, sizeof id, "w%d", m->idx[k]);
		zmq_setsockopt(w->dealer, ZMQ_ROUTING_ID, id, (size_t)l);
		if (zmq_connect(w->dealer, m->endpoint) < 0) {
			w->state = AGENT_W_LOST;
			snprintf(w->why, sizeof w->why, "cannot relay to the run's socket: %s",
			         zmq_strerror(zmq_errno()));
			close_worker(w);
			continue;
		}
		json_array_append_new(ws, json_integer(m->idx[k]));
	}
	struct conn c = ci >= 0 ? H.c[ci] : (struct conn){0};
	pthread_mutex_unlock(&H.mu);
	if (ci >= 0 && json_array_size(ws)) {
		json_t *o = json_pack("{s:s, s:I, s:O}", "type", "spawn", "run", (json_int_t)m->run,
		                      "workers", ws);
		if (m->api_key)
			json_object_set_new(o, "api_key", json_string(m->api_key));
		if (json_object_size(m->files))
			json_object_set(o, "files", m->files);
		send_ctl(&c, o); /* CURVE: encrypted on the wire */
	}
	json_decref(ws);
}

static void do_end(struct cmd *m)
{
	pthread_mutex_lock(&H.mu);
	int told[MAX_CONNS] = {0};
	if (H.run == m->run) {
		for (int i = 0; i < HR_MAX_WORKERS; i++) {
			struct rwk *w = &H.rw[i];
			if (w->used && w->conn >= 0 && H.c[w->conn].used && !told[w->conn]) {
				told[w->conn] = 1;
				struct conn c = H.c[w->conn];
				send_ctl(&c, json_pack("{s:s, s:I}", "type", "kill", "run",
				                       (json_int_t)m->run));
			}
			close_worker(w);
		}
		memset(H.rw, 0, sizeof H.rw);
		H.run = 0;
		json_decref(H.files);
		H.files = NULL;
	}
	pthread_mutex_unlock(&H.mu);
}

static void free_cmd(struct cmd *m)
{
	json_decref(m->files);
	if (m->api_key) {
		explicit_bzero(m->api_key, strlen(m->api_key));
		free(m->api_key);
	}
	free(m);
}

static void run_commands(void)
{
	uint64_t v;
	if (read(H.evfd, &v, sizeof v) < 0 && errno != EAGAIN)
		return;
	for (;;) {
		pthread_mutex_lock(&H.mu);
		struct cmd *m = H.q;
		if (m) {
			H.q = m->next;
			if (!H.q)
				H.qtail = &H.q;
		}
		pthread_mutex_unlock(&H.mu);
		if (!m)
			return;
		if (m->kind == CMD_SPAWN)
			do_spawn(m);
		else
			do_end(m);
		free_cmd(m);
	}
}

/* Heartbeats and refusals are sent after H.mu is released, without
 * waiting: an agent that does not read its socket neither holds the lock
 * (the API waits on it) nor the hub thread. */
static void housekeeping(int64_t now, int drained, int64_t *last_hb, int64_t *last_reload)
{
	static struct conn out[MAX_CONNS]; /* hub thread only; rid and a kind in used */
	int nout = 0;
	int reloaded = 0;
	if (now - *last_reload > RELOAD_NS) {
		reloaded = reload();
		*last_reload = now;
	}
	pthread_mutex_lock(&H.mu);
	if (reloaded) {
		for (int i = 0; i < MAX_CONNS; i++)
			if (H.c[i].used && !enrolled_by_key(H.c[i].key)) {
				hlog(LOG_WARN, "agents",
				     "agent '%s' dropped: its enrolment '%s' was "
				     "revoked\n",
				     H.c[i].name, H.c[i].enrolled);
				out[nout] = (struct conn){.used = 'r', .ridlen = H.c[i].ridlen};
				memcpy(out[nout++].rid, H.c[i].rid, H.c[i].ridlen);
				drop_conn(i, "was revoked");
			}
	}
	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &H.c[i];
		if (!c->used)
			continue;
		if (drained && now - c->last_seen > AGENT_LOST_NS) {
			char why[96];
			snprintf(why, sizeof why, "was lost: no heartbeat for %.1f s",
			         (double)(now - c->last_seen) / 1e9);
			hlog(LOG_WARN, "agents", "agent '%s' (host %s, %s) %s\n", c->name, c->host,
			     c->addr, why);
			drop_conn(i, why);
		} else if (now - *last_hb > AGENT_HB_NS && nout < MAX_CONNS) {
			out[nout] = (struct conn){.used = 'h', .ridlen = c->ridlen};
			memcpy(out[nout++].rid, c->rid, c->ridlen);
		}
	}
	if (now - *last_hb > AGENT_HB_NS)
		*last_hb = now;
	pthread_mutex_unlock(&H.mu);
	for (int i = 0; i < nout; i++)
		send_ctl_f(&out[i],
		           out[i].used == 'r'
		               ? json_pack("{s:s, s:s, s:b}", "type", "refuse", "reason",
		                           "this agent's enrolment was revoked", "fatal", 0)
		               : json_pack("{s:s}", "type", "hb"),
		           ZMQ_DONTWAIT);
}

static void *hub_main(void *arg)
{
	(void)arg;
	int64_t last_hb = 0, last_reload = 0;
	int fetching = 0;
	while (!atomic_load(&H.stop)) {
		zmq_pollitem_t pi[3 + HR_MAX_WORKERS];
		int map[HR_MAX_WORKERS];
		int np = 0;
		pi[np++] = (zmq_pollitem_t){H.router, 0, ZMQ_POLLIN, 0};
		pi[np++] = (zmq_pollitem_t){H.zap, 0, ZMQ_POLLIN, 0};
		pi[np++] = (zmq_pollitem_t){NULL, H.evfd, ZMQ_POLLIN, 0};
		for (int i = 0; i < HR_MAX_WORKERS; i++)
			if (H.rw[i].dealer) {
				map[np - 3] = i;
				pi[np++] = (zmq_pollitem_t){H.rw[i].dealer, 0, ZMQ_POLLIN, 0};
			}
		zmq_poll(pi, np, fetching ? 1 : 100);
		if (pi[1].revents)
			zap_answer();
		if (pi[2].revents)
			run_commands();
		int drained = from_agents();
		for (int k = 3; k < np; k++)
			if (pi[k].revents)
				from_runner(map[k - 3]);
		fetching = fetch_pump();
		housekeeping(mono_ns(), drained, &last_hb, &last_reload);
	}
	for (int i = 0; i < MAX_CONNS; i++)
		fetch_end(&H.c[i]);
	if (P.d)
		pending_drop();
	return NULL;
}

static void post(struct cmd *m)
{
	pthread_mutex_lock(&H.mu);
	m->next = NULL;
	*H.qtail = m;
	H.qtail = &m->next;
	pthread_mutex_unlock(&H.mu);
	uint64_t one = 1;
	if (write(H.evfd, &one, sizeof one) < 0)
		hlog(LOG_ERROR, "agents", "cannot wake the agent hub: %s\n", strerror(errno));
}

int agents_start(struct store *s, const struct agents_opts *o, char *err)
{
	if (!zmq_has("curve"))
		return errf(err, "--agent-listen: this libzmq has no CURVE support");
	char sec[CURVEKEY_Z85], path[1100];
	snprintf(path, sizeof path, "%s.key", o->key);
	if (curvekey_read(path, sec, err) < 0)
		return -1;
	H.store = s;
	snprintf(H.data_dir, sizeof H.data_dir, "%s", o->data_dir);
	snprintf(H.listen, sizeof H.listen, "%s", o->listen);
	H.qtail = &H.q;
	H.ctx = zmq_ctx_new();
	/* the ZAP handler first: without it CURVE would let any key in */
	H.zap = zmq_socket(H.ctx, ZMQ_REP);
	int zero = 0, one = 1, tmo = 5000;
	zmq_setsockopt(H.zap, ZMQ_LINGER, &zero, sizeof zero);
	if (zmq_bind(H.zap, ZAP_EP) < 0) {
		errf(err, "cannot bind the ZAP handler: %s", zmq_strerror(zmq_errno()));
		goto fail;
	}
	H.router = zmq_socket(H.ctx, ZMQ_ROUTER);
	proto_socket_defaults(H.router);
	int64_t maxmsg = HR_MAX_PROTO_MSG + 4096;
	zmq_setsockopt(H.router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
	zmq_setsockopt(H.router, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
	zmq_setsockopt(H.router, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
	zmq_setsockopt(H.router, ZMQ_CURVE_SERVER, &one, sizeof one);
	zmq_setsockopt(H.router, ZMQ_CURVE_SECRETKEY, sec, 40);
	zmq_setsockopt(H.router, ZMQ_ZAP_DOMAIN, "headroom", 8);
	int hb = 1000, hbt = 3000;
	zmq_setsockopt(H.router, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
	zmq_setsockopt(H.router, ZMQ_HEARTBEAT_TIMEOUT, &hbt, sizeof hbt);
	/* a connection not through its CURVE handshake in 3 s is closed (libzmq
	 * waits 30 s): half-open ones hold descriptors no longer */
	int hs = 3000;
	zmq_setsockopt(H.router, ZMQ_HANDSHAKE_IVL, &hs, sizeof hs);
	explicit_bzero(sec, sizeof sec);
	if (zmq_bind(H.router, o->listen) < 0) {
		errf(err, "--agent-listen %s: %s", o->listen, zmq_strerror(zmq_errno()));
		goto fail;
	}
	H.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	reload();
	if (pthread_create(&H.thread, NULL, hub_main, NULL) != 0) {
		errf(err, "cannot start the agent hub thread");
		close(H.evfd);
		goto fail;
	}
	H.started = 1;
	hlog(LOG_INFO, "agents", "agents connect to %s (CURVE, %d enrolled)\n", o->listen, H.ne);
	return 0;
fail:
	if (H.router)
		zmq_close(H.router);
	if (H.zap)
		zmq_close(H.zap);
	zmq_ctx_term(H.ctx);
	H.router = H.zap = H.ctx = NULL;
	return -1;
}

void agents_stop(void)
{
	if (!H.started)
		return;
	atomic_store(&H.stop, 1);
	pthread_join(H.thread, NULL);
	pthread_mutex_lock(&H.mu);
	H.started = 0;
	for (int i = 0; i < HR_MAX_WORKERS; i++)
		close_worker(&H.rw[i]);
	for (int i = 0; i < MAX_CONNS; i++)
		json_decref(H.c[i].labels);
	memset(H.c, 0, sizeof H.c);
	for (int i = 0; i < H.ne; i++)
		json_decref(H.e[i].labels);
	H.ne = 0;
	json_decref(H.files);
	H.files = NULL;
	while (H.q) {
		struct cmd *m = H.q;
		H.q = m->next;
		free_cmd(m);
	}
	pthread_mutex_unlock(&H.mu);
	zmq_close(H.router);
	zmq_close(H.zap);
	zmq_ctx_term(H.ctx);
	close(H.evfd);
}

/* --- the runner's side ------------------------------------------------------------------- */

static int selects(const json_t *sel, const json_t *labels)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)sel, k, v)
	{
		const char *have = json_string_value(json_object_get(labels, k));
		if (!have || strcmp(have, json_string_value(v)) != 0)
			return 0;
	}
	return 1;
}

static int pick_cmp(const void *a, const void *b)
{
	return strcmp(((const struct agent_pick *)a)->conn, ((const struct agent_pick *)b)->conn);
}

int agents_place(const struct spec_placement *pl, struct agent_pick *out, int max, char *why)
{
	if (pl->n_agents == 0)
		return 0;
	if (!H.started)
		return errf(why, "placement.agents: this daemon takes no agents (start it with "
		                 "--agent-listen and --agent-key)");
	int n = 0;
	pthread_mutex_lock(&H.mu);
	int64_t now = mono_ns();
	for (int e = 0; e < pl->n_agents; e++) {
		int found = 0;
		for (int i = 0; i < MAX_CONNS; i++) {
			const struct conn *c = &H.c[i];
			if (!c->used || !c->welcomed || now - c->last_seen > AGENT_LOST_NS ||
			    !selects(pl->agents[e].selector, c->labels))
				continue;
			found++;
			int k;
			for (k = 0; k < n && strcmp(out[k].conn, c->name) != 0; k++)
				;
			if (k == n) {
				if (n == max) {
					pthread_mutex_unlock(&H.mu);
					return errf(why, "placement: more than %d agents selected",
					            max);
				}
				snprintf(out[n].conn, sizeof out[n].conn, "%s", c->name);
				snprintf(out[n].host, sizeof out[n].host, "%s", c->host);
				snprintf(out[n].version, sizeof out[n].version, "%s", c->version);
				out[n].cores = c->cores;
				out[n++].workers = 0;
			}
			out[k].workers += pl->agents[e].workers;
		}
		if (!found) {
			pthread_mutex_unlock(&H.mu);
			char *sel =
			    json_dumps(pl->agents[e].selector, JSON_COMPACT | JSON_SORT_KEYS);
			errf(why,
			     "placement.agents[%d]: no connected agent matches the selector %s "
			     "(GET /api/v1/agents lists them)",
			     e, sel ? sel : "?");
			free(sel);
			return -1;
		}
	}
	pthread_mutex_unlock(&H.mu);
	qsort(out, (size_t)n, sizeof *out, pick_cmp);
	return n;
}

int agents_spawn(int64_t run, const char *endpoint, const char *conn, const int *idx, int n,
                 const char *api_key, json_t *files, char *err)
{
	if (!H.started)
		return errf(err, "this daemon takes no agents");
	if (n <= 0 || n > HR_MAX_WORKERS || strlen(endpoint) >= sizeof((struct cmd *)0)->endpoint)
		return errf(err, "bad spawn");
	struct cmd *m = xcalloc(1, sizeof *m);
	m->kind = CMD_SPAWN;
	m->run = run;
	snprintf(m->endpoint, sizeof m->endpoint, "%s", endpoint);
	snprintf(m->conn, sizeof m->conn, "%s", conn);
	m->n = n;
	memcpy(m->idx, idx, (size_t)n * sizeof *idx);
	m->api_key = api_key ? xstrdup(api_key) : NULL;
	m->files = files ? json_deep_copy(files) : json_object();
	/* the table says "running" from now on, until the hub says otherwise */
	pthread_mutex_lock(&H.mu);
	if (H.run != run) {
		for (int i = 0; i < HR_MAX_WORKERS; i++)
			if (H.rw[i].used && !H.rw[i].dealer)
				memset(&H.rw[i], 0, sizeof H.rw[i]);
	}
	pthread_mutex_unlock(&H.mu);
	post(m);
	return 0;
}

int agents_worker_state(int64_t run, int idx, int *status, char *why, size_t n)
{
	pthread_mutex_lock(&H.mu);
	int st = AGENT_W_RUNNING;
	if (H.run == run && idx >= 0 && idx < HR_MAX_WORKERS && H.rw[idx].used) {
		st = H.rw[idx].state;
		*status = H.rw[idx].status;
		snprintf(why, n, "%s", H.rw[idx].why);
	}
	pthread_mutex_unlock(&H.mu);
	return st;
}

int agents_worker_host(int64_t run, int idx, char *conn, size_t n)
{
	int rc = -1;
	pthread_mutex_lock(&H.mu);
	if (H.run == run && idx >= 0 && idx < HR_MAX_WORKERS && H.rw[idx].used) {
		snprintf(conn, n, "%s", H.rw[idx].conn_name);
		rc = 0;
	}
	pthread_mutex_unlock(&H.mu);
	return rc;
}

void agents_end_run(int64_t run)
{
	if (!H.started)
		return;
	struct cmd *m = xcalloc(1, sizeof *m);
	m->kind = CMD_END;
	m->run = run;
	post(m);
}

/* --- headroomd agent ... / keygen ------------------------------------------------------- */

static void agent_usage(FILE *f)
{
	fputs("usage: headroomd agent enroll [--data DIR] --name NAME --key Z85PUB [--labels "
	      "k=v,...]\n"
	      "       headroomd agent list [--data DIR]\n"
	      "       headroomd agent revoke [--data DIR] NAME\n"
	      "       headroomd keygen PREFIX\n"
	      "An agent's key comes from `headroom-agent keygen PREFIX` (PREFIX.pub);\n"
	      "the daemon's from `headroomd keygen PREFIX` (--agent-key PREFIX).\n",
	      f);
}

int agents_keygen_command(int argc, char **argv)
{
	if (argc != 1 || argv[0][0] == '-') {
		agent_usage(argc == 1 ? stdout : stderr);
		return argc == 1 && strcmp(argv[0], "--help") == 0 ? 0 : 2;
	}
	char err[HR_ERRLEN], pub[CURVEKEY_Z85];
	if (curvekey_generate(argv[0], pub, err) < 0) {
		fprintf(stderr, "headroomd keygen: %s\n", err);
		return 1;
	}
	printf("%s\n", pub);
	fprintf(stderr, "wrote %s.pub and %s.key (give agents the .pub: --server-key)\n", argv[0],
	        argv[0]);
	return 0;
}

int agents_command(int argc, char **argv)
{
	const char *data = "headroom-data", *name = NULL, *key = NULL, *labels = NULL;
	if (argc < 1 || strcmp(argv[0], "--help") == 0) {
		agent_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 0;
	}
	const char *cmd = argv[0];
	if (strcmp(cmd, "enroll") != 0 && strcmp(cmd, "list") != 0 && strcmp(cmd, "revoke") != 0) {
		fprintf(stderr, "headroomd agent: unknown command '%s'\n", cmd);
		agent_usage(stderr);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-' && strcmp(cmd, "revoke") == 0 && !name) {
			name = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "headroomd agent %s: %s needs a value (or is unknown)\n",
			        cmd, a);
			return 2;
		}
		if (strcmp(a, "--data") == 0)
			data = v;
		else if (strcmp(a, "--name") == 0 && strcmp(cmd, "enroll") == 0)
			name = v;
		else if (strcmp(a, "--key") == 0 && strcmp(cmd, "enroll") == 0)
			key = v;
		else if (strcmp(a, "--labels") == 0 && strcmp(cmd, "enroll") == 0)
			labels = v;
		else {
			fprintf(stderr, "headroomd agent %s: unknown option %s\n", cmd, a);
			return 2;
		}
		i++;
	}
	if ((strcmp(cmd, "enroll") == 0 && (!name || !key)) ||
	    (strcmp(cmd, "revoke") == 0 && !name)) {
		fprintf(stderr, "headroomd agent %s: %s\n", cmd,
		        strcmp(cmd, "enroll") == 0 ? "--name and --key are required"
		                                   : "say which agent (NAME)");
		return 2;
	}
	char err[HR_ERRLEN], field[32];
	json_t *lab = json_object();
	if (labels && agents_parse_labels(labels, lab, err) < 0) {
		fprintf(stderr, "headroomd agent enroll: --labels: %s\n", err);
		json_decref(lab);
		return 2;
	}
	struct store *s = NULL;
	struct store_opts so = {.readers = 1, .exports = 1};
	if (strcmp(cmd, "enroll") != 0 ? store_open_existing(data, "agent", &s) < 0
	                               : store_open(data, &so, &s, err) < 0) {
		if (strcmp(cmd, "enroll") == 0)
			fprintf(stderr, "headroomd agent: %s\n", err);
		json_decref(lab);
		return 1;
	}
	int status = 0;
	if (strcmp(cmd, "enroll") == 0) {
		int rc = agents_enroll(s, name, key, lab, NULL, field, err);
		if (rc < 0) {
			fprintf(stderr, "headroomd agent enroll: %s\n", err);
			status = rc == -1 ? 1 : 2;
		} else {
			fprintf(stderr, "agent '%s' enrolled\n", name);
		}
	} else if (strcmp(cmd, "revoke") == 0) {
		int rc = agents_revoke(s, name, err);
		if (rc < 0) {
			fprintf(stderr, "headroomd agent revoke: %s\n", err);
			status = rc == -1 ? 1 : 2;
		} else {
			fprintf(stderr,
			        "agent '%s' revoked (a running daemon drops its connections "
			        "within seconds)\n",
			        name);
		}
	} else {
		json_t *out;
		if (agents_list(s, &out, err) < 0) {
			fprintf(stderr, "headroomd agent list: %s\n", err);
			status = 1;
		} else {
			size_t i;
			json_t *a;
			printf("%-24s %-40s %s\n", "NAME", "PUBLIC KEY", "LABELS");
			json_array_foreach(json_object_get(out, "agents"), i, a)
			{
				char *l = json_dumps(json_object_get(a, "labels"),
				                     JSON_COMPACT | JSON_SORT_KEYS);
				printf("%-24s %-40s %s\n",
				       json_string_value(json_object_get(a, "name")),
				       json_string_value(json_object_get(a, "public_key")),
				       l ? l : "{}");
				free(l);
			}
			json_decref(out);
		}
	}
	json_decref(lab);
	store_free(s);
	return status;
}
