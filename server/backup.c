/* backup.c - online backups of the store and their restore (see backup.h). */
#include "backup.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "migrations.h"
#include "store.h"
#include "util.h"

static int fsync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

/* Copies src to dst (new), fsynced; the bytes copied, or -1 with err. */
static long long copy_file(const char *src, const char *dst, char *err)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errf(err, "cannot read %s: %s", src, strerror(errno));
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return errf(err, "cannot create %s: %s", dst, strerror(errno));
	}
	char buf[1 << 16];
	long long total = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			errf(err, "cannot read %s: %s", src, strerror(errno));
			total = -1;
			break;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				errf(err, "cannot write %s: %s", dst, strerror(errno));
				total = -1;
				break;
			}
			off += w;
		}
		if (total < 0)
			break;
		total += n;
	}
	if (total >= 0 && fsync(out) < 0)
		total = errf(err, "cannot write %s: %s", dst, strerror(errno));
	close(in);
	close(out);
	if (total < 0)
		unlink(dst);
	return total;
}

/* The data directory of a store: its database's directory. */
static char *data_dir_of(struct store *s)
{
	const char *db = store_path(s);
	const char *slash = strrchr(db, '/');
	return slash ? xasprintf("%.*s", (int)(slash - db), db) : xstrdup(".");
}

static long long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* The files kept beside the database, named by their SHA-256: which
 * folder, the query naming them, and what to do in a backup when one is
 * gone since the snapshot (a deleted dataset: forget it in the copy too;
 * an imported run's original: keep the run, count it missing). */
static const struct file_kind {
	const char *dir, *query, *forget;
} file_kinds[] = {
    {"datasets", "SELECT DISTINCT sha256 FROM datasets", "DELETE FROM datasets WHERE sha256 = ?"},
    {"imports",
     "SELECT sha256 FROM run_imports UNION SELECT jsonl_sha256 FROM run_imports WHERE "
     "jsonl_sha256 IS NOT NULL",
     NULL},
};

/* The well-formed hashes the query names (never a path from the database
 * as it is); an empty array when the table is not there. */
static json_t *hashes(sqlite3 *db, const char *query)
{
	json_t *out = json_array();
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, query, -1, &st, NULL) == SQLITE_OK)
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *sha = (const char *)sqlite3_column_text(st, 0);
			if (sha && strspn(sha, "0123456789abcdef") == 64 && !sha[64])
				json_array_append_new(out, json_string(sha));
		}
	sqlite3_finalize(st);
	return out;
}

/* Links (or copies) the files of one kind the backup's database names into
 * dest/DIR: 0, or -1 with err. */
static int backup_files(sqlite3 *bdb, const char *data, const char *dest,
			const struct file_kind *fk, long long *files, long long *bytes,
			long long *missing, char *err)
{
	char *dir = xasprintf("%s/%s", dest, fk->dir);
	int rc = 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		free(dir);
		return errf(err, "cannot create %s/%s: %s", dest, fk->dir, strerror(errno));
	}
	json_t *shas = hashes(bdb, fk->query);
	size_t k;
	json_t *v;
	json_array_foreach(shas, k, v) {
		const char *sha = json_string_value(v);
		char *src = xasprintf("%s/%s/%s", data, fk->dir, sha);
		char *dst = xasprintf("%s/%s", dir, sha);
		struct stat sst;
		if (stat(src, &sst) < 0 && errno == ENOENT) {
			(*missing)++;
			sqlite3_stmt *st = NULL;
			if (fk->forget && sqlite3_prepare_v2(bdb, fk->forget, -1, &st, NULL) == SQLITE_OK) {
				sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
				sqlite3_step(st);
			}
			sqlite3_finalize(st);
		} else if (link(src, dst) == 0) {
			*bytes += (long long)sst.st_size;
			(*files)++;
		} else {
			long long n = copy_file(src, dst, err);
			if (n < 0)
				rc = -1;
			else {
				*bytes += n;
				(*files)++;
			}
		}
		free(src);
		free(dst);
		if (rc < 0)
			break;
	}
	json_decref(shas);
	fsync_path(dir, 1);
	free(dir);
	return rc;
}

int backup_make(struct store *s, const char *dest, json_t **info, char *err)
{
	int64_t t0 = mono_ns();
	if (mkdir(dest, 0700) < 0)
		return errf(err, "cannot create the backup directory %s: %s%s", dest, strerror(errno),
			    errno == EEXIST ? " (a backup goes to a new directory)" : "");
	char *db_path = xasprintf("%s/headroom.db", dest);
	char *data = data_dir_of(s);
	int rc = -1;
	sqlite3 *bdb = NULL;
	long long bytes = 0, files[2] = {0, 0}, runs = 0, missing = 0;
	/* the database as one read snapshot: consistent while runs write */
	sqlite3 *r = store_reader(s);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(r, "VACUUM INTO ?", -1, &st, NULL) != SQLITE_OK) {
		errf(err, "backup: %s", sqlite3_errmsg(r));
		sqlite3_finalize(st);
		store_reader_put(s, r);
		goto out;
	}
	sqlite3_bind_text(st, 1, db_path, -1, SQLITE_STATIC);
	int step = sqlite3_step(st);
	if (step != SQLITE_DONE)
		errf(err, "backup of the database failed: %s", sqlite3_errmsg(r));
	sqlite3_finalize(st);
	store_reader_put(s, r);
	if (step != SQLITE_DONE)
		goto out;
	/* the files the copy names (immutable, named by their hash): linked
	 * when the backup is on the same file system, else copied */
	if (sqlite3_open_v2(db_path, &bdb, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		errf(err, "cannot open the backup %s: %s", db_path, sqlite3_errmsg(bdb));
		goto out;
	}
	for (size_t i = 0; i < HR_ARRAY_LEN(file_kinds); i++)
		if (backup_files(bdb, data, dest, &file_kinds[i], &files[i], &bytes, &missing, err) < 0)
			goto out;
	if (sqlite3_prepare_v2(bdb, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		runs = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(bdb);
	bdb = NULL;
	bytes += file_size(db_path);
	fsync_path(db_path, 0);
	fsync_path(dest, 1);
	if (info)
		*info = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f}", "path", dest, "runs",
				  (json_int_t)runs, "datasets", (json_int_t)files[0], "imports",
				  (json_int_t)files[1], "missing", (json_int_t)missing, "bytes",
				  (json_int_t)bytes, "seconds", (double)(mono_ns() - t0) / 1e9);
	rc = 0;
out:
	if (bdb)
		sqlite3_close(bdb);
	free(db_path);
	free(data);
	return rc;
}

/* --- the commands ------------------------------------------------------------- */

static int sha256_file(const char *path, char *hex)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
	char buf[1 << 16];
	ssize_t n;
	while (ok && (n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0 && EVP_DigestUpdate(md, buf, (size_t)n) == 1;
	}
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	ok = ok && EVP_DigestFinal_ex(md, d, &len) == 1 && len == 32;
	EVP_MD_CTX_free(md);
	close(fd);
	for (unsigned i = 0; ok && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return ok ? 0 : -1;
}

static int arg_pair(int argc, char **argv, const char *usage_text, const char **data,
		    const char **pos)
{
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
			*data = argv[++i];
		} else if (argv[i][0] != '-' && !*pos) {
			*pos = argv[i];
		} else {
			fprintf(stderr, "headroomd: unexpected argument %s\n%s", argv[i], usage_text);
			return 2;
		}
	}
	if (!*pos) {
		fputs(usage_text, stderr);
		return 2;
	}
	return -1;
}

int backup_command(int argc, char **argv)
{
	static const char usage_text[] =
	    "usage: headroomd backup [--data DIR] DEST\n"
	    "  writes a consistent copy of the store in DIR (default headroom-data) to the\n"
	    "  new directory DEST: headroom.db, and the dataset and imported files it\n"
	    "  names. Safe while\n"
	    "  a daemon runs on DIR and writes (a read snapshot). DEST is a data\n"
	    "  directory: restore it with `headroomd restore DEST --data NEWDIR`.\n";
	const char *data = "headroom-data", *dest = NULL;
	int rc = arg_pair(argc, argv, usage_text, &data, &dest);
	if (rc >= 0)
		return rc;
	struct store *s = NULL;
	if (store_open_existing(data, "backup", &s) < 0)
		return 1;
	char err[HR_ERRLEN];
	json_t *info = NULL;
	rc = backup_make(s, dest, &info, err);
	store_free(s);
	if (rc < 0) {
		fprintf(stderr, "headroomd backup: %s\n", err);
		return 1;
	}
	printf("backup %s: %lld run(s), %lld dataset file(s), %lld imported file(s), %lld bytes in "
	       "%.2f s\n",
	       dest, (long long)json_integer_value(json_object_get(info, "runs")),
	       (long long)json_integer_value(json_object_get(info, "datasets")),
	       (long long)json_integer_value(json_object_get(info, "imports")),
	       (long long)json_integer_value(json_object_get(info, "bytes")),
	       json_number_value(json_object_get(info, "seconds")));
	json_decref(info);
	return 0;
}

int restore_command(int argc, char **argv)
{
	static const char usage_text[] =
	    "usage: headroomd restore [--data NEWDIR] BACKUP\n"
	    "  checks the backup BACKUP (made by `headroomd backup` or POST\n"
	    "  /api/v1/backups): the database's integrity and schema version, and every\n"
	    "  dataset and imported file against its SHA-256; then copies it into NEWDIR (default\n"
	    "  headroom-data), which must not exist or be empty. Start the daemon on\n"
	    "  NEWDIR afterwards.\n";
	const char *data = "headroom-data", *src = NULL;
	int rc = arg_pair(argc, argv, usage_text, &data, &src);
	if (rc >= 0)
		return rc;
	char err[HR_ERRLEN];
	char *db_path = xasprintf("%s/headroom.db", src);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	rc = 1;
	char *out_db = NULL, *out_ds = NULL;
	long long runs = 0, files = 0;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		fprintf(stderr, "headroomd restore: cannot open %s: %s\n", db_path,
			sqlite3_errmsg(db));
		goto out;
	}
	const char *check = NULL;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		check = (const char *)sqlite3_column_text(st, 0);
	if (!check || strcmp(check, "ok") != 0) {
		fprintf(stderr, "headroomd restore: %s fails its integrity check: %s\n", db_path,
			check ? check : sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	int version = -1;
	if (sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_migrations", -1, &st, NULL) ==
		SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (version < 1 || version > migrations[migrations_count - 1].version) {
		fprintf(stderr,
			"headroomd restore: %s has schema version %d; this headroomd reads 1 to %d\n",
			db_path, version, migrations[migrations_count - 1].version);
		goto out;
	}
	/* the target: new, or an empty directory */
	if (mkdir(data, 0700) < 0) {
		int empty = 0;
		if (errno == EEXIST) {
			char *probe = xasprintf("%s/headroom.db", data);
			struct stat pst;
			empty = stat(probe, &pst) < 0;
			free(probe);
		}
		if (!empty) {
			fprintf(stderr,
				"headroomd restore: %s already holds a store (restore into a new "
				"directory)\n",
				data);
			goto out;
		}
	}
	out_db = xasprintf("%s/headroom.db", data);
	for (size_t i = 0; i < HR_ARRAY_LEN(file_kinds); i++) {
		free(out_ds);
		out_ds = xasprintf("%s/%s", data, file_kinds[i].dir);
		if (mkdir(out_ds, 0700) < 0 && errno != EEXIST) {
			fprintf(stderr, "headroomd restore: cannot create %s: %s\n", out_ds,
				strerror(errno));
			goto out;
		}
		json_t *shas = hashes(db, file_kinds[i].query);
		size_t k;
		json_t *v;
		int ok = 1;
		json_array_foreach(shas, k, v) {
			const char *sha = json_string_value(v);
			char *from = xasprintf("%s/%s/%s", src, file_kinds[i].dir, sha);
			char *to = xasprintf("%s/%s", out_ds, sha);
			char hex[65];
			ok = sha256_file(from, hex) == 0 && strcmp(hex, sha) == 0;
			if (!ok)
				fprintf(stderr, "headroomd restore: %s file %s is missing or damaged\n",
					file_kinds[i].dir, from);
			else if (copy_file(from, to, err) < 0) {
				fprintf(stderr, "headroomd restore: %s\n", err);
				ok = 0;
			}
			free(from);
			free(to);
			if (!ok)
				break;
			files++;
		}
		json_decref(shas);
		fsync_path(out_ds, 1);
		if (!ok)
			goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		runs = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (copy_file(db_path, out_db, err) < 0) {
		fprintf(stderr, "headroomd restore: %s\n", err);
		goto out;
	}
	fsync_path(data, 1);
	printf("restored %lld run(s) and %lld dataset and import file(s) into %s; start headroomd "
	       "--data %s\n",
	       runs, files, data, data);
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(db_path);
	free(out_db);
	free(out_ds);
	return rc;
}
