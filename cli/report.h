/* report.h - a finished run judged for CI: the exit code `submit --wait`
 * gives it (with a reason line for each problem), JUnit XML for test
 * report viewers and a Markdown summary for a pull request or
 * $GITHUB_STEP_SUMMARY. Runs are GET /api/v1/runs/{id} answers: untrusted,
 * every read type-checked, every string escaped for its format.
 */
#ifndef HR_CLI_REPORT_H
#define HR_CLI_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The exit code a finished run earns (cli.h): EXIT_RUN_FAILED when it did
 * not succeed, else the first that applies of EXIT_CLIENT_BOUND (unless
 * summary.client.allow_client_bound), EXIT_INVALID, EXIT_THRESHOLD_GATE,
 * EXIT_REGRESSION_GATE, else EXIT_OK. With why, a line per problem found
 * ("headroom: run 12 ...") is written to it. */
int report_outcome(json_t *run, FILE *why);

/* The exit code that wins between two (a group's runs): EXIT_RUN_FAILED,
 * then 4, 7, 5, 6, EXIT_OK last; any other code (3, 130) wins over all. */
int report_worse(int a, int b);

/* JUnit XML of the runs (n >= 1): one <testsuite> per run. */
void report_junit(FILE *out, json_t *const *runs, size_t n);

/* A Markdown summary of the runs; group, when not NULL, is the GET
 * /api/v1/groups/{id} answer they belong to. */
void report_markdown(FILE *out, json_t *const *runs, size_t n, json_t *group);

/* s as text for a Markdown table cell: control characters dropped,
 * Markdown and HTML syntax escaped, '|' escaped. Caller frees. */
char *report_md_text(const char *s);

#endif
