/* ephandler.c - the table of endpoint handlers, indexed by SPEC_EP_* (see
 * ephandler.h). A new endpoint type adds its line here. */
#include "ephandler.h"

static const struct ep_handler *const table[SPEC_EP__COUNT] = {
	[SPEC_EP_CHAT] = &ep_chat,
	[SPEC_EP_COMPLETIONS] = &ep_completions,
	[SPEC_EP_EMBEDDINGS] = &ep_embeddings,
	[SPEC_EP_RANKINGS_NIM] = &ep_rankings_nim,
	[SPEC_EP_RANKINGS_COHERE] = &ep_rankings_cohere,
	[SPEC_EP_RANKINGS_TEI] = &ep_rankings_tei,
	[SPEC_EP_TGI] = &ep_tgi,
	[SPEC_EP_TEMPLATE] = &ep_template,
	[SPEC_EP_EMBEDDINGS_NIM] = &ep_embeddings_nim,
	[SPEC_EP_EMBEDDINGS_COHERE] = &ep_embeddings_cohere,
	[SPEC_EP_EMBEDDINGS_TEI] = &ep_embeddings_tei,
	[SPEC_EP_VLLM_GENERATE] = &ep_vllm_generate,
	[SPEC_EP_SGLANG_GENERATE] = &ep_sglang_generate,
	[SPEC_EP_RAW] = &ep_raw,
	[SPEC_EP_RESPONSES] = &ep_responses,
	[SPEC_EP_MESSAGES] = &ep_messages,
	[SPEC_EP_AUDIO_TRANSCRIPTION] = &ep_audio_transcription,
	[SPEC_EP_IMAGE_GENERATION] = &ep_image_generation,
	[SPEC_EP_IMAGE_EDIT] = &ep_image_edit,
	[SPEC_EP_IMAGE_RETRIEVAL] = &ep_image_retrieval,
	[SPEC_EP_CHAT_EMBEDDINGS] = &ep_chat_embeddings,
};

const struct ep_handler *ep_handler(int endpoint)
{
	return endpoint >= 0 && endpoint < SPEC_EP__COUNT ? table[endpoint] : NULL;
}
