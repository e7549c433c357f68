/* loop.h - the worker's one event loop: epoll, timerfds and libcurl's multi
 * socket interface, glued together.
 *
 * One thread, one loop. Everything the worker waits for is a file
 * descriptor in one epoll set: the sockets libcurl asks us to watch
 * (CURLMOPT_SOCKETFUNCTION), timerfds (the periodic tick, the start at t0,
 * later the rate pacer), the ZeroMQ socket's ZMQ_FD and a signalfd.
 * libcurl's own timeout (CURLMOPT_TIMERFUNCTION) is kept as a deadline and
 * becomes the epoll_wait timeout, which costs no system call per update.
 *
 * A transfer that finishes is reported through the done callback right
 * after the curl_multi_socket_action call that finished it, outside any
 * libcurl callback: the callback may remove the handle and add new ones.
 *
 * Ownership: the loop owns the multi handle and the epoll fd; easy handles
 * belong to their callers, who must remove every one (loop_remove) before
 * loop_free. Watches and timers are owned by the loop and freed by
 * loop_unwatch / loop_timer_free or at loop_free.
 *
 * Thread affinity: the thread that created the loop, only.
 */
#ifndef HR_WORKER_LOOP_H
#define HR_WORKER_LOOP_H

#include <curl/curl.h>
#include <stdint.h>

#include "csample.h"

struct loop;
struct loop_watch;
struct loop_timer;

/* Called with the epoll event bits (EPOLLIN...) of a watched fd. */
typedef void (*loop_fd_fn)(void *ud, uint32_t events);
/* Called when a timer fires; expirations counts the periods that passed
 * since the last call (more than 1 when the loop fell behind). */
typedef void (*loop_timer_fn)(void *ud, uint64_t expirations);
/* Called once per finished transfer (CURLMSG_DONE), with its result. The
 * handle is still in the multi; the callback normally calls loop_remove. */
typedef void (*loop_done_fn)(void *ud, CURL *easy, CURLcode result);

/* Creates the epoll set and the multi handle. maxconnects sizes libcurl's
 * connection cache (the number of concurrent streams is a good value).
 * Returns NULL with a message in err (HR_ERRLEN bytes). */
struct loop *loop_new(long maxconnects, char *err);
/* Frees the multi handle, every watch and timer, the epoll set. Every easy
 * handle must have been removed. NULL is a no-op. */
void loop_free(struct loop *l);

/* Sets who hears about finished transfers (borrowed ud). */
void loop_on_done(struct loop *l, loop_done_fn fn, void *ud);
/* curl_multi_add_handle / curl_multi_remove_handle. Return 0 or -1. */
int loop_add(struct loop *l, CURL *easy);
void loop_remove(struct loop *l, CURL *easy);

/* Watches fd (borrowed: the caller closes it after loop_unwatch) for
 * events (EPOLLIN, EPOLLOUT; level-triggered). Returns NULL on failure. */
struct loop_watch *loop_watch(struct loop *l, int fd, uint32_t events, loop_fd_fn fn, void *ud);
void loop_unwatch(struct loop *l, struct loop_watch *w);
/* Changes the events a watch waits for. Returns 0 or -1. */
int loop_watch_set(struct loop *l, struct loop_watch *w, uint32_t events);

/* A timerfd on CLOCK_MONOTONIC. NULL on failure. */
struct loop_timer *loop_timer_new(struct loop *l, loop_timer_fn fn, void *ud);
/* Fires once at the absolute monotonic time at_ns (at once if past). */
void loop_timer_at(struct loop_timer *t, int64_t at_ns);
/* Fires every period_ns, the first time at first_ns (absolute). */
void loop_timer_every(struct loop_timer *t, int64_t first_ns, int64_t period_ns);
void loop_timer_stop(struct loop_timer *t);
/* Its expirations are dispatched before the other events of the same
 * epoll batch (the rate pacer). */
void loop_timer_priority(struct loop_timer *t);
void loop_timer_free(struct loop *l, struct loop_timer *t);

/* Waits for events (at most max_wait_ms; -1: as long as nothing is due)
 * and dispatches them: watches, timers, libcurl sockets and timeouts,
 * finished transfers. Returns 0, or -1 when epoll itself failed. */
int loop_run_once(struct loop *l, int max_wait_ms);

/* Runs libcurl's timeout now if it is due - after curl_multi_add_handle it
 * is (0 ms), so new transfers start at once instead of after the rest of
 * the batch. Call it outside libcurl callbacks. */
void loop_kick(struct loop *l);

/* Called once per wake-up, after the batch's events (see loop_run_once:
 * reads first, then the priority watches, then the other timers). */
typedef void (*loop_batch_fn)(void *ud);
void loop_on_batch(struct loop *l, loop_batch_fn fn, void *ud);
/* Whether the loop is dispatching the reads of a batch: a send a
 * completion would start now waits for the batch hook instead. */
int loop_in_reads(const struct loop *l);

/* Burst evidence (docs/client.md): a read stamped at stamp_ns (absolute
 * monotonic) is counted by its lag, the time since the loop could first
 * have seen its socket ready: the return of the wait that reported it, or,
 * when it was found ready right after a busy span (a look without
 * waiting), the start of that span - but never before since_ns, when the
 * caller knows nothing could have arrived earlier (the request was written
 * then, or the previous read was stamped then; 0: unknown). rx_real_ns,
 * when not 0, is the kernel's receive time of the newest data of the read
 * (SO_TIMESTAMPNS, CLOCK_REALTIME): the read is also counted by its kernel
 * lag, the stamp minus that time, a lower bound of how long its first byte
 * waited (the host's scheduling of the worker included). */
void loop_note_read(struct loop *l, int64_t stamp_ns, int64_t since_ns, int64_t rx_real_ns);
/* Copies the read lag histogram (csample_late_edges_ns buckets), its
 * largest lag and the histogram of 100 ms windows by busy fraction (tenths)
 * (and the kernel lag histogram and largest) gathered since the last call, and starts them afresh. */
void loop_take_bursts(struct loop *l, int64_t read_lag[CSAMPLE_LATE_BUCKETS],
		      int64_t *read_lag_max, int64_t kern_lag[CSAMPLE_LATE_BUCKETS],
		      int64_t *kern_lag_max, int64_t win[CSAMPLE_WIN_BUCKETS]);

/* Counters for the client-headroom evidence (docs/worker.md). */
struct loop_stats {
	uint64_t wakeups; /* epoll_wait returns */
	uint64_t events;  /* fd events dispatched */
	int64_t busy_ns;  /* time spent outside epoll_wait */
	uint64_t sockets; /* libcurl sockets currently watched */
};
void loop_get_stats(const struct loop *l, struct loop_stats *out);

#endif
