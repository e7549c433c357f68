/* mockproc.c - starting and stopping a headroom-mock child (mockproc.h);
 * the child dies with the daemon (PR_SET_PDEATHSIG). */
#include "mockproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

extern char **environ;

int mockproc_start(struct mockproc *m, const char *bin, char *err)
{
	memset(m, 0, sizeof *m);
	m->pid = -1;
	m->out = -1;
	int fds[2];
	if (pipe(fds) < 0)
		return errf(err, "pipe: %s", strerror(errno));
	/* only the mock gets the write end; no one else inherits either */
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	char *argv[] = {(char *)"headroom-mock", (char *)"--listen", (char *)"127.0.0.1:0",
			(char *)"--quiet", NULL};
	/* fork and exec rather than posix_spawn: the child must ask, before
	 * exec, to be killed when its parent dies (PR_SET_PDEATHSIG: when the
	 * forking thread ends, here the runner, which lasts as long as the
	 * daemon), and check that it has not already (the parent is then
	 * someone else). Between fork and exec only async-signal-safe calls;
	 * an exec that fails ends the child with 127, and the start with
	 * "did not say where it listens". */
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(127);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		execve(bin, argv, environ);
		_exit(127);
	}
	int rc = pid < 0 ? errno : 0;
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		return errf(err, "cannot start the mock %s: %s", bin, strerror(rc));
	}
	m->pid = pid;
	m->out = fds[0];
	char line[256];
	size_t n = 0;
	int64_t deadline = mono_ns() + 5000000000LL;
	for (;;) {
		char *nl = memchr(line, '\n', n);
		if (nl) {
			*nl = '\0';
			const char *p = strstr(line, "listening on ");
			if (p && strlen(p + 13) < sizeof m->addr) {
				snprintf(m->addr, sizeof m->addr, "%s", p + 13);
				return 0;
			}
			break;
		}
		int64_t left = deadline - mono_ns();
		if (left <= 0 || n == sizeof line - 1)
			break;
		struct pollfd pf = {.fd = m->out, .events = POLLIN};
		if (poll(&pf, 1, (int)(left / 1000000) + 1) <= 0)
			continue;
		ssize_t k = read(m->out, line + n, sizeof line - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	mockproc_stop(m);
	return errf(err, "the mock %s did not say where it listens", bin);
}

void mockproc_stop(struct mockproc *m)
{
	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		int64_t deadline = mono_ns() + 2000000000LL;
		int status;
		while (waitpid(m->pid, &status, WNOHANG) == 0) {
			if (mono_ns() > deadline) {
				kill(m->pid, SIGKILL);
				waitpid(m->pid, &status, 0);
				break;
			}
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		}
	}
	if (m->out >= 0)
		close(m->out);
	m->pid = -1;
	m->out = -1;
}
