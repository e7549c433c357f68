/* dashcache.c - finished runs' dashboard answers in memory (see dashcache.h):
 * a small array searched linearly (64 entries), each with its last use. */
#include "dashcache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct entry {
	char *key, *text;
	size_t len;
	uint64_t used;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[DASHCACHE_ENTRIES];
static size_t total;
static uint64_t clock_;

static void drop(struct entry *e)
{
	total -= e->len;
	free(e->key);
	free(e->text);
	memset(e, 0, sizeof *e);
}

char *dashcache_get(const char *key, size_t *len)
{
	char *out = NULL;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < DASHCACHE_ENTRIES; i++)
		if (cache[i].key && strcmp(cache[i].key, key) == 0) {
			cache[i].used = ++clock_;
			out = xmalloc(cache[i].len + 1);
			memcpy(out, cache[i].text, cache[i].len);
			out[cache[i].len] = 0;
			*len = cache[i].len;
			break;
		}
	pthread_mutex_unlock(&mu);
	return out;
}

void dashcache_put(const char *key, const char *text, size_t len)
{
	if (len > DASHCACHE_BYTES / 4)
		return;
	char *copy = xmalloc(len + 1);
	memcpy(copy, text, len);
	copy[len] = 0;
	char *k = xstrdup(key);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < DASHCACHE_ENTRIES; i++)
		if (cache[i].key && strcmp(cache[i].key, key) == 0)
			drop(&cache[i]); /* two computed it at once: the later one stays */
	for (;;) {
		int free_slot = -1, oldest = -1;
		for (int i = 0; i < DASHCACHE_ENTRIES; i++) {
			if (!cache[i].key) {
				if (free_slot < 0)
					free_slot = i;
			} else if (oldest < 0 || cache[i].used < cache[oldest].used) {
				oldest = i;
			}
		}
		if (free_slot >= 0 && total + len <= DASHCACHE_BYTES) {
			cache[free_slot] = (struct entry){k, copy, len, ++clock_};
			total += len;
			break;
		}
		drop(&cache[oldest]);
	}
	pthread_mutex_unlock(&mu);
}
