/* fuzz_apiparse.c - libFuzzer target for the REST API's path and query
 * parsing (server/apiparse.c).
 *
 * The first byte picks a parser, the rest (up to the first NUL, at most
 * 4096 bytes) is its text: a URL matched against every route pattern, an
 * integer under several bounds, a time, a real, a list of run ids, a label
 * selector ("KEY=VALUE", no '=': no value), a sort key, or a list cursor
 * under each sort. Whatever the text, nothing crashes and an accepted
 * value keeps the parser's promise: integers are all digits and within
 * their bounds (the same as a reference parse), a matched route's id is
 * >= 0 and its name valid or empty, times only in the documented forms
 * (digits where digits go: no sign, no space) and within 1970..9999 as
 * epoch ms >= 0, selector keys 1..256 bytes, cursors of the sort asked
 * for with an id > 0 written as plain digits, and a name cursor whose
 * hex is the name's own.
 *
 * Build: make fuzz (tests/CMakeLists.txt: HR_FUZZ_SRC_apiparse).
 * Without libFuzzer: linked with tests/fuzz/standalone.c, it replays
 * tests/fuzz/corpus/apiparse in make check.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiparse.h"
#include "fuzz.h"
#include "metrics.h"
#include "util.h"

static const char *const patterns[] = {
	"/api/v1/audit",
	"/api/v1/baselines",
	"/api/v1/baselines/{name}",
	"/api/v1/calibrations/{id}",
	"/api/v1/datasets/{id}/entries",
	"/api/v1/groups/{id}",
	"/api/v1/runs",
	"/api/v1/runs/{id}",
	"/api/v1/runs/{id}/cancel",
	"/api/v1/runs/{id}/records",
	"/api/v1/tokens/{id}",
	"/{id}/{name}/{id}",
};

/* The reference: digits only, no overflow, within [lo, hi]. */
static int ref_int(const char *s, long long lo, long long hi, long long *out)
{
	unsigned long long v = 0;
	if (!*s)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (9223372036854775807ULL - (unsigned)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if ((long long)v < lo || (long long)v > hi)
		return -1;
	*out = (long long)v;
	return 0;
}

static void check_match(const char *url)
{
	for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
		int64_t id = -7;
		char name[HR_MAX_LABEL_LEN + 1];
		memset(name, 'Z', sizeof name);
		int m = api_match(patterns[i], url, &id, name);
		REQUIRE(m == 0 || m == 1);
		if (!m)
			continue;
		if (strstr(patterns[i], "{id}"))
			REQUIRE(id >= 0);
		if (strstr(patterns[i], "{name}")) {
			size_t n = strnlen(name, sizeof name);
			REQUIRE(n < sizeof name);
			for (size_t j = 0; j < n; j++)
				REQUIRE(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					       "0123456789._-",
					       name[j]) != NULL);
		}
		if (!strchr(patterns[i], '{')) {
			size_t pl = strlen(patterns[i]);
			REQUIRE(strncmp(url, patterns[i], pl) == 0 &&
				(url[pl] == '\0' || (url[pl] == '/' && url[pl + 1] == '\0')));
		}
	}
	int64_t id = 0;
	REQUIRE(api_match("/x", url, &id, NULL) == (strcmp(url, "/x") == 0 || strcmp(url, "/x/") == 0));
}

static void check_int(const char *s)
{
	static const long long bounds[][2] = {
		{1, 1000}, {0, 253402300799LL}, {1, INT64_MAX}, {0, INT64_MAX}, {2, 1000}};
	for (size_t i = 0; i < sizeof bounds / sizeof *bounds; i++) {
		long long v = -1, r = -2;
		int a = parse_int(s, bounds[i][0], bounds[i][1], &v);
		int b = ref_int(s, bounds[i][0], bounds[i][1], &r);
		REQUIRE(a == b);
		if (a == 0)
			REQUIRE(v == r && v >= bounds[i][0] && v <= bounds[i][1]);
	}
}

/* s has the shape of pattern: 'D' a digit, anything else itself. */
static int shaped(const char *s, const char *pattern)
{
	for (; *pattern; s++, pattern++)
		if (*pattern == 'D' ? !(*s >= '0' && *s <= '9') : *s != *pattern)
			return 0;
	return 1;
}

/* The documented forms exactly: Unix seconds, a date, or RFC 3339 UTC
 * with an optional fraction. */
static int time_form(const char *s)
{
	size_t n = strlen(s);
	if (n > 0 && strspn(s, "0123456789") == n)
		return 1;
	if (n == 10)
		return shaped(s, "DDDD-DD-DD");
	if (n < 20 || !shaped(s, "DDDD-DD-DDTDD:DD:DD") || s[n - 1] != 'Z')
		return 0;
	if (n == 20)
		return 1;
	return s[19] == '.' && n > 21 && strspn(s + 20, "0123456789") == n - 21;
}

static void check_time(const char *s)
{
	int64_t ms = -1;
	if (api_parse_time(s, &ms) == 0) {
		REQUIRE(ms >= 0 && ms < 253402300800000LL);
		REQUIRE(time_form(s));
	}
}

static void check_real(const char *s)
{
	double v = NAN;
	if (api_parse_real(s, 0.5, 0.9999, &v) == 0)
		REQUIRE(v >= 0.5 && v <= 0.9999);
	if (api_parse_real(s, 0, 1000, &v) == 0)
		REQUIRE(isfinite(v) && v >= 0 && v <= 1000);
}

static void check_ids(const char *s)
{
	int64_t ids[8];
	int n = api_parse_id_list(s, ids, 8);
	REQUIRE(n == -1 || (n >= 1 && n <= 8));
	for (int i = 0; i < n; i++)
		REQUIRE(ids[i] >= 1);
}

static void check_selector(const char *s)
{
	char buf[4097];
	snprintf(buf, sizeof buf, "%s", s);
	char *eq = strchr(buf, '=');
	const char *value = NULL;
	if (eq) {
		*eq = '\0';
		value = eq + 1;
	}
	struct label_sel sel;
	char err[HR_ERRLEN];
	err[0] = '\0';
	if (history_parse_selector(buf, value, &sel, err) < 0) {
		REQUIRE(err[0] != '\0');
		return;
	}
	size_t kn = strnlen(sel.key, sizeof sel.key);
	REQUIRE(kn >= 1 && kn < sizeof sel.key);
	REQUIRE(strnlen(sel.value, sizeof sel.value) < sizeof sel.value);
	REQUIRE(value ? (sel.op == SEL_EQ || sel.op == SEL_NE)
		      : (sel.op == SEL_PRESENT || sel.op == SEL_ABSENT));
	if (value)
		REQUIRE(strcmp(sel.value, value) == 0);
}

static void check_sort(const char *s)
{
	struct sort_key k;
	if (api_parse_sort(s, &k) < 0)
		return;
	REQUIRE(k.by == SORT_ID || k.by == SORT_NAME || k.by == SORT_METRIC);
	REQUIRE(k.desc == (s[0] == '-'));
	if (k.by == SORT_METRIC)
		REQUIRE(k.metric && metric_info(k.metric) && k.stat >= 0);
}

static void check_cursor(const char *s)
{
	for (int by = SORT_ID; by <= SORT_METRIC; by++) {
		struct list_cursor c;
		memset(&c, 0, sizeof c);
		if (api_parse_cursor(s, by, &c) < 0)
			continue;
		REQUIRE(c.id > 0);
		/* the id is the text after the last ':', digits only, exactly */
		long long id;
		REQUIRE(ref_int(strrchr(s, ':') + 1, 1, INT64_MAX, &id) == 0 && id == c.id);
		if (by == SORT_ID)
			REQUIRE(c.kind == 'i');
		if (by == SORT_NAME) {
			REQUIRE(c.kind == 'a');
			size_t n = strnlen(c.name, sizeof c.name);
			REQUIRE(n < sizeof c.name);
			char hex[2 * HR_MAX_NAME_LEN + 1];
			for (size_t i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02x", (unsigned char)c.name[i]);
			hex[2 * n] = '\0';
			REQUIRE(strncmp(s + 2, hex, 2 * n) == 0 && s[2 + 2 * n] == ':');
		}
		if (by == SORT_METRIC) {
			REQUIRE(c.kind == 'v' || c.kind == 'n');
			if (c.kind == 'v')
				REQUIRE(isfinite(c.v));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4097)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 8) {
	case 0: check_match(s); break;
	case 1: check_int(s); break;
	case 2: check_time(s); break;
	case 3: check_real(s); break;
	case 4: check_ids(s); break;
	case 5: check_selector(s); break;
	case 6: check_sort(s); break;
	default: check_cursor(s); break;
	}
	free(s);
	return 0;
}
