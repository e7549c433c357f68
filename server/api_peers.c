/* api_peers.c - GET /api/v1/runs/{id}/export: a run in the files other
 * benchmark tools write (AIPerf's profile_export_aiperf.json / .csv and
 * profile_export.jsonl, vLLM's bench serve result JSON; server/peerfmt.c,
 * docs/formats.md). */
#include "apiint.h"

#include <stdlib.h>
#include <string.h>

#include "card.h"
#include "dynbuf.h"
#include "imports.h"
#include "peerfmt.h"
#include "runs.h"
#include "store.h"
#include "util.h"

#define PEER_BLOCK (64u * 1024u)
/* A whole-document export (vLLM's per-request arrays) is built in memory:
 * the arrays at most this much together. A larger run exports per request
 * as aiperf-jsonl, streamed. */
#define PEER_MAX_DOC (512u * 1024u * 1024u)

/* --- profile_export.jsonl, streamed --------------------------------------------------- */

struct peer_stream {
	struct rec_cursor *rec;
	int64_t t0;
	struct dynbuf buf;
	size_t off;
	int eof, failed;
};

static ssize_t peer_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	(void)pos;
	struct peer_stream *ps = cls;
	while (ps->buf.len - ps->off < max && !ps->eof) {
		if (ps->off) {
			memmove(ps->buf.data, ps->buf.data + ps->off, ps->buf.len - ps->off);
			ps->buf.len -= ps->off;
			ps->off = 0;
		}
		const struct hr_record *r;
		int rc = rec_cursor_next(ps->rec, &r);
		if (rc == 1 && peer_aiperf_record(&ps->buf, r, ps->t0) < 0)
			rc = -1;
		if (rc != 1) {
			ps->eof = 1;
			ps->failed = rc < 0;
		}
	}
	size_t avail = ps->buf.len - ps->off;
	if (avail == 0)
		return ps->failed ? MHD_CONTENT_READER_END_WITH_ERROR
				  : MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = avail < max ? avail : max;
	memcpy(out, ps->buf.data + ps->off, n);
	ps->off += n;
	return (ssize_t)n;
}

static void peer_stream_free(void *cls)
{
	struct peer_stream *ps = cls;
	rec_cursor_free(ps->rec);
	dynbuf_release(&ps->buf);
	free(ps);
}

/* The cursor outlives the handler, so it reads through a reader of the
 * export pool (as the records export does: store.h, docs/limits.md). */
static enum MHD_Result stream_jsonl(struct call *k, int64_t t0)
{
	struct store *s = k->a->store;
	sqlite3 *ex = store_export_reader(s);
	if (!ex)
		return reply_retry(k->conn, 503, "busy", HR_RETRY_AFTER_S,
				   "all %d export readers are taken by downloads in progress: "
				   "retry in a moment",
				   store_export_readers(s));
	sqlite3 *api_db = store_reader_bind(s, ex);
	struct peer_stream *ps = xcalloc(1, sizeof *ps);
	ps->t0 = t0;
	dynbuf_init(&ps->buf, (size_t)HR_MAX_CHUNKS_PER_REQUEST * 24 + PEER_BLOCK * 2);
	ps->rec = rec_cursor_open(s, k->id);
	store_reader_bind(s, api_db);
	if (!ps->rec) {
		store_reader_put(s, ex);
		peer_stream_free(ps);
		return reply_internal(k->conn, "cannot open the records");
	}
	struct MHD_Response *r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, PEER_BLOCK, peer_stream_read, ps, peer_stream_free);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
	MHD_add_response_header(r, "Content-Disposition",
				"attachment; filename=\"profile_export.jsonl\"");
	enum MHD_Result ret = MHD_queue_response(k->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- whole documents -------------------------------------------------------------------- */

static enum MHD_Result reply_file(struct call *k, const char *type, const char *filename,
				  char *text, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	char cd[128];
	snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", filename);
	MHD_add_response_header(r, "Content-Disposition", cd);
	enum MHD_Result ret = MHD_queue_response(k->conn, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result h_export(struct call *k)
{
	static const char *const fmts[] = {"aiperf-json", "aiperf-csv", "aiperf-jsonl", "vllm"};
	const char *fmt = arg(k->conn, "format");
	int f = -1;
	for (size_t i = 0; fmt && i < HR_ARRAY_LEN(fmts); i++)
		if (strcmp(fmt, fmts[i]) == 0)
			f = (int)i;
	if (!fmt)
		return reply_error(k->conn, 400, "missing_field", "format",
				   "'format' is required: aiperf-json, aiperf-csv, aiperf-jsonl or "
				   "vllm");
	if (f < 0)
		return reply_error(k->conn, 400, "invalid_value", "format",
				   "'format' must be aiperf-json, aiperf-csv, aiperf-jsonl or vllm");
	const char *d = arg(k->conn, "detail");
	int detail = 0;
	if (d && strcmp(d, "true") == 0)
		detail = 1;
	else if (d && strcmp(d, "false") != 0)
		return reply_error(k->conn, 400, "invalid_value", "detail",
				   "'detail' must be true or false");
	if (detail && f != 3)
		return reply_error(k->conn, 400, "invalid_value", "detail",
				   "'detail' applies to format vllm only (aiperf-jsonl is the "
				   "per-request AIPerf file)");
	json_t *run;
	enum MHD_Result ret;
	if (api_run_get(k, 1, &run, &ret) < 0)
		return ret;
	card_run_member(k->a->store, k->id, run); /* the exports carry the card */
	if (!json_is_object(json_object_get(run, "summary"))) {
		json_decref(run);
		return reply_error(k->conn, 409, "not_ready", NULL,
				   "run %lld has no summary yet: it is exported once it ends",
				   (long long)k->id);
	}
	if (imports_summary_only(run)) { /* no records, only the figures its file stated */
		json_decref(run);
		return reply_error(k->conn, 409, "conflict", NULL,
				   "run %lld was imported without per-request records: its original "
				   "file is the export (import.sha256)",
				   (long long)k->id);
	}
	if (f == 2) {
		json_decref(run);
		int64_t t0 = runs_t0_wall(k->a->store, k->id);
		if (t0 < 0)
			return reply_internal(k->conn, "cannot read the run");
		return stream_jsonl(k, t0);
	}
	/* one pass over the records: the totals, and vLLM's arrays with detail */
	struct peer_totals t = {0};
	struct peer_vllm_arrays arr;
	peer_vllm_arrays_init(&arr, PEER_MAX_DOC);
	int too_big = 0;
	struct rec_cursor *c = rec_cursor_open(k->a->store, k->id);
	int rc = c ? 1 : -1;
	const struct hr_record *r;
	while (c && (rc = rec_cursor_next(c, &r)) == 1) {
		peer_totals_add(&t, r);
		if (detail && !too_big && peer_vllm_arrays_add(&arr, r) < 0)
			too_big = 1;
	}
	rec_cursor_free(c);
	if (rc < 0) {
		peer_vllm_arrays_release(&arr);
		json_decref(run);
		return reply_internal(k->conn, "cannot read the records");
	}
	if (too_big) {
		peer_vllm_arrays_release(&arr);
		json_decref(run);
		return reply_error(k->conn, 413, "too_large", "detail",
				   "the run's per-request arrays pass %u MiB: export them as "
				   "aiperf-jsonl, or vllm without detail",
				   PEER_MAX_DOC / (1024u * 1024u));
	}
	struct dynbuf out;
	dynbuf_init(&out, PEER_MAX_DOC + 1024u * 1024u); /* the arrays and the rest */
	const char *type = "application/json", *name = "profile_export_aiperf.json";
	if (f == 0) {
		json_t *doc = peer_aiperf_json(run, &t, HEADROOM_VERSION);
		char *s = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
		json_decref(doc);
		if (s)
			dynbuf_addstr(&out, s);
		free(s);
		dynbuf_addstr(&out, "\n");
	} else if (f == 1) {
		peer_aiperf_csv(&out, run, &t);
		type = "text/csv; charset=utf-8";
		name = "profile_export_aiperf.csv";
	} else {
		peer_vllm_head(&out, run, &t);
		if (detail)
			peer_vllm_arrays_finish(&arr, &out);
		dynbuf_addstr(&out, "}\n");
		name = "vllm_result.json";
	}
	peer_vllm_arrays_release(&arr);
	json_decref(run);
	size_t len;
	char *text = dynbuf_take(&out, &len);
	if (!text)
		text = xstrdup("");
	return reply_file(k, type, name, text, len);
}
