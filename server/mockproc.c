/* mockproc.c - starting and stopping a headroom-mock child (mockproc.h). */
#include "mockproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
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
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	char *argv[] = {(char *)"headroom-mock", (char *)"--listen", (char *)"127.0.0.1:0",
			(char *)"--quiet", NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
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
