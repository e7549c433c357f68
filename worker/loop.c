/* loop.c - epoll + timerfd + libcurl multi-socket glue (see loop.h).
 *
 * Every registered fd has a `struct loop_watch` as its epoll data. A watch
 * that is removed while events for it may still sit in the current
 * epoll_wait batch (libcurl closing a socket while we dispatch another
 * one's events) is only marked dead and freed after the batch, so a stale
 * event never touches freed memory or the wrong socket.
 */
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "csample.h"
#include "util.h"

#define LOOP_MAX_EVENTS 256
/* A busy span longer than this is followed by a look without waiting, so
 * that a read found ready then is known to have waited since the span
 * began (the read lag's upper bound); after a shorter span the bound is
 * taken from the wait's return, at most this much short. */
#define LOOP_SPAN_LOOK_NS 20000LL

enum watch_kind { W_FD, W_TIMER, W_CURL };

struct loop_watch {
	int fd;
	int kind;
	int dead;
	int prio; /* dispatched before the other events of a batch */
	uint32_t events;
	loop_fd_fn fn;
	void *ud;
	struct loop_timer *timer;       /* W_TIMER */
	struct loop_watch *prev, *next; /* live list, or dead list (next only) */
};

struct loop_timer {
	struct loop_watch *w;
	loop_timer_fn fn;
	void *ud;
};

struct loop {
	int ep;
	CURLM *multi;
	int64_t curl_deadline; /* absolute monotonic ns; -1 when none */
	loop_done_fn on_done;
	void *done_ud;
	struct loop_watch *live, *dead;
	struct loop_stats stats;
	loop_batch_fn on_batch;
	void *batch_ud;
	int in_reads;     /* dispatching the batch's non-priority events */
	int64_t seen_ns;  /* since when this batch's ready sockets could have been seen */
	int64_t last_woke, last_after; /* the previous busy span */
	/* burst evidence since loop_take_bursts */
	int64_t read_lag[CSAMPLE_LATE_BUCKETS];
	int64_t read_lag_max;
	int64_t kern_lag[CSAMPLE_LATE_BUCKETS]; /* stamp minus the kernel's receive time */
	int64_t kern_lag_max;
	int64_t rt_off; /* CLOCK_REALTIME minus CLOCK_MONOTONIC, read once per batch */
	int rt_off_ok;
	int64_t win_start, win_busy; /* the current 100 ms window and its busy time */
	int64_t win[CSAMPLE_WIN_BUCKETS];
};

/* --- watches ---------------------------------------------------------- */

static struct loop_watch *watch_add(struct loop *l, int fd, int kind, uint32_t events)
{
	struct loop_watch *w = xcalloc(1, sizeof *w);
	w->fd = fd;
	w->kind = kind;
	w->events = events;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		/* libcurl may hand us a reused fd number still registered */
		if (errno != EEXIST || epoll_ctl(l->ep, EPOLL_CTL_MOD, fd, &ev) < 0) {
			free(w);
			return NULL;
		}
	}
	w->next = l->live;
	if (l->live)
		l->live->prev = w;
	l->live = w;
	return w;
}

static void watch_kill(struct loop *l, struct loop_watch *w)
{
	if (w->dead)
		return;
	/* fails harmlessly when the fd was already closed */
	epoll_ctl(l->ep, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = 1;
	if (w->prev)
		w->prev->next = w->next;
	else
		l->live = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = NULL;
	w->next = l->dead;
	l->dead = w;
}

static void free_dead(struct loop *l)
{
	while (l->dead) {
		struct loop_watch *w = l->dead;
		l->dead = w->next;
		free(w);
	}
}

struct loop_watch *loop_watch(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ud)
{
	struct loop_watch *w = watch_add(l, fd, W_FD, events);
	if (w) {
		w->fn = fn;
		w->ud = ud;
	}
	return w;
}

void loop_unwatch(struct loop *l, struct loop_watch *w)
{
	if (w)
		watch_kill(l, w);
}

int loop_watch_set(struct loop *l, struct loop_watch *w, uint32_t events)
{
	if (w->events == events)
		return 0;
	struct epoll_event ev = {.events = events, .data.ptr = w};
	if (epoll_ctl(l->ep, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return -1;
	w->events = events;
	return 0;
}

/* --- timers ----------------------------------------------------------- */

struct loop_timer *loop_timer_new(struct loop *l, loop_timer_fn fn, void *ud)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct loop_watch *w = watch_add(l, fd, W_TIMER, EPOLLIN);
	if (!w) {
		close(fd);
		return NULL;
	}
	struct loop_timer *t = xcalloc(1, sizeof *t);
	t->w = w;
	t->fn = fn;
	t->ud = ud;
	w->timer = t;
	return t;
}

static struct timespec ts_of(int64_t ns)
{
	struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
	return ts;
}

void loop_timer_at(struct loop_timer *t, int64_t at_ns)
{
	if (at_ns < 1)
		at_ns = 1; /* zero would disarm */
	struct itimerspec its = {.it_value = ts_of(at_ns)};
	timerfd_settime(t->w->fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void loop_timer_every(struct loop_timer *t, int64_t first_ns, int64_t period_ns)
{
	if (first_ns < 1)
		first_ns = 1;
	struct itimerspec its = {.it_value = ts_of(first_ns), .it_interval = ts_of(period_ns)};
	timerfd_settime(t->w->fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void loop_timer_stop(struct loop_timer *t)
{
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	timerfd_settime(t->w->fd, 0, &its, NULL);
}

void loop_timer_priority(struct loop_timer *t)
{
	t->w->prio = 1;
}

void loop_timer_free(struct loop *l, struct loop_timer *t)
{
	if (!t)
		return;
	int fd = t->w->fd;
	t->w->timer = NULL;
	watch_kill(l, t->w);
	close(fd);
	free(t);
}

/* --- libcurl glue ----------------------------------------------------- */

static int on_curl_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct loop *l = userp;
	struct loop_watch *w = socketp;

	if (what == CURL_POLL_REMOVE) {
		if (w) {
			watch_kill(l, w);
			curl_multi_assign(l->multi, s, NULL);
			l->stats.sockets--;
		}
		return 0;
	}
	uint32_t ev = 0;
	if (what & CURL_POLL_IN)
		ev |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev |= EPOLLOUT;
	if (!w) {
		w = watch_add(l, s, W_CURL, ev);
		if (!w)
			return -1; /* libcurl fails the transfer */
		curl_multi_assign(l->multi, s, w);
		l->stats.sockets++;
	} else if (w->events != ev) {
		struct epoll_event e = {.events = ev, .data.ptr = w};
		if (epoll_ctl(l->ep, EPOLL_CTL_MOD, s, &e) < 0)
			return -1;
		w->events = ev;
	}
	return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct loop *l = userp;
	if (timeout_ms < 0)
		l->curl_deadline = -1;
	else
		l->curl_deadline = mono_ns() + (int64_t)timeout_ms * 1000000LL;
	return 0;
}

/* Reports finished transfers; called after every socket action. */
static void check_done(struct loop *l)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(l->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *easy = m->easy_handle;
		CURLcode rc = m->data.result;
		if (l->on_done)
			l->on_done(l->done_ud, easy, rc);
		else
			curl_multi_remove_handle(l->multi, easy);
	}
}

static void curl_action(struct loop *l, curl_socket_t s, int flags)
{
	int running;
	curl_multi_socket_action(l->multi, s, flags, &running);
	check_done(l);
}

/* --- the loop --------------------------------------------------------- */

struct loop *loop_new(long maxconnects, char *err)
{
	struct loop *l = xcalloc(1, sizeof *l);
	l->curl_deadline = -1;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0) {
		free(l);
		errf(err, "epoll_create1: %s", strerror(errno));
		return NULL;
	}
	l->multi = curl_multi_init();
	if (!l->multi) {
		close(l->ep);
		free(l);
		errf(err, "curl_multi_init failed");
		return NULL;
	}
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
	curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS, maxconnects > 0 ? maxconnects : 16L);
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	/* closes cached connections; may call on_curl_socket(REMOVE) */
	curl_multi_cleanup(l->multi);
	while (l->live) {
		struct loop_watch *w = l->live;
		if (w->kind == W_TIMER) {
			int fd = w->fd;
			free(w->timer);
			w->timer = NULL;
			watch_kill(l, w);
			close(fd);
		} else {
			watch_kill(l, w);
		}
	}
	free_dead(l);
	close(l->ep);
	free(l);
}

void loop_on_done(struct loop *l, loop_done_fn fn, void *ud)
{
	l->on_done = fn;
	l->done_ud = ud;
}

int loop_add(struct loop *l, CURL *easy)
{
	return curl_multi_add_handle(l->multi, easy) == CURLM_OK ? 0 : -1;
}

void loop_remove(struct loop *l, CURL *easy)
{
	curl_multi_remove_handle(l->multi, easy);
}

static void dispatch(struct loop *l, struct loop_watch *w, uint32_t ev)
{
	switch (w->kind) {
	case W_CURL: {
		int flags = 0;
		if (ev & EPOLLIN)
			flags |= CURL_CSELECT_IN;
		if (ev & EPOLLOUT)
			flags |= CURL_CSELECT_OUT;
		if (ev & (EPOLLERR | EPOLLHUP))
			flags |= CURL_CSELECT_ERR;
		if (ev & EPOLLIN) /* libcurl stamps the read inside; this is just before */
			loop_note_read(l, mono_ns(), 0, 0);
		curl_action(l, w->fd, flags);
		break;
	}
	case W_TIMER: {
		uint64_t n = 0;
		if (read(w->fd, &n, sizeof n) != (ssize_t)sizeof n || n == 0)
			break; /* disarmed or re-armed meanwhile */
		if (w->timer && w->timer->fn)
			w->timer->fn(w->timer->ud, n);
		break;
	}
	default:
		if (w->fn)
			w->fn(w->ud, ev);
		break;
	}
}

void loop_note_read(struct loop *l, int64_t stamp_ns, int64_t since_ns, int64_t rx_real_ns)
{
	int64_t lag = stamp_ns - (since_ns > l->seen_ns ? since_ns : l->seen_ns);
	if (lag < 0)
		lag = 0;
	l->read_lag[csample_late_bucket(lag)]++;
	if (lag > l->read_lag_max)
		l->read_lag_max = lag;
	if (rx_real_ns <= 0)
		return;
	if (!l->rt_off_ok) { /* the realtime clock's offset, once per batch */
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &b);
		l->rt_off = ((int64_t)b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
		l->rt_off_ok = 1;
	}
	int64_t k = stamp_ns - (rx_real_ns - l->rt_off);
	if (k < 0)
		k = 0;
	l->kern_lag[csample_late_bucket(k)]++;
	if (k > l->kern_lag_max)
		l->kern_lag_max = k;
}

/* Closes the current window into its bucket. */
static void win_close(struct loop *l)
{
	int64_t b = l->win_busy * CSAMPLE_WIN_BUCKETS / CSAMPLE_WIN_NS;
	l->win[b < 0 ? 0 : b >= CSAMPLE_WIN_BUCKETS ? CSAMPLE_WIN_BUCKETS - 1 : b]++;
	l->win_busy = 0;
}

/* Adds the busy span [from, to) to the 100 ms windows it covers; windows
 * that passed without any busy time count as idle ones. */
static void win_add(struct loop *l, int64_t from, int64_t to)
{
	if (l->win_start == 0)
		l->win_start = from - from % CSAMPLE_WIN_NS;
	while (from >= l->win_start + CSAMPLE_WIN_NS) { /* windows before the span */
		win_close(l);
		l->win_start += CSAMPLE_WIN_NS;
		int64_t idle = (from - l->win_start) / CSAMPLE_WIN_NS;
		if (idle > 0) {
			l->win[0] += idle;
			l->win_start += idle * CSAMPLE_WIN_NS;
		}
	}
	while (to > l->win_start + CSAMPLE_WIN_NS) {
		l->win_busy += l->win_start + CSAMPLE_WIN_NS - from;
		from = l->win_start + CSAMPLE_WIN_NS;
		win_close(l);
		l->win_start += CSAMPLE_WIN_NS;
	}
	if (to > from)
		l->win_busy += to - from;
}

int loop_run_once(struct loop *l, int max_wait_ms)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int timeout = max_wait_ms;
	int64_t before = mono_ns();

	if (l->curl_deadline >= 0) {
		int64_t left = l->curl_deadline - before;
		int ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
		if (timeout < 0 || ms < timeout)
			timeout = ms;
	}
	/* After a long busy span, look without waiting first: what is ready
	 * now may have become ready at any moment of that span. */
	int n = 0;
	int64_t seen = 0;
	if (l->last_woke && l->last_after - l->last_woke > LOOP_SPAN_LOOK_NS && timeout != 0) {
		n = epoll_wait(l->ep, evs, LOOP_MAX_EVENTS, 0);
		if (n > 0)
			seen = l->last_woke;
		else
			n = 0;
	}
	if (!seen)
		n = epoll_wait(l->ep, evs, LOOP_MAX_EVENTS, timeout);
	int64_t woke = mono_ns();
	if (!seen)
		seen = l->last_woke && timeout == 0 ? l->last_woke : woke;
	l->seen_ns = seen;
	l->rt_off_ok = 0;
	l->stats.wakeups++;
	if (n < 0) {
		if (errno != EINTR)
			return -1;
		n = 0;
	}
	/* Reads first: every ready socket is read and its arrivals stamped
	 * before anything else of the batch runs. Sends a completion would
	 * start are deferred to the batch's end (loop_in_reads, the batch
	 * hook): a wave of sends must not delay the stamping of chunks that
	 * are already waiting. A late send shows in the schedule lag; a late
	 * stamp would show nowhere. Then the priority watches (the pacer),
	 * then the rest of the batch. */
	l->in_reads = 1;
	for (int i = 0; i < n; i++) {
		struct loop_watch *w = evs[i].data.ptr;
		if (w->dead || w->prio || w->kind == W_TIMER)
			continue;
		l->stats.events++;
		dispatch(l, w, evs[i].events);
	}
	l->in_reads = 0;
	for (int i = 0; i < n; i++) {
		struct loop_watch *w = evs[i].data.ptr;
		if (w->prio && !w->dead) {
			l->stats.events++;
			dispatch(l, w, evs[i].events);
		}
	}
	for (int i = 0; i < n; i++) {
		struct loop_watch *w = evs[i].data.ptr;
		if (w->dead || w->prio || w->kind != W_TIMER)
			continue;
		l->stats.events++;
		dispatch(l, w, evs[i].events);
	}
	if (l->on_batch)
		l->on_batch(l->batch_ud);
	if (l->curl_deadline >= 0 && mono_ns() >= l->curl_deadline) {
		l->curl_deadline = -1;
		curl_action(l, CURL_SOCKET_TIMEOUT, 0);
	}
	free_dead(l);
	int64_t after = mono_ns();
	l->stats.busy_ns += after - woke;
	win_add(l, woke, after);
	l->last_woke = woke;
	l->last_after = after;
	return 0;
}

void loop_on_batch(struct loop *l, loop_batch_fn fn, void *ud)
{
	l->on_batch = fn;
	l->batch_ud = ud;
}

int loop_in_reads(const struct loop *l)
{
	return l->in_reads;
}

void loop_take_bursts(struct loop *l, int64_t read_lag[CSAMPLE_LATE_BUCKETS],
		      int64_t *read_lag_max, int64_t kern_lag[CSAMPLE_LATE_BUCKETS],
		      int64_t *kern_lag_max, int64_t win[CSAMPLE_WIN_BUCKETS])
{
	memcpy(read_lag, l->read_lag, sizeof l->read_lag);
	*read_lag_max = l->read_lag_max;
	memcpy(kern_lag, l->kern_lag, sizeof l->kern_lag);
	*kern_lag_max = l->kern_lag_max;
	memset(l->kern_lag, 0, sizeof l->kern_lag);
	l->kern_lag_max = 0;
	memcpy(win, l->win, sizeof l->win);
	memset(l->read_lag, 0, sizeof l->read_lag);
	l->read_lag_max = 0;
	memset(l->win, 0, sizeof l->win);
}

void loop_kick(struct loop *l)
{
	if (l->curl_deadline >= 0 && mono_ns() >= l->curl_deadline) {
		l->curl_deadline = -1;
		curl_action(l, CURL_SOCKET_TIMEOUT, 0);
	}
}

void loop_get_stats(const struct loop *l, struct loop_stats *out)
{
	*out = l->stats;
}
