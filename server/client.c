/* client.c - storing and reading the load generator's own telemetry
 * (client.h). */
#include "client.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "util.h"

struct srow {
	int64_t run_id;
	struct client_row r;
};

static const char insert_sql[] =
    "INSERT INTO client_samples (run_id, source, t_ns, interval_ns, phase, cpu, busy, "
    "wakeups, late, late_max_ns, in_flight, queued, queued_age_ns, record_backlog, "
    "conn_errors, port_errors, sent, completed, read_lag, read_lag_max_ns, busy_windows, "
    "kernel_lag, kernel_lag_max_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
	if (v >= 0)
		sqlite3_bind_int64(st, i, v);
}

#define LATE_TEXT (CSAMPLE_WIN_BUCKETS * 21 + 4) /* the longer of the two histograms */

/* nb counts separated by sep, into out (LATE_TEXT bytes); returns out. */
static char *counts_text(char *out, const int64_t *h, int nb, const char *sep)
{
	size_t n = 0;
	out[0] = '\0';
	for (int b = 0; b < nb; b++)
		n += (size_t)snprintf(out + n, LATE_TEXT - 2 - n, "%s%lld", b ? sep : "",
				      (long long)h[b]);
	return out;
}

static char *late_text(char *out, const int64_t late[CSAMPLE_LATE_BUCKETS], const char *sep)
{
	return counts_text(out, late, CSAMPLE_LATE_BUCKETS, sep);
}

/* "[a,b,...]" into out (LATE_TEXT bytes) */
static char *json_counts(char *out, const int64_t *h, int nb)
{
	out[0] = '[';
	strcat(counts_text(out + 1, h, nb, ","), "]");
	return out;
}

/* Up to nb counts from a stored "[a,b,...]" (NULL: zeros). */
static void parse_counts(const char *t, int64_t *h, int nb)
{
	for (int b = 0; t && *t && b < nb; b++) {
		while (*t == '[' || *t == ',')
			t++;
		char *end;
		h[b] = strtoll(t, &end, 10);
		t = end;
	}
}

static int insert_job(struct store_tx *tx, void *arg, char *err)
{
	const struct srow *s = arg;
	const struct client_row *r = &s->r;
	sqlite3_stmt *st = store_tx_stmt(tx, insert_sql);
	sqlite3_bind_int64(st, 1, s->run_id);
	sqlite3_bind_text(st, 2, r->source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, r->t_ns);
	sqlite3_bind_int64(st, 4, r->interval_ns);
	bind_opt(st, 5, r->phase);
	if (!isnan(r->cpu))
		sqlite3_bind_double(st, 6, r->cpu);
	if (!isnan(r->busy))
		sqlite3_bind_double(st, 7, r->busy);
	bind_opt(st, 8, r->wakeups);
	char late[LATE_TEXT];
	if (r->worker >= 0) {
		late[0] = '[';
		strcat(late_text(late + 1, r->late, ","), "]");
		sqlite3_bind_text(st, 9, late, -1, SQLITE_STATIC);
	}
	bind_opt(st, 10, r->late_max_ns);
	bind_opt(st, 11, r->in_flight);
	bind_opt(st, 12, r->queued);
	bind_opt(st, 13, r->queued_age_ns);
	bind_opt(st, 14, r->record_backlog);
	bind_opt(st, 15, r->conn_errors);
	bind_opt(st, 16, r->port_errors);
	bind_opt(st, 17, r->sent);
	bind_opt(st, 18, r->completed);
	char rl[LATE_TEXT], win[LATE_TEXT], kl[LATE_TEXT];
	if (r->worker >= 0) {
		sqlite3_bind_text(st, 19, json_counts(rl, r->read_lag, CSAMPLE_LATE_BUCKETS), -1,
				  SQLITE_STATIC);
		bind_opt(st, 20, r->read_lag_max_ns);
		sqlite3_bind_text(st, 21, json_counts(win, r->windows, CSAMPLE_WIN_BUCKETS), -1,
				  SQLITE_STATIC);
		sqlite3_bind_text(st, 22, json_counts(kl, r->kern_lag, CSAMPLE_LATE_BUCKETS), -1,
				  SQLITE_STATIC);
		bind_opt(st, 23, r->kern_lag_max_ns);
	}
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "client sample insert: %s", sqlite3_errmsg(tx->db));
	return 0;
}

static double fraction(int64_t part, int64_t whole)
{
	return whole > 0 ? (double)part / (double)whole : NAN;
}

void client_store_worker(struct store *s, int64_t run_id, int worker, const struct csample *cs)
{
	struct srow *row = xcalloc(1, sizeof *row);
	struct client_row *r = &row->r;
	row->run_id = run_id;
	snprintf(r->source, sizeof r->source, "w%d", worker);
	r->worker = worker;
	r->t_ns = cs->t_ns;
	r->interval_ns = cs->interval_ns;
	r->phase = cs->phase;
	r->cpu = fraction(cs->cpu_ns, cs->interval_ns);
	r->busy = fraction(cs->busy_ns, cs->interval_ns);
	if (r->busy > 1)
		r->busy = 1; /* two clock reads a little apart */
	r->wakeups = cs->wakeups;
	memcpy(r->late, cs->late, sizeof r->late);
	r->late_max_ns = cs->late_max_ns;
	r->in_flight = cs->in_flight;
	r->queued = cs->queued;
	r->queued_age_ns = cs->queued_age_ns;
	r->record_backlog = cs->record_backlog;
	r->conn_errors = cs->conn_errors;
	r->port_errors = cs->port_errors;
	r->sent = cs->sent;
	r->completed = cs->completed;
	memcpy(r->read_lag, cs->read_lag, sizeof r->read_lag);
	r->read_lag_max_ns = cs->read_lag_max_ns;
	memcpy(r->windows, cs->windows, sizeof r->windows);
	memcpy(r->kern_lag, cs->kern_lag, sizeof r->kern_lag);
	r->kern_lag_max_ns = cs->kern_lag_max_ns;
	store_post(s, insert_job, row, free);
}

void client_store_daemon(struct store *s, int64_t run_id, const struct dsample *d)
{
	struct srow *row = xcalloc(1, sizeof *row);
	struct client_row *r = &row->r;
	row->run_id = run_id;
	snprintf(r->source, sizeof r->source, "daemon");
	r->worker = -1;
	r->t_ns = d->t_ns;
	r->interval_ns = d->interval_ns;
	r->phase = -1;
	r->cpu = d->cpu;
	r->busy = NAN;
	r->wakeups = r->late_max_ns = r->queued = r->queued_age_ns = -1;
	r->conn_errors = r->port_errors = -1;
	r->in_flight = d->in_flight;
	r->record_backlog = d->backlog;
	r->sent = d->sent;
	r->completed = d->completed;
	store_post(s, insert_job, row, free);
}

/* --- reading back ------------------------------------------------------------ */

struct client_cursor {
	struct store *store;
	sqlite3 *db;
	sqlite3_stmt *st;
};

struct client_cursor *client_cursor_open(struct store *s, int64_t run_id, int by_time)
{
	struct client_cursor *c = xcalloc(1, sizeof *c);
	c->store = s;
	c->db = store_reader(s);
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT source, t_ns, interval_ns, phase, cpu, busy, wakeups, late, "
		 "late_max_ns, in_flight, queued, queued_age_ns, record_backlog, conn_errors, "
		 "port_errors, sent, completed, read_lag, read_lag_max_ns, busy_windows, "
		 "kernel_lag, kernel_lag_max_ns "
		 "FROM client_samples WHERE run_id = ? ORDER BY %s",
		 by_time ? "t_ns, source" : "source, t_ns");
	if (sqlite3_prepare_v2(c->db, sql, -1, &c->st, NULL) != SQLITE_OK) {
		client_cursor_free(c);
		return NULL;
	}
	sqlite3_bind_int64(c->st, 1, run_id);
	return c;
}

static int64_t col_i(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static double col_d(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int client_cursor_row(struct client_cursor *c, struct client_row *r)
{
	int rc = sqlite3_step(c->st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return -1;
	sqlite3_stmt *st = c->st;
	memset(r, 0, sizeof *r);
	const char *src = (const char *)sqlite3_column_text(st, 0);
	snprintf(r->source, sizeof r->source, "%s", src ? src : "");
	r->worker = -1;
	if (r->source[0] == 'w')
		r->worker = atoi(r->source + 1);
	r->t_ns = sqlite3_column_int64(st, 1);
	r->interval_ns = sqlite3_column_int64(st, 2);
	r->phase = (int)col_i(st, 3);
	r->cpu = col_d(st, 4);
	r->busy = col_d(st, 5);
	r->wakeups = col_i(st, 6);
	parse_counts((const char *)sqlite3_column_text(st, 7), r->late, CSAMPLE_LATE_BUCKETS);
	r->late_max_ns = col_i(st, 8);
	r->in_flight = col_i(st, 9);
	r->queued = col_i(st, 10);
	r->queued_age_ns = col_i(st, 11);
	r->record_backlog = col_i(st, 12);
	r->conn_errors = col_i(st, 13);
	r->port_errors = col_i(st, 14);
	r->sent = col_i(st, 15);
	r->completed = col_i(st, 16);
	parse_counts((const char *)sqlite3_column_text(st, 17), r->read_lag, CSAMPLE_LATE_BUCKETS);
	r->read_lag_max_ns = col_i(st, 18);
	parse_counts((const char *)sqlite3_column_text(st, 19), r->windows, CSAMPLE_WIN_BUCKETS);
	parse_counts((const char *)sqlite3_column_text(st, 20), r->kern_lag, CSAMPLE_LATE_BUCKETS);
	r->kern_lag_max_ns = col_i(st, 21);
	return 1;
}

const char client_csv_header[] =
    "source,t_ns,t_s,interval_s,phase,cpu,loop_busy,wakeups,late_buckets,late_max_ms,"
    "in_flight,queued,queued_age_ms,record_backlog,conn_errors,port_errors,sent,"
    "completed,read_lag_buckets,read_lag_max_ms,kernel_lag_buckets,kernel_lag_max_ms,"
    "busy_windows\n";

static const char *phase_name(int p)
{
	return p == 0 ? "warmup" : p == 1 ? "profiling" : "";
}

/* A number cell: "" (CSV) or null (JSON) when absent. */
static void num(struct dynbuf *b, int csv, double v)
{
	char t[32];
	if (isnan(v)) {
		dynbuf_addstr(b, csv ? "" : "null");
		return;
	}
	fmt_double(t, v);
	dynbuf_addstr(b, t);
}

static void inum(struct dynbuf *b, int csv, int64_t v)
{
	if (v < 0)
		dynbuf_addstr(b, csv ? "" : "null");
	else
		dynbuf_printf(b, "%lld", (long long)v);
}

/* A histogram cell: counts separated by spaces (CSV) or a JSON array;
 * empty or null when absent. */
static void hist(struct dynbuf *b, int csv, int present, const int64_t *h, int nb)
{
	char t[LATE_TEXT];
	if (!present)
		dynbuf_addstr(b, csv ? "" : "null");
	else if (csv)
		dynbuf_addstr(b, counts_text(t, h, nb, " "));
	else
		dynbuf_addstr(b, json_counts(t, h, nb));
}

int client_cursor_next(struct client_cursor *c, int csv, struct dynbuf *out)
{
	struct client_row r;
	int rc = client_cursor_row(c, &r);
	if (rc != 1)
		return rc;
	char late[LATE_TEXT] = "";
	if (r.worker >= 0)
		late_text(late, r.late, csv ? " " : ",");
	double ms = 1e6;
	const char *sep = csv ? "," : NULL;
#define FIELD(name) \
	do { \
		if (sep) \
			dynbuf_addstr(out, ","); \
		else \
			dynbuf_addstr(out, ",\"" name "\":"); \
	} while (0)
	if (csv) {
		export_csv_cell(out, r.source);
		dynbuf_printf(out, ",%lld,", (long long)r.t_ns);
	} else {
		dynbuf_printf(out, "{\"source\":\"%s\",\"t_ns\":%lld,\"t_s\":", r.source,
			      (long long)r.t_ns);
	}
	num(out, csv, (double)r.t_ns / 1e9);
	FIELD("interval_s");
	num(out, csv, (double)r.interval_ns / 1e9);
	FIELD("phase");
	if (csv)
		dynbuf_addstr(out, phase_name(r.phase));
	else if (r.phase >= 0)
		dynbuf_printf(out, "\"%s\"", phase_name(r.phase));
	else
		dynbuf_addstr(out, "null");
	FIELD("cpu");
	num(out, csv, r.cpu);
	FIELD("loop_busy");
	num(out, csv, r.busy);
	FIELD("wakeups");
	inum(out, csv, r.wakeups);
	FIELD("late_buckets");
	if (csv)
		dynbuf_addstr(out, late);
	else if (r.worker >= 0)
		dynbuf_printf(out, "[%s]", late);
	else
		dynbuf_addstr(out, "null");
	FIELD("late_max_ms");
	num(out, csv, r.late_max_ns < 0 ? NAN : (double)r.late_max_ns / ms);
	FIELD("in_flight");
	inum(out, csv, r.in_flight);
	FIELD("queued");
	inum(out, csv, r.queued);
	FIELD("queued_age_ms");
	num(out, csv, r.queued_age_ns < 0 ? NAN : (double)r.queued_age_ns / ms);
	FIELD("record_backlog");
	inum(out, csv, r.record_backlog);
	FIELD("conn_errors");
	inum(out, csv, r.conn_errors);
	FIELD("port_errors");
	inum(out, csv, r.port_errors);
	FIELD("sent");
	inum(out, csv, r.sent);
	FIELD("completed");
	inum(out, csv, r.completed);
	/* the burst evidence: null for the daemon and for samples stored
	 * before it existed (read_lag_max_ns NULL) */
	int bursts = r.worker >= 0 && r.read_lag_max_ns >= 0;
	FIELD("read_lag_buckets");
	hist(out, csv, bursts, r.read_lag, CSAMPLE_LATE_BUCKETS);
	FIELD("read_lag_max_ms");
	num(out, csv, bursts ? (double)r.read_lag_max_ns / ms : NAN);
	FIELD("kernel_lag_buckets");
	hist(out, csv, bursts, r.kern_lag, CSAMPLE_LATE_BUCKETS);
	FIELD("kernel_lag_max_ms");
	num(out, csv, bursts && r.kern_lag_max_ns >= 0 ? (double)r.kern_lag_max_ns / ms : NAN);
	FIELD("busy_windows");
	hist(out, csv, bursts, r.windows, CSAMPLE_WIN_BUCKETS);
#undef FIELD
	dynbuf_addstr(out, csv ? "\n" : "}");
	return 1;
}

void client_cursor_free(struct client_cursor *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->st);
	store_reader_put(c->store, c->db);
	free(c);
}
