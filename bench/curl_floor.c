/* curl_floor.c - the cost of libcurl alone, for bench/client_cpu.py: the
 * worker's transfers without the worker.
 *
 * The same libcurl set-up as headroom-worker (worker/request.c, loop.c): one
 * multi handle driven by curl_multi_socket_action from an epoll loop, pooled
 * easy handles reused request after request, HTTP/1.1 keep-alive,
 * TCP_NODELAY, a pre-parsed URL (CURLOPT_CURLU), the same request headers
 * and body, the raw body (HTTP_TRANSFER_DECODING off) - and a write
 * callback that only counts bytes: no clock, no SSE, no JSON, no records.
 * What the worker costs above this is its own work; what this costs above
 * wrk is libcurl's.
 *
 * Build: cc -O2 -std=c11 -o curl_floor bench/curl_floor.c -lcurl
 * Run:   curl_floor URL BODY_FILE CONCURRENCY REQUESTS
 * Prints: "requests N errors E bytes B cpu_s S wall_s W" (CPU time of the
 * transfer loop only, user + system, from getrusage).
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>

static int ep;
static double deadline = -1; /* when libcurl's timeout is due (monotonic s); -1: none */
static size_t bytes;

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sp)
{
	struct epoll_event ev = {.data.fd = s};
	(void)e;
	(void)ud;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
		curl_multi_assign(ud, s, NULL);
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (sp) {
		epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
	} else {
		epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
		curl_multi_assign(ud, s, (void *)1);
	}
	return 0;
}

static int on_timer(CURLM *m, long ms, void *ud)
{
	(void)m;
	(void)ud;
	deadline = ms < 0 ? -1 : wall_s() + ms / 1e3;
	return 0;
}

static size_t on_write(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	bytes += sz * n;
	return sz * n;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: curl_floor URL BODY_FILE CONCURRENCY REQUESTS\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	static char body[1 << 20];
	size_t blen = fread(body, 1, sizeof body, f);
	fclose(f);
	int conc = atoi(argv[3]);
	long total = atol(argv[4]), started = 0, done = 0, errors = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURLU *u = curl_url();
	curl_url_set(u, CURLUPART_URL, argv[1], CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME);
	struct curl_slist *h = NULL;
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: text/event-stream");
	h = curl_slist_append(h, "Expect:");
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, m);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer);
	ep = epoll_create1(0);

	double c0 = cpu_s(), t0 = wall_s();
	for (int i = 0; i < conc && started < total; i++, started++) {
		CURL *e = curl_easy_init();
		curl_easy_setopt(e, CURLOPT_CURLU, u);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(e, CURLOPT_HTTP_TRANSFER_DECODING, 0L);
		curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_USERAGENT, "headroom-worker/0.1");
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_multi_add_handle(m, e);
	}
	int running = 0;
	struct epoll_event evs[256];
	/* the worker's loop (worker/loop.c): wait until an event or libcurl's
	 * deadline, hand every event to libcurl, take the finished transfers and
	 * start the next request on the same handle, run the timeout when due */
	while (done < total) {
		int wait = 1000;
		if (deadline >= 0) {
			double left = deadline - wall_s();
			wait = left <= 0 ? 0 : (int)(left * 1e3) + 1;
		}
		int n = epoll_wait(ep, evs, 256, wait);
		for (int i = 0; i < n; i++) {
			int fl = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
			         (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
			         (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(m, evs[i].data.fd, fl, &running);
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			CURL *e = msg->easy_handle;
			long code = 0;
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
			if (msg->data.result != CURLE_OK || code != 200)
				errors++;
			done++;
			curl_multi_remove_handle(m, e);
			if (started < total) { /* the handle's next request, as the worker does */
				started++;
				curl_multi_add_handle(m, e);
			} else {
				curl_easy_cleanup(e);
			}
		}
		if (deadline >= 0 && wall_s() >= deadline) {
			deadline = -1;
			curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
		}
	}
	double c1 = cpu_s(), t1 = wall_s();
	printf("requests %ld errors %ld bytes %zu cpu_s %.6f wall_s %.6f\n", done, errors, bytes,
	       c1 - c0, t1 - t0);
	curl_multi_cleanup(m);
	curl_slist_free_all(h);
	curl_url_cleanup(u);
	curl_global_cleanup();
	return errors ? 1 : 0;
}
