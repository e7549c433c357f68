/* test_dynbuf.c - unit tests of lib/dynbuf.c: the hard bound (a failed add
 * leaves the buffer unchanged), NUL termination, printf, take and reset. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "dynbuf.h"
#include "tap.h"

static void test_init(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 100);
	CHECK(b.data == NULL);
	CHECK_EQ_INT(b.len, 0);
	CHECK_EQ_INT(b.max, 100);
	dynbuf_release(&b);
	CHECK(b.data == NULL);
	dynbuf_release(&b); /* twice is harmless */
}

static void test_add(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 1000);
	CHECK_EQ_INT(dynbuf_add(&b, "abc", 3), 0);
	CHECK_EQ_INT(dynbuf_addstr(&b, "def"), 0);
	CHECK_EQ_INT(b.len, 6);
	CHECK_STR(b.data, "abcdef");
	CHECK_EQ_INT(dynbuf_add(&b, "", 0), 0);
	CHECK_EQ_INT(b.len, 6);
	/* binary content, still NUL-terminated after it */
	CHECK_EQ_INT(dynbuf_add(&b, "x\0y", 3), 0);
	CHECK_EQ_INT(b.len, 9);
	CHECK_MEM(b.data, b.len + 1, "abcdefx\0y", (size_t)10);
	/* growth over many adds keeps contents */
	for (int i = 0; i < 99; i++)
		dynbuf_add(&b, "0123456789", i < 90 ? 10 : 0);
	CHECK_EQ_INT(b.len, 909);
	CHECK(b.cap > b.len);
	CHECK_EQ_INT(b.data[b.len], '\0');
	CHECK(memcmp(b.data + 9, "0123456789", 10) == 0);
	CHECK(memcmp(b.data + 899, "0123456789", 10) == 0);
	dynbuf_release(&b);
}

static void test_empty_add(void)
{
	struct dynbuf b;

	/* adding nothing to a fresh buffer gives a valid empty string */
	dynbuf_init(&b, 10);
	CHECK_EQ_INT(dynbuf_add(&b, NULL, 0), 0);
	CHECK(b.data != NULL);
	CHECK_STR(b.data, "");
	dynbuf_release(&b);
}

static void test_bound(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 8);
	CHECK_EQ_INT(dynbuf_add(&b, "12345", 5), 0);
	/* past the bound: fails, buffer unchanged */
	CHECK_EQ_INT(dynbuf_add(&b, "6789", 4), -1);
	CHECK_EQ_INT(b.len, 5);
	CHECK_STR(b.data, "12345");
	CHECK_EQ_INT(dynbuf_addstr(&b, "abcd"), -1);
	CHECK_STR(b.data, "12345");
	/* exactly up to the bound succeeds */
	CHECK_EQ_INT(dynbuf_add(&b, "678", 3), 0);
	CHECK_EQ_INT(b.len, 8);
	CHECK_STR(b.data, "12345678");
	CHECK(b.cap <= b.max + 1);
	CHECK_EQ_INT(dynbuf_add(&b, "9", 1), -1);
	CHECK_EQ_INT(dynbuf_add(&b, "", 0), 0);
	CHECK_EQ_INT(b.len, 8);
	/* a huge n must not wrap around */
	CHECK_EQ_INT(dynbuf_add(&b, "x", (size_t)-1), -1);
	CHECK_EQ_INT(dynbuf_add(&b, "x", (size_t)-1 - 4), -1);
	CHECK_STR(b.data, "12345678");
	dynbuf_release(&b);

	/* a zero bound admits only the empty string */
	dynbuf_init(&b, 0);
	CHECK_EQ_INT(dynbuf_add(&b, "a", 1), -1);
	CHECK(b.data == NULL);
	CHECK_EQ_INT(dynbuf_add(&b, "", 0), 0);
	CHECK_STR(b.data, "");
	dynbuf_release(&b);

	/* an add too large for a fresh buffer allocates nothing */
	dynbuf_init(&b, 4);
	CHECK_EQ_INT(dynbuf_add(&b, "hello", 5), -1);
	CHECK(b.data == NULL);
	CHECK_EQ_INT(b.len, 0);
	dynbuf_release(&b);
}

static void test_printf(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 32);
	CHECK_EQ_INT(dynbuf_printf(&b, "%d-%s", 42, "x"), 0);
	CHECK_STR(b.data, "42-x");
	CHECK_EQ_INT(dynbuf_printf(&b, "[%5.2f]", 3.14159), 0);
	CHECK_STR(b.data, "42-x[ 3.14]");
	CHECK_EQ_INT(b.len, 11);
	CHECK_EQ_INT(dynbuf_printf(&b, "%s", ""), 0);
	CHECK_EQ_INT(b.len, 11);
	/* 11 + 22 > 32: fails and leaves the buffer as it was */
	CHECK_EQ_INT(dynbuf_printf(&b, "%022d", 7), -1);
	CHECK_EQ_INT(b.len, 11);
	CHECK_STR(b.data, "42-x[ 3.14]");
	/* 11 + 21 = 32 fits exactly */
	CHECK_EQ_INT(dynbuf_printf(&b, "%021d", 7), 0);
	CHECK_EQ_INT(b.len, 32);
	CHECK_STR(b.data, "42-x[ 3.14]000000000000000000007");
	dynbuf_release(&b);

	/* printf into a fresh buffer, then longer output forcing growth */
	dynbuf_init(&b, 1 << 20);
	for (int i = 0; i < 1000; i++)
		dynbuf_printf(&b, "%04d,", i);
	CHECK_EQ_INT(b.len, 5000);
	CHECK(memcmp(b.data, "0000,0001,", 10) == 0);
	CHECK(memcmp(b.data + 4990, "0998,0999,", 10) == 0);
	CHECK_EQ_INT(b.data[5000], '\0');
	dynbuf_release(&b);
}

static void test_reset(void)
{
	struct dynbuf b;

	dynbuf_init(&b, 100);
	dynbuf_addstr(&b, "some text");
	char *mem = b.data;
	size_t cap = b.cap;
	dynbuf_reset(&b);
	CHECK_EQ_INT(b.len, 0);
	CHECK_STR(b.data, "");
	CHECK(b.data == mem); /* keeps the allocation */
	CHECK_EQ_INT(b.cap, cap);
	CHECK_EQ_INT(dynbuf_addstr(&b, "again"), 0);
	CHECK_STR(b.data, "again");
	CHECK(b.data == mem);
	dynbuf_release(&b);

	/* reset of a never-used buffer */
	dynbuf_init(&b, 100);
	dynbuf_reset(&b);
	CHECK_EQ_INT(b.len, 0);
	CHECK(b.data == NULL);
	dynbuf_release(&b);
}

static void test_take(void)
{
	struct dynbuf b;
	size_t len = 99;
	char *s;

	dynbuf_init(&b, 100);
	dynbuf_addstr(&b, "hello");
	s = dynbuf_take(&b, &len);
	CHECK_STR(s, "hello");
	CHECK_EQ_INT(len, 5);
	CHECK(b.data == NULL);
	CHECK_EQ_INT(b.len, 0);
	CHECK_EQ_INT(b.cap, 0);
	CHECK_EQ_INT(b.max, 100);
	free(s);

	/* the buffer is usable again after a take */
	CHECK_EQ_INT(dynbuf_addstr(&b, "world"), 0);
	s = dynbuf_take(&b, NULL);
	CHECK_STR(s, "world");
	free(s);

	/* take of an empty buffer gives an owned empty string */
	len = 99;
	s = dynbuf_take(&b, &len);
	CHECK(s != NULL);
	CHECK_STR(s, "");
	CHECK_EQ_INT(len, 0);
	free(s);
	dynbuf_release(&b);
}

/* SIZE_MAX means no bound: max + 1 must not wrap the capacity to 0 */
static void test_unbounded(void)
{
	struct dynbuf b;
	dynbuf_init(&b, SIZE_MAX);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ_INT(dynbuf_printf(&b, "%04d,", i), 0);
	CHECK_EQ_INT(b.len, 5000);
	CHECK(b.cap > b.len);
	CHECK(strncmp(b.data + 4995, "0999,", 5) == 0);
	CHECK_EQ_INT(dynbuf_addstr(&b, "end"), 0);
	CHECK_STR(b.data + 5000, "end");
	dynbuf_release(&b);
}

int main(void)
{
	test_init();
	test_unbounded();
	test_add();
	test_empty_add();
	test_bound();
	test_printf();
	test_reset();
	test_take();
	return tap_done();
}
