/* dataset.c - parsing datasets into their canonical form (see dataset.h):
 * the JSONL formats line by line, ShareGPT's array one element at a time,
 * Mooncake-style traces through trace_parse; statistics and previews. */
#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynbuf.h"
#include "hrlimits.h"
#include "trace.h"
#include "util.h"

static const char *const format_names[DS__FORMATS] = {
    [DS_SINGLE_TURN] = "single_turn", [DS_MULTI_TURN] = "multi_turn",
    [DS_RANDOM_POOL] = "random_pool", [DS_MOONCAKE_TRACE] = "mooncake_trace",
    [DS_SHAREGPT] = "sharegpt",
};

const char *ds_format_name(enum ds_format f)
{
	return (unsigned)f < DS__FORMATS ? format_names[f] : NULL;
}

int ds_format_parse(const char *name, enum ds_format *out)
{
	for (int i = 0; i < DS__FORMATS; i++)
		if (name && strcmp(name, format_names[i]) == 0) {
			*out = (enum ds_format)i;
			return 0;
		}
	return -1;
}

const char *ds_role_name(enum ds_role r)
{
	switch (r) {
	case DS_ROLE_USER:
		return "user";
	case DS_ROLE_ASSISTANT:
		return "assistant";
	case DS_ROLE_SYSTEM:
		return "system";
	}
	return "user";
}

const char *ds_text(const struct dataset *d, struct ds_str s)
{
	return s.len ? d->arena + s.off : NULL;
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

uint32_t ds_text_length(const char *s, size_t len, enum ds_unit unit)
{
	size_t n = 0;
	if (unit == DS_UNIT_CHARS) {
		for (size_t i = 0; i < len; i++)
			n += ((unsigned char)s[i] & 0xc0) != 0x80;
	} else {
		int in_word = 0;
		for (size_t i = 0; i < len; i++) {
			int sp = is_space((unsigned char)s[i]);
			n += !sp && !in_word;
			in_word = !sp;
		}
	}
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* --- building ----------------------------------------------------------------- */

struct build {
	struct dataset *d;
	const struct ds_options *o;
	struct ds_error *err;
	size_t cap_e, cap_s, cap_a;
	int ts_mode;      /* timestamps: -1 not seen yet, 0 on no entry, 1 on every entry */
	uint32_t ts_line; /* the line that decided ts_mode */
};

static int fail(struct build *b, uint32_t line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills the error: "line N: <message>" (line 0: the message alone). */
static int fail(struct build *b, uint32_t line, const char *field, const char *fmt, ...)
{
	struct ds_error *e = b->err;
	int off = line ? snprintf(e->message, sizeof e->message, "line %u: ", line) : 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message + off, sizeof e->message - (size_t)off, fmt, ap);
	va_end(ap);
	e->line = line;
	snprintf(e->field, sizeof e->field, "%s", field ? field : "");
	/* messages quote input (jansson's "near '...'", keys), possibly cut
	 * mid-character */
	utf8_sanitize(e->field);
	utf8_sanitize(e->message);
	return -1;
}

static int add_str(struct build *b, const char *s, size_t n, uint32_t line, struct ds_str *out)
{
	struct dataset *d = b->d;
	out->off = out->len = 0;
	if (n == 0)
		return 0;
	if (n > UINT32_MAX - 1 || d->arena_len > (size_t)UINT32_MAX - 1 - n)
		return fail(b, line, NULL, "the dataset's texts pass 4 GiB");
	if (d->arena_len + n + 1 > b->cap_a) {
		size_t cap = b->cap_a ? b->cap_a : 65536;
		while (cap < d->arena_len + n + 1)
			cap *= 2;
		d->arena = xrealloc(d->arena, cap);
		b->cap_a = cap;
	}
	memcpy(d->arena + d->arena_len, s, n);
	d->arena[d->arena_len + n] = '\0';
	out->off = (uint32_t)d->arena_len;
	out->len = (uint32_t)n;
	d->arena_len += n + 1;
	return 0;
}

static struct ds_entry *new_entry(struct build *b, uint32_t line)
{
	struct dataset *d = b->d;
	if (d->n >= HR_MAX_DATASET_ENTRIES) {
		fail(b, line, NULL, "more than %d entries", HR_MAX_DATASET_ENTRIES);
		return NULL;
	}
	if (d->n == b->cap_e) {
		b->cap_e = b->cap_e ? b->cap_e * 2 : 256;
		d->e = xrealloc(d->e, b->cap_e * sizeof *d->e);
	}
	struct ds_entry *e = &d->e[d->n++];
	memset(e, 0, sizeof *e);
	e->line = line;
	e->isl = -1;
	e->osl = -1;
	e->t_ms = -1;
	e->delay_ms = -1;
	return e;
}

/* A new session starting at the next entry. */
static struct ds_session *new_session(struct build *b)
{
	struct dataset *d = b->d;
	if (d->n_sessions == b->cap_s) {
		b->cap_s = b->cap_s ? b->cap_s * 2 : 256;
		d->s = xrealloc(d->s, b->cap_s * sizeof *d->s);
	}
	struct ds_session *s = &d->s[d->n_sessions++];
	memset(s, 0, sizeof *s);
	s->first = (uint32_t)d->n;
	return s;
}

static int done(const struct build *b)
{
	return b->o->max_entries && b->d->n >= b->o->max_entries;
}

/* --- fields of the JSONL formats ---------------------------------------------------- */

/* Refuses a key of o not in keys; pre is the path of o ("" or "turns[2]."). */
static int check_keys(struct build *b, json_t *o, const char *const *keys, const char *pre,
                      uint32_t line)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		int ok = 0;
		for (const char *const *x = keys; *x && !ok; x++)
			ok = strcmp(k, *x) == 0;
		if (!ok) {
			char path[128];
			snprintf(path, sizeof path, "%s%.64s", pre, k);
			return fail(b, line, path, "unknown field '%s'", path);
		}
	}
	return 0;
}

static int get_text(struct build *b, json_t *o, const char *key, const char *pre, uint32_t line,
                    struct ds_str *out)
{
	char path[128];
	snprintf(path, sizeof path, "%s%s", pre, key);
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return fail(b, line, path, "'%s' is required", path);
	if (!json_is_string(v) || json_string_length(v) < 1 ||
	    json_string_length(v) > HR_MAX_DATASET_TEXT)
		return fail(b, line, path, "'%s' must be a string of 1 to %u bytes", path,
		            HR_MAX_DATASET_TEXT);
	return add_str(b, json_string_value(v), json_string_length(v), line, out);
}

/* A session id: a string of 1..HR_MAX_DATASET_SESSION_ID bytes or an
 * integer (kept as decimal text). Absent or null: out stays absent. */
static int get_session_id(struct build *b, json_t *o, const char *key, uint32_t line,
                          struct ds_str *out)
{
	json_t *v = json_object_get(o, key);
	out->off = out->len = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		char buf[32];
		int n = fmt_i64(buf, (long long)json_integer_value(v));
		return add_str(b, buf, (size_t)n, line, out);
	}
	if (!json_is_string(v) || json_string_length(v) < 1 ||
	    json_string_length(v) > HR_MAX_DATASET_SESSION_ID)
		return fail(b, line, key, "'%s' must be a string of 1 to %d bytes or an integer",
		            key, HR_MAX_DATASET_SESSION_ID);
	return add_str(b, json_string_value(v), json_string_length(v), line, out);
}

/* Milliseconds: a finite number from 0 to HR_MAX_DATASET_TIME_MS, or -1 when
 * absent or null. */
static int get_ms(struct build *b, json_t *o, const char *key, const char *pre, uint32_t line,
                  double *out)
{
	json_t *v = json_object_get(o, key);
	*out = -1;
	if (!v || json_is_null(v))
		return 0;
	double x = json_is_number(v) ? json_number_value(v) : NAN;
	if (!(x >= 0 && x <= HR_MAX_DATASET_TIME_MS)) {
		char path[128];
		snprintf(path, sizeof path, "%s%s", pre, key);
		return fail(b, line, path, "'%s' must be a number of milliseconds from 0 to 1e12",
		            path);
	}
	*out = x;
	return 0;
}

static const char *const turn_keys[] = {"text",  "output_length", "extra",  "timestamp",
                                        "delay", "role",          "image",  "images",
                                        "audio", NULL};

#define DS_MAX_MEDIA 16 /* pictures and clips of one request */

/* The bytes n characters of base64 stand for (padding aside). */
static int64_t b64_bytes(const char *s, size_t n)
{
	while (n > 0 && s[n - 1] == '=')
		n--;
	return (int64_t)(n / 4 * 3 + (n % 4 > 1 ? n % 4 - 1 : 0));
}

/* One content part (jansson writes it escaped), after a ','. */
static int add_part(struct dynbuf *parts, json_t *part)
{
	char *s = json_dumps(part, JSON_COMPACT);
	json_decref(part);
	int rc = !s || dynbuf_add(parts, ",", 1) < 0 || dynbuf_addstr(parts, s) < 0 ? -1 : 0;
	free(s);
	return rc;
}

/* "scheme:..." (a URL or data: URL), not a file path: the daemon never
 * reads files of the client's machine (the CLI inlines them). */
static int url_like(const char *s)
{
	size_t i = 0;
	while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
	       (i > 0 && ((s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '-' || s[i] == '.')))
		i++;
	return i > 1 && s[i] == ':';
}

#define NOT_URL_HINT                                                                               \
	"must be a URL (http://, https://, data:...); a local file is inlined by `headroom "       \
	"dataset upload`"

/* 'image' (a URL or data URL), 'images' (an array of them) and 'audio'
 * ("FORMAT,BASE64" as AIPerf writes it, or bare base64: wav) as the chat
 * content parts they become, sent as given. */
static int parse_media(struct build *b, json_t *o, const char *pre, uint32_t line,
                       struct ds_entry *e)
{
	char path[160];
	const char *url[DS_MAX_MEDIA];
	size_t url_len[DS_MAX_MEDIA];
	int n = 0;
	json_t *v = json_object_get(o, "image");
	if (v && !json_is_null(v)) {
		snprintf(path, sizeof path, "%simage", pre);
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fail(b, line, path, "'%s' must be a non-empty string (a URL)", path);
		if (!url_like(json_string_value(v)))
			return fail(b, line, path, "'%s' " NOT_URL_HINT, path);
		url[n] = json_string_value(v);
		url_len[n++] = json_string_length(v);
	}
	v = json_object_get(o, "images");
	if (v && !json_is_null(v)) {
		snprintf(path, sizeof path, "%simages", pre);
		if (!json_is_array(v) || json_array_size(v) + (size_t)n > DS_MAX_MEDIA)
			return fail(b, line, path, "'%s' must be an array of at most %d URLs", path,
			            DS_MAX_MEDIA);
		size_t i;
		json_t *u;
		json_array_foreach(v, i, u)
		{
			if (!json_is_string(u) || json_string_length(u) == 0)
				return fail(b, line, path, "'%s[%zu]' must be a non-empty string (a URL)",
				            path, i);
			if (!url_like(json_string_value(u)))
				return fail(b, line, path, "'%s[%zu]' " NOT_URL_HINT, path, i);
			url[n] = json_string_value(u);
			url_len[n++] = json_string_length(u);
		}
	}
	const char *audio = NULL, *fmt = "wav";
	size_t audio_len = 0, fmt_len = 3;
	v = json_object_get(o, "audio");
	if (v && !json_is_null(v)) {
		snprintf(path, sizeof path, "%saudio", pre);
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fail(b, line, path, "'%s' must be a non-empty string (\"wav,BASE64\")",
			            path);
		audio = json_string_value(v);
		audio_len = json_string_length(v);
		const char *comma = memchr(audio, ',', audio_len);
		if (comma) {
			fmt = audio;
			fmt_len = (size_t)(comma - audio);
			audio_len -= fmt_len + 1;
			audio = comma + 1;
			for (size_t i = 0; i < fmt_len; i++)
				if (!((fmt[i] >= 'a' && fmt[i] <= 'z') || (fmt[i] >= '0' && fmt[i] <= '9')))
					fmt_len = 0;
			if (fmt_len == 0 || fmt_len > 8 || audio_len == 0)
				return fail(b, line, path,
				            "'%s' must be \"FORMAT,BASE64\" (a lower-case format such as "
				            "wav) or base64 alone",
				            path);
		}
		if (memchr(audio, '.', audio_len)) /* base64 has none: a file's name */
			return fail(b, line, path,
			            "'%s' must be \"FORMAT,BASE64\" or base64 alone; a local file is "
			            "inlined by `headroom dataset upload`",
			            path);
	}
	if (n == 0 && !audio)
		return 0;
	struct dynbuf parts;
	dynbuf_init(&parts, HR_MAX_DATASET_LINE * 2u);
	int64_t bytes = 0;
	int rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		json_t *u = json_stringn(url[i], url_len[i]);
		rc = add_part(&parts, json_pack("{s:s, s:{s:o}}", "type", "image_url", "image_url",
		                                "url", u));
		const char *c = url_len[i] > 5 && memcmp(url[i], "data:", 5) == 0
		                    ? memchr(url[i], ',', url_len[i])
		                    : NULL;
		if (c)
			bytes += b64_bytes(c + 1, url_len[i] - (size_t)(c + 1 - url[i]));
	}
	if (audio && rc == 0) {
		rc = add_part(&parts, json_pack("{s:s, s:{s:s%, s:s%}}", "type", "input_audio",
		                                "input_audio", "data", audio, audio_len, "format",
		                                fmt, fmt_len));
		bytes += b64_bytes(audio, audio_len);
	}
	if (rc == 0)
		rc = add_str(b, parts.data, parts.len, line, &e->media);
	else
		rc = fail(b, line, pre[0] ? pre : NULL, "the media of line %u cannot be encoded",
		          line);
	dynbuf_release(&parts);
	e->n_images = (uint8_t)n;
	e->n_audio = audio ? 1 : 0;
	e->media_bytes = bytes > INT32_MAX ? INT32_MAX : (int32_t)bytes;
	return rc;
}

/* The fields of one request (a single_turn line, a multi_turn turn) into e;
 * pre is the path of o. The role was read by the caller. */
static int parse_request(struct build *b, json_t *o, const char *pre, uint32_t line,
                         struct ds_entry *e)
{
	char path[128];
	if (get_text(b, o, "text", pre, line, &e->text) < 0)
		return -1;
	json_t *v = json_object_get(o, "output_length");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > HR_MAX_OSL) {
			snprintf(path, sizeof path, "%soutput_length", pre);
			return fail(b, line, path, "'%s' must be an integer from 1 to %d", path,
			            HR_MAX_OSL);
		}
		e->osl = (int32_t)json_integer_value(v);
	}
	v = json_object_get(o, "extra");
	if (v && !json_is_null(v)) {
		snprintf(path, sizeof path, "%sextra", pre);
		if (!json_is_object(v))
			return fail(b, line, path, "'%s' must be a JSON object", path);
		char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
		if (!s)
			return fail(b, line, path, "'%s' cannot be encoded", path);
		size_t n = strlen(s);
		int rc = 0;
		if (n > HR_MAX_DATASET_EXTRA)
			rc = fail(b, line, path, "'%s' is longer than %u bytes as compact JSON",
			          path, HR_MAX_DATASET_EXTRA);
		else if (json_object_size(v) > 0)
			rc = add_str(b, s, n, line, &e->extra);
		free(s);
		if (rc < 0)
			return -1;
	}
	if (parse_media(b, o, pre, line, e) < 0)
		return -1;
	if (get_ms(b, o, "timestamp", pre, line, &e->t_ms) < 0 ||
	    get_ms(b, o, "delay", pre, line, &e->delay_ms) < 0)
		return -1;
	if (e->t_ms >= 0 && e->delay_ms >= 0) {
		snprintf(path, sizeof path, "%sdelay", pre);
		return fail(b, line, path, "'%stimestamp' and '%sdelay' cannot both be given", pre,
		            pre);
	}
	/* a schedule is either fixed (every entry has a timestamp) or not */
	int has = e->t_ms >= 0;
	if (b->ts_mode < 0) {
		b->ts_mode = has;
		b->ts_line = line;
	} else if (b->ts_mode != has) {
		snprintf(path, sizeof path, "%stimestamp", pre);
		return fail(b, line, path,
		            has ? "'%s' is given here but not on line %u: every entry has one, or "
		                  "none does"
		                : "'%s' is missing here but given on line %u: every entry has one, "
		                  "or none does",
		            path, b->ts_line);
	}
	return 0;
}

/* "user" or "assistant" (or, where system_ok, "system"); absent or null is user. */
static int get_role(struct build *b, json_t *o, const char *pre, uint32_t line, int system_ok,
                    enum ds_role *out)
{
	json_t *v = json_object_get(o, "role");
	*out = DS_ROLE_USER;
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (s && strcmp(s, "user") == 0)
		return 0;
	if (s && strcmp(s, "assistant") == 0) {
		*out = DS_ROLE_ASSISTANT;
		return 0;
	}
	if (s && system_ok && strcmp(s, "system") == 0) {
		*out = DS_ROLE_SYSTEM;
		return 0;
	}
	char path[128];
	snprintf(path, sizeof path, "%srole", pre);
	if (s && strcmp(s, "system") == 0)
		return fail(b, line, path,
		            "'%s' may be system only on the first turn of a multi_turn "
		            "conversation",
		            path);
	return fail(b, line, path, "'%s' must be user or assistant", path);
}

/* --- JSONL formats --------------------------------------------------------------------- */

typedef int (*line_fn)(struct build *b, json_t *o, uint32_t line);

static int each_line(struct build *b, const char *p, const char *end, line_fn fn)
{
	uint32_t line = 0;
	const char *s;
	size_t n;
	while (!done(b) && next_text_line(&p, end, &s, &n, &line)) {
		if (n > HR_MAX_DATASET_LINE)
			return fail(b, line, NULL, "the line is longer than %u bytes",
			            HR_MAX_DATASET_LINE);
		json_error_t je;
		json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
		if (!o)
			return fail(b, line, NULL, "not valid JSON: %s", je.text);
		int rc = json_is_object(o) ? fn(b, o, line)
		                           : fail(b, line, NULL, "must be a JSON object");
		json_decref(o);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int single_line(struct build *b, json_t *o, uint32_t line)
{
	enum ds_role role;
	if (check_keys(b, o, turn_keys, "", line) < 0 || get_role(b, o, "", line, 0, &role) < 0)
		return -1;
	struct ds_entry *e = new_entry(b, line);
	if (!e)
		return -1;
	e->role = (uint8_t)role;
	struct ds_session *s = new_session(b);
	s->first = (uint32_t)(b->d->n - 1);
	s->n = 1;
	e->session = (uint32_t)(b->d->n_sessions - 1);
	return parse_request(b, o, "", line, e);
}

static int multi_line(struct build *b, json_t *o, uint32_t line)
{
	static const char *const keys[] = {"session_id", "turns", NULL};
	static const char *const system_keys[] = {"text", "role", NULL};
	if (check_keys(b, o, keys, "", line) < 0)
		return -1;
	struct ds_str id;
	if (get_session_id(b, o, "session_id", line, &id) < 0)
		return -1;
	json_t *turns = json_object_get(o, "turns");
	if (!turns || json_is_null(turns))
		return fail(b, line, "turns", "'turns' is required");
	if (!json_is_array(turns) || json_array_size(turns) < 1 ||
	    json_array_size(turns) > HR_MAX_TURNS + 1)
		return fail(b, line, "turns",
		            "'turns' must be an array of 1 to %d turns (and a system prompt)",
		            HR_MAX_TURNS);
	struct ds_session *s = new_session(b);
	s->id = id;
	uint32_t sid = (uint32_t)(b->d->n_sessions - 1);
	size_t i;
	json_t *t;
	json_array_foreach(turns, i, t)
	{
		char pre[64];
		snprintf(pre, sizeof pre, "turns[%zu].", i);
		if (!json_is_object(t)) {
			char path[64];
			snprintf(path, sizeof path, "turns[%zu]", i);
			return fail(b, line, path, "'%s' must be a JSON object", path);
		}
		enum ds_role role;
		if (check_keys(b, t, turn_keys, pre, line) < 0 ||
		    get_role(b, t, pre, line, i == 0, &role) < 0)
			return -1;
		if (role == DS_ROLE_SYSTEM) {
			/* pointers into d->s may move: index again after adding text */
			struct ds_str sys;
			if (check_keys(b, t, system_keys, pre, line) < 0 ||
			    get_text(b, t, "text", pre, line, &sys) < 0)
				return -1;
			b->d->s[sid].system = sys;
			continue;
		}
		if (b->d->s[sid].n >= HR_MAX_TURNS)
			return fail(b, line, "turns", "'turns' has more than %d turns",
			            HR_MAX_TURNS);
		struct ds_entry *e = new_entry(b, line);
		if (!e)
			return -1;
		e->role = (uint8_t)role;
		e->session = sid;
		e->turn = b->d->s[sid].n++;
		if (parse_request(b, t, pre, line, e) < 0)
			return -1;
	}
	if (b->d->s[sid].n == 0)
		return fail(b, line, "turns", "'turns' has no turn after the system prompt");
	return 0;
}

static int by_id_then_index(const void *x, const void *y, void *ctx)
{
	const struct dataset *d = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = strcmp(ds_text(d, d->s[a].id), ds_text(d, d->s[b].id));
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

/* qsort with a context, for C11 without qsort_r: a small merge sort. */
static void sort_ctx(uint32_t *v, size_t n, int (*cmp)(const void *, const void *, void *),
                     void *ctx)
{
	if (n < 2)
		return;
	uint32_t *tmp = xmalloc(n * sizeof *tmp);
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = cmp(&v[j], &v[i], ctx) < 0 ? v[j++] : v[i++];
			while (i < mid)
				tmp[k++] = v[i++];
			while (j < hi)
				tmp[k++] = v[j++];
		}
		memcpy(v, tmp, n * sizeof *v);
	}
	free(tmp);
}

/* multi_turn: no two conversations share a session_id. */
static int check_unique_sessions(struct build *b)
{
	struct dataset *d = b->d;
	uint32_t *ix = xmalloc((d->n_sessions ? d->n_sessions : 1) * sizeof *ix);
	size_t k = 0;
	for (size_t i = 0; i < d->n_sessions; i++)
		if (d->s[i].id.len)
			ix[k++] = (uint32_t)i;
	sort_ctx(ix, k, by_id_then_index, d);
	int rc = 0;
	for (size_t i = 1; i < k && rc == 0; i++)
		if (strcmp(ds_text(d, d->s[ix[i - 1]].id), ds_text(d, d->s[ix[i]].id)) == 0)
			rc = fail(b, d->e[d->s[ix[i]].first].line, "session_id",
			          "'session_id' repeats the one of line %u",
			          d->e[d->s[ix[i - 1]].first].line);
	free(ix);
	return rc;
}

/* --- mooncake_trace ------------------------------------------------------------------- */

static int by_session_then_index(const void *x, const void *y, void *ctx)
{
	const struct trace *t = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = strcmp(t->e[a].session, t->e[b].session);
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

/* trace_parse's messages read "line N: 'field' ..." or "line N: ...". */
static int trace_failure(struct build *b, const char *msg)
{
	unsigned line = 0;
	char field[64] = "";
	const char *rest = msg;
	int used = 0;
	if (sscanf(msg, "line %u: %n", &line, &used) == 1 && used > 0) {
		rest = msg + used;
		if (rest[0] == '\'') {
			const char *q = strchr(rest + 1, '\'');
			if (q && (size_t)(q - rest - 1) < sizeof field) {
				memcpy(field, rest + 1, (size_t)(q - rest - 1));
				field[q - rest - 1] = '\0';
			}
		}
	}
	if (strcmp(msg, "the trace has no entries") == 0)
		rest = "the dataset has no entries";
	return fail(b, line, field, "%s", rest);
}

static int parse_mooncake(struct build *b, const char *p, size_t len)
{
	/* the line bound first: trace_parse has none of its own */
	uint32_t line = 0;
	for (const char *q = p, *end = p + len; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		const char *le = nl ? nl : end;
		line++;
		if ((size_t)(le - q) > HR_MAX_DATASET_LINE)
			return fail(b, line, NULL, "the line is longer than %u bytes",
			            HR_MAX_DATASET_LINE);
		q = nl ? nl + 1 : end;
	}
	struct trace t;
	char err[HR_ERRLEN];
	if (trace_parse(p, len, &t, err) < 0)
		return trace_failure(b, err);
	struct dataset *d = b->d;
	size_t n = t.n;
	if (b->o->max_entries && n > b->o->max_entries)
		n = b->o->max_entries;
	size_t nh = 0;
	for (size_t i = 0; i < n; i++)
		nh += t.e[i].n_hash;
	if (nh > UINT32_MAX) {
		trace_release(&t);
		return fail(b, 0, "hash_ids", "more than 4294967295 hash_ids");
	}
	d->hash = nh ? xmalloc(nh * sizeof *d->hash) : NULL;

	/* sessions: entries with the same session_id, numbered by first appearance */
	uint32_t *ix = xmalloc((n ? n : 1) * sizeof *ix);
	uint32_t *group = xmalloc((n ? n : 1) * sizeof *group);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		group[i] = UINT32_MAX;
		if (t.e[i].session)
			ix[k++] = (uint32_t)i;
	}
	/* group ids: the entries that have a session, sorted by (session, index) */
	sort_ctx(ix, k, by_session_then_index, &t);
	uint32_t ngroups = 0;
	for (size_t i = 0; i < k; i++) {
		if (i > 0 && strcmp(t.e[ix[i]].session, t.e[ix[i - 1]].session) != 0)
			ngroups++;
		group[ix[i]] = ngroups;
	}
	if (k)
		ngroups++;
	uint32_t *gsess = xmalloc((ngroups ? ngroups : 1) * sizeof *gsess);
	for (uint32_t g = 0; g < ngroups; g++)
		gsess[g] = UINT32_MAX;

	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct trace_entry *te = &t.e[i];
		struct ds_entry *e = new_entry(b, te->line);
		if (!e) {
			rc = -1;
			break;
		}
		e->isl = te->isl;
		e->osl = te->osl;
		e->t_ms = te->t_ms;
		e->hash_off = (uint32_t)d->n_hash;
		e->n_hash = te->n_hash;
		if (te->n_hash)
			memcpy(d->hash + d->n_hash, te->hash_ids, te->n_hash * sizeof *d->hash);
		d->n_hash += te->n_hash;
		uint32_t g = group[i];
		if (g != UINT32_MAX && gsess[g] != UINT32_MAX) {
			e->session = gsess[g];
			e->turn = d->s[gsess[g]].n++;
			continue;
		}
		struct ds_str id = {0, 0};
		if (te->session)
			rc = add_str(b, te->session, strlen(te->session), te->line, &id);
		struct ds_session *s = new_session(b);
		s->first = (uint32_t)i;
		s->n = 1;
		s->id = id;
		e = &d->e[i]; /* add_str and new_session leave entries in place */
		e->session = (uint32_t)(d->n_sessions - 1);
		e->turn = 0;
		if (g != UINT32_MAX)
			gsess[g] = e->session;
	}
	free(ix);
	free(group);
	free(gsess);
	trace_release(&t);
	return rc;
}

/* --- sharegpt --------------------------------------------------------------------------- */

static int is_human(const char *s)
{
	return strcmp(s, "human") == 0 || strcmp(s, "user") == 0;
}

static int is_gpt(const char *s)
{
	return strcmp(s, "gpt") == 0 || strcmp(s, "chatgpt") == 0 || strcmp(s, "assistant") == 0;
}

static int in_bounds(uint32_t v, uint32_t lo, uint32_t hi)
{
	return (!lo || v >= lo) && (!hi || v <= hi);
}

/* One element of the array; entry is its 0-based index. */
static int sharegpt_entry(struct build *b, json_t *o, uint32_t line, size_t entry)
{
	if (!json_is_object(o))
		return fail(b, line, NULL, "entry %zu must be a JSON object", entry);
	json_t *id = json_object_get(o, "id");
	if (id && !json_is_null(id) && !json_is_integer(id) &&
	    !(json_is_string(id) && json_string_length(id) >= 1 &&
	      json_string_length(id) <= HR_MAX_DATASET_SESSION_ID))
		return fail(b, line, "id",
		            "'id' must be a string of 1 to %d bytes or an integer "
		            "(entry %zu)",
		            HR_MAX_DATASET_SESSION_ID, entry);
	json_t *conv = json_object_get(o, "conversations");
	if (!conv || json_is_null(conv))
		return fail(b, line, "conversations", "'conversations' is required (entry %zu)",
		            entry);
	if (!json_is_array(conv))
		return fail(b, line, "conversations",
		            "'conversations' must be an array (entry %zu)", entry);
	size_t i, human = (size_t)-1;
	json_t *t;
	json_array_foreach(conv, i, t)
	{
		char path[64];
		if (!json_is_object(t)) {
			snprintf(path, sizeof path, "conversations[%zu]", i);
			return fail(b, line, path, "'%s' must be a JSON object (entry %zu)", path,
			            entry);
		}
		static const char *const keys[] = {"from", "value"};
		for (int k = 0; k < 2; k++) {
			json_t *v = json_object_get(t, keys[k]);
			if (!json_is_string(v)) {
				snprintf(path, sizeof path, "conversations[%zu].%s", i, keys[k]);
				return fail(b, line, path, "'%s' must be a string (entry %zu)",
				            path, entry);
			}
		}
		if (human == (size_t)-1 && is_human(json_string_value(json_object_get(t, "from"))))
			human = i;
	}
	json_t *q = human != (size_t)-1 ? json_array_get(conv, human) : NULL;
	json_t *a = q ? json_array_get(conv, human + 1) : NULL;
	if (!a || !is_gpt(json_string_value(json_object_get(a, "from"))) ||
	    json_string_length(json_object_get(q, "value")) == 0 ||
	    json_string_length(json_object_get(a, "value")) == 0) {
		b->d->skipped++;
		return 0;
	}
	json_t *qv = json_object_get(q, "value"), *av = json_object_get(a, "value");
	for (int k = 0; k < 2; k++) {
		json_t *v = k ? av : qv;
		if (json_string_length(v) > HR_MAX_DATASET_TEXT) {
			char path[64];
			snprintf(path, sizeof path, "conversations[%zu].value", human + (size_t)k);
			return fail(b, line, path, "'%s' is longer than %u bytes (entry %zu)", path,
			            HR_MAX_DATASET_TEXT, entry);
		}
	}
	const struct ds_options *op = b->o;
	if (op->min_prompt || op->max_prompt || op->min_reply || op->max_reply) {
		uint32_t pl =
		    ds_text_length(json_string_value(qv), json_string_length(qv), op->unit);
		uint32_t rl =
		    ds_text_length(json_string_value(av), json_string_length(av), op->unit);
		if (!in_bounds(pl, op->min_prompt, op->max_prompt) ||
		    !in_bounds(rl, op->min_reply, op->max_reply)) {
			b->d->filtered++;
			return 0;
		}
	}
	struct ds_str sid;
	if (get_session_id(b, o, "id", line, &sid) < 0)
		return -1;
	struct ds_entry *e = new_entry(b, line);
	if (!e)
		return -1;
	struct ds_session *s = new_session(b);
	s->first = (uint32_t)(b->d->n - 1);
	s->n = 1;
	s->id = sid;
	e->session = (uint32_t)(b->d->n_sessions - 1);
	if (add_str(b, json_string_value(qv), json_string_length(qv), line, &e->text) < 0)
		return -1;
	e = &b->d->e[b->d->n - 1];
	return add_str(b, json_string_value(av), json_string_length(av), line, &e->reply);
}

/* Skips JSON whitespace, counting lines. */
static const char *skip_ws(const char *p, const char *end, uint32_t *line)
{
	for (; p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'); p++)
		*line += *p == '\n';
	return p;
}

static int parse_sharegpt(struct build *b, const char *p, size_t len)
{
	const char *end = p + len;
	uint32_t line = 1;
	p = skip_ws(p, end, &line);
	if (p == end)
		return fail(b, 0, NULL, "the dataset has no entries");
	if (*p != '[')
		return fail(b, line, NULL, "a sharegpt dataset must be a JSON array");
	p = skip_ws(p + 1, end, &line);
	size_t entry = 0;
	while (!done(b)) {
		if (p < end && *p == ']' && entry == 0) {
			p++;
			break;
		}
		if (p == end)
			return fail(b, line, NULL, "the array is not closed with ']'");
		size_t avail = (size_t)(end - p);
		size_t cap = avail < HR_MAX_DATASET_LINE ? avail : HR_MAX_DATASET_LINE;
		json_error_t je;
		json_t *o =
		    json_loadb(p, cap, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
		if (!o) {
			if (cap < avail && je.position >= (int)cap - 1)
				return fail(b, line, NULL, "entry %zu is longer than %u bytes",
				            entry, HR_MAX_DATASET_LINE);
			return fail(b, line + (je.line > 1 ? (uint32_t)je.line - 1 : 0), NULL,
			            "not valid JSON: %s (entry %zu)", je.text, entry);
		}
		int rc = sharegpt_entry(b, o, line, entry);
		json_decref(o);
		if (rc < 0)
			return -1;
		entry++;
		/* the element's own newlines */
		for (const char *q = p; q < p + je.position; q++)
			line += *q == '\n';
		p = skip_ws(p + je.position, end, &line);
		if (p < end && *p == ',') {
			p = skip_ws(p + 1, end, &line);
			if (p < end && *p == ']')
				return fail(b, line, NULL, "a ',' before ']' (after entry %zu)",
				            entry - 1);
			continue;
		}
		if (p < end && *p == ']') {
			p++;
			break;
		}
		if (p == end)
			return fail(b, line, NULL, "the array is not closed with ']'");
		return fail(b, line, NULL, "expected ',' or ']' after entry %zu", entry - 1);
	}
	if (!done(b)) {
		p = skip_ws(p, end, &line);
		if (p < end)
			return fail(b, line, NULL, "unexpected data after the array");
	}
	if (b->d->n == 0)
		return fail(b, 0, NULL,
		            "no entry has a human turn followed by a gpt turn within the filters "
		            "(%zu entries, %zu without such a pair, %zu filtered out)",
		            entry, b->d->skipped, b->d->filtered);
	return 0;
}

/* --- parse --------------------------------------------------------------------------------- */

void dataset_release(struct dataset *d)
{
	free(d->e);
	free(d->s);
	free(d->arena);
	free(d->hash);
	memset(d, 0, sizeof *d);
}

int dataset_parse(const char *data, size_t len, enum ds_format f, const struct ds_options *o,
                  struct dataset *out, struct ds_error *err)
{
	static const struct ds_options none;
	memset(out, 0, sizeof *out);
	memset(err, 0, sizeof *err);
	struct build b = {.d = out, .o = o ? o : &none, .err = err, .ts_mode = -1};
	if ((unsigned)f >= DS__FORMATS)
		return fail(&b, 0, NULL, "unknown dataset format");
	out->format = f;
	if (len > HR_MAX_DATASET_BYTES)
		return fail(&b, 0, NULL, "the dataset is larger than %u bytes",
		            HR_MAX_DATASET_BYTES);
	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) {
		data += 3;
		len -= 3;
	}
	int rc;
	switch (f) {
	case DS_SINGLE_TURN:
	case DS_RANDOM_POOL:
		rc = each_line(&b, data, data + len, single_line);
		break;
	case DS_MULTI_TURN:
		rc = each_line(&b, data, data + len, multi_line);
		if (rc == 0)
			rc = check_unique_sessions(&b);
		break;
	case DS_MOONCAKE_TRACE:
		rc = parse_mooncake(&b, data, len);
		break;
	case DS_SHAREGPT:
		rc = parse_sharegpt(&b, data, len);
		break;
	default:
		rc = fail(&b, 0, NULL, "unknown dataset format");
	}
	if (rc == 0 && out->n == 0)
		rc = fail(&b, 0, NULL, "the dataset has no entries");
	if (rc < 0) {
		dataset_release(out);
		out->format = f;
		return -1;
	}
	return 0;
}

int dataset_load_fd(int fd, enum ds_format f, const struct ds_options *o, struct dataset *out,
                    struct ds_error *err)
{
	memset(out, 0, sizeof *out);
	memset(err, 0, sizeof *err);
	out->format = f;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err->message, sizeof err->message, "the dataset is not a readable file");
		return -1;
	}
	if ((uint64_t)st.st_size > HR_MAX_DATASET_BYTES) {
		snprintf(err->message, sizeof err->message, "the dataset is larger than %u bytes",
		         HR_MAX_DATASET_BYTES);
		return -1;
	}
	size_t len = (size_t)st.st_size;
	if (len == 0)
		return dataset_parse("", 0, f, o, out, err);
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		snprintf(err->message, sizeof err->message, "cannot map the dataset: %s",
		         strerror(errno));
		return -1;
	}
	int rc = dataset_parse(m, len, f, o, out, err);
	munmap(m, len);
	return rc;
}

int dataset_load_file(const char *path, enum ds_format f, const struct ds_options *o,
                      struct dataset *out, struct ds_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		memset(out, 0, sizeof *out);
		memset(err, 0, sizeof *err);
		out->format = f;
		snprintf(err->message, sizeof err->message, "cannot open the dataset: %s",
		         strerror(errno));
		return -1;
	}
	int rc = dataset_load_fd(fd, f, o, out, err);
	close(fd);
	return rc;
}

/* --- options ------------------------------------------------------------------------------ */

json_t *ds_options_json(enum ds_format f, const struct ds_options *o)
{
	if (f != DS_SHAREGPT || !o ||
	    !(o->min_prompt || o->max_prompt || o->min_reply || o->max_reply))
		return json_object();
	return json_pack(
	    "{s:s, s:I, s:I, s:I, s:I}", "unit", o->unit == DS_UNIT_WORDS ? "words" : "chars",
	    "min_prompt", (json_int_t)o->min_prompt, "max_prompt", (json_int_t)o->max_prompt,
	    "min_reply", (json_int_t)o->min_reply, "max_reply", (json_int_t)o->max_reply);
}

int ds_options_from_json(const json_t *j, struct ds_options *o, char *err)
{
	memset(o, 0, sizeof *o);
	if (!json_is_object(j))
		return errf(err, "dataset options must be a JSON object");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)j, k, v)
	{
		if (strcmp(k, "unit") == 0) {
			const char *u = json_string_value(v);
			if (u && strcmp(u, "chars") == 0)
				o->unit = DS_UNIT_CHARS;
			else if (u && strcmp(u, "words") == 0)
				o->unit = DS_UNIT_WORDS;
			else
				return errf(err, "dataset option 'unit' must be chars or words");
			continue;
		}
		uint32_t *dst = strcmp(k, "min_prompt") == 0   ? &o->min_prompt
		                : strcmp(k, "max_prompt") == 0 ? &o->max_prompt
		                : strcmp(k, "min_reply") == 0  ? &o->min_reply
		                : strcmp(k, "max_reply") == 0  ? &o->max_reply
		                                               : NULL;
		if (!dst)
			return errf(err, "unknown dataset option '%.64s'", k);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > HR_MAX_DATASET_TEXT)
			return errf(err, "dataset option '%s' must be an integer from 0 to %u", k,
			            HR_MAX_DATASET_TEXT);
		*dst = (uint32_t)json_integer_value(v);
	}
	return 0;
}

/* --- statistics and previews ---------------------------------------------------------------- */

struct acc {
	size_t n;
	double sum, min, max;
};

static void acc_add(struct acc *a, double v)
{
	if (a->n == 0 || v < a->min)
		a->min = v;
	if (a->n == 0 || v > a->max)
		a->max = v;
	a->sum += v;
	a->n++;
}

static json_t *acc_json(const struct acc *a)
{
	if (a->n == 0)
		return json_null();
	return json_pack("{s:I, s:I, s:f, s:I}", "count", (json_int_t)a->n, "min",
	                 (json_int_t)a->min, "avg", a->sum / (double)a->n, "max",
	                 (json_int_t)a->max);
}

json_t *dataset_stats_json(const struct dataset *d)
{
	struct acc pc = {0}, pw = {0}, il = {0}, ol = {0}, rc = {0}, rw = {0}, turns = {0},
	           hash = {0};
	size_t ts = 0, delay = 0, extra = 0, system = 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct ds_entry *e = &d->e[i];
		if (e->text.len) {
			const char *t = ds_text(d, e->text);
			acc_add(&pc, ds_text_length(t, e->text.len, DS_UNIT_CHARS));
			acc_add(&pw, ds_text_length(t, e->text.len, DS_UNIT_WORDS));
		}
		if (e->reply.len) {
			const char *t = ds_text(d, e->reply);
			acc_add(&rc, ds_text_length(t, e->reply.len, DS_UNIT_CHARS));
			acc_add(&rw, ds_text_length(t, e->reply.len, DS_UNIT_WORDS));
		}
		if (e->isl >= 0)
			acc_add(&il, e->isl);
		if (e->osl >= 0)
			acc_add(&ol, e->osl);
		if (d->format == DS_MOONCAKE_TRACE)
			acc_add(&hash, e->n_hash);
		ts += e->t_ms >= 0;
		delay += e->delay_ms >= 0;
		extra += e->extra.len > 0;
	}
	for (size_t i = 0; i < d->n_sessions; i++) {
		acc_add(&turns, d->s[i].n);
		system += d->s[i].system.len > 0;
	}
	json_t *o = json_object();
	json_object_set_new(o, "prompt_chars", acc_json(&pc));
	json_object_set_new(o, "prompt_words", acc_json(&pw));
	json_object_set_new(o, "input_length", acc_json(&il));
	json_object_set_new(o, "output_length", acc_json(&ol));
	json_object_set_new(o, "reply_chars", acc_json(&rc));
	json_object_set_new(o, "reply_words", acc_json(&rw));
	json_object_set_new(o, "turns", acc_json(&turns));
	json_object_set_new(o, "hash_ids", acc_json(&hash));
	json_object_set_new(o, "with_timestamp", json_integer((json_int_t)ts));
	json_object_set_new(o, "with_delay", json_integer((json_int_t)delay));
	json_object_set_new(o, "with_extra", json_integer((json_int_t)extra));
	json_object_set_new(o, "with_system", json_integer((json_int_t)system));
	json_object_set_new(o, "skipped", json_integer((json_int_t)d->skipped));
	json_object_set_new(o, "filtered", json_integer((json_int_t)d->filtered));
	return o;
}

/* s cut to at most max bytes on a character boundary (a new string). */
static json_t *cut_text(const struct dataset *d, struct ds_str s, size_t max, int *cut)
{
	if (!s.len)
		return json_null();
	const char *t = ds_text(d, s);
	size_t n = s.len;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)t[n] & 0xc0) == 0x80)
			n--;
		*cut = 1;
	}
	return json_stringn(t, n);
}

static json_t *ms_json(double v)
{
	return v >= 0 ? json_real(v) : json_null();
}

json_t *dataset_entry_json(const struct dataset *d, size_t i, size_t max_text, size_t max_hash)
{
	const struct ds_entry *e = &d->e[i];
	const struct ds_session *s = &d->s[e->session];
	int cut = 0;
	json_t *o = json_object();
	json_object_set_new(o, "index", json_integer((json_int_t)i));
	json_object_set_new(o, "line", json_integer(e->line));
	json_object_set_new(o, "session", json_integer(e->session));
	json_object_set_new(o, "turn", json_integer(e->turn));
	json_object_set_new(o, "session_id",
	                    s->id.len ? json_stringn(ds_text(d, s->id), s->id.len) : json_null());
	json_object_set_new(o, "system",
	                    e->turn == 0 ? cut_text(d, s->system, max_text, &cut) : json_null());
	json_object_set_new(o, "role", json_string(ds_role_name((enum ds_role)e->role)));
	json_object_set_new(o, "text", cut_text(d, e->text, max_text, &cut));
	json_object_set_new(o, "text_bytes", json_integer(e->text.len));
	json_object_set_new(o, "input_length", e->isl >= 0 ? json_integer(e->isl) : json_null());
	json_object_set_new(o, "output_length", e->osl >= 0 ? json_integer(e->osl) : json_null());
	json_object_set_new(o, "timestamp_ms", ms_json(e->t_ms));
	json_object_set_new(o, "delay_ms", ms_json(e->delay_ms));
	json_t *extra = e->extra.len ? json_loads(ds_text(d, e->extra), 0, NULL) : NULL;
	json_object_set_new(o, "extra", extra ? extra : json_null());
	if (d->format == DS_MOONCAKE_TRACE) {
		json_t *h = json_array();
		for (uint32_t k = 0; k < e->n_hash && k < max_hash; k++)
			json_array_append_new(h,
			                      json_integer((json_int_t)d->hash[e->hash_off + k]));
		cut |= e->n_hash > max_hash;
		json_object_set_new(o, "hash_ids", h);
	} else {
		json_object_set_new(o, "hash_ids", json_null());
	}
	json_object_set_new(o, "reply", cut_text(d, e->reply, max_text, &cut));
	json_object_set_new(o, "truncated", json_boolean(cut));
	return o;
}
