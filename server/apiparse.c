/* apiparse.c - the pure parsing of the REST API's paths and query strings
 * (see apiparse.h). Everything here takes text from the network: bounded,
 * no allocation, -1 for anything not exactly in the documented form. */
#include "apiparse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"
#include "util.h"

int parse_int(const char *s, long long lo, long long hi, long long *out)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi || !(*s >= '0' && *s <= '9'))
		return -1;
	*out = v;
	return 0;
}

int api_match(const char *pat, const char *url, int64_t *id, char *name)
{
	while (*pat && *url) {
		if (strncmp(pat, "{name}", 6) == 0) {
			/* a baseline's name: 1..HR_MAX_LABEL_LEN of [A-Za-z0-9._-] (a
			 * segment with anything else still matches, empty: the
			 * handler answers 400) */
			const char *seg = url;
			while (*url && *url != '/')
				url++;
			size_t n = (size_t)(url - seg);
			int ok = n >= 1 && n <= HR_MAX_LABEL_LEN;
			for (size_t i = 0; ok && i < n; i++)
				ok = (seg[i] >= 'a' && seg[i] <= 'z') || (seg[i] >= 'A' && seg[i] <= 'Z') ||
				     (seg[i] >= '0' && seg[i] <= '9') || strchr("._-", seg[i]);
			if (n == 0)
				return 0;
			if (name) {
				if (ok)
					memcpy(name, seg, n);
				name[ok ? n : 0] = '\0';
			}
			pat += 6;
			continue;
		}
		if (strncmp(pat, "{id}", 4) == 0) {
			const char *seg = url;
			while (*url && *url != '/')
				url++;
			if (url == seg)
				return 0;
			char tmp[32];
			size_t n = (size_t)(url - seg);
			long long v = 0;
			if (n < sizeof tmp) {
				memcpy(tmp, seg, n);
				tmp[n] = '\0';
				if (parse_int(tmp, 1, INT64_MAX, &v) < 0)
					v = 0;
			}
			*id = v;
			pat += 4;
			continue;
		}
		if (*pat != *url)
			return 0;
		pat++;
		url++;
	}
	if (*url == '/' && url[1] == '\0') /* tolerate one trailing slash */
		url++;
	return *pat == '\0' && *url == '\0';
}

/* s starts with the shape of pattern: 'D' a digit, anything else itself. */
static int shaped(const char *s, const char *pattern)
{
	for (; *pattern; s++, pattern++)
		if (*pattern == 'D' ? !(*s >= '0' && *s <= '9') : *s != *pattern)
			return 0;
	return 1;
}

int api_parse_time(const char *s, int64_t *ms)
{
	long long secs;
	if (parse_int(s, 0, 253402300799LL, &secs) == 0) {
		*ms = secs * 1000;
		return 0;
	}
	struct tm tm = {0};
	int frac = 0, n = 0;
	size_t len = strlen(s);
	/* digits where digits go: sscanf's %d alone would take "- 1" or "+1" */
	if (len == 10 && shaped(s, "DDDD-DD-DD") &&
	    sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) == 3 && n == 10) {
	} else if (shaped(s, "DDDD-DD-DDTDD:DD:DD") && sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) == 6 &&
		   n == 19) {
		const char *p = s + 19;
		if (*p == '.') {
			int digits = 0;
			for (p++; *p >= '0' && *p <= '9'; p++, digits++)
				if (digits < 3)
					frac = frac * 10 + (*p - '0');
			if (digits == 0)
				return -1; /* "00.Z" */
			for (; digits < 3; digits++)
				frac *= 10;
		}
		if (strcmp(p, "Z") != 0)
			return -1;
	} else {
		return -1;
	}
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	struct tm want = tm;
	time_t t = timegm(&tm);
	/* timegm normalises 2026-02-31 into March: refuse what moved */
	if (t == (time_t)-1 || tm.tm_mday != want.tm_mday || tm.tm_mon != want.tm_mon)
		return -1;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

int api_parse_real(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

int api_parse_id_list(const char *s, int64_t *ids, int max)
{
	int n = 0;
	const char *p = s;
	while (*p) {
		char tmp[32];
		size_t len = strcspn(p, ",");
		long long id;
		if (len == 0 || len >= sizeof tmp || n == max)
			return -1;
		memcpy(tmp, p, len);
		tmp[len] = '\0';
		if (parse_int(tmp, 1, INT64_MAX, &id) < 0)
			return -1;
		ids[n++] = id;
		p += len;
		if (*p == ',')
			p++;
	}
	return n > 0 ? n : -1;
}

int history_parse_selector(const char *k, const char *value, struct label_sel *out, char *err)
{
	memset(out, 0, sizeof *out);
	if (strncmp(k, "label.", 6) != 0)
		return errf(err, "not a label selector");
	k += 6;
	size_t n = strlen(k);
	int bang = n > 0 && k[n - 1] == '!';
	if (bang)
		n--;
	if (n == 0 || n > HR_MAX_LABEL_LEN)
		return errf(err, "a label key must be 1 to %d bytes", HR_MAX_LABEL_LEN);
	memcpy(out->key, k, n);
	out->key[n] = '\0';
	if (!value) {
		out->op = bang ? SEL_ABSENT : SEL_PRESENT;
		return 0;
	}
	if (strlen(value) >= sizeof out->value)
		return errf(err, "a label value must be at most %zu bytes", sizeof out->value - 1);
	snprintf(out->value, sizeof out->value, "%s", value);
	out->op = bang ? SEL_NE : SEL_EQ;
	return 0;
}

int api_parse_metric_stat(const char *s, const char **metric, char *mbuf, size_t mlen,
			  int *stat)
{
	const char *dot = strrchr(s, '.');
	if (!dot || (size_t)(dot - s) >= mlen)
		return -1;
	memcpy(mbuf, s, (size_t)(dot - s));
	mbuf[dot - s] = '\0';
	const struct metric_info *mi = metric_info(mbuf);
	*stat = metric_stat_index(dot + 1);
	if (!mi || *stat < 0 || (mi->run_level && *stat != 0) ||
	    (!mi->run_level && strcmp(dot + 1, "value") == 0))
		return -1;
	*metric = mi->tag;
	return 0;
}

int api_parse_sort(const char *s, struct sort_key *out)
{
	char mbuf[128];
	const char *key = s[0] == '-' ? s + 1 : s;
	out->desc = s[0] == '-';
	out->metric = NULL;
	out->stat = 0;
	if (strcmp(key, "id") == 0 || strcmp(key, "created_at") == 0)
		out->by = SORT_ID;
	else if (strcmp(key, "name") == 0)
		out->by = SORT_NAME;
	else if (strcmp(key, "verdict") == 0)
		out->by = SORT_VERDICT;
	else if (strcmp(key, "valid") == 0)
		out->by = SORT_VALID;
	else if (api_parse_metric_stat(key, &out->metric, mbuf, sizeof mbuf, &out->stat) == 0)
		out->by = SORT_METRIC;
	else
		return -1;
	return 0;
}

static int unhex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int api_parse_cursor(const char *c, int sort_by, struct list_cursor *out)
{
	char *end;
	if (!c || strlen(c) < 3 || c[1] != ':')
		return -1;
	out->kind = c[0];
	const char *p = c + 2;
	if (out->kind == 'v') {
		out->v = strtod(p, &end);
		if (end == p || *end != ':' || !isfinite(out->v))
			return -1;
		p = end + 1;
	} else if (out->kind == 'a') {
		size_t n = 0;
		for (; *p && *p != ':'; p += 2) {
			int hi = unhex(p[0]), lo = hi < 0 ? -1 : unhex(p[1]);
			if (lo < 0 || n == HR_MAX_NAME_LEN)
				return -1;
			out->name[n++] = (char)(hi * 16 + lo);
		}
		out->name[n] = '\0';
		if (*p++ != ':' || strlen(out->name) != n)
			return -1;
	} else if (out->kind != 'i' && out->kind != 'n') {
		return -1;
	}
	int want = sort_by == SORT_ID ? out->kind == 'i'
		   : sort_by == SORT_NAME ? out->kind == 'a'
					  : out->kind == 'v' || out->kind == 'n';
	/* plain digits, as the daemon writes it (strtoll would take " +9" and
	 * saturate what overflows) */
	long long id;
	if (!want || parse_int(p, 1, INT64_MAX, &id) < 0)
		return -1;
	out->id = id;
	return 0;
}
