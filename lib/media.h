/* media.h - synthetic images and audio clips for multimodal requests.
 *
 * Every picture and clip is a pure function of (seed, index, shape): the
 * same spec and seed give the same bytes on every host, so a multimodal run
 * replays exactly and its request bodies can be compared across transports.
 * Pictures are a smooth colour field with seeded noise on top (so a
 * compressor cannot shrink them to nothing, as with real photographs),
 * encoded by libpng or libjpeg; clips are 16-bit mono PCM in a WAV
 * container: a few seeded tones under low noise.
 */
#ifndef HR_MEDIA_H
#define HR_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "dynbuf.h"

enum media_image_format { MEDIA_PNG = 0, MEDIA_JPEG };

/* Limits on what a spec may ask for (checked by the spec parser). */
#define MEDIA_MAX_SIDE 4096          /* pixels, either side */
#define MEDIA_MAX_AUDIO_MS 600000    /* ten minutes */
#define MEDIA_MIN_RATE 8000
#define MEDIA_MAX_RATE 48000

/* Encodes picture `index` of `seed` (w x h, 8-bit RGB) into out (appended).
 * quality applies to JPEG (1..100). Returns 0, or -1 with err filled. */
int media_image(uint64_t seed, uint64_t index, int w, int h, enum media_image_format fmt,
                int quality, struct dynbuf *out, char err[128]);

/* Appends a WAV file (RIFF, PCM, 16-bit mono) of duration_ms at rate Hz. */
int media_wav(uint64_t seed, uint64_t index, int duration_ms, int rate, struct dynbuf *out,
              char err[128]);

/* Appends the standard base64 text of n bytes (no line breaks). */
int media_base64(const void *p, size_t n, struct dynbuf *out);

/* "image/png", "image/jpeg", "audio/wav"; the file name extension without the dot. */
const char *media_image_mime(enum media_image_format fmt);
const char *media_image_ext(enum media_image_format fmt);

#endif
