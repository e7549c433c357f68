/* tap.c - the unit-test harness behind tap.h: counts checks, reports
 * failures with their location and values, prints the summary line. */
#include "tap.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static unsigned long n_pass, n_fail;

static void fail_head(const char *file, int line)
{
	printf("not ok %lu - %s:%d: ", n_pass + n_fail, file, line);
}

void tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	if (cond) {
		n_pass++;
		return;
	}
	n_fail++;
	printf("not ok %lu - ", n_pass + n_fail);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int record(int cond)
{
	if (cond)
		n_pass++;
	else
		n_fail++;
	return cond;
}

int tap_check(const char *file, int line, int cond, const char *expr)
{
	if (!record(cond)) {
		fail_head(file, line);
		printf("CHECK(%s)\n", expr);
		fflush(stdout);
	}
	return cond;
}

int tap_check_int(const char *file, int line, const char *ea, const char *eb, long long a,
                  long long b)
{
	int cond = a == b;

	if (!record(cond)) {
		fail_head(file, line);
		printf("%s == %s: %lld != %lld\n", ea, eb, a, b);
		fflush(stdout);
	}
	return cond;
}

int tap_check_dbl(const char *file, int line, const char *ea, const char *eb, double a, double b)
{
	int cond = a == b || (isnan(a) && isnan(b));

	if (!record(cond)) {
		fail_head(file, line);
		printf("%s == %s: %.17g (%a) != %.17g (%a)\n", ea, eb, a, a, b, b);
		fflush(stdout);
	}
	return cond;
}

int tap_check_near(const char *file, int line, const char *ea, const char *eb, double a, double b,
                   double eps)
{
	int cond = fabs(a - b) <= eps;

	if (!record(cond)) {
		fail_head(file, line);
		printf("%s ~= %s: %.17g vs %.17g (diff %g > %g)\n", ea, eb, a, b, fabs(a - b), eps);
		fflush(stdout);
	}
	return cond;
}

int tap_check_str(const char *file, int line, const char *ea, const char *eb, const char *a,
                  const char *b)
{
	int cond = (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);

	if (!record(cond)) {
		fail_head(file, line);
		printf("%s == %s:\n  got:      \"%s\"\n  expected: \"%s\"\n", ea, eb,
		       a ? a : "(null)", b ? b : "(null)");
		fflush(stdout);
	}
	return cond;
}

static void print_bytes(const unsigned char *p, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\\' || p[i] == '"')
			printf("\\%c", p[i]);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			putchar(p[i]);
		else if (p[i] == '\n')
			fputs("\\n", stdout);
		else if (p[i] == '\r')
			fputs("\\r", stdout);
		else
			printf("\\x%02x", p[i]);
	}
	putchar('"');
}

int tap_check_mem(const char *file, int line, const char *ea, const char *eb, const void *a,
                  size_t alen, const void *b, size_t blen)
{
	int cond = alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);

	if (!record(cond)) {
		fail_head(file, line);
		printf("%s == %s:\n  got:      ", ea, eb);
		print_bytes(a, alen);
		printf(" (%zu bytes)\n  expected: ", alen);
		print_bytes(b, blen);
		printf(" (%zu bytes)\n", blen);
		fflush(stdout);
	}
	return cond;
}

int tap_done(void)
{
	printf("%lu passed, %lu failed\n", n_pass, n_fail);
	fflush(stdout);
	return (n_fail == 0 && n_pass > 0) ? 0 : 1;
}
