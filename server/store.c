/* store.c - SQLite writer thread, job queue, reader pools (API and exports), migrations. */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hrlimits.h"
#include "log.h"
#include "migrations.h"
#include "history.h"
#include "runs.h"
#include "selfmet.h"
#include "util.h"

struct job {
	store_fn fn;
	void *arg;
	void (*free_arg)(void *);
	/* synchronous jobs only */
	int sync, done, rc;
	char *err;
	struct job *next;
};

#define STMT_CACHE 128 /* distinct static statements of all writer jobs (about 60 today) */

struct store {
	char *path;
	sqlite3 *wdb;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv_work; /* writer waits for jobs */
	pthread_cond_t cv_done; /* sync callers wait for results, producers for room */
	struct job *head, *tail;
	int queued, stopping;
	/* outcome of the batch commits, for store_commit_status (under mu) */
	long long commit_failures;
	int last_commit_failed;
	char commit_err[160];
	struct {
		const char *sql;
		sqlite3_stmt *stmt;
	} cache[STMT_CACHE];

	pthread_mutex_t rmu;
	pthread_cond_t rcv;
	sqlite3 **readers; /* the free ones, readers[0..nfree) */
	int nfree;
	/* the export pool (store_export_reader), under rmu: free ones first
	 * in exports[0..nexp_free), every one in all_exports[0..nexp) */
	sqlite3 **exports, **all_exports;
	int nexp, nexp_free;
};

/* The reader a thread holds for a whole call (store_reader_bind): nested
 * store_reader() calls on that thread share it. */
static _Thread_local struct {
	struct store *s;
	sqlite3 *db;
} bound;

static int db_exec(sqlite3 *db, const char *sql, char *err)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		errf(err, "sqlite: %s", msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static int open_conn(const char *path, int readonly, sqlite3 **out, char *err)
{
	int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	flags |= SQLITE_OPEN_NOMUTEX; /* each connection belongs to one thread at a time */
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		errf(err, "cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db, 10000);
	if (db_exec(db, "PRAGMA foreign_keys = ON;", err) < 0) {
		sqlite3_close(db);
		return -1;
	}
	*out = db;
	return 0;
}

/* The newest schema version the database has, 0 for a new one, -1 on error. */
static int schema_version(sqlite3 *db)
{
	sqlite3_stmt *st;
	int v = -1;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(version), 0) FROM schema_migrations", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* A consistent copy of the database before migration `next` changes it. */
static int copy_before(sqlite3 *db, const char *path, int next, char *err)
{
	char *dest = xasprintf("%s.before-%03d", path, next);
	struct stat st;
	if (stat(dest, &st) == 0) { /* kept from an earlier attempt: another name */
		char *d2 = xasprintf("%s.%lld", dest, (long long)(wall_ns() / 1000000000LL));
		free(dest);
		dest = d2;
	}
	sqlite3_stmt *q;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "VACUUM INTO ?", -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, dest, -1, SQLITE_STATIC);
		rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
	}
	if (rc < 0)
		errf(err, "cannot copy the database to %s before migrating it: %s (start with "
			  "--no-migration-copy to migrate without a copy)",
		     dest, sqlite3_errmsg(db));
	else
		hlog(LOG_INFO, "store", "the database before migration %03d is kept as %s\n", next,
			dest);
	sqlite3_finalize(q);
	free(dest);
	return rc;
}

static int migrate(sqlite3 *db, const char *path, int copy, char *err)
{
	if (db_exec(db,
		    "CREATE TABLE IF NOT EXISTS schema_migrations ("
		    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);",
		    err) < 0)
		return -1;
	int cur = schema_version(db), known = migrations[migrations_count - 1].version;
	if (cur < 0)
		return errf(err, "cannot read the schema version of %s", path);
	if (cur > known)
		return errf(err, "%s has schema version %d, newer than this headroomd knows (%d): "
				 "it was written by a newer headroom; run that version, or restore a "
				 "backup this one made",
			    path, cur, known);
	if (cur > 0 && cur < known && copy) {
		int next = known;
		for (int i = 0; i < migrations_count; i++)
			if (migrations[i].version > cur) {
				next = migrations[i].version;
				break;
			}
		if (copy_before(db, path, next, err) < 0)
			return -1;
	}
	for (int i = 0; i < migrations_count; i++) {
		const struct migration *m = &migrations[i];
		sqlite3_stmt *st;
		sqlite3_prepare_v2(db, "SELECT 1 FROM schema_migrations WHERE version = ?", -1, &st,
				   NULL);
		sqlite3_bind_int(st, 1, m->version);
		int have = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		if (have)
			continue;
		if (db_exec(db, "BEGIN IMMEDIATE;", err) < 0)
			return -1;
		char why[HR_ERRLEN];
		if (db_exec(db, m->sql, why) < 0) {
			db_exec(db, "ROLLBACK;", NULL);
			return errf(err, "migration %s failed: %s", m->name, why);
		}
		sqlite3_prepare_v2(db,
				   "INSERT INTO schema_migrations (version, name, applied_at) "
				   "VALUES (?, ?, ?)",
				   -1, &st, NULL);
		sqlite3_bind_int(st, 1, m->version);
		sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, wall_ns() / 1000000);
		int rc = sqlite3_step(st);
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE || db_exec(db, "COMMIT;", err) < 0) {
			db_exec(db, "ROLLBACK;", NULL);
			return errf(err, "recording migration %s failed", m->name);
		}
	}
	return 0;
}

sqlite3_stmt *store_tx_stmt(struct store_tx *tx, const char *sql)
{
	struct store *s = tx->store;
	int slot = -1;
	for (int i = 0; i < STMT_CACHE; i++) {
		if (s->cache[i].sql == sql) {
			sqlite3_reset(s->cache[i].stmt);
			sqlite3_clear_bindings(s->cache[i].stmt);
			return s->cache[i].stmt;
		}
		if (!s->cache[i].sql && slot < 0)
			slot = i;
	}
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v3(tx->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		hlog(LOG_ERROR, "store", "cannot prepare statement: %s\n", sqlite3_errmsg(tx->db));
		abort(); /* a programming error: every statement is static SQL */
	}
	if (slot >= 0) {
		s->cache[slot].sql = sql;
		s->cache[slot].stmt = st;
	} else {
		abort(); /* raise STMT_CACHE */
	}
	return st;
}

static void run_batch(struct store *s, struct job *batch)
{
	struct store_tx tx = {.db = s->wdb, .store = s};
	char err[HR_ERRLEN];
	int64_t t_begin = mono_ns();
	int in_tx = db_exec(s->wdb, "BEGIN IMMEDIATE;", err) == 0;
	if (!in_tx)
		hlog(LOG_INFO, "store", "store: %s\n", err);
	for (struct job *j = batch; j; j = j->next) {
		err[0] = '\0';
		db_exec(s->wdb, "SAVEPOINT job;", NULL);
		j->rc = j->fn(&tx, j->arg, err);
		if (j->rc < 0) {
			db_exec(s->wdb, "ROLLBACK TO job;", NULL);
			if (!j->sync && err[0])
				hlog(LOG_ERROR, "store", "store job failed: %s\n", err);
		}
		db_exec(s->wdb, "RELEASE job;", NULL);
		if (j->sync && j->err)
			snprintf(j->err, HR_ERRLEN, "%s", err);
	}
	if (in_tx && db_exec(s->wdb, "COMMIT;", err) < 0) {
		hlog(LOG_ERROR, "store", "store commit failed: %s\n", err);
		db_exec(s->wdb, "ROLLBACK;", NULL);
		for (struct job *j = batch; j; j = j->next)
			if (j->rc == 0) {
				j->rc = -1;
				if (j->sync && j->err)
					snprintf(j->err, HR_ERRLEN, "commit failed: %.200s", err);
			}
		pthread_mutex_lock(&s->mu);
		s->commit_failures++;
		s->last_commit_failed = 1;
		selfmet_commit(0, 0);
		snprintf(s->commit_err, sizeof s->commit_err, "%.150s", err);
		pthread_mutex_unlock(&s->mu);
	} else if (in_tx) {
		pthread_mutex_lock(&s->mu);
		s->last_commit_failed = 0;
		pthread_mutex_unlock(&s->mu);
		selfmet_commit(1, (double)(mono_ns() - t_begin) / 1e9);
	}
}

int store_queue_len(struct store *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->queued;
	pthread_mutex_unlock(&s->mu);
	return n;
}

int store_commit_status(struct store *s, long long *failures, char *msg, size_t n)
{
	pthread_mutex_lock(&s->mu);
	int last = s->last_commit_failed;
	if (failures)
		*failures = s->commit_failures;
	if (msg && n)
		snprintf(msg, n, "%s", s->commit_err);
	pthread_mutex_unlock(&s->mu);
	return last;
}

static void *writer_main(void *arg)
{
	struct store *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->cv_work, &s->mu);
		if (!s->head && s->stopping)
			break;
		struct job *batch = s->head;
		s->head = s->tail = NULL;
		s->queued = 0;
		pthread_cond_broadcast(&s->cv_done); /* room for producers */
		pthread_mutex_unlock(&s->mu);

		run_batch(s, batch);

		pthread_mutex_lock(&s->mu);
		for (struct job *j = batch, *next; j; j = next) {
			next = j->next;
			if (j->sync) {
				j->done = 1;
			} else {
				if (j->free_arg)
					j->free_arg(j->arg);
				free(j);
			}
		}
		pthread_cond_broadcast(&s->cv_done);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void enqueue(struct store *s, struct job *j)
{
	pthread_mutex_lock(&s->mu);
	while (!j->sync && s->queued >= HR_STORE_QUEUE_MAX)
		pthread_cond_wait(&s->cv_done, &s->mu);
	j->next = NULL;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	s->queued++;
	pthread_cond_signal(&s->cv_work);
	if (j->sync)
		while (!j->done)
			pthread_cond_wait(&s->cv_done, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

int store_exec(struct store *s, store_fn fn, void *arg, char *err)
{
	struct job j = {.fn = fn, .arg = arg, .sync = 1, .err = err};
	if (err)
		err[0] = '\0';
	enqueue(s, &j);
	return j.rc;
}

void store_post(struct store *s, store_fn fn, void *arg, void (*free_arg)(void *))
{
	struct job *j = xcalloc(1, sizeof *j);
	j->fn = fn;
	j->arg = arg;
	j->free_arg = free_arg;
	enqueue(s, j);
}

static struct timespec deadline_in(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

sqlite3 *store_reader_timed(struct store *s, int ms)
{
	if (bound.s == s && bound.db)
		return bound.db;
	struct timespec until = deadline_in(ms < 0 ? 0 : ms);
	pthread_mutex_lock(&s->rmu);
	while (s->nfree == 0)
		if (pthread_cond_timedwait(&s->rcv, &s->rmu, &until) == ETIMEDOUT)
			break;
	sqlite3 *db = s->nfree ? s->readers[--s->nfree] : NULL;
	pthread_mutex_unlock(&s->rmu);
	return db;
}

sqlite3 *store_reader(struct store *s)
{
	if (bound.s == s && bound.db)
		return bound.db;
	pthread_mutex_lock(&s->rmu);
	while (s->nfree == 0)
		pthread_cond_wait(&s->rcv, &s->rmu);
	sqlite3 *db = s->readers[--s->nfree];
	pthread_mutex_unlock(&s->rmu);
	return db;
}

static int is_export(const struct store *s, const sqlite3 *db)
{
	for (int i = 0; i < s->nexp; i++)
		if (s->all_exports[i] == db)
			return 1;
	return 0;
}

void store_reader_put(struct store *s, sqlite3 *db)
{
	if (!db || (bound.s == s && bound.db == db))
		return; /* the bound reader goes back at store_reader_unbind */
	pthread_mutex_lock(&s->rmu);
	if (is_export(s, db)) {
		s->exports[s->nexp_free++] = db;
	} else {
		s->readers[s->nfree++] = db;
		pthread_cond_signal(&s->rcv);
	}
	pthread_mutex_unlock(&s->rmu);
}

int store_export_readers(const struct store *s)
{
	return s->nexp;
}

sqlite3 *store_export_reader(struct store *s)
{
	pthread_mutex_lock(&s->rmu);
	sqlite3 *db = s->nexp_free ? s->exports[--s->nexp_free] : NULL;
	pthread_mutex_unlock(&s->rmu);
	return db;
}

sqlite3 *store_reader_bind(struct store *s, sqlite3 *db)
{
	sqlite3 *prev = bound.s == s ? bound.db : NULL;
	bound.s = s;
	bound.db = db;
	return prev;
}

void store_reader_unbind(struct store *s)
{
	sqlite3 *db = bound.s == s ? bound.db : NULL;
	bound.s = NULL;
	bound.db = NULL;
	store_reader_put(s, db);
}

const char *store_path(const struct store *s)
{
	return s->path;
}

int store_open_existing(const char *dir, const char *what, struct store **out)
{
	char *db = xasprintf("%s/headroom.db", dir);
	struct stat st;
	int there = stat(db, &st) == 0;
	free(db);
	if (!there) {
		fprintf(stderr, "headroomd %s: no store in %s (give --data DIR)\n", what, dir);
		return -1;
	}
	char err[HR_ERRLEN];
	struct store_opts so = {.readers = 1, .exports = 1};
	if (store_open(dir, &so, out, err) < 0) {
		fprintf(stderr, "headroomd %s: %s\n", what, err);
		return -1;
	}
	return 0;
}

int store_open(const char *dir, const struct store_opts *o, struct store **out, char *err)
{
	int nreaders = o && o->readers > 0 ? o->readers : HR_READ_POOL_SIZE;
	int nexports = o && o->exports > 0 ? o->exports : HR_EXPORT_POOL_SIZE;
	struct stat stt;
	if (stat(dir, &stt) < 0) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return errf(err, "cannot create data directory %s: %s", dir,
				    strerror(errno));
	} else if (!S_ISDIR(stt.st_mode)) {
		return errf(err, "%s is not a directory", dir);
	}
	/* SQLite's memory statistics take a global mutex around every
	 * allocation of every connection, and nothing here reads them. Only
	 * possible before SQLite's first use, so at start-up, before any
	 * other thread; a later call fails harmlessly. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	struct store *s = xcalloc(1, sizeof *s);
	s->path = xasprintf("%s/headroom.db", dir);
	s->readers = xcalloc((size_t)nreaders, sizeof *s->readers);
	s->exports = xcalloc((size_t)nexports, sizeof *s->exports);
	s->all_exports = xcalloc((size_t)nexports, sizeof *s->all_exports);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv_work, NULL);
	pthread_cond_init(&s->cv_done, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* store_reader_timed's deadline */
	pthread_cond_init(&s->rcv, &ca);
	pthread_condattr_destroy(&ca);
	if (open_conn(s->path, 0, &s->wdb, err) < 0)
		goto err;
	if (db_exec(s->wdb, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", err) < 0)
		goto err;
	if (runs_sql_functions(s->wdb) < 0 || history_sql_functions(s->wdb) < 0) {
		errf(err, "sqlite: cannot register functions: %s", sqlite3_errmsg(s->wdb));
		goto err;
	}
	if (migrate(s->wdb, s->path, !(o && o->no_migration_copy), err) < 0)
		goto err;
	for (int i = 0; i < nreaders; i++) {
		if (open_conn(s->path, 1, &s->readers[i], err) < 0)
			goto err;
		s->nfree++;
	}
	for (int i = 0; i < nexports; i++) {
		if (open_conn(s->path, 1, &s->all_exports[i], err) < 0)
			goto err;
		s->exports[s->nexp_free++] = s->all_exports[i];
		s->nexp++;
	}
	if (pthread_create(&s->thread, NULL, writer_main, s) != 0) {
		errf(err, "cannot start the store thread");
		goto err;
	}
	*out = s;
	return 0;
err:
	for (int i = 0; i < s->nfree; i++)
		sqlite3_close(s->readers[i]);
	for (int i = 0; i < s->nexp; i++)
		sqlite3_close(s->all_exports[i]);
	sqlite3_close(s->wdb);
	free(s->readers);
	free(s->exports);
	free(s->all_exports);
	free(s->path);
	free(s);
	return -1;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_cond_signal(&s->cv_work);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	for (int i = 0; i < STMT_CACHE; i++)
		sqlite3_finalize(s->cache[i].stmt);
	for (int i = 0; i < s->nfree; i++)
		sqlite3_close(s->readers[i]);
	for (int i = 0; i < s->nexp; i++)
		sqlite3_close(s->all_exports[i]);
	sqlite3_close(s->wdb);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv_work);
	pthread_cond_destroy(&s->cv_done);
	pthread_mutex_destroy(&s->rmu);
	pthread_cond_destroy(&s->rcv);
	free(s->readers);
	free(s->exports);
	free(s->all_exports);
	free(s->path);
	free(s);
}
