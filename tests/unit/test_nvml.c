/* test_nvml.c - unit tests of lib/nvml.c against the fake NVML library
 * (tests/fake_nvml), loaded through the real dlopen path: values and units
 * of two GPUs, scripted changes between samples, energy, fields NVML does
 * not support, missing entry points, init/count/handle failures, a missing
 * library, a library that is not NVML, a misbehaving library.
 *
 * ctest runs it with HEADROOM_NVML_LIB (the fake libnvidia-ml.so.1) and
 * HEADROOM_TEST_NVML_MINIMAL_LIB (the variant lacking some entry points)
 * set; without them it fails rather than skips. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvml.h"
#include "tap.h"
#include "util.h"

static char *fake_lib;    /* HEADROOM_NVML_LIB as given */
static char *minimal_lib; /* HEADROOM_TEST_NVML_MINIMAL_LIB */
static char tmpdir[] = "/tmp/test_nvml.XXXXXX";
static char script[256];

static void sleep_ms(long ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void write_script(const char *text)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", script);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		tap_ok(0, "cannot write %s", tmp);
		return;
	}
	fputs(text, f);
	fclose(f);
	rename(tmp, script); /* the fake never sees a half-written file */
}

/* The fake's configuration, read at nvmlInit_v2. */
static void fake_env(const char *gpus, const char *fail, const char *script_text)
{
	setenv("HEADROOM_NVML_LIB", fake_lib, 1);
	setenv("FAKE_NVML_GPUS", gpus, 1);
	if (fail)
		setenv("FAKE_NVML_FAIL", fail, 1);
	else
		unsetenv("FAKE_NVML_FAIL");
	unsetenv("FAKE_NVML_NO_NUL");
	write_script(script_text ? script_text : "");
	setenv("FAKE_NVML_SCRIPT", script, 1);
}

static struct nvml *open_fake(void)
{
	char err[HR_ERRLEN] = "";
	struct nvml *n = NULL;
	if (!CHECK(nvml_open(NULL, &n, err) == 0))
		printf("# nvml_open: %s\n", err);
	return n;
}

static int sample(struct nvml *n, struct nvml_sample *s, int max)
{
	char err[HR_ERRLEN] = "";
	int count = -1;
	if (!n)
		return 0;
	if (!CHECK(nvml_sample(n, s, max, &count, err) == 0))
		printf("# nvml_sample: %s\n", err);
	return count;
}

/* Outstanding nvmlInit_v2 calls of the loaded fake, -1 when not loaded. */
static int fake_inits(void)
{
	void *h = dlopen(fake_lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (!h)
		return -1;
	int (*count)(void);
	void *p = dlsym(h, "fake_nvml_init_count");
	memcpy(&count, &p, sizeof(p));
	int r = count ? count() : -2;
	dlclose(h);
	return r;
}

static void test_two_gpus(void)
{
	static struct nvml_sample s[HR_NVML_MAX_GPUS];

	fake_env("2", NULL, NULL);
	CHECK_EQ_INT(fake_inits(), -1); /* not loaded before */
	int64_t before = wall_ns();
	struct nvml *n = open_fake();
	if (!n)
		return;
	CHECK_STR(nvml_lib_path(n), fake_lib);
	CHECK_EQ_INT(fake_inits(), 1);
	int count = sample(n, s, HR_NVML_MAX_GPUS);
	int64_t after = wall_ns();
	CHECK_EQ_INT(count, 2);

	CHECK_EQ_INT(s[0].index, 0);
	CHECK_EQ_INT(s[0].valid, HR_NVML_ALL);
	CHECK_STR(s[0].name, "Headroom Fake GPU 0");
	CHECK_STR(s[0].uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
	CHECK_EQ_DBL(s[0].power_w, 100.0);
	CHECK(s[0].energy_j >= 1000.0 && s[0].energy_j < 1100.0);
	CHECK_EQ_INT(s[0].gpu_util_pct, 50);
	CHECK_EQ_INT(s[0].mem_util_pct, 25);
	CHECK_EQ_INT(s[0].mem_used_bytes, 1LL << 30);
	CHECK_EQ_INT(s[0].mem_total_bytes, 80LL << 30);
	CHECK_EQ_INT(s[0].temp_c, 40);
	CHECK_EQ_INT(s[0].sm_clock_mhz, 1980);
	CHECK_EQ_INT(s[0].mem_clock_mhz, 2619);
	CHECK_STR(s[0].error, "");
	CHECK(s[0].wall_ns >= before && s[0].wall_ns <= after);
	CHECK(s[0].mono_ns > 0 && s[0].mono_ns <= mono_ns());

	CHECK_EQ_INT(s[1].index, 1);
	CHECK_EQ_INT(s[1].valid, HR_NVML_ALL);
	CHECK_STR(s[1].name, "Headroom Fake GPU 1");
	CHECK_STR(s[1].uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
	CHECK_EQ_DBL(s[1].power_w, 150.0);
	CHECK_EQ_INT(s[1].gpu_util_pct, 60);
	CHECK_EQ_INT(s[1].mem_util_pct, 35);
	CHECK_EQ_INT(s[1].mem_used_bytes, 2LL << 30);
	CHECK_EQ_INT(s[1].temp_c, 41);
	CHECK(s[1].wall_ns >= s[0].wall_ns && s[1].wall_ns <= after);

	/* the caller's array bounds the count */
	CHECK_EQ_INT(sample(n, s, 1), 1);
	CHECK_EQ_INT(s[0].index, 0);

	nvml_close(n);
	CHECK_EQ_INT(fake_inits(), -1); /* shut down and unloaded */
}

static void test_script(void)
{
	static struct nvml_sample s[HR_NVML_MAX_GPUS];

	fake_env("2", NULL,
	         "# comment\n"
	         "0 power 250000\n"
	         "* temp 55\n"
	         "1 util_gpu 5   # trailing comment\n"
	         "0 1 mem_clock 1000\n"
	         "400 1 mem_clock 1500\n");
	int64_t t0 = mono_ns(); /* before the fake's start */
	struct nvml *n = open_fake();
	int64_t t1 = mono_ns(); /* after it */
	if (!n)
		return;
	CHECK_EQ_INT(sample(n, s, 2), 2);
	CHECK_EQ_DBL(s[0].power_w, 250.0);
	CHECK_EQ_DBL(s[1].power_w, 150.0);
	CHECK_EQ_INT(s[0].temp_c, 55);
	CHECK_EQ_INT(s[1].temp_c, 55);
	CHECK_EQ_INT(s[0].gpu_util_pct, 50);
	CHECK_EQ_INT(s[1].gpu_util_pct, 5);
	CHECK_EQ_INT(s[1].mem_util_pct, 35);
	if ((mono_ns() - t0) < 350000000LL) /* timed line not yet due */
		CHECK_EQ_INT(s[1].mem_clock_mhz, 1000);
	CHECK_EQ_INT(s[0].mem_clock_mhz, 2619);

	/* the timed line comes due */
	sleep_ms(450 - (mono_ns() - t1) / 1000000);
	CHECK_EQ_INT(sample(n, s, 2), 2);
	CHECK_EQ_INT(s[1].mem_clock_mhz, 1500);

	/* rewriting the file changes the next sample */
	write_script("0 power 300000\n"
	             "1 util_gpu 95\n"
	             "1 util_mem 100\n"
	             "1 name Renamed GPU one \n"
	             "1 mem_used 1234567890123\n");
	CHECK_EQ_INT(sample(n, s, 2), 2);
	CHECK_EQ_DBL(s[0].power_w, 300.0);
	CHECK_EQ_INT(s[0].temp_c, 40);
	CHECK_EQ_INT(s[1].gpu_util_pct, 95);
	CHECK_EQ_INT(s[1].mem_util_pct, 100);
	CHECK_STR(s[1].name, "Renamed GPU one");
	CHECK_EQ_INT(s[1].mem_used_bytes, 1234567890123LL);
	CHECK_EQ_INT(s[1].valid, HR_NVML_ALL);
	nvml_close(n);
}

static void test_energy(void)
{
	static struct nvml_sample a[2], b[2];

	fake_env("1", NULL, "0 power 300000\n");
	struct nvml *n = open_fake();
	if (!n)
		return;
	/* dt is taken from the samples' clocks, a little apart from the fake's
	 * energy reads: 50 ms of slack for a loaded machine */
	CHECK_EQ_INT(sample(n, a, 2), 1);
	sleep_ms(300);
	CHECK_EQ_INT(sample(n, b, 2), 1);
	double dt = (double)(b[0].mono_ns - a[0].mono_ns) / 1e9;
	double de = b[0].energy_j - a[0].energy_j;
	CHECK(dt >= 0.3);
	CHECK_NEAR(de, 300.0 * dt, 300.0 * 0.05);

	/* lower power: the energy grows more slowly, never backwards */
	write_script("0 power 100000\n");
	CHECK_EQ_INT(sample(n, a, 2), 1); /* closes the 300 W period */
	CHECK(a[0].energy_j >= b[0].energy_j);
	sleep_ms(300);
	CHECK_EQ_INT(sample(n, b, 2), 1);
	dt = (double)(b[0].mono_ns - a[0].mono_ns) / 1e9;
	de = b[0].energy_j - a[0].energy_j;
	CHECK_EQ_DBL(b[0].power_w, 100.0);
	CHECK_NEAR(de, 100.0 * dt, 100.0 * 0.05);

	write_script("0 power 0\n");
	double last = b[0].energy_j;
	int monotonic = 1;
	for (int i = 0; i < 20; i++) {
		sample(n, a, 2);
		if (a[0].energy_j < last)
			monotonic = 0;
		last = a[0].energy_j;
	}
	CHECK(monotonic);
	nvml_close(n);
}

static void test_not_supported(void)
{
	static struct nvml_sample s[2];

	/* GPU 1 has no power reading nor temperature; GPU 0 no SM clock */
	fake_env("2", "power@1:3,temp@1:4", "0 sm_clock err:3\n");
	struct nvml *n = open_fake();
	if (!n)
		return;
	CHECK_EQ_INT(sample(n, s, 2), 2);
	CHECK_EQ_INT(s[1].valid, HR_NVML_ALL & ~(unsigned)(HR_NVML_POWER | HR_NVML_TEMP));
	CHECK_EQ_DBL(s[1].power_w, 0.0);
	CHECK_EQ_INT(s[1].temp_c, 0);
	CHECK_STR(s[1].error, "nvmlDeviceGetPowerUsage: Not Supported"); /* the first */
	CHECK_EQ_INT(s[1].gpu_util_pct, 60);
	CHECK(s[1].energy_j >= 1000.0);
	CHECK_EQ_INT(s[0].valid, HR_NVML_ALL & ~(unsigned)HR_NVML_SM_CLOCK);
	CHECK_STR(s[0].error, "nvmlDeviceGetClockInfo(SM): Not Supported");
	CHECK_EQ_INT(s[0].mem_clock_mhz, 2619);
	CHECK_EQ_DBL(s[0].power_w, 100.0);
	nvml_close(n);

	/* a GPU whose handle cannot be had is listed with its error only */
	fake_env("2", "handle@0:15", NULL);
	n = open_fake();
	if (!n)
		return;
	CHECK_EQ_INT(sample(n, s, 2), 2);
	CHECK_EQ_INT(s[0].index, 0);
	CHECK_EQ_INT(s[0].valid, 0);
	CHECK_STR(s[0].name, "");
	CHECK_STR(s[0].error, "nvmlDeviceGetHandleByIndex_v2: GPU is lost");
	CHECK(s[0].wall_ns > 0);
	CHECK_EQ_INT(s[1].valid, HR_NVML_ALL);
	nvml_close(n);
}

static void test_failures(void)
{
	char err[HR_ERRLEN];
	static int dummy;
	struct nvml *n = (struct nvml *)(void *)&dummy; /* nvml_open must reset it */
	static struct nvml_sample s[2];

	fake_env("1", "init:9", NULL);
	CHECK_EQ_INT(nvml_open(NULL, &n, err), -1);
	CHECK(n == NULL);
	CHECK_STR(err, "NVML not available: nvmlInit_v2: Driver Not Loaded");
	CHECK_EQ_INT(fake_inits(), -1);

	fake_env("1", "count:15", NULL);
	n = open_fake();
	if (n) {
		int count = 7;
		CHECK_EQ_INT(nvml_sample(n, s, 2, &count, err), -1);
		CHECK_EQ_INT(count, 0);
		CHECK_STR(err, "nvmlDeviceGetCount_v2: GPU is lost");
		nvml_close(n);
	}

	fake_env("0", NULL, NULL);
	n = open_fake();
	CHECK_EQ_INT(sample(n, s, 2), 0);
	int count = 7;
	CHECK_EQ_INT(nvml_sample(n, s, 0, &count, err), -1);
	CHECK_EQ_INT(count, 0);
	nvml_close(n);

	count = 7;
	CHECK_EQ_INT(nvml_sample(NULL, s, 2, &count, err), -1);
	CHECK_EQ_INT(count, 0);
	nvml_close(NULL);
}

static void test_missing_library(void)
{
	char err[HR_ERRLEN], path[300];
	struct nvml *n;

	/* an explicit path that does not exist */
	snprintf(path, sizeof(path), "%s/nowhere/libnvidia-ml.so.1", tmpdir);
	fake_env("1", NULL, NULL);
	CHECK_EQ_INT(nvml_open(path, &n, err), -1);
	CHECK(n == NULL);
	CHECK(strncmp(err, "NVML not available: ", 20) == 0);
	CHECK(strstr(err, path) != NULL);
	CHECK(strstr(err, "cannot open shared object file") != NULL);

	/* HEADROOM_NVML_LIB pointing at nothing: no NVML at all */
	setenv("HEADROOM_NVML_LIB", path, 1);
	CHECK_EQ_INT(nvml_open(NULL, &n, err), -1);
	CHECK(strstr(err, path) != NULL);
	/* the argument wins over the environment */
	CHECK_EQ_INT(nvml_open(fake_lib, &n, err), 0);
	nvml_close(n);

	/* a file that is not a shared library */
	snprintf(path, sizeof(path), "%s/garbage.so", tmpdir);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("not an ELF file\n", f);
		fclose(f);
	}
	CHECK_EQ_INT(nvml_open(path, &n, err), -1);
	CHECK(strncmp(err, "NVML not available: ", 20) == 0);
	CHECK(strstr(err, path) != NULL);
	unlink(path);

	/* a shared library that is not NVML */
	CHECK_EQ_INT(nvml_open("libc.so.6", &n, err), -1);
	CHECK_STR(err, "NVML not available: libc.so.6 has no nvmlInit_v2");

	/* the default name: on a machine without the driver, the reason the
	 * telemetry reports (with a real NVML, it opens) */
	unsetenv("HEADROOM_NVML_LIB");
	if (nvml_open(NULL, &n, err) == 0) {
		CHECK_STR(nvml_lib_path(n), "libnvidia-ml.so.1");
		nvml_close(n);
	} else {
		CHECK_STR(err, "NVML not available: libnvidia-ml.so.1: cannot open shared object "
		               "file: No such file or directory");
	}
	setenv("HEADROOM_NVML_LIB", fake_lib, 1);
}

static void test_minimal(void)
{
	char err[HR_ERRLEN] = "";
	struct nvml *n;
	static struct nvml_sample s[2];

	if (!minimal_lib)
		return;
	fake_env("1", NULL, NULL);
	if (!CHECK_EQ_INT(nvml_open(minimal_lib, &n, err), 0)) {
		printf("# %s\n", err);
		return;
	}
	CHECK_EQ_INT(sample(n, s, 2), 1);
	CHECK_EQ_INT(s[0].valid, HR_NVML_ALL & ~(unsigned)(HR_NVML_ENERGY | HR_NVML_SM_CLOCK |
	                                                   HR_NVML_MEM_CLOCK));
	CHECK_EQ_DBL(s[0].power_w, 100.0);
	CHECK_STR(s[0].error, "nvmlDeviceGetTotalEnergyConsumption: not in the NVML library");
	nvml_close(n);

	/* no nvmlErrorString: the code is reported */
	fake_env("1", "power:3", NULL);
	CHECK_EQ_INT(nvml_open(minimal_lib, &n, err), 0);
	CHECK_EQ_INT(sample(n, s, 2), 1);
	CHECK_STR(s[0].error, "nvmlDeviceGetPowerUsage: NVML error 3");
	nvml_close(n);

	fake_env("1", "init:9", NULL);
	CHECK_EQ_INT(nvml_open(minimal_lib, &n, err), -1);
	CHECK_STR(err, "NVML not available: nvmlInit_v2: NVML error 9");
}

static void test_misbehaving(void)
{
	static struct nvml_sample s[HR_NVML_MAX_GPUS];
	char text[300];

	/* strings without a terminator, longer than any buffer */
	fake_env("1", NULL, NULL);
	memcpy(text, "0 name ", 7);
	memset(text + 7, 'x', 150);
	snprintf(text + 157, sizeof(text) - 157, "\n0 uuid \xff\xfe bad utf-8\n");
	write_script(text);
	setenv("FAKE_NVML_NO_NUL", "1", 1);
	struct nvml *n = open_fake();
	if (n) {
		CHECK_EQ_INT(sample(n, s, 2), 1);
		CHECK(s[0].valid & HR_NVML_NAME);
		CHECK_EQ_INT(strlen(s[0].name), HR_NVML_NAME_LEN - 1);
		CHECK(strspn(s[0].name, "x") == HR_NVML_NAME_LEN - 1);
		CHECK(strlen(s[0].uuid) < HR_NVML_UUID_LEN);
		CHECK(strstr(s[0].uuid, "\xff") == NULL); /* made valid UTF-8 */
		nvml_close(n);
	}
	unsetenv("FAKE_NVML_NO_NUL");

	/* more GPUs than the bound */
	fake_env("100", NULL, NULL);
	n = open_fake();
	CHECK_EQ_INT(sample(n, s, HR_NVML_MAX_GPUS), HR_NVML_MAX_GPUS);
	CHECK_EQ_INT(s[HR_NVML_MAX_GPUS - 1].index, HR_NVML_MAX_GPUS - 1);
	CHECK_STR(s[HR_NVML_MAX_GPUS - 1].name, "Headroom Fake GPU 63");
	nvml_close(n);
}

static void test_two_handles(void)
{
	static struct nvml_sample s[2];

	fake_env("1", NULL, NULL);
	struct nvml *a = open_fake(), *b = open_fake();
	CHECK_EQ_INT(fake_inits(), 2);
	nvml_close(a);
	CHECK_EQ_INT(fake_inits(), 1);
	CHECK_EQ_INT(sample(b, s, 2), 1);
	CHECK_EQ_INT(s[0].valid, HR_NVML_ALL);
	nvml_close(b);
	CHECK_EQ_INT(fake_inits(), -1);
}

int main(void)
{
	const char *lib = getenv("HEADROOM_NVML_LIB");
	const char *minimal = getenv("HEADROOM_TEST_NVML_MINIMAL_LIB");
	if (!lib || !*lib) {
		tap_ok(0, "HEADROOM_NVML_LIB must name the fake NVML library (ctest sets it)");
		return tap_done();
	}
	tap_ok(minimal && *minimal,
	       "HEADROOM_TEST_NVML_MINIMAL_LIB must name the minimal fake (ctest sets it)");
	fake_lib = xstrdup(lib);
	minimal_lib = minimal && *minimal ? xstrdup(minimal) : NULL;
	if (!CHECK(mkdtemp(tmpdir) != NULL))
		return tap_done();
	snprintf(script, sizeof(script), "%s/script", tmpdir);

	test_two_gpus();
	test_script();
	test_energy();
	test_not_supported();
	test_failures();
	test_missing_library();
	test_minimal();
	test_misbehaving();
	test_two_handles();

	unlink(script);
	rmdir(tmpdir);
	free(fake_lib);
	free(minimal_lib);
	return tap_done();
}
