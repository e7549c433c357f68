/* apiparse.h - the pure parsing of the REST API's paths and query strings
 * (route patterns with {id} and {name}, integers, times, label selectors,
 * sort keys, list cursors, id lists, real numbers): no connection, no
 * store, so that tests/fuzz/fuzz_apiparse.c can drive every parser with
 * hostile input. api.c, api_history.c and history.c call these.
 */
#ifndef HR_APIPARSE_H
#define HR_APIPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "hrlimits.h"

/* Strict decimal integer in [lo, hi] (digits only, no sign or spaces): 0,
 * or -1. */
int parse_int(const char *s, long long lo, long long hi, long long *out);

/* Matches url against a route pattern; 1 or 0. On "{id}" parses a run id
 * into *id (a non-numeric segment still matches, with id 0, so the handler
 * answers 404); on "{name}" copies a baseline's name into name
 * (HR_MAX_LABEL_LEN + 1 bytes, may be NULL): 1..HR_MAX_LABEL_LEN of
 * [A-Za-z0-9._-], or "" when the segment has anything else. One trailing
 * slash is tolerated. */
int api_match(const char *pat, const char *url, int64_t *id, char *name);

/* "2026-12-01T10:00:00Z" (optionally with .fff), "2026-12-01", or Unix
 * seconds, into epoch milliseconds in [0, 253402300800000): 0, or -1. */
int api_parse_time(const char *s, int64_t *ms);

/* A number in [lo, hi] (strtod's syntax, nothing after it): 0, or -1. */
int api_parse_real(const char *s, double lo, double hi, double *out);

/* A comma-separated list of 1..max run ids: the count, or -1. */
int api_parse_id_list(const char *s, int64_t *ids, int max);

/* A label selector of a query: key=value, key!=value, key (present), !key. */
enum sel_op { SEL_EQ, SEL_NE, SEL_PRESENT, SEL_ABSENT };
struct label_sel {
	int op;
	char key[HR_MAX_LABEL_LEN + 1];
	char value[HR_MAX_LABEL_LEN * 16 + 1];
};

/* Parses one label selector from a query argument: key "label.K" or
 * "label.K!" with value V, or NULL (no '='). Returns 0 or -1 (message in
 * err, HR_ERRLEN bytes). */
int history_parse_selector(const char *arg_key, const char *value, struct label_sel *out,
			   char *err);

/* The sort keys of a run list. */
enum { SORT_ID = 0, SORT_NAME, SORT_METRIC, SORT_VERDICT, SORT_VALID };

/* "METRIC.STAT" into its parts (the metric must exist, the stat must be
 * one it has): *metric the catalogue's tag, *stat an index into
 * metric_stat_names; mbuf (mlen bytes) is scratch. 0 or -1. */
int api_parse_metric_stat(const char *s, const char **metric, char *mbuf, size_t mlen,
			  int *stat);

/* A sort argument: id, created_at, name or METRIC.STAT, with a leading '-'
 * for descending. 0 or -1. */
struct sort_key {
	int by;            /* SORT_* */
	int desc;
	const char *metric; /* SORT_METRIC: a metric_catalog tag */
	int stat;           /* SORT_METRIC: index into metric_stat_names */
};
int api_parse_sort(const char *s, struct sort_key *out);

/* A run list's cursor (a previous answer's next_cursor): "i:ID" (sort by
 * id), "a:HEXNAME:ID" (by name), "v:VALUE:ID" or "n:ID" (by a metric, n:
 * runs without the figure). It must belong to sort_by. 0 or -1. */
struct list_cursor {
	char kind;
	double v;
	char name[HR_MAX_NAME_LEN + 1];
	int64_t id;
};
int api_parse_cursor(const char *c, int sort_by, struct list_cursor *out);

#endif
