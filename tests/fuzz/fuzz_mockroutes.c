/* fuzz_mockroutes.c - libFuzzer target for headroom-mock's request-body
 * readers behind each JSON route's ->parse: chat and completions
 * (mock/route_openai.c), TGI (mock/route_tgi.c), embeddings, rankings
 * (NIM, Cohere, TEI), Cohere and TEI embed and chat embeddings
 * (mock/route_pool.c), vLLM's and SGLang's generate (mock/route_native.c),
 * Responses and Messages (mock/route_llm.c), image generation and
 * retrieval (mock/route_image.c). The multipart routes (transcription,
 * image edit) are fuzz_mockform's; the quick chat reader fuzz_mockreq's.
 *
 * Input: byte 0's low 4 bits pick the route (one of the 16 above), its top
 * bit the path's stream flag (TGI's /generate_stream); the rest is the
 * body, parsed from a private buffer of exactly its size (so that
 * overreads are caught). Checked: a refusal (-1) has a message and hands
 * nothing over (no pool request, no TGI prefix); an accepted body leaves
 * no message and gives a request in range: 1 to HR_MAX_OSL steps (0 too
 * for chat, completions and Responses, which take max_tokens 0); the pool
 * routes one step and a pool request (image retrieval: 1 to 64 pictures
 * of 256 prompt tokens each, no pool request), the others none; images
 * 1 to 10 of sides 1 to MEDIA_MAX_SIDE, 16 steps each, one when
 * streamed; TGI streams exactly on the stream path, and not with more
 * than MOCK_MAX_TGI_DETAIL_TOKENS detailed tokens; vLLM never streams.
 * Reading the body a second time gives the same verdict, message and
 * request. Leaks and overreads are ASan's.
 *
 * Build: see tests/CMakeLists.txt (the mock's sources but main.c are
 * compiled in).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "media.h"
#include "mock.h"
#include "util.h"

static const enum mock_api routes[16] = {
    API_CHAT,        API_COMPLETION, API_TGI,          API_EMBED,     API_RANK_NIM,
    API_RANK_COHERE, API_RANK_TEI,   API_EMBED_COHERE, API_EMBED_TEI, API_VLLM_GEN,
    API_SGLANG_GEN,  API_RESPONSES,  API_MESSAGES,     API_IMAGE_GEN, API_IMAGE_RETRIEVAL,
    API_CHAT_EMBED,
};

static int parse(const struct mock_handler *h, enum mock_api api, bool stream_path,
                 const char *body, size_t len, struct gen_req *g, char *err)
{
	struct mock_config cfg;
	struct server srv;
	memset(&cfg, 0, sizeof cfg);
	memset(&srv, 0, sizeof srv);
	cfg.model = "mock-model";
	cfg.embedding_dim = MOCK_DEFAULT_EMBED_DIM;
	cfg.tokens_per_chunk = 1;
	srv.cfg = &cfg;
	struct http_request req;
	memset(&req, 0, sizeof req);
	req.body = body;
	req.body_len = len;
	memset(g, 0, sizeof *g);
	err[0] = '\0';
	return h->parse(&srv, api, stream_path, &req, g, err);
}

static void check(enum mock_api api, const struct mock_handler *h, bool stream_path, int rc,
                  const struct gen_req *g, const char *err)
{
	REQUIRE(rc == 0 || rc == -1);
	if (rc < 0) {
		REQUIRE(err[0] != '\0');
		REQUIRE(g->pq == NULL && g->prefix == NULL);
		return;
	}
	REQUIRE(err[0] == '\0');
	/* chat, completions and Responses take a max_tokens of 0 (docs/mock.md) */
	REQUIRE(g->max_tokens <= HR_MAX_OSL);
	REQUIRE(g->max_tokens >= 1 || api == API_CHAT || api == API_COMPLETION ||
	        api == API_RESPONSES);
	REQUIRE(!g->prefix == (g->prefix_len == 0)); /* TGI's inputs: never empty */
	switch (api) {
	case API_IMAGE_RETRIEVAL:
		REQUIRE(g->pq == NULL && !g->stream && g->max_tokens == 1);
		REQUIRE(g->img_n >= 1 && g->img_n <= 64);
		REQUIRE(g->prompt_tokens == (uint32_t)g->img_n * 256);
		break;
	case API_IMAGE_GEN:
		REQUIRE(g->pq == NULL);
		REQUIRE(g->img_n >= 1 && g->img_n <= 10);
		REQUIRE(g->max_tokens == (uint32_t)g->img_n * 16);
		REQUIRE(g->img_w >= 1 && g->img_w <= MEDIA_MAX_SIDE);
		REQUIRE(g->img_h >= 1 && g->img_h <= MEDIA_MAX_SIDE);
		REQUIRE(g->img_partial <= 3 && g->prompt_tokens >= 1);
		REQUIRE(!g->stream || g->img_n == 1);
		break;
	case API_TGI:
		REQUIRE(g->pq == NULL && g->stream == stream_path);
		REQUIRE(g->stream || !g->details || g->max_tokens <= MOCK_MAX_TGI_DETAIL_TOKENS);
		break;
	case API_VLLM_GEN:
		REQUIRE(g->pq == NULL && !g->stream && g->prompt_tokens >= 1);
		break;
	default:
		if (h->pool)
			REQUIRE(g->pq != NULL && g->max_tokens == 1 && !g->stream);
		else
			REQUIRE(g->pq == NULL);
		break;
	}
	if (api != API_TGI)
		REQUIRE(g->prefix == NULL && !g->details && !g->seed_given);
	if (api != API_IMAGE_GEN && api != API_IMAGE_RETRIEVAL)
		REQUIRE(g->img_n == 0 && g->img_w == 0 && g->img_h == 0);
}

static void release(struct gen_req *g)
{
	pool_free(g->pq);
	free(g->prefix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum mock_api api = routes[data[0] & 15];
	bool stream_path = data[0] & 0x80;
	const struct mock_handler *h = mock_handler(api);
	REQUIRE(h != NULL && h->api == api && h->parse != NULL);
	size_t len = size - 1;
	char *body = malloc(len ? len : 1);
	REQUIRE(body != NULL);
	if (len)
		memcpy(body, data + 1, len);
	struct gen_req a, b;
	char ea[HR_ERRLEN], eb[HR_ERRLEN];
	int ra = parse(h, api, stream_path, body, len, &a, ea);
	check(api, h, stream_path, ra, &a, ea);
	int rb = parse(h, api, stream_path, body, len, &b, eb);
	REQUIRE(ra == rb && strcmp(ea, eb) == 0);
	REQUIRE(a.stream == b.stream && a.include_usage == b.include_usage);
	REQUIRE(a.prompt_tokens == b.prompt_tokens && a.max_tokens == b.max_tokens);
	REQUIRE(a.details == b.details && a.seed_given == b.seed_given && a.seed == b.seed);
	REQUIRE(a.prefix_len == b.prefix_len && !a.prefix == !b.prefix);
	REQUIRE(!a.prefix || memcmp(a.prefix, b.prefix, a.prefix_len) == 0);
	REQUIRE(!a.pq == !b.pq && a.ignore_eos == b.ignore_eos && a.min_tokens == b.min_tokens);
	REQUIRE(a.img_n == b.img_n && a.img_w == b.img_w && a.img_h == b.img_h);
	REQUIRE(a.img_partial == b.img_partial);
	release(&a);
	release(&b);
	free(body);
	return 0;
}
