/* h1.c - the native HTTP/1.1 transport: resolving, connecting (through the
 * allow-list), writing a request, reading and timestamping its answer,
 * keeping the connection for the next one (see h1.h). */
#include "h1.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hrlimits.h"
#include "util.h"

enum { C_NONE, C_CONNECTING, C_SENDING, C_READING, C_IDLE };

/* One read buffer for every connection: reads are handled one at a time,
 * on the loop's thread, and parsed before the next. */
static char rbuf[1 << 16];

int h1_target_init(struct h1_target *t, const char *host, const char *port,
                   const struct netallow *allow, struct loop *loop)
{
	memset(t, 0, sizeof *t);
	if (!host || !*host)
		return -1;
	size_t n = strlen(host);
	if (host[0] == '[' && n >= 2 && host[n - 1] == ']')
		t->host = xasprintf("%.*s", (int)(n - 2), host + 1);
	else
		t->host = xstrdup(host);
	t->port = xstrdup(port && *port ? port : "80");
	t->uhost = host;
	t->allow = allow;
	t->loop = loop;
	return 0;
}

void h1_target_release(struct h1_target *t)
{
	free(t->host);
	free(t->port);
	memset(t, 0, sizeof *t);
}

/* Resolves the host once (blocking: a name is resolved once per run, and
 * again only after a failure). Returns 0 or -1. */
static int resolve(struct h1_target *t)
{
	if (t->resolved > 0)
		return 0;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(t->host, t->port, &hints, &res) != 0 || !res) {
		t->resolved = -1;
		return -1;
	}
	t->n = 0;
	for (struct addrinfo *a = res; a && t->n < H1_MAX_ADDRS; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof t->addr[0])
			continue;
		memcpy(&t->addr[t->n], a->ai_addr, a->ai_addrlen);
		t->addr_len[t->n] = a->ai_addrlen;
		t->n++;
	}
	freeaddrinfo(res);
	t->resolved = t->n > 0 ? 1 : -1;
	return t->n > 0 ? 0 : -1;
}

void h1_conn_init(struct h1_conn *c, const struct h1_target *tgt, const struct h1_ops *ops,
                  void *ud)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	c->state = C_NONE;
	c->tgt = tgt;
	c->ops = ops;
	c->ud = ud;
	h1_init(&c->p);
}

static void drop_fd(struct h1_conn *c)
{
	if (c->w)
		loop_unwatch(c->tgt->loop, c->w);
	c->w = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->events = 0;
	c->served = 0;
	c->state = C_NONE;
}

void h1_close(struct h1_conn *c)
{
	drop_fd(c);
}

bool h1_busy(const struct h1_conn *c)
{
	return c->state == C_CONNECTING || c->state == C_SENDING || c->state == C_READING;
}

static void set_events(struct h1_conn *c, uint32_t ev)
{
	if (c->events == ev)
		return;
	if (loop_watch_set(c->tgt->loop, c->w, ev) == 0)
		c->events = ev;
}

static void on_event(void *ud, uint32_t events);

/* Opens a connection to the first address from c->ai on that the
 * allow-list lets through and that does not fail at once. Returns H1R_OK
 * (connecting, or connected: C_SENDING) or H1R_CONNECT. */
static int open_next(struct h1_conn *c)
{
	const struct h1_target *t = c->tgt;
	for (; c->ai < t->n; c->ai++) {
		const struct sockaddr *sa = (const struct sockaddr *)&t->addr[c->ai];
		char why[sizeof c->refused];
		if (t->allow && !netallow_check(t->allow, sa, t->uhost, why, sizeof why)) {
			if (!c->refused[0])
				memcpy(c->refused, why, sizeof why);
			continue; /* refused: no socket, not a byte sent */
		}
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			c->os_errno = errno;
			snprintf(c->msg, sizeof c->msg, "socket: %s", strerror(errno));
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		/* the kernel's receive time of what each read brings (the read
		 * lag's lower bound, loop_note_read); a kernel without it just
		 * sends none */
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
		int rc = connect(fd, sa, t->addr_len[c->ai]);
		if (rc < 0 && errno != EINPROGRESS) {
			c->os_errno = errno;
			snprintf(c->msg, sizeof c->msg, "Failed to connect to %s port %s: %s", t->host,
			         t->port, strerror(errno));
			close(fd);
			continue;
		}
		c->w = loop_watch(t->loop, fd, EPOLLOUT, on_event, c);
		if (!c->w) {
			c->os_errno = errno;
			snprintf(c->msg, sizeof c->msg, "cannot watch the socket");
			close(fd);
			continue;
		}
		c->fd = fd;
		c->events = EPOLLOUT;
		c->served = 0;
		c->connects++;
		c->state = rc == 0 ? C_SENDING : C_CONNECTING;
		return H1R_OK;
	}
	if (!c->msg[0])
		snprintf(c->msg, sizeof c->msg, "Failed to connect to %s port %s", t->host, t->port);
	return H1R_CONNECT;
}

static int write_out(struct h1_conn *c);

/* Connects afresh and, when that succeeds at once, writes. */
static int connect_start(struct h1_conn *c)
{
	struct h1_target *t = (struct h1_target *)c->tgt; /* (the resolution is cached in it) */
	drop_fd(c);
	c->reused = false;
	if (resolve(t) < 0) {
		snprintf(c->msg, sizeof c->msg, "Could not resolve host: %s", t->host);
		return H1R_RESOLVE;
	}
	c->ai = 0;
	int rc = open_next(c);
	if (rc != H1R_OK)
		return rc;
	return c->state == C_SENDING ? write_out(c) : H1R_OK;
}

/* The retry rule of h1.h: the request again, once, on a new connection. */
static bool may_retry(const struct h1_conn *c)
{
	return c->reused && !c->got_byte && !c->retried;
}

static int retry(struct h1_conn *c)
{
	c->retried = true;
	memcpy(c->iov, c->orig, sizeof c->iov);
	c->iov_n = c->orig_n;
	c->iov_at = 0;
	h1_init(&c->p);
	c->msg[0] = '\0';
	return connect_start(c);
}

/* Writes what is left of the request. Returns H1R_OK (all written: now
 * reading; or waiting for the socket to take more) or an error. */
static int write_out(struct h1_conn *c)
{
	while (c->iov_at < c->iov_n) {
		struct msghdr m = {.msg_iov = c->iov + c->iov_at,
		                   .msg_iovlen = (size_t)(c->iov_n - c->iov_at)};
		ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				set_events(c, EPOLLIN | EPOLLOUT);
				return H1R_OK;
			}
			int e = errno;
			if (may_retry(c))
				return retry(c);
			c->os_errno = e;
			snprintf(c->msg, sizeof c->msg, "Send failure: %s", strerror(e));
			return H1R_SEND;
		}
		size_t left = (size_t)k;
		while (c->iov_at < c->iov_n && left >= c->iov[c->iov_at].iov_len) {
			left -= c->iov[c->iov_at].iov_len;
			c->iov_at++;
		}
		if (left) {
			c->iov[c->iov_at].iov_base = (char *)c->iov[c->iov_at].iov_base + left;
			c->iov[c->iov_at].iov_len -= left;
		}
	}
	if (c->warm_only) { /* h1_open: connected, nothing to send yet */
		c->state = C_IDLE;
		set_events(c, EPOLLIN);
		return H1R_OK;
	}
	c->state = C_READING;
	c->since_ns = mono_ns(); /* no answer byte can come before this */
	set_events(c, EPOLLIN);
	return H1R_OK;
}

/* The request is over: the connection is kept when the answer allows it
 * and nothing beyond it arrived; the owner hears last. */
static void finish(struct h1_conn *c, int result, bool keep)
{
	if (c->warm_only) { /* h1_open failed: nobody to tell */
		drop_fd(c);
		c->warm_only = false;
		return;
	}
	if (result == H1R_OK && keep && c->state == C_READING && c->p.keep_alive) {
		c->state = C_IDLE;
		c->served++;
	} else {
		drop_fd(c);
	}
	c->ops->done(c->ud, result);
}

static int on_head(void *ud, int status)
{
	struct h1_conn *c = ud;
	return c->ops->head(c->ud, status, c->t_ns);
}

static int on_body(void *ud, const char *p, size_t n)
{
	struct h1_conn *c = ud;
	return c->ops->body(c->ud, p, n, c->t_ns);
}

static int parse_error(struct h1_conn *c, int rc)
{
	switch (rc) {
	case H1_EBIG:
		snprintf(c->msg, sizeof c->msg, "response header section over %u bytes",
		         HR_MAX_RESPONSE_HEAD);
		return H1R_PROTO;
	case H1_ECHUNK:
		snprintf(c->msg, sizeof c->msg, "chunked encoding error in the response");
		return H1R_CHUNK;
	case H1_ESTOP:
		snprintf(c->msg, sizeof c->msg, "response handling stopped");
		return H1R_ABORT;
	default:
		snprintf(c->msg, sizeof c->msg, "malformed response status line or header");
		return H1R_PROTO;
	}
}

/* The kernel's receive time (CLOCK_REALTIME ns) of the newest data a read
 * brought, from its SCM_TIMESTAMPNS; 0 when there is none. */
static int64_t rx_time(struct msghdr *m)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(cm), sizeof ts);
			return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
		}
	}
	return 0;
}

/* Reads what the socket has; one clock read per read. */
static void do_read(struct h1_conn *c)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct timespec))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = rbuf, .iov_len = sizeof rbuf};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
		                   .msg_controllen = sizeof ctl.buf};
		ssize_t n = recvmsg(c->fd, &m, 0);
		if (n > 0) {
			c->t_ns = mono_ns(); /* the one clock read of this read */
			loop_note_read(c->tgt->loop, c->t_ns, c->since_ns, rx_time(&m));
			c->since_ns = c->t_ns;
			c->got_byte = true;
			int rc = h1_feed(&c->p, rbuf, (size_t)n, on_head, on_body, c);
			if (rc == H1_MORE) {
				if ((size_t)n < sizeof rbuf)
					return;
				continue; /* the buffer was full: there may be more */
			}
			if (rc == H1_DONE) {
				finish(c, H1R_OK, c->p.used == (size_t)n);
				return;
			}
			finish(c, parse_error(c, rc), false);
			return;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		int e = n < 0 ? errno : 0;
		if (may_retry(c)) {
			int rc = retry(c);
			if (rc != H1R_OK)
				finish(c, rc, false);
			return;
		}
		if (n == 0 && h1_eof(&c->p) == H1_DONE) {
			finish(c, H1R_OK, false); /* a close-delimited body */
			return;
		}
		c->os_errno = e;
		if (e) {
			snprintf(c->msg, sizeof c->msg, "Recv failure: %s", strerror(e));
			finish(c, H1R_RECV, false);
		} else if (!c->got_byte) {
			snprintf(c->msg, sizeof c->msg, "Empty reply from server");
			finish(c, H1R_NOTHING, false);
		} else {
			snprintf(c->msg, sizeof c->msg,
			         "transfer closed with outstanding read data remaining");
			finish(c, H1R_PARTIAL, false);
		}
		return;
	}
}

static void on_event(void *ud, uint32_t events)
{
	struct h1_conn *c = ud;
	int rc;

	switch (c->state) {
	case C_CONNECTING: {
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == 0 && !(events & EPOLLOUT))
			return;
		if (err) {
			c->os_errno = err;
			snprintf(c->msg, sizeof c->msg, "Failed to connect to %s port %s: %s",
			         c->tgt->host, c->tgt->port, strerror(err));
			drop_fd(c);
			c->ai++;
			rc = open_next(c);
			if (rc == H1R_OK && c->state == C_SENDING)
				rc = write_out(c);
			if (rc != H1R_OK)
				finish(c, rc, false);
			return;
		}
		c->state = C_SENDING;
		rc = write_out(c);
		if (rc != H1R_OK)
			finish(c, rc, false);
		return;
	}
	case C_SENDING:
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
			rc = write_out(c);
			if (rc != H1R_OK) {
				finish(c, rc, false);
				return;
			}
		}
		if (c->state == C_SENDING && (events & EPOLLIN))
			do_read(c); /* an early answer (the connection is not kept) */
		else if (c->state == C_READING && (events & EPOLLIN))
			do_read(c);
		return;
	case C_READING:
		do_read(c);
		return;
	case C_IDLE:
		/* the server closed the idle connection (or sent what nobody
		 * asked for): it cannot carry another request */
		drop_fd(c);
		return;
	default:
		return;
	}
}

void h1_open(struct h1_conn *c)
{
	if (c->state != C_NONE)
		return;
	c->warm_only = true;
	c->iov_n = c->orig_n = c->iov_at = 0;
	c->got_byte = c->retried = false;
	c->refused[0] = '\0';
	c->msg[0] = '\0';
	c->os_errno = 0;
	if (connect_start(c) != H1R_OK) {
		drop_fd(c);
		c->warm_only = false;
	}
}

int h1_start(struct h1_conn *c, const struct iovec *iov, int n)
{
	if (n > 4)
		n = 4;
	memcpy(c->orig, iov, (size_t)n * sizeof *iov);
	memcpy(c->iov, iov, (size_t)n * sizeof *iov);
	c->orig_n = c->iov_n = n;
	c->iov_at = 0;
	c->got_byte = false;
	c->retried = false;
	c->refused[0] = '\0';
	c->msg[0] = '\0';
	c->os_errno = 0;
	h1_init(&c->p);
	if (c->warm_only) { /* opened ahead by h1_open */
		c->warm_only = false;
		if (c->state == C_CONNECTING) {
			c->reused = false;
			return H1R_OK; /* it goes out when connected */
		}
	}
	if (c->state == C_IDLE) {
		c->reused = true;
		c->state = C_SENDING;
		return write_out(c);
	}
	return connect_start(c);
}
