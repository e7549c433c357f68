/* h1.h - the worker's native HTTP/1.1 transport for plain http:// targets
 * (target.transport, docs/worker.md "Transports"): one keep-alive
 * connection per request slot, driven by the worker's own epoll loop.
 *
 * A `struct h1_conn` lives inside a pooled request and keeps its socket
 * from one request to the next. h1_start writes the request (head and body
 * in one sendmsg when the socket takes it), connecting first when there is
 * no open connection: the target's addresses are resolved once per run, and
 * each is checked against the operator's allow-list before a socket is made
 * for it, exactly as the libcurl path does (a refused address gets no
 * socket). Every read from the socket is timestamped with one clock read and
 * fed to the response parser (h1parse.h), whose callbacks go to the owner
 * with that time. An idle connection stays in the epoll set: a server that
 * closes it is noticed and the socket closed then.
 *
 * Retry rule: a request is sent again, once, on a new connection when the
 * connection it went out on had already carried a response (it was reused)
 * and the server closed or reset it before a single byte of the answer
 * arrived. That is the race of a server closing an idle keep-alive
 * connection just as a request goes out; the server closed without
 * answering, so it did not act on the request. A fresh connection, or one
 * that delivered any byte, is never retried: its failure is the record's.
 *
 * Deadlines are the owner's (the run's timer heap): at the deadline it
 * calls h1_close and records the timeout.
 *
 * Thread affinity: the loop's thread.
 */
#ifndef HR_WORKER_H1_H
#define HR_WORKER_H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "h1parse.h"
#include "loop.h"
#include "netallow.h"

#define H1_MAX_ADDRS 8

/* Outcomes of a request on the native transport. */
enum h1_result {
	H1R_OK = 0,
	H1R_RESOLVE, /* the host name did not resolve */
	H1R_REFUSED, /* every address was refused by the allow-list */
	H1R_CONNECT, /* no address could be connected to */
	H1R_SEND,    /* the request could not be written */
	H1R_RECV,    /* the connection failed while reading */
	H1R_NOTHING, /* closed before any byte of the answer */
	H1R_PARTIAL, /* closed before the answer ended */
	H1R_PROTO,   /* a malformed or oversized status line or header */
	H1R_CHUNK,   /* chunked framing error */
	H1R_ABORT,   /* the owner's callback stopped the response */
	H1R_TIMEOUT, /* the owner's deadline (h1_close + its own record) */
};

/* Where a run's connections go: resolved once, shared by its requests. */
struct h1_target {
	char *host;      /* owned: the URL's host, brackets removed */
	char *port;      /* owned: decimal */
	const char *uhost; /* borrowed: the URL's host as written, for the allow-list's names */
	const struct netallow *allow; /* borrowed, or NULL */
	int resolved;    /* 0: not yet; 1: addr holds n; -1: failed last time */
	int n;
	struct sockaddr_storage addr[H1_MAX_ADDRS];
	socklen_t addr_len[H1_MAX_ADDRS];
	struct loop *loop; /* borrowed */
};

/* The owner's side: the response's head (final status), each piece of
 * its body, and the end. t_ns is the clock read of the socket read that
 * brought the bytes (absolute monotonic ns). head and body return 0 or
 * nonzero to stop (H1R_ABORT). done is called last, outside the parser;
 * the connection may be started again from inside it. */
struct h1_ops {
	int (*head)(void *ud, int status, int64_t t_ns);
	int (*body)(void *ud, const char *p, size_t n, int64_t t_ns);
	void (*done)(void *ud, int result);
};

struct h1_conn {
	int fd; /* -1: no connection */
	int state;
	struct loop_watch *w;
	uint32_t events;
	const struct h1_target *tgt;
	const struct h1_ops *ops;
	void *ud;
	int ai;        /* the address being connected to */
	bool reused;   /* this request went out on a connection that had served one */
	bool got_byte; /* a byte of the answer arrived */
	bool retried;
	uint32_t served; /* answers read on this connection */
	struct iovec iov[4];
	int iov_n, iov_at; /* what is left to write: iov[iov_at..iov_n) */
	struct iovec orig[4];
	int orig_n;
	int64_t t_ns;  /* the current read's clock */
	int64_t since_ns; /* the request written, or the last read stamped: no byte before */
	int os_errno;  /* of a failed connect or socket call */
	char refused[200]; /* the allow-list's reason for the first address it refused */
	char msg[160]; /* what went wrong, for the record */
	struct h1_parser p;
	uint64_t connects; /* connections this one opened */
	bool warm_only; /* opened by h1_open, no request yet */
};

/* Fills t from a URL's host and port (port NULL: 80). Returns 0 or -1. */
int h1_target_init(struct h1_target *t, const char *host, const char *port,
                   const struct netallow *allow, struct loop *loop);
void h1_target_release(struct h1_target *t);

void h1_conn_init(struct h1_conn *c, const struct h1_target *tgt, const struct h1_ops *ops,
                  void *ud);
/* Sends a request made of n (<= 4) buffers, borrowed until done. Returns
 * H1R_OK (the answer will come through ops), or an error when the
 * request could not go out at all (ops->done is not called then). */
int h1_start(struct h1_conn *c, const struct iovec *iov, int n);
/* Opens the connection ahead of any request (target.prewarm): it becomes
 * idle once connected, as if it had served one, so the first request on it
 * follows the reuse rules (retried once if the server closed it before any
 * answer byte). A failure only drops it: the first request connects anew.
 * A request started while it is still connecting goes out when it is. */
void h1_open(struct h1_conn *c);
/* Drops the connection (a cancelled or timed-out request, or the end). */
void h1_close(struct h1_conn *c);
/* Whether a request is in progress. */
bool h1_busy(const struct h1_conn *c);

#endif
