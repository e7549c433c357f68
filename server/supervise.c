/* supervise.c - what the runner makes of its workers' ends, whichever pool
 * started them (struct pool_ops): an exit before DONE fails the run, a
 * clean one waits a moment for its DONE, a silent worker fails the run (or,
 * on an agent, is lost: pool_remote.c). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "runner_int.h"
#include "runs.h"
#include "util.h"

static void describe_exit(char *buf, size_t n, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, n, "ended (wait status %d)", status);
}

/* Worker i's end recorded, and judged: an end before its DONE (unless the
 * run is stopping) or an unclean one after it fails the run. */
static void judge_exit(struct run_ctx *c, int i)
{
	struct wk *w = &c->w[i];
	char how[96];
	describe_exit(how, sizeof how, w->status);
	w->exit_grace = 0;
	runs_worker_update(c->r->store, c->id, i, 0, 0, 0, w->state == W_DONE ? "done" : "failed",
	                   WIFEXITED(w->status) ? WEXITSTATUS(w->status) : -WTERMSIG(w->status),
	                   how);
	if (w->state != W_DONE && !c->stopping) {
		fail_run(c, "worker %d (pid %d) %s before finishing", i, (int)w->pid, how);
		runproto_stop(c, "another worker died");
	} else if (w->state == W_DONE && !(WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0)) {
		fail_run(c, "worker %d (pid %d) %s after finishing", i, (int)w->pid, how);
	}
}

void supervise_late_exits(struct run_ctx *c, int64_t now, int force)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited && w->exit_grace &&
		    (w->state == W_DONE || force || now > w->exit_grace))
			judge_exit(c, i);
	}
}

void supervise_exited(struct run_ctx *c, int i, int status)
{
	struct wk *w = &c->w[i];
	w->exited = 1;
	w->status = status;
	if (w->state != W_DONE && !c->stopping && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		w->exit_grace = mono_ns() + EXIT_GRACE_NS;
		return;
	}
	judge_exit(c, i);
}

void supervise_silence(struct run_ctx *c, int64_t now)
{
	for (int i = 0; i < c->n; i++) {
		struct wk *w = &c->w[i];
		if (w->exited || w->state == W_DONE)
			continue;
		/* workers heartbeat from START on; until then they only wait for
		 * the slowest peer to say hello */
		int64_t limit = c->t0 ? HR_WORKER_SILENCE_NS : HR_WORKER_HELLO_NS;
		if (now - w->last_seen > limit && w->remote) {
			char why[200];
			snprintf(why, sizeof why, "on agent '%s' was silent for %.1f s", w->agent,
			         (double)(now - w->last_seen) / 1e9);
			pool_worker_lost(c, i, why);
		} else if (now - w->last_seen > limit) {
			fail_run(c, "worker %d (pid %d) was silent for %.1f s", i, (int)w->pid,
			         (double)(now - w->last_seen) / 1e9);
			runproto_stop(c, "another worker fell silent");
			if (w->pid > 0)
				kill(w->pid, SIGKILL);
			w->last_seen = now; /* report once */
		}
	}
}

int supervise_all_finished(const struct run_ctx *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->w[i].state != W_DONE && (!c->w[i].exited || c->w[i].exit_grace))
			return 0;
	return 1;
}
