/* main.c - headroom-worker: arguments, the ZeroMQ link to headroomd and the
 * worker's lifecycle (api/protocol.md, docs/worker.md).
 *
 *   HELLO -> SCHEDULE -> READY | FAIL -> START -> run -> DONE
 *   with a warm-up:  START(warmup) -> warm-up -> PHASE_DONE
 *                    -> START(profiling) -> run -> DONE
 *
 * Everything happens on one thread in one event loop (loop.h): the DEALER
 * socket's ZMQ_FD, a signalfd for SIGTERM/SIGINT, a periodic tick (record
 * flushes, heartbeats, socket drains) and the runner's pacer timerfd sit in
 * the same epoll set as libcurl's sockets. Message handlers only change state and
 * set flags; the main loop acts on the flags between turns, so nothing
 * re-enters libcurl or the outbox from inside their own callbacks.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "hrlimits.h"
#include "csample.h"
#include "loop.h"
#include "outbox.h"
#include "proto.h"
#include "run.h"
#include "share.h"
#include "spec.h"
#include "util.h"

#define TICK_NS 25000000LL          /* flushes at least every HR_RECORD_BATCH_FLUSH_NS */
#define FINAL_FLUSH_NS 5000000000LL /* time allowed for the last records and DONE */
#define FINAL_LINGER_MS 5000

enum wstate {
	WS_WAIT_SCHEDULE, /* HELLO sent */
	WS_WAIT_START,    /* READY sent */
	WS_RUNNING,       /* a phase is running (it may begin in the future) */
	WS_WAIT_PHASE,    /* warm-up done, PHASE_DONE sent: waiting for START(profiling) */
};

struct worker {
	int index;
	const char *endpoint;
	char ident[16];
	void *zctx, *sock;
	int sfd;
	struct loop *loop;
	struct loop_timer *tick;
	struct outbox ob;
	struct spec spec;
	bool have_spec;
	struct share share;
	struct run run;
	bool have_run;
	int state;
	int64_t t0;
	int64_t next_heartbeat;
	/* self-telemetry: when the next sample is due, the previous one's readings */
	int64_t next_sample, last_sample, last_cpu, last_busy;
	uint64_t last_wakeups;
	bool draining;
	/* flags for the main loop */
	bool begin; /* START accepted: begin begin_phase at begin_start */
	int begin_phase;
	int64_t begin_start;
	bool stop;
	char stop_reason[128];
	bool failing;
	char fail_msg[HR_ERRLEN];
};

static int log_index = -1;

static void wlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void wlog(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "headroom-worker[w%d]: %s\n", log_index, buf);
}

static void usage(FILE *f)
{
	fputs("usage: headroom-worker --connect ENDPOINT --index I\n"
	      "\n"
	      "A headroom load-generating worker, started by headroomd. It connects a\n"
	      "ZeroMQ DEALER (routing id w<I>) to ENDPOINT (ipc://... or tcp://...),\n"
	      "receives its share of a run, sends the requests and reports one record\n"
	      "per request (api/protocol.md).\n"
	      "\n"
	      "  --connect ENDPOINT  the daemon's ROUTER socket\n"
	      "  --index I           this worker's index (0..255)\n"
	      "  --help              this text\n"
	      "  --version           print the version\n",
	      f);
}

/* --- sending ------------------------------------------------------------ */

static void zdrain(struct worker *w);

/* A control message; waits up to wait_ms for room (0: do not wait).
 * Drains the socket afterwards (ZMQ_FD is edge-triggered). */
static int send_ctl(struct worker *w, int type, json_t *obj, long wait_ms)
{
	int64_t deadline = mono_ns() + (int64_t)wait_ms * 1000000LL;
	int rc;
	for (;;) {
		rc = proto_send_json(w->sock, NULL, type, obj, ZMQ_DONTWAIT);
		if (rc == 0 || (errno != EAGAIN && errno != EINTR))
			break;
		int64_t left = deadline - mono_ns();
		if (left <= 0)
			break;
		zmq_pollitem_t it = {.socket = w->sock, .events = ZMQ_POLLOUT};
		zmq_poll(&it, 1, (long)(left / 1000000) + 1);
	}
	int saved = errno;
	json_decref(obj);
	if (rc < 0 && wait_ms > 0)
		wlog("cannot send %s: %s", proto_type_name(type), zmq_strerror(saved));
	zdrain(w);
	return rc;
}

/* A JSON string of s, made valid UTF-8 if it is not (a message may have
 * been cut inside a character). */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	char *c = xstrdup(s);
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j ? j : json_string("");
}

static void after_records_sent(void *ud)
{
	zdrain(ud);
}

static json_t *counters(struct worker *w, bool with_in_flight)
{
	struct run *r = &w->run;
	json_t *o = json_object();
	json_object_set_new(o, "sent", json_integer((json_int_t)r->sent));
	json_object_set_new(o, "completed", json_integer((json_int_t)r->completed));
	json_object_set_new(o, "errors", json_integer((json_int_t)r->errors));
	/* arrivals the ceiling still held back when the duration ended */
	json_object_set_new(o, "unsent", json_integer((json_int_t)r->load.dropped));
	if (with_in_flight)
		json_object_set_new(o, "in_flight", json_integer(r->n_active));
	json_object_set_new(o, "records", json_integer((json_int_t)w->ob.records_sent));
	return o;
}

/* Starts the self-telemetry intervals (at the first START). */
static void sample_begin(struct worker *w, int64_t now)
{
	struct loop_stats ls;
	loop_get_stats(w->loop, &ls);
	w->last_sample = now;
	w->last_cpu = process_cpu_ns();
	w->last_busy = ls.busy_ns;
	w->last_wakeups = ls.wakeups;
	w->next_sample = now + HR_CLIENT_SAMPLE_NS;
	struct csample drop;
	loop_take_bursts(w->loop, drop.read_lag, &drop.read_lag_max_ns, drop.kern_lag,
			 &drop.kern_lag_max_ns, drop.windows);
}

/* Sends one self-telemetry sample (csample.h) covering the time since the
 * previous one. Never blocks: a sample the socket refuses is dropped (the
 * next one carries the totals). */
static void send_sample(struct worker *w, int64_t now)
{
	if (!w->have_run || now <= w->last_sample)
		return;
	struct csample s = {0};
	struct loop_stats ls;
	loop_get_stats(w->loop, &ls);
	int64_t cpu = process_cpu_ns();
	run_sample(&w->run, &s);
	s.t_ns = now - w->t0;
	s.interval_ns = now - w->last_sample;
	s.cpu_ns = cpu > w->last_cpu ? cpu - w->last_cpu : 0;
	s.busy_ns = ls.busy_ns > w->last_busy ? ls.busy_ns - w->last_busy : 0;
	s.wakeups = (int64_t)(ls.wakeups - w->last_wakeups);
	s.record_backlog = (int64_t)outbox_backlog_records(&w->ob);
	loop_take_bursts(w->loop, s.read_lag, &s.read_lag_max_ns, s.kern_lag, &s.kern_lag_max_ns,
			 s.windows);
	w->last_sample = now;
	w->last_cpu = cpu;
	w->last_busy = ls.busy_ns;
	w->last_wakeups = ls.wakeups;
	w->next_sample += HR_CLIENT_SAMPLE_NS;
	if (w->next_sample <= now)
		w->next_sample = now + HR_CLIENT_SAMPLE_NS;
	send_ctl(w, PROTO_SAMPLE, csample_to_json(&s), 0);
}

/* --- incoming messages ---------------------------------------------------- */

static void fail(struct worker *w, const char *msg)
{
	if (w->failing)
		return;
	w->failing = true;
	snprintf(w->fail_msg, sizeof w->fail_msg, "%s", msg);
}

static void on_schedule(struct worker *w, json_t *msg)
{
	char err[HR_ERRLEN];
	if (share_parse(msg, w->index, &w->spec, &w->share, err) < 0) {
		fail(w, err);
		return;
	}
	w->have_spec = true;
	if (run_init(&w->run, w->loop, &w->ob, &w->spec, &w->share, (uint32_t)w->index, err) < 0) {
		fail(w, err);
		return;
	}
	w->have_run = true;
	w->state = WS_WAIT_START;
	send_ctl(w, PROTO_READY, json_object(), 1000);
}

/* START: {t0_mono_ns, t0_wall_ns, phase, phase_start_ns}. phase defaults
 * to "warmup" when the share has one (and this is the first START), else
 * "profiling"; phase_start_ns to 0. */
static void on_start(struct worker *w, json_t *msg)
{
	bool first = w->state == WS_WAIT_START;
	json_t *t = json_object_get(msg, "t0_mono_ns");
	if (!json_is_integer(t) || json_integer_value(t) <= 0) {
		fail(w, "START: t0_mono_ns must be a positive integer");
		return;
	}
	int phase = first && w->share.has_warmup ? HR_PHASE_WARMUP : HR_PHASE_PROFILING;
	json_t *ph = json_object_get(msg, "phase");
	if (ph && !json_is_null(ph)) {
		const char *p = json_string_value(ph);
		if (p && strcmp(p, "warmup") == 0)
			phase = HR_PHASE_WARMUP;
		else if (p && strcmp(p, "profiling") == 0)
			phase = HR_PHASE_PROFILING;
		else {
			fail(w, "START: phase must be \"warmup\" or \"profiling\"");
			return;
		}
	}
	if (phase == HR_PHASE_WARMUP && (!first || !w->share.has_warmup)) {
		fail(w, first ? "START: phase \"warmup\", but the share has no warm-up"
		              : "START: a second warm-up");
		return;
	}
	json_t *ps = json_object_get(msg, "phase_start_ns");
	int64_t phase_start = 0;
	if (ps && !json_is_null(ps)) {
		if (!json_is_integer(ps) || json_integer_value(ps) < 0) {
			fail(w, "START: phase_start_ns must be an integer >= 0");
			return;
		}
		phase_start = (int64_t)json_integer_value(ps);
	}
	if (first) {
		w->t0 = (int64_t)json_integer_value(t);
		int64_t now = mono_ns();
		w->next_heartbeat = now;
		sample_begin(w, now);
		loop_timer_every(w->tick, now + TICK_NS, TICK_NS);
	} else if (json_integer_value(t) != w->t0) {
		wlog("START: t0_mono_ns changed between phases; keeping the first");
	}
	w->state = WS_RUNNING;
	w->begin = true;
	w->begin_phase = phase;
	w->begin_start = phase_start;
}

static void on_stop(struct worker *w, json_t *msg)
{
	const char *why = json_string_value(json_object_get(msg, "reason"));
	w->stop = true;
	snprintf(w->stop_reason, sizeof w->stop_reason, "cancelled: %s", why ? why : "stop");
}

/* CLOCK {seq, t1}: answered at once with this worker's receive and send
 * times (lib/clocksync.h); t2 is read before anything else is done. */
static void on_clock(struct worker *w, json_t *msg, int64_t t2)
{
	json_t *seq = json_object_get(msg, "seq"), *t1 = json_object_get(msg, "t1");
	if (!json_is_integer(seq) || !json_is_integer(t1)) {
		wlog("dropped a CLOCK without integer seq and t1");
		return;
	}
	json_t *o = json_pack("{s:O, s:O, s:I}", "seq", seq, "t1", t1, "t2", (json_int_t)t2);
	json_object_set_new(o, "t3", json_integer((json_int_t)mono_ns()));
	send_ctl(w, PROTO_CLOCK, o, 1000);
}

static void handle(struct worker *w, struct proto_msg *m, int64_t received)
{
	switch (m->type) {
	case PROTO_CLOCK:
		on_clock(w, m->json, received);
		return;
	case PROTO_SCHEDULE:
		if (w->state == WS_WAIT_SCHEDULE && !w->failing)
			on_schedule(w, m->json);
		else
			wlog("ignoring a second SCHEDULE");
		return;
	case PROTO_START:
		if ((w->state == WS_WAIT_START || w->state == WS_WAIT_PHASE) && !w->failing)
			on_start(w, m->json);
		else
			wlog("ignoring START in the wrong state");
		return;
	case PROTO_STOP:
		on_stop(w, m->json);
		return;
	default:
		wlog("ignoring unexpected %s message", proto_type_name(m->type));
		return;
	}
}

/* Reads every waiting message. Called when ZMQ_FD is readable, after each
 * send and on every tick. Not re-entered: a send made by a handler leaves
 * the rest to the outer call. */
static void zdrain(struct worker *w)
{
	if (w->draining)
		return;
	w->draining = true;
	for (;;) {
		int ev = 0;
		size_t sz = sizeof ev;
		if (zmq_getsockopt(w->sock, ZMQ_EVENTS, &ev, &sz) < 0 || !(ev & ZMQ_POLLIN))
			break;
		struct proto_msg m;
		char err[HR_ERRLEN];
		int rc = proto_recv(w->sock, 0, &m, ZMQ_DONTWAIT, err);
		if (rc == 0)
			break;
		if (rc == -1) {
			wlog("receive failed: %s", zmq_strerror(errno));
			break;
		}
		int64_t received = mono_ns();
		if (rc == -2) {
			wlog("dropped a malformed message: %s", err);
			continue;
		}
		handle(w, &m, received);
		proto_msg_release(&m);
	}
	w->draining = false;
}

/* --- loop callbacks ------------------------------------------------------- */

static void on_zmq(void *ud, uint32_t events)
{
	zdrain(ud);
}

static void on_signal(void *ud, uint32_t events)
{
	struct worker *w = ud;
	struct signalfd_siginfo si;
	while (read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (!w->stop) {
			w->stop = true;
			snprintf(w->stop_reason, sizeof w->stop_reason, "cancelled: signal %u",
			         si.ssi_signo);
		}
	}
}

static void on_tick(void *ud, uint64_t expirations)
{
	struct worker *w = ud;
	zdrain(w);
	if (w->state < WS_RUNNING)
		return;
	if (outbox_flush(&w->ob) < 0)
		w->run.interrupted = true;
	int64_t now = mono_ns();
	if (now >= w->next_heartbeat) {
		send_ctl(w, PROTO_HEARTBEAT, counters(w, true), 0);
		w->next_heartbeat += HR_HEARTBEAT_NS;
		if (w->next_heartbeat <= now) /* fell behind: no burst of heartbeats */
			w->next_heartbeat = now + HR_HEARTBEAT_NS;
	}
	if (now >= w->next_sample)
		send_sample(w, now);
	if (w->state == WS_RUNNING)
		run_pump(&w->run);
}

/* --- setup and teardown ----------------------------------------------------- */

static int parse_args(int argc, char **argv, struct worker *w)
{
	static const struct option opts[] = {
	    {"connect", required_argument, NULL, 'c'},
	    {"index", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	bool have_index = false;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			w->endpoint = optarg;
			break;
		case 'i': {
			char *end;
			errno = 0;
			long v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 || v >= HR_MAX_WORKERS) {
				fprintf(stderr, "headroom-worker: bad --index '%s' (0..%d)\n",
				        optarg, HR_MAX_WORKERS - 1);
				return 2;
			}
			w->index = (int)v;
			have_index = true;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts("headroom-worker " HEADROOM_VERSION " (" HEADROOM_COMMIT ")");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !w->endpoint || !have_index) {
		usage(stderr);
		return 2;
	}
	if (strlen(w->endpoint) > 1024) {
		fprintf(stderr, "headroom-worker: --connect endpoint too long\n");
		return 2;
	}
	return -1; /* go on */
}

/* One socket per concurrent stream: a soft limit of 1024 descriptors would
 * turn large slot counts into connect errors that are the client's fault. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int setup(struct worker *w, char *err)
{
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	w->sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (w->sfd < 0)
		return errf(err, "signalfd: %s", strerror(errno));

	w->zctx = zmq_ctx_new();
	if (!w->zctx)
		return errf(err, "zmq_ctx_new: %s", zmq_strerror(errno));
	w->sock = zmq_socket(w->zctx, ZMQ_DEALER);
	if (!w->sock)
		return errf(err, "zmq_socket: %s", zmq_strerror(errno));
	snprintf(w->ident, sizeof w->ident, "w%d", w->index);
	zmq_setsockopt(w->sock, ZMQ_ROUTING_ID, w->ident, strlen(w->ident));
	proto_socket_defaults(w->sock);
	if (zmq_connect(w->sock, w->endpoint) < 0)
		return errf(err, "cannot connect to %s: %s", w->endpoint, zmq_strerror(errno));
	int zfd;
	size_t zsz = sizeof zfd;
	if (zmq_getsockopt(w->sock, ZMQ_FD, &zfd, &zsz) < 0)
		return errf(err, "ZMQ_FD: %s", zmq_strerror(errno));

	w->loop = loop_new(HR_MAX_CONCURRENCY, err);
	if (!w->loop)
		return -1;
	if (!loop_watch(w->loop, zfd, EPOLLIN, on_zmq, w) ||
	    !loop_watch(w->loop, w->sfd, EPOLLIN, on_signal, w))
		return errf(err, "epoll_ctl: %s", strerror(errno));
	w->tick = loop_timer_new(w->loop, on_tick, w);
	if (!w->tick)
		return errf(err, "timerfd: %s", strerror(errno));
	outbox_init(&w->ob, w->sock, after_records_sent, w);
	return 0;
}

static void teardown(struct worker *w)
{
	if (w->have_run)
		run_release(&w->run);
	if (w->loop)
		loop_free(w->loop);
	outbox_release(&w->ob);
	if (w->have_spec)
		spec_release(&w->spec);
	if (w->sock) {
		int linger = FINAL_LINGER_MS;
		zmq_setsockopt(w->sock, ZMQ_LINGER, &linger, sizeof linger);
		zmq_close(w->sock);
	}
	if (w->zctx)
		zmq_ctx_term(w->zctx);
	if (w->sfd >= 0)
		close(w->sfd);
}

static int send_hello(struct worker *w)
{
	json_t *o = json_object();
	int64_t mono = mono_ns(), wall = wall_ns();
	json_object_set_new(o, "index", json_integer(w->index));
	json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
	json_object_set_new(o, "protocol", json_integer(PROTO_VERSION));
	json_object_set_new(o, "version", json_string(HEADROOM_VERSION));
	json_object_set_new(o, "mono_ns", json_integer((json_int_t)mono));
	json_object_set_new(o, "wall_ns", json_integer((json_int_t)wall));
	json_object_set_new(o, "clock", json_true()); /* answers CLOCK exchanges */
	return send_ctl(w, PROTO_HELLO, o, 5000);
}

/* The warm-up share is done: its records go out, then PHASE_DONE. */
static void warmup_done(struct worker *w)
{
	json_t *o = json_object();
	json_object_set_new(o, "phase", json_string("warmup"));
	json_object_set_new(o, "sent", json_integer((json_int_t)w->run.phase_sent));
	json_object_set_new(o, "completed", json_integer((json_int_t)w->run.phase_completed));
	send_sample(w, mono_ns()); /* the warm-up's last partial interval */
	run_end_phase(&w->run);
	if (outbox_flush(&w->ob) < 0)
		w->run.interrupted = true;
	w->state = WS_WAIT_PHASE;
	send_ctl(w, PROTO_PHASE_DONE, o, 1000);
}

/* Everything in flight is over: ship the records, then DONE. */
static int finish(struct worker *w)
{
	int rc = 0;
	if (w->state >= WS_RUNNING)
		send_sample(w, mono_ns()); /* the last partial interval */
	if (outbox_flush_all(&w->ob, mono_ns() + FINAL_FLUSH_NS) < 0) {
		wlog("could not deliver %llu records",
		     (unsigned long long)outbox_backlog_records(&w->ob));
		rc = 1;
	}
	if (send_ctl(w, PROTO_DONE, counters(w, false), 2000) < 0)
		rc = 1;
	return rc;
}

/* Whether pid exists and is not a zombie (/proc/PID/stat's state). */
static int process_alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

int main(int argc, char **argv)
{
	struct worker w;
	memset(&w, 0, sizeof w);
	w.sfd = -1;
	int rc = parse_args(argc, argv, &w);
	if (rc >= 0)
		return rc;
	log_index = w.index;

	/* before any thread exists (ZeroMQ's, libcurl's resolver): the mask
	 * is inherited, so the signals reach only our signalfd */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* die with the daemon: its records would have nowhere to go. The
	 * signal follows the parent from here on; a daemon that died before
	 * this line is caught by comparing the parent with the pid headroomd
	 * gives its workers (HEADROOM_PARENT_PID). Started by anything else,
	 * or through a wrapper (bench/client_instr.py runs the worker under
	 * valgrind from a shell) while the daemon lives, the signal stays
	 * SIGTERM, an orderly end that lets such a wrapper keep its output. */
	const char *ppid_env = getenv("HEADROOM_PARENT_PID");
	long daemon_pid = ppid_env ? atol(ppid_env) : 0;
	prctl(PR_SET_PDEATHSIG, daemon_pid > 0 ? SIGKILL : SIGTERM);
	if (daemon_pid > 0 && daemon_pid != (long)getppid()) {
		/* orphaned (adopted by init or a subreaper) or the daemon gone: a
		 * killed daemon not yet reaped is a zombie, which kill(pid, 0)
		 * still finds, so its state is read */
		if (getppid() == 1 || !process_alive((pid_t)daemon_pid)) {
			wlog("the daemon (pid %ld) is gone; exiting", daemon_pid);
			return 1;
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* a wrapper's child */
	}
	/* the pacer's timerfd is exact; keep the kernel from batching the
	 * other wake-ups (epoll timeouts) 50 us late */
	prctl(PR_SET_TIMERSLACK, 1UL);
	raise_fd_limit();

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		wlog("curl_global_init failed");
		return 1;
	}
	char err[HR_ERRLEN];
	int code = 0;
	if (setup(&w, err) < 0) {
		wlog("%s", err);
		code = 1;
		goto out;
	}
	if (send_hello(&w) < 0) {
		code = 1;
		goto out;
	}
	/* What a message asks for is acted on here, before the loop blocks
	 * again: a message can be read inside any send (send_ctl drains the
	 * socket, hello included), and ZMQ_FD will not wake the loop for it. */
	for (;;) {
		if (w.failing) {
			wlog("%s", w.fail_msg);
			json_t *o = json_object();
			json_object_set_new(o, "message", json_text(w.fail_msg));
			send_ctl(&w, PROTO_FAIL, o, 2000);
			code = 1;
			break;
		}
		if (w.run.interrupted) {
			/* an outbox wait gave up for a pending signal: read it now */
			w.run.interrupted = false;
			on_signal(&w, 0);
		}
		if (w.stop) {
			if (w.have_run && w.run.begun)
				run_cancel(&w.run, w.stop_reason);
			code = finish(&w);
			break;
		}
		if (w.begin) {
			w.begin = false;
			run_begin(&w.run, w.begin_phase, w.t0, w.begin_start);
		}
		if (w.state == WS_RUNNING && run_phase_finished(&w.run)) {
			if (w.run.phase == HR_PHASE_WARMUP) {
				warmup_done(&w);
				continue;
			}
			code = finish(&w);
			break;
		}
		if (loop_run_once(w.loop, -1) < 0) {
			wlog("epoll_wait: %s", strerror(errno));
			code = 1;
			break;
		}
	}
out:
	teardown(&w);
	curl_global_cleanup();
	return code;
}
