/* export.c - record rows for the JSONL and CSV exports (see export.h). */
#include "export.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

/* Fixed columns, in order, for both formats. */
static const char *const fixed_cols[] = {
	"worker",	   "seq",	  "req_id",	      "phase",	   "session",
	"turn",		   "intended_ns", "start_ns",	      "headers_ns", "first_output_ns",
	"end_ns",	   "done_ns",	  "status",	      "error",	   "error_message",
	"valid",	   "isl",	  "isl_source",	      "osl",	   "osl_source",
	"reasoning_tokens", "requested_osl", "usage_isl", "usage_osl", "tokenizer_isl",
	"tokenizer_osl", "n_chunks", "images_in", "audio_in", "media_bytes_in", "images_out",
	"bytes_out",
};

void export_csv_header(struct dynbuf *out)
{
	export_csv_header_ex(out, 0);
}

void export_csv_header_ex(struct dynbuf *out, int with_class)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(fixed_cols); i++) {
		dynbuf_printf(out, "%s%s", i ? "," : "", fixed_cols[i]);
		if (i == 0 && with_class)
			dynbuf_addstr(out, ",class");
	}
	for (size_t i = 0; i < metric_defs_count; i++)
		dynbuf_printf(out, ",%s", metric_defs[i].tag);
	dynbuf_addstr(out, "\n");
}

void export_csv_cell(struct dynbuf *b, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		dynbuf_addstr(b, s);
		return;
	}
	dynbuf_add(b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"')
			dynbuf_add(b, "\"", 1);
		dynbuf_add(b, s, 1);
	}
	dynbuf_add(b, "\"", 1);
}

/* --- rows ------------------------------------------------------------------------
 * A row is written in place: its longest possible length is reserved once
 * (row_bound), then every field goes straight into the buffer, integers
 * and doubles through fmt_i64 / fmt_double. */
#define VALUE_MAX 32 /* the longest number or literal (fmt_double: 24), with its NUL */
#define NAME(s) s, sizeof(s) - 1
/* every fixed field's name, for the bound */
#define FIXED_NAMES_LEN                                                                   \
	(sizeof("worker"                                                                   \
		"seq"                                                                      \
		"req_id"                                                                   \
		"phase"                                                                    \
		"session"                                                                  \
		"turn"                                                                     \
		"intended_ns"                                                              \
		"start_ns"                                                                 \
		"headers_ns"                                                               \
		"first_output_ns"                                                          \
		"end_ns"                                                                   \
		"done_ns"                                                                  \
		"status"                                                                   \
		"error"                                                                    \
		"error_message"                                                            \
		"valid"                                                                    \
		"isl"                                                                      \
		"isl_source"                                                               \
		"osl"                                                                      \
		"osl_source"                                                               \
		"reasoning_tokens"                                                         \
		"requested_osl"                                                            \
		"usage_isl"                                                                \
		"usage_osl"                                                                \
		"tokenizer_isl"                                                            \
		"tokenizer_osl"                                                            \
		"n_chunks"                                                                 \
		"images_in"                                                                \
		"audio_in"                                                                 \
		"media_bytes_in"                                                           \
		"images_out"                                                               \
		"bytes_out") -                                                             \
	 1)
#define FIXED_FIELDS 32
#define CHUNKS_HEAD ",\"chunk_offsets_ns\":["

struct row {
	char *p; /* where the next byte goes */
	int json, n;
};

/* The separator and, in JSONL, the key: ,"name": (or {"name": first). */
static inline void key(struct row *w, const char *name, size_t nlen)
{
	if (w->json) {
		*w->p++ = w->n ? ',' : '{';
		*w->p++ = '"';
		memcpy(w->p, name, nlen);
		w->p += nlen;
		*w->p++ = '"';
		*w->p++ = ':';
	} else if (w->n) {
		*w->p++ = ',';
	}
	w->n++;
}

static inline void v_null(struct row *w)
{
	if (w->json) {
		memcpy(w->p, "null", 4);
		w->p += 4;
	}
}

static inline void f_int(struct row *w, const char *name, size_t nlen, long long v)
{
	key(w, name, nlen);
	w->p += fmt_i64(w->p, v);
}

static inline void f_time(struct row *w, const char *name, size_t nlen, int64_t v)
{
	key(w, name, nlen);
	if (v == HR_NO_TIME)
		v_null(w);
	else
		w->p += fmt_i64(w->p, v);
}

static inline void f_count(struct row *w, const char *name, size_t nlen, int32_t v)
{
	key(w, name, nlen);
	if (v < 0)
		v_null(w);
	else
		w->p += fmt_i64(w->p, v);
}

/* A string value: JSON-escaped, or a CSV cell (quoted when it must be).
 * At most 6 * len + 2 bytes. */
static void f_str(struct row *w, const char *name, size_t nlen, const char *s, size_t len)
{
	key(w, name, nlen);
	char *p = w->p;
	if (w->json) {
		*p++ = '"';
		for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
			if (*c == '"' || *c == '\\') {
				*p++ = '\\';
				*p++ = (char)*c;
			} else if (*c < 0x20) {
				static const char hex[] = "0123456789abcdef";
				memcpy(p, "\\u00", 4);
				p[4] = hex[*c >> 4];
				p[5] = hex[*c & 15];
				p += 6;
			} else {
				*p++ = (char)*c;
			}
		}
		*p++ = '"';
	} else if (!strpbrk(s, ",\"\n\r")) {
		memcpy(p, s, len);
		p += len;
	} else {
		*p++ = '"';
		for (; *s; s++) {
			if (*s == '"')
				*p++ = '"';
			*p++ = *s;
		}
		*p++ = '"';
	}
	w->p = p;
}

static inline void f_dbl(struct row *w, const char *name, size_t nlen, double v)
{
	key(w, name, nlen);
	if (isnan(v))
		v_null(w);
	else
		w->p += fmt_double(w->p, v);
}

/* Writes r as one line into out: 0, or -1 (out unchanged) when the longest
 * form the row could take does not fit under out's bound. */
static int write_row(struct dynbuf *out, enum export_format fmt, const struct hr_record *r,
		     const char *cls)
{
	int json = fmt == EXPORT_JSONL;
	const char *phase = hr_phase_name(r->phase), *err = hr_err_name(r->error);
	const char *msg = r->error_msg ? r->error_msg : "";
	const char *isrc = hr_toksrc_name(r->isl_src), *osrc = hr_toksrc_name(r->osl_src);
	size_t lphase = strlen(phase), lerr = strlen(err), lmsg = strlen(msg);
	size_t lisrc = strlen(isrc), losrc = strlen(osrc);
	size_t tags = 0;
	if (json)
		for (size_t i = 0; i < metric_defs_count; i++)
			tags += strlen(metric_defs[i].tag);
	size_t bound = FIXED_NAMES_LEN + tags + (FIXED_FIELDS + metric_defs_count) * (4 + VALUE_MAX) +
		       6 * (lphase + lerr + lmsg + lisrc + losrc) + 5 * 2 +
		       (json ? sizeof CHUNKS_HEAD + 2 + (size_t)r->n_chunks * 21 : 0) + 1 +
		       (cls ? 6 * strlen(cls) + 16 : 0);
	char *start = dynbuf_space(out, bound);
	if (!start)
		return -1;
	struct row w = {.p = start, .json = json};
	int valid = record_is_valid(r);
	f_int(&w, NAME("worker"), r->worker);
	if (cls)
		f_str(&w, NAME("class"), cls, strlen(cls));
	f_int(&w, NAME("seq"), (long long)r->seq);
	f_int(&w, NAME("req_id"), (long long)r->req_id);
	f_str(&w, NAME("phase"), phase, lphase);
	f_int(&w, NAME("session"), r->session);
	f_int(&w, NAME("turn"), r->turn);
	f_time(&w, NAME("intended_ns"), r->intended_ns);
	f_time(&w, NAME("start_ns"), r->start_ns);
	f_time(&w, NAME("headers_ns"), r->headers_ns);
	f_time(&w, NAME("first_output_ns"), r->first_output_ns);
	f_time(&w, NAME("end_ns"), r->end_ns);
	f_time(&w, NAME("done_ns"), r->done_ns);
	f_int(&w, NAME("status"), r->http_status);
	f_str(&w, NAME("error"), err, lerr);
	f_str(&w, NAME("error_message"), msg, lmsg);
	key(&w, NAME("valid"));
	memcpy(w.p, valid ? "true" : "false", valid ? 4 : 5);
	w.p += valid ? 4 : 5;
	f_count(&w, NAME("isl"), r->isl);
	f_str(&w, NAME("isl_source"), isrc, lisrc);
	f_count(&w, NAME("osl"), r->osl);
	f_str(&w, NAME("osl_source"), osrc, losrc);
	f_count(&w, NAME("reasoning_tokens"), r->reasoning_tokens);
	f_count(&w, NAME("requested_osl"), r->req_osl);
	f_count(&w, NAME("usage_isl"), r->usage_isl);
	f_count(&w, NAME("usage_osl"), r->usage_osl);
	f_count(&w, NAME("tokenizer_isl"), r->tok_isl);
	f_count(&w, NAME("tokenizer_osl"), r->tok_osl);
	f_int(&w, NAME("n_chunks"), r->n_chunks);
	f_count(&w, NAME("images_in"), r->images_in);
	f_count(&w, NAME("audio_in"), r->audio_in);
	f_count(&w, NAME("media_bytes_in"), r->media_bytes_in);
	f_count(&w, NAME("images_out"), r->images_out);
	f_count(&w, NAME("bytes_out"), r->bytes_out);
	for (size_t i = 0; i < metric_defs_count; i++) {
		const char *tag = metric_defs[i].tag;
		f_dbl(&w, tag, json ? strlen(tag) : 0, metric_defs[i].fn(r));
	}
	if (json) { /* raw chunk arrivals, ns after start, so metrics can be recomputed */
		memcpy(w.p, CHUNKS_HEAD, sizeof CHUNKS_HEAD - 1);
		w.p += sizeof CHUNKS_HEAD - 1;
		for (uint32_t i = 0; i < r->n_chunks; i++) {
			if (i)
				*w.p++ = ',';
			w.p += fmt_i64(w.p, (long long)(r->chunk_ns[i] - r->start_ns));
		}
		*w.p++ = ']';
		*w.p++ = '}';
	}
	*w.p++ = '\n';
	dynbuf_commit(out, (size_t)(w.p - start));
	return 0;
}

int export_record(struct dynbuf *out, enum export_format fmt, const struct hr_record *r)
{
	return export_record_ex(out, fmt, r, NULL);
}

int export_record_ex(struct dynbuf *out, enum export_format fmt, const struct hr_record *r,
		     const char *cls)
{
	if (write_row(out, fmt, r, cls) == 0)
		return 0;
	/* Near the buffer's bound the row's longest form may not fit where
	 * the row itself does: write it alone, then append it whole or not
	 * at all, as dynbuf_add does. */
	struct dynbuf row;
	dynbuf_init(&row, SIZE_MAX / 2);
	write_row(&row, fmt, r, cls);
	int rc = dynbuf_add(out, row.data, row.len);
	dynbuf_release(&row);
	return rc;
}

void export_classes_of(json_t *spec, struct export_classes *out)
{
	memset(out, 0, sizeof *out);
	size_t i;
	json_t *c;
	uint32_t first = 0;
	json_array_foreach(json_object_get(spec, "classes"), i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		json_t *w = json_object_get(c, "workers");
		if (!name || !json_is_integer(w) || out->n >= HR_MAX_CLASSES)
			break;
		struct export_class *e = &out->c[out->n++];
		snprintf(e->name, sizeof e->name, "%s", name);
		e->first = first;
		e->count = (uint32_t)json_integer_value(w);
		first += e->count;
	}
}

const char *export_class_name(const struct export_classes *c, uint32_t worker)
{
	for (int k = 0; k < c->n; k++)
		if (worker >= c->c[k].first && worker - c->c[k].first < c->c[k].count)
			return c->c[k].name;
	return NULL;
}
