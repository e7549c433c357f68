/* media.c - deterministic synthetic pictures (libpng, libjpeg) and WAV clips
 * for multimodal request bodies; see media.h. */
#include "media.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <openssl/evp.h>
#include <png.h>

#include "rng.h"

/* RNG streams of the media generator (disjoint from the request streams,
 * which use small numbers: the media stream hashes the index itself). */
#define MEDIA_STREAM_IMAGE 0x696d6167ULL /* "imag" */
#define MEDIA_STREAM_AUDIO 0x61756469ULL /* "audi" */

/* One RGB row of picture (seed, index): a colour field whose hue depends on
 * the index, with two bits of seeded noise per channel and pixel. */
static void fill_row(uint64_t seed, uint64_t index, int w, int h, int y, unsigned char *row)
{
	uint64_t base = rng_hash(seed, MEDIA_STREAM_IMAGE, index);
	int r0 = (int)(base & 0xff), g0 = (int)(base >> 8 & 0xff), b0 = (int)(base >> 16 & 0xff);
	uint64_t noise = 0;
	for (int x = 0; x < w; x++) {
		if ((x & 7) == 0)
			noise = rng_hash(base, (uint64_t)y, (uint64_t)x);
		unsigned n = (unsigned)(noise >> ((x & 7) * 8)) & 0xff;
		row[3 * x] = (unsigned char)((r0 + 255 * x / (w > 1 ? w - 1 : 1) + (n & 15)) & 0xff);
		row[3 * x + 1] =
		    (unsigned char)((g0 + 255 * y / (h > 1 ? h - 1 : 1) + (n >> 4)) & 0xff);
		row[3 * x + 2] = (unsigned char)((b0 + (x ^ y) + (n & 7)) & 0xff);
	}
}

struct png_sink {
	struct dynbuf *out;
	int failed;
};

static void png_write_cb(png_structp p, png_bytep data, png_size_t n)
{
	struct png_sink *s = png_get_io_ptr(p);
	if (!s->failed && dynbuf_add(s->out, data, n) < 0)
		s->failed = 1;
}

static void png_flush_cb(png_structp p)
{
	(void)p;
}

static int encode_png(uint64_t seed, uint64_t index, int w, int h, struct dynbuf *out,
                      char err[128])
{
	png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = p ? png_create_info_struct(p) : NULL;
	unsigned char *volatile row = malloc((size_t)w * 3);
	struct png_sink sink = {out, 0};
	size_t start = out->len;
	if (!p || !info || !row) {
		snprintf(err, 128, "out of memory for a %dx%d PNG", w, h);
		png_destroy_write_struct(&p, &info);
		free(row);
		return -1;
	}
	if (setjmp(png_jmpbuf(p))) {
		snprintf(err, 128, "libpng could not encode a %dx%d picture", w, h);
		png_destroy_write_struct(&p, &info);
		free(row);
		out->len = start;
		return -1;
	}
	png_set_write_fn(p, &sink, png_write_cb, png_flush_cb);
	/* Fast settings: the worker builds its pool of pictures before time zero,
	 * but a 4096x4096 picture should still take well under a second. */
	png_set_compression_level(p, 1);
	png_set_filter(p, 0, PNG_FILTER_NONE);
	png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
	             PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(p, info);
	for (int y = 0; y < h; y++) {
		fill_row(seed, index, w, h, y, row);
		png_write_row(p, row);
	}
	png_write_end(p, NULL);
	png_destroy_write_struct(&p, &info);
	free(row);
	if (sink.failed) {
		snprintf(err, 128, "a %dx%d PNG is larger than its buffer allows", w, h);
		out->len = start;
		return -1;
	}
	return 0;
}

struct jpeg_fail {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
};

static void jpeg_fail_exit(j_common_ptr c)
{
	longjmp(((struct jpeg_fail *)(void *)c->err)->jb, 1);
}

static int encode_jpeg(uint64_t seed, uint64_t index, int w, int h, int quality,
                       struct dynbuf *out, char err[128])
{
	struct jpeg_compress_struct c;
	struct jpeg_fail jf;
	unsigned char *volatile mem = NULL;
	unsigned long size = 0;
	unsigned char *volatile row = malloc((size_t)w * 3);
	if (!row) {
		snprintf(err, 128, "out of memory for a %dx%d JPEG", w, h);
		return -1;
	}
	c.err = jpeg_std_error(&jf.pub);
	jf.pub.error_exit = jpeg_fail_exit;
	if (setjmp(jf.jb)) {
		snprintf(err, 128, "libjpeg could not encode a %dx%d picture", w, h);
		jpeg_destroy_compress(&c);
		free(mem);
		free(row);
		return -1;
	}
	jpeg_create_compress(&c);
	unsigned char *m = NULL;
	jpeg_mem_dest(&c, &m, &size);
	c.image_width = (JDIMENSION)w;
	c.image_height = (JDIMENSION)h;
	c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, quality, TRUE);
	jpeg_start_compress(&c, TRUE);
	for (int y = 0; y < h; y++) {
		fill_row(seed, index, w, h, y, row);
		JSAMPROW rp = row;
		jpeg_write_scanlines(&c, &rp, 1);
	}
	jpeg_finish_compress(&c);
	mem = m;
	jpeg_destroy_compress(&c);
	free(row);
	int rc = dynbuf_add(out, mem, size);
	free(mem);
	if (rc < 0)
		snprintf(err, 128, "a %dx%d JPEG is larger than its buffer allows", w, h);
	return rc;
}

int media_image(uint64_t seed, uint64_t index, int w, int h, enum media_image_format fmt,
                int quality, struct dynbuf *out, char err[128])
{
	if (w < 1 || h < 1 || w > MEDIA_MAX_SIDE || h > MEDIA_MAX_SIDE) {
		snprintf(err, 128, "picture size %dx%d is outside 1..%d", w, h, MEDIA_MAX_SIDE);
		return -1;
	}
	if (fmt == MEDIA_JPEG)
		return encode_jpeg(seed, index, w, h, quality < 1 ? 1 : quality > 100 ? 100 : quality,
		                   out, err);
	return encode_png(seed, index, w, h, out, err);
}

static void put_le(unsigned char *p, uint32_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

int media_wav(uint64_t seed, uint64_t index, int duration_ms, int rate, struct dynbuf *out,
              char err[128])
{
	if (duration_ms < 1 || duration_ms > MEDIA_MAX_AUDIO_MS || rate < MEDIA_MIN_RATE ||
	    rate > MEDIA_MAX_RATE) {
		snprintf(err, 128, "clip of %d ms at %d Hz is outside 1..%d ms, %d..%d Hz",
		         duration_ms, rate, MEDIA_MAX_AUDIO_MS, MEDIA_MIN_RATE, MEDIA_MAX_RATE);
		return -1;
	}
	uint32_t samples = (uint32_t)((uint64_t)rate * (uint64_t)duration_ms / 1000);
	uint32_t data = samples * 2;
	unsigned char *p = (unsigned char *)dynbuf_space(out, 44 + (size_t)data);
	if (!p) {
		snprintf(err, 128, "a %d ms clip is larger than its buffer allows", duration_ms);
		return -1;
	}
	memcpy(p, "RIFF", 4);
	put_le(p + 4, 36 + data, 4);
	memcpy(p + 8, "WAVEfmt ", 8);
	put_le(p + 16, 16, 4);              /* fmt chunk size */
	put_le(p + 20, 1, 2);               /* PCM */
	put_le(p + 22, 1, 2);               /* mono */
	put_le(p + 24, (uint32_t)rate, 4);  /* sample rate */
	put_le(p + 28, (uint32_t)rate * 2, 4); /* byte rate */
	put_le(p + 32, 2, 2);               /* block align */
	put_le(p + 34, 16, 2);              /* bits per sample */
	memcpy(p + 36, "data", 4);
	put_le(p + 40, data, 4);
	uint64_t base = rng_hash(seed, MEDIA_STREAM_AUDIO, index);
	double f[3];
	for (int k = 0; k < 3; k++)
		f[k] = 110.0 + (double)((base >> (16 * k)) & 0x3ff); /* 110..1133 Hz */
	for (uint32_t i = 0; i < samples; i++) {
		double t = (double)i / rate, v = 0;
		for (int k = 0; k < 3; k++)
			v += sin(2 * M_PI * f[k] * t) / 4;
		int noise = (int)(rng_hash(base, 1, i) & 0x3ff) - 512;
		int s = (int)lrint(v * 32767.0) + noise;
		s = s > 32767 ? 32767 : s < -32768 ? -32768 : s;
		put_le(p + 44 + 2 * i, (uint32_t)(uint16_t)(int16_t)s, 2);
	}
	dynbuf_commit(out, 44 + (size_t)data);
	return 0;
}

int media_base64(const void *p, size_t n, struct dynbuf *out)
{
	const unsigned char *in = p;
	/* EVP_EncodeBlock takes an int length: encode in slices of 3 MiB. */
	while (n > 0) {
		size_t take = n > 3u << 20 ? 3u << 20 : n;
		char *dst = dynbuf_space(out, 4 * ((take + 2) / 3) + 1);
		if (!dst)
			return -1;
		int w = EVP_EncodeBlock((unsigned char *)dst, in, (int)take);
		dynbuf_commit(out, (size_t)w);
		in += take;
		n -= take;
	}
	return 0;
}

const char *media_image_mime(enum media_image_format fmt)
{
	return fmt == MEDIA_JPEG ? "image/jpeg" : "image/png";
}

const char *media_image_ext(enum media_image_format fmt)
{
	return fmt == MEDIA_JPEG ? "jpg" : "png";
}
