/* standalone.c - runs a libFuzzer target without libFuzzer: calls
 * LLVMFuzzerTestOneInput once per file named on the command line, or per
 * regular file in a directory named there, so the targets can be exercised
 * (e.g. over their seed corpus, under gcc sanitizers) where clang's
 * -fsanitize=fuzzer is not available.
 *
 * Build: gcc -Ilib tests/fuzz/standalone.c tests/fuzz/fuzz_sse.c lib/sse.c \
 *        lib/dynbuf.c lib/util.c -o fuzz_sse_standalone
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		fprintf(stderr, "%s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* a private copy of exactly len bytes, so ASan catches overreads */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	if (len)
		memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in dir, in name order. Returns how many ran, or
 * -1 when the directory or one of its files could not be read. */
static long run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	long ran = 0;
	int bad = 0;

	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		size_t need = strlen(dir) + strlen(e->d_name) + 2;
		char *path = malloc(need);
		if (!path)
			break;
		snprintf(path, need, "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(path);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				free(path);
				break;
			}
			names = nn;
		}
		names[n++] = path;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (run_file(names[i]) == 0)
			ran++;
		else
			bad = 1;
		free(names[i]);
	}
	free(names);
	return bad ? -1 : ran;
}

int main(int argc, char **argv)
{
	long total = 0;
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			failed = 1;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			long k = run_dir(argv[i]);
			if (k < 0)
				failed = 1;
			else
				total += k;
		} else if (run_file(argv[i]) == 0) {
			total++;
		} else {
			failed = 1;
		}
	}
	printf("ran %ld inputs%s\n", total, failed ? " (some could not be read)" : "");
	return failed ? 1 : 0;
}
