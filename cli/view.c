/* view.c - safe display text from untrusted JSON: cleaned strings, typed
 * member reads, numbers, timestamps and durations for the CLI's output,
 * and the daemon's error answers as the commands print them. */
#include "view.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "http.h"
#include "util.h"

char *view_clean(const char *s)
{
	if (!s)
		return xstrdup("-");
	size_t len = strlen(s);
	char *out = xmalloc(len + 1);
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f) {
			out[j++] = '?';
		} else if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
		           (unsigned char)s[i + 1] <= 0x9f) {
			out[j++] = '?'; /* C1 control (U+0080..U+009F), e.g. CSI */
			i++;
		} else {
			out[j++] = (char)c;
		}
	}
	out[j] = '\0';
	return out;
}

size_t view_width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

const char *view_str(const json_t *obj, const char *key)
{
	if (!json_is_object(obj))
		return NULL;
	const json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int view_num(const json_t *obj, const char *key, double *out)
{
	if (!json_is_object(obj))
		return 0;
	const json_t *v = json_object_get(obj, key);
	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return 1;
}

const char *view_fmt_num(char *buf, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, VIEW_NUMLEN, "-");
		return buf;
	}
	if (fabs(v) >= 1e15 || (v != 0 && fabs(v) < 0.1)) {
		snprintf(buf, VIEW_NUMLEN, fabs(v) < 1 ? "%.3g" : "%.6g", v);
		return buf;
	}
	char tmp[VIEW_NUMLEN];
	snprintf(tmp, sizeof(tmp), "%.2f", fabs(v));
	const char *dot = strchr(tmp, '.');
	size_t intlen = dot ? (size_t)(dot - tmp) : strlen(tmp);
	size_t j = 0;
	if (v < 0 && strcmp(tmp, "0.00") != 0)
		buf[j++] = '-';
	for (size_t i = 0; i < intlen; i++) {
		if (i > 0 && (intlen - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = tmp[i];
	}
	snprintf(buf + j, VIEW_NUMLEN - j, "%s", tmp + intlen);
	return buf;
}

/* Copies s into buf (n bytes), cut at a code point boundary. */
static void copy_cut(char *buf, size_t n, const char *s)
{
	size_t len = strlen(s);
	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
}

const char *view_scalar(char *buf, size_t n, const json_t *v)
{
	if (json_is_string(v)) {
		char *c = view_clean(json_string_value(v));
		copy_cut(buf, n, c);
		free(c);
	} else if (json_is_integer(v)) {
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		char d[32];
		fmt_double(d, json_real_value(v));
		copy_cut(buf, n, d);
	} else if (json_is_true(v)) {
		copy_cut(buf, n, "true");
	} else if (json_is_false(v)) {
		copy_cut(buf, n, "false");
	} else {
		copy_cut(buf, n, "-");
	}
	return buf;
}

/* Reads exactly n decimal digits at *p, advancing it. Returns -1 if absent. */
static int digits(const char **p, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	return v;
}

int view_parse_time(const char *s, int64_t *ms)
{
	if (!s)
		return -1;
	const char *p = s;
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	int y = digits(&p, 4);
	if (y < 0 || *p++ != '-')
		return -1;
	int mo = digits(&p, 2);
	if (mo < 1 || mo > 12 || *p++ != '-')
		return -1;
	int d = digits(&p, 2);
	if (d < 1 || d > 31 || (*p != 'T' && *p != 't' && *p != ' '))
		return -1;
	p++;
	int h = digits(&p, 2);
	if (h < 0 || h > 23 || *p++ != ':')
		return -1;
	int mi = digits(&p, 2);
	if (mi < 0 || mi > 59 || *p++ != ':')
		return -1;
	int sec = digits(&p, 2);
	if (sec < 0 || sec > 60)
		return -1;
	int frac = 0;
	if (*p == '.') {
		p++;
		int nd = 0;
		for (; *p >= '0' && *p <= '9'; p++, nd++)
			if (nd < 3)
				frac = frac * 10 + (*p - '0');
		if (nd == 0)
			return -1;
		for (; nd < 3; nd++)
			frac *= 10;
	}
	int64_t off_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int oh = digits(&p, 2);
		if (oh < 0 || oh > 23 || *p++ != ':')
			return -1;
		int om = digits(&p, 2);
		if (om < 0 || om > 59)
			return -1;
		off_s = sign * (oh * 3600 + om * 60);
	} else {
		return -1;
	}
	if (*p)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*ms = ((int64_t)t - off_s) * 1000 + frac;
	return 0;
}

const char *view_fmt_time(char *buf, size_t n, const char *s)
{
	int64_t ms;
	if (!s) {
		copy_cut(buf, n, "-");
		return buf;
	}
	if (view_parse_time(s, &ms) == 0) {
		time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
		struct tm tm;
		if (gmtime_r(&t, &tm) && strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm) > 0)
			return buf;
	}
	char *c = view_clean(s);
	copy_cut(buf, n, c);
	free(c);
	return buf;
}

const char *view_fmt_duration(char *buf, size_t n, int64_t ms)
{
	long long v = (long long)ms;
	if (ms < 0)
		snprintf(buf, n, "-");
	else if (ms < 1000)
		snprintf(buf, n, "%lldms", v);
	else if (ms < 60000)
		snprintf(buf, n, "%lld.%llds", v / 1000, v / 100 % 10);
	else if (ms < 3600000)
		snprintf(buf, n, "%lldm%02llds", v / 60000, v / 1000 % 60);
	else if (ms < 86400000)
		snprintf(buf, n, "%lldh%02lldm", v / 3600000, v / 60000 % 60);
	else
		snprintf(buf, n, "%lldd%02lldh", v / 86400000, v / 3600000 % 24);
	return buf;
}

/* Prints a non-2xx answer as `error: <message> (field: <field>)`. */
int cli_answer_failure(const struct http_resp *r)
{
	json_error_t jerr;
	json_t *doc = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &jerr);
	json_t *e = json_object_get(doc, "error");
	const char *msg = view_str(e, "message");
	const char *field = view_str(e, "field");
	const char *code = view_str(e, "code");
	if (msg) {
		char *m = view_clean(msg);
		if (field && *field) {
			char *f = view_clean(field);
			fprintf(stderr, "error: %s (field: %s)\n", m, f);
			free(f);
		} else {
			fprintf(stderr, "error: %s\n", m);
		}
		free(m);
	} else if (code) {
		char *m = view_clean(code);
		fprintf(stderr, "error: HTTP %ld: %s\n", r->status, m);
		free(m);
	} else {
		char head[201];
		size_t n = r->body.len < sizeof(head) - 1 ? r->body.len : sizeof(head) - 1;
		memcpy(head, r->body.data ? r->body.data : "", n);
		head[n] = '\0';
		char *nl = strpbrk(head, "\r\n");
		if (nl)
			*nl = '\0';
		char *h = view_clean(head);
		fprintf(stderr, "error: HTTP %ld from the daemon%s%s\n", r->status, *h ? ": " : "",
		        h);
		free(h);
	}
	json_decref(doc);
	return EXIT_DAEMON;
}

/* Parses a 2xx answer that must be a JSON object; NULL (message printed)
 * when it is not. Caller decrefs. */
json_t *cli_answer_object(const struct http_resp *r)
{
	json_error_t jerr;
	json_t *doc = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0, &jerr);
	if (!json_is_object(doc)) {
		fprintf(stderr, "error: malformed answer from the daemon: %s\n",
		        doc ? "not a JSON object" : jerr.text);
		json_decref(doc);
		return NULL;
	}
	return doc;
}
