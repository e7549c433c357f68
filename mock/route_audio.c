/* route_audio.c - OpenAI's audio transcription API in headroom-mock, its
 * route handler (mock.h, struct mock_handler): POST /v1/audio/transcriptions
 * with a multipart/form-data body.
 *
 * Request: the form's parts, read with bounds (a part's header section at
 * most 4 KiB, at most 64 parts): `file` (required: a RIFF/WAVE PCM file),
 * `model`, `stream` ("true" or "false"), `response_format` ("json", the
 * default; the mock writes no other), `language`, `prompt`, `temperature`
 * and any other field (ignored). The clip's length sets the work: its
 * prompt tokens are its 20 ms frames (50 a second, at least 1; Whisper's
 * encoder reads as many), its transcript 3 words a second (at least 1),
 * so the load model's prefill and decode times follow the clip.
 *
 * Answers, in the timing of chat (api.c: TTFT, ITL, the load model):
 *   not streamed: {"text":"...","usage":{...}} once the last word is due;
 *   streamed (stream=true): one SSE event per step,
 *     {"type":"transcript.text.delta","delta":"..."}, then
 *     {"type":"transcript.text.done","text":"...","usage":{...}}
 * with usage {"type":"tokens","input_tokens":P,"input_token_details":
 * {"text_tokens":0,"audio_tokens":P},"output_tokens":N,"total_tokens":P+N},
 * as OpenAI's streaming transcription writes them (no [DONE]). With
 * --media-dir the uploaded file is written there (K.upload.wav).
 * The multipart reader (mock_form_*) is shared with route_image.c.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mock.h"
#include "util.h"

#define FORM_MAX_PART_HEAD 4096
#define WORDS_PER_S 3
#define FRAMES_PER_S 50

/* The boundary parameter of a multipart/form-data Content-Type (quoted or
 * not): 0, or -1 with err. */
int mock_form_boundary(const struct http_request *req, char *out, char *err)
{
	const char *v = req->content_type;
	size_t n = req->content_type_len;
	static const char mt[] = "multipart/form-data";
	if (!v || n < sizeof mt - 1 || strncasecmp(v, mt, sizeof mt - 1) != 0)
		return errf(err, "Content-Type must be multipart/form-data");
	const char *end = v + n;
	const char *p = v + sizeof mt - 1;
	while (p < end) {
		while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
			p++;
		const char *k = p;
		while (p < end && *p != '=' && *p != ';')
			p++;
		if (p >= end || *p != '=')
			continue;
		size_t kn = (size_t)(p - k);
		p++;
		const char *val = p;
		size_t vn;
		if (p < end && *p == '"') {
			val = ++p;
			while (p < end && *p != '"')
				p++;
			vn = (size_t)(p - val);
			if (p < end)
				p++;
		} else {
			while (p < end && *p != ';' && *p != ' ' && *p != '\t')
				p++;
			vn = (size_t)(p - val);
		}
		if (kn == 8 && strncasecmp(k, "boundary", 8) == 0) {
			if (vn == 0 || vn > FORM_MAX_BOUNDARY)
				return errf(err, "the multipart boundary must be 1 to %d bytes",
				            FORM_MAX_BOUNDARY);
			memcpy(out, val, vn);
			out[vn] = '\0';
			return 0;
		}
	}
	return errf(err, "Content-Type multipart/form-data needs a boundary");
}

/* A parameter of a Content-Disposition value: name="..." or filename="...". */
static bool disp_param(const char *h, size_t n, const char *key, const char **v, size_t *vn)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i + kl + 2 <= n; i++) {
		if ((i == 0 || h[i - 1] == ' ' || h[i - 1] == ';' || h[i - 1] == '\t') &&
		    strncasecmp(h + i, key, kl) == 0 && h[i + kl] == '=') {
			const char *p = h + i + kl + 1, *end = h + n;
			if (p < end && *p == '"') {
				const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
				if (!q)
					return false;
				*v = p + 1;
				*vn = (size_t)(q - p - 1);
			} else {
				const char *q = p;
				while (q < end && *q != ';' && *q != '\r')
					q++;
				*v = p;
				*vn = (size_t)(q - p);
			}
			return true;
		}
	}
	return false;
}

/* The parts of body (boundary b): their count, or -1 with err. */
int mock_form_parse(const char *body, size_t len, const char *b, struct form_part *parts,
                    char *err)
{
	char delim[FORM_MAX_BOUNDARY + 8];
	int dn = snprintf(delim, sizeof delim, "--%s", b);
	const char *end = body + len;
	const char *p = memmem(body, len, delim, (size_t)dn);
	int n = 0;
	if (!p)
		return errf(err, "the multipart body has no boundary line");
	for (;;) {
		p += dn;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return n; /* the closing boundary */
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return errf(err, "malformed multipart boundary line");
		p += 2;
		if (n == FORM_MAX_PARTS)
			return errf(err, "more than %d multipart parts", FORM_MAX_PARTS);
		size_t avail = (size_t)(end - p);
		const char *hend =
		    memmem(p, avail < FORM_MAX_PART_HEAD ? avail : FORM_MAX_PART_HEAD, "\r\n\r\n", 4);
		if (!hend)
			return errf(err, "a multipart part's headers do not end within %d bytes",
			            FORM_MAX_PART_HEAD);
		struct form_part *fp = &parts[n];
		memset(fp, 0, sizeof *fp);
		bool disp = false;
		for (const char *l = p; l < hend;) {
			const char *le = memmem(l, (size_t)(hend + 2 - l), "\r\n", 2);
			if (!le)
				le = hend;
			static const char cd[] = "content-disposition:";
			if ((size_t)(le - l) > sizeof cd - 1 && strncasecmp(l, cd, sizeof cd - 1) == 0) {
				const char *v = l + sizeof cd - 1;
				size_t vn = (size_t)(le - v);
				disp = disp_param(v, vn, "name", &fp->name, &fp->name_len);
				disp_param(v, vn, "filename", &fp->filename, &fp->filename_len);
			}
			l = le + 2;
		}
		if (!disp)
			return errf(err, "a multipart part has no Content-Disposition name");
		fp->data = hend + 4;
		char sep[FORM_MAX_BOUNDARY + 8];
		int sn = snprintf(sep, sizeof sep, "\r\n%s", delim);
		const char *next = memmem(fp->data, (size_t)(end - fp->data), sep, (size_t)sn);
		if (!next)
			return errf(err, "a multipart part is not closed by a boundary");
		fp->len = (size_t)(next - fp->data);
		n++;
		p = next + 2;
	}
}

bool mock_form_part_is(const struct form_part *p, const char *name)
{
	return p->name_len == strlen(name) && memcmp(p->name, name, p->name_len) == 0;
}

bool mock_form_value_is(const struct form_part *p, const char *v)
{
	return p->len == strlen(v) && memcmp(p->data, v, p->len) == 0;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The length of a RIFF/WAVE PCM file in ms: 0, or -1 with err. */
static int wav_ms(const unsigned char *d, size_t n, uint64_t *ms, char *err)
{
	if (n < 12 || memcmp(d, "RIFF", 4) != 0 || memcmp(d + 8, "WAVE", 4) != 0)
		return errf(err, "'file' must be a WAV file (RIFF/WAVE) for headroom-mock");
	uint32_t rate = 0, align = 0;
	for (size_t off = 12; off + 8 <= n;) {
		uint32_t sz = le32(d + off + 4);
		const unsigned char *c = d + off + 8;
		size_t left = n - off - 8;
		if (memcmp(d + off, "fmt ", 4) == 0 && sz >= 16 && left >= 16) {
			rate = le32(c + 4);
			align = (uint32_t)c[12] | (uint32_t)c[13] << 8;
		} else if (memcmp(d + off, "data", 4) == 0) {
			if (!rate || !align)
				return errf(err, "'file': a WAV data chunk before a valid fmt chunk");
			uint64_t bytes = sz < left ? sz : left;
			*ms = bytes / align * 1000 / rate;
			return 0;
		}
		if (sz > left)
			break;
		off += 8 + (size_t)sz + (sz & 1);
	}
	return errf(err, "'file': a WAV file without a data chunk");
}

static int transcribe_parse(struct server *srv, enum mock_api api, bool stream_path,
                            const struct http_request *req, struct gen_req *g, char *err)
{
	(void)api;
	(void)stream_path;
	char boundary[FORM_MAX_BOUNDARY + 1];
	struct form_part parts[FORM_MAX_PARTS];
	if (mock_form_boundary(req, boundary, err) < 0)
		return -1;
	int n = mock_form_parse(req->body, req->body_len, boundary, parts, err);
	if (n < 0)
		return -1;
	const struct form_part *file = NULL;
	for (int i = 0; i < n; i++) {
		const struct form_part *p = &parts[i];
		if (mock_form_part_is(p, "file")) {
			file = p;
		} else if (mock_form_part_is(p, "stream")) {
			if (mock_form_value_is(p, "true"))
				g->stream = true;
			else if (!mock_form_value_is(p, "false"))
				return errf(err, "'stream' must be true or false");
		} else if (mock_form_part_is(p, "response_format")) {
			if (!mock_form_value_is(p, "json"))
				return errf(err, "headroom-mock writes 'response_format' json only");
		} else if (mock_form_part_is(p, "model")) {
			if (p->len == 0)
				return errf(err, "'model' must not be empty");
		}
	}
	if (!file || file->len == 0)
		return errf(err, "'file' is required (a multipart part named file)");
	uint64_t ms = 0;
	if (wav_ms((const unsigned char *)file->data, file->len, &ms, err) < 0)
		return -1;
	uint64_t words = (ms * WORDS_PER_S + 999) / 1000, frames = (ms * FRAMES_PER_S + 999) / 1000;
	g->max_tokens = (uint32_t)(words < 1 ? 1 : words > HR_MAX_OSL ? HR_MAX_OSL : words);
	g->prompt_tokens = (uint32_t)(frames < 1 ? 1 : frames);
	if (srv->cfg->media_dir)
		api_save_media(srv->cfg->media_dir, "upload.wav", file->data, file->len);
	return 0;
}

static void add_usage(struct dynbuf *b, const struct stream *s)
{
	ADD_LIT(b, "\"usage\":{\"type\":\"tokens\",\"input_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, ",\"input_token_details\":{\"text_tokens\":0,\"audio_tokens\":");
	api_add_u64(b, s->prompt_tokens);
	ADD_LIT(b, "},\"output_tokens\":");
	api_add_u64(b, s->max_tokens);
	ADD_LIT(b, ",\"total_tokens\":");
	api_add_u64(b, (uint64_t)s->prompt_tokens + s->max_tokens);
	ADD_LIT(b, "}");
}

/* One delta event of the next n words. */
static void transcribe_events(struct server *srv, struct conn *c, uint32_t n)
{
	struct api_piece pc[3] = {
	    API_PIECE("{\"type\":\"transcript.text.delta\",\"delta\":\""),
	    {NULL, n, c->st.sent},
	    API_PIECE("\"}"),
	};
	(void)srv;
	api_put_event(c, true, pc, 3);
}

/* An injected malformed event: a delta cut off inside its text. */
static void transcribe_malformed(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"type\":\"transcript.text.delta\",\"delta\":\"");
	api_add_words(b, &c->st, c->st.sent, 1);
	api_send_event(srv, c, true);
}

static void transcribe_end(struct server *srv, struct conn *c)
{
	struct dynbuf *b = &srv->scratch;
	const struct stream *s = &c->st;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"type\":\"transcript.text.done\",\"text\":\"");
	api_add_words(b, s, 0, s->max_tokens);
	ADD_LIT(b, "\",");
	add_usage(b, s);
	ADD_LIT(b, "}");
	api_send_event(srv, c, true);
}

static int transcribe_body(struct server *srv, const struct stream *s, struct dynbuf *b,
                           char *extra, size_t extra_size)
{
	(void)srv;
	(void)extra;
	(void)extra_size;
	dynbuf_reset(b);
	ADD_LIT(b, "{\"text\":\"");
	api_add_words(b, s, 0, s->max_tokens);
	ADD_LIT(b, "\",");
	add_usage(b, s);
	return ADD_LIT(b, "}");
}

const struct mock_handler mock_transcribe = {
	.api = API_TRANSCRIBE,
	.paths = {{"/v1/audio/transcriptions", false}},
	.parse = transcribe_parse,
	.events = transcribe_events,
	.malformed = transcribe_malformed,
	.events_end = transcribe_end,
	.body = transcribe_body,
};
