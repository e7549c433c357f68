/* nvml.h - GPU telemetry through NVIDIA's NVML, loaded at run time.
 *
 * No NVML header or library is needed to build: nvml_open() loads
 * libnvidia-ml.so.1 with dlopen and looks up the few entry points it uses
 * (see docs/nvml.md). A machine without an NVIDIA driver is normal: a run
 * goes on without GPU telemetry, and the error text nvml_open() writes is
 * the reason the telemetry reports, e.g.
 *
 *   "NVML not available: libnvidia-ml.so.1: cannot open shared object file:
 *    No such file or directory"
 *
 * Every message from nvml_open() starts with "NVML not available: ".
 *
 * Library path, first that is set: the lib_path argument, the environment
 * variable HEADROOM_NVML_LIB, then "libnvidia-ml.so.1" (found by the
 * dynamic loader's search path).
 *
 * A field NVML cannot give (NOT_SUPPORTED, no permission, any other error,
 * or an entry point missing from the library) is left out of that GPU's
 * sample: its bit in `valid` is clear and its value is 0. The first such
 * failure of a GPU is described in its `error`, so "why is power missing"
 * has an answer. A GPU whose handle cannot be had is still listed, with
 * only `index` and `error` set.
 *
 * Threads: a handle is used by one thread at a time (the sampler thread of
 * the daemon); it holds no lock. Opening several handles in one process is
 * allowed (NVML counts its initialisations).
 */
#ifndef HR_NVML_H
#define HR_NVML_H

#include <stdint.h>

#define HR_NVML_MAX_GPUS 64   /* GPUs sampled at most; more are ignored */
#define HR_NVML_NAME_LEN 96   /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define HR_NVML_UUID_LEN 96   /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define HR_NVML_ERROR_LEN 160 /* "nvmlDeviceGetPowerUsage: Not Supported" */
#define HR_NVML_DEFAULT_LIB "libnvidia-ml.so.1"
#define HR_NVML_ENV_LIB "HEADROOM_NVML_LIB"

/* Bits of nvml_sample.valid: the field holds a value NVML gave. */
enum {
	HR_NVML_NAME = 1u << 0,
	HR_NVML_UUID = 1u << 1,
	HR_NVML_POWER = 1u << 2,      /* power_w */
	HR_NVML_ENERGY = 1u << 3,     /* energy_j */
	HR_NVML_GPU_UTIL = 1u << 4,   /* gpu_util_pct */
	HR_NVML_MEM_UTIL = 1u << 5,   /* mem_util_pct */
	HR_NVML_MEM_USED = 1u << 6,   /* mem_used_bytes */
	HR_NVML_MEM_TOTAL = 1u << 7,  /* mem_total_bytes */
	HR_NVML_TEMP = 1u << 8,       /* temp_c */
	HR_NVML_SM_CLOCK = 1u << 9,   /* sm_clock_mhz */
	HR_NVML_MEM_CLOCK = 1u << 10, /* mem_clock_mhz */
	HR_NVML_ALL = (1u << 11) - 1
};

/* One GPU at one moment. Strings are always NUL-terminated valid UTF-8. */
struct nvml_sample {
	int index;                   /* NVML device index, 0-based */
	unsigned valid;              /* HR_NVML_* bits */
	char name[HR_NVML_NAME_LEN]; /* "NVIDIA H100 80GB HBM3" */
	char uuid[HR_NVML_UUID_LEN]; /* "GPU-xxxxxxxx-xxxx-..." */
	double power_w;              /* board power draw, watts (NVML: mW) */
	double energy_j;             /* energy since the driver loaded, joules (NVML: mJ);
	                                only differences between samples mean anything */
	unsigned gpu_util_pct;       /* % of the last period a kernel was running */
	unsigned mem_util_pct;       /* % of the last period device memory was read or written */
	uint64_t mem_used_bytes;
	uint64_t mem_total_bytes;
	int temp_c;                    /* GPU core temperature, degrees Celsius */
	unsigned sm_clock_mhz;         /* current SM clock */
	unsigned mem_clock_mhz;        /* current memory clock */
	int64_t wall_ns;               /* wall clock (wall_ns()) right after this GPU was read */
	int64_t mono_ns;               /* monotonic clock (mono_ns()) at the same moment */
	char error[HR_NVML_ERROR_LEN]; /* first failure, "" when none */
};

struct nvml;

/* Load NVML and initialise it. lib_path may be NULL (see the path order
 * above). Returns 0 with *out set, or -1 with a message in err (HR_ERRLEN
 * bytes) that starts with "NVML not available: ". Fails when the library
 * cannot be loaded, lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or
 * nvmlDeviceGetHandleByIndex_v2, or nvmlInit_v2 fails (the message then
 * carries NVML's error string, e.g. "nvmlInit_v2: Driver Not Loaded"). */
int nvml_open(const char *lib_path, struct nvml **out, char *err);

/* The path that was passed to dlopen. */
const char *nvml_lib_path(const struct nvml *n);

/* Read every GPU (at most max and HR_NVML_MAX_GPUS) into out[0..*n-1].
 * Returns 0, or -1 with a message in err when the GPU count cannot be had
 * (*n is then 0). Per-field failures are not errors (see above). */
int nvml_sample(struct nvml *n, struct nvml_sample *out, int max, int *count, char *err);

/* Shut NVML down and unload it. NULL is allowed. */
void nvml_close(struct nvml *n);

#endif
