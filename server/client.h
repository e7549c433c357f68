/* client.h - the load generator's own telemetry: storing the samples of
 * workers and of the daemon (table client_samples, schema/003_client.sql)
 * and reading them back for the export and the verdict (verdict.h).
 */
#ifndef HR_SERVER_CLIENT_H
#define HR_SERVER_CLIENT_H

#include <stdint.h>

#include "csample.h"
#include "dynbuf.h"
#include "store.h"

/* Queues a worker's sample for storage (source "w<index>"). */
void client_store_worker(struct store *s, int64_t run_id, int worker, const struct csample *cs);

/* One sample of the daemon itself. */
struct dsample {
	int64_t t_ns, interval_ns;
	double cpu;          /* the daemon process, all threads, 1.0 = one core */
	int64_t backlog;     /* records received from workers, not yet stored */
	int64_t in_flight, sent, completed; /* summed over the workers' heartbeats */
};
void client_store_daemon(struct store *s, int64_t run_id, const struct dsample *d);

/* A row of client_samples as read back. NULL columns read as -1 (NAN for
 * cpu and busy). */
struct client_row {
	char source[16];
	int worker;  /* -1 for the daemon */
	int64_t t_ns, interval_ns;
	int phase;   /* -1 for the daemon */
	double cpu, busy;
	int64_t wakeups;
	int64_t late[CSAMPLE_LATE_BUCKETS];
	int64_t late_max_ns, in_flight, queued, queued_age_ns, record_backlog;
	int64_t conn_errors, port_errors, sent, completed;
	int64_t read_lag[CSAMPLE_LATE_BUCKETS]; /* burst evidence (zeros when absent) */
	int64_t read_lag_max_ns;                /* -1 when absent */
	int64_t kern_lag[CSAMPLE_LATE_BUCKETS]; /* zeros when absent */
	int64_t kern_lag_max_ns;                /* -1 when absent */
	int64_t windows[CSAMPLE_WIN_BUCKETS];
};

/* Rows of a run, ordered by source then time (the verdict) or by time then
 * source (the export). */
struct client_cursor;
struct client_cursor *client_cursor_open(struct store *s, int64_t run_id, int by_time);
/* 1 and *row, 0 at the end, -1 on error. */
int client_cursor_row(struct client_cursor *c, struct client_row *row);
/* Appends the next row as CSV (client_csv_header) or as one JSON object:
 * 1, 0 at the end, -1 on error. */
int client_cursor_next(struct client_cursor *c, int csv, struct dynbuf *out);
void client_cursor_free(struct client_cursor *c);

extern const char client_csv_header[];

#endif
