/* inline.c - a dataset's local media files, inlined before its upload
 * (docs/datasets.md, "Pictures and audio").
 *
 * single_turn, multi_turn and random_pool entries name pictures in
 * `image` / `images` and a clip in `audio`. The daemon takes URLs (and
 * data: URLs) and "FORMAT,BASE64" audio only: it never reads files of the
 * client's machine. So `headroom dataset upload` and `headroom profile
 * --input-file` read each value that is a local path (no URL scheme;
 * relative to the dataset file's directory), check what it holds (PNG,
 * JPEG, GIF or WebP; WAV or MP3) and put it in the entry as a data: URL
 * (pictures) or "wav,BASE64" / "mp3,BASE64" (audio), as AIPerf does with
 * its local files. A file that does not need it is sent unchanged. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "dynbuf.h"
#include "hrlimits.h"
#include "media.h"
#include "util.h"

#define INLINE_FILE_MAX (32u << 20) /* one picture or clip */

struct inl {
	const char *dir; /* the dataset file's directory ("" : the current one) */
	uint32_t line;
	int done; /* files inlined */
	char *err;
};

static int inl_fail(struct inl *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int inl_fail(struct inl *x, const char *fmt, ...)
{
	char msg[HR_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(x->err, HR_ERRLEN, "line %u: %.200s", x->line, msg);
	return -1;
}

/* A URL or data: URL ("scheme:" first), not a path. */
static int has_scheme(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	for (const char *p = s + 1; *p; p++) {
		if (*p == ':')
			return p - s > 1; /* "C:" is a drive, not a scheme */
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.'))
			return 0;
	}
	return 0;
}

/* The file at path (relative to x->dir) read whole into *data. */
static int read_file(struct inl *x, const char *field, const char *path, struct dynbuf *data)
{
	char *full =
	    path[0] == '/' || !x->dir[0] ? xstrdup(path) : xasprintf("%s/%s", x->dir, path);
	FILE *f = fopen(full, "rb");
	struct stat st;
	int rc = 0;
	if (!f || fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode))
		rc = inl_fail(x, "'%s': cannot read the file %s: %s", field, full,
		              f ? "not a regular file" : strerror(errno));
	else if ((unsigned long long)st.st_size > INLINE_FILE_MAX)
		rc = inl_fail(x, "'%s': %s is larger than %u MiB", field, full,
		              INLINE_FILE_MAX >> 20);
	else {
		size_t n = (size_t)st.st_size;
		char *p = dynbuf_space(data, n ? n : 1);
		if (!p || fread(p, 1, n, f) != n)
			rc = inl_fail(x, "'%s': cannot read the file %s", field, full);
		else
			dynbuf_commit(data, n);
	}
	if (f)
		fclose(f);
	free(full);
	return rc;
}

static const char *picture_type(const unsigned char *p, size_t n)
{
	if (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
		return "image/jpeg";
	if (n >= 6 && (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0))
		return "image/gif";
	if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
		return "image/webp";
	return NULL;
}

static const char *clip_type(const unsigned char *p, size_t n)
{
	if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WAVE", 4) == 0)
		return "wav";
	if ((n >= 3 && memcmp(p, "ID3", 3) == 0) ||
	    (n >= 2 && p[0] == 0xff && (p[1] & 0xe0) == 0xe0))
		return "mp3";
	return NULL;
}

/* o[key], a string: replaced by the file's data when it is a local path. */
static int inline_one(struct inl *x, json_t *holder, const char *key, size_t index, int audio,
                      const char *field)
{
	json_t *v =
	    json_is_array(holder) ? json_array_get(holder, index) : json_object_get(holder, key);
	const char *s = json_string_value(v);
	/* a path: a picture without a URL scheme; a clip with a '.' (which
	 * neither "FORMAT,BASE64" nor bare base64 has) */
	if (!s || !*s || (audio ? !strchr(s, '.') : has_scheme(s)))
		return 0;
	struct dynbuf data, text;
	dynbuf_init(&data, INLINE_FILE_MAX + 1);
	dynbuf_init(&text, HR_MAX_DATASET_BYTES);
	int rc = read_file(x, field, s, &data);
	const unsigned char *d = (const unsigned char *)(data.data ? data.data : "");
	const char *type = rc < 0  ? NULL
	                   : audio ? clip_type(d, data.len)
	                           : picture_type(d, data.len);
	if (rc == 0 && !type)
		rc = inl_fail(x, "'%s': %s is not %s", field, s,
		              audio ? "a WAV or MP3 clip" : "a PNG, JPEG, GIF or WebP picture");
	if (rc == 0) {
		if (audio)
			dynbuf_printf(&text, "%s,", type);
		else
			dynbuf_printf(&text, "data:%s;base64,", type);
		if (media_base64(data.data, data.len, &text) < 0)
			rc = inl_fail(x, "'%s': %s is too large once encoded", field, s);
	}
	if (rc == 0) {
		json_t *nv = json_stringn(text.data, text.len);
		if (json_is_array(holder))
			json_array_set_new(holder, index, nv);
		else
			json_object_set_new(holder, key, nv);
		x->done++;
	}
	dynbuf_release(&data);
	dynbuf_release(&text);
	return rc;
}

/* An entry (or a turn): its image, images[] and audio. */
static int inline_entry(struct inl *x, json_t *o, const char *pre)
{
	char field[96];
	if (!json_is_object(o))
		return 0;
	snprintf(field, sizeof field, "%simage", pre);
	if (inline_one(x, o, "image", 0, 0, field) < 0)
		return -1;
	json_t *imgs = json_object_get(o, "images");
	for (size_t i = 0; json_is_array(imgs) && i < json_array_size(imgs); i++) {
		snprintf(field, sizeof field, "%simages[%zu]", pre, i);
		if (inline_one(x, imgs, NULL, i, 0, field) < 0)
			return -1;
	}
	snprintf(field, sizeof field, "%saudio", pre);
	return inline_one(x, o, "audio", 0, 1, field);
}

int dataset_inline_files(const char *text, size_t len, const char *file, const char *format,
                         struct dynbuf *out, char *err)
{
	if (strcmp(format, "single_turn") != 0 && strcmp(format, "multi_turn") != 0 &&
	    strcmp(format, "random_pool") != 0)
		return 0;
	char *dir = xstrdup(file);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		dir[0] = 0;
	struct inl x = {.dir = dir, .err = err};
	const char *p = text, *end = text + len, *start;
	size_t n;
	int rc = 0;
	dynbuf_reset(out);
	while (rc == 0 && next_text_line(&p, end, &start, &n, &x.line)) {
		json_t *o = NULL;
		/* only a line that names media is parsed; the others go as they are */
		if (memmem(start, n, "\"image", 6) || memmem(start, n, "\"audio", 6))
			o = json_loadb(start, n, 0, NULL);
		int before = x.done;
		if (json_is_object(o)) {
			rc = inline_entry(&x, o, "");
			json_t *turns = json_object_get(o, "turns");
			char pre[32];
			for (size_t i = 0;
			     rc == 0 && json_is_array(turns) && i < json_array_size(turns); i++) {
				snprintf(pre, sizeof pre, "turns[%zu].", i);
				rc = inline_entry(&x, json_array_get(turns, i), pre);
			}
		}
		if (rc == 0 && x.done > before) {
			char *s = json_dumps(o, JSON_COMPACT);
			if (!s || dynbuf_addstr(out, s) < 0 || dynbuf_add(out, "\n", 1) < 0)
				rc =
				    inl_fail(&x,
				             "the dataset is larger than %u MiB once its files are "
				             "inlined",
				             HR_MAX_DATASET_BYTES >> 20);
			free(s);
		} else if (rc == 0 &&
		           (dynbuf_add(out, start, n) < 0 || dynbuf_add(out, "\n", 1) < 0))
			rc = inl_fail(
			    &x, "the dataset is larger than %u MiB once its files are inlined",
			    HR_MAX_DATASET_BYTES >> 20);
		json_decref(o);
	}
	free(dir);
	if (rc < 0)
		return -1;
	return x.done > 0 ? 1 : 0;
}
