/* yaml2json.c - one YAML document into jansson values through libyaml's
 * event parser, with bounded nesting and no aliases (see yaml2json.h). */
#include "yaml2json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "hrlimits.h"
#include "util.h"

/* --- lines by node ------------------------------------------------------------------- */

static size_t slot_of(const void *p, size_t cap)
{
	uintptr_t h = (uintptr_t)p;
	h ^= h >> 17;
	h *= (uintptr_t)0x9E3779B97F4A7C15ull;
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static void lines_put(struct yaml_lines *l, const void *k, long line)
{
	if (!l)
		return;
	if (2 * (l->n + 1) > l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		const void **keys = xcalloc(cap, sizeof *keys);
		long *lines = xcalloc(cap, sizeof *lines);
		for (size_t i = 0; i < l->cap; i++)
			if (l->keys[i]) {
				size_t s = slot_of(l->keys[i], cap);
				while (keys[s])
					s = (s + 1) & (cap - 1);
				keys[s] = l->keys[i];
				lines[s] = l->lines[i];
			}
		free(l->keys);
		free(l->lines);
		l->keys = keys;
		l->lines = lines;
		l->cap = cap;
	}
	size_t s = slot_of(k, l->cap);
	while (l->keys[s] && l->keys[s] != k)
		s = (s + 1) & (l->cap - 1);
	if (!l->keys[s])
		l->n++;
	l->keys[s] = k;
	l->lines[s] = line;
}

long yaml_line_of(const struct yaml_lines *l, const void *v)
{
	if (!l || !l->cap || !v)
		return 0;
	size_t s = slot_of(v, l->cap);
	while (l->keys[s]) {
		if (l->keys[s] == v)
			return l->lines[s];
		s = (s + 1) & (l->cap - 1);
	}
	return 0;
}

void yaml_lines_release(struct yaml_lines *l)
{
	if (!l)
		return;
	free(l->keys);
	free(l->lines);
	memset(l, 0, sizeof *l);
}

/* --- scalars ------------------------------------------------------------------------- */

#define TAG_PREFIX "tag:yaml.org,2002:"

static int one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* digits and underscores, at least one digit; returns past them */
static const char *digits(const char *s, int *n)
{
	*n = 0;
	while ((*s >= '0' && *s <= '9') || *s == '_') {
		*n += *s != '_';
		s++;
	}
	return s;
}

/* PyYAML's (YAML 1.1) int: decimal, 0b binary, 0 octal, 0x hex (not the
 * sexagesimal 1:30). Returns the base, 0 when not an int. */
static int is_int(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	int base = 10;
	const char *ok = "0123456789_";
	if (s[0] == '0' && s[1] == 0)
		return 10;
	if (s[0] == '0' && s[1] == 'b')
		base = 2, ok = "01_", s += 2;
	else if (s[0] == '0' && s[1] == 'x')
		base = 16, ok = "0123456789abcdefABCDEF_", s += 2;
	else if (s[0] == '0')
		base = 8, ok = "01234567_", s += 1;
	else if (*s < '1' || *s > '9')
		return 0;
	size_t n = strspn(s, ok);
	if (s[n] != 0 || (base != 8 && (n == 0 || strspn(s, "_") == n)))
		return 0; /* "0_" is octal 0 (the 0 is its digit) */
	return base;
}

/* PyYAML's float: [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)? or \.[0-9_]+(exp)? */
static int is_float(const char *s)
{
	int n, m;
	if (*s == '.') {
		s = digits(s + 1, &n);
		if (!n)
			return 0;
	} else {
		if (*s == '-' || *s == '+')
			s++;
		if (*s < '0' || *s > '9')
			return 0;
		s = digits(s, &n);
		if (*s != '.')
			return 0;
		s = digits(s + 1, &m);
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s != '-' && *s != '+')
			return 0;
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == 0;
}

static char *strip_underscores(const char *s)
{
	char *o = xstrdup(s), *w = o;
	for (; *s; s++)
		if (*s != '_')
			*w++ = *s;
	*w = 0;
	return o;
}

static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON",
				    NULL};
static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off",
				     "OFF", NULL};
static const char *const infs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
				   "-.Inf", "-.INF", NULL};
static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};

enum kind { K_ANY, K_STR, K_INT, K_FLOAT, K_BOOL, K_NULL };

/* The value of a scalar; NULL when it cannot be what its tag says. */
static json_t *scalar(const char *s, size_t len, enum kind k)
{
	if (k == K_STR)
		return json_stringn(s, len);
	if (strlen(s) != len) /* a NUL inside: only a string */
		return NULL;
	if ((k == K_ANY || k == K_NULL) && one_of(s, nulls))
		return json_null();
	if (k == K_ANY || k == K_BOOL) {
		if (one_of(s, trues))
			return json_true();
		if (one_of(s, falses))
			return json_false();
	}
	int base = k == K_ANY || k == K_INT ? is_int(s) : 0;
	if (base) {
		char *t = strip_underscores(s), *d = t;
		int neg = *d == '-';
		if (*d == '-' || *d == '+')
			d++;
		if (base == 2 || base == 16)
			d += 2; /* strtoll reads 0x itself, but not 0b */
		errno = 0;
		unsigned long long u = strtoull(d, NULL, base);
		json_t *o;
		if (errno == ERANGE || u > (unsigned long long)INT64_MAX)
			o = base == 10 ? json_real(strtod(t, NULL)) : NULL; /* as a float, like JSON */
		else
			o = json_integer(neg ? -(json_int_t)u : (json_int_t)u);
		free(t);
		return o;
	}
	if (k == K_ANY || k == K_FLOAT) {
		if (one_of(s, infs) || one_of(s, nans))
			return json_null(); /* JSON has neither */
		if (is_float(s) || (k == K_FLOAT && is_int(s))) {
			char *t = strip_underscores(s);
			double d = strtod(t, NULL);
			free(t);
			return isfinite(d) ? json_real(d) : json_null();
		}
	}
	if (k == K_ANY)
		return json_stringn(s, len);
	return NULL;
}

/* --- the document --------------------------------------------------------------------- */

/* Lines of text as YAML counts them (CR LF, CR, LF, NEL, LS, PS): an error
 * libyaml places past the end is on the last one. */
static long count_lines(const char *s, size_t len)
{
	long n = 1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\r')
			n += !(i + 1 < len && s[i + 1] == '\n');
		else if (c == '\n')
			n++;
		else if (c == 0xC2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85)
			n++;
		else if (c == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
			 ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
			n++;
	}
	return n;
}

struct frame {
	json_t *c;
	char *key;    /* a mapping's key waiting for its value */
	char *anchor; /* the container's anchor, registered at its end */
	size_t count; /* nodes inside, aliases expanded */
	int height;   /* levels of containers inside */
};

/* Anchored nodes, complete: an alias is a copy of one, and the copies of a
 * document together stay under HR_MAX_YAML_ALIASED nodes (no "billion
 * laughs"); at most HR_MAX_YAML_ANCHORS anchors. */
struct anchor {
	char *name;
	json_t *v; /* borrowed: the document holds it */
	size_t size;
	int height; /* levels of containers: 0 for a scalar */
};

static void anchor_add(struct anchor **a, size_t *n, const char *name, json_t *v, size_t size,
		       int height)
{
	for (size_t i = 0; i < *n; i++) /* a name given again names the new node */
		if (strcmp((*a)[i].name, name) == 0) {
			(*a)[i].v = v;
			(*a)[i].size = size;
			(*a)[i].height = height;
			return;
		}
	*a = xrealloc(*a, (*n + 1) * sizeof **a);
	(*a)[*n] = (struct anchor){xstrdup(name), v, size, height};
	(*n)++;
}

static json_t *bad(long at, long *line, char *msg, size_t msgsz, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static json_t *bad(long at, long *line, char *msg, size_t msgsz, const char *fmt, ...)
{
	*line = at;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msgsz, fmt, ap);
	va_end(ap);
	return NULL;
}

json_t *yaml_to_json(const char *text, size_t len, int max_depth, struct yaml_lines *lines,
		     long *line, char *msg, size_t msgsz)
{
	yaml_parser_t p;
	yaml_event_t ev;
	*line = 0;
	msg[0] = 0;
	if (!yaml_parser_initialize(&p))
		return bad(0, line, msg, msgsz, "cannot start the YAML parser");
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	struct frame *st = xcalloc((size_t)max_depth + 1, sizeof *st);
	int depth = 0, docs = 0, done = 0;
	json_t *root = NULL;
	int failed = 0;
	struct anchor *anchors = NULL;
	size_t n_anchors = 0, aliased = 0;
	while (!done) {
		if (!yaml_parser_parse(&p, &ev)) {
			long at = (long)(p.problem_mark.line + 1);
			if (p.context)
				bad(at, line, msg, msgsz, "not YAML: %s %s", p.problem ? p.problem : "error",
				    p.context);
			else
				bad(at, line, msg, msgsz, "not YAML: %s",
				    p.problem ? p.problem : "error");
			failed = 1;
			break;
		}
		long at = (long)(ev.start_mark.line + 1);
		json_t *v = NULL;
		int open = 0;
		size_t vsize = 1;
		int vheight = 0;
		const char *anchor = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				bad(at, line, msg, msgsz,
				    "more than one YAML document: a report is one");
				failed = 1;
			}
			break;
		case YAML_ALIAS_EVENT: {
			const char *name = (const char *)ev.data.alias.anchor;
			struct anchor *a = NULL;
			for (size_t i = 0; i < n_anchors; i++)
				if (strcmp(anchors[i].name, name) == 0)
					a = &anchors[i];
			if (depth > 0 && json_is_object(st[depth - 1].c) && !st[depth - 1].key) {
				bad(at, line, msg, msgsz, "a YAML alias (*%.100s) as a mapping key is "
							  "not accepted", name);
				failed = 1;
			} else if (!a) {
				bad(at, line, msg, msgsz,
				    "the YAML alias *%.100s names no complete node before it", name);
				failed = 1;
			} else if (depth + a->height > max_depth) {
				bad(at, line, msg, msgsz,
				    "the YAML alias *%.100s nests deeper than %d levels", name,
				    max_depth);
				failed = 1;
			} else if (a->size > HR_MAX_YAML_ALIASED - aliased) {
				bad(at, line, msg, msgsz,
				    "YAML aliases expand to more than %u nodes (*%.100s)",
				    HR_MAX_YAML_ALIASED, name);
				failed = 1;
			} else {
				aliased += a->size;
				vsize = a->size;
				vheight = a->height;
				v = json_deep_copy(a->v);
			}
			break;
		}
		case YAML_SCALAR_EVENT: {
			const char *s = (const char *)ev.data.scalar.value;
			size_t n = ev.data.scalar.length;
			if (depth > 0 && json_is_object(st[depth - 1].c) && !st[depth - 1].key) {
				json_t *utf8 = strlen(s) == n ? json_stringn(s, n) : NULL;
				if (!utf8) {
					bad(at, line, msg, msgsz,
					    "a mapping key must be UTF-8 text without NUL");
					failed = 1;
				} else {
					json_decref(utf8); /* checked: the text is the key */
					st[depth - 1].key = xstrndup(s, n);
				}
				break;
			}
			const char *tag = (const char *)ev.data.scalar.tag;
			enum kind k = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? K_ANY : K_STR;
			if (tag && strcmp(tag, "!") == 0) {
				k = K_STR;
			} else if (tag) {
				static const char *const names[] = {"str", "int", "float", "bool",
								    "null"};
				static const enum kind kinds[] = {K_STR, K_INT, K_FLOAT, K_BOOL,
								  K_NULL};
				size_t pl = strlen(TAG_PREFIX);
				int found = 0;
				for (size_t i = 0; i < 5 && strncmp(tag, TAG_PREFIX, pl) == 0; i++)
					if (strcmp(tag + pl, names[i]) == 0) {
						k = kinds[i];
						found = 1;
					}
				if (!found) {
					bad(at, line, msg, msgsz,
					    "the YAML tag %.100s is not accepted (only str, int, "
					    "float, bool, null)",
					    tag);
					failed = 1;
					break;
				}
			}
			v = scalar(s, n, k);
			anchor = (const char *)ev.data.scalar.anchor;
			if (!v) {
				bad(at, line, msg, msgsz, "a YAML scalar is not what its tag says or "
							  "not UTF-8 text");
				failed = 1;
			}
			break;
		}
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (depth > 0 && json_is_object(st[depth - 1].c) && !st[depth - 1].key) {
				bad(at, line, msg, msgsz, "a mapping key must be a scalar");
				failed = 1;
				break;
			}
			if (depth >= max_depth) {
				bad(at, line, msg, msgsz,
				    "the YAML nests sequences and mappings deeper than %d levels",
				    max_depth);
				failed = 1;
				break;
			}
			{
				const char *tag = ev.type == YAML_SEQUENCE_START_EVENT
							  ? (const char *)ev.data.sequence_start.tag
							  : (const char *)ev.data.mapping_start.tag;
				const char *want = ev.type == YAML_SEQUENCE_START_EVENT
							   ? TAG_PREFIX "seq"
							   : TAG_PREFIX "map";
				if (tag && strcmp(tag, "!") != 0 && strcmp(tag, want) != 0) {
					bad(at, line, msg, msgsz,
					    "the YAML tag %.100s is not accepted", tag);
					failed = 1;
					break;
				}
			}
			v = ev.type == YAML_SEQUENCE_START_EVENT ? json_array() : json_object();
			anchor = ev.type == YAML_SEQUENCE_START_EVENT
					 ? (const char *)ev.data.sequence_start.anchor
					 : (const char *)ev.data.mapping_start.anchor;
			open = 1;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth > 0) {
				struct frame *f = &st[--depth];
				size_t size = f->count + 1;
				int height = f->height + 1;
				if (f->anchor) {
					anchor_add(&anchors, &n_anchors, f->anchor, f->c, size, height);
					free(f->anchor);
				}
				free(f->key);
				memset(f, 0, sizeof *f);
				if (depth > 0) {
					st[depth - 1].count += size;
					if (height > st[depth - 1].height)
						st[depth - 1].height = height;
				}
			}
			break;
		default:
			break;
		}
		if (!failed && v && anchor && n_anchors >= HR_MAX_YAML_ANCHORS) {
			bad(at, line, msg, msgsz, "more than %u YAML anchors", HR_MAX_YAML_ANCHORS);
			failed = 1;
			json_decref(v);
			v = NULL;
		}
		char *anchor_copy = !failed && v && anchor ? xstrdup(anchor) : NULL;
		yaml_event_delete(&ev);
		if (failed)
			break;
		if (!v)
			continue;
		if (v != json_null() && v != json_true() && v != json_false())
			lines_put(lines, v, at);
		if (depth == 0) {
			root = v; /* the one document's value */
		} else {
			struct frame *f = &st[depth - 1];
			if (json_is_array(f->c)) {
				json_array_append_new(f->c, v);
			} else {
				json_object_set_new(f->c, f->key, v);
				free(f->key);
				f->key = NULL;
			}
		}
		if (open) {
			st[depth].c = v;
			st[depth].anchor = anchor_copy; /* registered at its end */
			st[depth].height = 0;
			st[depth++].count = 0;
		} else {
			if (depth > 0) {
				st[depth - 1].count += vsize;
				if (vheight > st[depth - 1].height)
					st[depth - 1].height = vheight;
			}
			if (anchor_copy)
				anchor_add(&anchors, &n_anchors, anchor_copy, v, vsize, vheight);
			free(anchor_copy);
		}
	}
	for (int i = 0; i < max_depth + 1; i++) {
		free(st[i].key);
		free(st[i].anchor);
	}
	free(st);
	for (size_t i = 0; i < n_anchors; i++)
		free(anchors[i].name);
	free(anchors);
	yaml_parser_delete(&p);
	if (failed || !root) {
		if (!failed)
			bad(0, line, msg, msgsz, "the YAML holds no document");
		long last = count_lines(text, len);
		if (*line > last)
			*line = last;
		json_decref(root);
		yaml_lines_release(lines);
		return NULL;
	}
	return root;
}
