/* pool_local.c - the pool of local worker processes (struct pool_ops):
 * headroom-worker started with posix_spawn (after any --worker-prefix),
 * reaped with waitpid, ended with SIGKILL when the run is over. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "runner_int.h"
#include "runs.h"
#include "util.h"

/* worker i: headroom-worker --connect ENDPOINT --index i, in the workers' environment */
static int spawn_worker(struct run_ctx *c, int i)
{
	char idx[16];
	snprintf(idx, sizeof idx, "%d", i);
	/* --worker-prefix: its words, then the worker's own command */
	char prefix[1100] = "", *argv[40];
	int na = 0;
	if (c->r->o.worker_prefix) {
		snprintf(prefix, sizeof prefix, "%s", c->r->o.worker_prefix);
		char *save = NULL;
		for (char *t = strtok_r(prefix, " \t", &save); t && na < 32;
		     t = strtok_r(NULL, " \t", &save))
			argv[na++] = t;
	}
	const char *prog = na ? argv[0] : c->r->o.worker_bin;
	char *self = na ? (char *)c->r->o.worker_bin : (char *)"headroom-worker";
	argv[na++] = self;
	argv[na++] = (char *)"--connect";
	argv[na++] = c->endpoint;
	argv[na++] = (char *)"--index";
	argv[na++] = idx;
	argv[na] = NULL;
	pid_t pid;
	int rc = c->r->o.worker_prefix ? posix_spawnp(&pid, prog, NULL, NULL, argv, c->envp)
	                               : posix_spawn(&pid, prog, NULL, NULL, argv, c->envp);
	if (rc != 0) {
		fail_run(c, "cannot start %s: %s", prog, strerror(rc));
		return -1;
	}
	c->w[i].pid = pid;
	c->w[i].state = W_SPAWNED;
	c->w[i].last_seen = mono_ns();
	runs_worker_update(c->r->store, c->id, i, pid, 0, 0, "started", -1, NULL);
	return 0;
}

/* the local workers that exited */
static void reap(struct run_ctx *c)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited || w->pid <= 0 || w->remote)
			continue;
		int status;
		pid_t p = waitpid(w->pid, &status, WNOHANG);
		if (p != w->pid)
			continue;
		supervise_exited(c, i, status);
	}
}

/* the run is over: what is still running is killed, and reaped */
static void terminate_all(struct run_ctx *c)
{
	/* workers that sent DONE exit on their own once their socket is
	 * flushed: give them a moment, so their exit status is meaningful */
	int64_t deadline = mono_ns() + 2000000000LL;
	for (;;) {
		reap(c);
		int waiting = 0;
		for (int i = 0; i < c->n; i++)
			waiting |= !c->w[i].exited && c->w[i].pid > 0 && c->w[i].state == W_DONE;
		if (!waiting || mono_ns() > deadline)
			break;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < c->n; i++)
		if (!c->w[i].exited && c->w[i].pid > 0)
			kill(c->w[i].pid, SIGKILL);
	for (int i = 0; i < c->n; i++) {
		if (c->w[i].exited || c->w[i].pid <= 0)
			continue;
		int status;
		if (waitpid(c->w[i].pid, &status, 0) == c->w[i].pid) {
			c->w[i].exited = 1;
			c->w[i].status = status;
		}
	}
}
const struct pool_ops local_pool = {"local", spawn_worker, reap, terminate_all};
