/* fuzz_mockform.c - libFuzzer target for headroom-mock's reading of its
 * multipart/form-data uploads: an audio transcription (mock/route_audio.c:
 * the body, its parts' headers and the WAV file in it) or an image edit
 * (mock/route_image.c: the picture, prompt, n and size fields).
 *
 * Input: byte 0's top bit picks the image edit route, its low 7 bits mod
 * 80 are the length k of the boundary (so some are too long), the next k
 * bytes the boundary put into the Content-Type
 * header, the rest the body, parsed from a private buffer of exactly its
 * size (so overreads are caught). Checked: the reading either fails with
 * a message or gives a request with 1 to HR_MAX_OSL words (steps) and at
 * least one prompt token (an edit: 1 to 10 pictures of a size, not
 * streamed). Any violation aborts.
 *
 * Build: see tests/CMakeLists.txt (the mock's sources but main.c are
 * compiled in).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hrlimits.h"
#include "mock.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t k = (data[0] & 0x7f) % 80;
	enum mock_api api = data[0] & 0x80 ? API_IMAGE_EDIT : API_TRANSCRIBE;
	if (size < 1 + k)
		return 0;
	char ctype[160];
	int cn = snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%.*s", (int)k,
	                  (const char *)data + 1);
	size_t len = size - 1 - k;
	char *body = malloc(len ? len : 1);
	REQUIRE(body != NULL);
	if (len)
		memcpy(body, data + 1 + k, len);
	struct mock_config cfg;
	struct server srv;
	memset(&cfg, 0, sizeof cfg);
	memset(&srv, 0, sizeof srv);
	srv.cfg = &cfg;
	struct http_request req;
	memset(&req, 0, sizeof req);
	req.body = body;
	req.body_len = len;
	req.content_type = ctype;
	req.content_type_len = (size_t)cn < sizeof ctype ? (size_t)cn : sizeof ctype - 1;
	struct gen_req g;
	memset(&g, 0, sizeof g);
	char err[HR_ERRLEN] = "";
	const struct mock_handler *h = mock_handler(api);
	REQUIRE(h != NULL);
	if (h->parse(&srv, api, false, &req, &g, err) == 0) {
		REQUIRE(g.max_tokens >= 1 && g.max_tokens <= HR_MAX_OSL);
		REQUIRE(g.prompt_tokens >= 1);
		if (api == API_IMAGE_EDIT)
			REQUIRE(g.img_n >= 1 && g.img_n <= 10 && g.img_w >= 1 && g.img_h >= 1 &&
			        !g.stream);
	} else {
		REQUIRE(err[0] != '\0');
	}
	free(body);
	return 0;
}
