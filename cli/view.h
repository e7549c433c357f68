/* view.h - turning untrusted JSON from the daemon into display text.
 *
 * Every answer from the daemon is hostile input: values are read with type
 * checks (a missing or mistyped value is shown as "-"), strings lose their
 * terminal control characters before they reach a terminal, and numbers
 * are printed with a bounded width. Used by the tables and the summary
 * view of the CLI; no state, no I/O.
 */
#ifndef HR_CLI_VIEW_H
#define HR_CLI_VIEW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define VIEW_NUMLEN 64 /* size of the buffers view_fmt_num fills */

/* Newly allocated copy of s with C0/C1 control characters and DEL replaced
 * by '?' (NULL gives "-"). Caller frees. */
char *view_clean(const char *s);

/* Columns s takes on a terminal: one per UTF-8 code point. */
size_t view_width(const char *s);

/* obj[key] when obj is an object and the member is a string, else NULL.
 * Borrowed from obj. */
const char *view_str(const json_t *obj, const char *key);

/* 1 and *out set when obj[key] is a JSON number (integer or real), else 0. */
int view_num(const json_t *obj, const char *key, double *out);

/* v with two decimals and thousands separators ("1,619.10"); very large
 * magnitudes in %g form. buf holds VIEW_NUMLEN bytes; returns buf. */
const char *view_fmt_num(char *buf, double v);

/* Any scalar as text into buf (n bytes, n >= 2): a string cleaned and cut
 * to fit (never inside a UTF-8 sequence), an integer, a real in shortest
 * form, true/false; NULL, null, objects and arrays give "-". Returns buf. */
const char *view_scalar(char *buf, size_t n, const json_t *v);

/* RFC 3339 timestamp ("2026-11-29T16:28:12.123Z", offsets allowed) to
 * milliseconds since the Unix epoch. Returns 0, or -1 when s is not one. */
int view_parse_time(const char *s, int64_t *ms);

/* A timestamp as "2026-11-29 16:28:12" (UTC) into buf (n >= 32 bytes); "-"
 * when s is NULL, the cleaned string itself when it does not parse. */
const char *view_fmt_time(char *buf, size_t n, const char *s);

/* A duration: "850ms", "12.3s", "4m05s", "2h03m", "3d04h" into buf (n >= 32
 * bytes); negative durations give "-". Returns buf. */
const char *view_fmt_duration(char *buf, size_t n, int64_t ms);

#endif
