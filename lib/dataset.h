/* dataset.h - datasets of prompts for benchmark runs: the uploaded formats
 * parsed into one compact canonical form (docs/datasets.md).
 *
 * Formats (AIPerf's custom datasets, plus ShareGPT):
 *
 *   single_turn     JSONL, one request a line:
 *                   {"text": "...", "output_length": N?, "extra": {...}?,
 *                    "timestamp": ms?, "delay": ms?, "role": "user"?,
 *                    "image": URL?, "images": [URL, ...]?, "audio": "wav,BASE64"?}
 *   random_pool     the same lines, meant to be sampled with replacement
 *   multi_turn      JSONL, one conversation a line:
 *                   {"session_id": "..."?, "turns": [{"text", "output_length"?,
 *                    "extra"?, "timestamp"?, "delay"?, "role"?}, ...]}
 *                   a leading {"role": "system"} turn is the conversation's
 *                   system prompt, not a turn
 *   mooncake_trace  JSONL, lib/trace.h's lines (timestamp, input_length,
 *                   output_length, hash_ids, session_id); parsed by trace_parse
 *   sharegpt        one JSON array of {"id"?, "conversations": [{"from", "value"}]}:
 *                   the first "human" turn and the "gpt" turn right after it
 *                   make one request; entries without such a pair are skipped
 *                   and counted, pairs outside the length filters dropped and
 *                   counted
 *
 * Every byte is hostile: sizes are bounded by lib/limits.h (datasets group),
 * text must be valid UTF-8 without NUL (jansson checks both), unknown fields
 * of the JSONL formats are refused (mooncake_trace and sharegpt ignore them,
 * as their producers add their own), and an error names the 1-based line
 * and the field: "line 17: 'turns[2].text' must be a string".
 *
 * The canonical form (struct dataset) is what a worker loads: parsing is
 * deterministic, so the stored file plus its format and options always give
 * the same dataset.
 *
 *   entries   e[0..n): one request each, in file order (mooncake_trace: in
 *             timestamp order, stable). Every entry belongs to a session:
 *             single_turn, random_pool and sharegpt entries are sessions of
 *             one turn; a multi_turn line is one session whose turns are
 *             consecutive entries in turn order; mooncake_trace entries with
 *             the same session_id form one session, numbered by first
 *             appearance, whose turns may interleave with other entries.
 *   sessions  s[0..n_sessions): first entry, number of turns, session_id
 *             text, system prompt.
 *   arena     every text (prompts, replies, system prompts, session ids,
 *             extra objects as compact JSON), each NUL-terminated; a
 *             struct ds_str is an offset and a length into it (length 0:
 *             absent; no stored text is empty).
 *   hash      mooncake_trace hash_ids, entry by entry.
 *
 * A text prompt has isl -1 (its length in tokens depends on the tokenizer);
 * a mooncake_trace entry has no text and isl >= 1 tokens. osl is -1 when
 * the dataset does not give an output length (sharegpt: the reply's length
 * decides it, see reply). t_ms and delay_ms are -1 when not given.
 */
#ifndef HR_DATASET_H
#define HR_DATASET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum ds_format {
	DS_SINGLE_TURN,
	DS_MULTI_TURN,
	DS_RANDOM_POOL,
	DS_MOONCAKE_TRACE,
	DS_SHAREGPT,
	DS__FORMATS
};

enum ds_role { DS_ROLE_USER, DS_ROLE_ASSISTANT, DS_ROLE_SYSTEM };

/* How the sharegpt length filters count: Unicode code points, or words
 * (maximal runs of bytes other than ASCII space, tab, CR, LF, VT, FF). */
enum ds_unit { DS_UNIT_CHARS, DS_UNIT_WORDS };

struct ds_options {
	/* sharegpt only: a pair is kept when min <= length <= max for both its
	 * prompt and its reply, in unit; 0 means no bound */
	enum ds_unit unit;
	uint32_t min_prompt, max_prompt, min_reply, max_reply;
	/* stop once this many entries are kept (0: all), for previews; a
	 * mooncake_trace is parsed whole and then cut */
	size_t max_entries;
};

struct ds_str {
	uint32_t off, len; /* into dataset.arena; len 0: absent */
};

struct ds_entry {
	uint32_t session;    /* index into dataset.s */
	uint32_t turn;       /* 0-based turn within its session */
	uint32_t line;       /* 1-based line where it starts in the file */
	uint8_t role;        /* enum ds_role (never system: see ds_session.system) */
	int32_t isl;         /* input tokens (mooncake_trace), else -1 */
	int32_t osl;         /* output tokens, -1 when not given */
	double t_ms;         /* 'timestamp' in ms, -1 when not given */
	double delay_ms;     /* 'delay' in ms, -1 when not given */
	struct ds_str text;  /* the prompt (absent for mooncake_trace) */
	struct ds_str reply; /* sharegpt: the gpt reply to the prompt */
	struct ds_str extra; /* 'extra' as compact JSON object text, or absent */
	/* 'image', 'images' and 'audio' (single_turn, random_pool, multi_turn
	 * turns) as chat content parts, each with a leading ',', or absent;
	 * their counts and the bytes their data carries (base64 decoded) */
	struct ds_str media;
	uint8_t n_images, n_audio;
	int32_t media_bytes;
	uint32_t hash_off;   /* mooncake_trace: hash[hash_off .. hash_off + n_hash) */
	uint32_t n_hash;
};

struct ds_session {
	uint32_t first;       /* index of its first entry */
	uint32_t n;           /* its turns */
	struct ds_str id;     /* session_id (integers as decimal text), or absent */
	struct ds_str system; /* multi_turn: the system prompt, or absent */
};

struct dataset {
	enum ds_format format;
	struct ds_entry *e; /* owned */
	size_t n;
	struct ds_session *s; /* owned */
	size_t n_sessions;
	char *arena; /* owned */
	size_t arena_len;
	uint64_t *hash; /* owned, may be NULL */
	size_t n_hash;
	size_t skipped;  /* sharegpt: entries without a human turn followed by a gpt turn */
	size_t filtered; /* sharegpt: pairs dropped by the length filters */
};

struct ds_error {
	uint32_t line;           /* 1-based; 0 when the error is not about one line */
	char field[128];         /* the offending field ("turns[2].text"), "" when none */
	char message[HR_ERRLEN]; /* "line 17: 'turns[2].text' must be a string" */
};

/* "single_turn", ... ; NULL for a value out of range. */
const char *ds_format_name(enum ds_format f);
/* Returns 0 and *out for a known format name, else -1. */
int ds_format_parse(const char *name, enum ds_format *out);
const char *ds_role_name(enum ds_role r);

/* Parses len bytes of data (borrowed; a UTF-8 byte order mark at the start
 * is skipped) as format f. o may be NULL (no filters, every entry).
 * Returns 0 and fills out (dataset_release), or -1 with err filled and out
 * left empty. */
int dataset_parse(const char *data, size_t len, enum ds_format f, const struct ds_options *o,
                  struct dataset *out, struct ds_error *err);
void dataset_release(struct dataset *d);
/* dataset_parse over a whole regular file (at most HR_MAX_DATASET_BYTES),
 * mapped read-only: the file open on fd (its offset is not used or moved),
 * or the file at path. A file that cannot be read is an error of line 0. */
int dataset_load_fd(int fd, enum ds_format f, const struct ds_options *o, struct dataset *out,
                    struct ds_error *err);
int dataset_load_file(const char *path, enum ds_format f, const struct ds_options *o,
                      struct dataset *out, struct ds_error *err);

/* The text of s (NUL-terminated, borrowed from d), or NULL when absent. */
const char *ds_text(const struct dataset *d, struct ds_str s);

/* Length of s in unit (code points, or whitespace-separated words). */
uint32_t ds_text_length(const char *s, size_t len, enum ds_unit unit);

/* The options that change what a format yields, as canonical JSON (new
 * reference): {} without filters, else every sharegpt filter in a fixed
 * order, {"unit", "min_prompt", "max_prompt", "min_reply", "max_reply"},
 * 0 for no bound. max_entries is not part of it. Stored beside a dataset:
 * the file, its format and these options give its entries. */
json_t *ds_options_json(enum ds_format f, const struct ds_options *o);
/* Reads ds_options_json's output back (zeroing o first). Returns 0, or -1
 * with a message in err (HR_ERRLEN bytes) for anything else. */
int ds_options_from_json(const json_t *j, struct ds_options *o, char *err);

/* The dataset's statistics (docs/datasets.md, "Statistics"): new reference. */
json_t *dataset_stats_json(const struct dataset *d);
/* Entry i for a preview (docs/datasets.md), every text cut to at most
 * max_text bytes on a character boundary and hash_ids to max_hash ids
 * ("truncated" says whether anything was cut): new reference. */
json_t *dataset_entry_json(const struct dataset *d, size_t i, size_t max_text, size_t max_hash);

#endif
