/* endpoint.c - template bodies, JSON paths, and the answers and stream
 * events of embeddings, rankings, TGI and templates (see endpoint.h).
 *
 * What makes an answer valid, per endpoint (docs/worker.md):
 *  - embeddings: an object whose "data" is an array of one entry per input
 *    sent, each an object whose "embedding" is a non-empty array of numbers
 *    or a non-empty (base64) string;
 *  - rankings: an array of results (NIM: "rankings" of an object, Cohere:
 *    "results" of an object, TEI: the body itself), at least one and at
 *    most one per passage, each an object with an integer "index" of a
 *    passage sent and a number score ("logit", "relevance_score", "score");
 *  - TGI: an object whose "generated_text" is a non-empty string;
 *  - template: a non-empty string at the response path.
 * An empty result is no_content, any other shape malformed_stream. Token
 * counts: usage.prompt_tokens (embeddings and rankings: else
 * usage.total_tokens, since they produce nothing), TGI's
 * details.generated_tokens and details.input_length, a template answer's
 * usage.prompt_tokens and usage.completion_tokens.
 */
#include "endpoint.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "jsonesc.h"
#include "record.h"
#include "util.h"

/* --- JSON paths --------------------------------------------------------- */

int ep_path_init(struct ep_path *p, const char *dotted)
{
	memset(p, 0, sizeof *p);
	if (!dotted)
		return 0;
	size_t len = strlen(dotted);
	if (len == 0 || len > SPEC_MAX_JSON_PATH)
		return -1;
	p->text = xstrdup(dotted);
	p->buf = xstrdup(dotted);
	char *s = p->buf;
	for (;;) {
		char *dot = strchr(s, '.');
		if (dot)
			*dot = '\0';
		if (!*s || p->n == SPEC_MAX_JSON_PATH_SEGS) {
			ep_path_release(p);
			return -1;
		}
		long idx = -1;
		size_t n = strlen(s);
		if (n <= 9 && strspn(s, "0123456789") == n)
			idx = strtol(s, NULL, 10);
		p->seg[p->n] = s;
		p->idx[p->n] = idx;
		p->n++;
		if (!dot)
			return 0;
		s = dot + 1;
	}
}

void ep_path_release(struct ep_path *p)
{
	free(p->text);
	free(p->buf);
	memset(p, 0, sizeof *p);
}

json_t *ep_path_get(const struct ep_path *p, json_t *root)
{
	json_t *x = root;
	for (int i = 0; i < p->n && x; i++) {
		if (json_is_array(x))
			x = p->idx[i] >= 0 ? json_array_get(x, (size_t)p->idx[i]) : NULL;
		else
			x = json_object_get(x, p->seg[i]); /* NULL when x is no object */
	}
	return x;
}

/* --- templates ---------------------------------------------------------- */

/* A placeholder at s[i]: "{{name}}" with name of letters, digits and '_'
 * (the rule of spec.c). Returns the index in spec_template_placeholders
 * and its end in *end, -2 for an unknown name, -1 for none. */
static int placeholder_at(const char *s, size_t len, size_t i, size_t *end)
{
	if (i + 1 >= len || s[i] != '{' || s[i + 1] != '{')
		return -1;
	size_t a = i + 2, b = a;
	while (b < len && (isalnum((unsigned char)s[b]) || s[b] == '_'))
		b++;
	if (b == a || b + 1 >= len || s[b] != '}' || s[b + 1] != '}')
		return -1;
	*end = b + 2;
	for (int k = 0; spec_template_placeholders[k]; k++)
		if (strlen(spec_template_placeholders[k]) == b - a &&
		    memcmp(spec_template_placeholders[k], s + a, b - a) == 0)
			return k;
	return -2;
}

static void add_piece(struct ep_template *t, size_t *cap, size_t off, size_t len, int slot)
{
	if (t->n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		t->piece = xrealloc(t->piece, *cap * sizeof *t->piece);
	}
	t->piece[t->n++] = (struct ep_piece){.off = off, .len = len, .slot = slot};
}

int ep_template_compile(struct ep_template *t, json_t *body, json_t *extra, const char *model,
                        bool stream, char *err)
{
	memset(t, 0, sizeof *t);
	if (!json_is_object(body))
		return errf(err, "target.template.body: not an object");
	json_t *b = json_deep_copy(body);
	if (!b)
		xalloc_die();
	if (json_is_object(extra) && json_object_update(b, extra) < 0) {
		json_decref(b);
		return errf(err, "target.extra_body cannot be merged into the template body");
	}
	/* compact JSON: placeholders show inside strings exactly as written
	 * (braces, letters, digits and '_' are never escaped), and "{{" never
	 * occurs outside a string */
	char *dump = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	if (!dump)
		return errf(err, "cannot serialise the template body");
	struct dynbuf txt, em;
	dynbuf_init(&txt, EP_TEMPLATE_MAX_BYTES);
	dynbuf_init(&em, 4096);
	size_t cap = 0, lit = 0, len = strlen(dump), from = 0;
	int rc = json_escape_append(&em, model, strlen(model));
	for (size_t i = 0; rc == 0 && i < len; i++) {
		size_t end;
		int k = placeholder_at(dump, len, i, &end);
		if (k < 0)
			continue;
		/* a string that is exactly the placeholder: "{{max_tokens}}"
		 * becomes a number, "{{stream}}" a boolean (an opening quote is
		 * never preceded by a backslash; a closing one follows "}}") */
		bool whole = i >= 2 && dump[i - 1] == '"' && dump[i - 2] != '\\' && end < len &&
		             dump[end] == '"';
		const char *name = spec_template_placeholders[k];
		bool unquote =
		    whole && (strcmp(name, "max_tokens") == 0 || strcmp(name, "stream") == 0);
		size_t upto = unquote ? i - 1 : i;
		rc = dynbuf_add(&txt, dump + from, upto - from);
		from = unquote ? end + 1 : end;
		if (rc < 0)
			break;
		if (strcmp(name, "model") == 0) {
			rc = dynbuf_add(&txt, em.data ? em.data : "", em.len);
		} else if (strcmp(name, "stream") == 0) {
			rc = dynbuf_addstr(&txt, stream ? "true" : "false");
		} else {
			add_piece(t, &cap, lit, txt.len - lit,
			          strcmp(name, "prompt") == 0 ? EP_SLOT_PROMPT
			                                      : EP_SLOT_MAX_TOKENS);
			lit = txt.len;
		}
		i = from - 1;
	}
	if (rc == 0)
		rc = dynbuf_add(&txt, dump + from, len - from);
	free(dump);
	dynbuf_release(&em);
	if (rc < 0) {
		dynbuf_release(&txt);
		ep_template_release(t);
		return errf(err, "target.template.body: over %u bytes once filled in",
		            EP_TEMPLATE_MAX_BYTES);
	}
	add_piece(t, &cap, lit, txt.len - lit, EP_SLOT_END);
	t->text = dynbuf_take(&txt, &t->text_len);
	if (!t->text)
		t->text = xstrdup("");
	dynbuf_release(&txt);
	return 0;
}

void ep_template_release(struct ep_template *t)
{
	free(t->text);
	free(t->piece);
	memset(t, 0, sizeof *t);
}

/* --- answers and events --------------------------------------------------- */

void ep_facts_init(struct ep_facts *f)
{
	memset(f, 0, sizeof *f);
	f->prompt_tokens = f->completion_tokens = -1;
}

int ep_bad(struct ep_facts *f, int err, const char *fmt, ...)
{
	if (f->err)
		return -1;
	f->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *type_name(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* A token count: an integer in [0, INT32_MAX], else -1. */
int64_t ep_count(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v))
		return -1;
	json_int_t n = json_integer_value(v);
	return n >= 0 && n <= INT32_MAX ? (int64_t)n : -1;
}

/* usage of an answer that produces nothing: prompt_tokens, else
 * total_tokens (vLLM's Cohere-style usage has only that). */
static void input_usage(json_t *root, struct ep_facts *f)
{
	json_t *u = json_object_get(root, "usage");
	if (!json_is_object(u))
		return;
	f->prompt_tokens = ep_count(u, "prompt_tokens");
	if (f->prompt_tokens < 0)
		f->prompt_tokens = ep_count(u, "total_tokens");
}

static int read_embeddings(json_t *root, int items, struct ep_facts *f)
{
	if (!json_is_object(root))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "response body is not a JSON object");
	json_t *data = json_object_get(root, "data");
	if (!json_is_array(data))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "'data' is not an array");
	size_t n = json_array_size(data);
	if (n == 0)
		return ep_bad(f, HR_ERR_NO_CONTENT, "'data' has no embeddings");
	if (items > 0 && n != (size_t)items)
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "'data' has %zu embeddings for %d inputs",
		              n, items);
	size_t i;
	json_t *e;
	json_array_foreach(data, i, e)
	{
		json_t *v = json_object_get(e, "embedding");
		bool ok = (json_is_string(v) && json_string_length(v) > 0) ||
		          (json_is_array(v) && json_array_size(v) > 0);
		if (ok && json_is_array(v)) {
			size_t k;
			json_t *x;
			json_array_foreach(v, k, x)
			{
				ok = ok && json_is_number(x);
			}
		}
		if (!ok)
			return ep_bad(
			    f, HR_ERR_MALFORMED_STREAM,
			    "'data[%zu].embedding' is not a non-empty array of numbers or a "
			    "base64 string",
			    i);
	}
	input_usage(root, f);
	return 0;
}

/* member: the results' member of the root object, or NULL (TEI: the root
 * is the array). */
static int read_rankings(json_t *root, const char *member, const char *score, int items,
                         struct ep_facts *f)
{
	json_t *a = root;
	const char *what = member ? member : "response body";
	if (member) {
		if (!json_is_object(root))
			return ep_bad(f, HR_ERR_MALFORMED_STREAM,
			              "response body is not a JSON object");
		a = json_object_get(root, member);
	}
	if (!json_is_array(a))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM,
		              member ? "'%s' is not an array" : "%s is not a JSON array", what);
	size_t n = json_array_size(a);
	if (n == 0)
		return ep_bad(f, HR_ERR_NO_CONTENT,
		              member ? "'%s' has no results" : "%s has no results", what);
	if (items > 0 && n > (size_t)items)
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "%s%s%s has %zu results for %d passages",
		              member ? "'" : "", what, member ? "'" : "", n, items);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		json_t *ix = json_object_get(e, "index");
		bool ok = json_is_integer(ix) && json_integer_value(ix) >= 0 &&
		          (items <= 0 || json_integer_value(ix) < items) &&
		          json_is_number(json_object_get(e, score));
		if (!ok)
			return ep_bad(
			    f, HR_ERR_MALFORMED_STREAM,
			    "'%s[%zu]' is not an object with the integer 'index' of a passage "
			    "and a number '%s'",
			    member ? member : "", i, score);
	}
	if (member)
		input_usage(root, f);
	return 0;
}

static int read_tgi(json_t *root, struct ep_facts *f)
{
	if (!json_is_object(root))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "response body is not a JSON object");
	json_t *gt = json_object_get(root, "generated_text");
	if (!json_is_string(gt))
		return ep_bad(f, HR_ERR_MALFORMED_STREAM, "'generated_text' is %s, not a string",
		              gt ? type_name(gt) : "missing");
	if (json_string_length(gt) == 0)
		return ep_bad(f, HR_ERR_NO_CONTENT, "empty 'generated_text'");
	f->text = gt;
	json_t *d = json_object_get(root, "details");
	if (json_is_object(d)) {
		f->completion_tokens = ep_count(d, "generated_tokens");
		f->prompt_tokens = ep_count(d, "input_length");
	}
	return 0;
}

/* The content at a template's path: a non-empty string. An absent, null
 * or empty value is no content; a value of another type is an error. */
static json_t *template_text(json_t *root, const struct ep_path *path, const char *where,
                             struct ep_facts *f, bool strict_absent)
{
	json_t *v = ep_path_get(path, root);
	if (!v || json_is_null(v)) {
		if (strict_absent)
			ep_bad(f, HR_ERR_NO_CONTENT, "'%s' is not in the %s", path->text, where);
		return NULL;
	}
	if (!json_is_string(v)) {
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "'%s' in the %s is %s, not a string", path->text,
		       where, type_name(v));
		return NULL;
	}
	if (json_string_length(v) == 0) {
		if (strict_absent)
			ep_bad(f, HR_ERR_NO_CONTENT, "'%s' in the %s is empty", path->text, where);
		return NULL;
	}
	return v;
}

static void template_usage(json_t *root, struct ep_facts *f)
{
	json_t *u = json_object_get(root, "usage");
	if (!json_is_object(u))
		return;
	f->prompt_tokens = ep_count(u, "prompt_tokens");
	f->completion_tokens = ep_count(u, "completion_tokens");
}

void ep_read_answer(int endpoint, json_t *root, int items, const struct ep_path *path,
                    struct ep_facts *f)
{
	ep_facts_init(f);
	switch (endpoint) {
	case SPEC_EP_EMBEDDINGS:
	case SPEC_EP_CHAT_EMBEDDINGS: /* (vLLM's chat-style request, the same answer) */
		read_embeddings(root, items, f);
		break;
	case SPEC_EP_RANKINGS_NIM:
		read_rankings(root, "rankings", "logit", items, f);
		break;
	case SPEC_EP_RANKINGS_COHERE:
		read_rankings(root, "results", "relevance_score", items, f);
		break;
	case SPEC_EP_RANKINGS_TEI:
		read_rankings(root, NULL, "score", items, f);
		break;
	case SPEC_EP_TGI:
		read_tgi(root, f);
		break;
	case SPEC_EP_TEMPLATE:
		f->text = template_text(root, path, "response", f, true);
		template_usage(root, f);
		break;
	default:
		ep_bad(f, HR_ERR_MALFORMED_STREAM, "no reader for this endpoint");
		break;
	}
	if (f->err)
		f->text = NULL;
}

void ep_read_event(int endpoint, json_t *root, const struct ep_path *path, struct ep_facts *f)
{
	ep_facts_init(f);
	json_t *e = json_object_get(root, "error"); /* NULL unless root is an object */
	if (e && !json_is_null(e))
		f->error = e;
	if (endpoint == SPEC_EP_TGI) {
		/* one event per generated token; the last one also carries
		 * generated_text (and details, when asked for) */
		json_t *tok = json_object_get(root, "token");
		if (json_is_object(tok)) {
			f->chunk = true;
			json_t *text = json_object_get(tok, "text");
			if (json_is_string(text) && !json_is_true(json_object_get(tok, "special")))
				f->text = text;
		}
		if (json_is_string(json_object_get(root, "generated_text")))
			f->final = true;
		json_t *d = json_object_get(root, "details");
		if (json_is_object(d)) {
			f->completion_tokens = ep_count(d, "generated_tokens");
			f->prompt_tokens = ep_count(d, "input_length");
		}
		return;
	}
	if (endpoint == SPEC_EP_TEMPLATE) {
		f->text = template_text(root, path, "stream event", f, false);
		f->chunk = f->text != NULL;
		template_usage(root, f);
		return;
	}
	ep_bad(f, HR_ERR_MALFORMED_STREAM, "no stream reader for this endpoint");
}
