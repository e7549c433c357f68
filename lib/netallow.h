/* netallow.h - the operator's allow-list of targets (docs/security.md,
 * "Targets"): which resolved addresses and ports a worker or the telemetry
 * scraper may connect to.
 *
 * An entry is a network (`10.1.2.0/24`, `127.0.0.2`, `[::1]`, `fd00::/8`)
 * or a host name (`gpu-node-1`), each with an optional port or port range
 * (`:8000`, `:8000-8100`; an IPv6 address with a port is bracketed:
 * `[::1]:8000`). The check is made on the address a connection is about to
 * be made to, after name resolution, so a name that resolves somewhere
 * unexpected (DNS rebinding, a hosts entry) does not get past it; a name
 * entry matches the host name the URL gave, whatever it resolves to.
 *
 * Always refused unless an entry lists them explicitly (an entry whose
 * network lies inside theirs, so `0.0.0.0/0` does not count): link-local
 * addresses (169.254.0.0/16, fe80::/10), which hold the cloud metadata
 * service, and the metadata addresses 169.254.169.254, fd00:ec2::254 and
 * 100.100.100.200; and the daemon's own listening address(es) and port
 * (netallow_add_self), unless an entry names that single address with a
 * port range holding the port. An IPv4-mapped IPv6 address is checked as
 * the IPv4 address it carries.
 *
 * With no entries ("open"), every other address is allowed; with entries,
 * only what they list. A list that is "closed" with no entries (a daemon
 * listening beyond loopback without --allow-target) refuses everything.
 *
 * Pure: parsing and comparing only, no resolution and no sockets.
 */
#ifndef HR_NETALLOW_H
#define HR_NETALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NETALLOW_MAX_ENTRIES 64
#define NETALLOW_MAX_SELF 8
#define NETALLOW_MAX_ENTRY_LEN 300

struct netallow_entry {
	int family;       /* AF_INET, AF_INET6, or 0 for a host name */
	uint8_t addr[16]; /* the network (v4 in the first 4 bytes) */
	int prefix;       /* bits */
	char name[256];   /* family 0: the host name, lower case */
	int port_lo, port_hi; /* 1..65535; 0, 0: any port */
	char text[NETALLOW_MAX_ENTRY_LEN]; /* as given */
};

struct netallow {
	int n;
	struct netallow_entry e[NETALLOW_MAX_ENTRIES];
	bool closed; /* no entries means nothing allowed (rather than everything) */
	int n_self;
	struct {
		int family;
		uint8_t addr[16];
		bool any; /* a wildcard listen address: every address at this port */
		int port;
	} self[NETALLOW_MAX_SELF];
};

/* Adds one entry (the syntax above). Returns 0, or -1 with a message in err
 * (HR_ERRLEN). */
int netallow_add(struct netallow *a, const char *entry, char *err);
/* The daemon's own listening address (port in network order inside sa is
 * ignored: port is given). A wildcard address (0.0.0.0, ::) refuses every
 * address at that port. Returns 0, or -1 when the table is full. */
int netallow_add_self(struct netallow *a, const struct sockaddr *sa, int port);
/* May a connection be made to sa (AF_INET or AF_INET6, with its port), for
 * a URL whose host was `host` (may be NULL)? Returns true, or false with
 * the reason in why (why_len bytes), e.g. "169.254.169.254:80 is
 * link-local". */
bool netallow_check(const struct netallow *a, const struct sockaddr *sa, const char *host,
		    char *why, size_t why_len);
/* Checks a URL's host when it is a literal address (and its port, default
 * by scheme) without resolving anything: returns 1 allowed, 0 refused (why
 * filled), -1 when the host is a name (decided only at connect time). */
int netallow_check_url(const struct netallow *a, const char *url, char *why, size_t why_len);

#endif
