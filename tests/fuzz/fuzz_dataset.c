/* fuzz_dataset.c - libFuzzer target for dataset parsing (lib/dataset.c).
 *
 * The first byte chooses the format (byte % 5, in enum ds_format order:
 * single_turn, multi_turn, random_pool, mooncake_trace, sharegpt), with
 * bit 3 sharegpt length filters (from the next four bytes: unit, then
 * min/max prompt and max reply lengths) and bit 4 a preview limit of 1 to
 * 4 entries; the rest is the dataset. When it is accepted: at least one
 * entry and at most the bounds, every entry in a session whose turn it is,
 * sessions of the JSONL formats and ShareGPT made of consecutive entries,
 * every text NUL-terminated at its length, valid UTF-8 and within its
 * bound, every extra a JSON object within its bound, every entry's media
 * a list of as many content parts as it counts, hash_ids in range, a
 * preview no longer than asked for, and the statistics and every preview
 * entry encodable as JSON. When it is rejected: a non-empty message,
 * valid UTF-8, starting with "line N: " when the error names line N (a
 * line the input has), and the output left empty. Any violation aborts.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Ilib tests/fuzz/fuzz_dataset.c \
 *        lib/dataset.c lib/trace.c lib/util.c lib/dynbuf.c -ljansson
 * Without libFuzzer: link with tests/fuzz/standalone.c instead.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fuzz.h"
#include "hrlimits.h"

static void check_text(const struct dataset *d, struct ds_str s, size_t max)
{
	if (!s.len)
		return;
	REQUIRE((size_t)s.off + s.len < d->arena_len);
	REQUIRE(s.len <= max);
	const char *t = ds_text(d, s);
	REQUIRE(t[s.len] == '\0');
	REQUIRE(memchr(t, '\0', s.len) == NULL);
	json_t *j = json_stringn(t, s.len); /* NULL for invalid UTF-8 */
	REQUIRE(j != NULL);
	json_decref(j);
}

static void check_accepted(const struct dataset *d, enum ds_format f, size_t max_entries)
{
	REQUIRE(d->format == f);
	REQUIRE(d->n >= 1 && d->n <= HR_MAX_DATASET_ENTRIES);
	REQUIRE(d->n_sessions >= 1 && d->n_sessions <= d->n);
	if (max_entries && f != DS_MULTI_TURN)
		REQUIRE(d->n <= max_entries);
	size_t turns = 0;
	for (size_t i = 0; i < d->n_sessions; i++) {
		const struct ds_session *s = &d->s[i];
		REQUIRE(s->n >= 1 && s->n <= HR_MAX_TURNS);
		REQUIRE(s->first < d->n);
		REQUIRE(d->e[s->first].session == i && d->e[s->first].turn == 0);
		check_text(d, s->id, HR_MAX_DATASET_SESSION_ID);
		check_text(d, s->system, HR_MAX_DATASET_TEXT);
		if (f != DS_MULTI_TURN)
			REQUIRE(s->system.len == 0);
		if (f != DS_MOONCAKE_TRACE) {
			REQUIRE((size_t)s->first + s->n <= d->n);
			for (uint32_t k = 0; k < s->n; k++)
				REQUIRE(d->e[s->first + k].session == i &&
				        d->e[s->first + k].turn == k);
		}
		if (f == DS_SINGLE_TURN || f == DS_RANDOM_POOL || f == DS_SHAREGPT)
			REQUIRE(s->n == 1);
		turns += s->n;
	}
	REQUIRE(turns == d->n);
	int with_ts = -1;
	for (size_t i = 0; i < d->n; i++) {
		const struct ds_entry *e = &d->e[i];
		REQUIRE(e->session < d->n_sessions);
		REQUIRE(e->turn < d->s[e->session].n);
		REQUIRE(e->line >= 1);
		REQUIRE(e->role == DS_ROLE_USER || e->role == DS_ROLE_ASSISTANT);
		REQUIRE(e->osl == -1 || (e->osl >= 1 && e->osl <= HR_MAX_OSL));
		REQUIRE(e->t_ms == -1 || (e->t_ms >= 0 && e->t_ms <= HR_MAX_DATASET_TIME_MS));
		REQUIRE(e->delay_ms == -1 ||
		        (e->delay_ms >= 0 && e->delay_ms <= HR_MAX_DATASET_TIME_MS));
		check_text(d, e->text, HR_MAX_DATASET_TEXT);
		check_text(d, e->reply, HR_MAX_DATASET_TEXT);
		check_text(d, e->extra, HR_MAX_DATASET_EXTRA);
		if (e->extra.len) {
			json_t *x = json_loads(ds_text(d, e->extra), 0, NULL);
			REQUIRE(json_is_object(x) && json_object_size(x) > 0);
			json_decref(x);
		}
		check_text(d, e->media, HR_MAX_DATASET_LINE * 2u);
		REQUIRE(e->n_images + e->n_audio <= 17 && e->media_bytes >= 0);
		REQUIRE((e->media.len > 0) == (e->n_images + e->n_audio > 0));
		if (e->media.len) { /* ",part,part...": a JSON array once bracketed */
			const char *m = ds_text(d, e->media);
			REQUIRE(m[0] == ',');
			char *arr = malloc(e->media.len + 2);
			REQUIRE(arr != NULL);
			arr[0] = '[';
			memcpy(arr + 1, m + 1, e->media.len - 1);
			arr[e->media.len] = ']';
			arr[e->media.len + 1] = '\0';
			json_t *x = json_loads(arr, 0, NULL);
			REQUIRE(json_is_array(x) &&
			        json_array_size(x) == (size_t)e->n_images + e->n_audio);
			json_decref(x);
			free(arr);
		}
		REQUIRE((size_t)e->hash_off + e->n_hash <= d->n_hash);
		if (f == DS_MOONCAKE_TRACE) {
			REQUIRE(e->isl >= 1 && e->isl <= HR_MAX_ISL);
			REQUIRE(e->osl >= 1);
			REQUIRE(e->text.len == 0 && e->extra.len == 0);
			if (i > 0)
				REQUIRE(d->e[i - 1].t_ms <= e->t_ms);
		} else {
			REQUIRE(e->isl == -1 && e->n_hash == 0);
			REQUIRE(e->text.len >= 1);
		}
		REQUIRE((e->reply.len > 0) == (f == DS_SHAREGPT));
		if (f != DS_MOONCAKE_TRACE && f != DS_SHAREGPT) {
			int has = e->t_ms >= 0;
			REQUIRE(with_ts < 0 || with_ts == has); /* all or none */
			with_ts = has;
			REQUIRE(!(e->t_ms >= 0 && e->delay_ms >= 0));
		}
	}
	json_t *st = dataset_stats_json(d);
	char *s = json_dumps(st, JSON_COMPACT);
	REQUIRE(s != NULL);
	free(s);
	json_decref(st);
	for (size_t i = 0; i < d->n && i < 8; i++) {
		json_t *j = dataset_entry_json(d, i, 7, 2);
		s = json_dumps(j, JSON_COMPACT);
		REQUIRE(s != NULL);
		free(s);
		json_decref(j);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	enum ds_format f = (enum ds_format)(sel % DS__FORMATS);
	struct ds_options o = {0};
	data++;
	size--;
	if ((sel & 8) && size >= 4) {
		o.unit = data[0] & 1 ? DS_UNIT_WORDS : DS_UNIT_CHARS;
		o.min_prompt = data[1] % 8;
		o.max_prompt = data[2];
		o.max_reply = data[3];
		data += 4;
		size -= 4;
	}
	if (sel & 16)
		o.max_entries = (size_t)(sel >> 5) % 4 + 1;
	/* a private copy of exactly size bytes, so overreads are caught */
	char *text = malloc(size ? size : 1);
	REQUIRE(text != NULL);
	if (size)
		memcpy(text, data, size);
	struct dataset d;
	struct ds_error err;
	if (dataset_parse(text, size, f, &o, &d, &err) < 0) {
		REQUIRE(memchr(err.message, '\0', sizeof err.message) != NULL);
		REQUIRE(memchr(err.field, '\0', sizeof err.field) != NULL);
		REQUIRE(err.message[0] != '\0');
		json_t *j = json_string(err.message);
		REQUIRE(j != NULL);
		json_decref(j);
		j = json_string(err.field);
		REQUIRE(j != NULL);
		json_decref(j);
		size_t lines = 1;
		for (size_t i = 0; i < size; i++)
			lines += text[i] == '\n';
		REQUIRE(err.line <= lines);
		if (err.line) {
			char want[32];
			snprintf(want, sizeof want, "line %u: ", err.line);
			REQUIRE(strncmp(err.message, want, strlen(want)) == 0);
		}
		REQUIRE(d.e == NULL && d.s == NULL && d.arena == NULL && d.hash == NULL);
		REQUIRE(d.n == 0 && d.n_sessions == 0);
	} else {
		check_accepted(&d, f, o.max_entries);
		dataset_release(&d);
	}
	free(text);
	return 0;
}
