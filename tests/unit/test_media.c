/* test_media.c - synthetic pictures and clips: decodable by the reference
 * decoders (libpng, libjpeg) at the asked size, the same bytes for the same
 * seed and index, different for another, WAV headers right, base64 exact. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "media.h"
#include "tap.h"

struct png_src {
	const unsigned char *p;
	size_t n, off;
};

static void png_read_cb(png_structp p, png_bytep out, png_size_t n)
{
	struct png_src *s = png_get_io_ptr(p);
	if (s->off + n > s->n)
		png_error(p, "short");
	memcpy(out, s->p + s->off, n);
	s->off += n;
}

/* Decodes a whole PNG; returns its width and height, -1 on any error. */
static int png_dims(const struct dynbuf *b, int *w, int *h)
{
	png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(p);
	struct png_src src = {(const unsigned char *)b->data, b->len, 0};
	unsigned char *volatile row = NULL;
	if (setjmp(png_jmpbuf(p))) {
		png_destroy_read_struct(&p, &info, NULL);
		free(row);
		return -1;
	}
	png_set_read_fn(p, &src, png_read_cb);
	png_read_info(p, info);
	*w = (int)png_get_image_width(p, info);
	*h = (int)png_get_image_height(p, info);
	row = malloc(png_get_rowbytes(p, info));
	for (int y = 0; y < *h; y++)
		png_read_row(p, row, NULL);
	png_read_end(p, NULL);
	png_destroy_read_struct(&p, &info, NULL);
	free(row);
	return src.off == src.n ? 0 : -1;
}

struct jerr {
	struct jpeg_error_mgr pub;
	jmp_buf jb;
};

static void jexit(j_common_ptr c)
{
	longjmp(((struct jerr *)(void *)c->err)->jb, 1);
}

static int jpeg_dims(const struct dynbuf *b, int *w, int *h)
{
	struct jpeg_decompress_struct d;
	struct jerr e;
	unsigned char *volatile row = NULL;
	d.err = jpeg_std_error(&e.pub);
	e.pub.error_exit = jexit;
	if (setjmp(e.jb)) {
		jpeg_destroy_decompress(&d);
		free(row);
		return -1;
	}
	jpeg_create_decompress(&d);
	jpeg_mem_src(&d, (const unsigned char *)b->data, (unsigned long)b->len);
	jpeg_read_header(&d, TRUE);
	jpeg_start_decompress(&d);
	*w = (int)d.output_width;
	*h = (int)d.output_height;
	row = malloc((size_t)d.output_width * (size_t)d.output_components);
	while (d.output_scanline < d.output_height) {
		JSAMPROW r = row;
		jpeg_read_scanlines(&d, &r, 1);
	}
	jpeg_finish_decompress(&d);
	jpeg_destroy_decompress(&d);
	free(row);
	return 0;
}

static unsigned le(const char *p, int n)
{
	unsigned v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | (unsigned char)p[i];
	return v;
}

int main(void)
{
	char err[128];
	struct dynbuf a, b, c;
	dynbuf_init(&a, 64u << 20);
	dynbuf_init(&b, 64u << 20);
	dynbuf_init(&c, 64u << 20);

	/* PNG: decodes at its size; same (seed, index) same bytes; not tiny */
	CHECK_EQ_INT(media_image(7, 3, 320, 200, MEDIA_PNG, 0, &a, err), 0);
	CHECK_EQ_INT(media_image(7, 3, 320, 200, MEDIA_PNG, 0, &b, err), 0);
	CHECK_MEM(a.data, a.len, b.data, b.len);
	int w = 0, h = 0;
	CHECK_EQ_INT(png_dims(&a, &w, &h), 0);
	CHECK_EQ_INT(w, 320);
	CHECK_EQ_INT(h, 200);
	CHECK(a.len > 320 * 200 / 4); /* the noise keeps it from compressing away */
	CHECK_EQ_INT(media_image(7, 4, 320, 200, MEDIA_PNG, 0, &c, err), 0);
	CHECK(c.len != a.len || memcmp(a.data, c.data, a.len) != 0);
	dynbuf_reset(&c);
	CHECK_EQ_INT(media_image(8, 3, 320, 200, MEDIA_PNG, 0, &c, err), 0);
	CHECK(c.len != a.len || memcmp(a.data, c.data, a.len) != 0);

	/* JPEG: decodes at its size; quality changes the size */
	dynbuf_reset(&a);
	dynbuf_reset(&b);
	CHECK_EQ_INT(media_image(7, 0, 640, 480, MEDIA_JPEG, 90, &a, err), 0);
	CHECK_EQ_INT(media_image(7, 0, 640, 480, MEDIA_JPEG, 30, &b, err), 0);
	CHECK_EQ_INT(jpeg_dims(&a, &w, &h), 0);
	CHECK_EQ_INT(w, 640);
	CHECK_EQ_INT(h, 480);
	CHECK(b.len < a.len);
	CHECK((unsigned char)a.data[0] == 0xff && (unsigned char)a.data[1] == 0xd8);

	/* sizes outside the limits are refused with a reason, nothing appended */
	dynbuf_reset(&a);
	CHECK_EQ_INT(media_image(1, 0, 0, 10, MEDIA_PNG, 0, &a, err), -1);
	CHECK(strstr(err, "outside") != NULL);
	CHECK_EQ_INT(media_image(1, 0, 10, MEDIA_MAX_SIDE + 1, MEDIA_JPEG, 80, &a, err), -1);
	CHECK_EQ_INT((int)a.len, 0);
	/* a buffer too small fails cleanly and leaves the buffer as it was */
	struct dynbuf small;
	dynbuf_init(&small, 1000);
	dynbuf_addstr(&small, "x");
	CHECK_EQ_INT(media_image(1, 0, 200, 200, MEDIA_PNG, 0, &small, err), -1);
	CHECK_EQ_INT((int)small.len, 1);
	CHECK_EQ_INT(media_image(1, 0, 200, 200, MEDIA_JPEG, 90, &small, err), -1);
	CHECK_EQ_INT((int)small.len, 1);
	dynbuf_release(&small);

	/* WAV: 1.5 s at 16 kHz mono 16-bit */
	dynbuf_reset(&a);
	dynbuf_reset(&b);
	CHECK_EQ_INT(media_wav(5, 1, 1500, 16000, &a, err), 0);
	CHECK_EQ_INT(media_wav(5, 1, 1500, 16000, &b, err), 0);
	CHECK_MEM(a.data, a.len, b.data, b.len);
	CHECK_EQ_INT((int)a.len, 44 + 2 * 24000);
	CHECK(memcmp(a.data, "RIFF", 4) == 0 && memcmp(a.data + 8, "WAVEfmt ", 8) == 0);
	CHECK_EQ_INT(le(a.data + 4, 4), 36 + 48000);
	CHECK_EQ_INT(le(a.data + 20, 2), 1);
	CHECK_EQ_INT(le(a.data + 22, 2), 1);
	CHECK_EQ_INT(le(a.data + 24, 4), 16000);
	CHECK_EQ_INT(le(a.data + 34, 2), 16);
	CHECK_EQ_INT(le(a.data + 40, 4), 48000);
	int loud = 0;
	for (size_t i = 44; i + 1 < a.len; i += 2)
		loud += (short)le(a.data + i, 2) > 4000;
	CHECK(loud > 1000); /* a signal, not silence */
	CHECK_EQ_INT(media_wav(5, 1, 0, 16000, &a, err), -1);
	CHECK_EQ_INT(media_wav(5, 1, 100, 4000, &a, err), -1);

	/* base64 (RFC 4648 test vectors) */
	const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (int i = 0; i < 7; i++) {
		dynbuf_reset(&a);
		CHECK_EQ_INT(media_base64(in[i], strlen(in[i]), &a), 0);
		CHECK_STR(a.data ? a.data : "", out[i]);
	}
	/* long input crosses the slice boundary: length and alphabet right */
	size_t big = (3u << 20) + 5;
	char *z = calloc(1, big);
	dynbuf_reset(&a);
	CHECK_EQ_INT(media_base64(z, big, &a), 0);
	CHECK_EQ_INT((long long)a.len, (long long)(4 * ((big + 2) / 3)));
	CHECK(strchr(a.data, '\n') == NULL);
	free(z);

	CHECK_STR(media_image_mime(MEDIA_JPEG), "image/jpeg");
	CHECK_STR(media_image_ext(MEDIA_PNG), "png");
	dynbuf_release(&a);
	dynbuf_release(&b);
	dynbuf_release(&c);
	return tap_done();
}
