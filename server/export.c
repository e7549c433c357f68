/* export.c - record rows for the JSONL and CSV exports (see export.h). */
#include "export.h"

#include <math.h>
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
	"reasoning_tokens", "n_chunks",
};

void export_csv_header(struct dynbuf *out)
{
	for (size_t i = 0; i < HR_ARRAY_LEN(fixed_cols); i++)
		dynbuf_printf(out, "%s%s", i ? "," : "", fixed_cols[i]);
	for (size_t i = 0; i < metric_defs_count; i++)
		dynbuf_printf(out, ",%s", metric_defs[i].tag);
	dynbuf_addstr(out, "\n");
}

/* JSON string escaping (also used for CSV's quoted cell, with CSV rules). */
static void put_json_str(struct dynbuf *b, const char *s)
{
	dynbuf_add(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			dynbuf_add(b, e, 2);
		} else if (c < 0x20) {
			dynbuf_printf(b, "\\u%04x", c);
		} else {
			dynbuf_add(b, s, 1);
		}
	}
	dynbuf_add(b, "\"", 1);
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

struct row {
	struct dynbuf *b;
	enum export_format fmt;
	int n;
};

static void key(struct row *w, const char *name)
{
	if (w->fmt == EXPORT_JSONL)
		dynbuf_printf(w->b, "%s\"%s\":", w->n ? "," : "{", name);
	else if (w->n)
		dynbuf_add(w->b, ",", 1);
	w->n++;
}

static void f_null(struct row *w)
{
	if (w->fmt == EXPORT_JSONL)
		dynbuf_addstr(w->b, "null");
}

static void f_int(struct row *w, const char *name, long long v)
{
	key(w, name);
	dynbuf_printf(w->b, "%lld", v);
}

static void f_time(struct row *w, const char *name, int64_t v)
{
	key(w, name);
	if (v == HR_NO_TIME)
		f_null(w);
	else
		dynbuf_printf(w->b, "%lld", (long long)v);
}

static void f_count(struct row *w, const char *name, int32_t v)
{
	key(w, name);
	if (v < 0)
		f_null(w);
	else
		dynbuf_printf(w->b, "%d", v);
}

static void f_str(struct row *w, const char *name, const char *s)
{
	key(w, name);
	if (!s)
		f_null(w);
	else if (w->fmt == EXPORT_JSONL)
		put_json_str(w->b, s);
	else
		export_csv_cell(w->b, s);
}

static void f_dbl(struct row *w, const char *name, double v)
{
	key(w, name);
	if (isnan(v)) {
		f_null(w);
		return;
	}
	char buf[32];
	fmt_double(buf, v);
	dynbuf_addstr(w->b, buf);
}

int export_record(struct dynbuf *out, enum export_format fmt, const struct hr_record *r)
{
	size_t before = out->len;
	struct row w = {.b = out, .fmt = fmt};
	int valid = record_is_valid(r);
	f_int(&w, "worker", r->worker);
	f_int(&w, "seq", (long long)r->seq);
	f_int(&w, "req_id", (long long)r->req_id);
	f_str(&w, "phase", hr_phase_name(r->phase));
	f_int(&w, "session", r->session);
	f_int(&w, "turn", r->turn);
	f_time(&w, "intended_ns", r->intended_ns);
	f_time(&w, "start_ns", r->start_ns);
	f_time(&w, "headers_ns", r->headers_ns);
	f_time(&w, "first_output_ns", r->first_output_ns);
	f_time(&w, "end_ns", r->end_ns);
	f_time(&w, "done_ns", r->done_ns);
	f_int(&w, "status", r->http_status);
	f_str(&w, "error", hr_err_name(r->error));
	f_str(&w, "error_message", r->error_msg ? r->error_msg : "");
	key(&w, "valid");
	dynbuf_addstr(out, valid ? "true" : "false");
	f_count(&w, "isl", r->isl);
	f_str(&w, "isl_source", hr_toksrc_name(r->isl_src));
	f_count(&w, "osl", r->osl);
	f_str(&w, "osl_source", hr_toksrc_name(r->osl_src));
	f_count(&w, "reasoning_tokens", r->reasoning_tokens);
	f_int(&w, "n_chunks", r->n_chunks);
	for (size_t i = 0; i < metric_defs_count; i++)
		f_dbl(&w, metric_defs[i].tag, metric_defs[i].fn(r));
	if (fmt == EXPORT_JSONL) {
		/* raw chunk arrivals, ns after start, so metrics can be recomputed */
		dynbuf_addstr(out, ",\"chunk_offsets_ns\":[");
		for (uint32_t i = 0; i < r->n_chunks; i++)
			dynbuf_printf(out, "%s%lld", i ? "," : "",
				      (long long)(r->chunk_ns[i] - r->start_ns));
		dynbuf_addstr(out, "]}");
	}
	if (dynbuf_add(out, "\n", 1) < 0) {
		out->len = before;
		return -1;
	}
	return 0;
}
