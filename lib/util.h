/* util.h - small helpers every program uses: allocation that aborts on
 * exhaustion, clocks with typed units, error buffers, string formatting.
 *
 * Allocation failure of internal objects is not recoverable and aborts via
 * xalloc_die(); sizes that come from outside must be checked against
 * limits.h before they reach these functions.
 */
#ifndef HR_UTIL_H
#define HR_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define HR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define HR_ERRLEN 256 /* size of the caller-supplied error buffers */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated formatted string; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void xalloc_die(void);

/* Monotonic nanoseconds (CLOCK_MONOTONIC): for durations and schedules. */
int64_t mono_ns(void);
/* Wall-clock nanoseconds since the Unix epoch: only for stored timestamps. */
int64_t wall_ns(void);
/* CPU time of the whole process (user + system, every thread), ns; 0 if
 * the clock cannot be read. */
int64_t process_cpu_ns(void);
/* Seconds as nanoseconds, rounded, clamped to [-HR_FAR_NS, HR_FAR_NS]
 * (about 31.7 years; NaN gives 0). For times computed from outside input
 * (a trace timestamp over a tiny speedup, the millionth arrival at a tiny
 * rate): the result never overflows, even added to a clock reading, and a
 * time clamped that far away is never reached. */
#define HR_FAR_NS 1000000000000000000LL
int64_t ns_of_s(double s);

/* Format into a caller-supplied error buffer of HR_ERRLEN bytes (err may be
 * NULL). Always returns -1 so callers can write `return errf(...)`. */
int errf(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shortest decimal text that reads back as exactly the same double: the
 * text of printf's %.15g, %.16g or %.17g, the first that reads back (exact
 * integer arithmetic, printf only outside about 1e-6..1e38). buf must hold
 * 32 bytes. Returns its length. */
int fmt_double(char *buf, double v);
/* v in decimal, NUL-terminated. buf must hold 21 bytes. Returns its length. */
int fmt_i64(char *buf, long long v);

/* Makes s valid UTF-8 in place: invalid bytes become '?', a sequence cut
 * short at the end (by truncation) is dropped. Returns s. */
char *utf8_sanitize(char *s);

/* Line-oriented text (JSONL): the next line of [*p, end) that is not blank
 * (only spaces, tabs and carriage returns), without its '\n', into *start
 * and *len; *line counts every line read, blank ones too (1-based numbers
 * for messages). Advances *p past it. Returns 1, or 0 at the end. */
int next_text_line(const char **p, const char *end, const char **start, size_t *len,
                   uint32_t *line);

/* Parse "HOST:PORT" (IPv4 literal, name or [IPv6]). host must hold 256
 * bytes. Returns 0 or -1 with a message in err. */
int parse_hostport(const char *s, char *host, int *port, char *err);

#endif
