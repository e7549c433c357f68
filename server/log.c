/* log.c - headroomd's log lines (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynbuf.h"
#include "jsonesc.h"

static int fmt = LOG_TEXT, min_level = LOG_INFO, access_on;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

int log_parse_level(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

int log_parse_format(const char *s)
{
	return strcmp(s, "text") == 0	 ? LOG_TEXT
	       : strcmp(s, "logfmt") == 0 ? LOG_LOGFMT
	       : strcmp(s, "json") == 0	 ? LOG_JSON
					 : -1;
}

void log_setup(int format, int level, int access)
{
	fmt = format;
	min_level = level;
	access_on = access;
}

int log_access_enabled(void)
{
	return access_on;
}

static void stamp(char *buf, size_t n)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* a logfmt value: bare when it needs no quotes */
static void lf_value(struct dynbuf *b, const char *v)
{
	int bare = *v != '\0';
	for (const char *c = v; *c && bare; c++)
		bare = *c > ' ' && *c != '"' && *c != '=' && *c != '\\' && (unsigned char)*c < 0x7f;
	if (bare) {
		dynbuf_addstr(b, v);
		return;
	}
	dynbuf_addstr(b, "\"");
	for (const char *c = v; *c; c++) {
		if (*c == '"' || *c == '\\')
			dynbuf_printf(b, "\\%c", *c);
		else if (*c == '\n')
			dynbuf_addstr(b, "\\n");
		else if ((unsigned char)*c < ' ')
			dynbuf_printf(b, "\\x%02x", (unsigned char)*c);
		else
			dynbuf_add(b, c, 1);
	}
	dynbuf_addstr(b, "\"");
}

static void json_str(struct dynbuf *b, const char *v)
{
	dynbuf_addstr(b, "\"");
	json_escape_append(b, v, strlen(v));
	dynbuf_addstr(b, "\"");
}

/* emits one line with its fields: pairs of (key, value), NULL-ended */
static void emit(int level, const char *component, long long run, const char *msg,
		 const char *const *extra)
{
	if (fmt == LOG_TEXT) {
		fprintf(stderr, "headroomd: %s\n", msg);
		return;
	}
	char ts[40];
	stamp(ts, sizeof ts);
	struct dynbuf b;
	dynbuf_init(&b, 1 << 20);
	if (fmt == LOG_LOGFMT) {
		dynbuf_printf(&b, "ts=%s level=%s component=%s", ts, level_names[level], component);
		if (run > 0)
			dynbuf_printf(&b, " run=%lld", run);
		for (int i = 0; extra && extra[i]; i += 2) {
			dynbuf_printf(&b, " %s=", extra[i]);
			lf_value(&b, extra[i + 1]);
		}
		dynbuf_addstr(&b, " msg=");
		lf_value(&b, msg);
	} else {
		dynbuf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", ts,
			      level_names[level]);
		json_str(&b, component);
		if (run > 0)
			dynbuf_printf(&b, ",\"run\":%lld", run);
		for (int i = 0; extra && extra[i]; i += 2) {
			dynbuf_printf(&b, ",\"%s\":", extra[i]);
			json_str(&b, extra[i + 1]);
		}
		dynbuf_addstr(&b, ",\"msg\":");
		json_str(&b, msg);
		dynbuf_addstr(&b, "}");
	}
	dynbuf_addstr(&b, "\n");
	if (b.data)
		fputs(b.data, stderr); /* one write of the whole line (stderr: unbuffered) */
	dynbuf_release(&b);
}

void hlog(int level, const char *component, const char *fmt_, ...)
{
	if (level < min_level)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt_);
	vsnprintf(msg, sizeof msg, fmt_, ap);
	va_end(ap);
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	long long run = 0;
	if (strncmp(msg, "run ", 4) == 0)
		run = atoll(msg + 4);
	emit(level, component, run, msg, NULL);
}

void hlog_access(unsigned long long id, const char *client, const char *who, const char *method,
		 const char *path, unsigned status, double seconds)
{
	if (!access_on)
		return;
	char msg[600], sid[24], st[8], ms[32];
	snprintf(msg, sizeof msg, "%s %s %u %.1f ms", method, path, status, seconds * 1000);
	snprintf(sid, sizeof sid, "%llu", id);
	snprintf(st, sizeof st, "%u", status);
	snprintf(ms, sizeof ms, "%.3f", seconds * 1000);
	const char *extra[] = {"request", sid, "client", client, "who",	   who,	 "method",
			       method,	  "path", path,   "status", st,	    "ms", ms,	 NULL};
	emit(LOG_INFO, "http", 0, msg, fmt == LOG_TEXT ? NULL : extra);
}
