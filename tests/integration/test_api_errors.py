#!/usr/bin/env python3
"""test_api_errors.py - headroomd's REST API against bad input, over real sockets.

A table of bad run specs (not JSON, wrong shape, unknown fields at every
level, a wrong type for every field, out-of-range values, both or neither
of requests/duration_s, bad URLs, header injection, workers > concurrency,
huge and NaN-like numbers, depth bombs, duplicate keys, long non-ASCII
names; fields that do not apply to the load mode, rate mode without a
rate, smoothness without the gamma law, bad trace lines (the message names
the line), bad warm-ups, cancellation and sessions, bad telemetry settings
(wrong types, out-of-range periods, URLs that are not http(s), too many
URLs, unknown fields; URL errors name the element, telemetry.dcgm_urls[2])
must each be answered
400 with the expected error.code and error.field; the api/openapi.yaml
RunSpec schema must reject the same documents wherever JSON Schema can say
so, and accept the boundary values the server accepts in every mode, as
well as the normalised spec the server stores (every default filled in,
telemetry's included). Oversize bodies get 413
(announced by Content-Length or sent chunked), unknown and non-numeric ids
404, bad query parameters 400 naming the parameter, and a few hundred
seeded random bodies 400. Through all of it the daemon must keep
answering /healthz and exit 0 on SIGTERM.

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
               "headers": {"X-Test": "1"},
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
            node = node.setdefault(k, {})  # (an absent object is created)
        if value is DEL:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return d


DURATION = with_("load.requests", DEL, "load.duration_s", 2.5)

# one base per load mode and feature; each is valid (see valid_specs)
TRACE_TEXT = ('{"timestamp": 0, "input_length": 16, "output_length": 8}\n'
              '{"timestamp": 5.5, "input_length": 32, "output_length": 4, "hash_ids": [1, 2],'
              ' "session_id": "s1"}\n'
              '{"timestamp": 20, "input_length": 8, "output_length": 2, "session_id": 7}\n')
RATE = with_("load", {"mode": "rate", "rate": 10, "requests": 4})
GAMMA = with_("load.arrival", "gamma", "load.smoothness", 2, base=RATE)
TRACE = with_("workload", {"kind": "trace", "trace": TRACE_TEXT}, "load", {"mode": "trace"})
WARM = with_("warmup", {"requests": 2, "load": {"mode": "concurrency", "concurrency": 1}})
WARM_RATE = with_("warmup", {"duration_s": 1, "load": {"mode": "rate", "rate": 5,
                                                        "arrival": "gamma", "smoothness": 2}})
SESSIONS = with_("workload.sessions", {"turns": {"mean": 2, "stddev": 1},
                                       "think_time_s": {"mean": 0.5, "stddev": 0.1}})
CANCEL = with_("load.cancel", {"fraction": 0.5, "after_s": 0.25})
TELE = with_("telemetry", {"nvml": False, "interval_ms": 100, "scrape_timeout_ms": 500,
                           "dcgm_urls": ["http://127.0.0.1:9400/metrics"],
                           "server_metrics": False,
                           "metrics_urls": ["https://router.example:8443/metrics"]})
# the normalised spec's telemetry when the spec gives none (lib/spec.c)
DEFAULT_TELEMETRY = {"nvml": True, "interval_ms": 333, "scrape_timeout_ms": 1000,
                     "dcgm_urls": ["http://localhost:9400/metrics",
                                   "http://localhost:9401/metrics"],
                     "server_metrics": True, "metrics_urls": []}
URLS = ["http://127.0.0.1:%d/metrics" % (9400 + i) for i in range(16)]


def trace_with(*lines):
    """TRACE with workload.trace made of these lines."""
    return with_("workload.trace", "".join(line + "\n" for line in lines), base=TRACE)


TRACE_OK = '{"timestamp": 0, "input_length": 1, "output_length": 1}'


def prefix_of(full):
    """error.field may be cut short (the server keeps 127 bytes): accept a
    non-empty prefix of the full path that ends on a character boundary."""
    return lambda f: isinstance(f, str) and f != "" and full.startswith(f)


def spec_cases():
    """(label, body: dict/list or bytes, code, field, schema_can_tell, message):
    message, when not None, must be part of error.message."""
    cases = []

    def add(label, body, code, field, schema=True, message=None):
        cases.append((label, body, code, field, schema, message))

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
                 "workload.foo", "workload.isl.foo", "workload.osl.p99", "load.Rate",
                 "workload.token_count.foo",
                 "load.Requests", "load.burst", "load.think_time_s"):
        add("unknown %s" % path, with_(path, 1), "unknown_field", path)
    for path in ("load.cancel.foo", "load.cancel.Fraction"):
        add("unknown %s" % path, with_(path, 1, base=CANCEL), "unknown_field", path)
    for path in ("workload.sessions.foo", "workload.sessions.turns.p99",
                 "workload.sessions.think_time_s.max"):
        add("unknown %s" % path, with_(path, 1, base=SESSIONS), "unknown_field", path)
    for path in ("warmup.foo", "warmup.Requests", "warmup.load.foo", "warmup.load.requests",
                 "warmup.load.duration_s", "warmup.load.grace_s", "warmup.load.cancel",
                 "warmup.load.speedup", "warmup.workers"):
        add("unknown %s" % path, with_(path, 1, base=WARM), "unknown_field", path)
    add("unknown trace-mode field", with_("load.offset_s", 1, base=TRACE), "unknown_field",
        "load.offset_s")
    add("unknown nested object", with_("target.tls", {"verify": False}), "unknown_field",
        "target.tls")
    for path in ("telemetry.foo", "telemetry.Nvml", "telemetry.interval", "telemetry.gpus",
                 "telemetry.dcgm_url"):
        add("unknown %s" % path, with_(path, 1, base=TELE), "unknown_field", path)
    add("unknown telemetry field, otherwise empty", with_("telemetry", {"urls": []}),
        "unknown_field", "telemetry.urls")

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
              ("load.requests", "integer"), ("workers", "integer"),
              ("load.ramp_s", "number"), ("load.grace_s", "number"), ("load.cancel", "object"),
              ("workload.sessions", "object"), ("workload.block_size", "integer"),
              ("workload.token_count", "object"),
              ("workload.token_count.discrepancy_pct", "number"),
              ("workload.token_count.isl", "string"), ("workload.token_count.osl", "string")]
    for path, kind in fields:
        for v in wrong[kind]:
            add("%s = %r" % (path, v), with_(path, v), "wrong_type", path)
    # fields of the other modes and features, each against a base where it applies
    moded = [(RATE, "load.rate", "number"), (RATE, "load.arrival", "string"),
             (RATE, "load.max_concurrency", "integer"), (RATE, "load.ramp_s", "number"),
             (GAMMA, "load.smoothness", "number"),
             (TRACE, "load.speedup", "number"), (TRACE, "load.start_s", "number"),
             (TRACE, "load.end_s", "number"), (TRACE, "load.max_concurrency", "integer"),
             (TRACE, "workload.trace", "string"),
             (CANCEL, "load.cancel.fraction", "number"), (CANCEL, "load.cancel.after_s", "number"),
             (SESSIONS, "workload.sessions.turns", "object"),
             (SESSIONS, "workload.sessions.turns.mean", "number"),
             (SESSIONS, "workload.sessions.turns.stddev", "number"),
             (SESSIONS, "workload.sessions.think_time_s", "object"),
             (SESSIONS, "workload.sessions.think_time_s.mean", "number"),
             (SESSIONS, "workload.sessions.think_time_s.stddev", "number"),
             (WARM, "warmup", "object"), (WARM, "warmup.requests", "integer"),
             (WARM, "warmup.load", "object"), (WARM, "warmup.load.mode", "string"),
             (WARM, "warmup.load.concurrency", "integer"), (WARM, "warmup.load.ramp_s", "number"),
             (WARM_RATE, "warmup.duration_s", "number"), (WARM_RATE, "warmup.load.rate", "number"),
             (WARM_RATE, "warmup.load.arrival", "string"),
             (WARM_RATE, "warmup.load.smoothness", "number"),
             (WARM_RATE, "warmup.load.max_concurrency", "integer"),
             (TELE, "telemetry", "object"), (TELE, "telemetry.nvml", "bool"),
             (TELE, "telemetry.server_metrics", "bool"),
             (TELE, "telemetry.interval_ms", "integer"),
             (TELE, "telemetry.scrape_timeout_ms", "integer")]
    for base, path, kind in moded:
        for v in wrong[kind]:
            add("%s = %r" % (path, v), with_(path, v, base=base), "wrong_type", path)
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
    for path in ("telemetry.dcgm_urls", "telemetry.metrics_urls"):
        for v in ("http://127.0.0.1:9400/metrics", 1, True, {"url": "http://x"}):
            add("%s = %r" % (path, v), with_(path, v, base=TELE), "wrong_type", path)
    add("telemetry.interval_ms as a string", with_("telemetry", {"interval_ms": "333"}),
        "wrong_type", "telemetry.interval_ms")
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
           ("workers", [0, -1, 257, 1e300]),
           ("workload.block_size", [0, -1, 1000001]),
           ("workload.token_count.discrepancy_pct", [-0.1, 1e7])]
    for path, values in rng:
        for v in values:
            add("%s = %r" % (path, v if not isinstance(v, str) else "%d chars" % len(v)),
                with_(path, v), "out_of_range", path)
    for v in (0, 0.0009, -1, 604800.001, 1e300):
        add("load.duration_s = %r" % v, with_("load.duration_s", v, base=DURATION),
            "out_of_range", "load.duration_s")
    rng2 = [(RATE, "load.rate", [0, 0.0000009, -1, 1000000.001, 1e300]),
            (RATE, "load.max_concurrency", [0, -1, 100001]),
            (RATE, "load.ramp_s", [-0.001, 86400.001]),
            (BASE, "load.ramp_s", [-1, 86401]),
            (BASE, "load.grace_s", [-0.001, 3600.001, 1e300]),
            (GAMMA, "load.smoothness", [0, 0.0009, -1, 1000.001]),
            (TRACE, "load.speedup", [0, 0.0000009, -1, 1000000.1]),
            (TRACE, "load.start_s", [-1, 1000000001]),
            (TRACE, "load.end_s", [-0.5, 1e10]),
            (TRACE, "load.max_concurrency", [0, 100001]),
            (TRACE, "load.requests", [0, 100000001]),
            (CANCEL, "load.cancel.fraction", [-0.1, 1.0001, 2]),
            (CANCEL, "load.cancel.after_s", [0, -1, 3600.001]),
            (with_("load.cancel", {}), "load.cancel.after_s", [-1, 3601]),
            (SESSIONS, "workload.sessions.turns.mean", [0, 0.999, -1, 1000.5]),
            (SESSIONS, "workload.sessions.turns.stddev", [-1, 1001]),
            (SESSIONS, "workload.sessions.think_time_s.mean", [-0.1, 3600.1]),
            (SESSIONS, "workload.sessions.think_time_s.stddev", [-1, 3601]),
            (WARM, "warmup.requests", [0, -1, 100000001]),
            (WARM, "warmup.load.concurrency", [0, 100001]),
            (WARM, "warmup.load.ramp_s", [-1, 86400.5]),
            (WARM_RATE, "warmup.duration_s", [0, 0.0009, 604801]),
            (WARM_RATE, "warmup.load.rate", [0, 1000001]),
            (WARM_RATE, "warmup.load.smoothness", [0, 1001]),
            (WARM_RATE, "warmup.load.max_concurrency", [0, 100001]),
            (TELE, "telemetry.interval_ms", [49, 0, -1, -333, 60001, 1e300]),
            (TELE, "telemetry.scrape_timeout_ms", [9, 0, -1, 60001, 1e300])]
    for base, path, values in rng2:
        for v in values:
            add("%s = %r" % (path, v), with_(path, v, base=base), "out_of_range", path)
    add("trace end_s before start_s", with_("load.start_s", 10, "load.end_s", 5, base=TRACE),
        "out_of_range", "load.end_s", schema=False)
    add("trace end_s equal to start_s", with_("load.start_s", 10, "load.end_s", 10, base=TRACE),
        "out_of_range", "load.end_s", schema=False)
    add("workers > max_concurrency (rate)", with_("load.max_concurrency", 2, "workers", 3,
                                                  base=RATE),
        "out_of_range", "workers", schema=False)
    add("workers > max_concurrency (trace)", with_("load.max_concurrency", 1, "workers", 2,
                                                   base=TRACE),
        "out_of_range", "workers", schema=False)
    add("workers > concurrency", with_("workers", 3), "out_of_range", "workers", schema=False)
    add("workers > default concurrency", with_("workers", 2, "load.concurrency", DEL),
        "out_of_range", "workers", schema=False)
    for path in ("telemetry.dcgm_urls", "telemetry.metrics_urls"):
        add("17 %s" % path, with_(path, URLS + ["http://127.0.0.1:1/metrics"], base=TELE),
            "out_of_range", path)
        add("1000 %s" % path, with_(path, URLS * 62 + URLS[:8], base=TELE), "out_of_range",
            path)
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
    for ep in ("", "Chat", "chat ", "embedding"):
        add("endpoint %r" % ep, with_("target.endpoint", ep), "invalid_value", "target.endpoint")
    for name in ("", "1KEY", "KEY-1", "KEY 1", "K=V", "\u00e9", "KEY\n"):
        add("api_key_env %r" % name, with_("target.api_key_env", name), "invalid_value",
            "target.api_key_env")
    for kind in ("replay", "Trace", "", "synthetic "):
        add("workload.kind %r" % kind, with_("workload.kind", kind), "invalid_value",
            "workload.kind")
    for mode in ("poisson", "Rate", "", "open", "closed"):
        add("load.mode %r" % mode, with_("load.mode", mode), "invalid_value", "load.mode")
    # telemetry URLs: the element is named; a non-string is wrong_type, an
    # over-long URL out_of_range, anything else not a plain http(s) URL invalid_value
    for url in ("", "ftp://h/metrics", "HTTP://h/metrics", "Https://h/metrics", "http//h",
                "http:/h/metrics", "//h/metrics", "localhost:9400/metrics", " http://h",
                "http://h /metrics", "http://h\t/metrics", "http://h/metrics\n",
                "http://h\r\nX: y", "http://" + "a" * 2042, 1, None, True, ["http://h"],
                {"url": "http://h"}):
        label = url if not isinstance(url, str) or len(url) < 100 else "%d chars" % len(url)
        code = ("wrong_type" if not isinstance(url, str) else
                "out_of_range" if len(url) > 2048 else "invalid_value")
        add("telemetry.dcgm_urls[0] %r" % (label,), with_("telemetry.dcgm_urls", [url],
                                                          base=TELE),
            code, "telemetry.dcgm_urls[0]")
        add("telemetry.metrics_urls[2] %r" % (label,),
            with_("telemetry.metrics_urls", URLS[:2] + [url] + URLS[2:5], base=TELE),
            code, "telemetry.metrics_urls[2]")
    for ctl in ("\x01", "\x7f", "\x1b"):
        add("telemetry URL with control %r" % ctl,
            with_("telemetry.dcgm_urls", ["http://h/me" + ctl + "trics"], base=TELE),
            "invalid_value", "telemetry.dcgm_urls[0]")
    add("telemetry: a repeated URL is named", with_("telemetry.metrics_urls",
                                                    [URLS[0], URLS[1], URLS[0]], base=TELE),
        "invalid_value", "telemetry.metrics_urls[2]")
    add("telemetry.dcgm_urls[15] bad", with_("telemetry.dcgm_urls", URLS[:15] + ["gopher://h"],
                                             base=TELE),
        "invalid_value", "telemetry.dcgm_urls[15]")
    add("telemetry: the first bad URL is named", with_("telemetry.dcgm_urls",
                                                       [URLS[0], "x", "y"], base=TELE),
        "invalid_value", "telemetry.dcgm_urls[1]")
    add("telemetry: dcgm_urls are checked before metrics_urls",
        with_("telemetry.dcgm_urls", ["x"], "telemetry.metrics_urls", ["y"], base=TELE),
        "invalid_value", "telemetry.dcgm_urls[0]")

    # --- load modes: what applies where ---------------------------------------------------
    add("rate mode without rate", with_("load.rate", DEL, base=RATE), "missing_field",
        "load.rate")
    add("rate mode, rate null", with_("load.rate", None, base=RATE), "missing_field",
        "load.rate")
    add("rate mode from concurrency", with_("load.mode", "rate", "load.concurrency", DEL),
        "missing_field", "load.rate")
    add("concurrency in rate mode", with_("load.concurrency", 2, base=RATE), "invalid_value",
        "load.concurrency")
    add("concurrency in trace mode", with_("load.concurrency", 2, base=TRACE), "invalid_value",
        "load.concurrency")
    add("rate mode without a limit", with_("load.requests", DEL, base=RATE), "missing_field",
        "load.requests")
    add("rate mode with both limits", with_("load.duration_s", 1, base=RATE), "invalid_value",
        "load.duration_s")
    for path, v in (("load.rate", 5), ("load.arrival", "poisson"), ("load.smoothness", 2),
                    ("load.max_concurrency", 4), ("load.speedup", 1), ("load.start_s", 0),
                    ("load.end_s", 0)):
        add("%s in concurrency mode" % path, with_(path, v), "invalid_value", path)
    add("rate in concurrency mode, wrong type too", with_("load.rate", "fast"), "invalid_value",
        "load.rate")
    add("arrival without mode", with_("load.mode", DEL, "load.arrival", "gamma"),
        "invalid_value", "load.arrival")
    for path, v in (("load.speedup", 2), ("load.start_s", 1), ("load.end_s", 10)):
        add("%s in rate mode" % path, with_(path, v, base=RATE), "invalid_value", path)
    for path, v in (("load.rate", 5), ("load.arrival", "constant"), ("load.smoothness", 1),
                    ("load.ramp_s", 0), ("load.ramp_s", 10)):
        add("%s = %r in trace mode" % (path, v), with_(path, v, base=TRACE), "invalid_value",
            path)
    add("trace mode with both limits", with_("load.requests", 1, "load.duration_s", 1,
                                             base=TRACE), "invalid_value", "load.duration_s")
    for law in ("poisson", "constant", DEL, None):
        add("smoothness with arrival %s" % ("absent" if law is DEL else repr(law)),
            with_("load.arrival", law, "load.smoothness", 2, base=RATE), "invalid_value",
            "load.smoothness")
    for law in ("", "Poisson", "uniform", "exponential"):
        add("arrival %r" % law, with_("load.arrival", law, base=RATE), "invalid_value",
            "load.arrival")
    add("load.mode trace, synthetic workload", with_("load.mode", "trace", "load.concurrency",
                                                     DEL), "invalid_value", "load.mode")
    add("load.mode trace, no workload", with_("workload", DEL, "load", {"mode": "trace"}),
        "invalid_value", "load.mode")
    add("workload.kind trace, concurrency mode",
        with_("load", copy.deepcopy(BASE["load"]), base=TRACE), "invalid_value", "load.mode")
    add("workload.kind trace, rate mode", with_("load", copy.deepcopy(RATE["load"]), base=TRACE),
        "invalid_value", "load.mode")
    add("workload.kind trace without a trace", with_("workload.trace", DEL, base=TRACE),
        "missing_field", "workload.trace")
    add("workload.kind trace, trace null", with_("workload.trace", None, base=TRACE),
        "missing_field", "workload.trace")
    add("a trace with a synthetic workload", with_("workload.trace", TRACE_TEXT),
        "invalid_value", "workload.trace")
    add("a trace with workload.kind defaulted", with_("workload", {"trace": TRACE_TEXT}),
        "invalid_value", "workload.trace")
    add("sessions in a trace replay", with_("workload.sessions", {"turns": {"mean": 2}},
                                            base=TRACE), "invalid_value", "workload.sessions")

    # --- trace text: the message names the line ------------------------------------------------
    bad_lines = [
        ("not JSON", "{nope"), ("an array", "[1, 2]"), ("a number", "42"),
        ("no timestamp", '{"input_length": 1, "output_length": 1}'),
        ("timestamp string", '{"timestamp": "0", "input_length": 1, "output_length": 1}'),
        ("negative timestamp", '{"timestamp": -1, "input_length": 1, "output_length": 1}'),
        ("no input_length", '{"timestamp": 0, "output_length": 1}'),
        ("input_length 0", '{"timestamp": 0, "input_length": 0, "output_length": 1}'),
        ("input_length real", '{"timestamp": 0, "input_length": 1.5, "output_length": 1}'),
        ("input_length whole real", '{"timestamp": 0, "input_length": 5.0, "output_length": 1}'),
        ("input_length too big", '{"timestamp": 0, "input_length": 1000001, "output_length": 1}'),
        ("no output_length", '{"timestamp": 0, "input_length": 1}'),
        ("output_length string", '{"timestamp": 0, "input_length": 1, "output_length": "1"}'),
        ("output_length too big", '{"timestamp": 0, "input_length": 1, "output_length": 1000001}'),
        ("hash_ids object", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                            '"hash_ids": {}}'),
        ("hash_ids negative", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                              '"hash_ids": [1, -2]}'),
        ("hash_ids strings", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                             '"hash_ids": ["a"]}'),
        ("session_id bool", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                            '"session_id": true}'),
        ("session_id empty", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                             '"session_id": ""}'),
        ("session_id too long", '{"timestamp": 0, "input_length": 1, "output_length": 1, '
                                '"session_id": "%s"}' % ("s" * 257)),
        ("duplicate key", '{"timestamp": 0, "timestamp": 1, "input_length": 1, '
                          '"output_length": 1}'),
    ]
    for what, line in bad_lines:
        add("trace line 3: %s" % what, trace_with(TRACE_OK, TRACE_OK, line, TRACE_OK),
            "invalid_value", "workload.trace", schema=False, message="line 3")
    add("trace: a bad line after blank ones (blank lines count)",
        trace_with(TRACE_OK, "", "  \t", "", "{bad"), "invalid_value", "workload.trace",
        schema=False, message="line 5")
    add("trace: 100001 hash_ids on line 1",
        trace_with('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [%s]}'
                   % ",".join(["1"] * 100001)), "invalid_value", "workload.trace",
        schema=False, message="line 1")
    for text in ("", "\n", "   \n\t\n\r\n"):
        add("trace without entries %r" % text, with_("workload.trace", text, base=TRACE),
            "invalid_value", "workload.trace", schema=False)

    # --- cancellation and sessions ---------------------------------------------------------------
    add("cancel fraction without after_s", with_("load.cancel.after_s", DEL, base=CANCEL),
        "missing_field", "load.cancel.after_s")
    add("cancel fraction, after_s null", with_("load.cancel.after_s", None, base=CANCEL),
        "missing_field", "load.cancel.after_s")
    add("cancel fraction 1 without after_s", with_("load.cancel", {"fraction": 1}, base=RATE),
        "missing_field", "load.cancel.after_s")
    add("sessions without turns", with_("workload.sessions.turns", DEL, base=SESSIONS),
        "missing_field", "workload.sessions.turns")
    add("sessions, turns null", with_("workload.sessions.turns", None, base=SESSIONS),
        "missing_field", "workload.sessions.turns")
    add("sessions empty", with_("workload.sessions", {}), "missing_field",
        "workload.sessions.turns")
    add("sessions without turns.mean", with_("workload.sessions.turns", {"stddev": 1},
                                             base=SESSIONS),
        "missing_field", "workload.sessions.turns.mean")

    # --- warm-up ---------------------------------------------------------------------------------
    add("warmup with both limits", with_("warmup.duration_s", 1, base=WARM), "invalid_value",
        "warmup.duration_s")
    add("warmup with both limits, no load", with_("warmup", {"requests": 1, "duration_s": 1}),
        "invalid_value", "warmup.duration_s")
    add("warmup without a limit", with_("warmup.requests", DEL, base=WARM), "missing_field",
        "warmup.requests")
    add("warmup empty", with_("warmup", {}), "missing_field", "warmup.requests")
    add("warmup limits null", with_("warmup", {"requests": None, "duration_s": None}),
        "missing_field", "warmup.requests")
    add("warmup replaying a trace", with_("warmup.load", {"mode": "trace"}, base=WARM),
        "invalid_value", "warmup.load.mode")
    add("warmup of a trace run replaying it", with_("warmup", {"requests": 1, "load":
                                                               {"mode": "trace"}}, base=TRACE),
        "invalid_value", "warmup.load.mode")
    add("warmup mode 'poisson'", with_("warmup.load.mode", "poisson", base=WARM),
        "invalid_value", "warmup.load.mode")
    add("rate warmup of a concurrency run without rate",
        with_("warmup.load", {"mode": "rate"}, base=WARM), "missing_field", "warmup.load.rate")
    add("rate warmup of a trace run without rate",
        with_("warmup", {"requests": 1, "load": {"mode": "rate"}}, base=TRACE),
        "missing_field", "warmup.load.rate")
    add("warmup concurrency in rate mode", with_("warmup.load.concurrency", 2, base=WARM_RATE),
        "invalid_value", "warmup.load.concurrency")
    add("warmup inherits rate mode: no concurrency",
        with_("warmup", {"requests": 2, "load": {"concurrency": 2}}, base=RATE),
        "invalid_value", "warmup.load.concurrency")
    add("warmup inherits concurrency mode: no rate",
        with_("warmup", {"requests": 2, "load": {"rate": 2}}), "invalid_value",
        "warmup.load.rate")
    add("warmup of a trace run defaults to concurrency: no rate",
        with_("warmup", {"requests": 2, "load": {"rate": 2}}, base=TRACE), "invalid_value",
        "warmup.load.rate")
    for path, v in (("warmup.load.rate", 1), ("warmup.load.arrival", "constant"),
                    ("warmup.load.smoothness", 1), ("warmup.load.max_concurrency", 1)):
        add("%s in a concurrency warmup" % path, with_(path, v, base=WARM), "invalid_value",
            path)
    add("warmup smoothness, inherited poisson",
        with_("warmup", {"requests": 2, "load": {"smoothness": 2}}, base=RATE),
        "invalid_value", "warmup.load.smoothness")
    add("warmup smoothness, own poisson over inherited gamma",
        with_("warmup", {"requests": 2, "load": {"arrival": "poisson", "smoothness": 2}},
              base=GAMMA), "invalid_value", "warmup.load.smoothness")
    add("warmup smoothness, default poisson in a concurrency run",
        with_("warmup.load.arrival", DEL, base=WARM_RATE), "invalid_value",
        "warmup.load.smoothness")
    add("warmup arrival 'uniform'", with_("warmup.load.arrival", "uniform", base=WARM_RATE),
        "invalid_value", "warmup.load.arrival")
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
                               "target.model", "m" * 256,
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

        # --- concurrency mode's new fields
        ("concurrency ramp, grace, cancel bounds",
         with_("load.ramp_s", 86400, "load.grace_s", 3600,
               "load.cancel", {"fraction": 1, "after_s": 3600})),
        ("concurrency lower bounds of the new fields",
         with_("load.ramp_s", 0, "load.grace_s", 0, "load.cancel", {"fraction": 0.0001,
                                                                    "after_s": 0.000001})),
        ("cancel none, after_s alone", with_("load.cancel", {"after_s": 5})),
        ("cancel fraction 0 without after_s", with_("load.cancel", {"fraction": 0})),
        ("cancel nulls", with_("load.cancel", {"fraction": None, "after_s": None})),
        ("sessions", SESSIONS),
        ("sessions, turns only", with_("workload.sessions", {"turns": {"mean": 1}})),
        ("sessions upper bounds", with_("workload.sessions",
                                        {"turns": {"mean": 1000, "stddev": 1000},
                                         "think_time_s": {"mean": 3600, "stddev": 3600}})),
        ("sessions nulls", with_("workload.sessions", {"turns": {"mean": 1.5, "stddev": None},
                                                       "think_time_s": None})),
        ("sessions null", with_("workload.sessions", None)),
        ("sessions in rate mode", with_("workload.sessions", {"turns": {"mean": 3}},
                                        base=RATE)),
        ("fields of other modes null", with_("load.rate", None, "load.arrival", None,
                                             "load.smoothness", None,
                                             "load.max_concurrency", None, "load.speedup", None,
                                             "load.start_s", None, "load.end_s", None)),

        # --- rate mode
        ("rate", RATE),
        ("rate, gamma", GAMMA),
        ("rate lower bounds", with_("load", {"mode": "rate", "rate": 0.000001,
                                             "arrival": "gamma", "smoothness": 0.001,
                                             "max_concurrency": 1, "ramp_s": 0,
                                             "requests": 1, "grace_s": 0}, base=RATE)),
        ("rate upper bounds", with_("load", {"mode": "rate", "rate": 1000000,
                                             "arrival": "gamma", "smoothness": 1000,
                                             "max_concurrency": 100000, "ramp_s": 86400,
                                             "duration_s": 604800, "grace_s": 3600,
                                             "cancel": {"fraction": 1, "after_s": 3600}},
                                    "workers", 256, base=RATE)),
        ("rate constant, duration", with_("load", {"mode": "rate", "rate": 3.5,
                                                   "arrival": "constant", "duration_s": 0.001})),
        ("rate, workers = max_concurrency", with_("load.max_concurrency", 3, "workers", 3,
                                                  base=RATE)),
        ("rate, no workers given", with_("workers", DEL, base=RATE)),
        ("rate, every optional field null",
         with_("load", {"mode": "rate", "rate": 2, "concurrency": None, "arrival": None,
                        "smoothness": None, "max_concurrency": None, "ramp_s": None,
                        "requests": None, "duration_s": 1, "grace_s": None, "cancel": None,
                        "speedup": None, "start_s": None, "end_s": None}, base=RATE)),

        # --- trace mode
        ("trace", TRACE),
        ("trace, every field", with_("load", {"mode": "trace", "max_concurrency": 1,
                                              "requests": 2, "grace_s": 1,
                                              "cancel": {"fraction": 0.5, "after_s": 1},
                                              "speedup": 0.000001, "start_s": 0,
                                              "end_s": 1000000000}, base=TRACE)),
        ("trace upper bounds", with_("load", {"mode": "trace", "max_concurrency": 100000,
                                              "duration_s": 604800, "speedup": 1000000,
                                              "start_s": 1000000000, "end_s": 0},
                                     "workers", 256, base=TRACE)),
        ("trace, nulls", with_("load", {"mode": "trace", "concurrency": None, "rate": None,
                                        "arrival": None, "smoothness": None, "ramp_s": None,
                                        "requests": None, "duration_s": None,
                                        "max_concurrency": None, "speedup": None,
                                        "start_s": None, "end_s": None},
                               "workload.sessions", None, base=TRACE)),
        ("trace text: blank lines, CRLF, unordered, extra fields, big ids",
         with_("workload.trace",
               "\n\r\n" + TRACE_OK + "\r\n\n"
               '{"timestamp": 1e6, "input_length": 1000000, "output_length": 1000000, '
               '"hash_ids": [], "session_id": "%s", "extra": [1]}\n'
               '{"timestamp": 0.5, "input_length": 2, "output_length": 3, '
               '"hash_ids": [0, 9007199254740991], "session_id": -4, "session": null}\n'
               '{"timestamp": 3, "input_length": 2, "output_length": 3, "hash_ids": null, '
               '"session_id": null}' % ("s" * 256), base=TRACE)),
        ("trace text without a final newline", with_("workload.trace", TRACE_OK, base=TRACE)),
        ("trace with 100000 hash_ids",
         trace_with('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [%s]}'
                    % ",".join(["7"] * 100000))),

        # --- warm-up
        ("warmup, concurrency", WARM),
        ("warmup, rate in a concurrency run", WARM_RATE),
        ("warmup inherits everything", with_("warmup", {"requests": 1})),
        ("warmup inherits rate and gamma", with_("warmup", {"duration_s": 2}, base=GAMMA)),
        ("warmup inherits gamma, own smoothness",
         with_("warmup", {"requests": 3, "load": {"smoothness": 0.5, "rate": 1}}, base=GAMMA)),
        ("warmup explicit rate inherits gamma",
         with_("warmup", {"requests": 3, "load": {"mode": "rate", "smoothness": 9}},
               base=GAMMA)),
        ("warmup gamma over inherited poisson",
         with_("warmup", {"requests": 3, "load": {"arrival": "gamma", "smoothness": 9}},
               base=RATE)),
        ("warmup concurrency in a rate run",
         with_("warmup", {"requests": 3, "load": {"mode": "concurrency", "concurrency": 5,
                                                  "ramp_s": 1}}, base=RATE)),
        ("warmup of a trace run", with_("warmup", {"requests": 3}, base=TRACE)),
        ("warmup of a trace run, rate",
         with_("warmup", {"duration_s": 3, "load": {"mode": "rate", "rate": 4,
                                                    "max_concurrency": 2}}, base=TRACE)),
        ("warmup bounds", with_("warmup", {"requests": 100000000,
                                           "load": {"concurrency": 100000, "ramp_s": 86400}})),
        ("warmup duration bounds", with_("warmup", {"duration_s": 0.001, "load": {
            "mode": "rate", "rate": 1000000, "arrival": "gamma", "smoothness": 1000,
            "max_concurrency": 100000, "ramp_s": 0}})),
        ("warmup duration upper bound", with_("warmup", {"duration_s": 604800, "load": {
            "mode": "rate", "rate": 0.000001, "arrival": "constant", "max_concurrency": 1}})),
        ("warmup nulls", with_("warmup", {"requests": 1, "duration_s": None, "load": {
            "mode": None, "concurrency": None, "rate": None, "arrival": None,
            "smoothness": None, "max_concurrency": None, "ramp_s": None}})),
        ("warmup load null", with_("warmup", {"requests": 1, "load": None})),
        ("warmup null", with_("warmup", None)),

        # --- telemetry
        ("telemetry", TELE),
        ("telemetry empty", with_("telemetry", {})),
        ("telemetry null", with_("telemetry", None)),
        ("telemetry nulls", with_("telemetry", {"nvml": None, "interval_ms": None,
                                                "scrape_timeout_ms": None, "dcgm_urls": None,
                                                "server_metrics": None, "metrics_urls": None})),
        ("telemetry lower bounds", with_("telemetry", {
            "nvml": False, "interval_ms": 50, "scrape_timeout_ms": 10, "dcgm_urls": [],
            "server_metrics": False, "metrics_urls": []})),
        ("telemetry upper bounds", with_("telemetry", {
            "nvml": True, "interval_ms": 60000, "scrape_timeout_ms": 60000,
            "dcgm_urls": URLS[:15] + ["https://" + "d" * 2040],
            "server_metrics": True, "metrics_urls": ["http://" + "m" * 2041] + URLS[1:]})),
        ("telemetry whole reals", with_("telemetry", {"interval_ms": 250.0,
                                                      "scrape_timeout_ms": 1e3})),
        ("telemetry URLs: any host, port, path, query", with_("telemetry", {
            "dcgm_urls": ["http://[::1]:9400/metrics", "https://gpu-7.example/dcgm?x=1&y=%20",
                          "http://h/\u00e9", "http://h/\u00e9/2"],
            "metrics_urls": ["http://router:8080/metrics#frag", "http://a"]})),
        ("telemetry in a rate run", with_("telemetry", {"interval_ms": 1000}, base=RATE)),
        ("telemetry in a trace run", with_("telemetry", {"dcgm_urls": []}, base=TRACE)),
    ]
    return out


def normalised_expectations():
    """label -> (dotted path in the stored spec, expected value): the defaults
    the server fills in (lib/spec.c)."""
    return {
        "base": [("load.ramp_s", 0), ("load.grace_s", 30),
                 ("load.cancel", {"fraction": 0, "after_s": 0}), ("absent", "warmup"),
                 ("absent", "load.rate"), ("absent", "load.speedup"),
                 ("absent", "workload.sessions"), ("absent", "workload.trace"),
                 ("telemetry", DEFAULT_TELEMETRY)],
        "rate": [("load.arrival", "poisson"), ("absent", "load.smoothness"),
                 ("absent", "load.concurrency"), ("absent", "load.max_concurrency"),
                 ("load.ramp_s", 0), ("absent", "load.speedup"), ("workers", 1)],
        "rate, gamma": [("load.smoothness", 2)],
        "rate, no workers given": [("workers", 4)],  # --default-workers, no ceiling
        "rate, every optional field null": [("load", {
            "mode": "rate", "rate": 2, "arrival": "poisson", "ramp_s": 0, "duration_s": 1,
            "grace_s": 30, "cancel": {"fraction": 0, "after_s": 0}})],
        "trace": [("load", {"mode": "trace", "grace_s": 30,
                            "cancel": {"fraction": 0, "after_s": 0},
                            "speedup": 1, "start_s": 0, "end_s": 0}),
                  ("workload.trace", TRACE_TEXT), ("workload.kind", "trace")],
        "trace, nulls": [("load", {"mode": "trace", "grace_s": 30,
                                   "cancel": {"fraction": 0, "after_s": 0},
                                   "speedup": 1, "start_s": 0, "end_s": 0}),
                         ("absent", "workload.sessions")],
        "sessions, turns only": [("workload.sessions", {
            "turns": {"mean": 1, "stddev": 0}, "think_time_s": {"mean": 0, "stddev": 0}})],
        "sessions null": [("absent", "workload.sessions")],
        "cancel nulls": [("load.cancel", {"fraction": 0, "after_s": 0})],
        "warmup inherits everything": [("warmup", {"requests": 1, "load": {
            "mode": "concurrency", "concurrency": 2, "ramp_s": 0}})],
        "warmup inherits rate and gamma": [("warmup", {"duration_s": 2, "load": {
            "mode": "rate", "rate": 10, "arrival": "gamma", "smoothness": 2, "ramp_s": 0}})],
        "warmup inherits gamma, own smoothness": [("warmup.load", {
            "mode": "rate", "rate": 1, "arrival": "gamma", "smoothness": 0.5, "ramp_s": 0})],
        "warmup gamma over inherited poisson": [("warmup.load.smoothness", 9),
                                                ("warmup.load.rate", 10)],
        "warmup concurrency in a rate run": [("warmup.load", {
            "mode": "concurrency", "concurrency": 5, "ramp_s": 1})],
        "warmup, rate in a concurrency run": [("warmup.load", {
            "mode": "rate", "rate": 5, "arrival": "gamma", "smoothness": 2, "ramp_s": 0})],
        "warmup of a trace run": [("warmup.load", {"mode": "concurrency", "concurrency": 1,
                                                   "ramp_s": 0})],
        "warmup of a trace run, rate": [("warmup.load", {
            "mode": "rate", "rate": 4, "arrival": "poisson", "max_concurrency": 2,
            "ramp_s": 0})],
        "warmup load null": [("warmup.load", {"mode": "concurrency", "concurrency": 2,
                                              "ramp_s": 0})],
        "warmup null": [("absent", "warmup")],
        "telemetry": [("telemetry", TELE["telemetry"])],
        "telemetry empty": [("telemetry", DEFAULT_TELEMETRY)],
        "telemetry null": [("telemetry", DEFAULT_TELEMETRY)],
        "telemetry nulls": [("telemetry", DEFAULT_TELEMETRY)],
        "telemetry lower bounds": [("telemetry", {
            "nvml": False, "interval_ms": 50, "scrape_timeout_ms": 10, "dcgm_urls": [],
            "server_metrics": False, "metrics_urls": []})],
        "telemetry upper bounds": [("telemetry.dcgm_urls", URLS[:15] + ["https://" + "d" * 2040]),
                                   ("telemetry.metrics_urls", ["http://" + "m" * 2041] + URLS[1:]),
                                   ("telemetry.interval_ms", 60000),
                                   ("telemetry.scrape_timeout_ms", 60000)],
        "telemetry whole reals": [("telemetry", dict(DEFAULT_TELEMETRY, interval_ms=250,
                                                     scrape_timeout_ms=1000))],
        "telemetry in a rate run": [("telemetry", dict(DEFAULT_TELEMETRY, interval_ms=1000))],
        "telemetry in a trace run": [("telemetry", dict(DEFAULT_TELEMETRY, dcgm_urls=[]))],
    }


def dig(doc, path):
    """The value at a dotted path, or DEL when it is absent."""
    node = doc
    for k in path.split("."):
        if not isinstance(node, dict) or k not in node:
            return DEL
        node = node[k]
    return node


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
        cls.doc_examples = [("api/openapi.yaml RunSpec example %d" % i, ex) for i, ex in
                            enumerate(doc["components"]["schemas"]["RunSpec"]["examples"])]
        tele = doc["components"]["schemas"]["RunSpec"]["properties"]["telemetry"]
        cls.telemetry_defaults = {k: v["default"] for k, v in tele["properties"].items()}
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
        for label, body, code, field, schema_can_tell, message in spec_cases():
            with self.subTest(label):
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                st, resp, _ = self.post_spec(raw, label)
                self.assertEqual(st, 400, "%s: %r" % (label, resp))
                self.expect_error(st, resp, code, field, label)
                if message is not None:
                    self.assertIn(message, resp["error"]["message"], label)
                if schema_can_tell and isinstance(body, dict):
                    self.assertFalse(self.schema.is_valid(body),
                                     "%s: api/openapi.yaml's RunSpec accepts it" % label)
        self.alive()

    def test_bad_specs_other_content_types(self):
        """A body that is not said to be application/json is refused (415)
        before it is read (a browser form can send the others cross-site);
        application/json with parameters is JSON."""
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                      "application/jsonx", None):
            headers = {"Content-Type": ctype} if ctype else {}
            st, resp, _ = self.request("POST", "/api/v1/runs", body=b"name=x", headers=headers)
            self.assertEqual(st, 415, str(ctype))
            self.expect_error(st, resp, "unsupported_media_type", None, str(ctype))
        st, resp, _ = self.request("POST", "/api/v1/runs", body=b"name=x",
                                   headers={"Content-Type": "Application/JSON; charset=utf-8"})
        self.assertEqual(st, 400)
        self.expect_error(st, resp, "invalid_json", None, "json with charset")

    def test_valid_boundaries(self):
        expect = normalised_expectations()
        labels = [label for label, _ in valid_specs()]
        self.assertEqual(sorted(set(expect) - set(labels)), [], "expectations without a spec")
        for label, spec in valid_specs() + self.doc_examples:
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
                                                     "seed": 0, "ignore_eos": False,
                                                     "block_size": 512,
                                                     "token_count": {"isl": "usage",
                                                                     "osl": "usage",
                                                                     "discrepancy_pct": 10}})
                    self.assertEqual(n["target"]["max_tokens_field"], "max_tokens")
                    self.assertNotIn("api_key_secret", n["target"])
                    self.assertNotIn("goodput", n)
                    self.assertEqual(n["load"], {"mode": "concurrency", "concurrency": 1,
                                                 "requests": 1, "ramp_s": 0, "grace_s": 30,
                                                 "cancel": {"fraction": 0, "after_s": 0}})
                    self.assertEqual(n["workers"], 1)
                    self.assertNotIn("warmup", n)
                    self.assertEqual(n["telemetry"], DEFAULT_TELEMETRY)
                if label == "telemetry empty":
                    # the document's defaults are the server's
                    self.assertEqual(run["spec"]["telemetry"], self.telemetry_defaults)
                for path, want in expect.get(label, []):
                    if path == "absent":
                        self.assertIs(dig(run["spec"], want), DEL,
                                      "%s: %s should be absent" % (label, want))
                    else:
                        self.assertEqual(dig(run["spec"], path), want, "%s: %s" % (label, path))
                # the normalised spec is a RunSpec too
                self.assertEqual([e.message[:200] for e in self.schema.iter_errors(run["spec"])],
                                 [], "%s: the stored spec is not a valid RunSpec" % label)
                # stop it (it may already have failed: the worker is a stand-in)
                st, _, _ = self.request("POST", resp["url"] + "/cancel")
                self.assertIn(st, (202, 409))

    def test_too_large_content_length(self):
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n")
        st, body = self.upload(head % (MAX_BODY + 1), [b" " * 65536] * 16 + [b" "])
        self.assertEqual(st, 413, body)
        self.expect_error(st, body, "body_too_large", None, "1 MiB + 1, accurate length")
        # announced, never sent: answered from the headers alone
        st, body = self.upload(head % (1 << 40), [])
        self.assertEqual(st, 413, body)
        self.expect_error(st, body, "body_too_large", None, "1 TiB announced")
        # any route
        st, body = self.upload(b"GET /api/v1/healthz HTTP/1.1\r\nHost: localhost\r\n"
                               b"Content-Length: %d\r\n\r\n" % (2 * MAX_BODY), [])
        self.assertEqual(st, 413, body)
        # exactly 1 MiB is accepted as a body (and is not JSON)
        st, body = self.upload(head % MAX_BODY, [b" " * 65536] * 16)
        self.assertEqual(st, 400, body)
        self.expect_error(st, body, "invalid_json", None, "exactly 1 MiB")
        self.alive()

    def test_too_large_chunked(self):
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
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
                                   ("GET", "/records?format=csv"), ("GET", "/telemetry"),
                                   ("GET", "/telemetry?format=csv"), ("POST", "/cancel")):
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
                ("/api/v1/runs/%FF", "DELETE", 404, "id"),
                ("/api/v1/runs/%FF", "PUT", 405, None),
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
                ("PUT", "/api/v1/runs/1", 405, "method_not_allowed", None),
                ("PATCH", "/api/v1/runs", 405, "method_not_allowed", None),
                ("PUT", "/api/v1/healthz", 405, "method_not_allowed", None),
                ("GET", "/api/v1/runs/1/cancel", 405, "method_not_allowed", None),
                ("POST", "/api/v1/runs/1/records", 405, "method_not_allowed", None),
                ("POST", "/api/v1/runs/1/telemetry", 405, "method_not_allowed", None),
                ("DELETE", "/api/v1/runs/1/telemetry/", 405, "method_not_allowed", None),
                ("GET", "/api/v1/runs/1/telemetry/x", 404, "not_found", None),
                ("GET", "/api/v1/runs/1/telemetrics", 404, "not_found", None),
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
        for v in ("jsonl", "JSON", "", "xml", "csv ", "prometheus"):
            cases.append(("/api/v1/runs/999999/telemetry?format=" + urllib.parse.quote(v),
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
