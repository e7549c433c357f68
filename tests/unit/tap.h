/* tap.h - a tiny test harness for the unit tests.
 *
 * Each check counts as passed or failed; a failure prints the file, line,
 * expression and values. A test program's main() calls its test functions
 * and ends with `return tap_done();`, which prints "N passed, M failed" and
 * returns the exit status (0 only when nothing failed and something ran).
 */
#ifndef HR_TAP_H
#define HR_TAP_H

#include <stddef.h>

/* Record one check; on failure print the formatted description. */
void tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print the summary line; returns the process exit status. */
int tap_done(void);

/* Helpers behind the macros; they return cond so callers may branch on it. */
int tap_check(const char *file, int line, int cond, const char *expr);
int tap_check_int(const char *file, int line, const char *ea, const char *eb, long long a,
                  long long b);
int tap_check_dbl(const char *file, int line, const char *ea, const char *eb, double a, double b);
int tap_check_near(const char *file, int line, const char *ea, const char *eb, double a, double b,
                   double eps);
int tap_check_str(const char *file, int line, const char *ea, const char *eb, const char *a,
                  const char *b);
int tap_check_mem(const char *file, int line, const char *ea, const char *eb, const void *a,
                  size_t alen, const void *b, size_t blen);

#define CHECK(cond) tap_check(__FILE__, __LINE__, !!(cond), #cond)
#define CHECK_EQ_INT(a, b) tap_check_int(__FILE__, __LINE__, #a, #b, (long long)(a), (long long)(b))
/* Exact equality of doubles (two NaNs count as equal). */
#define CHECK_EQ_DBL(a, b) tap_check_dbl(__FILE__, __LINE__, #a, #b, (double)(a), (double)(b))
#define CHECK_NEAR(a, b, eps)                                                                      \
	tap_check_near(__FILE__, __LINE__, #a, #b, (double)(a), (double)(b), (double)(eps))
#define CHECK_STR(a, b) tap_check_str(__FILE__, __LINE__, #a, #b, (a), (b))
/* Byte strings with explicit lengths. */
#define CHECK_MEM(a, alen, b, blen)                                                                \
	tap_check_mem(__FILE__, __LINE__, #a, #b, (a), (alen), (b), (blen))

#endif
