/* fuzz_import.c - libFuzzer target for the import parsers (server/import.c:
 * vLLM's result JSON, AIPerf's profile_export_aiperf.json and its
 * profile_export.jsonl, GuideLLM's reports in JSON and in YAML through
 * server/yaml2json.c).
 *
 * The first byte picks the format hint (byte % 4: auto, vllm, aiperf,
 * guidellm); with bit 2 the rest is split at its first NUL into the
 * file and an AIPerf JSONL file. When it is accepted: one result or more
 * (more only for a GuideLLM report), each with a producer and a
 * format, a spec, figures, stated and unmapped objects, a summary exactly
 * when there are no records, at most HR_MAX_IMPORT_RECORDS records in all, each
 * with its times in order (start <= first chunk <= ... <= last chunk <=
 * end, ends and starts known), valid records with a status of 200 and
 * failed ones with an error category, and every JSON part encodable. When
 * it is rejected: a code, a field and a message, the line 0 or a line the
 * JSONL or YAML input has, and nothing left allocated. Any violation aborts.
 *
 * Build: make fuzz (tests/CMakeLists.txt: HR_FUZZ_SRC_import).
 * Without libFuzzer: linked with tests/fuzz/standalone.c, it replays
 * tests/fuzz/corpus/import in make check.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "import.h"
#include "hrlimits.h"

static void encodable(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	REQUIRE(s != NULL);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const char *const hints[] = {NULL, "vllm", "aiperf", "guidellm"};
	const char *hint = hints[data[0] % 4];
	int split = (data[0] & 4) != 0;
	const char *file = (const char *)data + 1, *jsonl = NULL;
	size_t flen = size - 1, jlen = 0;
	if (split) {
		const char *nul = memchr(file, 0, flen);
		if (nul) {
			jsonl = nul + 1;
			jlen = flen - (size_t)(nul - file) - 1;
			flen = (size_t)(nul - file);
		}
	}
	long lines = 1, flines = 1;
	for (size_t i = 0; jsonl && i < jlen; i++)
		lines += jsonl[i] == '\n';
	for (size_t i = 0; i < flen; i++) /* YAML's line breaks, CR LF counted twice */
		flines += file[i] == '\n' || file[i] == '\r' || (uint8_t)file[i] == 0x85 ||
			  (uint8_t)file[i] == 0xA8 || (uint8_t)file[i] == 0xA9;
	if (flines > lines)
		lines = flines;
	struct import_result *all = NULL;
	size_t n = 0;
	struct import_error e;
	if (import_parse_all(file, flen, jsonl, jlen, hint, &all, &n, &e) < 0) {
		REQUIRE(e.code[0] && e.field[0] && e.message[0]);
		REQUIRE(e.line >= 0 && e.line <= lines);
		REQUIRE(!all && !n);
		return 0;
	}
	REQUIRE(all && n >= 1);
	REQUIRE(n == 1 || strncmp(all[0].format, "guidellm", 8) == 0);
	size_t total = 0;
	for (size_t j = 0; j < n; j++) {
		struct import_result *rp = &all[j];
#define r (*rp)
		REQUIRE(r.producer[0] && r.format[0]);
		REQUIRE(json_is_object(r.spec) && json_is_object(r.figures));
		REQUIRE(json_is_object(r.stated) && json_is_object(r.unmapped));
		REQUIRE((r.summary != NULL) == (r.n == 0));
		REQUIRE(!jsonl || r.n > 0);
		total += r.n;
		REQUIRE(total <= HR_MAX_IMPORT_RECORDS);
		encodable(r.spec);
		encodable(r.figures);
		encodable(r.stated);
		encodable(r.unmapped);
		if (r.summary)
			encodable(r.summary);
		for (size_t i = 0; i < r.n; i++) {
			const struct hr_record *x = &r.recs[i];
			REQUIRE(x->start_ns >= 0 && x->end_ns >= x->start_ns &&
				x->done_ns >= x->end_ns);
			REQUIRE(x->phase < HR_PHASE__COUNT);
			if (x->error == HR_ERR_NONE)
				REQUIRE(x->http_status == 200);
			else
				REQUIRE(x->error < HR_ERR__COUNT && x->error_msg &&
					strlen(x->error_msg) <= HR_MAX_ERROR_MSG);
			int64_t prev = x->start_ns;
			for (uint32_t k = 0; k < x->n_chunks; k++) {
				REQUIRE(x->chunk_ns[k] >= prev);
				prev = x->chunk_ns[k];
			}
			REQUIRE(prev <= x->end_ns);
		}
#undef r
	}
	import_results_release(all, n);
	return 0;
}
