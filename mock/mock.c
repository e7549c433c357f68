/* mock.c - the event loop of headroom-mock, an OpenAI-compatible inference
 * server simulator that benchmarks run against instead of a GPU.
 *
 * Why a small hand-written epoll server and not libmicrohttpd (which the
 * daemon uses): the mock's job is timed streaming. Thousands of
 * concurrent responses each emit a token at a time the simulator decides,
 * all from one thread. libmicrohttpd's streaming is a content-reader
 * callback the library polls; making it wait until a token is due needs
 * suspend/resume per connection plus a timer of our own, or a thread per
 * connection, and we would still not control when bytes reach the socket.
 * Here one loop owns every socket: a min-heap of per-connection deadlines
 * sets one timerfd, each wake-up emits exactly what is due, a response
 * with no delay is written with as few write() calls as possible, and a
 * connection costs a struct and two buffers. That exact control is also
 * what a load model of continuous batching (max batch, prefill time
 * growing with the prompt, decode time growing with active sequences,
 * queueing, in model.c) needs: it decides each response's next step time
 * (model_next_ns(), or a wake-up when an engine step completes a chunk),
 * and the timer also fires at the end of each engine step.
 *
 * Shape: one thread, level-triggered epoll, non-blocking sockets.
 * With --dcgm-listen a second listening socket feeds the same loop; its
 * connections (conn.dcgm) serve only the DCGM page, under the same bounds
 * and the same connection limit (both listeners pause together).
 * Each connection has an input buffer (bounded by
 * HR_MOCK_MAX_REQUEST_BYTES; pipelined requests wait there in order), an
 * output buffer with EPOLLOUT when the socket is full, and at most one
 * response in progress. conn_run() does all the work for a connection
 * whenever something happened to it (readable, writable, deadline). A
 * closed connection is unlinked at once but freed only after the event
 * batch, so later events of the batch never touch freed memory. Closing
 * after an error or "Connection: close" shuts down our side first and
 * reads until the peer's FIN (bounded in time and bytes) so that the
 * peer sees the response rather than a reset. An injected reset
 * (conn.reset, api.c) is the opposite: an abortive close as soon as the
 * output has reached the peer (polled with SIOCOUTQ, bounded in time).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define RBUF_SIZE (64u << 10)
#define MAX_EVENTS 512
#define ACCEPTS_PER_WAKE 1024
#define ROUNDS_PER_RUN 8           /* generate+flush rounds before yielding */
#define KEEP_BUF_BYTES (64u << 10) /* larger idle buffers are released */

/* epoll data for the sockets that are not connections */
static char tag_listen, tag_dcgm, tag_timer;

static size_t pending(const struct conn *c)
{
	return c->out.len - c->out_off;
}

/* ---- timer heap: connections keyed by deadline_ns ---- */

static void heap_swap(struct server *srv, size_t i, size_t j)
{
	struct conn *t = srv->heap[i];
	srv->heap[i] = srv->heap[j];
	srv->heap[j] = t;
	srv->heap[i]->heap_idx = i;
	srv->heap[j]->heap_idx = j;
}

static void heap_up(struct server *srv, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (srv->heap[p]->deadline_ns <= srv->heap[i]->deadline_ns)
			break;
		heap_swap(srv, i, p);
		i = p;
	}
}

static void heap_down(struct server *srv, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < srv->heap_len && srv->heap[l]->deadline_ns < srv->heap[m]->deadline_ns)
			m = l;
		if (r < srv->heap_len && srv->heap[r]->deadline_ns < srv->heap[m]->deadline_ns)
			m = r;
		if (m == i)
			return;
		heap_swap(srv, i, m);
		i = m;
	}
}

static void heap_set(struct server *srv, struct conn *c, int64_t deadline)
{
	if (c->heap_idx != MOCK_NO_HEAP) {
		int64_t old = c->deadline_ns;
		c->deadline_ns = deadline;
		if (deadline < old)
			heap_up(srv, c->heap_idx);
		else if (deadline > old)
			heap_down(srv, c->heap_idx);
		return;
	}
	if (srv->heap_len == srv->heap_cap) {
		srv->heap_cap = srv->heap_cap ? srv->heap_cap * 2 : 64;
		srv->heap = xrealloc(srv->heap, srv->heap_cap * sizeof(*srv->heap));
	}
	c->deadline_ns = deadline;
	c->heap_idx = srv->heap_len;
	srv->heap[srv->heap_len++] = c;
	heap_up(srv, c->heap_idx);
}

static void heap_remove(struct server *srv, struct conn *c)
{
	size_t i = c->heap_idx;
	if (i == MOCK_NO_HEAP)
		return;
	c->heap_idx = MOCK_NO_HEAP;
	srv->heap_len--;
	if (i == srv->heap_len)
		return;
	srv->heap[i] = srv->heap[srv->heap_len];
	srv->heap[i]->heap_idx = i;
	heap_up(srv, i);
	heap_down(srv, srv->heap[i]->heap_idx);
}

/* timer_armed_ns after the timerfd fired: it is readable until set again,
 * so arm_timer() sets it whatever the next deadline (0 disarms it). */
#define TIMER_FIRED (-1)

/* Point the timerfd at the earliest deadline: a connection's, or the end
 * of the load model's engine step. */
static void arm_timer(struct server *srv)
{
	int64_t want = srv->heap_len ? srv->heap[0]->deadline_ns : 0;
	int64_t engine = model_deadline(&srv->model);
	if (engine && (!want || engine < want))
		want = engine;
	if (want == srv->timer_armed_ns)
		return;
	struct itimerspec its = {0};
	if (want) {
		if (want < 1)
			want = 1;
		its.it_value.tv_sec = want / 1000000000LL;
		its.it_value.tv_nsec = want % 1000000000LL;
	}
	if (timerfd_settime(srv->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		srv->timer_armed_ns = want;
}

/* ---- connections ---- */

static void set_events(struct server *srv, struct conn *c, uint32_t events)
{
	if (events == c->events)
		return;
	struct epoll_event ev = {.events = events, .data.ptr = c};
	if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->events = events;
}

/* Both listening sockets share the connection bound: pause and resume
 * them together. */
static void accept_set(struct server *srv, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = &tag_listen};
	if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->lfd, &ev) < 0)
		return;
	if (srv->dfd >= 0) {
		ev.data.ptr = &tag_dcgm;
		epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->dfd, &ev);
	}
	srv->accept_paused = !events;
}

static void accept_resume(struct server *srv)
{
	if (srv->accept_paused)
		accept_set(srv, EPOLLIN);
}

static void accept_pause(struct server *srv)
{
	if (!srv->accept_paused)
		accept_set(srv, 0);
}

static void conn_free(struct conn *c)
{
	dynbuf_release(&c->in);
	dynbuf_release(&c->out);
	dynbuf_release(&c->ev_head);
	free(c);
}

static void conn_close(struct server *srv, struct conn *c)
{
	if (c->dead)
		return;
	heap_remove(srv, c);
	close(c->fd); /* also leaves the epoll set */
	if (c->st.active) {
		model_stream_end(&srv->model, &c->st);
		c->st.active = false;
	}
	api_stream_free(&c->st);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = NULL;
	c->next = srv->graveyard;
	srv->graveyard = c;
	c->dead = true;
	srv->nconns--;
	accept_resume(srv);
}

/* Accept on lfd (the main port, or the DCGM page's when dcgm). */
static void do_accept(struct server *srv, int lfd, bool dcgm)
{
	for (int i = 0; i < ACCEPTS_PER_WAKE; i++) {
		if (srv->nconns >= HR_MOCK_MAX_CONNS) {
			accept_pause(srv);
			return;
		}
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (!srv->cfg->quiet)
				fprintf(stderr, "headroom-mock: accept: %s\n", strerror(errno));
			/* Out of descriptors or memory: wait for a connection to
			 * close rather than spin on the listening socket. */
			if (srv->nconns > 0)
				accept_pause(srv);
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->dcgm = dcgm;
		c->heap_idx = MOCK_NO_HEAP;
		dynbuf_init(&c->in, HR_MOCK_MAX_REQUEST_BYTES);
		dynbuf_init(&c->out, MOCK_OUT_MAX);
		dynbuf_init(&c->ev_head, MOCK_OUT_MAX);
		c->events = EPOLLIN | EPOLLRDHUP;
		struct epoll_event ev = {.events = c->events, .data.ptr = c};
		if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			conn_free(c);
			continue;
		}
		c->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = c;
		srv->conns = c;
		srv->nconns++;
	}
}

/* Read what is there into c->in. Returns -1 on a connection error. */
static int conn_read(struct server *srv, struct conn *c)
{
	struct dynbuf *in = &c->in;
	if (c->in_off) {
		memmove(in->data, in->data + c->in_off, in->len - c->in_off);
		in->len -= c->in_off;
		in->data[in->len] = '\0';
		c->in_off = 0;
	}
	for (;;) {
		size_t room = in->max - in->len;
		if (room == 0)
			return 0;
		size_t want = room < RBUF_SIZE ? room : RBUF_SIZE;
		ssize_t n = recv(c->fd, srv->rbuf, want, 0);
		if (n > 0) {
			dynbuf_add(in, srv->rbuf, (size_t)n);
			if ((size_t)n < want)
				return 0; /* drained; level-triggered epoll reports the rest */
			continue;
		}
		if (n == 0) {
			c->peer_eof = true;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -1;
	}
}

/* Send what c->out holds. Returns -1 on a connection error. */
static int conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n =
		    send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n >= 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		return -1;
	}
	if (c->out_off == c->out.len) {
		c->out_off = 0;
		if (c->out.cap > KEEP_BUF_BYTES)
			dynbuf_release(&c->out);
		else
			dynbuf_reset(&c->out);
	} else if (c->out_off > KEEP_BUF_BYTES && c->out_off * 2 > c->out.len) {
		memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out.data[c->out.len] = '\0';
		c->out_off = 0;
	}
	return 0;
}

/* Answer requests and advance the response in progress until the output
 * is full, nothing is due, or the input holds no whole request. Returns
 * whether anything was produced. */
static bool conn_generate(struct server *srv, struct conn *c, int64_t now)
{
	bool progress = false;
	while (!c->overflow && pending(c) < MOCK_OUT_HIGH_WATER) {
		if (c->st.active) {
			size_t before = c->out.len;
			api_pump(srv, c, now);
			progress |= c->out.len != before;
			if (c->st.active)
				break;
			continue;
		}
		if (c->close_after || c->in.len == c->in_off)
			break;
		struct http_request req;
		int status = 0;
		const char *msg = NULL;
		enum http_parse_result r =
		    http_parse(c->in.data + c->in_off, c->in.len - c->in_off, &req, &status, &msg);
		if (r == HTTP_NEED_MORE)
			break;
		if (r == HTTP_NEED_BODY) {
			if (req.expect_continue && !c->sent_continue) {
				out_str(c, "HTTP/1.1 100 Continue\r\n\r\n");
				c->sent_continue = true;
				progress = true;
			}
			break;
		}
		progress = true;
		if (r == HTTP_BAD) {
			if (!srv->cfg->quiet)
				fprintf(stderr, "headroom-mock: %d %s\n", status, msg);
			c->close_after = true;
			c->head = false;
			http_error(c, status, msg, NULL);
			break;
		}
		c->in_off += req.total_len;
		c->sent_continue = false;
		if (!req.keep_alive)
			c->close_after = true;
		api_handle(srv, c, &req, now);
	}
	if (c->in_off && c->in_off == c->in.len) {
		c->in_off = 0;
		if (c->in.cap > KEEP_BUF_BYTES)
			dynbuf_release(&c->in);
		else
			dynbuf_reset(&c->in);
	}
	return progress;
}

/* Whether an injected reset is due: the output has reached the peer
 * (none is left here nor in the kernel's send queue, since an abortive
 * close drops that), or MOCK_RESET_WAIT_NS passed. */
static bool reset_due(struct conn *c, int64_t now)
{
	if (!c->reset_by)
		c->reset_by = now + MOCK_RESET_WAIT_NS;
	if (now >= c->reset_by)
		return true;
	if (pending(c))
		return false;
	int unsent = 0;
	return ioctl(c->fd, SIOCOUTQ, &unsent) < 0 || unsent <= 0;
}

/* An injected reset: an abortive close (SO_LINGER 0), so the peer gets an
 * RST after the last byte. */
static void conn_reset(struct server *srv, struct conn *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	conn_close(srv, c);
}

/* When c's response next needs a turn: its next step, or the end of an
 * injected stall; MOCK_NEVER when the model will wake it or the stall
 * lasts until the client leaves. */
static int64_t stream_wake_ns(const struct stream *s, int64_t now)
{
	if (s->hold_ns <= now)
		return s->next_ns;
	if (s->next_ns == MOCK_NEVER || s->next_ns < s->hold_ns)
		return s->hold_ns;
	return s->next_ns;
}

/* Our side is done: send FIN and wait (bounded) for the peer's, reading
 * and dropping what it still sends, so it reads our last response instead
 * of a reset. */
static void conn_linger(struct server *srv, struct conn *c, int64_t now)
{
	if (c->peer_eof || shutdown(c->fd, SHUT_WR) < 0) {
		conn_close(srv, c);
		return;
	}
	c->lingering = true;
	dynbuf_release(&c->in);
	dynbuf_release(&c->out);
	c->in_off = c->out_off = 0;
	set_events(srv, c, EPOLLIN | EPOLLRDHUP);
	heap_set(srv, c, now + MOCK_LINGER_NS);
}

static void linger_read(struct server *srv, struct conn *c)
{
	for (;;) {
		ssize_t n = recv(c->fd, srv->rbuf, RBUF_SIZE, 0);
		if (n > 0) {
			c->lingered += (size_t)n;
			if (c->lingered > MOCK_LINGER_MAX_BYTES)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		break; /* EOF or error */
	}
	conn_close(srv, c);
}

/* Everything a connection does after an event (ev: epoll events, 0 for a
 * deadline). */
static void conn_run(struct server *srv, struct conn *c, uint32_t ev, int64_t now)
{
	if (c->lingering) {
		if (ev == 0 || (ev & EPOLLERR))
			conn_close(srv, c);
		else
			linger_read(srv, c);
		return;
	}
	if (ev & EPOLLERR) {
		conn_close(srv, c);
		return;
	}
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
		bool was_eof = c->peer_eof;
		if (conn_read(srv, c) < 0 || (was_eof && (ev & EPOLLHUP))) {
			conn_close(srv, c);
			return;
		}
		/* A client that goes away while its response is in progress
		 * has disconnected: drop the response. */
		if (c->peer_eof && c->st.active) {
			conn_close(srv, c);
			return;
		}
	}

	c->more = false;
	for (int round = 0;; round++) {
		bool progress = conn_generate(srv, c, now);
		if (c->overflow) {
			fprintf(stderr, "headroom-mock: output buffer bound reached\n");
			conn_close(srv, c);
			return;
		}
		if (conn_flush(c) < 0) {
			conn_close(srv, c);
			return;
		}
		if (c->reset && reset_due(c, now)) {
			conn_reset(srv, c);
			return;
		}
		if (!progress || pending(c))
			break;
		if (round == ROUNDS_PER_RUN) {
			c->more = true; /* let other connections run; EPOLLOUT brings us back */
			break;
		}
	}

	size_t pend = pending(c);
	if (pend == 0 && !c->st.active && !c->more) {
		if (c->close_after) {
			conn_linger(srv, c, now);
			return;
		}
		if (c->peer_eof) {
			conn_close(srv, c); /* whatever is left can never be a whole request */
			return;
		}
	}

	uint32_t events = 0;
	if (!c->peer_eof && c->in.len - c->in_off < c->in.max)
		events |= EPOLLIN | EPOLLRDHUP;
	if (pend || c->more)
		events |= EPOLLOUT;
	set_events(srv, c, events);

	if (c->reset) {
		/* waiting for the output to reach the peer: look again soon */
		int64_t poll = now + MOCK_RESET_POLL_NS;
		heap_set(srv, c, pend || poll > c->reset_by ? c->reset_by : poll);
		return;
	}
	int64_t wake = c->st.active ? stream_wake_ns(&c->st, now) : MOCK_NEVER;
	if (!c->more && pend < MOCK_OUT_HIGH_WATER && wake != MOCK_NEVER)
		heap_set(srv, c, wake);
	else
		heap_remove(srv, c);
}

/* The load model has made a chunk of c's response due at s->next_ns. A
 * connection waiting for its output to drain is rescheduled too; it finds
 * nothing to do and leaves the heap again. */
static void model_wake(void *ctx, struct stream *s)
{
	struct server *srv = ctx;
	struct conn *c = (struct conn *)(void *)((char *)s - offsetof(struct conn, st));
	int64_t wake = stream_wake_ns(s, s->next_ns);
	if (!c->dead && !c->lingering && !c->reset && wake != MOCK_NEVER)
		heap_set(srv, c, wake);
}

static void run_timers(struct server *srv, int64_t now)
{
	model_advance(&srv->model, now);
	while (srv->heap_len && srv->heap[0]->deadline_ns <= now) {
		struct conn *c = srv->heap[0];
		heap_remove(srv, c);
		conn_run(srv, c, 0, now);
	}
}

static void bury(struct server *srv)
{
	while (srv->graveyard) {
		struct conn *c = srv->graveyard;
		srv->graveyard = c->next;
		conn_free(c);
	}
}

/* ---- the server ---- */

/* Allow as many descriptors as the connection bound needs, if we may. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = HR_MOCK_MAX_CONNS + 64;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int open_listener(const char *host, int portnum, char *bound, size_t bound_len, char *err)
{
	char port[16];
	snprintf(port, sizeof(port), "%d", portnum);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return errf(err, "cannot resolve '%s': %s", host, gai_strerror(rc));
	int fd = -1, saved = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		            ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return errf(err, "cannot listen on %s:%d: %s", host, portnum, strerror(saved));

	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[NI_MAXHOST], p[NI_MAXSERV];
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
	                NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		close(fd);
		return errf(err, "cannot read the bound address");
	}
	snprintf(bound, bound_len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
	return fd;
}

int server_open(struct server *srv, const struct mock_config *cfg, char *bound, size_t bound_len,
                char *dbound, size_t dbound_len, char *err)
{
	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->epfd = srv->lfd = srv->dfd = srv->tfd = -1;
	model_init(&srv->model, cfg, model_wake, srv);
	srv->model.load_changed = tel_load_changed;
	tel_init(srv, mono_ns());
	dynbuf_init(&srv->scratch, MOCK_OUT_MAX);
	srv->started = wall_ns() / 1000000000LL;

	json_t *name = json_string(cfg->model);
	if (!name)
		return errf(err, "the model name must be valid UTF-8");
	srv->model_json = json_dumps(name, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(name);
	if (!srv->model_json)
		xalloc_die();
	srv->model_json_len = strlen(srv->model_json);

	raise_fd_limit();
	srv->lfd = open_listener(cfg->host, cfg->port, bound, bound_len, err);
	if (srv->lfd < 0)
		return -1;
	if (cfg->dcgm) {
		srv->dfd = open_listener(cfg->dcgm_host, cfg->dcgm_port, dbound, dbound_len, err);
		if (srv->dfd < 0)
			return -1;
	}
	srv->epfd = epoll_create1(EPOLL_CLOEXEC);
	srv->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (srv->epfd < 0 || srv->tfd < 0)
		return errf(err, "epoll/timerfd: %s", strerror(errno));
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_listen};
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->lfd, &ev) < 0)
		return errf(err, "epoll_ctl: %s", strerror(errno));
	ev.data.ptr = &tag_dcgm;
	if (srv->dfd >= 0 && epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->dfd, &ev) < 0)
		return errf(err, "epoll_ctl: %s", strerror(errno));
	ev.data.ptr = &tag_timer;
	if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, srv->tfd, &ev) < 0)
		return errf(err, "epoll_ctl: %s", strerror(errno));
	srv->rbuf = xmalloc(RBUF_SIZE);
	return 0;
}

int server_run(struct server *srv, volatile sig_atomic_t *stop, const sigset_t *run_mask)
{
	struct epoll_event evs[MAX_EVENTS];
	while (!*stop) {
		arm_timer(srv);
		int n = epoll_pwait(srv->epfd, evs, MAX_EVENTS, -1, run_mask);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "headroom-mock: epoll_wait: %s\n", strerror(errno));
			return -1;
		}
		int64_t now = mono_ns();
		bool io = false;
		/* Engine steps that ended by now come before these events. */
		model_advance(&srv->model, now);
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &tag_listen) {
				do_accept(srv, srv->lfd, false);
				io = true;
			} else if (p == &tag_dcgm) {
				do_accept(srv, srv->dfd, true);
				io = true;
			} else if (p == &tag_timer) {
				/* Not read: arm_timer()'s timerfd_settime() clears
				 * the expiry count, one system call fewer per tick. */
				srv->timer_armed_ns = TIMER_FIRED;
			} else {
				struct conn *c = p;
				if (!c->dead) {
					conn_run(srv, c, evs[i].events, now);
					io = true;
				}
			}
		}
		/* A tick alone took no time since `now`: the clock is read once
		 * per tick; after socket work again, for what became due. */
		run_timers(srv, io ? mono_ns() : now);
		bury(srv);
	}
	return 0;
}

void server_close(struct server *srv)
{
	while (srv->conns)
		conn_close(srv, srv->conns);
	bury(srv);
	free(srv->heap);
	srv->heap = NULL;
	srv->heap_len = srv->heap_cap = 0;
	if (srv->tfd >= 0)
		close(srv->tfd);
	if (srv->epfd >= 0)
		close(srv->epfd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->dfd >= 0)
		close(srv->dfd);
	srv->tfd = srv->epfd = srv->lfd = srv->dfd = -1;
	free(srv->rbuf);
	srv->rbuf = NULL;
	free(srv->model_json);
	srv->model_json = NULL;
	tel_free(srv);
	dynbuf_release(&srv->scratch);
}
