/* resummary.c - `headroomd summarize`: a run's summary computed again from
 * its stored records and printed, without changing the store. For
 * operators (what a run's records give under this version's metric
 * definitions, after an upgrade or a repair) and for checking that a
 * summary in passes (a small --memory-kb) equals the one in memory. */
#include "resummary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "runs.h"
#include "store.h"
#include "summary.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: headroomd summarize [--data DIR] [--memory-kb N] [--stats] RUN_ID\n"
	      "  prints the summary of run RUN_ID computed from its stored records, as\n"
	      "  JSON on standard output (the store is not changed)\n"
	      "  --data DIR      the data directory (default headroom-data)\n"
	      "  --memory-kb N   memory the summary may hold for its values, in KiB\n"
	      "                  (default: headroomd's --summary-memory-mb, 256 MiB)\n"
	      "  --stats         also print the time taken and the peak memory of the\n"
	      "                  process on standard error\n",
	      f);
}

int resummary_command(int argc, char **argv)
{
	const char *data = "headroom-data", *id_text = NULL;
	int show_stats = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--stats") == 0) {
			show_stats = 1;
		} else if (strcmp(a, "--data") == 0 && v) {
			data = v;
			i++;
		} else if (strcmp(a, "--memory-kb") == 0 && v) {
			char *end;
			long long n = strtoll(v, &end, 10);
			if (*end || end == v || n < 1 || n > (1LL << 30)) {
				fprintf(stderr, "headroomd summarize: --memory-kb must be 1..%lld\n",
					1LL << 30);
				return 2;
			}
			summary_set_memory((size_t)n << 10);
			i++;
		} else if (a[0] != '-' && !id_text) {
			id_text = a;
		} else {
			fprintf(stderr, "headroomd summarize: unknown option or extra argument %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	char *end;
	long long id = id_text ? strtoll(id_text, &end, 10) : 0;
	if (!id_text || *end || id < 1) {
		fprintf(stderr, "headroomd summarize: give a run id (a positive integer)\n");
		usage(stderr);
		return 2;
	}
	struct store *s = NULL;
	if (store_open_existing(data, "summarize", &s) < 0)
		return 1;
	char err[HR_ERRLEN];
	int rc = 1;
	json_t *run = NULL, *summary = NULL;
	struct spec sp;
	struct spec_error se;
	int have_spec = 0;
	int g = runs_get(s, id, 1, &run, err);
	if (g == -404) {
		fprintf(stderr, "headroomd summarize: no run %lld\n", id);
		goto out;
	}
	if (g < 0) {
		fprintf(stderr, "headroomd summarize: %s\n", err);
		goto out;
	}
	json_t *spec_json = json_object_get(run, "spec");
	if (!json_is_object(spec_json) || spec_from_json(spec_json, 1, &sp, &se) != 0) {
		fprintf(stderr, "headroomd summarize: run %lld has no usable spec\n", id);
		goto out;
	}
	have_spec = 1;
	int64_t t0 = runs_t0_wall(s, id);
	int64_t t_start = mono_ns();
	struct summary_cost cost = {0};
	summary = summary_compute_ex(s, id, &sp, t0 > 0 ? t0 : 0, NULL, &cost, err);
	double took = (double)(mono_ns() - t_start) / 1e9;
	if (!summary) {
		fprintf(stderr, "headroomd summarize: run %lld: %s\n", id, err);
		goto out;
	}
	char *text = json_dumps(summary, JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	if (text) {
		puts(text);
		free(text);
		rc = 0;
	}
	if (show_stats) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr,
			"summarize: run %lld in %.3f s, %d passes, %zu sorted runs on disk, "
			"peak RSS %ld KiB\n",
			id, took, cost.passes, cost.spill_runs, ru.ru_maxrss);
	}
out:
	if (have_spec)
		spec_release(&sp);
	json_decref(summary);
	json_decref(run);
	store_free(s);
	return rc;
}
