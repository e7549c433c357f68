/* nvml_probe.c - test helper: reads every GPU through lib/nvml.c and prints
 * each sample as one line of JSON, so a person or a test can see exactly
 * what the daemon's telemetry would see (with the fake NVML or a real one).
 *
 *   nvml_probe [COUNT [INTERVAL_MS [LIB]]]
 *
 * COUNT samples (default 1), INTERVAL_MS apart (default 1000), from LIB
 * (default: HEADROOM_NVML_LIB, then libnvidia-ml.so.1). A line is
 *   {"sample":0,"lib":"...","gpus":[{"index":0,"name":"...",...}]}
 * with the fields NVML could not give left out and "error" set to the
 * first failure of that GPU. When NVML cannot be opened or the GPUs cannot
 * be counted, the line is {"error":"..."} and the exit status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "nvml.h"
#include "util.h"

static void put_string(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void put_double(const char *key, double v)
{
	char buf[32];
	fmt_double(buf, v);
	printf(",\"%s\":%s", key, buf);
}

static void put_gpu(const struct nvml_sample *s)
{
	printf("{\"index\":%d", s->index);
	if (s->valid & HR_NVML_NAME) {
		printf(",\"name\":");
		put_string(s->name);
	}
	if (s->valid & HR_NVML_UUID) {
		printf(",\"uuid\":");
		put_string(s->uuid);
	}
	if (s->valid & HR_NVML_POWER)
		put_double("power_w", s->power_w);
	if (s->valid & HR_NVML_ENERGY)
		put_double("energy_j", s->energy_j);
	if (s->valid & HR_NVML_GPU_UTIL)
		printf(",\"gpu_util_pct\":%u", s->gpu_util_pct);
	if (s->valid & HR_NVML_MEM_UTIL)
		printf(",\"mem_util_pct\":%u", s->mem_util_pct);
	if (s->valid & HR_NVML_MEM_USED)
		printf(",\"mem_used_bytes\":%llu", (unsigned long long)s->mem_used_bytes);
	if (s->valid & HR_NVML_MEM_TOTAL)
		printf(",\"mem_total_bytes\":%llu", (unsigned long long)s->mem_total_bytes);
	if (s->valid & HR_NVML_TEMP)
		printf(",\"temp_c\":%d", s->temp_c);
	if (s->valid & HR_NVML_SM_CLOCK)
		printf(",\"sm_clock_mhz\":%u", s->sm_clock_mhz);
	if (s->valid & HR_NVML_MEM_CLOCK)
		printf(",\"mem_clock_mhz\":%u", s->mem_clock_mhz);
	printf(",\"wall_ns\":%lld", (long long)s->wall_ns);
	if (s->error[0]) {
		printf(",\"error\":");
		put_string(s->error);
	}
	putchar('}');
}

static void put_error(const char *msg)
{
	printf("{\"error\":");
	put_string(msg);
	printf("}\n");
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
	long interval_ms = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
	const char *lib = argc > 3 ? argv[3] : NULL;
	if (argc > 4 || count < 1 || count > 1000000 || interval_ms < 0 || interval_ms > 3600000) {
		fprintf(stderr, "usage: nvml_probe [COUNT [INTERVAL_MS [LIB]]]\n");
		return 2;
	}

	char err[HR_ERRLEN];
	struct nvml *n;
	if (nvml_open(lib, &n, err) < 0) {
		put_error(err);
		return 1;
	}
	static struct nvml_sample gpus[HR_NVML_MAX_GPUS];
	int rc = 0;
	for (long k = 0; k < count; k++) {
		if (k > 0) {
			struct timespec ts = {interval_ms / 1000, (interval_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		int ngpus;
		if (nvml_sample(n, gpus, HR_NVML_MAX_GPUS, &ngpus, err) < 0) {
			put_error(err);
			rc = 1;
			break;
		}
		char *path = utf8_sanitize(xstrdup(nvml_lib_path(n)));
		printf("{\"sample\":%ld,\"lib\":", k);
		put_string(path);
		free(path);
		printf(",\"gpus\":[");
		for (int i = 0; i < ngpus; i++) {
			if (i)
				putchar(',');
			put_gpu(&gpus[i]);
		}
		printf("]}\n");
		fflush(stdout);
	}
	nvml_close(n);
	return rc;
}
