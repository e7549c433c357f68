/* datasets.c - uploaded datasets: streamed uploads, storage by content
 * hash, the datasets table, previews (datasets.h). */
#include "datasets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hrlimits.h"
#include "log.h"
#include "runs.h"
#include "util.h"

#define TMP_PREFIX ".upload-"

/* One parse at a time: a dataset's canonical form can take about as much
 * memory as its file, and uploads arrive on several API threads. */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
/* held from an upload's look for its file until its row is stored, and
 * from a delete's removal of a row until its file is gone: a file is never
 * removed under a row that reads it */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static int dir_ready; /* the directory exists, uploads left by a crash are gone */

static int fsync_dir(const char *dir);

struct ds_upload {
	char *dir; /* DATA/datasets */
	char *tmp; /* the temporary file, NULL once renamed or removed */
	int fd;
	EVP_MD_CTX *md;
	uint64_t bytes;
	int err_no;    /* a write failed with this errno */
	int discarded; /* past the bound, or done with: nothing more is kept */
};

static char *datasets_dir(struct store *s)
{
	const char *db = store_path(s);
	const char *slash = strrchr(db, '/');
	return slash ? xasprintf("%.*s/datasets", (int)(slash - db), db) : xstrdup("datasets");
}

/* Creates dir (once per process) and removes the temporary files of
 * uploads that a crash interrupted: no upload of this process has started
 * before this runs. */
static int prepare_dir(const char *dir, char *err)
{
	int rc = 0;
	pthread_mutex_lock(&dir_lock);
	if (!dir_ready) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			rc = errf(err, "cannot create %s: %s", dir, strerror(errno));
		} else {
			DIR *d = opendir(dir);
			struct dirent *e;
			while (d && (e = readdir(d)) != NULL) {
				if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
					continue;
				char *p = xasprintf("%s/%s", dir, e->d_name);
				unlink(p);
				free(p);
			}
			if (d)
				closedir(d);
			dir_ready = 1;
		}
	}
	pthread_mutex_unlock(&dir_lock);
	return rc;
}

/* A name of a stored file: 64 lower-case hex digits. */
static int content_name(const char *n)
{
	size_t i = 0;
	for (; n[i]; i++)
		if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return 0;
	return i == 64;
}

int store_files_recover(struct store *s, const char *dir, const char *tmp_prefix,
			const char *query, const char *what, char *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		return e == ENOENT ? 0 : errf(err, "cannot read %s: %s", dir, strerror(e));
	}
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	if (!db || sqlite3_prepare_v2(db, query, -1, &st, NULL) != SQLITE_OK) {
		errf(err, "%s query: %s", what, db ? sqlite3_errmsg(db) : "no reader");
		if (db)
			store_reader_put(s, db);
		closedir(d);
		return -1;
	}
	int removed = 0, rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int stale = strncmp(e->d_name, tmp_prefix, strlen(tmp_prefix)) == 0;
		if (!stale && content_name(e->d_name)) {
			sqlite3_bind_text(st, 1, e->d_name, -1, SQLITE_STATIC);
			int step = sqlite3_step(st);
			sqlite3_reset(st);
			if (step != SQLITE_ROW && step != SQLITE_DONE) {
				rc = errf(err, "%s query: %s", what, sqlite3_errmsg(db));
				break;
			}
			stale = step == SQLITE_DONE;
		}
		if (!stale)
			continue;
		char *p = xasprintf("%s/%s", dir, e->d_name);
		if (unlink(p) == 0)
			removed++;
		else
			hlog(LOG_ERROR, "datasets", "cannot remove %s: %s\n", p, strerror(errno));
		free(p);
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	closedir(d);
	if (removed)
		fsync_dir(dir);
	return rc < 0 ? rc : removed;
}

int datasets_recover(struct store *s, char *err)
{
	char *dir = datasets_dir(s);
	struct stat sb;
	int exists = stat(dir, &sb) == 0;
	int rc = store_files_recover(s, dir, TMP_PREFIX,
				     "SELECT 1 FROM datasets WHERE sha256 = ? LIMIT 1", "datasets", err);
	free(dir);
	if (exists) {
		pthread_mutex_lock(&dir_lock);
		dir_ready = rc >= 0; /* what prepare_dir would do is done */
		pthread_mutex_unlock(&dir_lock);
	}
	return rc;
}

struct ds_upload *ds_upload_begin(struct store *s, char *err)
{
	char *dir = datasets_dir(s);
	if (prepare_dir(dir, err) < 0) {
		free(dir);
		return NULL;
	}
	struct ds_upload *u = xcalloc(1, sizeof *u);
	u->dir = dir;
	u->tmp = xasprintf("%s/" TMP_PREFIX "XXXXXX", dir);
	u->fd = mkstemp(u->tmp);
	if (u->fd < 0) {
		errf(err, "cannot create a file in %s: %s", dir, strerror(errno));
		free(u->tmp);
		u->tmp = NULL;
		ds_upload_free(u);
		return NULL;
	}
	fcntl(u->fd, F_SETFD, FD_CLOEXEC); /* workers started later must not inherit it */
	u->md = EVP_MD_CTX_new();
	if (!u->md || EVP_DigestInit_ex(u->md, EVP_sha256(), NULL) != 1) {
		errf(err, "cannot start a SHA-256 digest");
		ds_upload_free(u);
		return NULL;
	}
	return u;
}

int ds_upload_write(struct ds_upload *u, const void *p, size_t n)
{
	if (u->discarded || u->err_no)
		return -1;
	if (EVP_DigestUpdate(u->md, p, n) != 1) {
		u->err_no = EIO;
		return -1;
	}
	const char *c = p;
	size_t left = n;
	while (left > 0) {
		ssize_t w = write(u->fd, c, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			u->err_no = w < 0 ? errno : EIO;
			return -1;
		}
		c += w;
		left -= (size_t)w;
	}
	u->bytes += n;
	return 0;
}

uint64_t ds_upload_bytes(const struct ds_upload *u)
{
	return u->bytes;
}

void ds_upload_discard(struct ds_upload *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	if (u->tmp)
		unlink(u->tmp);
	free(u->tmp);
	u->tmp = NULL;
	u->discarded = 1;
}

void ds_upload_free(struct ds_upload *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->tmp)
		unlink(u->tmp);
	free(u->tmp);
	free(u->dir);
	EVP_MD_CTX_free(u->md);
	free(u);
}

/* --- rows ------------------------------------------------------------------------- */

#define COLUMNS "id, sha256, name, format, options, entries, sessions, bytes, created_ns, stats"

static json_t *parse_col(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	json_t *j = t ? json_loads(t, 0, NULL) : NULL;
	return j ? j : json_null();
}

static json_t *text_col(sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	return t ? json_string(t) : json_null();
}

static json_t *row_json(sqlite3_stmt *st)
{
	char when[32];
	fmt_time_ms(when, sqlite3_column_int64(st, 8) / 1000000);
	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, 0)));
	json_object_set_new(o, "sha256", text_col(st, 1));
	json_object_set_new(o, "name", text_col(st, 2));
	json_object_set_new(o, "format", text_col(st, 3));
	json_object_set_new(o, "options", parse_col(st, 4));
	json_object_set_new(o, "entries", json_integer(sqlite3_column_int64(st, 5)));
	json_object_set_new(o, "sessions", json_integer(sqlite3_column_int64(st, 6)));
	json_object_set_new(o, "bytes", json_integer(sqlite3_column_int64(st, 7)));
	json_object_set_new(o, "created_at", json_string(when));
	json_object_set_new(o, "stats", parse_col(st, 9));
	return o;
}

/* The rows matching where (with at most one int64 parameter), newest first. */
static int query(struct store *s, const char *where, int64_t arg, int limit, json_t **out,
                 char *err)
{
	char sql[512];
	snprintf(sql, sizeof sql, "SELECT " COLUMNS " FROM datasets %s ORDER BY id DESC LIMIT %d",
	         where, limit);
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int rc = 0;
	*out = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = errf(err, "datasets query: %s", sqlite3_errmsg(db));
	} else {
		if (strchr(where, '?'))
			sqlite3_bind_int64(st, 1, arg);
		*out = json_array();
		int step;
		while ((step = sqlite3_step(st)) == SQLITE_ROW)
			json_array_append_new(*out, row_json(st));
		if (step != SQLITE_DONE) {
			rc = errf(err, "datasets query: %s", sqlite3_errmsg(db));
			json_decref(*out);
			*out = NULL;
		}
	}
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return rc;
}

int datasets_get(struct store *s, int64_t id, json_t **out, char *err)
{
	json_t *list;
	if (query(s, "WHERE id = ?", id, 1, &list, err) < 0)
		return -1;
	*out = json_array_size(list) ? json_incref(json_array_get(list, 0)) : NULL;
	json_decref(list);
	return *out ? 0 : -404;
}

int datasets_list(struct store *s, int limit, json_t **out, char *err)
{
	json_t *list;
	if (query(s, "", 0, limit, &list, err) < 0)
		return -1;
	*out = json_pack("{s:o}", "datasets", list);
	return 0;
}

/* The id of the row for these bytes read this way, 0 when none, -1 on error. */
static int64_t find_row(struct store *s, const char *sha, const char *format, const char *opts,
                        char *err)
{
	static const char sql[] =
	    "SELECT id FROM datasets WHERE sha256 = ? AND format = ? AND options = ?";
	sqlite3 *db = store_reader(s);
	sqlite3_stmt *st = NULL;
	int64_t id = -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, format, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, opts, -1, SQLITE_STATIC);
		int step = sqlite3_step(st);
		id = step == SQLITE_ROW    ? sqlite3_column_int64(st, 0)
		     : step == SQLITE_DONE ? 0
		                           : -1;
	}
	if (id < 0)
		errf(err, "datasets query: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	store_reader_put(s, db);
	return id;
}

struct insert_args {
	const char *sha, *format, *opts, *name;
	char *stats;
	int64_t entries, sessions, bytes;
	int64_t id;
	int created;
};

static int insert_job(struct store_tx *tx, void *arg, char *err)
{
	struct insert_args *a = arg;
	static const char find[] =
	    "SELECT id FROM datasets WHERE sha256 = ? AND format = ? AND options = ?";
	sqlite3_stmt *st = store_tx_stmt(tx, find);
	sqlite3_bind_text(st, 1, a->sha, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->format, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->opts, -1, SQLITE_STATIC);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) { /* a concurrent upload of the same bytes won */
		a->id = sqlite3_column_int64(st, 0);
		a->created = 0;
		sqlite3_reset(st);
		return 0;
	}
	sqlite3_reset(st);
	if (step != SQLITE_DONE)
		return errf(err, "datasets query: %s", sqlite3_errmsg(tx->db));
	static const char ins[] =
	    "INSERT INTO datasets (sha256, format, options, name, entries, "
	    "sessions, bytes, created_ns, stats) VALUES (?, ?, ?, ?, ?, ?, ?, "
	    "?, ?)";
	st = store_tx_stmt(tx, ins);
	sqlite3_bind_text(st, 1, a->sha, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->format, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->opts, -1, SQLITE_STATIC);
	if (a->name)
		sqlite3_bind_text(st, 4, a->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, a->entries);
	sqlite3_bind_int64(st, 6, a->sessions);
	sqlite3_bind_int64(st, 7, a->bytes);
	sqlite3_bind_int64(st, 8, wall_ns());
	sqlite3_bind_text(st, 9, a->stats, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return errf(err, "dataset insert: %s", sqlite3_errmsg(tx->db));
	a->id = sqlite3_last_insert_rowid(tx->db);
	a->created = 1;
	return 0;
}

/* --- create ---------------------------------------------------------------------------- */

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* Makes the upload DIR/<sha>: durable, under its final name, or dropped
 * when that file is already there. */
static int keep_file(struct ds_upload *u, const char *sha, char *err)
{
	char *final = xasprintf("%s/%s", u->dir, sha);
	struct stat st;
	int rc = 0;
	if (stat(final, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == u->bytes) {
		unlink(u->tmp); /* the same bytes are stored already */
	} else if (fsync(u->fd) < 0) {
		rc = errf(err, "cannot write %s: %s", u->tmp, strerror(errno));
	} else if (rename(u->tmp, final) < 0) {
		rc = errf(err, "cannot rename %s to %s: %s", u->tmp, final, strerror(errno));
	} else if (fsync_dir(u->dir) < 0) {
		rc = errf(err, "cannot sync %s: %s", u->dir, strerror(errno));
	}
	if (rc == 0) {
		free(u->tmp);
		u->tmp = NULL;
	}
	free(final);
	return rc;
}

static int create(struct store *s, struct ds_upload *u, const struct ds_create *c, json_t **out,
                  struct ds_error *de, char *err)
{
	if (u->discarded)
		return errf(err, "the upload was discarded");
	if (u->err_no)
		return errf(err, "cannot write the upload to %s: %s", u->dir, strerror(u->err_no));
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	if (EVP_DigestFinal_ex(u->md, md, &mdlen) != 1 || mdlen != 32)
		return errf(err, "cannot finish the SHA-256 digest");
	char sha[65];
	for (unsigned i = 0; i < 32; i++)
		snprintf(sha + 2 * i, 3, "%02x", md[i]);
	const char *format = ds_format_name(c->format);
	json_t *oj = ds_options_json(c->format, &c->opts);
	char *opts = json_dumps(oj, JSON_COMPACT);
	json_decref(oj);

	/* the same bytes read the same way were valid before: nothing to do */
	int64_t id = find_row(s, sha, format, opts, err);
	if (id != 0) {
		free(opts);
		if (id < 0)
			return -1;
		int rc = datasets_get(s, id, out, err);
		return rc == 0      ? 200
		       : rc == -404 ? errf(err, "dataset %lld vanished", (long long)id)
		                    : -1;
	}

	struct ds_options po = c->opts;
	po.max_entries = 0;
	struct dataset d;
	pthread_mutex_lock(&parse_lock);
	int rc = dataset_load_fd(u->fd, c->format, &po, &d, de);
	struct insert_args a = {.sha = sha, .format = format, .opts = opts, .name = c->name};
	if (rc == 0) {
		json_t *st = dataset_stats_json(&d);
		a.stats = json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(17));
		json_decref(st);
		a.entries = (int64_t)d.n;
		a.sessions = (int64_t)d.n_sessions;
		a.bytes = (int64_t)u->bytes;
		dataset_release(&d);
	}
	pthread_mutex_unlock(&parse_lock);
	if (rc < 0) {
		free(opts);
		return -400;
	}
	pthread_mutex_lock(&file_lock);
	rc = keep_file(u, sha, err);
	if (rc == 0)
		rc = store_exec(s, insert_job, &a, err);
	pthread_mutex_unlock(&file_lock);
	free(a.stats);
	free(opts);
	if (rc < 0)
		return -1;
	rc = datasets_get(s, a.id, out, err);
	if (rc < 0)
		return rc == -404 ? errf(err, "dataset %lld vanished", (long long)a.id) : -1;
	if (a.created)
		hlog(LOG_INFO, "datasets", "dataset %lld stored (%s, %lld entries, sha256 %s)\n",
		        (long long)a.id, format, (long long)a.entries, sha);
	return a.created ? 201 : 200;
}

int datasets_create(struct store *s, struct ds_upload *u, const struct ds_create *c, json_t **out,
                    struct ds_error *de, char *err)
{
	*out = NULL;
	memset(de, 0, sizeof *de);
	int rc = create(s, u, c, out, de, err);
	/* whatever the outcome, the temporary file is gone before the answer
	 * (kept under its final name, or removed) */
	ds_upload_discard(u);
	return rc;
}

/* --- deleting ------------------------------------------------------------------------------ */

struct delete_args {
	int64_t id, run; /* run: a queued or running run that uses it */
	char sha[65];
	int found, shared; /* shared: another row reads the same file */
};

static int delete_job(struct store_tx *tx, void *arg, char *err)
{
	struct delete_args *a = arg;
	sqlite3_stmt *st = store_tx_stmt(tx, "SELECT sha256 FROM datasets WHERE id = ?");
	sqlite3_bind_int64(st, 1, a->id);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *sha = (const char *)sqlite3_column_text(st, 0);
		a->found = sha && strlen(sha) == 64;
		if (a->found)
			memcpy(a->sha, sha, 65);
	}
	sqlite3_reset(st);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return errf(err, "datasets query: %s", sqlite3_errmsg(tx->db));
	if (!a->found)
		return 0;
	st = store_tx_stmt(tx, "SELECT id FROM runs WHERE state IN ('queued', 'running') AND "
	                       "json_extract(spec, '$.workload.dataset.id') = ? ORDER BY id "
	                       "LIMIT 1");
	sqlite3_bind_int64(st, 1, a->id);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		a->run = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return errf(err, "runs query: %s", sqlite3_errmsg(tx->db));
	if (a->run)
		return 0;
	st = store_tx_stmt(tx, "DELETE FROM datasets WHERE id = ?");
	sqlite3_bind_int64(st, 1, a->id);
	step = sqlite3_step(st);
	sqlite3_reset(st);
	if (step != SQLITE_DONE)
		return errf(err, "dataset delete: %s", sqlite3_errmsg(tx->db));
	st = store_tx_stmt(tx, "SELECT 1 FROM datasets WHERE sha256 = ? LIMIT 1");
	sqlite3_bind_text(st, 1, a->sha, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	a->shared = step == SQLITE_ROW;
	sqlite3_reset(st);
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		return errf(err, "datasets query: %s", sqlite3_errmsg(tx->db));
	return 0;
}

int datasets_delete(struct store *s, int64_t id, int64_t *run, char *err)
{
	struct delete_args a = {.id = id};
	*run = 0;
	pthread_mutex_lock(&file_lock);
	int rc = store_exec(s, delete_job, &a, err);
	if (rc == 0 && a.found && !a.run && !a.shared) {
		char *dir = datasets_dir(s);
		char *path = xasprintf("%s/%s", dir, a.sha);
		if (unlink(path) < 0 && errno != ENOENT)
			hlog(LOG_INFO, "datasets", "dataset %lld deleted, but not its file %s: %s\n",
			        (long long)id, path, strerror(errno));
		else
			fsync_dir(dir);
		free(path);
		free(dir);
	}
	pthread_mutex_unlock(&file_lock);
	if (rc < 0)
		return -1;
	if (!a.found)
		return -404;
	if (a.run) {
		*run = a.run;
		return -409;
	}
	hlog(LOG_INFO, "datasets", "dataset %lld deleted%s\n", (long long)id,
	        a.shared ? " (its file stays: another dataset reads it)" : "");
	return 0;
}

/* --- reading back --------------------------------------------------------------------------- */

int datasets_ref(struct store *s, int64_t id, struct dataset_ref *ref, char *err)
{
	memset(ref, 0, sizeof *ref);
	json_t *row;
	int rc = datasets_get(s, id, &row, err);
	if (rc < 0)
		return rc;
	const char *sha = json_string_value(json_object_get(row, "sha256"));
	const char *format = json_string_value(json_object_get(row, "format"));
	char why[HR_ERRLEN];
	rc = -1;
	if (!sha || strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64 ||
	    ds_format_parse(format, &ref->format) < 0) {
		errf(err, "dataset %lld: malformed row", (long long)id);
	} else if (ds_options_from_json(json_object_get(row, "options"), &ref->opts, why) < 0) {
		errf(err, "dataset %lld: %s", (long long)id, why);
	} else {
		ref->id = id;
		memcpy(ref->sha256, sha, 65);
		ref->bytes = json_integer_value(json_object_get(row, "bytes"));
		ref->entries = json_integer_value(json_object_get(row, "entries"));
		ref->sessions = json_integer_value(json_object_get(row, "sessions"));
		/* the parser allows every entry a timestamp, or none */
		json_t *ts = json_object_get(json_object_get(row, "stats"), "with_timestamp");
		ref->timed = (ref->format == DS_SINGLE_TURN || ref->format == DS_RANDOM_POOL) &&
			     json_integer_value(ts) > 0;
		char *dir = datasets_dir(s);
		char *rel = xasprintf("%s/%s", dir, sha);
		ref->path = realpath(rel, NULL);
		if (!ref->path)
			errf(err, "dataset %lld: its file %s: %s", (long long)id, rel,
			     strerror(errno));
		else
			rc = 0;
		free(rel);
		free(dir);
	}
	json_decref(row);
	if (rc < 0)
		dataset_ref_release(ref);
	return rc;
}

void dataset_ref_release(struct dataset_ref *ref)
{
	free(ref->path);
	memset(ref, 0, sizeof *ref);
}

int datasets_entries(struct store *s, int64_t id, size_t offset, size_t limit, json_t **out,
                     char *err)
{
	*out = NULL;
	struct dataset_ref ref;
	int rc = datasets_ref(s, id, &ref, err);
	if (rc < 0)
		return rc;
	struct ds_options o = ref.opts;
	o.max_entries = offset + limit;
	struct dataset d;
	struct ds_error de;
	pthread_mutex_lock(&parse_lock);
	rc = dataset_load_file(ref.path, ref.format, &o, &d, &de);
	if (rc == 0) {
		json_t *list = json_array();
		for (size_t i = offset; i < d.n && i < offset + limit; i++)
			json_array_append_new(list,
			                      dataset_entry_json(&d, i, HR_DATASET_PREVIEW_TEXT,
			                                         HR_DATASET_PREVIEW_HASH_IDS));
		*out = json_pack("{s:I, s:I, s:I, s:o}", "dataset_id", (json_int_t)id, "total",
		                 (json_int_t)ref.entries, "offset", (json_int_t)offset, "entries",
		                 list);
		dataset_release(&d);
	}
	pthread_mutex_unlock(&parse_lock);
	if (rc < 0)
		errf(err, "dataset %lld cannot be read back: %s", (long long)id, de.message);
	dataset_ref_release(&ref);
	return rc < 0 ? -1 : 0;
}
