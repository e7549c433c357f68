/* prom.c - Prometheus text format 0.0.4 parser (see prom.h).
 *
 * One pass over the lines. Each line is checked completely before anything
 * is kept, so a bad line leaves no trace (lenient mode) and a good one is
 * copied into the document's arena. Families and series are found through
 * open-addressing hash tables, so adversarial input stays linear. At the
 * end the samples are regrouped per family into one array and histogram /
 * summary series are built.
 */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- string arena: stable pointers, freed at once ---- */

#define ARENA_BLOCK 65536

struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	char data[];
};

/* Strings are at most a few KiB (the bounds of prom.h), so a block always
 * has room for one; a partly used block is left behind when it has not. */
static char *arena_strndup(struct arena_blk **head, const char *s, size_t n)
{
	struct arena_blk *b = *head;

	if (!b || b->cap - b->used < n + 1) {
		size_t cap = n + 1 > ARENA_BLOCK ? n + 1 : ARENA_BLOCK;
		b = xmalloc(sizeof(*b) + cap);
		b->next = *head;
		b->used = 0;
		b->cap = cap;
		*head = b;
	}
	char *p = b->data + b->used;
	memcpy(p, s, n);
	p[n] = '\0';
	b->used += n + 1;
	return p;
}

static void arena_free(struct arena_blk *b)
{
	while (b) {
		struct arena_blk *next = b->next;
		free(b);
		b = next;
	}
}

/* ---- hashing ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* One label pair; 0xff never occurs in names or valid UTF-8, so it
 * separates unambiguously. Summed, so the set hash ignores order. */
static uint64_t pair_hash(const char *n, size_t nl, const char *v, size_t vl)
{
	uint64_t h = fnv(FNV_INIT, n, nl);
	h = fnv(h, "\xff", 1);
	return mix64(fnv(h, v, vl));
}

/* Open addressing over size_t slots holding index + 1 (0 = empty). */
struct table {
	size_t *slot;
	uint64_t *hash;
	size_t cap; /* power of two */
	size_t n;
};

static void table_free(struct table *t)
{
	free(t->slot);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

static void table_insert_raw(struct table *t, uint64_t h, size_t idx)
{
	size_t m = t->cap - 1, i = (size_t)h & m;
	while (t->slot[i])
		i = (i + 1) & m;
	t->slot[i] = idx + 1;
	t->hash[i] = h;
}

static void table_insert(struct table *t, uint64_t h, size_t idx)
{
	if ((t->n + 1) * 2 > t->cap) {
		struct table nt;
		nt.cap = t->cap ? t->cap * 2 : 64;
		nt.slot = xcalloc(nt.cap, sizeof(*nt.slot));
		nt.hash = xcalloc(nt.cap, sizeof(*nt.hash));
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i])
				table_insert_raw(&nt, t->hash[i], t->slot[i] - 1);
		free(t->slot);
		free(t->hash);
		t->slot = nt.slot;
		t->hash = nt.hash;
		t->cap = nt.cap;
	}
	table_insert_raw(t, h, idx);
	t->n++;
}

/* Iterate the indices stored under hash h: *pos starts at SIZE_MAX. */
static int table_next(const struct table *t, uint64_t h, size_t *pos, size_t *idx)
{
	if (!t->cap)
		return 0;
	size_t m = t->cap - 1;
	size_t i = *pos == SIZE_MAX ? (size_t)h & m : (*pos + 1) & m;
	for (; t->slot[i]; i = (i + 1) & m) {
		if (t->hash[i] == h) {
			*pos = i;
			*idx = t->slot[i] - 1;
			return 1;
		}
	}
	return 0;
}

/* ---- the document's private storage ---- */

struct prom_doc_priv {
	struct arena_blk *arena;
	struct prom_family *families;
	struct prom_sample *samples;
	struct prom_label *labels;
	struct prom_group *groups;
	struct prom_bucket *buckets;
	struct table fam_index; /* name hash -> family */
};

/* ---- parser state ---- */

struct tfamily {
	const char *name; /* arena */
	size_t nlen;
	const char *help; /* arena or NULL */
	int type, has_type;
	size_t nsamples;
	size_t help_line, type_line;
};

struct tsample {
	const char *name; /* arena */
	size_t fam;
	size_t lab0, nlab; /* range in p->labs */
	double value, bound;
	int64_t ts;
	int has_ts, role;
	size_t line;
};

struct clabel {
	const char *name;
	size_t nlen;
	const char *value; /* in the scratch buffer */
	size_t vlen;
};

/* A sample line, checked but not yet kept. */
struct cand {
	const char *name;
	size_t nlen;
	struct clabel lab[PROM_MAX_LABELS];
	size_t nlab;
	double value;
	int64_t ts;
	int has_ts;
};

struct parser {
	struct prom_doc_priv *priv;
	struct tfamily *fams;
	size_t nfams, capfams;
	struct tsample *smp;
	size_t nsmp, capsmp;
	struct prom_label *labs;
	size_t nlabs, caplabs;
	struct table series; /* series hash -> sample */
	char *scratch;       /* unescaped label values / help of the current line */
	struct cand cand;
	const char *fatal; /* a bound on the whole document was hit */
	size_t lineno;     /* the current line, 1-based */
};

/* ---- character classes ---- */

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_mname_char(char c)
{
	return is_alpha_(c) || is_digit(c) || c == ':';
}

static int is_lname_char(char c)
{
	return is_alpha_(c) || is_digit(c);
}

static const char *skip_blanks(const char *s, const char *e)
{
	while (s < e && is_blank(*s))
		s++;
	return s;
}

static int utf8_valid(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t k;
		unsigned cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			k = 2;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 3;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (n - i < k)
			return 0;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		i += k;
	}
	return 1;
}

/* ---- numbers ---- */

static int ieq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a, y = *b;
		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (x != y)
			return 0;
	}
	return *a == *b;
}

/* A float as 0.0.4 exporters write it. Returns 0 or -1. */
static int parse_float(const char *s, size_t n, double *out)
{
	char buf[PROM_MAX_NUMBER_LEN + 1];
	const char *t;
	int neg = 0, sign = 0;
	size_t digits = 0;

	if (n == 0 || n > PROM_MAX_NUMBER_LEN)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	t = buf;
	if (*t == '+' || *t == '-') {
		neg = *t == '-';
		sign = 1;
		t++;
	}
	if (ieq(t, "inf") || ieq(t, "infinity")) {
		*out = neg ? -INFINITY : INFINITY;
		return 0;
	}
	if (ieq(t, "nan")) {
		if (sign)
			return -1;
		*out = NAN;
		return 0;
	}
	while (is_digit(*t)) {
		t++;
		digits++;
	}
	if (*t == '.') {
		t++;
		while (is_digit(*t)) {
			t++;
			digits++;
		}
	}
	if (!digits)
		return -1;
	if (*t == 'e' || *t == 'E') {
		t++;
		if (*t == '+' || *t == '-')
			t++;
		if (!is_digit(*t))
			return -1;
		while (is_digit(*t))
			t++;
	}
	if (*t)
		return -1;
	char *end;
	*out = strtod(buf, &end);
	return end == buf + n ? 0 : -1;
}

static int parse_int64(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;
	int neg = 0;
	uint64_t v = 0, lim;

	if (n == 0 || n > PROM_MAX_NUMBER_LEN)
		return -1;
	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i++;
	}
	if (i == n)
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (neg)
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return 0;
}

/* ---- families ---- */

static uint64_t name_hash(const char *s, size_t n)
{
	return mix64(fnv(FNV_INIT, s, n));
}

static long find_fam(const struct parser *p, const char *name, size_t n)
{
	uint64_t h = name_hash(name, n);
	size_t pos = SIZE_MAX, idx;
	while (table_next(&p->priv->fam_index, h, &pos, &idx)) {
		const struct tfamily *f = &p->fams[idx];
		if (f->nlen == n && memcmp(f->name, name, n) == 0)
			return (long)idx;
	}
	return -1;
}

/* Returns the index, or -1 (p->fatal set) at the family bound. */
static long add_fam(struct parser *p, const char *name, size_t n)
{
	if (p->nfams >= PROM_MAX_FAMILIES) {
		p->fatal = "too many metric families (bound " STR(PROM_MAX_FAMILIES) ")";
		return -1;
	}
	if (p->nfams == p->capfams) {
		p->capfams = p->capfams ? p->capfams * 2 : 64;
		p->fams = xrealloc(p->fams, p->capfams * sizeof(*p->fams));
	}
	struct tfamily *f = &p->fams[p->nfams];
	f->name = arena_strndup(&p->priv->arena, name, n);
	f->nlen = n;
	f->help = NULL;
	f->type = PROM_UNTYPED;
	f->has_type = 0;
	f->nsamples = 0;
	f->help_line = f->type_line = 0;
	table_insert(&p->priv->fam_index, name_hash(name, n), p->nfams);
	return (long)p->nfams++;
}

/* ---- line parsing ---- */

#define TRUNCATED "no newline at end of input (truncated?)"

/* Reads a metric name at s; returns its end (== s when none). */
static const char *scan_mname(const char *s, const char *e)
{
	if (s >= e || !(is_alpha_(*s) || *s == ':'))
		return s;
	while (s < e && is_mname_char(*s))
		s++;
	return s;
}

static int has_suffix(const char *s, size_t n, const char *suf, size_t *base)
{
	size_t k = strlen(suf);
	if (n > k && memcmp(s + n - k, suf, k) == 0) {
		*base = n - k;
		return 1;
	}
	return 0;
}

static const char *parse_labels(struct parser *p, const char **sp, const char *e)
{
	struct cand *c = &p->cand;
	const char *s = *sp;
	size_t voff = 0;

	s++; /* '{' */
	for (;;) {
		s = skip_blanks(s, e);
		if (s >= e)
			return "unterminated label set";
		if (*s == '}') {
			s++;
			break;
		}
		if (!is_alpha_(*s))
			return "invalid label name";
		const char *t = s;
		while (t < e && is_lname_char(*t))
			t++;
		size_t nlen = (size_t)(t - s);
		if (nlen > PROM_MAX_LABEL_NAME_LEN)
			return "label name too long";
		if (nlen == 8 && memcmp(s, "__name__", 8) == 0)
			return "label name __name__ is reserved";
		for (size_t i = 0; i < c->nlab; i++)
			if (c->lab[i].nlen == nlen && memcmp(c->lab[i].name, s, nlen) == 0)
				return "duplicate label name";
		if (c->nlab == PROM_MAX_LABELS)
			return "too many labels";
		struct clabel *l = &c->lab[c->nlab];
		l->name = s;
		l->nlen = nlen;
		s = skip_blanks(t, e);
		if (s >= e || *s != '=')
			return "expected '=' after label name";
		s = skip_blanks(s + 1, e);
		if (s >= e || *s != '"')
			return "expected '\"' to open label value";
		s++;
		char *out = p->scratch + voff;
		size_t vlen = 0;
		for (;;) {
			if (s >= e)
				return "unterminated label value";
			char ch = *s++;
			if (ch == '"')
				break;
			if (ch == '\0')
				return "label value contains a NUL byte";
			if (ch == '\\') {
				if (s >= e)
					return "unterminated label value";
				ch = *s++;
				if (ch == 'n')
					ch = '\n';
				else if (ch != '\\' && ch != '"')
					return "invalid escape sequence in label value";
			}
			if (vlen == PROM_MAX_LABEL_VALUE_LEN)
				return "label value too long";
			out[vlen++] = ch;
		}
		if (!utf8_valid(out, vlen))
			return "label value is not valid UTF-8";
		l->value = out;
		l->vlen = vlen;
		voff += vlen;
		c->nlab++;
		s = skip_blanks(s, e);
		if (s < e && *s == ',') {
			s++;
			continue;
		}
		if (s < e && *s == '}') {
			s++;
			break;
		}
		return "expected ',' or '}' in label set";
	}
	*sp = s;
	return NULL;
}

/* Syntax of a sample line into p->cand. */
static const char *parse_sample_syntax(struct parser *p, const char *s, const char *e)
{
	struct cand *c = &p->cand;
	const char *t = scan_mname(s, e);
	const char *msg;

	if (t == s)
		return "invalid metric name";
	c->name = s;
	c->nlen = (size_t)(t - s);
	c->nlab = 0;
	c->has_ts = 0;
	c->ts = 0;
	if (c->nlen > PROM_MAX_NAME_LEN)
		return "metric name too long";
	s = skip_blanks(t, e);
	if (s < e && *s == '{') {
		if ((msg = parse_labels(p, &s, e)) != NULL)
			return msg;
		s = skip_blanks(s, e);
	} else if (s == t && s < e) {
		return "invalid character in metric name";
	}
	if (s >= e)
		return "missing value";
	t = s;
	while (t < e && !is_blank(*t))
		t++;
	if (parse_float(s, (size_t)(t - s), &c->value) != 0)
		return "invalid value";
	s = skip_blanks(t, e);
	if (s < e) {
		t = s;
		while (t < e && !is_blank(*t))
			t++;
		if (parse_int64(s, (size_t)(t - s), &c->ts) != 0)
			return "invalid timestamp";
		c->has_ts = 1;
		s = skip_blanks(t, e);
		if (s < e)
			return "unexpected text after timestamp";
	}
	return NULL;
}

static const struct clabel *cand_label(const struct cand *c, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < c->nlab; i++)
		if (c->lab[i].nlen == n && memcmp(c->lab[i].name, name, n) == 0)
			return &c->lab[i];
	return NULL;
}

static uint64_t cand_hash(const struct cand *c)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < c->nlab; i++)
		sum += pair_hash(c->lab[i].name, c->lab[i].nlen, c->lab[i].value, c->lab[i].vlen);
	return name_hash(c->name, c->nlen) ^ mix64(sum + c->nlab);
}

static int cand_same_series(const struct parser *p, const struct cand *c, const struct tsample *s)
{
	if (strlen(s->name) != c->nlen || memcmp(s->name, c->name, c->nlen) != 0 ||
	    s->nlab != c->nlab)
		return 0;
	for (size_t i = 0; i < c->nlab; i++) {
		const struct clabel *cl = &c->lab[i];
		int found = 0;
		for (size_t j = 0; j < s->nlab && !found; j++) {
			const struct prom_label *l = &p->labs[s->lab0 + j];
			if (strlen(l->name) == cl->nlen &&
			    memcmp(l->name, cl->name, cl->nlen) == 0) {
				if (strlen(l->value) != cl->vlen ||
				    memcmp(l->value, cl->value, cl->vlen) != 0)
					return 0;
				found = 1;
			}
		}
		if (!found)
			return 0;
	}
	return 1;
}

static const char *handle_sample(struct parser *p, const char *s, const char *e)
{
	struct cand *c = &p->cand;
	const char *msg = parse_sample_syntax(p, s, e);
	long fam;
	int role = PROM_ROLE_VALUE;
	double bound = NAN;
	size_t base;

	if (msg)
		return msg;

	/* which family, in which role */
	fam = find_fam(p, c->name, c->nlen);
	if (fam >= 0) {
		int type = p->fams[fam].type;
		if (type == PROM_HISTOGRAM)
			return "histogram sample needs a _bucket, _sum or _count suffix";
		if (type == PROM_SUMMARY)
			role = PROM_ROLE_QUANTILE;
	} else {
		long b;
		if (has_suffix(c->name, c->nlen, "_sum", &base) &&
		    (b = find_fam(p, c->name, base)) >= 0 &&
		    (p->fams[b].type == PROM_SUMMARY || p->fams[b].type == PROM_HISTOGRAM)) {
			fam = b;
			role = PROM_ROLE_SUM;
		} else if (has_suffix(c->name, c->nlen, "_count", &base) &&
		           (b = find_fam(p, c->name, base)) >= 0 &&
		           (p->fams[b].type == PROM_SUMMARY || p->fams[b].type == PROM_HISTOGRAM)) {
			fam = b;
			role = PROM_ROLE_COUNT;
		} else if (has_suffix(c->name, c->nlen, "_bucket", &base) &&
		           (b = find_fam(p, c->name, base)) >= 0 &&
		           p->fams[b].type == PROM_HISTOGRAM) {
			fam = b;
			role = PROM_ROLE_BUCKET;
		}
	}
	if (role == PROM_ROLE_BUCKET || role == PROM_ROLE_QUANTILE) {
		const char *lname = role == PROM_ROLE_BUCKET ? "le" : "quantile";
		const struct clabel *l = cand_label(c, lname);
		if (!l)
			return role == PROM_ROLE_BUCKET ? "histogram bucket without le label"
			                                : "summary sample without quantile label";
		if (parse_float(l->value, l->vlen, &bound) != 0)
			return role == PROM_ROLE_BUCKET ? "invalid le label value"
			                                : "invalid quantile label value";
	}

	/* the same series twice */
	uint64_t h = cand_hash(c);
	size_t pos = SIZE_MAX, idx;
	while (table_next(&p->series, h, &pos, &idx))
		if (cand_same_series(p, c, &p->smp[idx]))
			return "duplicate series";

	/* keep it */
	if (p->nsmp >= PROM_MAX_SAMPLES) {
		p->fatal = "too many samples (bound " STR(PROM_MAX_SAMPLES) ")";
		return NULL;
	}
	if (fam < 0 && (fam = add_fam(p, c->name, c->nlen)) < 0)
		return NULL;
	if (p->nsmp == p->capsmp) {
		p->capsmp = p->capsmp ? p->capsmp * 2 : 256;
		p->smp = xrealloc(p->smp, p->capsmp * sizeof(*p->smp));
	}
	if (p->nlabs + c->nlab > p->caplabs) {
		while (p->nlabs + c->nlab > p->caplabs)
			p->caplabs = p->caplabs ? p->caplabs * 2 : 256;
		p->labs = xrealloc(p->labs, p->caplabs * sizeof(*p->labs));
	}
	struct tfamily *f = &p->fams[fam];
	struct tsample *t = &p->smp[p->nsmp];
	t->name = role == PROM_ROLE_VALUE || role == PROM_ROLE_QUANTILE
	              ? f->name
	              : arena_strndup(&p->priv->arena, c->name, c->nlen);
	t->fam = (size_t)fam;
	t->lab0 = p->nlabs;
	t->nlab = c->nlab;
	t->value = c->value;
	t->bound = bound;
	t->ts = c->ts;
	t->has_ts = c->has_ts;
	t->role = role;
	for (size_t i = 0; i < c->nlab; i++) {
		struct prom_label *l = &p->labs[p->nlabs++];
		l->name = arena_strndup(&p->priv->arena, c->lab[i].name, c->lab[i].nlen);
		l->value = arena_strndup(&p->priv->arena, c->lab[i].value, c->lab[i].vlen);
	}
	table_insert(&p->series, h, p->nsmp);
	f->nsamples++;
	p->nsmp++;
	return NULL;
}

static int parse_type(const char *s, size_t n)
{
	static const char *const names[] = {"untyped", "counter", "gauge", "histogram", "summary"};
	char buf[16];
	if (n >= sizeof(buf))
		return -1;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		buf[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	buf[n] = '\0';
	for (int i = 0; i < (int)HR_ARRAY_LEN(names); i++)
		if (strcmp(buf, names[i]) == 0)
			return i; /* same order as enum prom_type */
	if (strcmp(buf, "unknown") == 0)
		return PROM_UNTYPED;
	return -1;
}

/* A comment line at s: 1 for HELP, 2 for TYPE, 0 for any other. */
static int comment_keyword(const char *s, const char *e)
{
	const char *t;
	s = skip_blanks(s + 1, e);
	t = s;
	while (t < e && !is_blank(*t))
		t++;
	if (t - s == 4 && memcmp(s, "HELP", 4) == 0)
		return 1;
	if (t - s == 4 && memcmp(s, "TYPE", 4) == 0)
		return 2;
	return 0;
}

/* A line starting with '#' (at s). */
static const char *handle_comment(struct parser *p, const char *s, const char *e, int unterminated)
{
	const char *t;
	int help = comment_keyword(s, e) == 1;

	s = skip_blanks(s + 1, e);
	t = s;
	while (t < e && !is_blank(*t))
		t++;
	if (unterminated)
		return TRUNCATED;
	s = skip_blanks(t, e);
	if (s >= e)
		return NULL; /* "# HELP" alone: nothing to record */
	t = scan_mname(s, e);
	if (t == s || (t < e && !is_blank(*t)))
		return help ? "invalid metric name in HELP line"
		            : "invalid metric name in TYPE line";
	const char *name = s;
	size_t nlen = (size_t)(t - s);
	if (nlen > PROM_MAX_NAME_LEN)
		return "metric name too long";
	s = skip_blanks(t, e);
	if (s >= e)
		return NULL; /* no text / type: nothing to record */

	long fam = find_fam(p, name, nlen);
	if (help) {
		size_t n = 0;
		while (e > s && e[-1] == '\r') /* CR never survives a rewrite */
			e--;
		for (; s < e; s++) {
			char ch = *s;
			if (ch == '\0')
				return "HELP text contains a NUL byte";
			if (ch == '\\') {
				if (s + 1 >= e)
					return "invalid escape sequence in HELP text";
				ch = *++s;
				if (ch == 'n')
					ch = '\n';
				else if (ch != '\\')
					return "invalid escape sequence in HELP text";
			}
			if (n == PROM_MAX_HELP_LEN)
				return "HELP text too long";
			p->scratch[n++] = ch;
		}
		if (n == 0)
			return NULL;
		if (!utf8_valid(p->scratch, n))
			return "HELP text is not valid UTF-8";
		if (fam >= 0 && p->fams[fam].help)
			return "second HELP line for a metric";
		if (fam < 0 && (fam = add_fam(p, name, nlen)) < 0)
			return NULL;
		p->fams[fam].help = arena_strndup(&p->priv->arena, p->scratch, n);
		p->fams[fam].help_line = p->lineno;
		return NULL;
	}
	while (e > s && (is_blank(e[-1]) || e[-1] == '\r'))
		e--;
	int type = parse_type(s, (size_t)(e - s));
	if (type < 0)
		return "unknown metric type";
	if (fam >= 0 && p->fams[fam].has_type)
		return "second TYPE line for a metric";
	if (fam >= 0 && p->fams[fam].nsamples)
		return "TYPE line after the metric's samples";
	if (fam < 0 && (fam = add_fam(p, name, nlen)) < 0)
		return NULL;
	p->fams[fam].type = type;
	p->fams[fam].has_type = 1;
	p->fams[fam].type_line = p->lineno;
	return NULL;
}

/* One line [s, e) without its newline (and CR). */
static const char *parse_line(struct parser *p, const char *s, const char *e, int unterminated)
{
	s = skip_blanks(s, e);
	if (s >= e)
		return NULL;
	if (*s == '#' && comment_keyword(s, e) == 0)
		return NULL; /* a plain comment, even cut off or long */
	if ((size_t)(e - s) > PROM_MAX_LINE_BYTES)
		return "line too long";
	if (*s == '#')
		return handle_comment(p, s, e, unterminated);
	if (unterminated)
		return TRUNCATED;
	return handle_sample(p, s, e);
}

/* ---- finishing the document ---- */

static int cmp_bucket(const void *a, const void *b)
{
	const struct prom_bucket *x = a, *y = b;
	int xn = isnan(x->bound), yn = isnan(y->bound);
	if (xn || yn)
		return xn - yn;
	if (x->bound != y->bound)
		return x->bound < y->bound ? -1 : 1;
	if (isnan(x->value) || isnan(y->value))
		return isnan(x->value) - isnan(y->value);
	return x->value < y->value ? -1 : x->value > y->value;
}

/* Groups of histogram/summary family f (samples already in place). */
static void build_groups(struct prom_doc_priv *d, struct prom_family *f, size_t *ngroups_total,
                         size_t *nbuckets_total)
{
	const char *skip = f->type == PROM_HISTOGRAM ? "le" : "quantile";
	struct prom_sample *smp = (struct prom_sample *)f->samples;
	struct prom_group *g;
	struct table t = {0};
	size_t ng = 0;

	if (f->nsamples == 0)
		return; /* declared only: no groups (d->groups may be NULL) */
	g = d->groups + *ngroups_total;

	for (size_t i = 0; i < f->nsamples; i++) {
		uint64_t h = prom_labels_hash(&smp[i], skip);
		size_t pos = SIZE_MAX, idx, gi = SIZE_MAX;
		while (table_next(&t, h, &pos, &idx)) {
			if (prom_labels_equal(&smp[i], g[idx].first, skip)) {
				gi = idx;
				break;
			}
		}
		if (gi == SIZE_MAX) {
			gi = ng++;
			table_insert(&t, h, gi);
			g[gi].first = &smp[i];
			g[gi].buckets = NULL;
			g[gi].nbuckets = 0;
			g[gi].sum = g[gi].count = NAN;
			g[gi].has_sum = g[gi].has_count = 0;
		}
		smp[i].group = gi;
		if (smp[i].role == PROM_ROLE_BUCKET || smp[i].role == PROM_ROLE_QUANTILE)
			g[gi].nbuckets++;
		else if (smp[i].role == PROM_ROLE_SUM && !g[gi].has_sum) {
			g[gi].sum = smp[i].value;
			g[gi].has_sum = 1;
		} else if (smp[i].role == PROM_ROLE_COUNT && !g[gi].has_count) {
			g[gi].count = smp[i].value;
			g[gi].has_count = 1;
		}
	}
	table_free(&t);
	/* bucket slices, filled in sample order then sorted */
	size_t off = 0;
	for (size_t gi = 0; gi < ng; gi++) {
		g[gi].buckets = g[gi].nbuckets ? d->buckets + *nbuckets_total + off : NULL;
		off += g[gi].nbuckets;
		g[gi].nbuckets = 0;
	}
	for (size_t i = 0; i < f->nsamples; i++) {
		if (smp[i].role != PROM_ROLE_BUCKET && smp[i].role != PROM_ROLE_QUANTILE)
			continue;
		struct prom_group *gg = &g[smp[i].group];
		struct prom_bucket *slot = (struct prom_bucket *)gg->buckets + gg->nbuckets++;
		slot->bound = smp[i].bound;
		slot->value = smp[i].value;
	}
	for (size_t gi = 0; gi < ng; gi++)
		if (g[gi].nbuckets > 1)
			qsort((void *)g[gi].buckets, g[gi].nbuckets, sizeof(struct prom_bucket),
			      cmp_bucket);
	f->groups = g;
	f->ngroups = ng;
	*ngroups_total += ng;
	*nbuckets_total += off;
}

static void finish(struct parser *p, struct prom_doc *doc)
{
	struct prom_doc_priv *d = p->priv;
	size_t *off = xcalloc(p->nfams + 1, sizeof(*off));
	size_t nb = 0, ngrp_max = 0;

	table_free(&p->series); /* not needed any more: lower the peak */
	d->families = xcalloc(p->nfams, sizeof(*d->families));
	d->samples = xcalloc(p->nsmp, sizeof(*d->samples));
	/* the labels array no longer grows: it becomes the doc's */
	d->labels = p->labs;
	p->labs = NULL;
	for (size_t i = 0; i < p->nfams; i++)
		off[i + 1] = off[i] + p->fams[i].nsamples;
	for (size_t i = 0; i < p->nfams; i++) {
		struct prom_family *f = &d->families[i];
		f->name = p->fams[i].name;
		f->help = p->fams[i].help;
		f->type = p->fams[i].type;
		f->has_type = p->fams[i].has_type;
		f->help_line = p->fams[i].help_line;
		f->type_line = p->fams[i].type_line;
		f->samples = d->samples + off[i];
		f->nsamples = 0;
		if (f->type == PROM_HISTOGRAM || f->type == PROM_SUMMARY)
			ngrp_max += p->fams[i].nsamples;
	}
	for (size_t i = 0; i < p->nsmp; i++) {
		const struct tsample *t = &p->smp[i];
		struct prom_family *f = &d->families[t->fam];
		struct prom_sample *s = d->samples + off[t->fam] + f->nsamples++;
		s->name = t->name;
		s->labels = t->nlab ? d->labels + t->lab0 : NULL;
		s->nlabels = t->nlab;
		s->value = t->value;
		s->timestamp_ms = t->ts;
		s->has_timestamp = t->has_ts;
		s->role = t->role;
		s->bound = t->bound;
		s->group = PROM_NO_GROUP;
		s->line = t->line;
		if (t->role == PROM_ROLE_BUCKET || t->role == PROM_ROLE_QUANTILE)
			nb++;
	}
	free(off);
	free(p->smp);
	p->smp = NULL;
	d->groups = ngrp_max ? xcalloc(ngrp_max, sizeof(*d->groups)) : NULL;
	d->buckets = nb ? xcalloc(nb, sizeof(*d->buckets)) : NULL;
	size_t ng = 0, nbk = 0;
	for (size_t i = 0; i < p->nfams; i++) {
		struct prom_family *f = &d->families[i];
		if (f->type == PROM_HISTOGRAM || f->type == PROM_SUMMARY)
			build_groups(d, f, &ng, &nbk);
	}
	doc->families = d->families;
	doc->nfamilies = p->nfams;
	doc->nsamples = p->nsmp;
}

static void parser_free(struct parser *p)
{
	free(p->fams);
	free(p->smp);
	free(p->labs);
	free(p->scratch);
	table_free(&p->series);
}

static void note_error(struct prom_doc *doc, size_t line, const char *msg)
{
	doc->bad_lines++;
	if (doc->nerrors < PROM_MAX_ERRORS) {
		struct prom_error *e = &doc->errors[doc->nerrors++];
		e->line = line;
		snprintf(e->msg, sizeof(e->msg), "%s", msg);
	}
}

int prom_parse(const char *text, size_t len, unsigned flags, struct prom_doc *doc, char *err)
{
	struct parser p;
	const char *s, *end;
	size_t lineno = 0;

	memset(doc, 0, sizeof(*doc));
	if (len > PROM_MAX_INPUT_BYTES)
		return errf(err, "exposition too large: %zu bytes (bound %u)", len,
		            PROM_MAX_INPUT_BYTES);
	memset(&p, 0, sizeof(p));
	p.priv = xcalloc(1, sizeof(*p.priv));
	p.scratch = xmalloc(PROM_MAX_LINE_BYTES + 1);
	doc->priv = p.priv;

	s = text;
	end = text + len;
	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		const char *msg;
		p.lineno = ++lineno;
		if (e > s && e[-1] == '\r')
			e--;
		size_t before = p.nsmp;
		msg = parse_line(&p, s, e, nl == NULL);
		if (p.nsmp > before)
			p.smp[before].line = lineno;
		if (p.fatal) {
			errf(err, "line %zu: %s", lineno, p.fatal);
			parser_free(&p);
			prom_doc_release(doc);
			return -1;
		}
		if (msg) {
			if (flags & PROM_STRICT) {
				errf(err, "line %zu: %s", lineno, msg);
				parser_free(&p);
				prom_doc_release(doc);
				return -1;
			}
			note_error(doc, lineno, msg);
		}
		s = nl ? nl + 1 : end;
	}
	doc->nlines = lineno;
	finish(&p, doc);
	parser_free(&p);
	return 0;
}

void prom_doc_release(struct prom_doc *doc)
{
	struct prom_doc_priv *d = doc->priv;
	if (d) {
		arena_free(d->arena);
		free(d->families);
		free(d->samples);
		free(d->labels);
		free(d->groups);
		free(d->buckets);
		table_free(&d->fam_index);
		free(d);
	}
	memset(doc, 0, sizeof(*doc));
}

/* ---- lookups ---- */

const struct prom_family *prom_find_family(const struct prom_doc *doc, const char *name)
{
	if (!doc->priv || !name)
		return NULL;
	size_t n = strlen(name), pos = SIZE_MAX, idx;
	uint64_t h = name_hash(name, n);
	while (table_next(&doc->priv->fam_index, h, &pos, &idx))
		if (strcmp(doc->families[idx].name, name) == 0)
			return &doc->families[idx];
	return NULL;
}

const char *prom_label(const struct prom_sample *s, const char *name)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}

const struct prom_sample *prom_find_sample(const struct prom_family *f, const char *name,
                                           const struct prom_label *match, size_t nmatch)
{
	if (!f)
		return NULL;
	for (size_t i = 0; i < f->nsamples; i++) {
		const struct prom_sample *s = &f->samples[i];
		if (name && strcmp(s->name, name) != 0)
			continue;
		size_t k = 0;
		for (; k < nmatch; k++) {
			const char *v = prom_label(s, match[k].name);
			if (!v || strcmp(v, match[k].value) != 0)
				break;
		}
		if (k == nmatch)
			return s;
	}
	return NULL;
}

const char *prom_type_name(int type)
{
	switch (type) {
	case PROM_COUNTER:
		return "counter";
	case PROM_GAUGE:
		return "gauge";
	case PROM_HISTOGRAM:
		return "histogram";
	case PROM_SUMMARY:
		return "summary";
	default:
		return "untyped";
	}
}

uint64_t prom_labels_hash(const struct prom_sample *s, const char *skip)
{
	uint64_t sum = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct prom_label *l = &s->labels[i];
		if (skip && strcmp(l->name, skip) == 0)
			continue;
		sum += pair_hash(l->name, strlen(l->name), l->value, strlen(l->value));
		n++;
	}
	return mix64(sum + n);
}

int prom_labels_equal(const struct prom_sample *a, const struct prom_sample *b, const char *skip)
{
	size_t na = 0, nb = 0;
	for (size_t i = 0; i < a->nlabels; i++) {
		const struct prom_label *l = &a->labels[i];
		if (skip && strcmp(l->name, skip) == 0)
			continue;
		na++;
		const char *v = prom_label(b, l->name);
		if (!v || strcmp(v, l->value) != 0)
			return 0;
	}
	for (size_t i = 0; i < b->nlabels; i++)
		if (!skip || strcmp(b->labels[i].name, skip) != 0)
			nb++;
	return na == nb;
}

/* ---- histogram_quantile ---- */

static int cmp_bound(const void *a, const void *b)
{
	const struct prom_bucket *x = a, *y = b;
	return x->bound < y->bound ? -1 : x->bound > y->bound;
}

double prom_histogram_quantile(double q, const struct prom_bucket *in, size_t n)
{
	struct prom_bucket *b;
	size_t m = 0;

	if (isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	b = xmalloc((n ? n : 1) * sizeof(*b));
	for (size_t i = 0; i < n; i++)
		if (!isnan(in[i].bound))
			b[m++] = in[i];
	qsort(b, m, sizeof(*b), cmp_bound);
	if (m == 0 || !(isinf(b[m - 1].bound) && b[m - 1].bound > 0)) {
		free(b);
		return NAN;
	}
	/* merge equal bounds (their counts add up, as Prometheus does) */
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (k && b[k - 1].bound == b[i].bound)
			b[k - 1].value += b[i].value;
		else
			b[k++] = b[i];
	}
	m = k;
	/* force monotonic counts */
	double max = -INFINITY;
	for (size_t i = 0; i < m; i++) {
		if (b[i].value > max)
			max = b[i].value;
		else if (b[i].value < max)
			b[i].value = max;
	}
	double obs = b[m - 1].value;
	if (m < 2 || !(obs > 0) || isnan(obs)) {
		free(b);
		return NAN;
	}
	double rank = q * obs, res;
	size_t i = 0;
	while (i < m - 1 && !(b[i].value >= rank))
		i++;
	if (i == m - 1) {
		res = b[m - 2].bound;
	} else if (i == 0 && b[0].bound <= 0) {
		res = b[0].bound;
	} else {
		double start = 0, end = b[i].bound, count = b[i].value;
		if (i > 0) {
			start = b[i - 1].bound;
			count -= b[i - 1].value;
			rank -= b[i - 1].value;
		}
		res = start + (end - start) * (rank / count);
	}
	free(b);
	return res;
}
