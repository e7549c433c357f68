/* import.h - other tools' result files read into headroom's shapes: the
 * result JSON of vLLM's `bench serve` (with or without its per-request
 * arrays), AIPerf's profile_export_aiperf.json (with its per-request
 * profile_export.jsonl when given) and GuideLLM's benchmarks report (JSON
 * or YAML: one result per benchmark). docs/formats.md ("Imports") says how
 * each field maps and where it comes from.
 *
 * Pure parsing: no store, no files. Every input is hostile: sizes, depth,
 * types and ranges are checked before anything is built, and a refusal
 * names the field (and, for the JSONL file, the line). The daemon's side
 * (storing the run, its records and the original file) is api_imports.c.
 */
#ifndef HR_IMPORT_H
#define HR_IMPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

struct import_error {
	char code[32];    /* invalid_json, wrong_type, out_of_range, missing_field,
			   * invalid_value, too_large, too_deep, unsupported_format */
	char field[256];  /* "file.ttfts[3]", "jsonl.metadata.request_start_ns" */
	long line;        /* 1-based line of the JSONL file or of a YAML file, 0 when
			   * not about a line */
	char message[512];
};

struct import_result {
	char producer[64]; /* "vllm", "aiperf", "guidellm" (or the producer the file names) */
	char version[64];  /* the producer's version when the file says, else "" */
	char format[32];   /* "vllm", "aiperf-json", "guidellm-json", "guidellm-yaml" */
	json_t *spec;      /* a run spec describing the load the file states (not yet
			    * validated; the caller adds name and labels) */
	json_t *summary;   /* summary-only files: the mapped summary; NULL with records */
	json_t *figures;   /* run-level figures the file states, by headroom tag, and
			    * "window_s": they replace the recomputed ones */
	json_t *stated;    /* the file's own statistics, as it states them */
	json_t *unmapped;  /* every member with no headroom counterpart */
	struct hr_record *recs; /* per-request records (profiling and warm-up), owned */
	size_t n;
	int64_t t0_wall_ns; /* wall clock of the records' time zero, 0 when unknown */
	int layout;         /* 1: start times laid out by headroom (vLLM has none) */
};

/* Reads file (len bytes: vLLM result, AIPerf JSON or a GuideLLM report in
 * JSON or YAML) and, for AIPerf, jsonl (may be NULL). format: "vllm",
 * "aiperf", "guidellm" or NULL/"auto" to detect. Returns 0 with *out an
 * array of *n results (one; a GuideLLM report one per benchmark; release
 * with import_results_release), or -1 with err and nothing allocated. */
int import_parse_all(const char *file, size_t len, const char *jsonl, size_t jlen,
		     const char *format, struct import_result **out, size_t *n,
		     struct import_error *err);
void import_result_release(struct import_result *r);
void import_results_release(struct import_result *r, size_t n);

#endif
