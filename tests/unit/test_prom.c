/* test_prom.c - unit tests of lib/prom.c: expositions written from the
 * text format 0.0.4 specification (escapes, NaN/Inf, timestamps,
 * histograms and summaries, HELP/TYPE ordering, duplicate series,
 * malformed lines in lenient and strict modes, truncated input, bounds),
 * the exporter pages of tests/unit/data/prom/, and histogram_quantile
 * against hand-computed values. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "prom.h"
#include "promdata.h"
#include "tap.h"
#include "util.h"

static int parse(const char *text, unsigned flags, struct prom_doc *doc, char *err)
{
	return prom_parse(text, strlen(text), flags, doc, err);
}

/* Parses in both modes; expects lenient to skip exactly one bad line (at
 * `line`) and strict to fail with "line N: " + want. */
static void expect_bad(const char *text, size_t line, const char *want)
{
	struct prom_doc doc;
	char err[HR_ERRLEN] = "", prefix[64];

	int rc = parse(text, 0, &doc, err);
	tap_ok(rc == 0, "lenient parse of [%s] returned %d", text, rc);
	tap_ok(doc.bad_lines == 1 && doc.nerrors == 1, "[%s]: %zu bad lines", text, doc.bad_lines);
	if (doc.nerrors == 1) {
		tap_ok(doc.errors[0].line == line, "[%s]: error on line %zu, want %zu", text,
		       doc.errors[0].line, line);
		tap_ok(strstr(doc.errors[0].msg, want) != NULL, "[%s]: message '%s', want '%s'",
		       text, doc.errors[0].msg, want);
	}
	prom_doc_release(&doc);
	rc = parse(text, PROM_STRICT, &doc, err);
	tap_ok(rc == -1, "strict parse of [%s] returned %d", text, rc);
	snprintf(prefix, sizeof(prefix), "line %zu: ", line);
	tap_ok(strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, want) != NULL,
	       "strict error '%s', want '%s%s'", err, prefix, want);
	CHECK(doc.nfamilies == 0 && doc.families == NULL && doc.priv == NULL);
	prom_doc_release(&doc);
}

static void test_basic(void)
{
	static const char text[] =
	    "# HELP http_requests_total The total number of HTTP requests.\n"
	    "# TYPE http_requests_total counter\n"
	    "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
	    "http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n"
	    "\n"
	    "# A normal comment.\n"
	    "# TYPE metric_without_timestamp_and_labels gauge\n"
	    "metric_without_timestamp_and_labels 12.47\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 2);
	CHECK_EQ_INT(doc.nsamples, 3);
	CHECK_EQ_INT(doc.nlines, 8);
	CHECK_EQ_INT(doc.bad_lines, 0);
	const struct prom_family *f = prom_find_family(&doc, "http_requests_total");
	CHECK(f == &doc.families[0]);
	CHECK_STR(f->name, "http_requests_total");
	CHECK_STR(f->help, "The total number of HTTP requests.");
	CHECK_EQ_INT(f->type, PROM_COUNTER);
	CHECK(f->has_type);
	CHECK_EQ_INT(f->nsamples, 2);
	CHECK(f->groups == NULL && f->ngroups == 0);
	const struct prom_sample *s = &f->samples[1];
	CHECK_STR(s->name, "http_requests_total");
	CHECK_EQ_INT(s->nlabels, 2);
	CHECK_STR(s->labels[0].name, "method");
	CHECK_STR(s->labels[0].value, "post");
	CHECK_STR(s->labels[1].name, "code");
	CHECK_STR(s->labels[1].value, "400");
	CHECK_EQ_DBL(s->value, 3);
	CHECK(s->has_timestamp);
	CHECK_EQ_INT(s->timestamp_ms, 1395066363000LL);
	CHECK_EQ_INT(s->role, PROM_ROLE_VALUE);
	CHECK(isnan(s->bound));
	CHECK_EQ_INT(s->group, PROM_NO_GROUP);
	CHECK_EQ_INT(s->line, 4);
	CHECK_STR(prom_label(s, "code"), "400");
	CHECK(prom_label(s, "nope") == NULL);

	struct prom_label m = {"code", "400"};
	CHECK(prom_find_sample(f, NULL, &m, 1) == s);
	CHECK(prom_find_sample(f, "http_requests_total", NULL, 0) == &f->samples[0]);
	CHECK(prom_find_sample(f, "other", NULL, 0) == NULL);
	m.value = "500";
	CHECK(prom_find_sample(f, NULL, &m, 1) == NULL);
	CHECK(prom_find_sample(NULL, NULL, NULL, 0) == NULL);

	f = prom_find_family(&doc, "metric_without_timestamp_and_labels");
	CHECK(f == &doc.families[1]);
	CHECK(f->help == NULL);
	CHECK_EQ_INT(f->type, PROM_GAUGE);
	CHECK_EQ_INT(f->samples[0].nlabels, 0);
	CHECK(f->samples[0].labels == NULL);
	CHECK_EQ_DBL(f->samples[0].value, 12.47);
	CHECK(!f->samples[0].has_timestamp);
	CHECK_EQ_INT(f->samples[0].timestamp_ms, 0);
	CHECK(prom_find_family(&doc, "http_requests") == NULL);
	CHECK(prom_find_family(&doc, "") == NULL);
	CHECK(prom_find_family(&doc, NULL) == NULL);

	CHECK_STR(prom_type_name(PROM_UNTYPED), "untyped");
	CHECK_STR(prom_type_name(PROM_COUNTER), "counter");
	CHECK_STR(prom_type_name(PROM_GAUGE), "gauge");
	CHECK_STR(prom_type_name(PROM_HISTOGRAM), "histogram");
	CHECK_STR(prom_type_name(PROM_SUMMARY), "summary");
	CHECK_STR(prom_type_name(42), "untyped");
	prom_doc_release(&doc);
	prom_doc_release(&doc); /* twice is fine */

	/* empty input and input with only comments / blanks */
	CHECK_EQ_INT(prom_parse("", 0, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 0);
	CHECK_EQ_INT(doc.nlines, 0);
	CHECK(prom_find_family(&doc, "x") == NULL);
	prom_doc_release(&doc);
	CHECK_EQ_INT(parse("\n\n   \n\t\n# just a comment\n#\n", PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 0);
	CHECK_EQ_INT(doc.nlines, 6);
	prom_doc_release(&doc);
	/* not NUL-terminated: only len bytes are read */
	CHECK_EQ_INT(prom_parse("a 1\nb 2\n", 4, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 1);
	prom_doc_release(&doc);
}

static void test_escapes(void)
{
	static const char text[] =
	    "# HELP esc Help with a backslash \\\\ and a\\nnewline; \"quotes\" stay.\n"
	    "esc{path=\"C:\\\\DIR\\\\FILE.TXT\",msg=\"say \\\"hi\\\"\\nbye\",empty=\"\"} 1\n"
	    "esc{utf8=\"gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80\",x=\"{},=\\\"#\"} 2\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	const struct prom_family *f = prom_find_family(&doc, "esc");
	CHECK(f != NULL);
	if (!f) {
		prom_doc_release(&doc);
		return;
	}
	CHECK_STR(f->help, "Help with a backslash \\ and a\nnewline; \"quotes\" stay.");
	CHECK_EQ_INT(f->nsamples, 2);
	CHECK_STR(prom_label(&f->samples[0], "path"), "C:\\DIR\\FILE.TXT");
	CHECK_STR(prom_label(&f->samples[0], "msg"), "say \"hi\"\nbye");
	CHECK_STR(prom_label(&f->samples[0], "empty"), "");
	CHECK_STR(prom_label(&f->samples[1], "utf8"),
	          "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80");
	CHECK_STR(prom_label(&f->samples[1], "x"), "{},=\"#");
	prom_doc_release(&doc);

	expect_bad("a{x=\"\\t\"} 1\n", 1, "invalid escape sequence");
	expect_bad("ok 1\na{x=\"\\\"} 1\n", 2, "unterminated label value");
	expect_bad("a{x=\"\xff\"} 1\n", 1, "not valid UTF-8");
	expect_bad("a{x=\"\xc3\"} 1\n", 1, "not valid UTF-8");
	expect_bad("a{x=\"\xed\xa0\x80\"} 1\n", 1, "not valid UTF-8");     /* surrogate */
	expect_bad("a{x=\"\xc0\xaf\"} 1\n", 1, "not valid UTF-8");         /* overlong */
	expect_bad("a{x=\"\xc3\x28\"} 1\n", 1, "not valid UTF-8");         /* bad continuation */
	expect_bad("a{x=\"\xf4\x90\x80\x80\"} 1\n", 1, "not valid UTF-8"); /* > U+10FFFF */
	expect_bad("a{x=\"ab\\\n", 1, "unterminated label value");
	expect_bad("# HELP a bad \\t escape\n", 1, "invalid escape sequence in HELP");
	expect_bad("# HELP a trailing backslash \\\n", 1, "invalid escape sequence in HELP");
	expect_bad("# HELP a \xff\n", 1, "HELP text is not valid UTF-8");
}

static void test_values(void)
{
	static const char text[] = "v{k=\"nan\"} NaN\n"
	                           "v{k=\"nan2\"} nan\n"
	                           "v{k=\"pinf\"} +Inf\n"
	                           "v{k=\"ninf\"} -Inf\n"
	                           "v{k=\"inf\"} Inf\n"
	                           "v{k=\"infinity\"} -infinity\n"
	                           "v{k=\"exp\"} 1.5e+06\n"
	                           "v{k=\"nexp\"} -2.5E-3\n"
	                           "v{k=\"dot\"} .5\n"
	                           "v{k=\"trail\"} 7.\n"
	                           "v{k=\"plus\"} +42\n"
	                           "v{k=\"zero\"} -0\n"
	                           "v{k=\"big\"} 1.7976931348623157e308\n"
	                           "v{k=\"tiny\"} 4.9e-324\n"
	                           "v{k=\"huge\"} 1e999\n"
	                           "v{k=\"int\"} 9007199254740993\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	const struct prom_family *f = prom_find_family(&doc, "v");
	CHECK(f && f->nsamples == 16);
	if (!f || f->nsamples != 16) {
		prom_doc_release(&doc);
		return;
	}
	CHECK(isnan(f->samples[0].value));
	CHECK(isnan(f->samples[1].value));
	CHECK_EQ_DBL(f->samples[2].value, INFINITY);
	CHECK_EQ_DBL(f->samples[3].value, -INFINITY);
	CHECK_EQ_DBL(f->samples[4].value, INFINITY);
	CHECK_EQ_DBL(f->samples[5].value, -INFINITY);
	CHECK_EQ_DBL(f->samples[6].value, 1.5e6);
	CHECK_EQ_DBL(f->samples[7].value, -2.5e-3);
	CHECK_EQ_DBL(f->samples[8].value, 0.5);
	CHECK_EQ_DBL(f->samples[9].value, 7);
	CHECK_EQ_DBL(f->samples[10].value, 42);
	CHECK(f->samples[11].value == 0 && signbit(f->samples[11].value));
	CHECK_EQ_DBL(f->samples[12].value, 1.7976931348623157e308);
	CHECK_EQ_DBL(f->samples[13].value, 4.9e-324);
	CHECK_EQ_DBL(f->samples[14].value, INFINITY); /* out of range: rounds to Inf */
	CHECK_EQ_DBL(f->samples[15].value, 9007199254740992.0);
	prom_doc_release(&doc);

	expect_bad("v 0x10\n", 1, "invalid value");
	expect_bad("v 1_000\n", 1, "invalid value");
	expect_bad("v +NaN\n", 1, "invalid value");
	expect_bad("v 1e\n", 1, "invalid value");
	expect_bad("v e5\n", 1, "invalid value");
	expect_bad("v .\n", 1, "invalid value");
	expect_bad("v --1\n", 1, "invalid value");
	expect_bad("v 1,5\n", 1, "invalid value");
	expect_bad("v infinit\n", 1, "invalid value");
	char num[PROM_MAX_NUMBER_LEN + 8] = "v ";
	memset(num + 2, '0', PROM_MAX_NUMBER_LEN - 1);
	strcpy(num + 2 + PROM_MAX_NUMBER_LEN - 1, "1\n"); /* PROM_MAX_NUMBER_LEN digits */
	CHECK_EQ_INT(parse(num, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_DBL(doc.families[0].samples[0].value, 1);
	prom_doc_release(&doc);
	memmove(num + 3, num + 2, strlen(num + 2) + 1);
	num[2] = '0';
	expect_bad(num, 1, "invalid value"); /* one more */
	expect_bad("v\n", 1, "missing value");
	expect_bad("v{a=\"b\"}\n", 1, "missing value");
	expect_bad("v{a=\"b\"}   \n", 1, "missing value");
}

static void test_timestamps(void)
{
	static const char text[] = "t{k=\"a\"} 1 1395066363000\n"
	                           "t{k=\"b\"} 1 -1\n"
	                           "t{k=\"c\"} 1 9223372036854775807\n"
	                           "t{k=\"d\"} 1 -9223372036854775808\n"
	                           "t{k=\"e\"} 1 +5  \n"
	                           "t{k=\"f\"} 1\t0\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	const struct prom_family *f = prom_find_family(&doc, "t");
	CHECK(f && f->nsamples == 6);
	if (f && f->nsamples == 6) {
		CHECK_EQ_INT(f->samples[0].timestamp_ms, 1395066363000LL);
		CHECK_EQ_INT(f->samples[1].timestamp_ms, -1);
		CHECK_EQ_INT(f->samples[2].timestamp_ms, INT64_MAX);
		CHECK_EQ_INT(f->samples[3].timestamp_ms, INT64_MIN);
		CHECK_EQ_INT(f->samples[4].timestamp_ms, 5);
		CHECK_EQ_INT(f->samples[5].timestamp_ms, 0);
		for (size_t i = 0; i < 6; i++)
			CHECK(f->samples[i].has_timestamp);
	}
	prom_doc_release(&doc);

	expect_bad("t 1 9223372036854775808\n", 1, "invalid timestamp");
	expect_bad("t 1 -9223372036854775809\n", 1, "invalid timestamp");
	expect_bad("t 1 1.5\n", 1, "invalid timestamp");
	expect_bad("t 1 1e3\n", 1, "invalid timestamp");
	expect_bad("t 1 -\n", 1, "invalid timestamp");
	expect_bad("t 1 1234567890123456789012345678901234567890123456789012345678901234\n", 1,
	           "invalid timestamp");
	expect_bad("t 1 12 13\n", 1, "unexpected text after timestamp");
	expect_bad("t 1 12 # comment\n", 1, "unexpected text after timestamp");
}

static void test_whitespace(void)
{
	/* blank lines, leading blanks, tabs, blanks inside label sets, a
	 * trailing comma, an empty label set, CRLF, a BOM */
	static const char text[] = "\xEF\xBB\xBF"
	                           "# TYPE w gauge\r\n"
	                           "\r\n"
	                           "   \t \n"
	                           "  w{a=\"1\"} 1\n"
	                           "w { a = \"2\" , b=\"x\" , } 2\r\n"
	                           "w{a=\"3\",}\t3\t\n"
	                           "w{} 4\n"
	                           "w{ } 5 \r\n"
	                           "w{a=\"6\"}6\n"
	                           "w\t{a=\"7\"}\t7\n"
	                           "#\tTYPE t2 counter\n"
	                           "t2 1\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	/* w{} 4 and w{ } 5 are the same series: the second is a duplicate */
	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), -1);
	CHECK_STR(err, "line 8: duplicate series");
	prom_doc_release(&doc);
	CHECK_EQ_INT(parse(text, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nlines, 12);
	const struct prom_family *f = prom_find_family(&doc, "w");
	CHECK(f && f->type == PROM_GAUGE && f->nsamples == 6);
	CHECK_EQ_INT(doc.bad_lines, 1);
	CHECK_EQ_INT(doc.errors[0].line, 8);
	CHECK_STR(doc.errors[0].msg, "duplicate series");
	if (f && f->nsamples == 6) {
		CHECK_EQ_DBL(f->samples[0].value, 1);
		CHECK_STR(prom_label(&f->samples[1], "a"), "2");
		CHECK_STR(prom_label(&f->samples[1], "b"), "x");
		CHECK_EQ_INT(f->samples[1].nlabels, 2);
		CHECK_EQ_DBL(f->samples[1].value, 2);
		CHECK_EQ_INT(f->samples[2].nlabels, 1);
		CHECK_EQ_DBL(f->samples[2].value, 3);
		CHECK_EQ_INT(f->samples[3].nlabels, 0);
		CHECK_EQ_DBL(f->samples[3].value, 4);
		CHECK_EQ_DBL(f->samples[4].value, 6);
		CHECK_EQ_DBL(f->samples[5].value, 7);
		CHECK_EQ_INT(f->samples[5].line, 10);
	}
	f = prom_find_family(&doc, "t2");
	CHECK(f && f->type == PROM_COUNTER); /* "#\tTYPE" is a TYPE line */
	prom_doc_release(&doc);

	/* a BOM elsewhere is not skipped */
	expect_bad("a 1\n\xEF\xBB\xBF"
	           "b 1\n",
	           2, "invalid metric name");
	/* a lone CR in the middle of a sample line is not a blank */
	expect_bad("a 1\rb 2\n", 1, "invalid value");
}

static void test_histogram(void)
{
	/* buckets out of order, two series, _sum before the buckets */
	static const char text[] =
	    "# HELP rpc_duration_seconds A histogram of the request duration.\n"
	    "# TYPE rpc_duration_seconds histogram\n"
	    "rpc_duration_seconds_sum{svc=\"a\"} 53423\n"
	    "rpc_duration_seconds_bucket{svc=\"a\",le=\"0.05\"} 24054\n"
	    "rpc_duration_seconds_bucket{svc=\"a\",le=\"+Inf\"} 144320\n"
	    "rpc_duration_seconds_bucket{svc=\"a\",le=\"0.1\"} 33444\n"
	    "rpc_duration_seconds_bucket{le=\"0.2\",svc=\"a\"} 100392\n"
	    "rpc_duration_seconds_bucket{svc=\"a\",le=\"0.5\"} 129389\n"
	    "rpc_duration_seconds_bucket{svc=\"a\",le=\"1\"} 133988\n"
	    "rpc_duration_seconds_count{svc=\"a\"} 144320\n"
	    "rpc_duration_seconds_bucket{svc=\"b\",le=\"1\"} 1\n"
	    "rpc_duration_seconds_bucket{svc=\"b\",le=\"+Inf\"} 2\n"
	    "rpc_duration_seconds_count{svc=\"b\"} 2\n"
	    "rpc_duration_seconds_created{svc=\"a\"} 1.7e9\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 2);
	const struct prom_family *f = prom_find_family(&doc, "rpc_duration_seconds");
	CHECK(f && f->type == PROM_HISTOGRAM && f->nsamples == 11);
	if (!f || f->nsamples != 11) {
		prom_doc_release(&doc);
		return;
	}
	CHECK_EQ_INT(f->samples[0].role, PROM_ROLE_SUM);
	CHECK_STR(f->samples[0].name, "rpc_duration_seconds_sum");
	CHECK_EQ_INT(f->samples[1].role, PROM_ROLE_BUCKET);
	CHECK_STR(f->samples[1].name, "rpc_duration_seconds_bucket");
	CHECK_EQ_DBL(f->samples[1].bound, 0.05);
	CHECK_EQ_DBL(f->samples[2].bound, INFINITY);
	CHECK_EQ_INT(f->samples[7].role, PROM_ROLE_COUNT);
	CHECK_EQ_INT(f->ngroups, 2);
	const struct prom_group *a = &f->groups[0], *b = &f->groups[1];
	CHECK(a->first == &f->samples[0]);
	CHECK_STR(prom_label(a->first, "svc"), "a");
	CHECK_EQ_INT(a->nbuckets, 6);
	static const double bounds[] = {0.05, 0.1, 0.2, 0.5, 1, INFINITY};
	static const double counts[] = {24054, 33444, 100392, 129389, 133988, 144320};
	for (size_t i = 0; i < 6 && i < a->nbuckets; i++) {
		CHECK_EQ_DBL(a->buckets[i].bound, bounds[i]);
		CHECK_EQ_DBL(a->buckets[i].value, counts[i]);
	}
	CHECK(a->has_sum && a->has_count);
	CHECK_EQ_DBL(a->sum, 53423);
	CHECK_EQ_DBL(a->count, 144320);
	CHECK_EQ_INT(b->nbuckets, 2);
	CHECK(!b->has_sum && isnan(b->sum));
	CHECK(b->has_count);
	CHECK_EQ_DBL(b->count, 2);
	for (size_t i = 0; i < f->nsamples; i++)
		CHECK_EQ_INT(f->samples[i].group, i < 8 ? 0 : 1);
	/* the _created series is its own (untyped) family */
	const struct prom_family *c = prom_find_family(&doc, "rpc_duration_seconds_created");
	CHECK(c && c->type == PROM_UNTYPED && c->nsamples == 1);
	/* p50 of series a: rank 72160 in (0.1, 0.2]: 0.1 + 0.1 * 38716 / 66948 */
	CHECK_NEAR(prom_histogram_quantile(0.5, a->buckets, a->nbuckets),
	           0.1 + 0.1 * 38716.0 / 66948.0, 1e-12);
	/* series b: rank 1.8 falls in +Inf: the largest finite bound */
	CHECK_EQ_DBL(prom_histogram_quantile(0.9, b->buckets, b->nbuckets), 1);
	prom_doc_release(&doc);

	expect_bad("# TYPE h histogram\nh_bucket 1\n", 2, "histogram bucket without le label");
	expect_bad("# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 2, "invalid le label value");
	expect_bad("# TYPE h histogram\nh_bucket{le=\"\"} 1\n", 2, "invalid le label value");
	expect_bad("# TYPE h histogram\nh{le=\"1\"} 1\n", 2, "needs a _bucket, _sum or _count");
	/* without TYPE these are plain untyped families */
	CHECK_EQ_INT(parse("h_bucket 1\nh_sum 2\nh 3\n", PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 3);
	CHECK_EQ_INT(doc.families[0].type, PROM_UNTYPED);
	CHECK_STR(doc.families[0].name, "h_bucket");
	prom_doc_release(&doc);
	/* a histogram does not take x_total, a counter does not take x_sum */
	CHECK_EQ_INT(parse("# TYPE h histogram\nh_total 1\n# TYPE c counter\nc_sum 1\n",
	                   PROM_STRICT, &doc, err),
	             0);
	CHECK_EQ_INT(doc.nfamilies, 4);
	CHECK_EQ_INT(prom_find_family(&doc, "h")->nsamples, 0);
	CHECK_EQ_INT(prom_find_family(&doc, "h")->ngroups, 0);
	CHECK(prom_find_family(&doc, "c_sum") != NULL);
	prom_doc_release(&doc);
}

static void test_summary(void)
{
	static const char text[] = "# HELP rpc_latency A summary of the RPC duration in seconds.\n"
	                           "# TYPE rpc_latency summary\n"
	                           "rpc_latency{quantile=\"0.01\"} 3102\n"
	                           "rpc_latency{quantile=\"0.5\"} 4773\n"
	                           "rpc_latency{quantile=\"0.05\"} 3272\n"
	                           "rpc_latency{quantile=\"0.99\"} NaN\n"
	                           "rpc_latency_sum 1.7560473e+07\n"
	                           "rpc_latency_count 2693\n"
	                           "rpc_latency{quantile=\"0.5\",svc=\"b\"} 1\n";
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse(text, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, 1);
	const struct prom_family *f = &doc.families[0];
	CHECK_EQ_INT(f->type, PROM_SUMMARY);
	CHECK_EQ_INT(f->nsamples, 7);
	CHECK_EQ_INT(f->samples[0].role, PROM_ROLE_QUANTILE);
	CHECK_EQ_DBL(f->samples[0].bound, 0.01);
	CHECK_EQ_INT(f->samples[4].role, PROM_ROLE_SUM);
	CHECK_EQ_INT(f->samples[5].role, PROM_ROLE_COUNT);
	CHECK_EQ_INT(f->ngroups, 2);
	const struct prom_group *g = &f->groups[0];
	CHECK_EQ_INT(g->nbuckets, 4);
	if (g->nbuckets == 4) {
		CHECK_EQ_DBL(g->buckets[0].bound, 0.01);
		CHECK_EQ_DBL(g->buckets[1].bound, 0.05);
		CHECK_EQ_DBL(g->buckets[1].value, 3272);
		CHECK_EQ_DBL(g->buckets[2].bound, 0.5);
		CHECK(isnan(g->buckets[3].value));
	}
	CHECK_EQ_DBL(g->sum, 1.7560473e+07);
	CHECK_EQ_DBL(g->count, 2693);
	CHECK_EQ_INT(f->groups[1].nbuckets, 1);
	CHECK_STR(prom_label(f->groups[1].first, "svc"), "b");
	prom_doc_release(&doc);

	expect_bad("# TYPE s summary\ns 1\n", 2, "summary sample without quantile label");
	expect_bad("# TYPE s summary\ns{quantile=\"high\"} 1\n", 2, "invalid quantile label value");
	/* a summary has no _bucket: that is a family of its own */
	CHECK_EQ_INT(parse("# TYPE s summary\ns_bucket{le=\"1\"} 1\n", PROM_STRICT, &doc, err), 0);
	CHECK(prom_find_family(&doc, "s_bucket") != NULL);
	prom_doc_release(&doc);
}

static void test_help_type_order(void)
{
	struct prom_doc doc;
	char err[HR_ERRLEN];

	/* TYPE before HELP, HELP before TYPE, HELP or TYPE alone, no samples */
	CHECK_EQ_INT(parse("# TYPE a counter\n# HELP a Help of a.\na 1\n"
	                   "# HELP b Help of b.\n# TYPE b gauge\nb 2\n"
	                   "# HELP c Declared only.\n"
	                   "# TYPE d SUMMARY\n"
	                   "# TYPE e unknown\ne 5\n"
	                   "# HELP\n# HELP f\n# TYPE g\n# HELP h    \n",
	                   PROM_STRICT, &doc, err),
	             0);
	CHECK_EQ_INT(doc.nfamilies, 5);
	const struct prom_family *f = prom_find_family(&doc, "a");
	CHECK(f && f->type == PROM_COUNTER && f->help && strcmp(f->help, "Help of a.") == 0);
	f = prom_find_family(&doc, "b");
	CHECK(f && f->type == PROM_GAUGE && f->help && strcmp(f->help, "Help of b.") == 0);
	f = prom_find_family(&doc, "c");
	CHECK(f && f->type == PROM_UNTYPED && !f->has_type && f->nsamples == 0);
	f = prom_find_family(&doc, "d");
	CHECK(f && f->type == PROM_SUMMARY && f->help == NULL && f->nsamples == 0);
	f = prom_find_family(&doc, "e");
	CHECK(f && f->type == PROM_UNTYPED && f->has_type && f->nsamples == 1);
	CHECK(prom_find_family(&doc, "f") == NULL);
	CHECK(prom_find_family(&doc, "g") == NULL);
	CHECK(prom_find_family(&doc, "h") == NULL);
	CHECK_STR(doc.families[0].name, "a");
	CHECK_STR(doc.families[2].name, "c");
	prom_doc_release(&doc);

	/* samples of one family need not be contiguous */
	CHECK_EQ_INT(parse("x{a=\"1\"} 1\ny 2\nx{a=\"2\"} 3\n", PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.families[0].nsamples, 2);
	CHECK_EQ_INT(doc.families[0].samples[1].line, 3);
	prom_doc_release(&doc);

	expect_bad("a 1\n# TYPE a counter\n", 2, "TYPE line after the metric's samples");
	expect_bad("# TYPE a counter\n# TYPE a gauge\n", 2, "second TYPE line");
	expect_bad("# TYPE a counter\n# TYPE a counter\n", 2, "second TYPE line");
	expect_bad("# HELP a one\n# HELP a two\n", 2, "second HELP line");
	expect_bad("# TYPE a bogus\n", 1, "unknown metric type");
	expect_bad("# TYPE a counter extra\n", 1, "unknown metric type");
	expect_bad("# TYPE a gaugehistogram\n", 1, "unknown metric type");
	expect_bad("# TYPE a counterandthensome\n", 1, "unknown metric type");
	expect_bad("# HELP 9a text\n", 1, "invalid metric name in HELP line");
	expect_bad("# TYPE a-b counter\n", 1, "invalid metric name in TYPE line");

	/* CRs ending a HELP text are dropped (a HELP of CRs alone is none);
	 * blanks and CRs after a type are ignored */
	CHECK_EQ_INT(parse("# HELP a text\r\r\n# HELP b \r\r\n# TYPE a counter \t\r\n", PROM_STRICT,
	                   &doc, err),
	             0);
	CHECK_EQ_INT(doc.nfamilies, 1);
	CHECK_STR(doc.families[0].help, "text");
	CHECK_EQ_INT(doc.families[0].help_line, 1);
	CHECK_EQ_INT(doc.families[0].type_line, 3);
	CHECK_EQ_INT(doc.families[0].type, PROM_COUNTER);
	prom_doc_release(&doc);

	/* lenient: after a rejected TYPE the family keeps the first one */
	CHECK_EQ_INT(parse("# TYPE a counter\n# TYPE a gauge\na 1\n", 0, &doc, err), 0);
	CHECK_EQ_INT(doc.families[0].type, PROM_COUNTER);
	CHECK_EQ_INT(doc.families[0].nsamples, 1);
	prom_doc_release(&doc);
	/* other comments, including ones that look like directives, are ignored */
	CHECK_EQ_INT(parse("# HELPER text\n#TYPO a counter\n# EOF\n##TYPE a gauge\n", PROM_STRICT,
	                   &doc, err),
	             0);
	CHECK_EQ_INT(doc.nfamilies, 0);
	prom_doc_release(&doc);
}

static void test_duplicates(void)
{
	struct prom_doc doc;
	char err[HR_ERRLEN];

	expect_bad("d{a=\"1\",b=\"2\"} 1\nd{b=\"2\",a=\"1\"} 2\n", 2, "duplicate series");
	expect_bad("d 1 100\nd 2 200\n", 2, "duplicate series");
	expect_bad("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1\"} 1\n", 3,
	           "duplicate series");
	/* the first one is kept */
	CHECK_EQ_INT(parse("d{a=\"1\"} 1\nd{a=\"1\"} 2\nd{a=\"2\"} 3\n", 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 2);
	CHECK_EQ_DBL(doc.families[0].samples[0].value, 1);
	CHECK_EQ_DBL(doc.families[0].samples[1].value, 3);
	prom_doc_release(&doc);
	/* a label set that is a subset, or differs in one value, is another series */
	CHECK_EQ_INT(parse("d{a=\"1\"} 1\nd{a=\"1\",b=\"\"} 2\nd 3\nd{a=\"10\"} 4\n", PROM_STRICT,
	                   &doc, err),
	             0);
	CHECK_EQ_INT(doc.nsamples, 4);
	prom_doc_release(&doc);
	/* le="1" and le="1.0" are distinct series with the same bound: both kept,
	 * merged only by histogram_quantile */
	CHECK_EQ_INT(parse("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"1.0\"} 1\n"
	                   "h_bucket{le=\"+Inf\"} 4\n",
	                   PROM_STRICT, &doc, err),
	             0);
	CHECK_EQ_INT(doc.families[0].groups[0].nbuckets, 3);
	prom_doc_release(&doc);
	/* NaN bounds sort last, NaN counts after numbers of the same bound */
	CHECK_EQ_INT(
	    parse("# TYPE h histogram\nh_bucket{le=\"NaN\"} 1\nh_bucket{le=\"1\"} NaN\n"
	          "h_bucket{le=\"+Inf\"} 4\nh_bucket{le=\"1.0\"} 2\nh_bucket{le=\"nan\"} 0\n",
	          PROM_STRICT, &doc, err),
	    0);
	const struct prom_group *g = &doc.families[0].groups[0];
	CHECK_EQ_INT(g->nbuckets, 5);
	if (g->nbuckets == 5) {
		CHECK_EQ_DBL(g->buckets[0].bound, 1);
		CHECK_EQ_DBL(g->buckets[0].value, 2);
		CHECK_EQ_DBL(g->buckets[1].bound, 1);
		CHECK(isnan(g->buckets[1].value));
		CHECK_EQ_DBL(g->buckets[2].bound, INFINITY);
		CHECK(isnan(g->buckets[3].bound) && isnan(g->buckets[4].bound));
	}
	prom_doc_release(&doc);
}

static void test_malformed(void)
{
	char longname[PROM_MAX_NAME_LEN + 16], text[PROM_MAX_LINE_BYTES + 64];
	struct prom_doc doc;
	char err[HR_ERRLEN];

	expect_bad("m{a=\"b\" 1\n", 1, "expected ',' or '}'");
	expect_bad("m{a=\"b\"\n", 1, "expected ',' or '}'");
	expect_bad("m{a=\"b\",\n", 1, "unterminated label set");
	expect_bad("m{a=b} 1\n", 1, "expected '\"'");
	expect_bad("m{a} 1\n", 1, "expected '='");
	expect_bad("m{1a=\"b\"} 1\n", 1, "invalid label name");
	expect_bad("m{a:b=\"c\"} 1\n", 1, "expected '='");
	expect_bad("m{a=\"b\" c=\"d\"} 1\n", 1, "expected ',' or '}'");
	expect_bad("m{,} 1\n", 1, "invalid label name");
	expect_bad("m{a=\"1\",,} 1\n", 1, "invalid label name");
	expect_bad("m{__name__=\"x\"} 1\n", 1, "__name__ is reserved");
	expect_bad("m{a=\"1\",a=\"2\"} 1\n", 1, "duplicate label name");
	expect_bad("m bar\n", 1, "invalid value");
	expect_bad("m 1 2 3\n", 1, "unexpected text after timestamp");
	expect_bad("9m 1\n", 1, "invalid metric name");
	expect_bad("m-x 1\n", 1, "invalid character in metric name");
	expect_bad("{a=\"b\"} 1\n", 1, "invalid metric name");
	expect_bad("\"quoted\" 1\n", 1, "invalid metric name");
	expect_bad("m{\"a\"=\"b\"} 1\n", 1, "invalid label name");
	/* a NUL byte is just an invalid character */
	CHECK_EQ_INT(prom_parse("m\0x 1\nok 1\n", 11, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.bad_lines, 1);
	CHECK_STR(doc.errors[0].msg, "invalid character in metric name");
	CHECK_EQ_INT(doc.nsamples, 1);
	prom_doc_release(&doc);
	CHECK_EQ_INT(prom_parse("m{a=\"x\0y\"} 1\n# HELP m a\0b\n", 26, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.bad_lines, 2);
	CHECK_STR(doc.errors[0].msg, "label value contains a NUL byte");
	CHECK_STR(doc.errors[1].msg, "HELP text contains a NUL byte");
	prom_doc_release(&doc);
	/* a good line before and after a bad one survive */
	CHECK_EQ_INT(parse("a 1\nb{ 2\nc 3\n", 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 2);
	CHECK_EQ_INT(doc.nfamilies, 2);
	CHECK_STR(doc.families[1].name, "c");
	prom_doc_release(&doc);

	/* bounds of one line */
	memset(longname, 'n', PROM_MAX_NAME_LEN);
	snprintf(longname + PROM_MAX_NAME_LEN, 16, " 1\n");
	CHECK_EQ_INT(parse(longname, PROM_STRICT, &doc, err), 0);
	prom_doc_release(&doc);
	memset(longname, 'n', PROM_MAX_NAME_LEN + 1);
	snprintf(longname + PROM_MAX_NAME_LEN + 1, 15, " 1\n");
	expect_bad(longname, 1, "metric name too long");
	snprintf(text, sizeof(text), "# TYPE %s", longname);
	text[strlen(text) - 3] = '\0';
	strcat(text, " gauge\n");
	expect_bad(text, 1, "metric name too long");

	struct dynbuf b;
	dynbuf_init(&b, 1 << 20);
	dynbuf_addstr(&b, "m{");
	for (int i = 0; i < PROM_MAX_LABELS; i++)
		dynbuf_printf(&b, "l%d=\"v\",", i);
	dynbuf_addstr(&b, "} 1\n");
	CHECK_EQ_INT(parse(b.data, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.families[0].samples[0].nlabels, PROM_MAX_LABELS);
	prom_doc_release(&doc);
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "m{");
	for (int i = 0; i <= PROM_MAX_LABELS; i++)
		dynbuf_printf(&b, "l%d=\"v\",", i);
	dynbuf_addstr(&b, "} 1\n");
	expect_bad(b.data, 1, "too many labels");

	dynbuf_reset(&b);
	dynbuf_addstr(&b, "m{");
	for (int i = 0; i < PROM_MAX_LABEL_NAME_LEN + 1; i++)
		dynbuf_addstr(&b, "l");
	dynbuf_addstr(&b, "=\"v\"} 1\n");
	expect_bad(b.data, 1, "label name too long");

	dynbuf_reset(&b);
	dynbuf_addstr(&b, "m{l=\"");
	for (int i = 0; i < PROM_MAX_LABEL_VALUE_LEN; i++)
		dynbuf_addstr(&b, i % 2 ? "\\n" : "v"); /* escapes count once */
	dynbuf_addstr(&b, "\"} 1\n");
	CHECK_EQ_INT(parse(b.data, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(strlen(doc.families[0].samples[0].labels[0].value), PROM_MAX_LABEL_VALUE_LEN);
	prom_doc_release(&doc);
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "m{l=\"");
	for (int i = 0; i <= PROM_MAX_LABEL_VALUE_LEN; i++)
		dynbuf_addstr(&b, "v");
	dynbuf_addstr(&b, "\"} 1\n");
	expect_bad(b.data, 1, "label value too long");

	dynbuf_reset(&b);
	dynbuf_addstr(&b, "# HELP m ");
	for (int i = 0; i <= PROM_MAX_HELP_LEN; i++)
		dynbuf_addstr(&b, "h");
	dynbuf_addstr(&b, "\n");
	expect_bad(b.data, 1, "HELP text too long");

	/* a line over PROM_MAX_LINE_BYTES: 40 labels of 1700 bytes each */
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "m{");
	for (int i = 0; i < 40; i++) {
		dynbuf_printf(&b, "l%d=\"", i);
		for (int j = 0; j < 1700; j++)
			dynbuf_addstr(&b, "v");
		dynbuf_addstr(&b, "\",");
	}
	dynbuf_addstr(&b, "} 1\n");
	CHECK(b.len > PROM_MAX_LINE_BYTES);
	expect_bad(b.data, 1, "line too long");
	/* a long plain comment is fine */
	dynbuf_reset(&b);
	dynbuf_addstr(&b, "# ");
	for (int i = 0; i < (int)PROM_MAX_LINE_BYTES; i++)
		dynbuf_addstr(&b, "c");
	dynbuf_addstr(&b, "\nm 1\n");
	CHECK_EQ_INT(parse(b.data, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 1);
	prom_doc_release(&doc);
	dynbuf_release(&b);
}

static void test_error_list(void)
{
	struct dynbuf b;
	struct prom_doc doc;
	char err[HR_ERRLEN];

	dynbuf_init(&b, 1 << 20);
	for (int i = 0; i < 40; i++)
		dynbuf_printf(&b, "good%d 1\nbad%d{ 1\n", i, i);
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 40);
	CHECK_EQ_INT(doc.bad_lines, 40);
	CHECK_EQ_INT(doc.nerrors, PROM_MAX_ERRORS);
	CHECK_EQ_INT(doc.nlines, 80);
	for (size_t i = 0; i < doc.nerrors; i++)
		CHECK_EQ_INT(doc.errors[i].line, 2 * i + 2);
	prom_doc_release(&doc);
	CHECK_EQ_INT(prom_parse(b.data, b.len, PROM_STRICT, &doc, err), -1);
	CHECK_STR(err, "line 2: invalid label name");
	dynbuf_release(&b);
}

/* Every sample of `part` has the same name, labels and value in `full`. */
static int subset_of(const struct prom_doc *part, const struct prom_doc *full)
{
	for (size_t i = 0; i < part->nfamilies; i++) {
		const struct prom_family *pf = &part->families[i];
		const struct prom_family *ff = prom_find_family(full, pf->name);
		if (!ff || (pf->has_type && ff->type != pf->type))
			return 0;
		for (size_t j = 0; j < pf->nsamples; j++) {
			const struct prom_sample *s = &pf->samples[j];
			const struct prom_sample *t =
			    prom_find_sample(ff, s->name, s->labels, s->nlabels);
			if (!t || t->nlabels != s->nlabels || t->role != s->role ||
			    !(t->value == s->value || (isnan(t->value) && isnan(s->value))))
				return 0;
		}
	}
	return 1;
}

static void test_truncated(void)
{
	size_t len;
	char *text = read_data("vllm.txt", &len);
	struct prom_doc full, doc;
	char err[HR_ERRLEN];
	int bad_subset = 0, bad_count = 0, bad_strict = 0;

	if (!text)
		return;
	CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &full, err), 0);
	for (size_t cut = 0; cut <= len; cut++) {
		/* an exact-size copy, so reading past the cut is caught by ASan */
		char *part = xmalloc(cut ? cut : 1);
		memcpy(part, text, cut);
		int at_boundary = cut == 0 || text[cut - 1] == '\n';
		size_t ls = cut;
		while (ls > 0 && text[ls - 1] != '\n')
			ls--;
		int comment = !at_boundary && text[ls] == '#' &&
		              !(cut - ls >= 6 && (memcmp(text + ls, "# HELP", 6) == 0 ||
		                                  memcmp(text + ls, "# TYPE", 6) == 0));
		if (prom_parse(part, cut, 0, &doc, err) != 0)
			bad_count++;
		if (!subset_of(&doc, &full))
			bad_subset++;
		if (doc.bad_lines != (at_boundary || comment ? 0u : 1u))
			bad_count++;
		prom_doc_release(&doc);
		int rc = prom_parse(part, cut, PROM_STRICT, &doc, err);
		if (rc != (at_boundary || comment ? 0 : -1))
			bad_strict++;
		if (rc == -1 && !strstr(err, "truncated"))
			bad_strict++;
		prom_doc_release(&doc);
		free(part);
	}
	CHECK_EQ_INT(bad_subset, 0);
	CHECK_EQ_INT(bad_count, 0);
	CHECK_EQ_INT(bad_strict, 0);
	prom_doc_release(&full);
	free(text);

	expect_bad("a 1\nb 2", 2, "no newline at end of input (truncated?)");
	expect_bad("a 1\nb{x=\"1\"} 2 123", 2, "truncated");
	expect_bad("a 1\n# HELP b text", 2, "truncated");
	expect_bad("a 1\n# TYPE b gauge", 2, "truncated");
	CHECK_EQ_INT(parse("a 1\n# EOF", PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nlines, 2);
	prom_doc_release(&doc);
	CHECK_EQ_INT(parse("a 1\n  \t", PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, 1);
	prom_doc_release(&doc);
	CHECK_EQ_INT(parse("a 1\r\n\r", PROM_STRICT, &doc, err), 0);
	prom_doc_release(&doc);
}

static void test_bounds(void)
{
	struct prom_doc doc;
	char err[HR_ERRLEN];
	struct dynbuf b;

	/* over the input bound: refused before reading */
	char *big = xcalloc(PROM_MAX_INPUT_BYTES + 1, 1);
	memset(big, '\n', PROM_MAX_INPUT_BYTES + 1);
	CHECK_EQ_INT(prom_parse(big, PROM_MAX_INPUT_BYTES + 1, 0, &doc, err), -1);
	CHECK(strstr(err, "too large") != NULL);
	CHECK(doc.priv == NULL);
	prom_doc_release(&doc);
	CHECK_EQ_INT(prom_parse(big, PROM_MAX_INPUT_BYTES, PROM_STRICT, &doc, err), 0);
	CHECK_EQ_INT(doc.nlines, PROM_MAX_INPUT_BYTES);
	prom_doc_release(&doc);
	free(big);

	/* too many families: fails in lenient mode too */
	dynbuf_init(&b, PROM_MAX_INPUT_BYTES);
	for (int i = 0; i < PROM_MAX_FAMILIES; i++)
		dynbuf_printf(&b, "f%d 1\n", i);
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nfamilies, PROM_MAX_FAMILIES);
	CHECK(prom_find_family(&doc, "f49999") == &doc.families[PROM_MAX_FAMILIES - 1]);
	prom_doc_release(&doc);
	size_t keep = b.len;
	dynbuf_addstr(&b, "# HELP one_more family\n");
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), -1);
	CHECK(strstr(err, "too many metric families") != NULL);
	CHECK(strncmp(err, "line 50001: ", 12) == 0);
	CHECK(doc.nfamilies == 0 && doc.priv == NULL);
	prom_doc_release(&doc);
	b.len = keep;
	dynbuf_addstr(&b, "f1 2\none_more 1\n"); /* a duplicate first: bad, not fatal */
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), -1);
	CHECK(strncmp(err, "line 50002: too many metric families", 36) == 0);
	prom_doc_release(&doc);
	b.len = keep;
	dynbuf_addstr(&b, "# TYPE one_more gauge\n");
	CHECK_EQ_INT(prom_parse(b.data, b.len, PROM_STRICT, &doc, err), -1);
	CHECK(strstr(err, "too many metric families") != NULL);
	prom_doc_release(&doc);

	/* too many samples */
	dynbuf_reset(&b);
	for (int i = 0; i < PROM_MAX_SAMPLES; i++)
		dynbuf_printf(&b, "s{i=\"%d\"} 1\n", i);
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), 0);
	CHECK_EQ_INT(doc.nsamples, PROM_MAX_SAMPLES);
	prom_doc_release(&doc);
	dynbuf_addstr(&b, "t 1\n");
	CHECK_EQ_INT(prom_parse(b.data, b.len, 0, &doc, err), -1);
	CHECK(strstr(err, "too many samples") != NULL);
	prom_doc_release(&doc);
	dynbuf_release(&b);
}

static const struct prom_family *fam(const struct prom_doc *d, const char *name, int type,
                                     size_t nsamples)
{
	const struct prom_family *f = prom_find_family(d, name);
	tap_ok(f != NULL, "family %s missing", name);
	if (f) {
		tap_ok(f->type == type, "%s: type %d, want %d", name, f->type, type);
		tap_ok(f->nsamples == nsamples, "%s: %zu samples, want %zu", name, f->nsamples,
		       nsamples);
	}
	return f;
}

static void test_pages(void)
{
	size_t len;
	char *text;
	struct prom_doc doc;
	char err[HR_ERRLEN];
	const struct prom_family *f;

	if ((text = read_data("dcgm.txt", &len)) != NULL) {
		CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &doc, err), 0);
		CHECK_EQ_INT(doc.nfamilies, 20);
		CHECK_EQ_INT(doc.nsamples, 40);
		f = fam(&doc, "DCGM_FI_DEV_POWER_USAGE", PROM_GAUGE, 2);
		if (f) {
			CHECK_EQ_DBL(f->samples[0].value, 312.455);
			CHECK_STR(prom_label(&f->samples[1], "UUID"),
			          "GPU-0a1b2c3d-4e5f-6789-abcd-ef0123456789");
			CHECK_STR(prom_label(&f->samples[1], "modelName"), "NVIDIA H100 80GB HBM3");
			CHECK_EQ_INT(f->samples[1].nlabels, 7);
		}
		f = fam(&doc, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", PROM_COUNTER, 2);
		if (f)
			CHECK_EQ_DBL(f->samples[0].value, 118800123456.0);
		prom_doc_release(&doc);
		free(text);
	}
	if ((text = read_data("vllm.txt", &len)) != NULL) {
		CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &doc, err), 0);
		fam(&doc, "python_gc_objects_collected_total", PROM_COUNTER, 3);
		fam(&doc, "vllm:num_requests_running", PROM_GAUGE, 1);
		fam(&doc, "vllm:prompt_tokens_total", PROM_COUNTER, 1);
		fam(&doc, "vllm:prompt_tokens_created", PROM_GAUGE, 1);
		f = fam(&doc, "vllm:time_to_first_token_seconds", PROM_HISTOGRAM, 17);
		if (f && f->ngroups == 1) {
			const struct prom_group *g = &f->groups[0];
			CHECK_EQ_INT(g->nbuckets, 15);
			CHECK_EQ_DBL(g->count, 260);
			CHECK_EQ_DBL(g->sum, 21.34);
			CHECK_STR(prom_label(g->first, "model_name"),
			          "meta-llama/Llama-3.1-8B-Instruct");
			/* hand-computed: p50 rank 130 in (0.06, 0.08]: 0.06 + 0.02 * 10/60 */
			CHECK_NEAR(prom_histogram_quantile(0.5, g->buckets, g->nbuckets),
			           0.06 + 0.02 * 10.0 / 60.0, 1e-12);
			/* p90 rank 234 in (0.1, 0.25]: 0.1 + 0.15 * 34/40 */
			CHECK_NEAR(prom_histogram_quantile(0.9, g->buckets, g->nbuckets), 0.2275,
			           1e-12);
			/* p99 rank 257.4 in (0.75, 1]: 0.75 + 0.25 * 2.4/3 */
			CHECK_NEAR(prom_histogram_quantile(0.99, g->buckets, g->nbuckets), 0.95,
			           1e-12);
		}
		f = fam(&doc, "vllm:time_to_first_token_seconds_created", PROM_GAUGE, 1);
		f = fam(&doc, "vllm:cache_config_info", PROM_GAUGE, 1);
		if (f)
			CHECK_STR(prom_label(&f->samples[0], "num_gpu_blocks"), "27458");
		f = fam(&doc, "process_resident_memory_bytes", PROM_GAUGE, 1);
		if (f)
			CHECK_EQ_DBL(f->samples[0].value, 3.21478656e+09);
		prom_doc_release(&doc);
		free(text);
	}
	if ((text = read_data("sglang.txt", &len)) != NULL) {
		CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &doc, err), 0);
		fam(&doc, "sglang:token_usage", PROM_GAUGE, 1);
		f = fam(&doc, "sglang:time_to_first_token_seconds", PROM_HISTOGRAM, 21);
		if (f && f->ngroups == 1) {
			const struct prom_group *g = &f->groups[0];
			CHECK_EQ_DBL(g->sum, 45);
			/* p50: rank 50 is exactly the count of le=0.4 */
			CHECK_NEAR(prom_histogram_quantile(0.5, g->buckets, g->nbuckets), 0.4,
			           1e-12);
		}
		f = fam(&doc, "sglang:queue_time_seconds", PROM_HISTOGRAM, 9);
		if (f && f->ngroups == 1) {
			const struct prom_group *g = &f->groups[0];
			/* first bucket le=0 holds the rank: the answer is 0 */
			CHECK_EQ_DBL(prom_histogram_quantile(0.2, g->buckets, g->nbuckets), 0);
			/* p50 rank 50 in (0, 0.1]: 0.1 * 10/30 */
			CHECK_NEAR(prom_histogram_quantile(0.5, g->buckets, g->nbuckets), 0.1 / 3,
			           1e-12);
		}
		prom_doc_release(&doc);
		free(text);
	}
	if ((text = read_data("tgi.txt", &len)) != NULL) {
		CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &doc, err), 0);
		f = fam(&doc, "tgi_request_count", PROM_COUNTER, 1);
		f = fam(&doc, "tgi_batch_forward_duration", PROM_HISTOGRAM, 10);
		if (f) {
			CHECK_EQ_INT(f->ngroups, 2);
			if (f->ngroups == 2) {
				CHECK_STR(prom_label(f->groups[1].first, "method"), "decode");
				CHECK_EQ_DBL(f->groups[1].sum, 400.25);
				CHECK_EQ_INT(f->groups[1].nbuckets, 3);
			}
		}
		f = fam(&doc, "tgi_request_queue_duration", PROM_HISTOGRAM, 8);
		if (f && f->ngroups == 1)
			CHECK_EQ_DBL(f->groups[0].buckets[0].bound, 0.00015000000000000001);
		prom_doc_release(&doc);
		free(text);
	}
	if ((text = read_data("trtllm.txt", &len)) != NULL) {
		CHECK_EQ_INT(prom_parse(text, len, PROM_STRICT, &doc, err), 0);
		f = fam(&doc, "nv_trt_llm_request_metrics", PROM_GAUGE, 5);
		if (f) {
			struct prom_label m = {"request_type", "active"};
			const struct prom_sample *s = prom_find_sample(f, NULL, &m, 1);
			CHECK(s && s->value == 7);
		}
		f = fam(&doc, "nv_inference_first_response_histogram_ms", PROM_HISTOGRAM, 7);
		if (f && f->ngroups == 1) {
			const struct prom_group *g = &f->groups[0];
			/* _count and _sum came first: group still collects them */
			CHECK_EQ_DBL(g->count, 1024);
			CHECK_EQ_DBL(g->sum, 118784);
			/* p50 rank 512 == count of le=100: 0 + 100 * 512/512 */
			CHECK_EQ_DBL(prom_histogram_quantile(0.5, g->buckets, g->nbuckets), 100);
		}
		fam(&doc, "nv_cpu_utilization", PROM_GAUGE, 1);
		prom_doc_release(&doc);
		free(text);
	}
}

static double hq(double q, const double *bounds, const double *counts, size_t n)
{
	struct prom_bucket b[32];
	for (size_t i = 0; i < n; i++) {
		b[i].bound = bounds[i];
		b[i].value = counts[i];
	}
	return prom_histogram_quantile(q, b, n);
}

static void test_quantile(void)
{
	static const double le[] = {0.1, 0.2, 0.4, 0.8, INFINITY};
	static const double cnt[] = {10, 30, 70, 95, 100};

	/* rank 50 in (0.2, 0.4]: 0.2 + 0.2 * (50 - 30) / 40 */
	CHECK_NEAR(hq(0.5, le, cnt, 5), 0.3, 1e-12);
	/* rank 5 in the first bucket: from 0: 0.1 * 5/10 */
	CHECK_NEAR(hq(0.05, le, cnt, 5), 0.05, 1e-12);
	/* rank 95 is exactly the top of (0.4, 0.8] */
	CHECK_NEAR(hq(0.95, le, cnt, 5), 0.8, 1e-12);
	/* rank 99 falls in +Inf: the largest finite bound */
	CHECK_EQ_DBL(hq(0.99, le, cnt, 5), 0.8);
	CHECK_EQ_DBL(hq(1, le, cnt, 5), 0.8);
	/* q = 0: rank 0 in the first bucket: 0 */
	CHECK_EQ_DBL(hq(0, le, cnt, 5), 0);
	/* out-of-range q */
	CHECK_EQ_DBL(hq(-0.1, le, cnt, 5), -INFINITY);
	CHECK_EQ_DBL(hq(1.1, le, cnt, 5), INFINITY);
	CHECK(isnan(hq(NAN, le, cnt, 5)));
	/* no +Inf bucket, one bucket, no buckets, zero observations */
	CHECK(isnan(hq(0.5, le, cnt, 4)));
	CHECK(isnan(hq(0.5, le + 4, cnt + 4, 1)));
	CHECK(isnan(prom_histogram_quantile(0.5, NULL, 0)));
	static const double zero[] = {0, 0, 0, 0, 0};
	CHECK(isnan(hq(0.5, le, zero, 5)));
	/* q = 0 with an empty first bucket: 0 * (0/0), NaN as in Prometheus */
	static const double late[] = {0, 0, 10, 10, 10};
	CHECK(isnan(hq(0, le, late, 5)));
	CHECK_NEAR(hq(0.5, le, late, 5), 0.3, 1e-12);
	/* unsorted input gives the same answer */
	static const double le_u[] = {0.8, INFINITY, 0.1, 0.4, 0.2};
	static const double cnt_u[] = {95, 100, 10, 70, 30};
	CHECK_NEAR(hq(0.5, le_u, cnt_u, 5), 0.3, 1e-12);
	/* non-monotonic counts are forced up: 70 after 80 becomes 80 */
	static const double cnt_nm[] = {10, 80, 70, 95, 100};
	/* rank 50 in (0.1, 0.2]: 0.1 + 0.1 * 40/70 */
	CHECK_NEAR(hq(0.5, le, cnt_nm, 5), 0.1 + 0.1 * 40.0 / 70.0, 1e-12);
	/* rank 85 in (0.4, 0.8] (counts 80 -> 95): 0.4 + 0.4 * 5/15 */
	CHECK_NEAR(hq(0.85, le, cnt_nm, 5), 0.4 + 0.4 * 5.0 / 15.0, 1e-12);
	/* equal bounds are merged by adding their counts */
	static const double le_d[] = {1, 1, 2, INFINITY};
	static const double cnt_d[] = {2, 3, 10, 10};
	/* merged: le 1 -> 5, le 2 -> 10; rank 7.5 in (1, 2]: 1 + 2.5/5 */
	CHECK_NEAR(hq(0.75, le_d, cnt_d, 4), 1.5, 1e-12);
	/* a first bound <= 0 holding the rank is returned as is */
	static const double le_neg[] = {-1, 0, 1, INFINITY};
	static const double cnt_neg[] = {5, 6, 10, 10};
	CHECK_EQ_DBL(hq(0.2, le_neg, cnt_neg, 4), -1);
	/* rank 5.5 in (-1, 0]: -1 + 1 * 0.5/1 */
	CHECK_NEAR(hq(0.55, le_neg, cnt_neg, 4), -0.5, 1e-12);
	/* only the +Inf bucket and one other */
	static const double le2[] = {5, INFINITY};
	static const double cnt2[] = {4, 8};
	CHECK_NEAR(hq(0.25, le2, cnt2, 2), 2.5, 1e-12);
	CHECK_EQ_DBL(hq(0.75, le2, cnt2, 2), 5);
	/* NaN bounds are ignored */
	static const double le_nan[] = {0.1, NAN, 0.2, 0.4, 0.8, INFINITY};
	static const double cnt_nan[] = {10, 1000, 30, 70, 95, 100};
	CHECK_NEAR(hq(0.5, le_nan, cnt_nan, 6), 0.3, 1e-12);
	/* the input is not modified */
	struct prom_bucket b[3] = {{INFINITY, 4}, {1, 1}, {1, 1}};
	prom_histogram_quantile(0.5, b, 3);
	CHECK_EQ_DBL(b[0].bound, INFINITY);
	CHECK_EQ_DBL(b[1].value, 1);
}

static void test_labels_hash(void)
{
	struct prom_doc doc;
	char err[HR_ERRLEN];

	CHECK_EQ_INT(parse("a{x=\"1\",y=\"2\"} 1\nb{y=\"2\",x=\"1\"} 1\nc{x=\"1\",y=\"3\"} 1\n"
	                   "d{x=\"1\",y=\"2\",le=\"5\"} 1\ne{x=\"1\"} 1\nf{x=\"1\",y=\"\"} 1\n",
	                   PROM_STRICT, &doc, err),
	             0);
	const struct prom_sample *a = &doc.families[0].samples[0], *b = &doc.families[1].samples[0],
	                         *c = &doc.families[2].samples[0], *d = &doc.families[3].samples[0],
	                         *e = &doc.families[4].samples[0], *f = &doc.families[5].samples[0];
	CHECK(prom_labels_hash(a, NULL) == prom_labels_hash(b, NULL));
	CHECK(prom_labels_equal(a, b, NULL));
	CHECK(!prom_labels_equal(a, c, NULL));
	CHECK(prom_labels_hash(a, NULL) != prom_labels_hash(c, NULL));
	CHECK(!prom_labels_equal(a, d, NULL));
	CHECK(prom_labels_equal(a, d, "le"));
	CHECK(prom_labels_equal(d, a, "le"));
	CHECK(prom_labels_hash(a, "le") == prom_labels_hash(d, "le"));
	CHECK(prom_labels_equal(a, c, "y"));
	CHECK(!prom_labels_equal(a, e, NULL));
	CHECK(!prom_labels_equal(e, a, NULL));
	CHECK(!prom_labels_equal(e, f, NULL));
	CHECK(prom_labels_hash(e, NULL) != prom_labels_hash(f, NULL));
	prom_doc_release(&doc);
}

int main(void)
{
	test_basic();
	test_escapes();
	test_values();
	test_timestamps();
	test_whitespace();
	test_histogram();
	test_summary();
	test_help_type_order();
	test_duplicates();
	test_malformed();
	test_error_list();
	test_truncated();
	test_bounds();
	test_pages();
	test_quantile();
	test_labels_hash();
	return tap_done();
}
