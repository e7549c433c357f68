/* store.h - the SQLite store: one writer thread, a pool of readers.
 *
 * Threading rule: exactly one thread (the store's writer) writes. Other
 * threads hand it jobs: store_exec waits for the result, store_post does
 * not (the queue is bounded by HR_STORE_QUEUE_MAX; a producer blocks when
 * it is full, which is the ingestion back-pressure). The writer runs the
 * jobs it finds queued together inside one transaction, each in its own
 * savepoint, so a failing job rolls back alone and ingestion is batched.
 * Readers borrow a read-only connection from a pool; WAL mode means they
 * never block the writer and see committed data only.
 *
 * Two pools, so that a slow client can never take the API's readers: the
 * reader pool (--readers, HR_READ_POOL_SIZE) for handlers and the
 * daemon's threads, each held for one call; the export pool
 * (--export-readers, HR_EXPORT_POOL_SIZE) for the
 * cursors of streamed exports, held for as long as their client reads. An
 * API thread binds one reader for a whole request (store_reader_bind):
 * store_reader() on that thread returns it, and store_reader_put() of it
 * does nothing, so nested reads share one connection and a request takes
 * at most one reader, taken with a timeout before its handler runs.
 */
#ifndef HR_STORE_H
#define HR_STORE_H

#include <sqlite3.h>
#include <stddef.h>

struct store;

/* What a job sees on the writer thread. */
struct store_tx {
	sqlite3 *db;
	struct store *store;
};

/* A job: runs on the writer thread inside a savepoint. Returns 0 or
 * negative (the savepoint is then rolled back); may write a message into
 * err (HR_ERRLEN bytes) for store_exec's caller. */
typedef int (*store_fn)(struct store_tx *tx, void *arg, char *err);

/* Sizes of the reader pools; 0 (or o NULL) takes the default. */
struct store_opts {
	int readers; /* HR_READ_POOL_SIZE */
	int exports; /* HR_EXPORT_POOL_SIZE */
	int no_migration_copy; /* do not copy the database before migrating it */
};

/* Opens (creating) DIR/headroom.db, applies pending migrations, starts the
 * writer thread. Returns 0 and *out, or -1 with err. A database whose
 * schema is newer than this build's is refused; before migrating an
 * existing database, a consistent copy of it is kept as
 * DIR/headroom.db.before-NNN (NNN the first migration applied) unless
 * o->no_migration_copy (docs/operations.md, "Upgrades"). */
int store_open(const char *dir, const struct store_opts *o, struct store **out, char *err);
/* For the subcommands (token, summarize, backup): the store that must
 * already be in dir, with one reader; prints "headroomd WHAT: ..." and
 * returns -1 when there is none or it cannot be opened. */
int store_open_existing(const char *dir, const char *what, struct store **out);
/* Runs every queued job, stops the writer, closes all connections. NULL ok. */
void store_free(struct store *s);

/* Runs fn on the writer thread and waits. Returns fn's result. */
int store_exec(struct store *s, store_fn fn, void *arg, char *err);
/* Queues fn without waiting; free_arg(arg) runs after it (may be NULL). */
void store_post(struct store *s, store_fn fn, void *arg, void (*free_arg)(void *));

/* A prepared statement cached per writer connection, keyed by the address
 * of a static SQL string. Reset and cleared before it is returned. */
sqlite3_stmt *store_tx_stmt(struct store_tx *tx, const char *sql);

/* Borrow / return a read-only connection (blocks while all are lent).
 * On a thread with a bound reader, returns that one (put: no-op). Put
 * also takes export readers back (to their own pool); NULL ok. */
sqlite3 *store_reader(struct store *s);
void store_reader_put(struct store *s, sqlite3 *db);
/* store_reader waiting at most ms milliseconds: NULL when none came free. */
sqlite3 *store_reader_timed(struct store *s, int ms);
/* An export reader if one is free, else NULL at once (its holder is a
 * client that may not read for minutes: nobody waits for one). Returned
 * with store_reader_put. */
sqlite3 *store_export_reader(struct store *s);
/* The size of the export pool. */
int store_export_readers(const struct store *s);
/* Makes db (from either pool) this thread's bound reader until
 * store_reader_unbind, which returns it to its pool. Returns the reader
 * bound before (NULL if none), which is not returned: bind it again. */
sqlite3 *store_reader_bind(struct store *s, sqlite3 *db);
void store_reader_unbind(struct store *s);

/* Read-only view of the batch commits (a failed COMMIT rolls the whole
 * batch back, and asynchronous jobs cannot see that): *failures, the
 * number of commits that failed so far; msg (n bytes, may be NULL), the
 * last failure's error text ("" if none). Returns 1 when the most recent
 * commit failed, 0 when it succeeded (or none was made). Any thread. */
int store_commit_status(struct store *s, long long *failures, char *msg, size_t n);
/* Jobs waiting for the writer now (GET /metrics). */
int store_queue_len(struct store *s);

/* Path of the database file (borrowed). */
const char *store_path(const struct store *s);

#endif
