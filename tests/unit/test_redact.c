/* test_redact.c - unit tests of lib/redact.c, table-driven: which header
 * and query parameter names count as credentials, URLs with their
 * user-info and token-like parameters redacted (and the others kept byte
 * for byte), a too-small buffer, and the first credential of a spec. */
#include <jansson.h>
#include <string.h>

#include "redact.h"
#include "tap.h"

static void test_header_names(void)
{
	static const struct {
		const char *name;
		int sensitive;
	} t[] = {
	    {"Authorization", 1},
	    {"proxy-authorization", 1},
	    {"Cookie", 1},
	    {"Set-Cookie", 1},
	    {"X-Api-Key", 1},
	    {"x-goog-api-key", 1},
	    {"X-Auth-Token", 1},
	    {"X-Session-Id", 1},
	    {"X-Client-Secret", 1},
	    {"X-Password", 1},
	    {"X-Amz-Signature", 1},
	    {"X-Amz-Credential", 1},
	    {"X-Test", 0},
	    {"Content-Type", 0},
	    {"Accept", 0},
	    {"X-Request-Id", 0},
	    {"", 0},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++)
		CHECK_EQ_INT(redact_header_name(t[i].name), t[i].sensitive);
	CHECK_EQ_INT(redact_header_name(NULL), 0);
}

static void test_urls(void)
{
	static const struct {
		const char *in, *out;
		int changed;
	} t[] = {
	    {"http://h:8000", "http://h:8000", 0},
	    {"http://h/v1?region=eu&model=x", "http://h/v1?region=eu&model=x", 0},
	    {"http://user:pass@h:8000/x", "http://[redacted]@h:8000/x", 1},
	    {"https://tok@h", "https://[redacted]@h", 1},
	    {"http://a@b@h/p@q", "http://[redacted]@h/p@q", 1},
	    {"http://h/?api_key=abc", "http://h/?api_key=[redacted]", 1},
	    {"http://h/x?a=1&access_token=abc&b=2#frag",
	     "http://h/x?a=1&access_token=[redacted]&b=2#frag", 1},
	    {"http://h/x?KEY=1;sig=2", "http://h/x?KEY=[redacted];sig=[redacted]", 1},
	    {"http://h/x?token", "http://h/x?token", 0}, /* no value */
	    {"http://h/x#?token=1", "http://h/x#?token=1", 0},
	    {"http://u:p@h/?password=x&sig=",
	     "http://[redacted]@h/?password=[redacted]&sig=[redacted]", 1},
	    {"http://h/?", "http://h/?", 0},
	    {"http://h/?&&", "http://h/?&&", 0},
	    {"/v1/chat?secret=s", "/v1/chat?secret=[redacted]", 1},
	    {"", "", 0},
	};
	char out[256];
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		CHECK_EQ_INT(redact_url(t[i].in, out, sizeof out), t[i].changed);
		CHECK_STR(out, t[i].out);
	}
	/* too small: -1 and nothing of the credential */
	CHECK_EQ_INT(redact_url("http://user:pass@h", out, 10), -1);
	CHECK_STR(out, "");
	CHECK_EQ_INT(redact_url("http://h", out, 0), -1);
}

static void test_spec_find(void)
{
	static const struct {
		const char *json, *field;
	} t[] = {
	    {"{\"target\":{\"url\":\"http://h\",\"headers\":{\"X-Test\":\"1\"}}}", NULL},
	    {"{\"target\":{\"url\":\"http://h\",\"headers\":{\"X-Test\":\"1\",\"Cookie\":\"c\"}}}",
	     "target.headers.Cookie"},
	    {"{\"target\":{\"url\":\"http://u:p@h\"}}", "target.url"},
	    {"{\"target\":{\"url\":\"http://h\",\"template\":{\"path\":\"/g?token=1\"}}}",
	     "target.template.path"},
	    {"{\"target\":{\"url\":\"http://h\"},\"telemetry\":{\"dcgm_urls\":[\"http://d\"],"
	     "\"metrics_urls\":[\"http://m\",\"http://m?key=2\"]}}",
	     "telemetry.metrics_urls[1]"},
	    {"{\"target\":{\"url\":\"http://h\"},\"telemetry\":{\"dcgm_urls\":[\"http://x@d\"]}}",
	     "telemetry.dcgm_urls[0]"},
	    {"{\"target\":{\"url\":\"http://h\",\"path\":\"/v1/c?api_key=3\"}}", "target.path"},
	    {"{\"target\":{\"url\":\"http://h\",\"path\":\"/v1/c?api-version=3\"}}", NULL},
	    {"{\"target\":{\"url\":\"http://h\"},\"classes\":[{\"name\":\"a\",\"target\":{\"url\":"
	     "\"http://h\"}},{\"name\":\"b\",\"target\":{\"headers\":{\"X-Api-Key\":\"k\"}}}]}",
	     "classes[1].target.headers.X-Api-Key"},
	    {"{\"target\":{\"url\":\"http://h\"},\"classes\":[{\"name\":\"a\",\"target\":{\"url\":"
	     "\"http://u:p@g\"}}]}",
	     "classes[0].target.url"},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		json_t *j = json_loads(t[i].json, 0, NULL);
		CHECK(j != NULL);
		char field[128] = "";
		CHECK_EQ_INT(redact_spec_find(j, field, sizeof field), t[i].field != NULL);
		if (t[i].field)
			CHECK_STR(field, t[i].field);
		json_decref(j);
	}
}

int main(void)
{
	test_header_names();
	test_urls();
	test_spec_find();
	return tap_done();
}
