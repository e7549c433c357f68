/* datasets.h - uploaded datasets (docs/datasets.md): the bytes stored once
 * by content hash, a table row per format and options, statistics and
 * previews.
 *
 * An upload streams into a temporary file in DATA/datasets/ while its
 * SHA-256 is computed. Once complete it is parsed (lib/dataset.h; one parse
 * at a time, which bounds the daemon's memory), and only a valid dataset is
 * kept: fsynced and renamed to DATA/datasets/<sha256> (its directory
 * fsynced too), so a crash never leaves part of a file under that name, and
 * the row is inserted by the store thread. The same bytes uploaded again
 * with the same format and options find the existing row; with another
 * format they get a row of their own that shares the one file.
 *
 * Threading: the upload functions run on the API thread that owns the
 * request; rows are written through the store's writer thread.
 */
#ifndef HR_SERVER_DATASETS_H
#define HR_SERVER_DATASETS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "store.h"

struct ds_upload;

/* Starts an upload into a temporary file (creating DATA/datasets/ when
 * needed). Returns it, or NULL with err. */
struct ds_upload *ds_upload_begin(struct store *s, char *err);
/* Appends n bytes. Returns 0, or -1 once a write has failed (the upload
 * then ignores the rest and datasets_create reports it). */
int ds_upload_write(struct ds_upload *u, const void *p, size_t n);
/* Removes the temporary file now (the upload passed its bound); the rest
 * of the body is ignored. */
void ds_upload_discard(struct ds_upload *u);
/* Bytes received so far. */
uint64_t ds_upload_bytes(const struct ds_upload *u);
/* Removes what is left of the upload. NULL is a no-op. */
void ds_upload_free(struct ds_upload *u);

struct ds_create {
	enum ds_format format;
	struct ds_options opts; /* max_entries is ignored */
	const char *name;       /* may be NULL */
};

/* Validates the complete upload and stores it. Returns 201 (a new
 * dataset) or 200 (the same bytes, format and options were there already)
 * with *out the dataset (new reference); -400 with de filled for a
 * malformed dataset; -1 with err on a failure of the daemon. Either way
 * the temporary file is gone when it returns (kept under its final name,
 * or removed), before any answer; ds_upload_free is still due. */
int datasets_create(struct store *s, struct ds_upload *u, const struct ds_create *c, json_t **out,
                    struct ds_error *de, char *err);
/* At start-up, before the API serves: removes what a crash left in
 * DATA/datasets - the temporary files of uploads in flight, and files
 * under a content name that no dataset reads (a crash between an upload's
 * rename and its row, or between a delete's row and its file). Returns how
 * many files it removed, or -1 with err. */
int datasets_recover(struct store *s, char *err);
/* The same for any folder of files named by their SHA-256 (imports/ too):
 * removes the files starting with tmp_prefix and those query (one
 * parameter, the name) finds no row for. Returns how many it removed, or
 * -1 with err; 0 when the folder does not exist. */
int store_files_recover(struct store *s, const char *dir, const char *tmp_prefix,
			const char *query, const char *what, char *err);
/* One dataset (new reference): 0, -404, or -1 with err. */
int datasets_get(struct store *s, int64_t id, json_t **out, char *err);
/* Deletes dataset id, and its file when no other dataset reads the same
 * bytes. 0, -404, -409 (a queued or running run uses it: its id in *run),
 * or -1 with err. */
int datasets_delete(struct store *s, int64_t id, int64_t *run, char *err);
/* {"datasets": [...]}, newest first, at most limit: 0 or -1 with err. */
int datasets_list(struct store *s, int limit, json_t **out, char *err);
/* {"dataset_id", "total", "offset", "entries": [...]}: at most limit
 * entries from the offset-th, texts cut for display (hrlimits.h). 0, -404,
 * or -1 with err. */
int datasets_entries(struct store *s, int64_t id, size_t offset, size_t limit, json_t **out,
                     char *err);

/* What a run needs to use a dataset: its file (an absolute path) and how
 * to read it (dataset_load_file(path, format, &opts, ...)). */
struct dataset_ref {
	int64_t id;
	char sha256[65];
	enum ds_format format;
	struct ds_options opts;
	char *path; /* owned */
	int64_t bytes, entries, sessions;
	int timed; /* single_turn / random_pool whose entries all have a timestamp */
};

/* 0 and *ref (dataset_ref_release), -404, or -1 with err. */
int datasets_ref(struct store *s, int64_t id, struct dataset_ref *ref, char *err);
void dataset_ref_release(struct dataset_ref *ref);

#endif
