/* disk.c - free space on the data directory and the store's health (disk.h). */
#include "disk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "hrlimits.h"
#include "util.h"

static const char *dir = ".";
static long long floor_mb = HR_MIN_FREE_MB_DEFAULT;
static atomic_int reserve_held;

static void reserve_path(char *buf, size_t n)
{
	snprintf(buf, n, "%s/headroom.reserve", dir);
}

int disk_reserve_make(char *err)
{
	char path[4200];
	reserve_path(path, sizeof path);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errf(err, "cannot create %s: %s", path, strerror(errno));
	/* allocated, not sparse: the space is really held */
	int rc = posix_fallocate(fd, 0, (off_t)HR_STORE_RESERVE_MB << 20);
	close(fd);
	if (rc != 0) {
		unlink(path);
		atomic_store(&reserve_held, 0);
		return errf(err, "cannot reserve %d MiB for the store in %s: %s",
			    HR_STORE_RESERVE_MB, dir, strerror(rc));
	}
	atomic_store(&reserve_held, 1);
	return 0;
}

int disk_reserve_release(void)
{
	char path[4200];
	reserve_path(path, sizeof path);
	int was = atomic_exchange(&reserve_held, 0);
	unlink(path);
	return was;
}

void disk_configure(const char *data_dir, long long min_free_mb)
{
	dir = data_dir;
	floor_mb = min_free_mb;
}

long long disk_free_mb(char *err)
{
	struct statvfs v;
	if (statvfs(dir, &v) < 0)
		return errf(err, "statvfs %s: %s", dir, strerror(errno));
	return (long long)((unsigned long long)v.f_bavail * v.f_frsize / (1024 * 1024));
}

int disk_check_floor(char *why)
{
	char err[HR_ERRLEN];
	long long mb = disk_free_mb(err);
	if (mb < 0 || mb >= floor_mb)
		return 0;
	return errf(why, "%lld MiB free on %s, below the floor of %lld MiB (--min-free-mb)", mb,
		    dir, floor_mb);
}

json_t *disk_store_health(struct store *s)
{
	char err[HR_ERRLEN], msg[160];
	long long fails = 0;
	int commit_failed = store_commit_status(s, &fails, msg, sizeof msg);
	long long mb = disk_free_mb(err);
	int low = mb >= 0 && mb < floor_mb;
	int held = atomic_load(&reserve_held);
	if (!commit_failed && !low && held)
		return NULL;
	char reason[400];
	if (commit_failed)
		snprintf(reason, sizeof reason, "the store's last commit failed: %s", msg);
	else if (low)
		snprintf(reason, sizeof reason,
			 "%lld MiB free on the data directory, below the floor of %lld MiB", mb,
			 floor_mb);
	else
		snprintf(reason, sizeof reason,
			 "the store's %d MiB reserve is used up (the disk was full; %lld MiB free)",
			 HR_STORE_RESERVE_MB, mb);
	return json_pack("{s:s, s:I, s:I, s:b, s:I, s:b}", "reason", reason, "free_mb",
			 (json_int_t)mb, "min_free_mb", (json_int_t)floor_mb, "last_commit_failed",
			 commit_failed, "commit_failures", (json_int_t)fails, "reserve_held", held);
}
