/* test_netallow.c - unit tests of lib/netallow.c: entry syntax (v4/v6
 * networks, ports and ranges, names), the check on addresses (listed or
 * not; link-local and metadata refused unless listed; the daemon's own
 * address; IPv4-mapped IPv6), and the literal-address URL check. Addresses
 * are only parsed and compared: nothing here connects anywhere. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "netallow.h"
#include "tap.h"
#include "util.h"

/* "ADDR PORT" (ADDR v4 or v6) into a sockaddr. */
static const struct sockaddr *sa_of(const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else {
		CHECK(inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	return (const struct sockaddr *)ss;
}

static void test_syntax(void)
{
	static const struct {
		const char *entry;
		int ok;
	} cases[] = {
		{"127.0.0.0/8", 1},       {"127.0.0.2", 1},         {"10.1.2.0/24:8000-8100", 1},
		{"gpu-node-1:8000", 1},   {"[::1]", 1},             {"[::1]:8000", 1},
		{"fd00::/8", 1},          {"[fd00::/8]:443", 1},    {"0.0.0.0/0", 1},
		{"localhost", 1},         {"", 0},                  {"10.1.2.3/24", 0},
		{"10.0.0.0/33", 0},       {"10.0.0.0/", 0},         {"host:0", 0},
		{"host:65536", 0},        {"host:9-8", 0},          {"host:x", 0},
		{"host:80-", 0},          {"[::1", 0},              {"[10.0.0.1]", 0},
		{"[::1]x", 0},            {"bad name", 0},          {"a/b", 0},
		{"fe80::/129", 0},        {"host:-80", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct netallow a = {0};
		char err[HR_ERRLEN] = "";
		int rc = netallow_add(&a, cases[i].entry, err);
		tap_ok((rc == 0) == cases[i].ok, "entry '%s' %s (%s)", cases[i].entry,
		       cases[i].ok ? "accepted" : "refused", err);
		if (!cases[i].ok)
			CHECK(strstr(err, cases[i].entry) != NULL || strstr(err, "1 to"));
	}
}

struct check_case {
	const char *addr;
	int port;
	const char *host;
	int allowed;
	const char *why; /* a part of the reason, when refused */
};

static void run_cases(const char *title, struct netallow *a, const struct check_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		char why[200] = "";
		bool ok = netallow_check(a, sa_of(c[i].addr, c[i].port, &ss), c[i].host, why,
					 sizeof why);
		tap_ok(ok == !!c[i].allowed, "%s: %s port %d host %s -> %s (%s)", title, c[i].addr,
		       c[i].port, c[i].host ? c[i].host : "-", c[i].allowed ? "allowed" : "refused",
		       why);
		if (!c[i].allowed && c[i].why)
			tap_ok(strstr(why, c[i].why) != NULL, "reason '%s' has '%s'", why, c[i].why);
	}
}

static void test_open(void)
{
	/* no entries: everything but link-local, metadata and the daemon */
	struct netallow a = {0};
	struct sockaddr_storage ss;
	CHECK_EQ_INT(netallow_add_self(&a, sa_of("127.0.0.1", 0, &ss), 8080), 0);
	static const struct check_case c[] = {
		{"127.0.0.1", 9000, NULL, 1, NULL},
		{"10.0.0.5", 80, NULL, 1, NULL},
		{"192.168.1.1", 443, NULL, 1, NULL},
		{"::1", 80, NULL, 1, NULL},
		{"127.0.0.1", 8080, "localhost", 0, "daemon's own"},
		{"127.0.0.2", 8080, NULL, 1, NULL},
		{"::ffff:127.0.0.1", 8080, NULL, 0, "daemon's own"},
		{"169.254.169.254", 80, NULL, 0, "metadata"},
		{"::ffff:169.254.169.254", 80, NULL, 0, "metadata"},
		{"100.100.100.200", 80, NULL, 0, "metadata"},
		{"fd00:ec2::254", 80, NULL, 0, "metadata"},
		{"169.254.1.1", 80, NULL, 0, "link-local"},
		{"fe80::1", 80, NULL, 0, "link-local"},
		{"febf::1", 80, NULL, 0, "link-local"},
		{"fec0::1", 80, NULL, 1, NULL},
	};
	run_cases("open", &a, c, sizeof c / sizeof c[0]);
}

static void test_list(void)
{
	struct netallow a = {0};
	char err[HR_ERRLEN];
	struct sockaddr_storage ss;
	const char *entries[] = {"127.0.0.2", "10.1.2.0/24:8000-8100", "gpu-node-1:8000",
				 "[::1]:9000", "fd00::/8", "0.0.0.0/0:7777"};
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
		CHECK_EQ_INT(netallow_add(&a, entries[i], err), 0);
	CHECK_EQ_INT(netallow_add_self(&a, sa_of("0.0.0.0", 0, &ss), 8080), 0);
	static const struct check_case c[] = {
		{"127.0.0.2", 80, NULL, 1, NULL},
		{"127.0.0.2", 65535, NULL, 1, NULL},
		{"127.0.0.3", 80, NULL, 0, "not in the allow-list"},
		{"127.0.0.1", 80, "localhost", 0, "(localhost) is not in the allow-list"},
		{"10.1.2.7", 8000, NULL, 1, NULL},
		{"10.1.2.255", 8100, NULL, 1, NULL},
		{"10.1.2.7", 7999, NULL, 0, NULL},
		{"10.1.2.7", 8101, NULL, 0, NULL},
		{"10.1.3.7", 8000, NULL, 0, NULL},
		{"192.168.0.9", 8000, "gpu-node-1", 1, NULL},
		{"192.168.0.9", 8000, "GPU-Node-1", 1, NULL},
		{"192.168.0.9", 8001, "gpu-node-1", 0, NULL},
		{"192.168.0.9", 8000, "gpu-node-2", 0, NULL},
		{"::1", 9000, NULL, 1, NULL},
		{"::1", 9001, NULL, 0, NULL},
		{"fd12::3", 1, NULL, 1, NULL},
		{"fe80::1", 1, NULL, 0, NULL},
		/* 0.0.0.0/0 does not list the special addresses */
		{"8.8.8.8", 7777, NULL, 1, NULL},
		{"169.254.169.254", 7777, NULL, 0, "metadata"},
		{"169.254.3.3", 7777, NULL, 0, "link-local"},
		/* nor does a name entry: the name resolving there is refused */
		{"169.254.169.254", 8000, "gpu-node-1", 0, "metadata"},
		/* a wildcard listen: the daemon's port on any address */
		{"127.0.0.2", 8080, NULL, 0, "daemon's own"},
		{"10.1.2.7", 8080, NULL, 0, "daemon's own"},
	};
	run_cases("list", &a, c, sizeof c / sizeof c[0]);
}

static void test_explicit(void)
{
	/* special addresses and the daemon's own, each listed on purpose */
	struct netallow a = {0};
	char err[HR_ERRLEN];
	struct sockaddr_storage ss;
	CHECK_EQ_INT(netallow_add(&a, "169.254.169.254", err), 0);
	CHECK_EQ_INT(netallow_add(&a, "fe80::/10", err), 0);
	CHECK_EQ_INT(netallow_add(&a, "127.0.0.1:8080", err), 0);
	CHECK_EQ_INT(netallow_add(&a, "127.0.0.0/8", err), 0);
	CHECK_EQ_INT(netallow_add_self(&a, sa_of("127.0.0.1", 0, &ss), 8080), 0);
	CHECK_EQ_INT(netallow_add_self(&a, sa_of("::1", 0, &ss), 8080), 0);
	static const struct check_case c[] = {
		{"169.254.169.254", 80, NULL, 1, NULL},
		{"169.254.169.253", 80, NULL, 0, "link-local"},
		{"fe80::1", 80, NULL, 1, NULL},
		{"127.0.0.1", 8080, NULL, 1, NULL},
		{"::1", 8080, NULL, 0, "daemon's own"},
		{"127.0.0.9", 8080, NULL, 1, NULL},
	};
	run_cases("explicit", &a, c, sizeof c / sizeof c[0]);
}

static void test_closed(void)
{
	struct netallow a = {.closed = true};
	static const struct check_case c[] = {
		{"127.0.0.1", 80, NULL, 0, "no target is allowed"},
		{"10.0.0.1", 80, NULL, 0, "no target is allowed"},
	};
	run_cases("closed", &a, c, sizeof c / sizeof c[0]);
}

static void test_url(void)
{
	struct netallow a = {0};
	char err[HR_ERRLEN], why[200];
	CHECK_EQ_INT(netallow_add(&a, "127.0.0.2:8000", err), 0);
	static const struct {
		const char *url;
		int rc;
	} c[] = {
		{"http://127.0.0.2:8000/v1", 1},
		{"http://127.0.0.2/v1", 0}, /* port 80 */
		{"https://127.0.0.2:8000", 1},
		{"http://127.0.0.3:8000/", 0},
		{"http://user:pw@127.0.0.3:8000/", 0},
		{"http://127.0.0.2:8000@127.0.0.3:8000/", 0},
		{"http://[::1]:8000/", 0},
		{"http://[::ffff:127.0.0.2]:8000/", 1},
		{"http://169.254.169.254/latest/meta-data", 0},
		{"http://example.test:8000/", -1},
		{"http://localhost:8000/", -1},
		{"ftp://127.0.0.2/", -1},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		int rc = netallow_check_url(&a, c[i].url, why, sizeof why);
		tap_ok(rc == c[i].rc, "url %s -> %d (got %d)", c[i].url, c[i].rc, rc);
	}
}

int main(void)
{
	test_syntax();
	test_open();
	test_list();
	test_explicit();
	test_closed();
	test_url();
	return tap_done();
}
