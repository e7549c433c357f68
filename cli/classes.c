/* classes.c - `headroom show` for runs with traffic classes: each class's
 * load and latencies side by side, then how the classes slowed each other
 * down (docs/classes.md). */
#include "show.h"

#include <stdio.h>
#include <string.h>

#include "table.h"
#include "util.h"
#include "view.h"

/* the latencies the classes are compared by, with the statistics shown */
static const char *const class_metrics[] = {"time_to_first_token", "inter_token_latency",
					    "request_latency"};
static const char *const class_stats[] = {"p50", "p90", "p99"};

/* "rate 25/s poisson", "batches of 6 every 1.5 s", "concurrency 4" */
static void shape(char *buf, size_t n, json_t *load)
{
	const char *mode = view_str(load, "mode");
	json_t *batch = json_object_get(load, "batch");
	char a[VIEW_NUMLEN], b[VIEW_NUMLEN];
	double x, y;
	if (json_is_object(batch) && view_num(batch, "size", &x) && view_num(batch, "interval_s", &y))
		snprintf(buf, n, "batches of %lld every %s s (%s)", (long long)x, view_fmt_num(b, y),
			 view_str(load, "arrival") ? view_str(load, "arrival") : "");
	else if (mode && strcmp(mode, "rate") == 0 && view_num(load, "rate", &x))
		snprintf(buf, n, "rate %s/s %s", view_fmt_num(a, x),
			 view_str(load, "arrival") ? view_str(load, "arrival") : "");
	else if (mode && strcmp(mode, "concurrency") == 0 && view_num(load, "concurrency", &x))
		snprintf(buf, n, "concurrency %lld", (long long)x);
	else
		snprintf(buf, n, "%s", mode ? mode : "-");
}

void show_classes(FILE *out, json_t *run)
{
	json_t *summary = json_object_get(run, "summary");
	json_t *classes = json_object_get(summary, "classes");
	json_t *specs = json_object_get(json_object_get(run, "spec"), "classes");
	if (!json_is_object(classes) || json_object_size(classes) == 0)
		return;
	fputs("\nClasses\n", out);
	size_t ncols = 3 + HR_ARRAY_LEN(class_metrics) * HR_ARRAY_LEN(class_stats);
	struct table *t = table_new(ncols);
	table_column(t, 0, "Class", TABLE_LEFT);
	table_column(t, 1, "Load", TABLE_LEFT);
	table_column(t, 2, "Valid", TABLE_RIGHT);
	static const char *const short_names[] = {"TTFT", "ITL", "Latency"};
	char titles[16][48];
	size_t c = 3;
	for (size_t m = 0; m < HR_ARRAY_LEN(class_metrics); m++)
		for (size_t k = 0; k < HR_ARRAY_LEN(class_stats); k++, c++) {
			snprintf(titles[c - 3], sizeof titles[0], "%s %s", short_names[m],
				 class_stats[k]);
			table_column(t, c, titles[c - 3], TABLE_RIGHT);
		}
	size_t i;
	json_t *cs;
	json_array_foreach(specs, i, cs)
	{
		const char *name = view_str(cs, "name");
		json_t *sum = name ? json_object_get(classes, name) : NULL;
		if (!sum)
			continue;
		char load[160], valid[VIEW_NUMLEN], nums[16][VIEW_NUMLEN];
		const char *cells[16];
		shape(load, sizeof load, json_object_get(cs, "load"));
		double v;
		cells[0] = name;
		cells[1] = load;
		cells[2] = view_num(json_object_get(sum, "counts"), "valid", &v)
				   ? (snprintf(valid, sizeof valid, "%lld", (long long)v), valid)
				   : "-";
		c = 3;
		for (size_t m = 0; m < HR_ARRAY_LEN(class_metrics); m++) {
			json_t *mj = json_object_get(json_object_get(sum, "metrics"), class_metrics[m]);
			for (size_t k = 0; k < HR_ARRAY_LEN(class_stats); k++, c++)
				cells[c] = view_num(mj, class_stats[k], &v) ? view_fmt_num(nums[c], v)
									     : "-";
		}
		table_add_row(t, cells);
	}
	table_print(t, out, TABLE_BOX);
	table_free(t);
	fputs("(latencies in ms)\n", out);

	json_t *itf = json_object_get(summary, "interference");
	json_t *heads = json_object_get(itf, "headlines");
	if (json_array_size(heads) == 0) {
		const char *why = view_str(itf, "skipped");
		if (why)
			fprintf(out, "\nInterference: not computed (%s)\n", why);
		return;
	}
	fputs("\nInterference (requests split by whether the other class had requests in flight "
	      "during theirs; docs/metrics.md)\n",
	      out);
	json_t *h;
	json_array_foreach(heads, i, h)
	{
		if (json_is_string(h))
			fprintf(out, "  %s\n", json_string_value(h));
	}
}
