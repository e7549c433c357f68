/* route_pool.c - the endpoints of headroom-mock that answer with no
 * generated text, their route handlers (mock.h, struct mock_handler):
 * embeddings and rankings, each in its server's wire format.
 *
 *   POST /v1/embeddings  OpenAI (and vLLM): input a string, an array of
 *                        strings, an array of token ids or an array of
 *                        arrays of them; encoding_format float or base64;
 *                        dimensions. A list of "embedding" objects, usage.
 *   POST /v1/ranking     NVIDIA NIM: query {"text"}, passages [{"text"}],
 *                        truncate NONE|END. {"rankings":[{index, logit}]},
 *                        best first, and usage.
 *   POST /v2/rerank      Cohere (also /v1/rerank): query, documents
 *                        [string | {"text"}], top_n, return_documents.
 *                        {"id", "results":[{index, relevance_score}],
 *                        "meta":{"billed_units":{"search_units"}}}.
 *   POST /rerank         Hugging Face TEI: query, texts, raw_scores,
 *                        return_text. [{index, score}], best first.
 *   POST /v2/embed       Cohere (also /v1/embed): texts [string], model,
 *                        input_type, embedding_types ["float"] (the only
 *                        type served). {"id", "embeddings":{"float":[..]},
 *                        "texts", "meta":{"billed_units":{"input_tokens"}}}.
 *   POST /embed          Hugging Face TEI: inputs a string or an array of
 *                        strings; normalize, truncate. A bare array of
 *                        vectors.
 * NVIDIA NIM's embeddings are OpenAI's route with NIM's members checked
 * when given: input_type "query" or "passage", truncate NONE|START|END.
 * vLLM's chat embeddings are a /v1/embeddings body with "messages" (and
 * no "input"), read as chat reads them (image_url and input_audio parts
 * checked, the text parts counted as the prompt): one embedding, answered
 * as OpenAI's.
 *
 * Everything is deterministic, so that clients can check it:
 *
 * An embedding is a function of its input's text alone (a token-id input's
 * text is its ids in decimal joined by single spaces; a chat embedding's,
 * the "messages" member as jansson writes it compactly): with h the 64-bit
 * FNV-1a hash of the text's bytes and, for i = 1 .. dim,
 *   v_i = 2 * ((splitmix64_i(h) >> 11) * 2^-53) - 1
 * (splitmix64_i: SplitMix64's i-th output from state h, as in fault.c),
 * the vector is v / |v| (the norm summed in order, in double precision),
 * each value rounded to float32. base64 is those float32 values, little
 * endian, in standard base64 with padding.
 *
 * A ranking score is the share of the query's distinct words found in the
 * passage: words are maximal runs of ASCII letters and digits and bytes
 * 0x80 and above, ASCII letters lowercased; with q distinct query words of
 * which f occur in the passage,
 *   logit = 8 * f / max(q, 1) - 4        (from -4 to 4)
 * NIM reports the logit, Cohere sigmoid(logit) as relevance_score, TEI
 * sigmoid(logit) as score, or the logit with raw_scores. Results are
 * sorted by score, highest first, ties by index. Words are compared by
 * 64-bit hash (sorted query hashes, binary search), so a query and
 * passages of any size cost O(words * log q).
 *
 * Prompt tokens (usage, and the load model's prefill): the inputs' tokens
 * for embeddings (token-id inputs one per id); for rankings, as a
 * cross-encoder reads them, query + passage for every passage.
 *
 * A parsed request (struct pool_req) stays with its response until the
 * body is due; with return_documents / return_text it keeps the parsed
 * JSON for the texts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "mock.h"
#include "util.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define SEARCH_UNIT_DOCS 100 /* Cohere bills a search unit per 100 documents */

struct rank {
	uint32_t index;
	double logit;
};

struct pool_req {
	enum mock_api api;
	uint32_t n; /* inputs, or passages */
	/* embeddings */
	uint32_t dim;
	bool b64;
	uint64_t *seeds; /* per input: the hash of its text */
	/* rankings */
	struct rank *ranks;   /* n, best first */
	uint32_t top_n;       /* results returned */
	bool with_text;       /* return_documents / return_text */
	bool raw_scores;      /* TEI */
	json_t *root;         /* the request, kept for the texts (with_text) */
	const json_t **texts; /* n strings inside root, by index (with_text) */
	const json_t *root_texts; /* Cohere embed: "texts" inside root, echoed */
};

void pool_free(struct pool_req *pq)
{
	if (!pq)
		return;
	free(pq->seeds);
	free(pq->ranks);
	free(pq->texts);
	json_decref(pq->root);
	free(pq);
}

static uint64_t fnv_add(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* ---- embeddings ---- */

/* An array of token ids: its hash (ids in decimal, single spaces) and count. */
static int token_ids(const json_t *a, const char *name, uint64_t *hash, uint64_t *tokens, char *err)
{
	size_t i;
	const json_t *id;
	uint64_t h = FNV_OFFSET;
	if (json_array_size(a) == 0)
		return errf(err, "'%s' must not be an empty array", name);
	json_array_foreach(a, i, id)
	{
		if (!json_is_integer(id) || json_integer_value(id) < 0)
			return errf(err, "'%s[%zu]' must be a token id (a non-negative integer)",
			            name, i);
		char num[24];
		int len = snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(id));
		if (i)
			h = fnv_add(h, " ", 1);
		h = fnv_add(h, num, (size_t)len);
	}
	*hash = h;
	*tokens += json_array_size(a);
	return 0;
}

static int text_input(const json_t *v, const char *name, uint64_t *hash, uint64_t *tokens,
                      char *err)
{
	size_t len = json_string_length(v);
	if (len == 0)
		return errf(err, "'%s' must not be an empty string", name);
	*hash = fnv_add(FNV_OFFSET, json_string_value(v), len);
	*tokens += api_text_tokens(json_string_value(v), len);
	return 0;
}

static int parse_embed(const struct mock_config *cfg, const json_t *root, struct pool_req *pq,
                       uint64_t *tokens, char *err)
{
	static const char kinds[] = "'input' must be a string, an array of strings, an array of "
	                            "token ids or an array of arrays of token ids";
	const json_t *input = json_object_get(root, "input");
	pq->dim = cfg->embedding_dim;
	long long dim;
	int got = api_opt_int(root, "dimensions", "dimensions", 1, MOCK_MAX_EMBED_DIM, &dim, err);
	if (got < 0)
		return -1;
	if (got)
		pq->dim = (uint32_t)dim;
	const json_t *fmt = json_object_get(root, "encoding_format");
	if (fmt && !json_is_null(fmt)) {
		if (json_is_string(fmt) && strcmp(json_string_value(fmt), "base64") == 0)
			pq->b64 = true;
		else if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "float") != 0)
			return errf(err, "'encoding_format' must be \"float\" or \"base64\"");
	}
	const json_t *user = json_object_get(root, "user");
	if (user && !json_is_null(user) && !json_is_string(user))
		return errf(err, "'user' must be a string");
	const json_t *it = json_object_get(root, "input_type"); /* NIM */
	if (it && !json_is_null(it) &&
	    (!json_is_string(it) || (strcmp(json_string_value(it), "query") != 0 &&
	                             strcmp(json_string_value(it), "passage") != 0)))
		return errf(err, "'input_type' must be \"query\" or \"passage\"");
	const json_t *tr = json_object_get(root, "truncate"); /* NIM */
	if (tr && !json_is_null(tr) &&
	    (!json_is_string(tr) || (strcmp(json_string_value(tr), "NONE") != 0 &&
	                             strcmp(json_string_value(tr), "START") != 0 &&
	                             strcmp(json_string_value(tr), "END") != 0)))
		return errf(err, "'truncate' must be \"NONE\", \"START\" or \"END\"");
	if (json_is_string(input)) {
		pq->n = 1;
		pq->seeds = xmalloc(sizeof(*pq->seeds));
		return text_input(input, "input", &pq->seeds[0], tokens, err);
	}
	if (!json_is_array(input))
		return errf(err, "%s", kinds);
	size_t n = json_array_size(input);
	if (n == 0)
		return errf(err, "'input' must not be an empty array");
	if (n > MOCK_MAX_EMBED_INPUTS)
		return errf(err, "'input' may hold at most %d items, not %zu",
		            MOCK_MAX_EMBED_INPUTS, n);
	const json_t *first = json_array_get(input, 0);
	if (json_is_integer(first)) { /* one input of token ids */
		pq->n = 1;
		pq->seeds = xmalloc(sizeof(*pq->seeds));
		return token_ids(input, "input", &pq->seeds[0], tokens, err);
	}
	if (!json_is_string(first) && !json_is_array(first))
		return errf(err, "%s", kinds);
	bool strings = json_is_string(first);
	pq->n = (uint32_t)n;
	pq->seeds = xcalloc(n, sizeof(*pq->seeds));
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(input, i);
		char name[32];
		snprintf(name, sizeof(name), "input[%zu]", i);
		if (strings && !json_is_string(e))
			return errf(err, "'%s' must be a string, as 'input[0]' is", name);
		if (!strings && !json_is_array(e))
			return errf(err, "'%s' must be an array of token ids, as 'input[0]' is",
			            name);
		if ((strings ? text_input(e, name, &pq->seeds[i], tokens, err)
		             : token_ids(e, name, &pq->seeds[i], tokens, err)) < 0)
			return -1;
	}
	if ((uint64_t)pq->n * pq->dim > MOCK_MAX_EMBED_VALUES)
		return errf(err, "'input' has %u items of %u dimensions: at most %u values in all",
		            pq->n, pq->dim, (unsigned)MOCK_MAX_EMBED_VALUES);
	return 0;
}

/* vLLM's chat embeddings: "messages" as chat's route reads them, one
 * embedding; encoding_format and dimensions as OpenAI's. */
static int parse_chat_embed(const struct mock_config *cfg, const json_t *root, struct pool_req *pq,
                            uint64_t *tokens, char *err)
{
	pq->dim = cfg->embedding_dim;
	long long dim;
	int got = api_opt_int(root, "dimensions", "dimensions", 1, MOCK_MAX_EMBED_DIM, &dim, err);
	if (got < 0)
		return -1;
	if (got)
		pq->dim = (uint32_t)dim;
	const json_t *fmt = json_object_get(root, "encoding_format");
	if (fmt && !json_is_null(fmt)) {
		if (json_is_string(fmt) && strcmp(json_string_value(fmt), "base64") == 0)
			pq->b64 = true;
		else if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "float") != 0)
			return errf(err, "'encoding_format' must be \"float\" or \"base64\"");
	}
	if (json_object_get(root, "input"))
		return errf(err, "give 'messages' or 'input', not both");
	if (api_chat_prompt(root, tokens, err) < 0)
		return -1;
	char *text = json_dumps(json_object_get(root, "messages"), JSON_COMPACT);
	if (!text)
		return errf(err, "'messages' cannot be read");
	pq->n = 1;
	pq->seeds = xmalloc(sizeof(*pq->seeds));
	pq->seeds[0] = fnv_add(FNV_OFFSET, text, strlen(text));
	free(text);
	return 0;
}

/* A /v1/embeddings body that is chat embeddings': an object with
 * "messages". Read without parsing: the route's parse checks it whole. */
static bool chat_embed_claims(const struct http_request *req)
{
	json_t *root = json_loadb(req->body, req->body_len, 0, NULL);
	bool mine = json_is_object(root) && json_object_get(root, "messages");
	json_decref(root);
	return mine;
}

/* Cohere's /v2/embed and TEI's /embed: the texts (texts_key) of one
 * request, each an embedding of the server's dimension. */
static int parse_embed_texts(const struct mock_config *cfg, enum mock_api api, const json_t *root,
                             struct pool_req *pq, uint64_t *tokens, char *err)
{
	const char *key = api == API_EMBED_COHERE ? "texts" : "inputs";
	const json_t *in = json_object_get(root, key);
	pq->dim = cfg->embedding_dim;
	if (api == API_EMBED_COHERE) {
		static const char *const types[] = {"search_document", "search_query",
		                                    "classification", "clustering", "image", NULL};
		if (!json_is_string(json_object_get(root, "model")))
			return errf(err, "'model' must be a string (it is required)");
		const json_t *it = json_object_get(root, "input_type");
		bool ok = false;
		for (int k = 0; json_is_string(it) && types[k]; k++)
			ok = ok || strcmp(json_string_value(it), types[k]) == 0;
		if (!ok)
			return errf(err, "'input_type' must be one of \"search_document\", "
			                 "\"search_query\", \"classification\", \"clustering\" or "
			                 "\"image\"");
		const json_t *et = json_object_get(root, "embedding_types");
		if (et && !json_is_null(et)) {
			if (!json_is_array(et) || json_array_size(et) != 1 ||
			    !json_is_string(json_array_get(et, 0)) ||
			    strcmp(json_string_value(json_array_get(et, 0)), "float") != 0)
				return errf(err, "'embedding_types' must be [\"float\"] (the only "
				                 "type this server gives)");
		}
		const json_t *tr = json_object_get(root, "truncate");
		if (tr && !json_is_null(tr) &&
		    (!json_is_string(tr) || (strcmp(json_string_value(tr), "NONE") != 0 &&
		                             strcmp(json_string_value(tr), "START") != 0 &&
		                             strcmp(json_string_value(tr), "END") != 0)))
			return errf(err, "'truncate' must be \"NONE\", \"START\" or \"END\"");
	} else {
		bool flag = false;
		if (api_opt_bool(root, "normalize", "normalize", &flag, err) < 0 ||
		    api_opt_bool(root, "truncate", "truncate", &flag, err) < 0)
			return -1;
	}
	if (api == API_EMBED_TEI && json_is_string(in)) {
		pq->n = 1;
		pq->seeds = xmalloc(sizeof(*pq->seeds));
		return text_input(in, key, &pq->seeds[0], tokens, err);
	}
	if (!json_is_array(in) || json_array_size(in) == 0)
		return errf(err, api == API_EMBED_TEI
		                     ? "'inputs' must be a string or a non-empty array of strings"
		                     : "'texts' must be a non-empty array of strings");
	size_t n = json_array_size(in);
	if (n > MOCK_MAX_EMBED_INPUTS)
		return errf(err, "'%s' may hold at most %d items, not %zu", key,
		            MOCK_MAX_EMBED_INPUTS, n);
	pq->n = (uint32_t)n;
	pq->seeds = xcalloc(n, sizeof(*pq->seeds));
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(in, i);
		char name[32];
		snprintf(name, sizeof(name), "%s[%zu]", key, i);
		if (!json_is_string(e))
			return errf(err, "'%s' must be a string", name);
		if (text_input(e, name, &pq->seeds[i], tokens, err) < 0)
			return -1;
	}
	if ((uint64_t)pq->n * pq->dim > MOCK_MAX_EMBED_VALUES)
		return errf(err, "'%s' has %u items of %u dimensions: at most %u values in all",
		            key, pq->n, pq->dim, (unsigned)MOCK_MAX_EMBED_VALUES);
	if (api == API_EMBED_COHERE)
		pq->root_texts = in;
	return 0;
}

/* Value i (1-based) of the embedding from seed, before normalising. */
static double raw_value(uint64_t seed, uint32_t i)
{
	return 2.0 * ((double)(mock_splitmix64(seed, i) >> 11) * 0x1p-53) - 1.0;
}

static void embedding_values(uint64_t seed, uint32_t dim, float *out)
{
	double sum = 0;
	for (uint32_t i = 1; i <= dim; i++) {
		double v = raw_value(seed, i);
		sum += v * v;
	}
	double norm = sqrt(sum);
	for (uint32_t i = 1; i <= dim; i++)
		out[i - 1] = norm > 0 ? (float)(raw_value(seed, i) / norm) : 0.0f;
}

static void add_base64(struct dynbuf *b, const unsigned char *p, size_t n)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char out[4];
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[0] = tab[v >> 18];
		out[1] = tab[(v >> 12) & 63];
		out[2] = tab[(v >> 6) & 63];
		out[3] = tab[v & 63];
		dynbuf_add(b, out, 4);
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		out[0] = tab[v >> 18];
		out[1] = tab[(v >> 12) & 63];
		out[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[3] = '=';
		dynbuf_add(b, out, 4);
	}
}

/* An embedding's values as a JSON array. */
static void add_vector(struct dynbuf *b, const float *vals, uint32_t dim)
{
	ADD_LIT(b, "[");
	for (uint32_t i = 0; i < dim; i++) {
		char num[32];
		int len = fmt_double(num, (double)vals[i]);
		if (i)
			ADD_LIT(b, ",");
		dynbuf_add(b, num, (size_t)len);
	}
	ADD_LIT(b, "]");
}

/* Cohere's embed answer (embeddings by type, the texts, billed input
 * tokens) or TEI's (a bare array of vectors). */
static int embed_texts_body(const struct stream *s, struct dynbuf *b)
{
	const struct pool_req *pq = s->pq;
	float *vals = xmalloc((size_t)pq->dim * sizeof(*vals));
	bool cohere = pq->api == API_EMBED_COHERE;
	if (cohere) {
		ADD_LIT(b, "{\"id\":\"embed-mock-");
		api_add_u64(b, s->id);
		ADD_LIT(b, "\",\"embeddings\":{\"float\":");
	}
	ADD_LIT(b, "[");
	for (uint32_t k = 0; k < pq->n; k++) {
		if (k)
			ADD_LIT(b, ",");
		embedding_values(pq->seeds[k], pq->dim, vals);
		add_vector(b, vals, pq->dim);
	}
	ADD_LIT(b, "]");
	free(vals);
	if (!cohere)
		return 0;
	ADD_LIT(b, "},\"texts\":");
	char *t = json_dumps(pq->root_texts, JSON_COMPACT);
	if (t)
		dynbuf_addstr(b, t);
	free(t);
	ADD_LIT(b, ",\"meta\":{\"api_version\":{\"version\":\"2\"},\"billed_units\":{"
	           "\"input_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	return ADD_LIT(b, "}},\"response_type\":\"embeddings_by_type\"}");
}

static int embed_body(struct server *srv, const struct stream *s, struct dynbuf *b)
{
	const struct pool_req *pq = s->pq;
	float *vals = xmalloc((size_t)pq->dim * sizeof(*vals));
	unsigned char *bytes = pq->b64 ? xmalloc((size_t)pq->dim * 4) : NULL;
	ADD_LIT(b, "{\"id\":\"embd-mock-");
	api_add_u64(b, s->id);
	ADD_LIT(b, "\",\"object\":\"list\",\"created\":");
	api_add_u64(b, s->created < 0 ? 0 : (uint64_t)s->created);
	ADD_LIT(b, ",\"model\":");
	dynbuf_add(b, srv->model_json, srv->model_json_len);
	ADD_LIT(b, ",\"data\":[");
	for (uint32_t k = 0; k < pq->n; k++) {
		if (k)
			ADD_LIT(b, ",");
		ADD_LIT(b, "{\"object\":\"embedding\",\"index\":");
		api_add_u64(b, k);
		ADD_LIT(b, ",\"embedding\":");
		embedding_values(pq->seeds[k], pq->dim, vals);
		if (pq->b64) {
			for (uint32_t i = 0; i < pq->dim; i++) {
				uint32_t u;
				memcpy(&u, &vals[i], 4);
				bytes[4 * i] = (unsigned char)u;
				bytes[4 * i + 1] = (unsigned char)(u >> 8);
				bytes[4 * i + 2] = (unsigned char)(u >> 16);
				bytes[4 * i + 3] = (unsigned char)(u >> 24);
			}
			ADD_LIT(b, "\"");
			add_base64(b, bytes, (size_t)pq->dim * 4);
			ADD_LIT(b, "\"}");
		} else {
			ADD_LIT(b, "[");
			for (uint32_t i = 0; i < pq->dim; i++) {
				char num[32];
				int len = fmt_double(num, (double)vals[i]);
				if (i)
					ADD_LIT(b, ",");
				dynbuf_add(b, num, (size_t)len);
			}
			ADD_LIT(b, "]}");
		}
	}
	ADD_LIT(b, "],\"usage\":{\"prompt_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, ",\"total_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	free(vals);
	free(bytes);
	return ADD_LIT(b, "}}");
}

/* ---- rankings ---- */

static bool word_byte(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch >= 0x80;
}

/* The hash of the next word of s[*pos..n), lowercased; false at the end. */
static bool next_word(const char *s, size_t n, size_t *pos, uint64_t *hash)
{
	size_t i = *pos;
	while (i < n && !word_byte((unsigned char)s[i]))
		i++;
	if (i == n) {
		*pos = n;
		return false;
	}
	uint64_t h = FNV_OFFSET;
	for (; i < n && word_byte((unsigned char)s[i]); i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		h ^= ch;
		h *= FNV_PRIME;
	}
	*pos = i;
	*hash = h;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Score every passage against the query and sort (struct pool_req.ranks). */
static void score(struct pool_req *pq, const json_t *query, const json_t *const *texts)
{
	const char *q = json_string_value(query);
	size_t qn = json_string_length(query), pos = 0, nq = 0, cap = 16;
	uint64_t *qh = xmalloc(cap * sizeof(*qh)), h;
	while (next_word(q, qn, &pos, &h)) {
		if (nq == cap) {
			cap *= 2;
			qh = xrealloc(qh, cap * sizeof(*qh));
		}
		qh[nq++] = h;
	}
	qsort(qh, nq, sizeof(*qh), cmp_u64);
	size_t distinct = 0;
	for (size_t i = 0; i < nq; i++)
		if (distinct == 0 || qh[distinct - 1] != qh[i])
			qh[distinct++] = qh[i];
	uint32_t *seen = xcalloc(distinct ? distinct : 1, sizeof(*seen));
	pq->ranks = xmalloc((size_t)pq->n * sizeof(*pq->ranks));
	for (uint32_t k = 0; k < pq->n; k++) {
		const char *p = json_string_value(texts[k]);
		size_t pn = json_string_length(texts[k]);
		uint64_t found = 0;
		pos = 0;
		while (distinct && next_word(p, pn, &pos, &h)) {
			const uint64_t *hit = bsearch(&h, qh, distinct, sizeof(*qh), cmp_u64);
			if (hit && seen[hit - qh] != k + 1) {
				seen[hit - qh] = k + 1;
				found++;
			}
		}
		pq->ranks[k].index = k;
		pq->ranks[k].logit = 8.0 * (double)found / (double)(distinct ? distinct : 1) - 4.0;
	}
	qsort(pq->ranks, pq->n, sizeof(*pq->ranks), cmp_rank);
	free(seen);
	free(qh);
}

/* The passages' texts, checked: an array of n >= 1 strings, or (objects)
 * of objects with a string "text", or (either) of both. */
enum items { ITEMS_STRINGS, ITEMS_OBJECTS, ITEMS_EITHER };

static const json_t **texts_of(const json_t *arr, const char *name, enum items kind, uint32_t *n,
                               char *err)
{
	if (!json_is_array(arr) || json_array_size(arr) == 0) {
		errf(err, "'%s' must be a non-empty array", name);
		return NULL;
	}
	size_t count = json_array_size(arr);
	const json_t **texts = xcalloc(count, sizeof(*texts));
	for (size_t i = 0; i < count; i++) {
		const json_t *e = json_array_get(arr, i);
		const json_t *t = NULL;
		if (json_is_string(e) && kind != ITEMS_OBJECTS)
			t = e;
		else if (json_is_object(e) && kind != ITEMS_STRINGS)
			t = json_object_get(e, "text");
		if (!json_is_string(t)) {
			errf(err,
			     kind == ITEMS_STRINGS ? "'%s[%zu]' must be a string"
			     : kind == ITEMS_OBJECTS
			         ? "'%s[%zu]' must be an object with a string 'text'"
			         : "'%s[%zu]' must be a string or an object with a "
			           "string 'text'",
			     name, i);
			free(texts);
			return NULL;
		}
		texts[i] = t;
	}
	*n = (uint32_t)count; /* at most the body's size */
	return texts;
}

/* Prompt tokens of a ranking: query + passage, for every passage. */
static int rank_tokens(const json_t *query, const json_t *const *texts, uint32_t n,
                       uint64_t *tokens, char *err)
{
	uint64_t q = api_text_tokens(json_string_value(query), json_string_length(query));
	uint64_t sum = (uint64_t)n * q;
	for (uint32_t i = 0; i < n; i++)
		sum += api_text_tokens(json_string_value(texts[i]), json_string_length(texts[i]));
	if (sum > UINT32_MAX)
		return errf(err,
		            "the query's tokens once per passage plus the passages' come to %llu "
		            "prompt tokens; at most %u",
		            (unsigned long long)sum, (unsigned)UINT32_MAX);
	*tokens = sum;
	return 0;
}

static int parse_rank(enum mock_api api, const json_t *root, struct pool_req *pq, uint64_t *tokens,
                      char *err)
{
	const json_t *query = json_object_get(root, "query");
	const json_t **texts = NULL;
	if (api == API_RANK_NIM) {
		if (!json_is_object(query))
			return errf(err, "'query' must be an object with a string 'text'");
		query = json_object_get(query, "text");
		if (!json_is_string(query))
			return errf(err, "'query.text' must be a string");
		const json_t *tr = json_object_get(root, "truncate");
		if (tr && !json_is_null(tr) &&
		    (!json_is_string(tr) || (strcmp(json_string_value(tr), "NONE") != 0 &&
		                             strcmp(json_string_value(tr), "END") != 0)))
			return errf(err, "'truncate' must be \"NONE\" or \"END\"");
		texts = texts_of(json_object_get(root, "passages"), "passages", ITEMS_OBJECTS,
		                 &pq->n, err);
	} else if (api == API_RANK_COHERE) {
		if (!json_is_string(query))
			return errf(err, "'query' must be a string");
		texts = texts_of(json_object_get(root, "documents"), "documents", ITEMS_EITHER,
		                 &pq->n, err);
		if (!texts)
			return -1;
		pq->top_n = pq->n;
		const json_t *top = json_object_get(root, "top_n");
		if (top && !json_is_null(top)) {
			if (!json_is_integer(top) || json_integer_value(top) < 1) {
				free(texts);
				return errf(err, "'top_n' must be a positive integer");
			}
			if (json_integer_value(top) < pq->n)
				pq->top_n = (uint32_t)json_integer_value(top);
		}
		const json_t *mt = json_object_get(root, "max_tokens_per_doc");
		if (mt && !json_is_null(mt) &&
		    (!json_is_integer(mt) || json_integer_value(mt) < 1)) {
			free(texts);
			return errf(err, "'max_tokens_per_doc' must be a positive integer");
		}
		if (api_opt_bool(root, "return_documents", "return_documents", &pq->with_text,
		                 err) < 0) {
			free(texts);
			return -1;
		}
	} else {
		if (!json_is_string(query))
			return errf(err, "'query' must be a string");
		texts =
		    texts_of(json_object_get(root, "texts"), "texts", ITEMS_STRINGS, &pq->n, err);
		if (!texts)
			return -1;
		bool truncate = false;
		const json_t *dir = json_object_get(root, "truncation_direction");
		if (api_opt_bool(root, "raw_scores", "raw_scores", &pq->raw_scores, err) < 0 ||
		    api_opt_bool(root, "return_text", "return_text", &pq->with_text, err) < 0 ||
		    api_opt_bool(root, "truncate", "truncate", &truncate, err) < 0) {
			free(texts);
			return -1;
		}
		if (dir && !json_is_null(dir) &&
		    (!json_is_string(dir) || (strcasecmp(json_string_value(dir), "left") != 0 &&
		                              strcasecmp(json_string_value(dir), "right") != 0))) {
			free(texts);
			return errf(err, "'truncation_direction' must be \"Left\" or \"Right\"");
		}
	}
	if (!texts)
		return -1;
	if (rank_tokens(query, texts, pq->n, tokens, err) < 0) {
		free(texts);
		return -1;
	}
	if (api == API_RANK_NIM || api == API_RANK_TEI)
		pq->top_n = pq->n;
	score(pq, query, texts);
	if (pq->with_text)
		pq->texts = texts;
	else
		free(texts);
	return 0;
}

static double sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

static void add_double(struct dynbuf *b, double v)
{
	char num[32];
	int len = fmt_double(num, v);
	dynbuf_add(b, num, (size_t)len);
}

static void add_text(struct dynbuf *b, const json_t *t)
{
	ADD_LIT(b, "\"");
	api_add_json_text(b, json_string_value(t), json_string_length(t));
	ADD_LIT(b, "\"");
}

static int rank_body(const struct stream *s, struct dynbuf *b)
{
	const struct pool_req *pq = s->pq;
	switch (pq->api) {
	case API_RANK_NIM:
		ADD_LIT(b, "{\"rankings\":[");
		break;
	case API_RANK_COHERE:
		ADD_LIT(b, "{\"id\":\"rerank-mock-");
		api_add_u64(b, s->id);
		ADD_LIT(b, "\",\"results\":[");
		break;
	default:
		ADD_LIT(b, "[");
		break;
	}
	for (uint32_t k = 0; k < pq->top_n; k++) {
		const struct rank *r = &pq->ranks[k];
		if (k)
			ADD_LIT(b, ",");
		ADD_LIT(b, "{\"index\":");
		api_add_u64(b, r->index);
		switch (pq->api) {
		case API_RANK_NIM:
			ADD_LIT(b, ",\"logit\":");
			add_double(b, r->logit);
			break;
		case API_RANK_COHERE:
			ADD_LIT(b, ",\"relevance_score\":");
			add_double(b, sigmoid(r->logit));
			if (pq->with_text) {
				ADD_LIT(b, ",\"document\":{\"text\":");
				add_text(b, pq->texts[r->index]);
				ADD_LIT(b, "}");
			}
			break;
		default:
			ADD_LIT(b, ",\"score\":");
			add_double(b, pq->raw_scores ? r->logit : sigmoid(r->logit));
			if (pq->with_text) {
				ADD_LIT(b, ",\"text\":");
				add_text(b, pq->texts[r->index]);
			}
			break;
		}
		ADD_LIT(b, "}");
	}
	switch (pq->api) {
	case API_RANK_NIM:
		ADD_LIT(b, "],\"usage\":{\"prompt_tokens\":");
		api_add_u64(b, s->prompt_tokens);
		ADD_LIT(b, ",\"total_tokens\":");
		api_add_u64(b, s->prompt_tokens);
		return ADD_LIT(b, "}}");
	case API_RANK_COHERE:
		ADD_LIT(b, "],\"meta\":{\"api_version\":{\"version\":\"2\"},\"billed_units\":"
		           "{\"search_units\":");
		api_add_u64(b, (pq->n + SEARCH_UNIT_DOCS - 1) / SEARCH_UNIT_DOCS);
		ADD_LIT(b, "}},\"usage\":{\"total_tokens\":");
		api_add_u64(b, s->prompt_tokens);
		return ADD_LIT(b, "}}");
	default:
		return ADD_LIT(b, "]");
	}
}

static int pool_parse(struct server *srv, enum mock_api api, bool stream_path,
                      const struct http_request *req, struct gen_req *g, char *err)
{
	(void)stream_path;
	const struct mock_config *cfg = srv->cfg;
	const char *body = req->body;
	size_t len = req->body_len;
	json_t *root = api_load_object(body, len, err);
	if (!root)
		return -1;
	struct pool_req *pq = xcalloc(1, sizeof(*pq));
	pq->api = api;
	uint64_t tokens = 0;
	int rc = api_check_model(root, err);
	if (rc == 0)
		rc = api == API_EMBED        ? parse_embed(cfg, root, pq, &tokens, err)
		     : api == API_CHAT_EMBED ? parse_chat_embed(cfg, root, pq, &tokens, err)
		     : api == API_EMBED_COHERE || api == API_EMBED_TEI
		         ? parse_embed_texts(cfg, api, root, pq, &tokens, err)
		         : parse_rank(api, root, pq, &tokens, err);
	if (rc < 0 || tokens > UINT32_MAX) {
		if (rc == 0)
			errf(err, "the request comes to %llu prompt tokens; at most %u",
			     (unsigned long long)tokens, (unsigned)UINT32_MAX);
		json_decref(root);
		pool_free(pq);
		return -1;
	}
	if (pq->with_text || pq->root_texts)
		pq->root = root; /* pq->texts, pq->root_texts point into it */
	else
		json_decref(root);
	if (api == API_CHAT_EMBED && srv->cfg->media_dir)
		api_save_chat_media(srv->cfg->media_dir, body, len);
	g->pq = pq;
	g->max_tokens = 1; /* one step: the prefill, then the answer */
	g->prompt_tokens = (uint32_t)tokens;
	return 0;
}

/* The body of an embeddings or rankings response. */
static int pool_body(struct server *srv, const struct stream *s, struct dynbuf *b, char *extra,
                     size_t extra_size)
{
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	if (s->pq->api == API_EMBED_COHERE || s->pq->api == API_EMBED_TEI)
		return embed_texts_body(s, b);
	return s->pq->api == API_EMBED || s->pq->api == API_CHAT_EMBED ? embed_body(srv, s, b)
	                                                                : rank_body(s, b);
}

const struct mock_handler mock_embed = {
	.api = API_EMBED,
	.paths = {{"/v1/embeddings", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_rank_nim = {
	.api = API_RANK_NIM,
	.paths = {{"/v1/ranking", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_rank_cohere = {
	.api = API_RANK_COHERE,
	.paths = {{"/v2/rerank", false}, {"/v1/rerank", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_rank_tei = {
	.api = API_RANK_TEI,
	.paths = {{"/rerank", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_embed_cohere = {
	.api = API_EMBED_COHERE,
	.paths = {{"/v2/embed", false}, {"/v1/embed", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_embed_tei = {
	.api = API_EMBED_TEI,
	.paths = {{"/embed", false}},
	.pool = true,
	.parse = pool_parse,
	.body = pool_body,
};

const struct mock_handler mock_chat_embed = {
	.api = API_CHAT_EMBED,
	.paths = {{"/v1/embeddings", false}},
	.pool = true,
	.claims = chat_embed_claims,
	.parse = pool_parse,
	.body = pool_body,
};
