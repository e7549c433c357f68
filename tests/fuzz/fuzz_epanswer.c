/* fuzz_epanswer.c - libFuzzer target for the worker's readers of whole
 * answers and of template stream events (worker/endpoint.c):
 * ep_read_answer for embeddings, chat embeddings, rankings (NIM, Cohere,
 * TEI), TGI's /generate and a template's response_path, and ep_read_event
 * for a template's stream_path and TGI's events.
 *
 * Input: byte 0 picks the reader (mod 9, in the order above, the TGI event
 * last), byte 1's low 3 bits the inputs or passages sent (0: not known);
 * for the template readers the bytes up to the first newline are the
 * dotted path (inputs whose path ep_path_init refuses, as the spec would,
 * are skipped); the rest is the body, parsed by jansson (any JSON value).
 * Checked: a verdict is none, malformed_stream or no_content, with a
 * message when not none; counts are -1 or 0 to INT32_MAX; text is a
 * non-empty string or nothing (a TGI token's may be empty: still a
 * token), nothing with an error; a whole answer is
 * no chunk, no end and no event error; embeddings and chat embeddings
 * read alike; what a path leads to decides a template's verdict (a
 * non-empty string: its text; absent, null or empty: no content for an
 * answer, no chunk for an event; anything else malformed_stream) and its
 * usage object its counts; TGI's answer text is its generated_text, its
 * events never fail, are a chunk exactly with a token object and the end
 * exactly with a generated_text string; an answer taken for k inputs is
 * taken for unknown ones with the same counts, a ranking for k passages
 * for k + 1; reading twice gives the same facts.
 *
 * Build: see tests/CMakeLists.txt (worker/endpoint.c compiled in).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "endpoint.h"
#include "fuzz.h"
#include "record.h"
#include "spec.h"

enum pick {
	P_EMBED,
	P_CHAT_EMBED,
	P_RANK_NIM,
	P_RANK_COHERE,
	P_RANK_TEI,
	P_TGI,
	P_TEMPLATE,
	P_TEMPLATE_EVENT,
	P_TGI_EVENT,
	P__COUNT
};

static const int endpoints[P__COUNT] = {
    SPEC_EP_EMBEDDINGS,      SPEC_EP_CHAT_EMBEDDINGS, SPEC_EP_RANKINGS_NIM,
    SPEC_EP_RANKINGS_COHERE, SPEC_EP_RANKINGS_TEI,    SPEC_EP_TGI,
    SPEC_EP_TEMPLATE,        SPEC_EP_TEMPLATE,        SPEC_EP_TGI,
};

/* tgi_event: a TGI token's text may be empty (a token all the same) */
static void check(const struct ep_facts *f, bool tgi_event)
{
	REQUIRE(f->err == HR_ERR_NONE || f->err == HR_ERR_MALFORMED_STREAM ||
	        f->err == HR_ERR_NO_CONTENT);
	REQUIRE(!f->err || f->msg[0]);
	REQUIRE(memchr(f->msg, '\0', sizeof f->msg) != NULL);
	REQUIRE(f->prompt_tokens >= -1 && f->prompt_tokens <= INT32_MAX);
	REQUIRE(f->completion_tokens >= -1 && f->completion_tokens <= INT32_MAX);
	REQUIRE(!f->text ||
	        (json_is_string(f->text) && (tgi_event || json_string_length(f->text) > 0)));
	REQUIRE(!f->err || !f->text);
}

static void same(const struct ep_facts *a, const struct ep_facts *b)
{
	REQUIRE(a->err == b->err && a->chunk == b->chunk && a->final == b->final);
	REQUIRE(a->text == b->text && a->error == b->error);
	REQUIRE(a->prompt_tokens == b->prompt_tokens);
	REQUIRE(a->completion_tokens == b->completion_tokens);
	REQUIRE(strcmp(a->msg, b->msg) == 0);
}

/* A template's usage: its counts, or none. */
static void check_usage(json_t *root, const struct ep_facts *f)
{
	json_t *u = json_object_get(root, "usage");
	int64_t p = json_is_object(u) ? ep_count(u, "prompt_tokens") : -1;
	int64_t c = json_is_object(u) ? ep_count(u, "completion_tokens") : -1;
	REQUIRE(f->prompt_tokens == p && f->completion_tokens == c);
}

/* What the path leads to: 1 content, 0 nothing, -1 a value of another type. */
static int at_path(const struct ep_path *path, json_t *root, json_t **v)
{
	*v = ep_path_get(path, root);
	if (!*v || json_is_null(*v))
		return 0;
	if (!json_is_string(*v))
		return -1;
	return json_string_length(*v) > 0 ? 1 : 0;
}

static void answer(enum pick p, json_t *root, int items, const struct ep_path *path)
{
	struct ep_facts f, g;
	ep_read_answer(endpoints[p], root, items, path, &f);
	check(&f, false);
	REQUIRE(!f.chunk && !f.final && !f.error);
	ep_read_answer(endpoints[p], root, items, path, &g);
	same(&f, &g);
	json_t *v;
	switch (p) {
	case P_EMBED:
	case P_CHAT_EMBED:
		ep_read_answer(p == P_EMBED ? SPEC_EP_CHAT_EMBEDDINGS : SPEC_EP_EMBEDDINGS, root,
		               items, path, &g);
		same(&f, &g);
		break;
	case P_TGI:
		if (!f.err)
			REQUIRE(f.text == json_object_get(root, "generated_text"));
		else
			REQUIRE(f.prompt_tokens == -1 && f.completion_tokens == -1);
		break;
	case P_TEMPLATE: {
		int k = at_path(path, root, &v);
		REQUIRE(f.err == (k > 0    ? HR_ERR_NONE
		                  : k == 0 ? HR_ERR_NO_CONTENT
		                           : HR_ERR_MALFORMED_STREAM));
		REQUIRE(f.text == (k > 0 ? v : NULL));
		check_usage(root, &f);
		break;
	}
	default:
		break;
	}
	if (p <= P_RANK_TEI && !f.err && items > 0) {
		/* not knowing how many were sent refuses nothing more */
		ep_read_answer(endpoints[p], root, 0, path, &g);
		REQUIRE(!g.err && g.prompt_tokens == f.prompt_tokens);
		if (p >= P_RANK_NIM) { /* nor does one more passage */
			ep_read_answer(endpoints[p], root, items + 1, path, &g);
			REQUIRE(!g.err && g.prompt_tokens == f.prompt_tokens);
		}
	}
}

static void event(enum pick p, json_t *root, const struct ep_path *path)
{
	struct ep_facts f, g;
	ep_read_event(endpoints[p], root, path, &f);
	check(&f, p == P_TGI_EVENT);
	ep_read_event(endpoints[p], root, path, &g);
	same(&f, &g);
	json_t *e = json_object_get(root, "error");
	REQUIRE(f.error == (e && !json_is_null(e) ? e : NULL));
	if (p == P_TGI_EVENT) {
		REQUIRE(!f.err);
		REQUIRE(f.chunk == json_is_object(json_object_get(root, "token")));
		REQUIRE(f.final == json_is_string(json_object_get(root, "generated_text")));
		REQUIRE(!f.text || f.chunk);
		return;
	}
	json_t *v;
	int k = at_path(path, root, &v);
	REQUIRE(f.err == (k < 0 ? HR_ERR_MALFORMED_STREAM : HR_ERR_NONE));
	REQUIRE(f.chunk == (k > 0) && f.text == (k > 0 ? v : NULL) && !f.final);
	check_usage(root, &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	enum pick p = (enum pick)(data[0] % P__COUNT);
	int items = data[1] & 7;
	const char *body = (const char *)data + 2;
	size_t len = size - 2;
	struct ep_path path;
	memset(&path, 0, sizeof path);
	if (p == P_TEMPLATE || p == P_TEMPLATE_EVENT) {
		const char *nl = memchr(body, '\n', len);
		if (!nl)
			return 0;
		size_t plen = (size_t)(nl - body);
		char dotted[SPEC_MAX_JSON_PATH + 2];
		if (plen > SPEC_MAX_JSON_PATH || memchr(body, '\0', plen))
			return 0;
		memcpy(dotted, body, plen);
		dotted[plen] = '\0';
		if (ep_path_init(&path, dotted) < 0)
			return 0;
		REQUIRE(path.n >= 1 && path.n <= SPEC_MAX_JSON_PATH_SEGS);
		REQUIRE(strcmp(path.text, dotted) == 0);
		len -= plen + 1;
		body = nl + 1;
	}
	json_t *root = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	if (root) {
		if (p == P_TEMPLATE_EVENT || p == P_TGI_EVENT)
			event(p, root, &path);
		else
			answer(p, root, items, &path);
		json_decref(root);
	}
	ep_path_release(&path);
	return 0;
}
