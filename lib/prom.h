/* prom.h - a defensive parser of the Prometheus text exposition format
 * (version 0.0.4), whole-buffer, with bounded everything.
 *
 * Input: one scrape body (at most PROM_MAX_INPUT_BYTES). Lines end in LF;
 * a CR before the LF is dropped. Recognised lines:
 *   blank (spaces/tabs only)               ignored
 *   # HELP name text                       help of family `name` (escapes \\ and \n)
 *   # TYPE name counter|gauge|histogram|summary|untyped
 *   # anything else                        a comment, ignored
 *   name{label="value",...} value [timestamp_ms]
 * Label values take the escapes \\, \" and \n, must be valid UTF-8, and a
 * label set may end with a comma. Values are decimal floats with optional
 * exponent, or NaN, +Inf, -Inf (Inf/Infinity, any case). Timestamps are
 * int64 milliseconds. Blanks (space, tab) may surround `{`, `}`, `=` and
 * `,`. A UTF-8 byte-order mark at the very start is skipped.
 *
 * Families: a sample belongs to the family of its exact name when one
 * exists; otherwise x_sum / x_count belong to summary x, x_bucket / x_sum /
 * x_count to histogram x (as declared by # TYPE before the sample); any
 * other name starts an untyped family of its own. Histogram buckets need a
 * numeric `le` label, summary quantiles a numeric `quantile` label; each
 * histogram or summary family is also split into series (groups: the label
 * set without `le` / `quantile`) with their buckets sorted by bound.
 *
 * Bad lines: syntax errors, bounds exceeded, a second HELP or TYPE for a
 * family, a TYPE after the family's samples, a series (name + label set,
 * in any order) seen before, and a last line without its newline (a cut
 * off body would otherwise yield a wrong value; a plain comment there is
 * ignored). In lenient mode (the default) each bad line is skipped and
 * counted, and the first PROM_MAX_ERRORS are kept with their line numbers;
 * a line is taken whole or not at all. With PROM_STRICT the first bad line
 * fails the parse. Either mode fails on an input over the size bound and
 * on too many families or samples.
 *
 * Ownership: prom_parse copies everything it keeps; the input may be freed
 * afterwards. Every pointer reachable from a prom_doc (families, samples,
 * labels, groups, buckets, strings) is owned by the doc and valid until
 * prom_doc_release. The doc is immutable after parsing, so several threads
 * may read one doc at once.
 *
 * Numbers are read with strtod, which needs the "C" LC_NUMERIC locale (the
 * programs never call setlocale).
 */
#ifndef HR_PROM_H
#define HR_PROM_H

#include <stddef.h>
#include <stdint.h>

/* Bounds (candidates for limits.h; documented in docs/prometheus.md). */
#define PROM_MAX_INPUT_BYTES (8u << 20) /* one scrape body */
#define PROM_MAX_LINE_BYTES (64u << 10) /* one line, without its newline */
#define PROM_MAX_NAME_LEN 256           /* a metric name */
#define PROM_MAX_LABEL_NAME_LEN 128     /* a label name */
#define PROM_MAX_LABEL_VALUE_LEN 4096   /* a label value, after unescaping */
#define PROM_MAX_LABELS 64              /* labels of one sample */
#define PROM_MAX_HELP_LEN 4096          /* a HELP text, after unescaping */
#define PROM_MAX_NUMBER_LEN 63          /* the text of a value or timestamp */
#define PROM_MAX_FAMILIES 50000         /* families of one document */
#define PROM_MAX_SAMPLES 200000         /* samples of one document */
#define PROM_MAX_ERRORS 16              /* bad-line messages kept in a doc */

/* prom_parse flags */
#define PROM_STRICT 1u /* fail on the first bad line instead of skipping it */

enum prom_type {
	PROM_UNTYPED = 0,
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
	PROM_SUMMARY,
};

/* What a sample is within its family. */
enum prom_role {
	PROM_ROLE_VALUE = 0, /* counter, gauge or untyped sample */
	PROM_ROLE_BUCKET,    /* histogram x_bucket{le=...} */
	PROM_ROLE_SUM,       /* histogram or summary x_sum */
	PROM_ROLE_COUNT,     /* histogram or summary x_count */
	PROM_ROLE_QUANTILE,  /* summary x{quantile=...} */
};

#define PROM_NO_GROUP ((size_t)-1)

struct prom_label {
	const char *name;
	const char *value; /* unescaped, NUL-terminated, valid UTF-8 */
};

struct prom_sample {
	const char *name;                /* the series name as written, e.g. "x_bucket" */
	const struct prom_label *labels; /* as written, `le` / `quantile` included */
	size_t nlabels;
	double value;
	int64_t timestamp_ms; /* 0 when has_timestamp is 0 */
	int has_timestamp;
	int role;     /* enum prom_role */
	double bound; /* le (BUCKET) or quantile (QUANTILE); NaN otherwise */
	size_t group; /* histogram/summary: index into family->groups; else PROM_NO_GROUP */
	size_t line;  /* 1-based line number in the input */
};

/* One histogram bucket (bound = le, value = cumulative count) or one
 * summary quantile (bound = quantile, value = its value). */
struct prom_bucket {
	double bound;
	double value;
};

/* One series of a histogram or summary family. */
struct prom_group {
	const struct prom_sample *first;   /* its first sample: labels (skip le/quantile) */
	const struct prom_bucket *buckets; /* sorted by bound (NaN bounds last) */
	size_t nbuckets;
	double sum, count; /* NaN when absent */
	int has_sum, has_count;
};

struct prom_family {
	const char *name;
	const char *help;                  /* NULL when no HELP line */
	int type;                          /* enum prom_type; PROM_UNTYPED when no TYPE line */
	int has_type;                      /* a TYPE line was seen */
	size_t help_line, type_line;       /* where the HELP / TYPE line was; 0: none */
	const struct prom_sample *samples; /* in input order */
	size_t nsamples;
	const struct prom_group *groups; /* histogram and summary families only */
	size_t ngroups;
};

struct prom_error {
	size_t line;
	char msg[120];
};

struct prom_doc {
	const struct prom_family *families; /* in order of first mention */
	size_t nfamilies;
	size_t nsamples;  /* total over the families */
	size_t nlines;    /* lines seen (a final line without newline counts) */
	size_t bad_lines; /* lines skipped (lenient mode) */
	struct prom_error errors[PROM_MAX_ERRORS]; /* the first bad lines */
	size_t nerrors;                            /* min(bad_lines, PROM_MAX_ERRORS) */
	struct prom_doc_priv *priv;                /* storage; internal */
};

/* Parses text[0..len) (not necessarily NUL-terminated) into *doc, which
 * need not be initialised. Returns 0, or -1 with "line N: reason" (or the
 * bound that was exceeded) in err (HR_ERRLEN bytes, may be NULL); on -1 the
 * doc is empty but still safe to release. Lenient-mode problems do not
 * fail: see doc->bad_lines and doc->errors. */
int prom_parse(const char *text, size_t len, unsigned flags, struct prom_doc *doc, char *err);
/* Frees everything the doc owns and empties it; safe on an empty doc and
 * twice in a row. */
void prom_doc_release(struct prom_doc *doc);

/* The family named exactly `name`, or NULL. O(1). */
const struct prom_family *prom_find_family(const struct prom_doc *doc, const char *name);
/* The value of label `name` of s, or NULL. */
const char *prom_label(const struct prom_sample *s, const char *name);
/* The first sample of f whose name equals `name` (any name when NULL) and
 * whose labels include every pair of match[0..nmatch) (other labels may be
 * present), or NULL. */
const struct prom_sample *prom_find_sample(const struct prom_family *f, const char *name,
                                           const struct prom_label *match, size_t nmatch);
/* "counter", "gauge", "histogram", "summary" or "untyped". */
const char *prom_type_name(int type);

/* Order-independent hash of the label set of s without the label named
 * skip (NULL: skip none), and the matching equality test. */
uint64_t prom_labels_hash(const struct prom_sample *s, const char *skip);
int prom_labels_equal(const struct prom_sample *a, const struct prom_sample *b, const char *skip);

/* The q-quantile (0 <= q <= 1) of a histogram given by its cumulative
 * buckets, estimated as Prometheus' histogram_quantile() does: buckets
 * sorted by bound, equal bounds merged, counts forced monotonic; NaN when
 * q is NaN, there are fewer than two buckets, the largest bound is not
 * +Inf or the total count is 0 (or not a number); -Inf for q < 0, +Inf for
 * q > 1; the second-largest bound when the rank falls in the +Inf bucket;
 * the first bound when the rank falls in the first bucket and that bound
 * is <= 0; otherwise linear interpolation inside the bucket, which starts
 * at 0 for the first bucket. Buckets with a NaN bound are ignored. Does not
 * modify b. */
double prom_histogram_quantile(double q, const struct prom_bucket *b, size_t n);

#endif
