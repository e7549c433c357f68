/* routes.c - the table of headroom-mock's route handlers, indexed by enum
 * mock_api (mock.h, struct mock_handler). A new API adds its line here. */
#include "mock.h"

static const struct mock_handler *const table[API__COUNT] = {
	[API_CHAT] = &mock_chat,
	[API_COMPLETION] = &mock_completion,
	[API_TGI] = &mock_tgi,
	[API_EMBED] = &mock_embed,
	[API_RANK_NIM] = &mock_rank_nim,
	[API_RANK_COHERE] = &mock_rank_cohere,
	[API_RANK_TEI] = &mock_rank_tei,
	[API_EMBED_COHERE] = &mock_embed_cohere,
	[API_EMBED_TEI] = &mock_embed_tei,
	[API_VLLM_GEN] = &mock_vllm_gen,
	[API_SGLANG_GEN] = &mock_sglang_gen,
	[API_RESPONSES] = &mock_responses,
	[API_MESSAGES] = &mock_messages,
	[API_TRANSCRIBE] = &mock_transcribe,
	[API_IMAGE_GEN] = &mock_image_gen,
	[API_IMAGE_EDIT] = &mock_image_edit,
	[API_IMAGE_RETRIEVAL] = &mock_image_retrieval,
	[API_CHAT_EMBED] = &mock_chat_embed,
};

const struct mock_handler *mock_handler(unsigned api)
{
	return api < API__COUNT ? table[api] : NULL;
}
