/* fuzz_prom.c - libFuzzer target for the Prometheus text parser
 * (lib/prom.c) and the concept mapping (lib/promap.c).
 *
 * Input: an exposition, parsed in lenient mode. Checked: the parse never
 * fails (the input is under the size bound); line, sample and error counts
 * are consistent; every kept string is NUL-terminated, within its bound and
 * valid (names, UTF-8); each sample's name and role fit its family; groups
 * cover exactly the bucket/quantile samples, sorted; every family is found
 * by name; histogram_quantile is monotonic in q; strict mode succeeds
 * exactly when lenient mode saw no bad line, with the same document; the
 * kept lines written back out in canonical form, in their order, parse
 * strictly to the same document; a prefix ending at a line boundary yields exactly the samples
 * of those lines; promap_collect gives well-formed observations.
 *
 * Build: clang -fsanitize=fuzzer,address -Ilib tests/fuzz/fuzz_prom.c \
 *        lib/prom.c lib/promap.c lib/dynbuf.c lib/util.c -lm
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "fuzz.h"
#include "prom.h"
#include "promap.h"
#include "util.h"

static int valid_utf8(const char *p)
{
	const unsigned char *s = (const unsigned char *)p;
	while (*s) {
		int n;
		unsigned cp;
		if (*s < 0x80) {
			s++;
			continue;
		} else if (*s >= 0xc2 && *s <= 0xdf) {
			n = 2;
			cp = *s & 0x1f;
		} else if (*s >= 0xe0 && *s <= 0xef) {
			n = 3;
			cp = *s & 0x0f;
		} else if (*s >= 0xf0 && *s <= 0xf4) {
			n = 4;
			cp = *s & 0x07;
		} else {
			return 0;
		}
		for (int i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		s += n;
	}
	return 1;
}

static int valid_name(const char *s, int colon, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || (colon && c == ':')))
			return 0;
	}
	return 1;
}

static int same_double(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Two documents hold the same families and samples (line numbers aside). */
static int same_doc(const struct prom_doc *a, const struct prom_doc *b)
{
	if (a->nfamilies != b->nfamilies || a->nsamples != b->nsamples)
		return 0;
	for (size_t i = 0; i < a->nfamilies; i++) {
		const struct prom_family *x = &a->families[i], *y = &b->families[i];
		if (strcmp(x->name, y->name) || !same_str(x->help, y->help) || x->type != y->type ||
		    x->has_type != y->has_type || x->nsamples != y->nsamples ||
		    x->ngroups != y->ngroups)
			return 0;
		for (size_t j = 0; j < x->nsamples; j++) {
			const struct prom_sample *s = &x->samples[j], *t = &y->samples[j];
			if (strcmp(s->name, t->name) || s->nlabels != t->nlabels ||
			    !same_double(s->value, t->value) ||
			    s->has_timestamp != t->has_timestamp ||
			    s->timestamp_ms != t->timestamp_ms || s->role != t->role ||
			    !same_double(s->bound, t->bound) || s->group != t->group)
				return 0;
			for (size_t k = 0; k < s->nlabels; k++)
				if (strcmp(s->labels[k].name, t->labels[k].name) ||
				    strcmp(s->labels[k].value, t->labels[k].value))
					return 0;
		}
	}
	return 1;
}

static void write_escaped(struct dynbuf *b, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			REQUIRE(dynbuf_addstr(b, "\\\\") == 0);
		else if (*s == '\n')
			REQUIRE(dynbuf_addstr(b, "\\n") == 0);
		else if (quote && *s == '"')
			REQUIRE(dynbuf_addstr(b, "\\\"") == 0);
		else
			REQUIRE(dynbuf_add(b, s, 1) == 0);
	}
}

/* One kept line of the input: a HELP, a TYPE or a sample. */
struct event {
	size_t line;
	int kind; /* 0 HELP, 1 TYPE, 2 sample */
	const struct prom_family *f;
	const struct prom_sample *s;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* The document in canonical text form: the kept lines, in their original
 * order (replaying them reproduces the parser's state exactly). */
static void write_doc(const struct prom_doc *d, struct dynbuf *b)
{
	char num[32];
	size_t n = 0;
	struct event *ev = xmalloc((2 * d->nfamilies + d->nsamples + 1) * sizeof(*ev));

	for (size_t i = 0; i < d->nfamilies; i++) {
		const struct prom_family *f = &d->families[i];
		if (f->help_line)
			ev[n++] = (struct event){f->help_line, 0, f, NULL};
		if (f->type_line)
			ev[n++] = (struct event){f->type_line, 1, f, NULL};
		for (size_t j = 0; j < f->nsamples; j++)
			ev[n++] = (struct event){f->samples[j].line, 2, f, &f->samples[j]};
	}
	qsort(ev, n, sizeof(*ev), cmp_event);
	for (size_t e = 0; e < n; e++) {
		const struct prom_family *f = ev[e].f;
		const struct prom_sample *s = ev[e].s;
		REQUIRE(e == 0 || ev[e - 1].line < ev[e].line);
		if (ev[e].kind == 0) {
			REQUIRE(dynbuf_printf(b, "# HELP %s ", f->name) == 0);
			write_escaped(b, f->help, 0);
			REQUIRE(dynbuf_addstr(b, "\n") == 0);
			continue;
		}
		if (ev[e].kind == 1) {
			REQUIRE(dynbuf_printf(b, "# TYPE %s %s\n", f->name,
			                      prom_type_name(f->type)) == 0);
			continue;
		}
		REQUIRE(dynbuf_addstr(b, s->name) == 0);
		if (s->nlabels) {
			REQUIRE(dynbuf_addstr(b, "{") == 0);
			for (size_t k = 0; k < s->nlabels; k++) {
				REQUIRE(dynbuf_printf(b, "%s%s=\"", k ? "," : "",
				                      s->labels[k].name) == 0);
				write_escaped(b, s->labels[k].value, 1);
				REQUIRE(dynbuf_addstr(b, "\"") == 0);
			}
			REQUIRE(dynbuf_addstr(b, "}") == 0);
		}
		fmt_double(num, s->value);
		REQUIRE(dynbuf_printf(b, " %s", num) == 0);
		if (s->has_timestamp)
			REQUIRE(dynbuf_printf(b, " %lld", (long long)s->timestamp_ms) == 0);
		REQUIRE(dynbuf_addstr(b, "\n") == 0);
	}
	free(ev);
}

static void check_quantiles(const struct prom_group *g)
{
	static const double qs[] = {0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 1};
	double prev = NAN;
	int finite_counts = 1;

	for (size_t i = 0; i < g->nbuckets; i++)
		if (!isfinite(g->buckets[i].value) || isnan(g->buckets[i].bound))
			finite_counts = 0;
	REQUIRE(isnan(prom_histogram_quantile(NAN, g->buckets, g->nbuckets)));
	REQUIRE(prom_histogram_quantile(-1, g->buckets, g->nbuckets) == -INFINITY);
	REQUIRE(prom_histogram_quantile(2, g->buckets, g->nbuckets) == INFINITY);
	for (size_t i = 0; i < HR_ARRAY_LEN(qs); i++) {
		double r = prom_histogram_quantile(qs[i], g->buckets, g->nbuckets);
		if (!finite_counts || !isfinite(r))
			continue;
		if (!isnan(prev))
			REQUIRE(prev <= r + 1e-9 * fmax(1, fabs(r)));
		prev = r;
	}
}

static void check_doc(const struct prom_doc *d, const char *in, size_t n)
{
	size_t nl = 0, total = 0, nbk = 0, last_err = 0;
	size_t skip = n >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;

	for (size_t i = skip; i < n; i++)
		nl += in[i] == '\n';
	if (n > skip && in[n - 1] != '\n')
		nl++;
	REQUIRE(d->nlines == nl);
	REQUIRE(d->bad_lines <= d->nlines);
	REQUIRE(d->nerrors == (d->bad_lines < PROM_MAX_ERRORS ? d->bad_lines : PROM_MAX_ERRORS));
	for (size_t i = 0; i < d->nerrors; i++) {
		REQUIRE(d->errors[i].line > last_err && d->errors[i].line <= d->nlines);
		REQUIRE(strlen(d->errors[i].msg) > 0);
		last_err = d->errors[i].line;
	}
	REQUIRE(d->nfamilies <= PROM_MAX_FAMILIES && d->nsamples <= PROM_MAX_SAMPLES);
	for (size_t i = 0; i < d->nfamilies; i++) {
		const struct prom_family *f = &d->families[i];
		size_t flen = strlen(f->name), fb = 0, last_line = 0;
		REQUIRE(valid_name(f->name, 1, PROM_MAX_NAME_LEN));
		REQUIRE(prom_find_family(d, f->name) == f);
		REQUIRE(f->type >= PROM_UNTYPED && f->type <= PROM_SUMMARY);
		REQUIRE(f->has_type || f->type == PROM_UNTYPED);
		REQUIRE(f->help || f->has_type || f->nsamples);
		REQUIRE(!f->help == !f->help_line && !f->has_type == !f->type_line);
		REQUIRE(f->help_line <= d->nlines && f->type_line <= d->nlines);
		if (f->type_line && f->nsamples)
			REQUIRE(f->type_line < f->samples[0].line);
		if (f->help)
			REQUIRE(valid_utf8(f->help) && strlen(f->help) > 0 &&
			        strlen(f->help) <= PROM_MAX_HELP_LEN);
		total += f->nsamples;
		for (size_t j = 0; j < f->nsamples; j++) {
			const struct prom_sample *s = &f->samples[j];
			const char *suffix = s->name + (strlen(s->name) >= flen ? flen : 0);
			REQUIRE(strncmp(s->name, f->name, flen) == 0);
			REQUIRE(valid_name(s->name, 1, PROM_MAX_NAME_LEN));
			REQUIRE(s->line > last_line && s->line <= d->nlines);
			last_line = s->line;
			REQUIRE(s->nlabels <= PROM_MAX_LABELS);
			REQUIRE(!s->has_timestamp ? s->timestamp_ms == 0 : 1);
			for (size_t k = 0; k < s->nlabels; k++) {
				REQUIRE(valid_name(s->labels[k].name, 0, PROM_MAX_LABEL_NAME_LEN));
				REQUIRE(strcmp(s->labels[k].name, "__name__") != 0);
				REQUIRE(strlen(s->labels[k].value) <= PROM_MAX_LABEL_VALUE_LEN);
				REQUIRE(valid_utf8(s->labels[k].value));
				for (size_t m = 0; m < k; m++)
					REQUIRE(strcmp(s->labels[k].name, s->labels[m].name) != 0);
			}
			switch (s->role) {
			case PROM_ROLE_VALUE:
				REQUIRE(f->type != PROM_HISTOGRAM && f->type != PROM_SUMMARY);
				REQUIRE(*suffix == '\0');
				break;
			case PROM_ROLE_QUANTILE:
				REQUIRE(f->type == PROM_SUMMARY && *suffix == '\0');
				REQUIRE(prom_label(s, "quantile") != NULL);
				break;
			case PROM_ROLE_BUCKET:
				REQUIRE(f->type == PROM_HISTOGRAM &&
				        strcmp(suffix, "_bucket") == 0);
				REQUIRE(prom_label(s, "le") != NULL);
				break;
			case PROM_ROLE_SUM:
				REQUIRE(f->type >= PROM_HISTOGRAM && strcmp(suffix, "_sum") == 0);
				break;
			case PROM_ROLE_COUNT:
				REQUIRE(f->type >= PROM_HISTOGRAM && strcmp(suffix, "_count") == 0);
				break;
			default:
				REQUIRE(0);
			}
			if (s->role == PROM_ROLE_BUCKET || s->role == PROM_ROLE_QUANTILE)
				fb++;
			else
				REQUIRE(isnan(s->bound));
			if (f->type == PROM_HISTOGRAM || f->type == PROM_SUMMARY)
				REQUIRE(s->group < f->ngroups);
			else
				REQUIRE(s->group == PROM_NO_GROUP);
		}
		if (f->type == PROM_HISTOGRAM || f->type == PROM_SUMMARY) {
			size_t gb = 0;
			REQUIRE(f->ngroups <= f->nsamples);
			for (size_t g = 0; g < f->ngroups; g++) {
				const struct prom_group *gr = &f->groups[g];
				REQUIRE(gr->first >= f->samples &&
				        gr->first < f->samples + f->nsamples);
				REQUIRE(gr->first->group == g);
				REQUIRE(gr->has_sum || isnan(gr->sum));
				REQUIRE(gr->has_count || isnan(gr->count));
				gb += gr->nbuckets;
				for (size_t k = 1; k < gr->nbuckets; k++)
					REQUIRE(isnan(gr->buckets[k].bound) ||
					        gr->buckets[k - 1].bound <= gr->buckets[k].bound);
				if (f->type == PROM_HISTOGRAM)
					check_quantiles(gr);
			}
			REQUIRE(gb == fb);
		} else {
			REQUIRE(f->ngroups == 0 && f->groups == NULL);
		}
		nbk += fb;
	}
	REQUIRE(total == d->nsamples);
	REQUIRE(d->nsamples <= d->nlines - d->bad_lines);
	(void)nbk;
}

static void check_map(const struct prom_doc *d)
{
	struct promap_list all, mapped;
	size_t n = promap_collect(d, 0, &all), nm = 0;

	REQUIRE(n == all.n);
	REQUIRE(n <= 4 * d->nsamples);
	for (size_t i = 0; i < all.n; i++) {
		const struct promap_obs *o = &all.obs[i];
		REQUIRE(o->name && o->sample);
		REQUIRE(o->kind >= PROMAP_GAUGE && o->kind <= PROMAP_HISTOGRAM);
		REQUIRE(o->concept == NULL || o->concept == o->name);
		REQUIRE(!o->concept == !o->source);
		REQUIRE(o->gpu_index >= -1);
		if (o->kind == PROMAP_HISTOGRAM)
			REQUIRE(o->nbuckets == 0 || o->buckets != NULL);
		else
			REQUIRE(o->buckets == NULL && o->nbuckets == 0 && isnan(o->sum));
		nm += o->concept != NULL;
	}
	promap_collect(d, PROMAP_MAPPED_ONLY, &mapped);
	REQUIRE(mapped.n == nm);
	for (size_t i = 0, j = 0; i < all.n; i++) {
		if (!all.obs[i].concept)
			continue;
		REQUIRE(all.obs[i].name == mapped.obs[j].name &&
		        all.obs[i].sample == mapped.obs[j].sample &&
		        same_double(all.obs[i].value, mapped.obs[j].value));
		j++;
	}
	promap_list_release(&all);
	promap_list_release(&mapped);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct prom_doc lenient, strict, again, prefix;
	char err[HR_ERRLEN];

	if (size > PROM_MAX_INPUT_BYTES)
		return 0;
	REQUIRE(prom_parse(in, size, 0, &lenient, err) == 0);
	check_doc(&lenient, in, size);
	check_map(&lenient);

	/* strict: all or nothing, and the same document */
	int rc = prom_parse(in, size, PROM_STRICT, &strict, err);
	REQUIRE(rc == (lenient.bad_lines ? -1 : 0));
	if (rc == 0)
		REQUIRE(same_doc(&strict, &lenient));
	else
		REQUIRE(strncmp(err, "line ", 5) == 0 && strict.nfamilies == 0);
	prom_doc_release(&strict);

	/* canonical rewrite: parses strictly to the same document */
	if (size < PROM_MAX_LINE_BYTES - 64) {
		struct dynbuf b;
		dynbuf_init(&b, PROM_MAX_INPUT_BYTES);
		write_doc(&lenient, &b);
		rc = prom_parse(b.data ? b.data : "", b.len, PROM_STRICT, &again, err);
		if (rc != 0)
			fprintf(stderr, "rewrite failed: %s\n", err);
		REQUIRE(rc == 0);
		REQUIRE(same_doc(&again, &lenient));
		prom_doc_release(&again);
		dynbuf_release(&b);
	}

	/* a prefix ending at a line boundary: exactly the samples of its lines */
	if (size > 0) {
		size_t cut = size * data[0] / 256;
		while (cut > 0 && in[cut - 1] != '\n')
			cut--;
		char *part = xmalloc(cut ? cut : 1);
		memcpy(part, in, cut);
		REQUIRE(prom_parse(part, cut, 0, &prefix, err) == 0);
		size_t want = 0;
		for (size_t i = 0; i < lenient.nfamilies; i++)
			for (size_t j = 0; j < lenient.families[i].nsamples; j++)
				want += lenient.families[i].samples[j].line <= prefix.nlines;
		REQUIRE(prefix.nsamples == want);
		REQUIRE(prefix.nfamilies <= lenient.nfamilies);
		for (size_t i = 0; i < prefix.nfamilies; i++)
			REQUIRE(strcmp(prefix.families[i].name, lenient.families[i].name) == 0);
		prom_doc_release(&prefix);
		free(part);
	}
	prom_doc_release(&lenient);
	return 0;
}
