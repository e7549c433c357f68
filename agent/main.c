/* main.c - headroom-agent: a load host's long-running agent (docs/agents.md).
 *
 * It keeps one CURVE-authenticated ZeroMQ DEALER connection to headroomd's
 * agent socket (--agent-listen), announces itself (name, host, cores,
 * version, labels), heartbeats, and on the daemon's order starts local
 * headroom-worker processes for a run. Its workers connect to a ROUTER of
 * the agent's own (an abstract ipc socket); the agent relays their
 * messages to the daemon and the daemon's to them, unchanged, so the
 * daemon's runner speaks the worker protocol with them as with its own
 * (clock exchanges included: the worker answers on its own clock),
 * except that a SCHEDULE's dataset and tokenizer paths become those of
 * the agent's cache, the SCHEDULE held until each file, asked for by its
 * SHA-256, is there. One thread, one zmq_poll loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>

#include <openssl/evp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "agentproto.h"
#include "curvekey.h"
#include "hrlimits.h"
#include "proto.h"
#include "util.h"

extern char **environ;

#define APATH_MAX 4096

struct slot {
	pid_t pid; /* 0: free */
	int64_t run;
	int held; /* its SCHEDULE waits for its files */
	zmq_msg_t hold_hdr;
	char *hold_json;  /* the SCHEDULE, paths already rewritten */
	char need[2][65]; /* the files it waits for (SHA-256) */
	int nneed;
	int exit_pending; /* reaped; "exited" goes once its messages are relayed */
	int exit_status;
};

struct fetch { /* the dataset being fetched, one at a time */
	char sha[65];
	int active;
	int fd;
	uint64_t got;
	char tmp[APATH_MAX];
};

struct agent {
	void *ctx, *up, *wk, *mon; /* mon: the link's handshake events */
	int n_links, refused_logged, relink;
	const char *connect;
	char pub[CURVEKEY_Z85], sec[CURVEKEY_Z85], srv[CURVEKEY_Z85];
	char name[AGENT_NAME_MAX + 1], host[256];
	json_t *labels;
	char cache[APATH_MAX - 200];
	char wk_dir[96], wk_ep[128];
	char *worker_bin;
	int welcomed;
	int64_t last_rx, last_hello, last_hb, next_try;
	struct slot w[HR_MAX_WORKERS];
	json_t *files;    /* the run's files: daemon path -> SHA-256 (spawn order) */
	json_t *verified; /* cached files hashed by this process: SHA-256 -> true */
	struct fetch f;
	int sfd;
	int quit;
	int queue;       /* --queue: messages the link holds before the workers wait */
	int sndbuf;      /* --send-buffer: the link's kernel send buffer (0: the system's) */
	int drained;     /* the workers' socket was read empty on the last pass */
	int64_t stalled; /* since when the link has taken no more (0: it takes them) */
	struct {         /* a worker's message the link did not take: it goes first */
		int held;
		long idx;
		int64_t run;
		zmq_msg_t hdr, body;
	} pend;
};

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("headroom-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fputs("usage: headroom-agent keygen PREFIX\n"
	      "       headroom-agent --connect tcp://HOST:PORT --key PREFIX --server-key FILE\n"
	      "                      [--name NAME] [--labels k=v,k=v] [--cache DIR]\n"
	      "                      [--worker-bin PATH] [--queue N] [--send-buffer BYTES]\n"
	      "\n"
	      "A load host's agent for headroomd (docs/agents.md): it keeps one ZeroMQ\n"
	      "CURVE connection to the daemon's --agent-listen address, and starts\n"
	      "headroom-worker processes for the runs placed on it, relaying their\n"
	      "messages.\n"
	      "\n"
	      "  keygen PREFIX      write PREFIX.pub (public key) and PREFIX.key (secret, 0600)\n"
	      "  --connect          the daemon's --agent-listen address\n"
	      "  --key PREFIX       this agent's key pair (PREFIX.key is read)\n"
	      "  --server-key FILE  the daemon's public key (its .pub file)\n"
	      "  --name NAME        the name announced (default: the host name)\n"
	      "  --labels k=v,...   labels a run's placement selects agents by\n"
	      "  --cache DIR        files by SHA-256 (default $XDG_CACHE_HOME/headroom-agent,\n"
	      "                     else /var/cache/headroom-agent)\n"
	      "  --worker-bin PATH  the headroom-worker to start (default: beside this program)\n"
	      "  --queue N          workers' messages held for a slow link before the agent\n"
	      "                     stops reading them (default 10000; none is dropped)\n"
	      "  --send-buffer BYTES  the link's socket send buffer (default: the system's);\n"
	      "                     smaller keeps heartbeats from waiting behind records\n"
	      "  --help             this text\n"
	      "  --version          print the version\n",
	      f);
}

/* --- sending ----------------------------------------------------------------------- */

static int send_ctl(struct agent *a, json_t *o, int flags)
{
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		xalloc_die();
	int rc = -1;
	if (a->up && zmq_send(a->up, "c", 1, ZMQ_SNDMORE | flags) >= 0 &&
	    zmq_send(a->up, s, strlen(s), flags) >= 0)
		rc = 0;
	free(s);
	return rc;
}

static void send_hello(struct agent *a)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	json_t *o =
	    json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:i, s:O, s:i}", "type", "hello", "protocol",
	              AGENT_PROTO_VERSION, "worker_protocol", PROTO_VERSION, "version",
	              HEADROOM_VERSION, "name", a->name, "host", a->host, "cores",
	              (int)(cores > 0 ? cores : 1), "labels", a->labels, "pid", (int)getpid());
	send_ctl(a, o, ZMQ_DONTWAIT);
	a->last_hello = mono_ns();
}

static int in_use(const struct agent *a)
{
	int n = 0;
	for (int i = 0; i < HR_MAX_WORKERS; i++)
		n += a->w[i].pid > 0;
	return n;
}

/* --- the link ---------------------------------------------------------------------- */

static void free_hold(struct slot *s)
{
	if (s->held) {
		zmq_msg_close(&s->hold_hdr);
		free(s->hold_json);
		s->hold_json = NULL;
		s->held = 0;
	}
}

static void kill_workers(struct agent *a, int64_t run)
{
	for (int i = 0; i < HR_MAX_WORKERS; i++)
		if (a->w[i].pid > 0 && (run == 0 || a->w[i].run == run)) {
			kill(a->w[i].pid, SIGKILL);
			free_hold(&a->w[i]);
		}
}

static void link_open(struct agent *a)
{
	a->up = zmq_socket(a->ctx, ZMQ_DEALER);
	int one = 1, zero = 0, hwm = a->queue, tmo = 2000;
	int64_t maxmsg = HR_MAX_PROTO_MSG + AGENT_BLOB_CHUNK + 4096;
	zmq_setsockopt(a->up, ZMQ_LINGER, &zero, sizeof zero);
	zmq_setsockopt(a->up, ZMQ_SNDHWM, &hwm, sizeof hwm);
	zmq_setsockopt(a->up, ZMQ_RCVHWM, &hwm, sizeof hwm);
	zmq_setsockopt(a->up, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
	zmq_setsockopt(a->up, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
	if (a->sndbuf)
		zmq_setsockopt(a->up, ZMQ_SNDBUF, &a->sndbuf, sizeof a->sndbuf);
	zmq_setsockopt(a->up, ZMQ_IMMEDIATE, &one, sizeof one);
	zmq_setsockopt(a->up, ZMQ_CURVE_SERVERKEY, a->srv, 40);
	zmq_setsockopt(a->up, ZMQ_CURVE_PUBLICKEY, a->pub, 40);
	zmq_setsockopt(a->up, ZMQ_CURVE_SECRETKEY, a->sec, 40);
	int ivl = 500, ivl_max = 10000, hb = 1000, hbt = 3000;
	zmq_setsockopt(a->up, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
	zmq_setsockopt(a->up, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
	zmq_setsockopt(a->up, ZMQ_HEARTBEAT_IVL, &hb, sizeof hb);
	zmq_setsockopt(a->up, ZMQ_HEARTBEAT_TIMEOUT, &hbt, sizeof hbt);
	/* a refused key shows only as a handshake event: watch for it */
	char mon[64];
	snprintf(mon, sizeof mon, "inproc://link-events-%d", ++a->n_links);
	zmq_socket_monitor(a->up, mon,
	                   ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
	                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
	if (a->mon)
		zmq_close(a->mon);
	a->mon = zmq_socket(a->ctx, ZMQ_PAIR);
	zmq_setsockopt(a->mon, ZMQ_LINGER, &zero, sizeof zero);
	zmq_connect(a->mon, mon);
	if (zmq_connect(a->up, a->connect) < 0) {
		logf_("cannot connect to %s: %s\n", a->connect, zmq_strerror(zmq_errno()));
		exit(2);
	}
	a->welcomed = 0;
	a->last_rx = mono_ns();
	send_hello(a);
}

static void drop_pending(struct agent *a);

/* The daemon is gone (silent, or it no longer knows this connection): the
 * workers of its run go too, and a new connection starts over. */
static void link_reset(struct agent *a, const char *why)
{
	logf_("%s; connecting anew to %s\n", why, a->connect);
	kill_workers(a, 0);
	if (a->f.active) {
		close(a->f.fd);
		unlink(a->f.tmp);
		a->f.active = 0;
	}
	drop_pending(a);
	a->stalled = 0;
	zmq_close(a->up);
	a->up = NULL;
	link_open(a);
}

/* --- files by content hash (datasets, tokenizers) -------------------------------------- */

static int hex64(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static void cache_path(const struct agent *a, const char *sha, char *out, size_t n)
{
	snprintf(out, n, "%s/files/%s", a->cache, sha);
}

static int file_sha256(const char *path, char *hex);

/* Whether the cache holds the file: the first time this process uses a
 * cached copy it is hashed again (a file damaged on disk, or put there by
 * hand, is removed and fetched anew, never sent to a worker). */
static int cached(struct agent *a, const char *sha)
{
	char p[APATH_MAX], hex[65] = "";
	struct stat st;
	cache_path(a, sha, p, sizeof p);
	if (stat(p, &st) != 0)
		return 0;
	if (json_object_get(a->verified, sha))
		return 1;
	if (file_sha256(p, hex) == 0 && strcmp(hex, sha) == 0) {
		json_object_set_new(a->verified, sha, json_true());
		return 1;
	}
	logf_("the cached file %.12s... does not have its SHA-256: removed, to be fetched anew\n",
	      sha);
	unlink(p);
	return 0;
}

/* The SHA-256 of a file, in hex; 0 or -1. */
static int file_sha256(const char *path, char *hex)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	static unsigned char buf[1 << 16];
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0)
		EVP_DigestUpdate(md, buf, (size_t)r);
	close(fd);
	unsigned char d[32];
	unsigned dl = 0;
	EVP_DigestFinal_ex(md, d, &dl);
	EVP_MD_CTX_free(md);
	if (r < 0)
		return -1;
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

static void send_to_worker(struct agent *a, int idx, zmq_msg_t *hdr, const void *p, size_t n)
{
	char rid[16];
	int l = snprintf(rid, sizeof rid, "w%d", idx);
	if (zmq_send(a->wk, rid, (size_t)l, ZMQ_SNDMORE) < 0 ||
	    zmq_msg_send(hdr, a->wk, ZMQ_SNDMORE) < 0 || zmq_send(a->wk, p, n, 0) < 0)
		logf_("cannot pass a message to worker %d: %s\n", idx, zmq_strerror(zmq_errno()));
}

/* held SCHEDULEs whose files are all cached go; those needing sha fail when !ok */
static void release_held(struct agent *a, const char *sha, int ok, const char *why)
{
	for (int i = 0; i < HR_MAX_WORKERS; i++) {
		struct slot *s = &a->w[i];
		if (!s->held)
			continue;
		int needs = 0, all = 1;
		for (int k = 0; k < s->nneed; k++) {
			needs |= strcmp(s->need[k], sha) == 0;
			all &= cached(a, s->need[k]);
		}
		if (ok && all) {
			send_to_worker(a, i, &s->hold_hdr, s->hold_json, strlen(s->hold_json));
			free_hold(s);
		} else if (!ok && needs) {
			/* the worker cannot run: say so as it would (FAIL), then stop it */
			json_t *o = json_pack("{s:s}", "message", why);
			char *t = json_dumps(o, JSON_COMPACT);
			json_decref(o);
			unsigned char hdr[2] = {PROTO_VERSION, PROTO_FAIL};
			char chan[48];
			int l = snprintf(chan, sizeof chan, "%lld:%d", (long long)s->run, i);
			zmq_send(a->up, "w", 1, ZMQ_SNDMORE);
			zmq_send(a->up, chan, (size_t)l, ZMQ_SNDMORE);
			zmq_send(a->up, hdr, 2, ZMQ_SNDMORE);
			zmq_send(a->up, t, strlen(t), 0);
			free(t);
			kill(s->pid, SIGKILL);
			free_hold(s);
		}
	}
}

static void fetch_start(struct agent *a, const char *sha)
{
	if (a->f.active)
		return; /* one at a time: the next is asked for when this one ends */
	char dir[APATH_MAX];
	snprintf(dir, sizeof dir, "%s/files", a->cache);
	mkdir(dir, 0700);
	snprintf(a->f.tmp, sizeof a->f.tmp, "%s/files/.%s.part", a->cache, sha);
	a->f.fd = open(a->f.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (a->f.fd < 0) {
		logf_("cannot write %s: %s\n", a->f.tmp, strerror(errno));
		release_held(a, sha, 0, "the agent cannot write its file cache");
		return;
	}
	snprintf(a->f.sha, sizeof a->f.sha, "%s", sha);
	a->f.active = 1;
	a->f.got = 0;
	send_ctl(a, json_pack("{s:s, s:s}", "type", "fetch", "sha256", sha), 0);
	logf_("fetching file %.12s... from the daemon\n", sha);
}

/* another file some held SCHEDULE waits for */
static void fetch_next(struct agent *a)
{
	for (int i = 0; i < HR_MAX_WORKERS && !a->f.active; i++)
		for (int k = 0; k < a->w[i].nneed && a->w[i].held && !a->f.active; k++)
			if (!cached(a, a->w[i].need[k]))
				fetch_start(a, a->w[i].need[k]);
}

static void fetch_end(struct agent *a, int ok, const char *why)
{
	char sha[65];
	snprintf(sha, sizeof sha, "%s", a->f.sha);
	int good = ok && fsync(a->f.fd) == 0;
	close(a->f.fd);
	a->f.active = 0;
	char hex[65] = "", final[APATH_MAX];
	if (good && (file_sha256(a->f.tmp, hex) < 0 || strcmp(hex, sha) != 0)) {
		good = 0;
		why = "the file received does not have its SHA-256";
	}
	cache_path(a, sha, final, sizeof final);
	if (good && rename(a->f.tmp, final) != 0) {
		good = 0;
		why = "cannot store the file in the cache";
	}
	if (!good)
		unlink(a->f.tmp);
	else
		json_object_set_new(a->verified, sha, json_true()); /* hashed on arrival */
	logf_("file %.12s... %s%s\n", sha, good ? "cached" : "not cached: ", good ? "" : why);
	release_held(a, sha, good, why);
	fetch_next(a);
}

/* "b" from the daemon: a chunk of the file being fetched */
static void on_blob(struct agent *a, zmq_msg_t *f, int n)
{
	if (n != 3 || !a->f.active)
		return;
	json_t *j = json_loadb(zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), 0, NULL);
	const char *sha = json_string_value(json_object_get(j, "sha256"));
	json_t *off = json_object_get(j, "offset");
	int last = json_is_true(json_object_get(j, "last"));
	if (!sha || strcmp(sha, a->f.sha) != 0 || !json_is_integer(off) ||
	    (uint64_t)json_integer_value(off) != a->f.got) {
		json_decref(j);
		fetch_end(a, 0, "the daemon's file chunks came out of order");
		return;
	}
	json_decref(j);
	size_t len = zmq_msg_size(&f[2]);
	if (len && write(a->f.fd, zmq_msg_data(&f[2]), len) != (ssize_t)len) {
		fetch_end(a, 0, "cannot write the file cache");
		return;
	}
	a->f.got += len;
	if (last)
		fetch_end(a, 1, NULL);
}

/* A path of the daemon's host in a SCHEDULE: when the spawn order named
 * it, it becomes the cached copy's (noted in need when not there yet). */
static void localise(struct agent *a, json_t *parent, const char *key, struct slot *s)
{
	const char *path = json_string_value(json_object_get(parent, key));
	const char *sha = path ? json_string_value(json_object_get(a->files, path)) : NULL;
	if (!sha || !hex64(sha) || s->nneed >= 2)
		return;
	char local[APATH_MAX];
	cache_path(a, sha, local, sizeof local);
	if (!cached(a, sha))
		snprintf(s->need[s->nneed++], sizeof s->need[0], "%s", sha);
	json_object_set_new(parent, key, json_string(local));
}

/* A SCHEDULE for worker idx: its dataset and tokenizer paths become the
 * cached copies', fetched first if need be (asked once, then reused).
 * Returns 1 when the message was taken (held or sent), 0 when it goes as
 * it is. */
static int schedule_files(struct agent *a, int idx, zmq_msg_t *hdr, zmq_msg_t *body)
{
	if (!json_object_size(a->files))
		return 0;
	json_t *j = json_loadb(zmq_msg_data(body), zmq_msg_size(body), 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return 0;
	}
	struct slot *s = &a->w[idx];
	free_hold(s);
	s->nneed = 0;
	localise(a, json_object_get(json_object_get(j, "share"), "dataset"), "path", s);
	localise(a, json_object_get(json_object_get(j, "spec"), "workload"), "tokenizer", s);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (s->nneed == 0) {
		send_to_worker(a, idx, hdr, text, strlen(text));
		free(text);
		return 1;
	}
	zmq_msg_init(&s->hold_hdr);
	zmq_msg_copy(&s->hold_hdr, hdr);
	s->hold_json = text;
	s->held = 1;
	fetch_next(a);
	return 1;
}

/* --- the daemon's orders ------------------------------------------------------------- */

static const char *const kept_env[] = {"PATH=",
                                       "HOME=",
                                       "TMPDIR=",
                                       "TZ=",
                                       "LANG=",
                                       "ASAN_OPTIONS=",
                                       "UBSAN_OPTIONS=",
                                       "LSAN_OPTIONS=",
                                       "HEADROOM_WORKER_SPIN_US=",
                                       "HEADROOM_WORKER_TRANSPORT="};

static void spawn(struct agent *a, json_t *o)
{
	json_t *run = json_object_get(o, "run"), *ws = json_object_get(o, "workers");
	json_t *key = json_object_get(o, "api_key"), *files = json_object_get(o, "files");
	if (!json_is_integer(run) || json_integer_value(run) <= 0 || !json_is_array(ws) ||
	    json_array_size(ws) > HR_MAX_WORKERS || (key && !json_is_string(key)) ||
	    (files && !json_is_object(files))) {
		logf_("a malformed spawn order was ignored\n");
		return;
	}
	json_decref(a->files);
	a->files = files ? json_incref(files) : json_object();
	/* the environment: what says how to run, the parent's pid (the
	 * workers die with the agent), the run's API key when it has one */
	size_t ne = 0;
	while (environ[ne])
		ne++;
	char **envp = xcalloc(ne + 3, sizeof *envp);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		for (size_t e = 0; e < sizeof kept_env / sizeof *kept_env; e++)
			if (strncmp(environ[i], kept_env[e], strlen(kept_env[e])) == 0 ||
			    strncmp(environ[i], "LC_", 3) == 0) {
				envp[k++] = environ[i];
				break;
			}
	char parent[48];
	snprintf(parent, sizeof parent, "HEADROOM_PARENT_PID=%d", (int)getpid());
	envp[k++] = parent;
	char *keyvar = key ? xasprintf("HEADROOM_TARGET_API_KEY=%s", json_string_value(key)) : NULL;
	if (keyvar)
		envp[k++] = keyvar;
	size_t i;
	json_t *v;
	json_array_foreach(ws, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= HR_MAX_WORKERS)
			continue;
		int idx = (int)json_integer_value(v);
		struct slot *s = &a->w[idx];
		if (s->pid > 0) { /* an earlier run's worker still there */
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			free_hold(s);
		}
		s->exit_pending = 0; /* an earlier run's: that run is over */
		char ix[16];
		snprintf(ix, sizeof ix, "%d", idx);
		char *argv[] = {(char *)"headroom-worker",
		                (char *)"--connect",
		                a->wk_ep,
		                (char *)"--index",
		                ix,
		                NULL};
		pid_t pid;
		int rc = posix_spawn(&pid, a->worker_bin, NULL, NULL, argv, envp);
		if (rc != 0) {
			logf_("cannot start %s: %s\n", a->worker_bin, strerror(rc));
			send_ctl(a,
			         json_pack("{s:s, s:I, s:i, s:i, s:s}", "type", "exited", "run",
			                   (json_int_t)json_integer_value(run), "worker", idx,
			                   "status", 127 << 8, "message", strerror(rc)),
			         0);
			continue;
		}
		s->pid = pid;
		s->run = json_integer_value(run);
	}
	if (keyvar) {
		explicit_bzero(keyvar, strlen(keyvar));
		free(keyvar);
	}
	free(envp);
	logf_("run %lld: started %zu worker(s)\n", (long long)json_integer_value(run),
	      json_array_size(ws));
}

static void on_control(struct agent *a, zmq_msg_t *f, int n)
{
	if (n != 2)
		return;
	json_t *o = json_loadb(zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), 0, NULL);
	const char *t = json_string_value(json_object_get(o, "type"));
	if (!json_is_object(o) || !t) {
		json_decref(o);
		return;
	}
	if (strcmp(t, "welcome") == 0) {
		if (!a->welcomed)
			logf_("connected to %s as '%s' (enrolled as '%s')\n", a->connect, a->name,
			      json_string_value(json_object_get(o, "enrolled"))
			          ? json_string_value(json_object_get(o, "enrolled"))
			          : "?");
		a->welcomed = 1;
	} else if (strcmp(t, "refuse") == 0) {
		const char *why = json_string_value(json_object_get(o, "reason"));
		logf_("the daemon refused this agent: %s\n", why ? why : "(no reason)");
		if (json_is_true(json_object_get(o, "fatal"))) {
			a->quit = 2;
		} else {
			/* a new connection after a pause (a revoked key is then
			 * refused at its handshake) */
			a->welcomed = 0;
			a->relink = 1;
			a->next_try = mono_ns() + 3 * AGENT_HELLO_EVERY_NS;
		}
	} else if (strcmp(t, "who") == 0) {
		if (a->welcomed) {
			a->welcomed = 0;
			kill_workers(a, 0);
			logf_("the daemon no longer knows this connection; saying hello again\n");
		}
		send_hello(a);
	} else if (strcmp(t, "spawn") == 0 && a->welcomed) {
		spawn(a, o);
	} else if (strcmp(t, "kill") == 0) {
		json_t *run = json_object_get(o, "run");
		kill_workers(a, json_is_integer(run) ? json_integer_value(run) : 0);
	} else if (strcmp(t, "missing") == 0 && a->f.active) {
		fetch_end(a, 0, "the daemon does not have the run's file");
	}
	json_decref(o);
}

/* frames of one multipart message, at most max; -1 when it had more (dropped) */
static int recv_frames(void *sock, zmq_msg_t *f, int max)
{
	int n = 0, more = 1;
	while (more) {
		zmq_msg_t m;
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			break;
		}
		more = zmq_msg_more(&m);
		if (n < max)
			f[n++] = m;
		else {
			zmq_msg_close(&m);
			n = max + 1;
		}
	}
	if (n > max) {
		for (int i = 0; i < max; i++)
			zmq_msg_close(&f[i]);
		return -1;
	}
	return n;
}

static void close_frames(zmq_msg_t *f, int n)
{
	for (int i = 0; i < n; i++)
		zmq_msg_close(&f[i]);
}

static void from_daemon(struct agent *a)
{
	for (int k = 0; k < 256 && a->up; k++) {
		zmq_msg_t f[AGENT_MAX_FRAMES];
		int n = recv_frames(a->up, f, AGENT_MAX_FRAMES);
		if (n == 0)
			return;
		a->last_rx = mono_ns();
		if (n < 0)
			continue;
		const char *kind = zmq_msg_data(&f[0]);
		size_t kl = zmq_msg_size(&f[0]);
		if (kl == 1 && kind[0] == 'c') {
			on_control(a, f, n);
		} else if (kl == 1 && kind[0] == 'b') {
			on_blob(a, f, n);
		} else if (kl == 1 && kind[0] == 'w' && n == 4) {
			int64_t run;
			int idx;
			if (agentproto_chan(zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), &run, &idx) ==
			        0 &&
			    a->w[idx].pid > 0 && a->w[idx].run == run) {
				const unsigned char *h = zmq_msg_data(&f[2]);
				int taken = zmq_msg_size(&f[2]) == 2 && h[1] == PROTO_SCHEDULE &&
				            schedule_files(a, idx, &f[2], &f[3]);
				if (!taken)
					send_to_worker(a, idx, &f[2], zmq_msg_data(&f[3]),
					               zmq_msg_size(&f[3]));
			}
		}
		close_frames(f, n);
	}
}

/* --- workers -> daemon ------------------------------------------------------------- */

static void drop_pending(struct agent *a)
{
	if (!a->pend.held)
		return;
	zmq_msg_close(&a->pend.hdr);
	zmq_msg_close(&a->pend.body);
	a->pend.held = 0;
}

/* Whether the link takes a message now (ZeroMQ's queue below --queue). */
static int link_takes(struct agent *a)
{
	int ev = 0;
	size_t l = sizeof ev;
	return a->up && zmq_getsockopt(a->up, ZMQ_EVENTS, &ev, &l) == 0 && (ev & ZMQ_POLLOUT);
}

/* Relays worker idx's message (of the given run) as w, RUN:I, header, payload without waiting:
 * 1 sent, 0 not taken now (the frames untouched: the caller holds them), -1
 * failed otherwise. Once the first frame is taken ZeroMQ takes the rest. */
static int relay_up(struct agent *a, int64_t run, long idx, zmq_msg_t *hdr, zmq_msg_t *body)
{
	char chan[48];
	int l = snprintf(chan, sizeof chan, "%lld:%ld", (long long)run, idx);
	if (zmq_send(a->up, "w", 1, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		return zmq_errno() == EAGAIN ? 0 : -1;
	if (zmq_send(a->up, chan, (size_t)l, ZMQ_SNDMORE) < 0 ||
	    zmq_msg_send(hdr, a->up, ZMQ_SNDMORE) < 0 || zmq_msg_send(body, a->up, 0) < 0)
		return -1;
	return 1;
}

/* The link stopped taking messages, or takes them again: a stall of 200 ms
 * or more is logged when it ends (the workers' messages waited, none lost). */
static void note_stall(struct agent *a, int takes)
{
	int64_t now = mono_ns();
	if (!takes && !a->stalled)
		a->stalled = now;
	else if (takes && a->stalled) {
		if (now - a->stalled >= 200 * 1000000LL)
			logf_("the link to the daemon took no messages for %lld ms; the workers' "
			      "messages waited\n",
			      (long long)((now - a->stalled) / 1000000));
		a->stalled = 0;
	}
}

/* worker -> daemon: [w<i>][header][payload] relayed as w, RUN:I, header, payload.
 * Back-pressure: a message is read from the workers only while the link takes
 * one (its queue holds at most --queue); otherwise they wait in the workers'
 * socket and outboxes, and a slow link slows the workers' record flow instead
 * of losing records. */
static void from_workers(struct agent *a)
{
	int live = a->up && a->welcomed;
	a->drained = 0;
	if (live && a->pend.held) {
		int rc = relay_up(a, a->pend.run, a->pend.idx, &a->pend.hdr, &a->pend.body);
		if (rc == 0) {
			note_stall(a, 0);
			return;
		}
		if (rc < 0)
			logf_("cannot relay worker %ld's message: %s\n", a->pend.idx,
			      zmq_strerror(zmq_errno()));
		drop_pending(a);
	}
	for (int k = 0; k < 256; k++) {
		if (live && !link_takes(a)) {
			note_stall(a, 0);
			return;
		}
		zmq_msg_t f[3];
		int n = recv_frames(a->wk, f, 3);
		if (n == 0) {
			a->drained = 1;
			break;
		}
		if (n != 3) {
			if (n > 0)
				close_frames(f, n);
			continue;
		}
		char rid[16] = "";
		size_t rl = zmq_msg_size(&f[0]);
		if (rl < sizeof rid)
			memcpy(rid, zmq_msg_data(&f[0]), rl);
		char *end;
		long idx = rid[0] == 'w' && rid[1] >= '0' && rid[1] <= '9'
		               ? strtol(rid + 1, &end, 10)
		               : -1;
		/* a worker that has exited may still have messages here: its
		 * slot keeps its run until the next spawn */
		if (idx >= 0 && idx < HR_MAX_WORKERS && *end == 0 && a->w[idx].run > 0 && live) {
			int64_t run = a->w[idx].run;
			int rc = relay_up(a, run, idx, &f[1], &f[2]);
			if (rc == 0) { /* hold it: it goes before any other */
				a->pend.held = 1;
				a->pend.idx = idx;
				a->pend.run = run;
				a->pend.hdr = f[1];
				a->pend.body = f[2];
				zmq_msg_close(&f[0]);
				note_stall(a, 0);
				return;
			}
			if (rc < 0)
				logf_("cannot relay worker %ld's message: %s\n", idx,
				      zmq_strerror(zmq_errno()));
		}
		close_frames(f, 3);
	}
	if (live)
		note_stall(a, 1);
}

/* Reaps exited workers; each one's "exited" goes once the messages it sent
 * before exiting have been relayed (the workers' socket read empty after
 * the reaping), so the daemon sees its DONE first. */
static void reap(struct agent *a)
{
	int status;
	pid_t p;
	while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < HR_MAX_WORKERS; i++) {
			struct slot *s = &a->w[i];
			if (s->pid != p)
				continue;
			s->pid = 0;
			free_hold(s);
			s->exit_pending = 1;
			s->exit_status = status;
		}
	}
}

static void send_exits(struct agent *a)
{
	int live = a->up && a->welcomed;
	if (live && (!a->drained || a->pend.held))
		return;
	for (int i = 0; i < HR_MAX_WORKERS; i++) {
		struct slot *s = &a->w[i];
		if (!s->exit_pending)
			continue;
		s->exit_pending = 0;
		if (live)
			send_ctl(a,
			         json_pack("{s:s, s:I, s:i, s:i}", "type", "exited", "run",
			                   (json_int_t)s->run, "worker", i, "status",
			                   s->exit_status),
			         0);
	}
}

/* handshake events of the link: a refused key is said once until a handshake succeeds */
static void link_events(struct agent *a)
{
	for (;;) {
		zmq_msg_t f[2];
		zmq_msg_init(&f[0]);
		zmq_msg_init(&f[1]);
		if (zmq_msg_recv(&f[0], a->mon, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&f[0]);
			zmq_msg_close(&f[1]);
			return;
		}
		if (zmq_msg_more(&f[0]))
			zmq_msg_recv(&f[1], a->mon, ZMQ_DONTWAIT);
		if (zmq_msg_size(&f[0]) == 6) {
			uint16_t ev;
			uint32_t val;
			memcpy(&ev, zmq_msg_data(&f[0]), 2);
			memcpy(&val, (char *)zmq_msg_data(&f[0]) + 2, 4);
			if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
				a->refused_logged = 0;
			} else if (!a->refused_logged) {
				a->refused_logged = 1;
				if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
					logf_(
					    "the daemon refused this agent's key (ZAP status %u): "
					    "enroll its public key there (headroomd agent enroll "
					    "--name NAME --key \"$(cat PREFIX.pub)\"); retrying\n",
					    val);
				else
					logf_("the CURVE handshake with %s failed (is --server-key "
					      "the "
					      "daemon's public key?); retrying\n",
					      a->connect);
			}
		}
		zmq_msg_close(&f[0]);
		zmq_msg_close(&f[1]);
	}
}

/* --- setup --------------------------------------------------------------------------- */

static int parse_labels(const char *text, json_t *out)
{
	char buf[4096];
	if (strlen(text) >= sizeof buf)
		return -1;
	snprintf(buf, sizeof buf, "%s", text);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return -1;
		*eq = 0;
		if (!agentproto_name_ok(t, AGENT_NAME_MAX) ||
		    !agentproto_name_ok(eq + 1, AGENT_NAME_MAX) || json_object_size(out) >= 32)
			return -1;
		json_object_set_new(out, t, json_string(eq + 1));
	}
	return 0;
}

static char *beside_self(const char *prog)
{
	char self[APATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return xstrdup(prog);
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		slash[1] = 0;
	return xasprintf("%s%s", self, prog);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "keygen") == 0) {
		char err[HR_ERRLEN], pub[CURVEKEY_Z85];
		if (curvekey_generate(argv[2], pub, err) < 0) {
			fprintf(stderr, "headroom-agent keygen: %s\n", err);
			return 1;
		}
		printf("%s\n", pub);
		fprintf(stderr, "wrote %s.pub and %s.key (keep the .key secret)\n", argv[2],
		        argv[2]);
		return 0;
	}
	static struct agent a;
	a.queue = HR_ZMQ_HWM;
	const char *key = NULL, *server_key = NULL, *name = NULL, *labels = NULL, *cache = NULL;
	static const struct option opts[] = {
	    {"connect", required_argument, NULL, 'c'},     {"key", required_argument, NULL, 'k'},
	    {"server-key", required_argument, NULL, 's'},  {"name", required_argument, NULL, 'n'},
	    {"labels", required_argument, NULL, 'l'},      {"cache", required_argument, NULL, 'd'},
	    {"worker-bin", required_argument, NULL, 'b'},  {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},           {"queue", required_argument, NULL, 'q'},
	    {"send-buffer", required_argument, NULL, 'B'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a.connect = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 's':
			server_key = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'l':
			labels = optarg;
			break;
		case 'd':
			cache = optarg;
			break;
		case 'b':
			free(a.worker_bin);
			a.worker_bin = xstrdup(optarg);
			break;
		case 'q': {
			char *e;
			errno = 0;
			long q = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || q < 1 || q > 1000000) {
				fprintf(stderr, "headroom-agent: --queue must be 1 to 1000000\n");
				return 2;
			}
			a.queue = (int)q;
			break;
		}
		case 'B': {
			char *e;
			errno = 0;
			long b = strtol(optarg, &e, 10);
			if (errno || e == optarg || *e || b < 4096 || b > (1L << 30)) {
				fprintf(stderr, "headroom-agent: --send-buffer must be 4096 to "
				                "1073741824 bytes\n");
				return 2;
			}
			a.sndbuf = (int)b;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts("headroom-agent " HEADROOM_VERSION " (" HEADROOM_COMMIT ")");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!a.connect || !key || !server_key || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (strncmp(a.connect, "tcp://", 6) != 0 || strlen(a.connect) > 200) {
		fprintf(stderr, "headroom-agent: --connect must be tcp://HOST:PORT\n");
		return 2;
	}
	char err[HR_ERRLEN], path[APATH_MAX];
	snprintf(path, sizeof path, "%s.key", key);
	if (curvekey_read(path, a.sec, err) < 0 || curvekey_read(server_key, a.srv, err) < 0) {
		fprintf(stderr, "headroom-agent: %s\n", err);
		return 2;
	}
	if (curvekey_public(a.sec, a.pub) < 0) {
		fprintf(stderr, "headroom-agent: cannot derive the public key\n");
		return 2;
	}
	if (gethostname(a.host, sizeof a.host - 1) != 0)
		snprintf(a.host, sizeof a.host, "unknown");
	if (strlen(name ? name : a.host) > AGENT_NAME_MAX)
		a.name[0] = 0;
	else
		memcpy(a.name, name ? name : a.host, strlen(name ? name : a.host) + 1);
	if (!agentproto_name_ok(a.name, AGENT_NAME_MAX)) {
		fprintf(stderr,
		        "headroom-agent: the name must be 1 to %d characters of A-Z a-z 0-9 "
		        ". _ - (give --name)\n",
		        AGENT_NAME_MAX);
		return 2;
	}
	a.verified = json_object();
	a.labels = json_object();
	if (labels && parse_labels(labels, a.labels) < 0) {
		fprintf(stderr, "headroom-agent: --labels must be k=v,k=v (keys and values of "
		                "A-Z a-z 0-9 . _ -, at most 32)\n");
		return 2;
	}
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (cache)
		snprintf(a.cache, sizeof a.cache, "%s", cache);
	else if (xdg && *xdg)
		snprintf(a.cache, sizeof a.cache, "%s/headroom-agent", xdg);
	else
		snprintf(a.cache, sizeof a.cache, "/var/cache/headroom-agent");
	if (mkdir(a.cache, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "headroom-agent: cannot make the cache %s: %s\n", a.cache,
		        strerror(errno));
		return 2;
	}
	if (!a.worker_bin)
		a.worker_bin = beside_self("headroom-worker");
	if (access(a.worker_bin, X_OK) != 0) {
		fprintf(stderr, "headroom-agent: %s is not executable: %s\n", a.worker_bin,
		        strerror(errno));
		return 2;
	}

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	a.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);

	a.ctx = zmq_ctx_new();
	a.wk = zmq_socket(a.ctx, ZMQ_ROUTER);
	proto_socket_defaults(a.wk);
	int one = 1, tmo = 2000;
	zmq_setsockopt(a.wk, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
	zmq_setsockopt(a.wk, ZMQ_SNDTIMEO, &tmo, sizeof tmo);
	/* the workers' socket is a file in a directory of mode 0700 (an
	 * abstract-namespace one could be reached by any local user), and a
	 * routing id is not handed over to a second connection */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || tmp[0] != '/' || strlen(tmp) > 60)
		tmp = "/tmp";
	snprintf(a.wk_dir, sizeof a.wk_dir, "%s/headroom-agent-XXXXXX", tmp);
	if (!mkdtemp(a.wk_dir)) {
		fprintf(stderr, "headroom-agent: cannot make a directory in %s: %s\n", tmp,
		        strerror(errno));
		return 1;
	}
	snprintf(a.wk_ep, sizeof a.wk_ep, "ipc://%s/w", a.wk_dir);
	if (zmq_bind(a.wk, a.wk_ep) < 0) {
		fprintf(stderr, "headroom-agent: cannot bind %s: %s\n", a.wk_ep,
		        zmq_strerror(zmq_errno()));
		rmdir(a.wk_dir);
		return 1;
	}
	logf_("'%s' on %s, connecting to %s\n", a.name, a.host, a.connect);
	link_open(&a);
	while (!a.quit) {
		/* the workers are read while the link takes messages; else the
		 * loop waits for the link to take one */
		int takes = !a.welcomed || (!a.pend.held && link_takes(&a));
		zmq_pollitem_t pi[4] = {
		    {a.up, 0, (short)(ZMQ_POLLIN | (takes ? 0 : ZMQ_POLLOUT)), 0},
		    {a.wk, 0, (short)(takes ? ZMQ_POLLIN : 0), 0},
		    {NULL, a.sfd, ZMQ_POLLIN, 0},
		    {a.mon, 0, ZMQ_POLLIN, 0}};
		zmq_poll(pi, 4, 100);
		if (pi[3].revents)
			link_events(&a);
		if (pi[2].revents) {
			struct signalfd_siginfo si;
			if (read(a.sfd, &si, sizeof si) == sizeof si) {
				logf_("signal %u: stopping\n", si.ssi_signo);
				break;
			}
		}
		from_daemon(&a);
		reap(&a);
		from_workers(&a);
		send_exits(&a);
		int64_t now = mono_ns();
		if (a.relink && now > a.next_try) {
			a.relink = 0;
			link_reset(&a, "refused");
		} else if (!a.welcomed && now - a.last_hello > AGENT_HELLO_EVERY_NS &&
		           now > a.next_try)
			send_hello(&a);
		if (a.welcomed && now - a.last_hb > AGENT_HB_NS) {
			send_ctl(&a, json_pack("{s:s, s:i}", "type", "hb", "workers", in_use(&a)),
			         ZMQ_DONTWAIT);
			a.last_hb = now;
		}
		if (now - a.last_rx > AGENT_RELINK_NS && (a.welcomed || in_use(&a)))
			link_reset(&a, "no word from the daemon for 4 s");
		else if (now - a.last_rx > 4 * AGENT_RELINK_NS)
			link_reset(&a, "no answer from the daemon");
	}
	kill_workers(&a, 0);
	while (waitpid(-1, NULL, 0) > 0)
		;
	drop_pending(&a);
	if (a.up && a.welcomed) { /* the daemon forgets this connection at once */
		int linger = 500;
		zmq_setsockopt(a.up, ZMQ_LINGER, &linger, sizeof linger);
		send_ctl(&a, json_pack("{s:s}", "type", "bye"), ZMQ_DONTWAIT);
	}
	if (a.f.active) {
		close(a.f.fd);
		unlink(a.f.tmp);
	}
	zmq_close(a.up);
	zmq_close(a.mon);
	zmq_close(a.wk);
	zmq_ctx_term(a.ctx);
	unlink(a.wk_ep + 6);
	rmdir(a.wk_dir);
	json_decref(a.labels);
	json_decref(a.files);
	json_decref(a.verified);
	free(a.worker_bin);
	close(a.sfd);
	explicit_bzero(a.sec, sizeof a.sec);
	return a.quit == 2 ? 2 : 0;
}
