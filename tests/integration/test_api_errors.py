#!/usr/bin/env python3
"""test_api_errors.py - headroomd's REST API against bad input, over real sockets.

A table of bad run specs (not JSON, wrong shape, unknown fields at every
level, a wrong type for every field, out-of-range values, both or neither
of requests/duration_s, bad URLs, header injection, workers > concurrency,
huge and NaN-like numbers, depth bombs, duplicate keys, long non-ASCII
names) must each be answered 400 with the expected error.code and
error.field; the api/openapi.yaml RunSpec schema must reject the same
documents wherever JSON Schema can say so, and accept the boundary values
the server accepts. Oversize bodies get 413 (announced by Content-Length or
sent chunked), unknown and non-numeric ids 404, bad query parameters 400
naming the parameter, and a few hundred seeded random bodies 400. Through
all of it the daemon must keep answering /healthz and exit 0 on SIGTERM.

headroomd runs with `--worker-bin` set to a program that exits at once, so
the few valid specs submitted here never send a request: this test is about
the API's input handling, not the load generator. When the daemon dies, the
case that killed it fails, the daemon is restarted, and the remaining cases
go on (test_zz_daemon_never_crashed lists every crash).

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_api_errors.py
"""
import copy
import http.client
import json
import os
import random
import select
import shutil
import socket
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402
import yaml  # noqa: E402
from jsonschema import Draft202012Validator, RefResolver  # noqa: E402

MAX_BODY = 1 << 20  # HR_MAX_BODY_BYTES
SPEC_CODES = {"invalid_json", "unknown_field", "wrong_type", "out_of_range", "missing_field",
              "invalid_value"}
DEL = object()  # in with_(): remove the field

BASE = {
    "name": "errors",
    "labels": {"k": "v"},
    "target": {"url": "http://127.0.0.1:9", "endpoint": "chat", "model": "m", "stream": True,
               "api_key_env": "HR_TEST_KEY", "headers": {"X-Test": "1"},
               "extra_body": {"temperature": 0}, "timeout_s": 5},
    "workload": {"kind": "synthetic", "isl": {"mean": 16, "stddev": 0},
                 "osl": {"mean": 8, "stddev": 1.5}, "seed": 7},
    "load": {"mode": "concurrency", "concurrency": 2, "requests": 4},
    "workers": 1,
}


def with_(*pairs, base=None):
    """A copy of base (BASE) with dotted-path fields set (or removed with DEL)."""
    d = copy.deepcopy(BASE if base is None else base)
    for path, value in zip(pairs[::2], pairs[1::2]):
        node = d
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        if value is DEL:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return d


DURATION = with_("load.requests", DEL, "load.duration_s", 2.5)


def prefix_of(full):
    """error.field may be cut short (the server keeps 127 bytes): accept a
    non-empty prefix of the full path that ends on a character boundary."""
    return lambda f: isinstance(f, str) and f != "" and full.startswith(f)


def spec_cases():
    """(label, body: dict/list or bytes, code, field, schema_can_tell)."""
    cases = []

    def add(label, body, code, field, schema=True):
        cases.append((label, body, code, field, schema))

    # --- not JSON, or not an object ------------------------------------------------
    for i, raw in enumerate([b"", b" ", b"\n", b"{", b"}", b"nope", b"{'a': 1}", b'{"a":}',
                             b"{}x", b"{}{}", b"[1,]", b'{"a" 1}', b'{"a":1,}', b"\xef\xbb\xbf{}",
                             b'"str"', b"42", b"null", b"true",
                             b'{"a":NaN}', b'{"a":nan}', b'{"a":Infinity}', b'{"a":-Infinity}',
                             b'{"a":1e999}', b'{"a":-1e999}',
                             b'{"a":123456789012345678901234567890}',
                             b'{"a":"\\u0000"}', b'{"a":"\\ud800"}', b'{"a":"\\x41"}',
                             b'{"a":"\xff"}', b'{"a":"\xc3"}', b'{"\xed\xa0\x80":1}',
                             b'{"a":"line\nbreak"}', b"\x00{}", b"{}\x00",
                             b"[" * 100000, b"{\"a\":" * 50000,
                             b'{"target":{"url":"http://x","model":"m","extra_body":' +
                             b'{"a":' * 3000 + b"1" + b"}" * 3000 + b'},"load":{"requests":1}}',
                             b'{"labels":' + b"[" * 5000 + b"]" * 5000 + b"}"]):
        add("not json %d (%r)" % (i, raw[:24]), raw, "invalid_json", None)
    for dup in (b'{"name":"a","name":"b","target":{"url":"http://x","model":"m"},'
                b'"load":{"requests":1}}',
                b'{"target":{"url":"http://x","url":"http://y","model":"m"},"load":{"requests":1}}',
                b'{"target":{"url":"http://x","model":"m","extra_body":{"t":1,"t":2}},'
                b'"load":{"requests":1}}',
                b'{"labels":{"a":"1","a":"2"},"target":{"url":"http://x","model":"m"},'
                b'"load":{"requests":1}}',
                b'{"load":{"requests":1,"requests":1},"target":{"url":"http://x","model":"m"}}'):
        add("duplicate key %r" % dup[:40], dup, "invalid_json", None)
    add("array", [], "wrong_type", None)
    add("array of spec", [BASE], "wrong_type", None)

    # --- unknown fields, every level --------------------------------------------------
    for path in ("foo", "Name", "spec_version", "target.foo", "target.URL", "target.max_tokens",
                 "workload.foo", "workload.isl.foo", "workload.osl.p99", "load.rate",
                 "load.Requests"):
        add("unknown %s" % path, with_(path, 1), "unknown_field", path)
    add("unknown nested object", with_("target.tls", {"verify": False}), "unknown_field",
        "target.tls")

    # --- missing ------------------------------------------------------------------------
    for path in ("target", "target.url", "target.model", "load"):
        add("missing %s" % path, with_(path, DEL), "missing_field", path)
        add("null %s" % path, with_(path, None), "missing_field", path)
    add("empty object", {}, "missing_field", "target")
    add("neither requests nor duration_s", with_("load.requests", DEL), "missing_field",
        "load.requests")
    add("both null", with_("load.requests", None, "load.duration_s", None), "missing_field",
        "load.requests")
    add("both requests and duration_s", with_("load.duration_s", 1.0), "invalid_value",
        "load.duration_s")
    add("both, requests out of range", with_("load.requests", 0, "load.duration_s", 1.0),
        "invalid_value", "load.duration_s")

    # --- wrong types, every field -------------------------------------------------------
    wrong = {
        "string": [1, True, [], {}, 1.5],
        "object": ["x", 1, [], True],
        "bool": ["true", 1, 0, [], {}],
        "number": ["1", True, [], {}],
        "integer": ["1", True, [], {}, 1.5, 1e-9],
    }
    fields = [("name", "string"), ("labels", "object"), ("target", "object"),
              ("target.url", "string"), ("target.endpoint", "string"),
              ("target.model", "string"), ("target.stream", "bool"),
              ("target.api_key_env", "string"), ("target.headers", "object"),
              ("target.extra_body", "object"), ("target.timeout_s", "number"),
              ("workload", "object"), ("workload.kind", "string"), ("workload.isl", "object"),
              ("workload.isl.mean", "integer"), ("workload.isl.stddev", "number"),
              ("workload.osl", "object"), ("workload.osl.mean", "integer"),
              ("workload.osl.stddev", "number"), ("workload.seed", "integer"),
              ("load", "object"), ("load.mode", "string"), ("load.concurrency", "integer"),
              ("load.requests", "integer"), ("workers", "integer")]
    for path, kind in fields:
        for v in wrong[kind]:
            add("%s = %r" % (path, v), with_(path, v), "wrong_type", path)
    for v in wrong["number"]:
        add("load.duration_s = %r" % (v,), with_("load.duration_s", v, base=DURATION),
            "wrong_type", "load.duration_s")
    add("labels value", with_("labels.k", 1), "wrong_type", "labels.k")
    add("labels value null", with_("labels.k", None), "wrong_type", "labels.k")
    add("labels value object", with_("labels.k", {"x": "y"}), "wrong_type", "labels.k")
    add("header value", with_("target.headers.X-Test", 2), "wrong_type", "target.headers.X-Test")
    add("header value list", with_("target.headers.X-Test", ["a"]), "wrong_type",
        "target.headers.X-Test")
    add("NaN as string", with_("load.concurrency", "NaN"), "wrong_type", "load.concurrency")
    add("Infinity as string", with_("target.timeout_s", "Infinity"), "wrong_type",
        "target.timeout_s")

    # --- out of range -----------------------------------------------------------------------
    rng = [("name", ["x" * 257]),
           ("target.url", ["http://" + "a" * 2042]),
           ("target.model", ["m" * 257]),
           ("target.endpoint", ["c" * 33]),
           ("target.api_key_env", ["K" * 129]),
           ("target.timeout_s", [0, 0.0009, -1, 3600.0001, 1e308, -1e308]),
           ("workload.kind", ["s" * 33]),
           ("workload.isl.mean", [-1, 1000001, 1e300]),
           ("workload.isl.stddev", [-0.5, 1000000.5]),
           ("workload.osl.mean", [-1, 1000001]),
           ("workload.osl.stddev", [-1e-9, 1e7]),
           ("workload.seed", [-1, 9007199254740992, 9223372036854775807, 1e300]),
           ("load.concurrency", [0, -0.0, -5, 100001, 9223372036854775807, 1e300]),
           ("load.requests", [0, -1, 100000001, 1e20]),
           ("workers", [0, -1, 257, 1e300])]
    for path, values in rng:
        for v in values:
            add("%s = %r" % (path, v if not isinstance(v, str) else "%d chars" % len(v)),
                with_(path, v), "out_of_range", path)
    for v in (0, 0.0009, -1, 604800.001, 1e300):
        add("load.duration_s = %r" % v, with_("load.duration_s", v, base=DURATION),
            "out_of_range", "load.duration_s")
    add("workers > concurrency", with_("workers", 3), "out_of_range", "workers", schema=False)
    add("workers > default concurrency", with_("workers", 2, "load.concurrency", DEL),
        "out_of_range", "workers", schema=False)
    add("65 labels", with_("labels", {"l%d" % i: "v" for i in range(65)}), "out_of_range",
        "labels")
    add("long label value", with_("labels.k", "v" * 4097), "out_of_range", "labels.k")
    add("65 headers", with_("target.headers", {"X-H%d" % i: "v" for i in range(65)}),
        "out_of_range", "target.headers")
    add("long header value", with_("target.headers.X-Test", "v" * 4097), "out_of_range",
        "target.headers.X-Test")

    # --- invalid values -----------------------------------------------------------------------
    for url in ("", "ftp://x", "HTTP://x", "http//x", "http:/x", "//x", "x://http://",
                "127.0.0.1:8000", "http://a b", "http://a\tb", "http://a\nb", "http://a\x7fb",
                "http://a\x01b", " http://x", "http://x\n", "http://x "):
        add("url %r" % url, with_("target.url", url), "invalid_value", "target.url")
    for ep in ("", "Chat", "chat ", "embeddings"):
        add("endpoint %r" % ep, with_("target.endpoint", ep), "invalid_value", "target.endpoint")
    for name in ("", "1KEY", "KEY-1", "KEY 1", "K=V", "\u00e9", "KEY\n"):
        add("api_key_env %r" % name, with_("target.api_key_env", name), "invalid_value",
            "target.api_key_env")
    add("workload.kind", with_("workload.kind", "trace"), "invalid_value", "workload.kind")
    add("load.mode", with_("load.mode", "poisson"), "invalid_value", "load.mode")
    add("empty label key", with_("labels", {"": "v"}), "invalid_value", "labels.")
    add("long label key", with_("labels", {"k" * 257: "v"}), "invalid_value",
        prefix_of("labels." + "k" * 257))
    for hname in ("bad name", "X:Y", "X\r\nY", "\u00e9", "(x)", "a/b", "X-A\n"):
        add("header name %r" % hname, with_("target.headers", {hname: "v"}), "invalid_value",
            "target.headers." + hname)
    add("empty header name", with_("target.headers", {"": "v"}), "invalid_value",
        "target.headers.")
    for hv in ("a\r\nX-Injected: 1", "a\n", "\r", "a\rb"):
        add("header value %r" % hv, with_("target.headers.X-Test", hv), "invalid_value",
            "target.headers.X-Test")

    # --- long non-ASCII names: the error must still be valid JSON ------------------------
    add("long unknown key, 2-byte chars", with_("\u00e9" * 200, 1), "unknown_field",
        prefix_of("\u00e9" * 200))
    add("long unknown nested key, 3-byte chars", with_("workload." + "\u20ac" * 100, 1),
        "unknown_field", prefix_of("workload." + "\u20ac" * 100))
    add("long label key, wrong value type", with_("labels", {"a" + "\u00e9" * 100: 1}),
        "wrong_type", prefix_of("labels.a" + "\u00e9" * 100))
    add("long non-token header name", with_("target.headers", {"\u20ac" * 80: "v"}),
        "invalid_value", prefix_of("target.headers." + "\u20ac" * 80))
    add("4-byte chars in an unknown key", with_("\U0001F600" * 60, 1), "unknown_field",
        prefix_of("\U0001F600" * 60))
    return cases


def valid_specs():
    """Boundary values the server must accept (and the schema too)."""
    out = [
        ("base", BASE),
        ("duration", DURATION),
        ("every optional field null",
         {"name": None, "labels": None,
          "target": {"url": "http://x", "model": "m", "endpoint": None, "stream": None,
                     "api_key_env": None, "headers": None, "extra_body": None,
                     "timeout_s": None},
          "workload": None, "load": {"mode": None, "concurrency": None, "requests": 1,
                                     "duration_s": None},
          "workers": None}),
        ("minimal", {"target": {"url": "https://x", "model": "m"}, "load": {"duration_s": 1}}),
        ("whole reals for integers", with_("load.concurrency", 2.0, "load.requests", 4.0,
                                           "workers", 1.0, "workload.seed", 3.0,
                                           "workload.isl.mean", 16.0)),
        ("upper bounds", with_("name", "n" * 256, "target.url", "http://" + "a" * 2041,
                               "target.model", "m" * 256, "target.api_key_env", "K" * 128,
                               "target.timeout_s", 3600, "workload.isl.mean", 1000000,
                               "workload.isl.stddev", 1000000, "workload.osl.mean", 1000000,
                               "workload.seed", 9007199254740991, "load.concurrency", 100000,
                               "load.requests", 100000000, "workers", 256,
                               "labels", {"l%d" % i: "v" * 4096 for i in range(64)},
                               "target.headers", {"X-%d" % i: "v" * 4096 for i in range(64)})),
        ("lower bounds", with_("target.timeout_s", 0.001, "workload.isl.mean", 0,
                               "workload.osl.mean", 0, "workload.seed", 0,
                               "load.concurrency", 1, "load.requests", 1, "workers", 1)),
        ("duration bounds", with_("load.duration_s", 604800, base=DURATION)),
        ("duration lower bound", with_("load.duration_s", 0.001, base=DURATION)),
        ("token header names", with_("target.headers", {"!#$%&'*+-.^_`|~Az09": "x y\tz"})),
        ("completions, no stream", with_("target.endpoint", "completions",
                                         "target.stream", False)),
        ("unicode text", with_("name", "\u00e9\u20ac\U0001F600", "labels", {"\u00e9": "\u20ac"})),
        ("any extra_body", with_("target.extra_body", {"a": [1, {"b": None}], "c": "d"})),
    ]
    return out


class ApiErrorsTest(unittest.TestCase):

    crashes = []

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(hrtest.SRC, "api", "openapi.yaml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        cls.schema = Draft202012Validator({"$ref": "#/components/schemas/RunSpec"},
                                          resolver=RefResolver.from_schema(doc))
        cls.error_schema = Draft202012Validator({"$ref": "#/components/schemas/Error"},
                                                resolver=RefResolver.from_schema(doc))
        cls.tmp = hrtest.tempdir()
        cls.data = os.path.join(cls.tmp.name, "data")
        os.mkdir(cls.data)
        cls.worker = shutil.which("true") or "/bin/true"
        cls.start()

    @classmethod
    def start(cls):
        cls.daemon = hrtest.start_daemon(cls.data, "--worker-bin", cls.worker,
                                         "--default-workers", "4")
        host, port = cls.daemon.addr.rsplit(":", 1)
        cls.host, cls.port = host, int(port)

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        cls.tmp.cleanup()
        if rc != 0:
            raise AssertionError("headroomd exited with status %s on SIGTERM" % rc)

    # --- plumbing ------------------------------------------------------------------------

    def crashed(self, what, exc):
        """Called when a request got no answer: records a crash and restarts."""
        self.daemon.p.poll()
        if self.daemon.p.returncode is None:
            raise AssertionError("%s: no answer (%r), but headroomd is still running" %
                                 (what, exc))
        rc = self.daemon.stop()
        type(self).crashes.append("%s (exit %s)" % (what, rc))
        type(self).start()
        raise AssertionError("headroomd died on %s (exit status %s)" % (what, rc))

    def request(self, method, path, body=None, headers=None, what=None):
        """Returns (status, parsed JSON or raw bytes, headers)."""
        what = what or "%s %s" % (method, path[:80])
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
        except (ConnectionError, http.client.HTTPException) as e:
            self.crashed(what, e)
        finally:
            c.close()
        if r.headers.get("Content-Type", "").startswith("application/json"):
            try:
                return r.status, json.loads(data.decode("utf-8")), r.headers
            except ValueError as e:
                raise AssertionError("%s: the answer is not valid UTF-8 JSON: %s %r"
                                     % (what, e, data[:200]))
        return r.status, data, r.headers

    def expect_error(self, status, body, code, field, what):
        self.assertIsInstance(body, dict, "%s: not a JSON answer: %r" % (what, body))
        errors = list(self.error_schema.iter_errors(body))
        self.assertEqual(errors, [], "%s: not an Error: %s" % (what, body))
        msg = "%s: %s" % (what, json.dumps(body)[:400])
        got_code, got_field = body["error"]["code"], body["error"]["field"]
        if isinstance(code, set):
            self.assertIn(got_code, code, msg)
        else:
            self.assertEqual(got_code, code, msg)
        if callable(field):
            self.assertTrue(field(got_field), msg)
        elif field != "?":
            self.assertEqual(got_field, field, msg)
        self.assertTrue(body["error"]["message"], msg)

    def post_spec(self, raw, what):
        return self.request("POST", "/api/v1/runs", body=raw,
                            headers={"Content-Type": "application/json"}, what=what)

    def alive(self):
        st, body, _ = self.request("GET", "/api/v1/healthz", what="healthz")
        self.assertEqual(st, 200)
        self.assertEqual(body["status"], "ok")

    def upload(self, head, pieces):
        """Raw upload that stops sending once the server answers; returns
        (status, parsed body)."""
        s = socket.create_connection((self.host, self.port), timeout=20)
        try:
            s.sendall(head)
            for p in pieces:
                if select.select([s], [], [], 0)[0]:
                    break
                try:
                    s.sendall(p)
                except (BrokenPipeError, ConnectionResetError):
                    break
            r = http.client.HTTPResponse(s, method="POST")
            try:
                r.begin()
            except (ConnectionError, http.client.HTTPException) as e:
                self.daemon.p.poll()
                if self.daemon.p.returncode is not None:
                    self.crashed("upload %r" % head[:60], e)
                raise AssertionError("the connection was closed without an answer (%r)" % e)
            data = r.read()
            body = json.loads(data) if r.headers.get("Content-Type", "").startswith(
                "application/json") else data
            return r.status, body
        finally:
            s.close()

    # --- tests -----------------------------------------------------------------------------

    def test_bad_specs(self):
        for label, body, code, field, schema_can_tell in spec_cases():
            with self.subTest(label):
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                st, resp, _ = self.post_spec(raw, label)
                self.assertEqual(st, 400, "%s: %r" % (label, resp))
                self.expect_error(st, resp, code, field, label)
                if schema_can_tell and isinstance(body, dict):
                    self.assertFalse(self.schema.is_valid(body),
                                     "%s: api/openapi.yaml's RunSpec accepts it" % label)
        self.alive()

    def test_bad_specs_other_content_types(self):
        """The body is parsed whatever the Content-Type says."""
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                      None):
            headers = {"Content-Type": ctype} if ctype else {}
            st, resp, _ = self.request("POST", "/api/v1/runs", body=b"name=x", headers=headers)
            self.assertEqual(st, 400)
            self.expect_error(st, resp, "invalid_json", None, str(ctype))

    def test_valid_boundaries(self):
        for label, spec in valid_specs():
            with self.subTest(label):
                self.assertEqual(list(self.schema.iter_errors(spec)), [],
                                 "%s: api/openapi.yaml's RunSpec rejects it" % label)
                st, resp, hdrs = self.post_spec(json.dumps(spec).encode(), label)
                self.assertEqual(st, 201, "%s: %r" % (label, resp))
                self.assertEqual(hdrs.get("Location"), resp["url"])
                st, run, _ = self.request("GET", resp["url"])
                self.assertEqual(st, 200)
                if label == "every optional field null":
                    n = run["spec"]
                    self.assertEqual(n["name"], "")
                    self.assertEqual(n["labels"], {})
                    self.assertEqual(n["target"]["endpoint"], "chat")
                    self.assertIs(n["target"]["stream"], True)
                    self.assertNotIn("api_key_env", n["target"])
                    self.assertEqual(n["target"]["timeout_s"], 600)
                    self.assertEqual(n["workload"], {"kind": "synthetic",
                                                     "isl": {"mean": 128, "stddev": 0},
                                                     "osl": {"mean": 128, "stddev": 0},
                                                     "seed": 0})
                    self.assertEqual(n["load"], {"mode": "concurrency", "concurrency": 1,
                                                 "requests": 1})
                    self.assertEqual(n["workers"], 1)
                    self.assertTrue(self.schema.is_valid(n))
                # stop it (it may already have failed: the worker is a stand-in)
                st, _, _ = self.request("POST", resp["url"] + "/cancel")
                self.assertIn(st, (202, 409))

    def test_too_large_content_length(self):
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n")
        st, body = self.upload(head % (MAX_BODY + 1), [b" " * 65536] * 16 + [b" "])
        self.assertEqual(st, 413, body)
        self.expect_error(st, body, "body_too_large", None, "1 MiB + 1, accurate length")
        # announced, never sent: answered from the headers alone
        st, body = self.upload(head % (1 << 40), [])
        self.assertEqual(st, 413, body)
        self.expect_error(st, body, "body_too_large", None, "1 TiB announced")
        # any route
        st, body = self.upload(b"GET /api/v1/healthz HTTP/1.1\r\nHost: t\r\n"
                               b"Content-Length: %d\r\n\r\n" % (2 * MAX_BODY), [])
        self.assertEqual(st, 413, body)
        # exactly 1 MiB is accepted as a body (and is not JSON)
        st, body = self.upload(head % MAX_BODY, [b" " * 65536] * 16)
        self.assertEqual(st, 400, body)
        self.expect_error(st, body, "invalid_json", None, "exactly 1 MiB")
        self.alive()

    def test_too_large_chunked(self):
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")

        def chunks(total, size=65536):
            sent = 0
            while sent < total:
                n = min(size, total - sent)
                yield b"%x\r\n" % n + b" " * n + b"\r\n"
                sent += n
            yield b"0\r\n\r\n"
        # exactly 1 MiB without Content-Length: accepted as a body
        st, body = self.upload(head, chunks(MAX_BODY))
        self.assertEqual(st, 400, body)
        self.expect_error(st, body, "invalid_json", None, "chunked, exactly 1 MiB")
        for total in (MAX_BODY + 1, 4 * MAX_BODY):
            with self.subTest(total=total):
                st, body = self.upload(head, chunks(total))
                self.assertEqual(st, 413, body)
                self.expect_error(st, body, "body_too_large", None, "chunked %d" % total)
        self.alive()

    def test_ids(self):
        bad = ["abc", "0", "00", "-1", "+1", "1.0", "1e3", "0x1", " 1", "1 ", "1a",
               "99999999999999999999", "9223372036854775808", "\u0663", "\u00e9" * 300,
               "999999", "9223372036854775807"]
        for raw_id in bad:
            seg = urllib.parse.quote(raw_id, safe="")
            for method, suffix in (("GET", ""), ("GET", "/summary"), ("GET", "/records"),
                                   ("GET", "/records?format=csv"), ("POST", "/cancel")):
                path = "/api/v1/runs/%s%s" % (seg, suffix)
                with self.subTest(path=path[:80]):
                    st, body, _ = self.request(method, path, body=b"" if method == "POST"
                                               else None)
                    self.assertEqual(st, 404, body)
                    self.expect_error(st, body, "not_found", "id", path[:80])
        self.alive()

    def test_ids_not_utf8(self):
        """Percent-encoded bytes that are not UTF-8 in the id, or in an unknown
        path: still a JSON 404 (or 405), and the daemon lives."""
        for path, method, status, field in (
                ("/api/v1/runs/%FF", "GET", 404, "id"),
                ("/api/v1/runs/%C3", "GET", 404, "id"),
                ("/api/v1/runs/%C3%28/summary", "GET", 404, "id"),
                ("/api/v1/runs/%ED%A0%80", "GET", 404, "id"),
                ("/api/v1/runs/%FF", "DELETE", 405, None),
                ("/api/v1/%FF%FE", "GET", 404, None)):
            with self.subTest(path=path, method=method):
                st, body, _ = self.request(method, path)
                self.assertEqual(st, status, body)
                self.expect_error(st, body, "not_found" if status == 404 else
                                  "method_not_allowed", field, path)
        self.alive()

    def test_routes(self):
        for method, path, status, code, field in (
                ("GET", "/nope.html", 404, "not_found", None),
                ("GET", "/api/v1", 404, "not_found", None),
                ("GET", "/api/v2/runs", 404, "not_found", None),
                ("GET", "/api/v1/runs//summary", 404, "not_found", None),
                ("GET", "/api/v1/runs/1/summary/x", 404, "not_found", None),
                ("GET", "/api/v1/runs/1//", 404, "not_found", None),
                ("DELETE", "/api/v1/runs/1", 405, "method_not_allowed", None),
                ("PATCH", "/api/v1/runs", 405, "method_not_allowed", None),
                ("PUT", "/api/v1/healthz", 405, "method_not_allowed", None),
                ("GET", "/api/v1/runs/1/cancel", 405, "method_not_allowed", None),
                ("POST", "/api/v1/runs/1/records", 405, "method_not_allowed", None),
                ("OPTIONS", "/api/v1/runs", 405, "method_not_allowed", None)):
            with self.subTest(method=method, path=path):
                st, body, _ = self.request(method, path)
                self.assertEqual(st, status, body)
                self.expect_error(st, body, code, field, "%s %s" % (method, path))

    def test_query_params(self):
        cases = []
        for v in ("0", "1001", "-1", "+5", "5x", "", "1e3", "0x10", " 5", "5 ", "1.0",
                  "99999999999999999999", "\u0665"):
            cases.append(("/api/v1/runs?limit=" + urllib.parse.quote(v), "out_of_range", "limit"))
        for v in ("0", "-1", "abc", "", "1.5", "+1", "99999999999999999999"):
            cases.append(("/api/v1/runs?before=" + urllib.parse.quote(v), "invalid_value",
                          "before"))
        for v in ("QUEUED", "", "done", "queued ", "running,queued", "\u00e9"):
            cases.append(("/api/v1/runs?state=" + urllib.parse.quote(v), "invalid_value",
                          "state"))
        cases.append(("/api/v1/runs?limit=0&state=bad", "out_of_range", "limit"))
        for v in ("JSON", "", "xml", "jsonl", "csv ", "%FF"):
            cases.append(("/api/v1/runs/999999/summary?format=" + urllib.parse.quote(v),
                          "invalid_value", "format"))
        for v in ("json", "CSV", "", "ndjson", "jsonl\n"):
            cases.append(("/api/v1/runs/999999/records?format=" + urllib.parse.quote(v),
                          "invalid_value", "format"))
        for path, code, field in cases:
            with self.subTest(path=path):
                st, body, _ = self.request("GET", path)
                self.assertEqual(st, 400, body)
                self.expect_error(st, body, code, field, path)
        for path in ("/api/v1/runs?limit=1", "/api/v1/runs?limit=1000",
                     "/api/v1/runs?before=9223372036854775807", "/api/v1/runs?state=failed",
                     "/api/v1/runs?unknown=1"):
            with self.subTest(path=path):
                st, body, _ = self.request("GET", path)
                self.assertEqual(st, 200, body)
        self.alive()

    def test_random_garbage(self):
        rnd = random.Random(20261129)
        soup = b'{}[]":,0123456789.eE+-truefalsn \\/\t\nabcxyz\xc3\xa9\xff\x00'
        bodies = []
        for _ in range(300):
            n = rnd.choice((0, 1, 2, 3, 8, 64, 512, 4096))
            bodies.append(bytes(rnd.getrandbits(8) for _ in range(n)))
        for _ in range(200):
            n = rnd.randint(1, 400)
            bodies.append(b"{" + bytes(rnd.choice(soup) for _ in range(n)))
        base = json.dumps(BASE).encode()
        for _ in range(100):  # a valid spec, truncated or with a byte spliced in
            cut = rnd.randrange(len(base))
            if rnd.random() < 0.5:
                bodies.append(base[:cut])
            else:
                bodies.append(base[:cut] + bytes([rnd.choice(b'{}[]":,\x00\xff')]) + base[cut:])
        for i, raw in enumerate(bodies):
            st, body, _ = self.post_spec(raw, "garbage %d %r" % (i, raw[:40]))
            if st == 201 and i >= 500:  # a splice inside a string can leave a valid spec
                self.assertTrue(self.schema.is_valid(json.loads(raw)), raw)
                self.request("POST", body["url"] + "/cancel")
                continue
            self.assertEqual(st, 400, "garbage %d %r: %r" % (i, raw[:60], body))
            self.expect_error(st, body, SPEC_CODES, "?", "garbage %d %r" % (i, raw[:40]))
        self.alive()

    def test_zz_daemon_never_crashed(self):
        """Runs last: every crash seen by the tests above, and a final health check."""
        self.alive()
        self.assertEqual(type(self).crashes, [], "headroomd crashed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
