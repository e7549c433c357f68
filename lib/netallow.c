/* netallow.c - the operator's allow-list of targets, checked on resolved
 * addresses (netallow.h; docs/security.md, "Targets"). */
#include "netallow.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Addresses refused unless an entry inside them lists them. */
static const struct {
	int family;
	uint8_t addr[16];
	int prefix;
	const char *what;
} special[] = {
	{AF_INET, {169, 254, 169, 254}, 32, "the cloud metadata address"},
	{AF_INET, {100, 100, 100, 200}, 32, "a cloud metadata address"},
	{AF_INET6, {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128,
	 "a cloud metadata address"},
	{AF_INET, {169, 254}, 16, "link-local"},
	{AF_INET6, {0xfe, 0x80}, 10, "link-local"},
};

static bool prefix_match(const uint8_t *net, const uint8_t *addr, int bits)
{
	int whole = bits / 8, rest = bits % 8;
	if (memcmp(net, addr, (size_t)whole) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (net[whole] & mask) == (addr[whole] & mask);
}

static int parse_ports(const char *s, int *lo, int *hi, char *err, const char *entry)
{
	char *end;
	long a = strtol(s, &end, 10), b = a;
	if (end == s || !isdigit((unsigned char)*s))
		goto bad;
	if (*end == '-') {
		const char *t = end + 1;
		if (!isdigit((unsigned char)*t))
			goto bad;
		b = strtol(t, &end, 10);
	}
	if (*end || a < 1 || b > 65535 || a > b)
		goto bad;
	*lo = (int)a;
	*hi = (int)b;
	return 0;
bad:
	return errf(err, "allow-list entry '%s': the port must be N or N-M within 1..65535",
		    entry);
}

/* "ADDR" or "ADDR/LEN" of one family into e. Returns 0, 1 when it is no
 * address (a name, perhaps), -1 on a bad prefix length. */
static int parse_net(const char *s, struct netallow_entry *e, char *err, const char *entry)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (strlen(s) >= sizeof buf)
		return 1;
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	memset(e->addr, 0, sizeof e->addr);
	if (inet_pton(AF_INET, buf, e->addr) == 1) {
		e->family = AF_INET;
		e->prefix = 32;
	} else if (inet_pton(AF_INET6, buf, e->addr) == 1) {
		e->family = AF_INET6;
		e->prefix = 128;
	} else {
		return 1;
	}
	if (slash) {
		char *end;
		long n = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || n < 0 || n > e->prefix)
			return errf(err, "allow-list entry '%s': the prefix length must be 0..%d",
				    entry, e->prefix);
		e->prefix = (int)n;
	}
	/* the host bits of a network must be zero: 10.1.2.3/24 is a mistake */
	uint8_t z[16] = {0};
	memcpy(z, e->addr, 16);
	for (int bit = e->prefix; bit < 128; bit++)
		z[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
	if (memcmp(z, e->addr, 16) != 0)
		return errf(err, "allow-list entry '%s': the address has bits set beyond the "
				 "/%d prefix", entry, e->prefix);
	return 0;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253)
		return false;
	for (const char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '.' && *c != '_')
			return false;
	return true;
}

int netallow_add(struct netallow *a, const char *entry, char *err)
{
	if (a->n >= NETALLOW_MAX_ENTRIES)
		return errf(err, "at most %d allow-list entries", NETALLOW_MAX_ENTRIES);
	if (!*entry || strlen(entry) >= NETALLOW_MAX_ENTRY_LEN)
		return errf(err, "an allow-list entry is 1 to %d characters",
			    NETALLOW_MAX_ENTRY_LEN - 1);
	struct netallow_entry e = {0};
	snprintf(e.text, sizeof e.text, "%s", entry);
	char host[NETALLOW_MAX_ENTRY_LEN];
	const char *ports = NULL;
	if (entry[0] == '[') {
		const char *close = strchr(entry, ']');
		if (!close || close == entry + 1)
			return errf(err, "allow-list entry '%s': no closing ']'", entry);
		size_t n = (size_t)(close - entry - 1);
		memcpy(host, entry + 1, n);
		host[n] = '\0';
		if (close[1] == ':')
			ports = close + 2;
		else if (close[1])
			return errf(err, "allow-list entry '%s': only ':PORT' may follow ']'",
				    entry);
		int rc = parse_net(host, &e, err, entry);
		if (rc < 0)
			return -1;
		if (rc > 0 || e.family != AF_INET6)
			return errf(err, "allow-list entry '%s': not an IPv6 address in []",
				    entry);
	} else {
		strcpy(host, entry);
		char *colon = strchr(host, ':');
		if (colon && strchr(colon + 1, ':')) { /* a bare IPv6 network: no port */
			colon = NULL;
		} else if (colon) {
			*colon = '\0';
			ports = entry + (colon - host) + 1;
		}
		int rc = parse_net(host, &e, err, entry);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			if (!valid_name(host) || strchr(host, '/'))
				return errf(err, "allow-list entry '%s': not an address, network "
						 "(ADDR/LEN) or host name", entry);
			e.family = 0;
			for (size_t i = 0; host[i]; i++)
				e.name[i] = (char)tolower((unsigned char)host[i]);
		}
	}
	if (ports && parse_ports(ports, &e.port_lo, &e.port_hi, err, entry) < 0)
		return -1;
	a->e[a->n++] = e;
	return 0;
}

/* family and the address bytes of sa, IPv4-mapped IPv6 as IPv4. */
static int sa_addr(const struct sockaddr *sa, uint8_t *addr, int *port)
{
	memset(addr, 0, 16);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		memcpy(addr, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		*port = ntohs(in6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			memcpy(addr, in6->sin6_addr.s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(addr, in6->sin6_addr.s6_addr, 16);
		return AF_INET6;
	}
	return 0;
}

int netallow_add_self(struct netallow *a, const struct sockaddr *sa, int port)
{
	if (a->n_self >= NETALLOW_MAX_SELF)
		return -1;
	int ignored;
	uint8_t addr[16];
	int fam = sa_addr(sa, addr, &ignored);
	if (!fam)
		return -1;
	static const uint8_t zero[16];
	a->self[a->n_self].family = fam;
	memcpy(a->self[a->n_self].addr, addr, 16);
	a->self[a->n_self].any = memcmp(addr, zero, fam == AF_INET ? 4 : 16) == 0;
	a->self[a->n_self].port = port;
	a->n_self++;
	return 0;
}

static bool port_ok(const struct netallow_entry *e, int port)
{
	return e->port_lo == 0 || (port >= e->port_lo && port <= e->port_hi);
}

static bool net_ok(const struct netallow_entry *e, int fam, const uint8_t *addr, int port)
{
	return e->family == fam && prefix_match(e->addr, addr, e->prefix) && port_ok(e, port);
}

bool netallow_check(const struct netallow *a, const struct sockaddr *sa, const char *host,
		    char *why, size_t why_len)
{
	uint8_t addr[16];
	int port = 0;
	int fam = sa_addr(sa, addr, &port);
	char txt[INET6_ADDRSTRLEN];
	if (!fam) {
		snprintf(why, why_len, "address family %d is not allowed", (int)sa->sa_family);
		return false;
	}
	inet_ntop(fam, addr, txt, sizeof txt);
	char at[INET6_ADDRSTRLEN + 10];
	snprintf(at, sizeof at, fam == AF_INET6 ? "[%s]:%d" : "%s:%d", txt, port);

	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
		if (special[i].family != fam || !prefix_match(special[i].addr, addr, special[i].prefix))
			continue;
		for (int k = 0; k < a->n; k++)
			if (a->e[k].family == fam && a->e[k].prefix >= special[i].prefix &&
			    net_ok(&a->e[k], fam, addr, port))
				goto special_ok;
		snprintf(why, why_len, "%s is %s (refused unless --allow-target lists it)", at,
			 special[i].what);
		return false;
	}
special_ok:
	for (int s = 0; s < a->n_self; s++) {
		if (a->self[s].port != port || a->self[s].family != fam ||
		    (!a->self[s].any && memcmp(a->self[s].addr, addr, 16) != 0))
			continue;
		int full = fam == AF_INET ? 32 : 128;
		for (int k = 0; k < a->n; k++)
			if (a->e[k].prefix == full && a->e[k].port_lo != 0 &&
			    net_ok(&a->e[k], fam, addr, port))
				return true;
		snprintf(why, why_len, "%s is the daemon's own API address", at);
		return false;
	}
	if (a->n == 0) {
		if (!a->closed)
			return true;
		snprintf(why, why_len, "%s: no target is allowed (give --allow-target)", at);
		return false;
	}
	for (int k = 0; k < a->n; k++) {
		const struct netallow_entry *e = &a->e[k];
		if (e->family == 0) {
			if (host && strcasecmp(host, e->name) == 0 && port_ok(e, port))
				return true;
		} else if (net_ok(e, fam, addr, port)) {
			return true;
		}
	}
	if (host && *host && strcmp(host, txt) != 0)
		snprintf(why, why_len, "%s (%s) is not in the allow-list", at, host);
	else
		snprintf(why, why_len, "%s is not in the allow-list", at);
	return false;
}

int netallow_check_url(const struct netallow *a, const char *url, char *why, size_t why_len)
{
	int port;
	const char *p;
	if (strncasecmp(url, "http://", 7) == 0) {
		port = 80;
		p = url + 7;
	} else if (strncasecmp(url, "https://", 8) == 0) {
		port = 443;
		p = url + 8;
	} else {
		return -1;
	}
	size_t auth_len = strcspn(p, "/?#");
	const char *at = memchr(p, '@', auth_len);
	while (at) { /* the host follows the last '@' of the authority */
		auth_len -= (size_t)(at + 1 - p);
		p = at + 1;
		at = memchr(p, '@', auth_len);
	}
	char host[INET6_ADDRSTRLEN + 1];
	const char *rest;
	if (*p == '[') {
		const char *close = memchr(p, ']', auth_len);
		if (!close || (size_t)(close - p - 1) >= sizeof host)
			return -1;
		memcpy(host, p + 1, (size_t)(close - p - 1));
		host[close - p - 1] = '\0';
		rest = close + 1;
	} else {
		size_t n = strcspn(p, ":/?#");
		if (n > auth_len)
			n = auth_len;
		if (n >= sizeof host)
			return -1;
		memcpy(host, p, n);
		host[n] = '\0';
		rest = p + n;
	}
	if (*rest == ':' && isdigit((unsigned char)rest[1])) {
		char *end;
		long n = strtol(rest + 1, &end, 10);
		if (n < 1 || n > 65535)
			return -1;
		port = (int)n;
	}
	struct sockaddr_in6 s6 = {0};
	struct sockaddr_in s4 = {0};
	const struct sockaddr *sa;
	if (inet_pton(AF_INET, host, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		s4.sin_port = htons((uint16_t)port);
		sa = (const struct sockaddr *)&s4;
	} else if (inet_pton(AF_INET6, host, &s6.sin6_addr) == 1) {
		s6.sin6_family = AF_INET6;
		s6.sin6_port = htons((uint16_t)port);
		sa = (const struct sockaddr *)&s6;
	} else {
		return -1;
	}
	return netallow_check(a, sa, host, why, why_len) ? 1 : 0;
}
