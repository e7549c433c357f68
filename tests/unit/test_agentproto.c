/* test_agentproto.c - the daemon <-> agent link's small parsers
 * (lib/agentproto.c) and the CURVE key files (lib/curvekey.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentproto.h"
#include "curvekey.h"
#include "hrlimits.h"
#include "tap.h"
#include "util.h"

static int chan(const char *s, int64_t *run, int *idx)
{
	return agentproto_chan(s, strlen(s), run, idx);
}

static void test_chan(void)
{
	int64_t run = 0;
	int idx = -1;
	CHECK_EQ_INT(chan("12:3", &run, &idx), 0);
	CHECK_EQ_INT(run, 12);
	CHECK_EQ_INT(idx, 3);
	CHECK_EQ_INT(chan("1:255", &run, &idx), 0);
	CHECK_EQ_INT(idx, 255);
	/* hostile: every one refused */
	static const char *const bad[] = {
	    "",      ":",     "1:",   ":1",      "0:1",
	    "1:256", "1:-1",  "-1:1", "1:1:1",   "a:1",
	    "1:1a",  " 1:1",  "1: 1", "1:00001", "99999999999999999999:1",
	    "1;1",   "1:9999"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int rc = chan(bad[i], &run, &idx);
		tap_ok(rc == -1, "'%s' refused", bad[i]);
	}
	/* not NUL-terminated: only the length given is read */
	char buf[8] = {'4', ':', '2', '7', '7', '7', '7', '7'};
	CHECK_EQ_INT(agentproto_chan(buf, 3, &run, &idx), 0);
	CHECK_EQ_INT(idx, 2);
	CHECK_EQ_INT(agentproto_chan(buf, 0, &run, &idx), -1);
}

static void test_names(void)
{
	CHECK(agentproto_name_ok("load-1.example_a", AGENT_NAME_MAX));
	CHECK(!agentproto_name_ok("", AGENT_NAME_MAX));
	CHECK(!agentproto_name_ok("a b", AGENT_NAME_MAX));
	CHECK(!agentproto_name_ok("a/b", AGENT_NAME_MAX));
	CHECK(!agentproto_name_ok("a\nb", AGENT_NAME_MAX));
	CHECK(!agentproto_name_ok("\xc3\xa9t\xc3\xa9", AGENT_NAME_MAX));
	char longname[AGENT_NAME_MAX + 2];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	CHECK(!agentproto_name_ok(longname, AGENT_NAME_MAX));
	longname[AGENT_NAME_MAX] = 0;
	CHECK(agentproto_name_ok(longname, AGENT_NAME_MAX));
}

static void test_keys(void)
{
	char dir[] = "/tmp/hr-test-curvekey-XXXXXX";
	if (!mkdtemp(dir)) {
		tap_ok(0, "mkdtemp");
		return;
	}
	char prefix[64], path[80], err[HR_ERRLEN], pub[CURVEKEY_Z85], sec[CURVEKEY_Z85];
	char pub2[CURVEKEY_Z85], derived[CURVEKEY_Z85];
	snprintf(prefix, sizeof prefix, "%s/k", dir);
	CHECK_EQ_INT(curvekey_generate(prefix, pub, err), 0);
	snprintf(path, sizeof path, "%s.key", prefix);
	struct stat st;
	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_INT(st.st_mode & 0777, 0600);
	CHECK_EQ_INT(curvekey_read(path, sec, err), 0);
	snprintf(path, sizeof path, "%s.pub", prefix);
	CHECK_EQ_INT(curvekey_read(path, pub2, err), 0);
	CHECK_STR(pub, pub2);
	CHECK_EQ_INT(curvekey_public(sec, derived), 0);
	CHECK_STR(derived, pub);
	CHECK(curvekey_valid(pub));
	/* never replaced */
	CHECK_EQ_INT(curvekey_generate(prefix, NULL, err), -1);
	/* hostile files refused */
	static const char *const bad[] = {
	    "", "short\n", "not z85 at all, forty characters long!!\n", "\n", "two\nlines\n"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		FILE *f = fopen(path, "w");
		fputs(bad[i], f);
		fclose(f);
		tap_ok(curvekey_read(path, pub2, err) == -1, "bad key file %zu refused", i);
	}
	FILE *f = fopen(path, "w");
	fprintf(f, "%s\n%s\n", pub, pub);
	fclose(f);
	CHECK_EQ_INT(curvekey_read(path, pub2, err), -1);
	f = fopen(path, "w");
	fprintf(f, "%s\r\n", pub);
	fclose(f);
	CHECK_EQ_INT(curvekey_read(path, pub2, err), 0);
	CHECK_EQ_INT(curvekey_read("/nonexistent/k.key", pub2, err), -1);
	unlink(path);
	snprintf(path, sizeof path, "%s.key", prefix);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_chan();
	test_names();
	test_keys();
	return tap_done();
}
