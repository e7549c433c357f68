/* util.c - allocation wrappers, clocks, error formatting, number output. */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Noreturn void xalloc_die(void)
{
	fputs("headroom: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		xalloc_die();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		xalloc_die();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		xalloc_die();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		xalloc_die();
	char *p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t ns_of_s(double s)
{
	double ns = s * 1e9;
	if (!(ns > -(double)HR_FAR_NS)) /* (NaN too) */
		return isnan(ns) ? 0 : -HR_FAR_NS;
	if (!(ns < (double)HR_FAR_NS))
		return HR_FAR_NS;
	return (int64_t)llround(ns);
}

int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t process_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int errf(char *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, HR_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";

/* Exactly 8 digits of v < 10^8, leading zeros included. */
static void put_8(char *p, uint32_t v)
{
	uint32_t a = v / 10000, b = v % 10000;
	memcpy(p, digit_pairs + a / 100 * 2, 2);
	memcpy(p + 2, digit_pairs + a % 100 * 2, 2);
	memcpy(p + 4, digit_pairs + b / 100 * 2, 2);
	memcpy(p + 6, digit_pairs + b % 100 * 2, 2);
}

/* v < 10^8 without leading zeros. */
static int put_small(char *p, uint32_t v)
{
	int n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5
		: v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
	char *q = p + n;
	while (v >= 100) {
		q -= 2;
		memcpy(q, digit_pairs + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(q - 2, digit_pairs + v * 2, 2);
	else
		q[-1] = (char)('0' + v);
	return n;
}

/* Writes v in decimal at p (no terminator); returns the number of digits. */
static int put_u64(char *p, uint64_t v)
{
	if (v < 100000000)
		return put_small(p, (uint32_t)v);
	if (v < 10000000000000000ULL) {
		int n = put_small(p, (uint32_t)(v / 100000000));
		put_8(p + n, (uint32_t)(v % 100000000));
		return n + 8;
	}
	uint64_t lo = v % 10000000000000000ULL;
	int n = put_small(p, (uint32_t)(v / 10000000000000000ULL));
	put_8(p + n, (uint32_t)(lo / 100000000));
	put_8(p + n + 8, (uint32_t)(lo % 100000000));
	return n + 16;
}

int fmt_i64(char *buf, long long v)
{
	int neg = v < 0;
	if (neg)
		*buf = '-';
	/* negation through unsigned arithmetic: defined for LLONG_MIN too */
	uint64_t u = neg ? 0 - (uint64_t)v : (uint64_t)v;
	int n = neg + put_u64(buf + neg, u);
	buf[n] = '\0';
	return n;
}

/* Writes the decimal d * 10^(x - (nd - 1)), d having exactly nd digits,
 * as printf's %.{prec}g does (trailing zeros dropped). At most 24 bytes
 * and the terminator; composed in a scratch buffer with copies of fixed
 * sizes, then copied whole (buf holds 32 bytes). */
static int put_g(char *buf, int neg, uint64_t d, int x, int prec)
{
	char dig[40], o[64] = {0};
	memset(dig, '0', sizeof dig);
	int nd = put_u64(dig, d); /* then zeros: the digits of d * 10^k */
	while (nd > 1 && dig[nd - 1] == '0')
		nd--;
	char *p = o;
	if (neg)
		*p++ = '-';
	if (x < -4 || x >= prec) {
		*p++ = dig[0];
		if (nd > 1) {
			*p++ = '.';
			memcpy(p, dig + 1, 16);
			p += nd - 1;
		}
		*p++ = 'e';
		*p++ = x < 0 ? '-' : '+';
		int ax = x < 0 ? -x : x;
		if (ax >= 100)
			*p++ = (char)('0' + ax / 100);
		*p++ = (char)('0' + ax / 10 % 10);
		*p++ = (char)('0' + ax % 10);
	} else if (x >= 0) {
		int ni = x + 1; /* digits before the point, zeros included */
		memcpy(p, dig, 20);
		p += ni;
		if (nd > ni) {
			*p++ = '.';
			memcpy(p, dig + ni, 20);
			p += nd - ni;
		}
	} else {
		memcpy(p, "0.0000", 6);
		p += 2 + (-x - 1);
		memcpy(p, dig, 20);
		p += nd;
	}
	*p = '\0';
	memcpy(buf, o, 25);
	return (int)(p - o);
}

#ifdef __SIZEOF_INT128__
/* Exact decimal rounding with 128-bit integers: the value m * 2^e is
 * scaled by 10^k so that its integer part has prec digits, rounded half
 * to even as glibc's printf does, and checked against the interval of
 * decimals that read back (correctly rounded, as strtod does) as the
 * same double. Covers about 1e-6 <= |v| < 1.7e38; fmt_double falls back
 * to printf outside that range. */
__extension__ typedef unsigned __int128 u128;

static const uint64_t pow10_u64[20] = {1ULL,
				       10ULL,
				       100ULL,
				       1000ULL,
				       10000ULL,
				       100000ULL,
				       1000000ULL,
				       10000000ULL,
				       100000000ULL,
				       1000000000ULL,
				       10000000000ULL,
				       100000000000ULL,
				       1000000000000ULL,
				       10000000000000ULL,
				       100000000000000ULL,
				       1000000000000000ULL,
				       10000000000000000ULL,
				       100000000000000000ULL,
				       1000000000000000000ULL,
				       10000000000000000000ULL};

/* bit length of 10^k, k = 0..38 */
static const unsigned char pow10_bits[39] = {1,  4,  7,  10, 14, 17, 20,  24,  27,  30,
					     34, 37, 40, 44, 47, 50, 54,  57,  60,  64,
					     67, 70, 74, 77, 80, 84, 87,  90,  94,  97,
					     100, 103, 107, 110, 113, 117, 120, 123, 127};

static u128 pow10_u128(int k)
{
	return k < 20 ? pow10_u64[k] : (u128)pow10_u64[19] * pow10_u64[k - 19];
}

/* 1e-9 .. 1e38 */
static const double pow10_dbl[48] = {
	1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0,  1e1,  1e2,
	1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26,
	1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38};

/* v = m * 2^e scaled by 10^k = 16 - x so that it has 17 integer digits:
 * v * 10^k = q + r / b exactly (0 <= r < b); g / b is the gap from v to
 * the next double up on the same scale. */
struct dec_base {
	uint64_t q; /* 10^16 <= q < 10^17 */
	u128 r, b, g;
	int x;       /* floor(log10(v)) */
	int even;    /* the mantissa is even: ties read back as v */
	int halved;  /* the gap below v is half the gap above (v a power of two) */
};

/* x: a guess of floor(log10(v)), right or off by one. Returns 0, or -1
 * when the numbers do not fit in 128 bits (with room for 100 * b). */
static int dec_scale(uint64_t m, int e, int x, struct dec_base *d)
{
	for (int tries = 0; tries < 3; tries++) {
		int k = 16 - x;
		int ep = e > 0 ? e : 0, en = e < 0 ? -e : 0;
		int kp = k > 0 ? k : 0, kn = k < 0 ? -k : 0;
		if (kp > 38 || kn > 38 || 53 + ep + pow10_bits[kp] > 128 || en + pow10_bits[kn] > 116)
			return -1;
		u128 a = (u128)m << ep;
		if (kp)
			a *= pow10_u128(kp);
		u128 q;
		if (kn) {
			d->b = pow10_u128(kn) << en;
			q = a / d->b;
			d->r = a % d->b;
		} else {
			d->b = (u128)1 << en;
			q = a >> en;
			d->r = a & (d->b - 1);
		}
		if (q >= pow10_u64[17]) {
			x++;
			continue;
		}
		if (q < pow10_u64[16]) {
			x--;
			continue;
		}
		d->q = (uint64_t)q;
		d->x = x;
		d->g = ((u128)1 << ep) * pow10_u128(kp);
		return 0;
	}
	return -1; /* not reached: the guess is off by one at most */
}

/* The decimal of prec (15..17) significant digits nearest to v, rounded
 * half to even as printf does: its digits (*n), exponent (*x), and
 * whether it reads back as v. */
static int dec_round(const struct dec_base *d, int prec, uint64_t *n, int *x)
{
	uint64_t div = pow10_u64[17 - prec];
	uint64_t q = d->q / div;
	u128 b = d->b * div, r = (u128)(d->q % div) * d->b + d->r;
	int up = (r << 1) > b || ((r << 1) == b && (q & 1));
	u128 dr = up ? b - r : r; /* |decimal - v| on the scale of g */
	int exact;
	if (dr == 0)
		exact = 1;
	else if (!up && d->halved)
		exact = (dr << 2) < d->g || ((dr << 2) == d->g && d->even);
	else
		exact = (dr << 1) < d->g || ((dr << 1) == d->g && d->even);
	q += up;
	*x = d->x;
	if (q == pow10_u64[prec]) {
		q = pow10_u64[prec - 1];
		++*x;
	}
	*n = q;
	return exact;
}

static int fmt_double_exact(char *buf, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	int neg = (int)(bits >> 63);
	int bexp = (int)(bits >> 52 & 0x7ff);
	uint64_t frac = bits & ((1ULL << 52) - 1);
	if (bexp == 0) {
		if (frac)
			return -1; /* subnormal */
		return put_g(buf, neg, 0, 0, 15);
	}
	uint64_t m = frac | 1ULL << 52;
	int e = bexp - 1075;
	/* floor(log10(2^(e + 52))): x or x - 1 */
	int x = (e + 52) >= 0 ? (e + 52) * 78913 / 262144 : -((-(e + 52) * 78913 + 262143) / 262144);
	if (x >= -9 && x < 38 && fabs(v) >= pow10_dbl[x + 10])
		x++; /* exact below 1e23; dec_scale corrects a wrong guess */
	struct dec_base d;
	if (dec_scale(m, e, x, &d) < 0)
		return -1;
	d.even = !(m & 1);
	d.halved = frac == 0 && bexp > 1;
	uint64_t n;
	for (int prec = 15; prec < 17; prec++)
		if (dec_round(&d, prec, &n, &x))
			return put_g(buf, neg, n, x, prec);
	dec_round(&d, 17, &n, &x);
	return put_g(buf, neg, n, x, 17);
}
#endif

/* The common case, nanoseconds in milliseconds (ns / 1e6): when v reads
 * back from the decimal n / 10^6 (|n| < 10^15, so at most 15 significant
 * digits), that decimal is what %.15g prints, since no other decimal of
 * 15 digits lies within half a unit in the last place of v. Returns 0
 * when v is not of that form. */
static int fmt_micro(char *buf, double v)
{
	if (!(fabs(v) < 1e9))
		return 0;
	double sc = v * 1e6;
	long long n = (long long)(sc < 0 ? sc - 0.5 : sc + 0.5);
	if ((double)n / 1e6 != v)
		return 0;
	uint64_t u = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
	if (u != 0 && u < 100)
		return 0; /* below 1e-4: %g switches to the exponent form */
	char *p = buf;
	if (signbit(v))
		*p++ = '-';
	p += put_u64(p, u / 1000000);
	uint32_t f = (uint32_t)(u % 1000000);
	if (f) {
		char d[8];
		put_8(d, f); /* "00" + six digits */
		int nd = 8;
		while (d[nd - 1] == '0')
			nd--;
		*p++ = '.';
		memcpy(p, d + 2, 6); /* p is 11 bytes in at most */
		p += nd - 2;
	}
	*p = '\0';
	return (int)(p - buf);
}

int fmt_double(char *buf, double v)
{
	if (!isfinite(v))
		return snprintf(buf, 32, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
	int len = fmt_micro(buf, v);
	if (len > 0)
		return len;
#ifdef __SIZEOF_INT128__
	len = fmt_double_exact(buf, v);
	if (len > 0)
		return len;
#endif
	for (int prec = 15; prec <= 17; prec++) {
		int n = snprintf(buf, 32, "%.*g", prec, v);
		if (prec == 17 || strtod(buf, NULL) == v)
			return n;
	}
	return 0; /* not reached */
}

int next_text_line(const char **p, const char *end, const char **start, size_t *len,
                   uint32_t *line)
{
	while (*p < end) {
		const char *s = *p;
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		*p = nl ? nl + 1 : end;
		(*line)++;
		const char *q = s;
		while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < le) {
			*start = s;
			*len = (size_t)(le - s);
			return 1;
		}
	}
	return 0;
}

int parse_hostport(const char *s, char *host, int *port, char *err)
{
	const char *colon;
	size_t hlen;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return errf(err, "bad address '%s': want [IPV6]:PORT", s);
		hlen = (size_t)(close - s - 1);
		s++;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return errf(err, "bad address '%s': want HOST:PORT", s);
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= 256)
		return errf(err, "bad address: host part empty or too long");
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	char *end;
	errno = 0;
	long p = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p < 0 || p > 65535)
		return errf(err, "bad port in '%s'", colon + 1);
	*port = (int)p;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid, -1 when
 * it is cut short by the terminating NUL. */
static int utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];
	int n;
	unsigned int cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if (s[i] == 0)
			return -1;
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

char *utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		int n = utf8_seq(p);
		if (n > 0) {
			p += n;
		} else if (n < 0) {
			*p = '\0';
			break;
		} else {
			*p++ = '?';
		}
	}
	return s;
}
