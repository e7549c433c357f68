/* nvml.c - GPU telemetry through NVML loaded with dlopen (see nvml.h and
 * docs/nvml.md).
 *
 * The NVML types and constants this file needs are declared below exactly
 * as NVIDIA's nvml.h defines them (the ABI has been stable since the _v2
 * entry points appeared in driver 319). The C enums of nvml.h
 * (nvmlReturn_t, nvmlTemperatureSensors_t, nvmlClockType_t) are passed in
 * 32-bit registers like int / unsigned int, which is what they are
 * declared as here.
 *
 * Defensive choices against a library that misbehaves: strings are read
 * into zeroed buffers whose last byte is forced to NUL, then made valid
 * UTF-8; the GPU count is bounded by HR_NVML_MAX_GPUS and by the caller's
 * array; nvmlErrorString() returning NULL is tolerated; a handle reported
 * as found but NULL is not passed on.
 */
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- NVML ABI (from nvml.h) ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlUtilization_st {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;
typedef struct nvmlMemory_st {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;
typedef unsigned int nvmlTemperatureSensors_t;
typedef unsigned int nvmlClockType_t;

#define NVML_SUCCESS 0
#define NVML_TEMPERATURE_GPU 0u
#define NVML_CLOCK_SM 1u
#define NVML_CLOCK_MEM 2u
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

typedef nvmlReturn_t (*init_fn)(void);
typedef nvmlReturn_t (*shutdown_fn)(void);
typedef const char *(*error_string_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*get_count_fn)(unsigned int *);
typedef nvmlReturn_t (*get_handle_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*get_string_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*get_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*get_ull_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*get_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*get_memory_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*get_temp_fn)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *);
typedef nvmlReturn_t (*get_clock_fn)(nvmlDevice_t, nvmlClockType_t, unsigned int *);

_Static_assert(sizeof(void *) == sizeof(init_fn), "dlsym results must fit function pointers");
_Static_assert(HR_NVML_NAME_LEN >= NVML_DEVICE_NAME_V2_BUFFER_SIZE, "name buffer");
_Static_assert(HR_NVML_UUID_LEN >= NVML_DEVICE_UUID_V2_BUFFER_SIZE, "uuid buffer");

struct nvml {
	void *dl;
	char *path;
	int initialised;
	init_fn init;
	shutdown_fn shutdown;
	error_string_fn error_string;
	get_count_fn get_count;
	get_handle_fn get_handle;
	get_string_fn get_name;
	get_string_fn get_uuid;
	get_uint_fn get_power;
	get_ull_fn get_energy;
	get_util_fn get_util;
	get_memory_fn get_memory;
	get_temp_fn get_temp;
	get_clock_fn get_clock;
};

/* dlsym into a function pointer without an object-to-function pointer
 * cast (POSIX guarantees the representations match). NULL when absent. */
#define LOAD(n, field, name)                                                                       \
	do {                                                                                       \
		void *p_ = dlsym((n)->dl, name);                                                   \
		_Static_assert(sizeof(p_) == sizeof((n)->field), "function pointer size");         \
		memcpy(&(n)->field, &p_, sizeof(p_));                                              \
	} while (0)

/* "fn: NVML's text for rc" into buf. */
static void describe(const struct nvml *n, char *buf, size_t len, const char *fn, nvmlReturn_t rc)
{
	const char *s = n->error_string ? n->error_string(rc) : NULL;
	if (s)
		snprintf(buf, len, "%s: %.100s", fn, s);
	else
		snprintf(buf, len, "%s: NVML error %d", fn, rc);
	utf8_sanitize(buf);
}

const char *nvml_lib_path(const struct nvml *n)
{
	return n->path;
}

int nvml_open(const char *lib_path, struct nvml **out, char *err)
{
	*out = NULL;
	const char *path = lib_path;
	if (!path || !*path)
		path = getenv(HR_NVML_ENV_LIB);
	if (!path || !*path)
		path = HR_NVML_DEFAULT_LIB;

	dlerror();
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		if (!why)
			why = "cannot be loaded";
		/* glibc's message starts with the path; keep it whatever the loader */
		if (strstr(why, path))
			return errf(err, "NVML not available: %s", why);
		return errf(err, "NVML not available: %s: %s", path, why);
	}

	struct nvml *n = xcalloc(1, sizeof(*n));
	n->dl = dl;
	n->path = xstrdup(path);
	LOAD(n, init, "nvmlInit_v2");
	LOAD(n, shutdown, "nvmlShutdown");
	LOAD(n, error_string, "nvmlErrorString");
	LOAD(n, get_count, "nvmlDeviceGetCount_v2");
	LOAD(n, get_handle, "nvmlDeviceGetHandleByIndex_v2");
	LOAD(n, get_name, "nvmlDeviceGetName");
	LOAD(n, get_uuid, "nvmlDeviceGetUUID");
	LOAD(n, get_power, "nvmlDeviceGetPowerUsage");
	LOAD(n, get_energy, "nvmlDeviceGetTotalEnergyConsumption");
	LOAD(n, get_util, "nvmlDeviceGetUtilizationRates");
	LOAD(n, get_memory, "nvmlDeviceGetMemoryInfo");
	LOAD(n, get_temp, "nvmlDeviceGetTemperature");
	LOAD(n, get_clock, "nvmlDeviceGetClockInfo");

	const char *missing = !n->init         ? "nvmlInit_v2"
	                      : !n->get_count  ? "nvmlDeviceGetCount_v2"
	                      : !n->get_handle ? "nvmlDeviceGetHandleByIndex_v2"
	                                       : NULL;
	if (missing) {
		errf(err, "NVML not available: %s has no %s", path, missing);
		nvml_close(n);
		return -1;
	}

	nvmlReturn_t rc = n->init();
	if (rc != NVML_SUCCESS) {
		char why[HR_NVML_ERROR_LEN];
		describe(n, why, sizeof(why), "nvmlInit_v2", rc);
		errf(err, "NVML not available: %s", why);
		nvml_close(n);
		return -1;
	}
	n->initialised = 1;
	*out = n;
	return 0;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->initialised && n->shutdown)
		n->shutdown();
	if (n->dl)
		dlclose(n->dl);
	free(n->path);
	free(n);
}

/* Keep the first failure of a GPU. */
static void fail(const struct nvml *n, struct nvml_sample *s, const char *fn, nvmlReturn_t rc)
{
	if (!s->error[0])
		describe(n, s->error, sizeof(s->error), fn, rc);
}

static void absent(struct nvml_sample *s, const char *fn)
{
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s: not in the NVML library", fn);
}

/* Read a string attribute into buf (size len); 1 when it is valid. */
static int read_string(const struct nvml *n, struct nvml_sample *s, nvmlDevice_t dev,
                       get_string_fn get, const char *fn, char *buf, size_t len,
                       unsigned int nvml_len)
{
	memset(buf, 0, len);
	if (!get) {
		absent(s, fn);
		return 0;
	}
	nvmlReturn_t rc = get(dev, buf, nvml_len);
	buf[len - 1] = '\0';
	if (rc != NVML_SUCCESS) {
		memset(buf, 0, len);
		fail(n, s, fn, rc);
		return 0;
	}
	utf8_sanitize(buf);
	return 1;
}

static void sample_one(const struct nvml *n, unsigned int i, struct nvml_sample *s)
{
	nvmlReturn_t rc;
	nvmlDevice_t dev = NULL;

	memset(s, 0, sizeof(*s));
	s->index = (int)i;
	rc = n->get_handle(i, &dev);
	if (rc != NVML_SUCCESS || !dev) {
		if (rc != NVML_SUCCESS)
			fail(n, s, "nvmlDeviceGetHandleByIndex_v2", rc);
		else
			snprintf(s->error, sizeof(s->error),
			         "nvmlDeviceGetHandleByIndex_v2: no handle returned");
		goto done;
	}

	if (read_string(n, s, dev, n->get_name, "nvmlDeviceGetName", s->name, sizeof(s->name),
	                NVML_DEVICE_NAME_V2_BUFFER_SIZE))
		s->valid |= HR_NVML_NAME;
	if (read_string(n, s, dev, n->get_uuid, "nvmlDeviceGetUUID", s->uuid, sizeof(s->uuid),
	                NVML_DEVICE_UUID_V2_BUFFER_SIZE))
		s->valid |= HR_NVML_UUID;

	if (n->get_power) {
		unsigned int mw = 0;
		rc = n->get_power(dev, &mw);
		if (rc == NVML_SUCCESS) {
			s->power_w = mw / 1000.0;
			s->valid |= HR_NVML_POWER;
		} else {
			fail(n, s, "nvmlDeviceGetPowerUsage", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetPowerUsage");
	}

	if (n->get_energy) {
		unsigned long long mj = 0;
		rc = n->get_energy(dev, &mj);
		if (rc == NVML_SUCCESS) {
			s->energy_j = (double)mj / 1000.0;
			s->valid |= HR_NVML_ENERGY;
		} else {
			fail(n, s, "nvmlDeviceGetTotalEnergyConsumption", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetTotalEnergyConsumption");
	}

	if (n->get_util) {
		nvmlUtilization_t u = {0, 0};
		rc = n->get_util(dev, &u);
		if (rc == NVML_SUCCESS) {
			s->gpu_util_pct = u.gpu;
			s->mem_util_pct = u.memory;
			s->valid |= HR_NVML_GPU_UTIL | HR_NVML_MEM_UTIL;
		} else {
			fail(n, s, "nvmlDeviceGetUtilizationRates", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetUtilizationRates");
	}

	if (n->get_memory) {
		nvmlMemory_t m = {0, 0, 0};
		rc = n->get_memory(dev, &m);
		if (rc == NVML_SUCCESS) {
			s->mem_used_bytes = m.used;
			s->mem_total_bytes = m.total;
			s->valid |= HR_NVML_MEM_USED | HR_NVML_MEM_TOTAL;
		} else {
			fail(n, s, "nvmlDeviceGetMemoryInfo", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetMemoryInfo");
	}

	if (n->get_temp) {
		unsigned int t = 0;
		rc = n->get_temp(dev, NVML_TEMPERATURE_GPU, &t);
		if (rc == NVML_SUCCESS) {
			s->temp_c = (int)t;
			s->valid |= HR_NVML_TEMP;
		} else {
			fail(n, s, "nvmlDeviceGetTemperature", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetTemperature");
	}

	if (n->get_clock) {
		unsigned int mhz = 0;
		rc = n->get_clock(dev, NVML_CLOCK_SM, &mhz);
		if (rc == NVML_SUCCESS) {
			s->sm_clock_mhz = mhz;
			s->valid |= HR_NVML_SM_CLOCK;
		} else {
			fail(n, s, "nvmlDeviceGetClockInfo(SM)", rc);
		}
		mhz = 0;
		rc = n->get_clock(dev, NVML_CLOCK_MEM, &mhz);
		if (rc == NVML_SUCCESS) {
			s->mem_clock_mhz = mhz;
			s->valid |= HR_NVML_MEM_CLOCK;
		} else {
			fail(n, s, "nvmlDeviceGetClockInfo(MEM)", rc);
		}
	} else {
		absent(s, "nvmlDeviceGetClockInfo");
	}

done:
	s->wall_ns = wall_ns();
	s->mono_ns = mono_ns();
}

int nvml_sample(struct nvml *n, struct nvml_sample *out, int max, int *count, char *err)
{
	*count = 0;
	if (!n || !out || max <= 0)
		return errf(err, "nvml_sample: no handle or no room");
	unsigned int c = 0;
	nvmlReturn_t rc = n->get_count(&c);
	if (rc != NVML_SUCCESS) {
		char why[HR_NVML_ERROR_LEN];
		describe(n, why, sizeof(why), "nvmlDeviceGetCount_v2", rc);
		return errf(err, "%s", why);
	}
	if (c > HR_NVML_MAX_GPUS)
		c = HR_NVML_MAX_GPUS;
	if (c > (unsigned int)max)
		c = (unsigned int)max;
	for (unsigned int i = 0; i < c; i++)
		sample_one(n, i, &out[i]);
	*count = (int)c;
	return 0;
}
