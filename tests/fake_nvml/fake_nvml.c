/* fake_nvml.c - a stand-in for NVIDIA's libnvidia-ml.so.1 for the tests: a
 * shared library (SONAME libnvidia-ml.so.1) exporting the NVML entry points
 * lib/nvml.c uses, with values a test scripts through the environment, so
 * that loading goes through the real dlopen path on machines with no GPU.
 *
 * Environment, read when NVML is initialised (the first nvmlInit_v2, or the
 * first after the last nvmlShutdown):
 *
 *   FAKE_NVML_GPUS=N      number of GPUs (default 1, at most 1024)
 *   FAKE_NVML_FAIL=RULES  comma-separated CALL[@GPU][:CODE]: that call fails
 *                         with NVML error CODE (default 999, Unknown Error),
 *                         for every GPU or only GPU. CALL is one of init,
 *                         count, handle, name, uuid, power, energy, util,
 *                         memory, temp, clock.
 *                         Example: FAKE_NVML_FAIL=init:9 (Driver Not Loaded),
 *                         FAKE_NVML_FAIL=power@1:3 (GPU 1 has no power reading)
 *   FAKE_NVML_NO_NUL=1    name and uuid fill the caller's buffer without a
 *                         terminating NUL (a misbehaving library)
 *
 * and read at every call (the file is re-read each time, so a test changes
 * values live by rewriting it):
 *
 *   FAKE_NVML_SCRIPT=PATH lines "[T_MS] GPU FIELD VALUE"; GPU is an index or
 *                         '*'; a line with T_MS applies once T_MS
 *                         milliseconds have passed since initialisation;
 *                         lines apply in file order, later ones win; '#'
 *                         starts a comment; a missing file means defaults.
 *                         FIELD (NVML units): name, uuid (VALUE is the rest
 *                         of the line), power (mW), util_gpu, util_mem (%),
 *                         mem_used, mem_total (bytes), temp (C), sm_clock,
 *                         mem_clock (MHz). VALUE "err:CODE" makes the call
 *                         that reads the field fail with CODE.
 *
 * Defaults for GPU i: name "Headroom Fake GPU i", uuid
 * "GPU-fa4e0000-0000-4000-8000-00000000000i" (i in hex, 12 digits), power
 * 100 W + 50 W * i, util_gpu 50 + 10 * i, util_mem 25 + 10 * i, memory 80
 * GiB with (i + 1) GiB used, temp 40 + i, SM clock 1980 MHz, memory clock
 * 2619 MHz.
 *
 * Energy (mJ) starts at 1,000,000 at initialisation and grows by the power
 * in effect times the time between energy reads.
 *
 * Built twice: libnvidia-ml.so.1, and with FAKE_NVML_MINIMAL
 * libnvidia-ml-minimal.so.1, which lacks nvmlErrorString,
 * nvmlDeviceGetTotalEnergyConsumption and nvmlDeviceGetClockInfo (an old or
 * partial NVML). fake_nvml_init_count() (not an NVML function) tells a test
 * how many initialisations are outstanding.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- NVML ABI (from NVIDIA's nvml.h) ---- */
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
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_UNKNOWN 999
#define NVML_TEMPERATURE_GPU 0u
#define NVML_CLOCK_SM 1u
#define NVML_CLOCK_MEM 2u

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int *temp);
#ifndef FAKE_NVML_MINIMAL
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock);
#endif
int fake_nvml_init_count(void);

/* ---- state ---- */
#define MAX_GPUS 1024
#define MAX_RULES 32
#define STR_LEN 128

struct nvmlDevice_st {
	unsigned int index;
	double energy_mj;
	double power_mw; /* power in effect since last_ns */
	int64_t last_ns;
};

enum call {
	C_INIT,
	C_COUNT,
	C_HANDLE,
	C_NAME,
	C_UUID,
	C_POWER,
	C_ENERGY,
	C_UTIL,
	C_MEMORY,
	C_TEMP,
	C_CLOCK,
	C_NCALLS
};
static const char *const call_names[C_NCALLS] = {"init",   "count", "handle", "name",
                                                 "uuid",   "power", "energy", "util",
                                                 "memory", "temp",  "clock"};

/* Scriptable fields, each read by one call. */
enum field {
	F_NAME,
	F_UUID,
	F_POWER,
	F_UTIL_GPU,
	F_UTIL_MEM,
	F_MEM_USED,
	F_MEM_TOTAL,
	F_TEMP,
	F_SM_CLOCK,
	F_MEM_CLOCK,
	F_NFIELDS
};
static const char *const field_names[F_NFIELDS] = {"name",     "uuid",     "power",     "util_gpu",
                                                   "util_mem", "mem_used", "mem_total", "temp",
                                                   "sm_clock", "mem_clock"};

struct values {
	char name[STR_LEN];
	char uuid[STR_LEN];
	unsigned long long num[F_NFIELDS];
	int err[F_NFIELDS];
};

struct rule {
	enum call call;
	int gpu; /* -1: every GPU */
	int code;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int inits;
static unsigned int ngpus;
static int no_nul;
static struct rule rules[MAX_RULES];
static int nrules;
static int64_t start_ns;
static struct nvmlDevice_st devs[MAX_GPUS];

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int rule_code(enum call c, int gpu)
{
	for (int i = 0; i < nrules; i++)
		if (rules[i].call == c && (rules[i].gpu < 0 || rules[i].gpu == gpu))
			return rules[i].code;
	return NVML_SUCCESS;
}

static void parse_rules(const char *s)
{
	nrules = 0;
	while (s && *s && nrules < MAX_RULES) {
		size_t len = strcspn(s, ",");
		char item[64];
		if (len < sizeof(item)) {
			memcpy(item, s, len);
			item[len] = '\0';
			struct rule r = {C_NCALLS, -1, NVML_ERROR_UNKNOWN};
			char *colon = strchr(item, ':');
			if (colon) {
				*colon = '\0';
				r.code = atoi(colon + 1);
			}
			char *at = strchr(item, '@');
			if (at) {
				*at = '\0';
				r.gpu = atoi(at + 1);
			}
			for (int c = 0; c < C_NCALLS; c++)
				if (strcmp(item, call_names[c]) == 0)
					r.call = (enum call)c;
			if (r.call != C_NCALLS)
				rules[nrules++] = r;
		}
		s += len;
		if (*s == ',')
			s++;
	}
}

static void defaults(unsigned int i, struct values *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "Headroom Fake GPU %u", i);
	snprintf(v->uuid, sizeof(v->uuid), "GPU-fa4e0000-0000-4000-8000-%012x", i);
	v->num[F_POWER] = 100000ull + 50000ull * i;
	v->num[F_UTIL_GPU] = 50 + 10 * i;
	v->num[F_UTIL_MEM] = 25 + 10 * i;
	v->num[F_MEM_TOTAL] = 80ull << 30;
	v->num[F_MEM_USED] = (unsigned long long)(i + 1) << 30;
	v->num[F_TEMP] = 40 + i;
	v->num[F_SM_CLOCK] = 1980;
	v->num[F_MEM_CLOCK] = 2619;
}

static int find_field(const char *s)
{
	for (int f = 0; f < F_NFIELDS; f++)
		if (strcmp(s, field_names[f]) == 0)
			return f;
	return -1;
}

/* Next blank-separated token of *p (NUL-terminated in place), or NULL. */
static char *token(char **p)
{
	char *s = *p + strspn(*p, " \t");
	if (!*s)
		return NULL;
	char *e = s + strcspn(s, " \t");
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* Apply one script line to GPU i's values. */
static void apply_line(char *line, unsigned int i, int64_t elapsed_ms, struct values *v)
{
	line[strcspn(line, "#\r\n")] = '\0';
	char *p = line;
	char *t1 = token(&p), *t2 = token(&p);
	if (!t1 || !t2)
		return;
	const char *gpu = t1;
	int f = find_field(t2);
	if (f < 0) { /* timed: T_MS GPU FIELD VALUE */
		if (strtoll(t1, NULL, 10) > elapsed_ms)
			return;
		gpu = t2;
		char *t3 = token(&p);
		if (!t3 || (f = find_field(t3)) < 0)
			return;
	}
	if (strcmp(gpu, "*") != 0) {
		char *end;
		unsigned long g = strtoul(gpu, &end, 10);
		if (*end || end == gpu || g != i)
			return;
	}
	char *value = p + strspn(p, " \t");
	size_t len = strlen(value);
	while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
		value[--len] = '\0';
	if (!*value)
		return;
	if (strncmp(value, "err:", 4) == 0) {
		v->err[f] = atoi(value + 4);
		return;
	}
	v->err[f] = NVML_SUCCESS;
	if (f == F_NAME)
		snprintf(v->name, sizeof(v->name), "%s", value);
	else if (f == F_UUID)
		snprintf(v->uuid, sizeof(v->uuid), "%s", value);
	else
		v->num[f] = strtoull(value, NULL, 10);
}

/* Current values of GPU i: defaults, then the script. */
static void values_of(unsigned int i, struct values *v)
{
	defaults(i, v);
	const char *path = getenv("FAKE_NVML_SCRIPT");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	int64_t elapsed_ms = (now_ns() - start_ns) / 1000000;
	char line[512];
	while (fgets(line, sizeof(line), f))
		apply_line(line, i, elapsed_ms, v);
	fclose(f);
}

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long x = strtol(s, &end, 10);
	if (*end || x < lo || x > hi)
		return def;
	return (int)x;
}

/* Common checks of a device call; locks on success (returns 0). */
static nvmlReturn_t enter(nvmlDevice_t dev, enum call c, void *out)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = NVML_SUCCESS;
	uintptr_t p = (uintptr_t)dev, lo = (uintptr_t)&devs[0], hi = (uintptr_t)&devs[ngpus];
	if (!inits)
		rc = NVML_ERROR_UNINITIALIZED;
	else if (!dev || p < lo || p >= hi || !out)
		rc = NVML_ERROR_INVALID_ARGUMENT;
	else
		rc = rule_code(c, (int)dev->index);
	if (rc != NVML_SUCCESS)
		pthread_mutex_unlock(&lock);
	return rc;
}

static nvmlReturn_t leave(nvmlReturn_t rc)
{
	pthread_mutex_unlock(&lock);
	return rc;
}

/* ---- entry points ---- */

nvmlReturn_t nvmlInit_v2(void)
{
	pthread_mutex_lock(&lock);
	if (inits == 0) {
		parse_rules(getenv("FAKE_NVML_FAIL"));
		int rc = rule_code(C_INIT, -1);
		if (rc != NVML_SUCCESS) {
			pthread_mutex_unlock(&lock);
			return rc;
		}
		ngpus = (unsigned int)env_int("FAKE_NVML_GPUS", 1, 0, MAX_GPUS);
		no_nul = env_int("FAKE_NVML_NO_NUL", 0, 0, 1);
		start_ns = now_ns();
		for (unsigned int i = 0; i < ngpus; i++) {
			struct values v;
			values_of(i, &v);
			devs[i].index = i;
			devs[i].energy_mj = 1e6;
			devs[i].power_mw = (double)v.num[F_POWER];
			devs[i].last_ns = start_ns;
		}
	}
	inits++;
	pthread_mutex_unlock(&lock);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = NVML_SUCCESS;
	if (inits == 0)
		rc = NVML_ERROR_UNINITIALIZED;
	else
		inits--;
	pthread_mutex_unlock(&lock);
	return rc;
}

int fake_nvml_init_count(void)
{
	pthread_mutex_lock(&lock);
	int n = inits;
	pthread_mutex_unlock(&lock);
	return n;
}

#ifndef FAKE_NVML_MINIMAL
const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case 0:
		return "Success";
	case 1:
		return "Uninitialized";
	case 2:
		return "Invalid Argument";
	case 3:
		return "Not Supported";
	case 4:
		return "Insufficient Permissions";
	case 5:
		return "Already Initialized";
	case 6:
		return "Not Found";
	case 7:
		return "Insufficient Size";
	case 8:
		return "Insufficient External Power";
	case 9:
		return "Driver Not Loaded";
	case 10:
		return "Timeout";
	case 11:
		return "Interrupt Request Issue";
	case 12:
		return "NVML Shared Library Not Found";
	case 13:
		return "Function Not Found";
	case 14:
		return "Corrupted infoROM";
	case 15:
		return "GPU is lost";
	case 16:
		return "GPU requires restart";
	case 17:
		return "The operating system has blocked the request.";
	case 18:
		return "RM has detected an NVML/RM version mismatch.";
	case 20:
		return "Insufficient Memory";
	case 21:
		return "No data";
	default:
		return "Unknown Error";
	}
}
#endif

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = !inits   ? NVML_ERROR_UNINITIALIZED
	                  : !count ? NVML_ERROR_INVALID_ARGUMENT
	                           : rule_code(C_COUNT, -1);
	if (rc == NVML_SUCCESS)
		*count = ngpus;
	pthread_mutex_unlock(&lock);
	return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = !inits                      ? NVML_ERROR_UNINITIALIZED
	                  : !device || index >= ngpus ? NVML_ERROR_INVALID_ARGUMENT
	                                              : rule_code(C_HANDLE, (int)index);
	if (rc == NVML_SUCCESS)
		*device = &devs[index];
	pthread_mutex_unlock(&lock);
	return rc;
}

static nvmlReturn_t get_string(nvmlDevice_t dev, enum call c, int field, char *buf,
                               unsigned int len)
{
	nvmlReturn_t rc = enter(dev, c, buf);
	if (rc != NVML_SUCCESS)
		return rc;
	struct values v;
	values_of(dev->index, &v);
	const char *s = field == F_NAME ? v.name : v.uuid;
	if (v.err[field])
		return leave(v.err[field]);
	if (no_nul && *s) { /* misbehave: fill the buffer, no terminator */
		for (unsigned int i = 0; i < len; i++)
			buf[i] = s[i % strlen(s)];
		return leave(NVML_SUCCESS);
	}
	if (strlen(s) + 1 > len)
		return leave(NVML_ERROR_INSUFFICIENT_SIZE);
	memcpy(buf, s, strlen(s) + 1);
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	return get_string(device, C_NAME, F_NAME, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	return get_string(device, C_UUID, F_UUID, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	nvmlReturn_t rc = enter(device, C_POWER, power);
	if (rc != NVML_SUCCESS)
		return rc;
	struct values v;
	values_of(device->index, &v);
	if (v.err[F_POWER])
		return leave(v.err[F_POWER]);
	*power = (unsigned int)v.num[F_POWER];
	return leave(NVML_SUCCESS);
}

#ifndef FAKE_NVML_MINIMAL
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy)
{
	nvmlReturn_t rc = enter(device, C_ENERGY, energy);
	if (rc != NVML_SUCCESS)
		return rc;
	struct values v;
	values_of(device->index, &v);
	int64_t now = now_ns();
	device->energy_mj += device->power_mw * (double)(now - device->last_ns) / 1e9;
	device->last_ns = now;
	if (!v.err[F_POWER])
		device->power_mw = (double)v.num[F_POWER];
	*energy = (unsigned long long)device->energy_mj;
	return leave(NVML_SUCCESS);
}
#endif

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	nvmlReturn_t rc = enter(device, C_UTIL, utilization);
	if (rc != NVML_SUCCESS)
		return rc;
	struct values v;
	values_of(device->index, &v);
	if (v.err[F_UTIL_GPU] || v.err[F_UTIL_MEM])
		return leave(v.err[F_UTIL_GPU] ? v.err[F_UTIL_GPU] : v.err[F_UTIL_MEM]);
	utilization->gpu = (unsigned int)v.num[F_UTIL_GPU];
	utilization->memory = (unsigned int)v.num[F_UTIL_MEM];
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	nvmlReturn_t rc = enter(device, C_MEMORY, memory);
	if (rc != NVML_SUCCESS)
		return rc;
	struct values v;
	values_of(device->index, &v);
	if (v.err[F_MEM_USED] || v.err[F_MEM_TOTAL])
		return leave(v.err[F_MEM_USED] ? v.err[F_MEM_USED] : v.err[F_MEM_TOTAL]);
	memory->total = v.num[F_MEM_TOTAL];
	memory->used = v.num[F_MEM_USED];
	memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int *temp)
{
	nvmlReturn_t rc = enter(device, C_TEMP, temp);
	if (rc != NVML_SUCCESS)
		return rc;
	if (sensor != NVML_TEMPERATURE_GPU)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	struct values v;
	values_of(device->index, &v);
	if (v.err[F_TEMP])
		return leave(v.err[F_TEMP]);
	*temp = (unsigned int)v.num[F_TEMP];
	return leave(NVML_SUCCESS);
}

#ifndef FAKE_NVML_MINIMAL
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
	nvmlReturn_t rc = enter(device, C_CLOCK, clock);
	if (rc != NVML_SUCCESS)
		return rc;
	int f = type == NVML_CLOCK_SM ? F_SM_CLOCK : type == NVML_CLOCK_MEM ? F_MEM_CLOCK : -1;
	if (f < 0)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	struct values v;
	values_of(device->index, &v);
	if (v.err[f])
		return leave(v.err[f]);
	*clock = (unsigned int)v.num[f];
	return leave(NVML_SUCCESS);
}
#endif
