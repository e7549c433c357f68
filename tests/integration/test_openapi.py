#!/usr/bin/env python3
"""test_openapi.py - keeps api/openapi.yaml true.

1. Route coverage: `headroomd --list-routes` and the document's paths must
   name the same (method, path) pairs, both ways; the document is checked
   for well-formedness (every $ref resolves, every schema is a valid JSON
   Schema 2020-12) and its bounds against lib/hrlimits.h.
2. Response validation: the real headroomd (and headroom-mock) are driven
   over real sockets through every route, and every answer is checked
   against the document: its status must be documented for its route, its
   Content-Type must be a documented media type, its documented headers
   must be present and valid, and its body must validate against the
   documented schema (JSON bodies; each JSONL line against RecordRow; CSV
   headers against the documented columns).

Telemetry (RunSpec.telemetry, Summary.telemetry, GET /runs/{id}/telemetry
as JSON and CSV) is checked on every run these tests make, and the JSON
and CSV exports are checked to agree with each other and with the
summary.

The client verdict (RunSpec.client, target.mock, Summary.client, GET
/runs/{id}/client as JSON and CSV) is checked on every run too: the
export's two formats against each other and the verdict's per-worker
figures against the samples they come from; the summary CSV's client rows
against the headline.

The response tests are split by what they need:

- ApiSurfaceTest runs headroomd with a stand-in worker program that says
  hello and then only heartbeats (never ready), so a run stays `running` in
  its starting phase until cancelled, however long the test takes, and the
  runs after it stay `queued`. It exercises every
  route and every error without depending on headroom-worker.
- HistorySurfaceTest does the same for the run history (docs/compare.md):
  with one run kept `running` by the stand-in worker and the others
  queued behind it, GET /runs with every filter, label selector, sort and
  page (cursor and before), PATCH and DELETE of runs, repeat groups
  (POST with `repeat`, GET /groups/{id}), the spec's `validity` and
  `gates` as normalised and refused, baselines (PUT, GET, list, DELETE),
  and every 4xx of GET /compare and GET /series.
- FinishedRunTest runs headroomd with the real headroom-worker against the
  zero-delay mock: a run that succeeds (summary with real numbers, records
  JSONL/CSV), a long run that is cancelled while running with a second
  one queued behind it, a rate-mode run (constant arrivals: requested
  versus achieved load, schedule lag), a run with a warm-up (progress
  phases, warm-up records apart from the profiling ones), and the history
  over finished runs (a mock with some delay of its own): validity, gates
  and intervals in summaries, a group's spread, baselines of each kind and
  regression gates against them, comparisons at the request and the run
  level, series, metric sorts, deletion. It needs a functional
  headroom-worker, with rate mode and warm-up. Its daemon is pointed at an
  NVML library that does not exist, so NVML is always `unavailable` there.
- TelemetryRunTest runs headroomd with the fake NVML library
  (build/tests/fake_nvml, two GPUs) against the mock with its DCGM-like
  page: a concurrency run whose summary has non-empty telemetry series of
  every kind (NVML, DCGM, the server's /metrics), checked against the raw
  samples of the export, and a run whose every source is unavailable.
  It needs a functional headroom-worker (concurrency mode only).
- CalibrationTest runs a one-point calibration (POST, poll, list), then a
  run with target.mock whose summary carries the calibrated ceiling. It
  needs a functional headroom-worker and headroom-mock beside headroomd.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_openapi.py
"""
import csv
import io
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
import unittest
import http.client
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402
import yaml  # noqa: E402
from jsonschema import Draft202012Validator, FormatChecker, RefResolver  # noqa: E402
from jsonschema.exceptions import best_match  # noqa: E402


def jsonschema_best(context):
    """The deepest error among a oneOf/anyOf failure's branch errors, or None."""
    return best_match(context) if context else None


DOC_PATH = os.path.join(hrtest.SRC, "api", "openapi.yaml")
LIMITS_H = os.path.join(hrtest.SRC, "lib", "hrlimits.h")
HEADROOMD = os.path.join(hrtest.BIN, "headroomd")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_BODY = 1 << 20
# the normalised spec's telemetry when the spec gives none (lib/spec.c)
# The stand-in worker: hello, then a heartbeat a second (which keeps the
# daemon from declaring it silent), whatever the daemon says.
STUB_WORKER = """#!{python}
import json, sys, time, zmq
ep = sys.argv[sys.argv.index("--connect") + 1]
idx = sys.argv[sys.argv.index("--index") + 1]
s = zmq.Context().socket(zmq.DEALER)
s.setsockopt(zmq.ROUTING_ID, ("w" + idx).encode())
s.connect(ep)
s.send_multipart([bytes([2, 1]), json.dumps({{"index": int(idx), "pid": 1, "protocol": 2,
                  "version": "stub", "mono_ns": 1, "wall_ns": 1}}).encode()])
while True:
    time.sleep(1)
    s.send_multipart([bytes([2, 5]), b"{{}}"])
"""

DEFAULT_TELEMETRY = {"nvml": True, "interval_ms": 333, "scrape_timeout_ms": 1000,
                     "dcgm_urls": ["http://localhost:9400/metrics",
                                   "http://localhost:9401/metrics"],
                     "server_metrics": True, "metrics_urls": []}
FAKE_NVML = os.path.join(hrtest.BIN, "..", "tests", "fake_nvml", "libnvidia-ml.so.1")
# the normalised spec's client section when the spec gives none (lib/spec.c)
DEFAULT_CLIENT = {"allow_client_bound": False, "max_loop_busy": 0.9, "max_busy_share": 0.2,
                  "max_lag_ms": 10}


def load_doc():
    with open(DOC_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


class Doc:
    """The OpenAPI document, with lookups by (method, concrete path, status)."""

    def __init__(self, doc):
        self.doc = doc
        self.resolver = RefResolver.from_schema(doc)
        self.seen = set()  # (template, method, status) validated so far

    def pointer(self, ref):
        if not ref.startswith("#/"):
            raise AssertionError("only local $refs are used: %s" % ref)
        node = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[part]
        return node

    def deref(self, obj):
        """Follows an OpenAPI-level {"$ref": ...} (response, parameter, header)."""
        while isinstance(obj, dict) and "$ref" in obj:
            obj = self.pointer(obj["$ref"])
        return obj

    def validate(self, schema, instance, what):
        v = Draft202012Validator(schema, resolver=self.resolver, format_checker=FormatChecker())
        errors = sorted(v.iter_errors(instance), key=lambda e: list(e.path))
        if errors:
            # a oneOf/anyOf failure says little by itself: name the deepest
            # error of its best-matching branch too
            msgs = ["%s at %s: %s%s" % (what, "/".join(str(p) for p in e.path) or "(root)",
                                        e.message[:300],
                                        " [%s: %s]" % ("/".join(str(p) for p in best.path),
                                                       best.message[:300])
                                        if (best := jsonschema_best(e.context)) else "")
                    for e in errors[:5]]
            raise AssertionError("\n".join(msgs) + "\ninstance: %s" % json.dumps(instance)[:2000])

    def schema(self, name):
        return {"$ref": "#/components/schemas/" + name}

    def match_path(self, path):
        """The templates matching a concrete path, the way server/api.c matches."""
        path = path.split("?", 1)[0]
        if path.endswith("/") and len(path) > 1:
            path = path[:-1]  # one trailing slash is tolerated
        segs = path.split("/")
        out = []
        for tpl in self.doc["paths"]:
            tsegs = tpl.split("/")
            if len(tsegs) != len(segs):
                continue
            if all(t == s or (t.startswith("{") and s != "") for t, s in zip(tsegs, segs)):
                out.append(tpl)
        return out

    def operation(self, method, path):
        """(template, operation) or (template, None) when the path is known but the
        method is not, or (None, None)."""
        tpls = self.match_path(path)
        for tpl in tpls:
            op = self.doc["paths"][tpl].get(method.lower())
            if op:
                return tpl, op
        return (tpls[0] if tpls else None), None

    def parameters(self, tpl, op):
        params = [self.deref(p) for p in self.doc["paths"][tpl].get("parameters", [])]
        params += [self.deref(p) for p in op.get("parameters", [])]
        return params

    def check(self, method, path, status, headers, body):
        """Checks one answer against the document; returns the parsed body.

        body: bytes. headers: a message object (get() by name)."""
        tpl, op = self.operation(method, path)
        if tpl is None:
            if status != 404:
                raise AssertionError("%s %s: unknown path answered %d, not 404"
                                     % (method, path, status))
            resp = self.deref({"$ref": "#/components/responses/NotFound"})
            key = ("(unknown)", method, status)
        elif op is None:
            if status not in (405, 413):
                raise AssertionError("%s %s: method not in the document for %s, but the "
                                     "server answered %d" % (method, path, tpl, status))
            resp = self.deref({"$ref": "#/components/responses/%s" %
                               ("MethodNotAllowed" if status == 405 else "TooLarge")})
            key = (tpl, method, status)
        else:
            # every query parameter used must be documented for the operation
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query,
                                          keep_blank_values=True)
            params = [p for p in self.parameters(tpl, op) if p["in"] == "query"]
            documented = {p["name"] for p in params}
            # free-form parameters (style form, explode, an object: the label
            # selectors `label.KEY=VALUE`) document every name their
            # propertyNames pattern matches
            patterns = [p["schema"]["propertyNames"]["pattern"] for p in params
                        if p.get("style") == "form" and p.get("explode")
                        and p["schema"].get("type") == "object"]
            for q in query:
                if q not in documented and not any(re.search(pt, q) for pt in patterns):
                    raise AssertionError("%s %s: query parameter %r is not documented"
                                         % (method, tpl, q))
            responses = op["responses"]
            if str(status) not in responses:
                raise AssertionError("%s %s answered %d, which the document does not list "
                                     "(it lists %s); body: %r"
                                     % (method, tpl, status, sorted(responses), body[:300]))
            resp = self.deref(responses[str(status)])
            key = (tpl, method, status)
        self.seen.add(key)
        what = "%s %s -> %d" % (method, key[0], status)
        for name, h in (resp.get("headers") or {}).items():
            h = self.deref(h)
            value = headers.get(name)
            if value is None:
                raise AssertionError("%s: documented header %s is missing" % (what, name))
            self.validate(h["schema"], value, "%s header %s" % (what, name))
        content = resp.get("content") or {}
        ctype = headers.get("Content-Type") or ""
        media = ctype.split(";")[0].strip().lower()
        if not content:  # (204): nothing
            if body:
                raise AssertionError("%s: a body where the document has none: %r"
                                     % (what, body[:200]))
            return None
        if media not in content:
            raise AssertionError("%s: Content-Type %r is not documented (%s)"
                                 % (what, ctype, sorted(content)))
        mt = content[media]
        text = body.decode("utf-8")  # every body is UTF-8
        if media == "application/json":
            parsed = json.loads(text)
            self.validate(mt["schema"], parsed, what)
            return parsed
        if media == "application/x-ndjson":
            if text and not text.endswith("\n"):
                raise AssertionError("%s: JSONL body does not end with a newline" % what)
            rows = []
            for i, line in enumerate(text.splitlines()):
                row = json.loads(line)
                self.validate(mt["x-itemSchema"], row, "%s line %d" % (what, i + 1))
                rows.append(row)
            return rows
        if media == "text/csv":
            if "charset=utf-8" not in ctype.replace(" ", "").lower():
                raise AssertionError("%s: CSV without charset=utf-8: %r" % (what, ctype))
            return text
        if media == "text/html":  # the run report: one document, UTF-8
            if "charset=utf-8" not in ctype.replace(" ", "").lower():
                raise AssertionError("%s: HTML without charset=utf-8: %r" % (what, ctype))
            if not text.startswith("<!doctype html>") or not text.endswith("</html>\n"):
                raise AssertionError("%s: not one whole HTML document" % what)
            return text
        if media == "text/event-stream":  # GET /runs/{id}/live: each event's data
            events = []
            for block in text.split("\n\n"):
                lines = [x for x in block.split("\n") if x and not x.startswith(":")]
                kind = [x[6:].strip() for x in lines if x.startswith("event:")]
                data = [x[5:].strip() for x in lines if x.startswith("data:")]
                if not data:
                    continue
                if len(kind) != 1 or kind[0] not in mt["x-events"]:
                    raise AssertionError("%s: an event not in x-events: %r" % (what, block))
                parsed = json.loads("\n".join(data))
                self.validate(mt["x-events"][kind[0]], parsed, "%s event %s" % (what, kind[0]))
                events.append((kind[0], parsed))
            return events
        raise AssertionError("%s: no check for media type %s" % (what, media))

    def record_columns(self, csv_only=False, classes=False):
        props = self.doc["components"]["schemas"]["RecordRow"]["properties"]
        return [k for k, v in props.items() if not (csv_only and v.get("x-jsonl-only"))
                and (classes or not v.get("x-classes-only"))]


def http_call(addr, method, path, body=None, headers=None, timeout=30):
    """One request over a fresh connection; returns (status, headers, raw body)."""
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        hdrs = dict(headers or {})
        if body is not None and "Content-Type" not in hdrs:
            hdrs["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=hdrs)
        r = c.getresponse()
        return r.status, r.headers, r.read()
    finally:
        c.close()


def upload(addr, head, pieces, timeout=20):
    """Sends head then the body pieces on a raw socket, stopping as soon as the
    server answers (it may answer before the body is complete); returns
    (status, headers, body) or raises AssertionError when the connection
    closes without an answer."""
    import select
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(head)
        for p in pieces:
            r, _, _ = select.select([s], [], [], 0)
            if r:
                break  # an early answer
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):
                break
        resp = http.client.HTTPResponse(s, method="POST")
        try:
            resp.begin()
        except (http.client.RemoteDisconnected, ConnectionResetError) as e:
            raise AssertionError("the server closed the connection without an answer: %r" % e)
        return resp.status, resp.headers, resp.read()
    finally:
        s.close()


def chunked(total, size=65536, byte=b" "):
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield b"%x\r\n" % n + byte * n + b"\r\n"
        sent += n
    yield b"0\r\n\r\n"


def c_limits():
    """The #defines of lib/hrlimits.h, evaluated."""
    out = {}
    with open(LIMITS_H) as f:
        for line in f:
            m = re.match(r"#define\s+(HR_\w+)\s+(.*?)\s*(/\*.*)?$", line)
            if not m or not m.group(2):
                continue
            expr = re.sub(r"(\d)(?:[uU]|LL|ll|[uU]LL)\b", r"\1", m.group(2))
            out[m.group(1)] = eval(expr, {"__builtins__": {}}, out)  # trusted source file
    return out


class DocumentTest(unittest.TestCase):
    """The document itself, and the routes the server has."""

    @classmethod
    def setUpClass(cls):
        cls.raw = load_doc()
        cls.doc = Doc(cls.raw)

    def test_routes_match_the_server(self):
        out = subprocess.run([HEADROOMD, "--list-routes"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
        server = set()
        for line in out.splitlines():
            if line.strip():
                method, path = line.split()
                server.add((method.upper(), path))
        self.assertTrue(server, "headroomd --list-routes printed nothing")
        documented = set()
        for path, item in self.raw["paths"].items():
            for m in item:
                if m in METHODS:
                    documented.add((m.upper(), path))
        self.assertEqual(sorted(server - documented), [],
                         "routes of headroomd missing from api/openapi.yaml")
        self.assertEqual(sorted(documented - server), [],
                         "operations in api/openapi.yaml that headroomd does not have")

    def test_document_is_well_formed(self):
        d = self.raw
        self.assertEqual(d["openapi"], "3.1.0")
        self.assertEqual(d["info"]["title"], "headroom")
        version = subprocess.run([HEADROOMD, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.split()[1]  # "headroomd 0.1.0 (commit)"
        self.assertEqual(d["info"]["version"], version)
        self.assertTrue(d.get("servers"))
        for name, s in d["components"]["schemas"].items():
            Draft202012Validator.check_schema(s)

        # every $ref resolves
        def walk(node, where):
            if isinstance(node, dict):
                if "$ref" in node:
                    try:
                        self.doc.pointer(node["$ref"])
                    except (KeyError, TypeError):
                        self.fail("%s: $ref %s does not resolve" % (where, node["$ref"]))
                for k, v in node.items():
                    walk(v, where + "/" + str(k))
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    walk(v, "%s/%d" % (where, i))
        walk(d, "#")

        ids = set()
        for path, item in d["paths"].items():
            names = set(re.findall(r"{(\w+)}", path))
            for m, op in item.items():
                if m not in METHODS:
                    continue
                self.assertNotIn(op["operationId"], ids)
                ids.add(op["operationId"])
                params = self.doc.parameters(path, op)
                in_path = {p["name"] for p in params if p["in"] == "path"}
                self.assertEqual(in_path, names, "%s %s path parameters" % (m, path))
                for p in params:
                    Draft202012Validator.check_schema(p["schema"])
                self.assertTrue(op["responses"], "%s %s has no responses" % (m, path))
                for status, r in op["responses"].items():
                    r = self.doc.deref(r)
                    self.assertRegex(status, r"^[1-5][0-9][0-9]$")
                    self.assertTrue(r.get("description"), "%s %s %s" % (m, path, status))
                    for media, mt in (r.get("content") or {}).items():
                        Draft202012Validator.check_schema(mt["schema"])
                    if status[0] in "45":
                        self.assertIn("application/json", r["content"])
                if m == "post" and path == "/api/v1/runs":
                    self.assertEqual(op["requestBody"]["content"]["application/json"]["schema"],
                                     self.doc.schema("RunSpec"))

    def test_bounds_match_limits_h(self):
        lim = c_limits()
        sch = self.raw["components"]["schemas"]
        spec = sch["RunSpec"]["properties"]
        tgt = spec["target"]["properties"]
        load = spec["load"]["properties"]
        dist = sch["LengthDist"]["properties"]
        warm = spec["warmup"]["properties"]
        wload = sch["WarmupLoad"]["properties"]
        sess = sch["Sessions"]["properties"]
        tele = spec["telemetry"]["properties"]
        pairs = [
            (spec["name"]["maxLength"], lim["HR_MAX_NAME_LEN"]),
            (spec["labels"]["maxProperties"], lim["HR_MAX_LABELS"]),
            (spec["labels"]["propertyNames"]["maxLength"], lim["HR_MAX_LABEL_LEN"]),
            (spec["labels"]["additionalProperties"]["maxLength"], lim["HR_MAX_LABEL_LEN"] * 16),
            (tgt["url"]["maxLength"], lim["HR_MAX_URL_LEN"]),
            (tgt["model"]["maxLength"], lim["HR_MAX_NAME_LEN"]),
            (tgt["headers"]["maxProperties"], lim["HR_MAX_HEADERS"]),
            (tgt["headers"]["propertyNames"]["maxLength"], lim["HR_MAX_LABEL_LEN"]),
            (tgt["headers"]["additionalProperties"]["maxLength"], lim["HR_MAX_LABEL_LEN"] * 16),
            (tgt["timeout_s"]["maximum"], lim["HR_MAX_TIMEOUT_S"]),
            (load["concurrency"]["maximum"], lim["HR_MAX_CONCURRENCY"]),
            (load["requests"]["maximum"], lim["HR_MAX_REQUESTS"]),
            (load["duration_s"]["maximum"], lim["HR_MAX_DURATION_S"]),
            (spec["workers"]["maximum"], lim["HR_MAX_WORKERS"]),
            (dist["mean"]["maximum"], lim["HR_MAX_ISL"]),
            (dist["mean"]["maximum"], lim["HR_MAX_OSL"]),
            (dist["stddev"]["maximum"], lim["HR_MAX_ISL"]),
            (load["rate"]["maximum"], lim["HR_MAX_RATE"]),
            (load["max_concurrency"]["maximum"], lim["HR_MAX_CONCURRENCY"]),
            (load["ramp_s"]["maximum"], lim["HR_MAX_RAMP_S"]),
            (load["grace_s"]["maximum"], lim["HR_MAX_GRACE_S"]),
            (load["cancel"]["properties"]["after_s"]["maximum"], lim["HR_MAX_TIMEOUT_S"]),
            (warm["requests"]["maximum"], lim["HR_MAX_REQUESTS"]),
            (warm["duration_s"]["maximum"], lim["HR_MAX_DURATION_S"]),
            (wload["concurrency"]["maximum"], lim["HR_MAX_CONCURRENCY"]),
            (wload["max_concurrency"]["maximum"], lim["HR_MAX_CONCURRENCY"]),
            (wload["rate"]["maximum"], lim["HR_MAX_RATE"]),
            (wload["ramp_s"]["maximum"], lim["HR_MAX_RAMP_S"]),
            (sess["turns"]["properties"]["mean"]["maximum"], lim["HR_MAX_TURNS"]),
            (sess["turns"]["properties"]["stddev"]["maximum"], lim["HR_MAX_TURNS"]),
            (sess["think_time_s"]["properties"]["mean"]["maximum"], lim["HR_MAX_THINK_S"]),
            (sess["think_time_s"]["properties"]["stddev"]["maximum"], lim["HR_MAX_THINK_S"]),
            (tele["interval_ms"]["minimum"], lim["HR_MIN_TELEMETRY_INTERVAL_MS"]),
            (tele["interval_ms"]["maximum"], lim["HR_MAX_TELEMETRY_INTERVAL_MS"]),
            (tele["dcgm_urls"]["maxItems"], lim["HR_MAX_SCRAPE_URLS"]),
            (tele["metrics_urls"]["maxItems"], lim["HR_MAX_SCRAPE_URLS"]),
            (sch["ScrapeUrl"]["maxLength"], lim["HR_MAX_URL_LEN"]),
        ]
        # warm-up shape and run shape share their bounds
        for k in ("concurrency", "rate", "smoothness", "max_concurrency", "ramp_s"):
            for b in ("minimum", "maximum"):
                pairs.append((wload[k][b], load[k][b]))
        trace_doc = spec["workload"]["properties"]["trace"]["description"]
        for name in ("HR_MAX_TRACE_ENTRIES", "HR_MAX_TRACE_HASH_IDS", "HR_MAX_ISL",
                     "HR_MAX_OSL"):
            self.assertIn(str(lim[name]), trace_doc, name)
        for got, want in pairs:
            self.assertEqual(got, want)
        self.assertIn(str(lim["HR_WORKER_MAX_IN_FLIGHT"]), load["max_concurrency"]["description"])
        list_params = {p["name"]: p for p in self.doc.parameters(
            "/api/v1/runs", self.raw["paths"]["/api/v1/runs"]["get"])}
        self.assertEqual(list_params["limit"]["schema"]["maximum"], lim["HR_MAX_PAGE_LIMIT"])
        self.assertEqual(list_params["limit"]["schema"]["default"], lim["HR_DEFAULT_PAGE_LIMIT"])
        self.assertIn(str(lim["HR_MAX_BODY_BYTES"]),
                      self.raw["components"]["responses"]["TooLarge"]["description"])
        # datasets (docs/datasets.md)
        self.assertIn(str(lim["HR_MAX_DATASET_BYTES"]),
                      self.raw["components"]["responses"]["DatasetTooLarge"]["description"])
        self.assertIn(str(lim["HR_MAX_DATASET_BYTES"]), self.raw["info"]["description"])
        up = {p["name"]: p for p in self.raw["paths"]["/api/v1/datasets"]["post"]["parameters"]}
        for f in ("min_prompt", "max_prompt", "min_reply", "max_reply"):
            self.assertEqual(up[f]["schema"]["maximum"], lim["HR_MAX_DATASET_TEXT"])
        pv = {p["name"]: p for p in
              self.raw["paths"]["/api/v1/datasets/{id}/entries"]["get"]["parameters"]}
        ds, ent = sch["Dataset"]["properties"], sch["DatasetEntry"]["properties"]
        opts = sch["DatasetOptions"]["oneOf"][1]["properties"]
        for got, want in (
                (pv["limit"]["schema"]["maximum"], lim["HR_MAX_DATASET_PREVIEW"]),
                (pv["offset"]["schema"]["maximum"], lim["HR_MAX_DATASET_ENTRIES"] - 1),
                (sch["DatasetEntries"]["properties"]["entries"]["maxItems"],
                 lim["HR_MAX_DATASET_PREVIEW"]),
                (ds["entries"]["maximum"], lim["HR_MAX_DATASET_ENTRIES"]),
                (ds["sessions"]["maximum"], lim["HR_MAX_DATASET_ENTRIES"]),
                (ds["bytes"]["maximum"], lim["HR_MAX_DATASET_BYTES"]),
                (ds["name"]["maxLength"], lim["HR_MAX_NAME_LEN"]),
                (ent["text"]["maxLength"], lim["HR_DATASET_PREVIEW_TEXT"]),
                (ent["reply"]["maxLength"], lim["HR_DATASET_PREVIEW_TEXT"]),
                (ent["system"]["maxLength"], lim["HR_DATASET_PREVIEW_TEXT"]),
                (ent["text_bytes"]["maximum"], lim["HR_MAX_DATASET_TEXT"]),
                (ent["hash_ids"]["maxItems"], lim["HR_DATASET_PREVIEW_HASH_IDS"]),
                (ent["session_id"]["maxLength"], lim["HR_MAX_DATASET_SESSION_ID"]),
                (ent["turn"]["maximum"], lim["HR_MAX_TURNS"] - 1),
                (ent["output_length"]["maximum"], lim["HR_MAX_OSL"]),
                (ent["input_length"]["maximum"], lim["HR_MAX_ISL"]),
                (ent["timestamp_ms"]["maximum"], lim["HR_MAX_DATASET_TIME_MS"]),
                (ent["delay_ms"]["maximum"], lim["HR_MAX_DATASET_TIME_MS"]),
                (opts["max_reply"]["maximum"], lim["HR_MAX_DATASET_TEXT"])):
            self.assertEqual(got, want)
        # the run history (docs/compare.md)
        patch = sch["RunPatch"]["properties"]
        run = sch["Run"]["properties"]
        comps = self.raw["components"]["parameters"]
        sel = comps["LabelSelectors"]["schema"]
        for got, want in (
                (spec["repeat"]["properties"]["count"]["maximum"], lim["HR_MAX_REPEAT"]),
                (sch["RunCreated"]["properties"]["run_ids"]["maxItems"], lim["HR_MAX_REPEAT"]),
                (sch["Group"]["properties"]["count"]["maximum"], lim["HR_MAX_REPEAT"]),
                (sch["Group"]["properties"]["runs"]["maxItems"], lim["HR_MAX_REPEAT"]),
                (sch["CompareSide"]["properties"]["runs"]["maxItems"], lim["HR_MAX_REPEAT"]),
                (sch["Baseline"]["properties"]["resolves_to"]["maxItems"], lim["HR_MAX_REPEAT"]),
                (spec["gates"]["maxItems"], lim["HR_MAX_GATES"]),
                (sch["GateReport"]["properties"]["results"]["maxItems"], lim["HR_MAX_GATES"]),
                (sch["Gate"]["properties"]["name"]["maxLength"], lim["HR_MAX_NAME_LEN"]),
                (patch["note"]["maxLength"], lim["HR_MAX_NOTE_LEN"]),
                (run["note"]["maxLength"], lim["HR_MAX_NOTE_LEN"]),
                (patch["labels"]["propertyNames"]["maxLength"], lim["HR_MAX_LABEL_LEN"]),
                (patch["labels"]["additionalProperties"]["maxLength"],
                 lim["HR_MAX_LABEL_LEN"] * 16),
                (sel["additionalProperties"]["maxLength"], lim["HR_MAX_LABEL_LEN"] * 16),
                (comps["BaselineName"]["schema"]["maxLength"], lim["HR_MAX_LABEL_LEN"]),
                (sch["Baseline"]["properties"]["name"]["maxLength"], lim["HR_MAX_LABEL_LEN"]),
                (comps["NameFilter"]["schema"]["maxLength"], lim["HR_MAX_NAME_LEN"])):
            self.assertEqual(got, want)
        self.assertIn(str(lim["HR_MAX_REPEAT"]), sch["CompareRef"]["description"])
        self.assertIn(str(lim["HR_MAX_LABELS"]), patch["labels"]["description"])

    def test_spec_schema_examples(self):
        """The RunSpec schema accepts the documented examples and expresses
        'exactly one of requests and duration_s'."""
        v = Draft202012Validator(self.doc.schema("RunSpec"), resolver=self.doc.resolver)
        good = hrtest.spec("127.0.0.1:1")
        for ex in self.raw["components"]["schemas"]["RunSpec"]["examples"] + [good]:
            v.validate(ex)
        dur = json.loads(json.dumps(good))
        del dur["load"]["requests"]
        dur["load"]["duration_s"] = 1.5
        v.validate(dur)
        both = json.loads(json.dumps(good))
        both["load"]["duration_s"] = 1.5
        self.assertFalse(v.is_valid(both), "requests and duration_s together must be invalid")
        neither = json.loads(json.dumps(good))
        del neither["load"]["requests"]
        self.assertFalse(v.is_valid(neither), "a load without requests or duration_s is invalid")
        nulls = json.loads(json.dumps(good))
        nulls["load"]["duration_s"] = None
        v.validate(nulls)

    def test_spec_schema_modes(self):
        """The mode-dependent rules, as far as JSON Schema states them."""
        v = Draft202012Validator(self.doc.schema("RunSpec"), resolver=self.doc.resolver)
        base = hrtest.spec("127.0.0.1:1")
        trace = '{"timestamp": 0, "input_length": 1, "output_length": 1}\n'

        def with_load(load, **top):
            s = json.loads(json.dumps(base))
            s["load"] = load
            s.update(top)
            return s
        good = [
            with_load({"mode": "rate", "rate": 2, "requests": 5}),
            with_load({"mode": "rate", "rate": 2, "arrival": "gamma", "smoothness": 3,
                       "max_concurrency": 4, "ramp_s": 2, "duration_s": 9, "grace_s": 0,
                       "cancel": {"fraction": 0.5, "after_s": 1}}),
            with_load({"mode": "trace", "speedup": 3, "start_s": 1, "end_s": 5},
                      workload={"kind": "trace", "trace": trace}),
            with_load({"mode": "concurrency", "concurrency": 2, "ramp_s": 1, "requests": 1},
                      warmup={"requests": 2}),
            with_load({"mode": "rate", "rate": 2, "arrival": "gamma", "requests": 1},
                      warmup={"duration_s": 2, "load": {"smoothness": 0.5}}),
            with_load({"mode": "trace"}, workload={"kind": "trace", "trace": trace},
                      warmup={"requests": 2, "load": {"mode": "rate", "rate": 1}}),
        ]
        for s in good:
            self.assertEqual([e.message for e in v.iter_errors(s)], [], json.dumps(s)[:300])
        bad = [
            with_load({"mode": "rate", "requests": 5}),  # no rate
            with_load({"mode": "rate", "rate": 2, "concurrency": 2, "requests": 5}),
            with_load({"mode": "rate", "rate": 2, "smoothness": 2, "requests": 5}),
            with_load({"mode": "rate", "rate": 2}),  # no limit
            with_load({"mode": "concurrency", "rate": 2, "requests": 5}),
            with_load({"mode": "concurrency", "speedup": 2, "requests": 5}),
            with_load({"mode": "trace", "ramp_s": 1}, workload={"kind": "trace", "trace": trace}),
            with_load({"mode": "trace"}),  # synthetic workload
            with_load({"requests": 1}, workload={"kind": "trace", "trace": trace}),
            with_load({"requests": 1, "cancel": {"fraction": 0.1}}),
            with_load({"requests": 1}, warmup={"requests": 1, "duration_s": 1}),
            with_load({"requests": 1}, warmup={"requests": 1, "load": {"mode": "trace"}}),
            with_load({"requests": 1}, warmup={"requests": 1, "load": {"mode": "rate"}}),
            with_load({"requests": 1}, warmup={"requests": 1, "load": {"rate": 1}}),
            with_load({"requests": 1}, workload={"sessions": {}}),
        ]
        for s in bad:
            self.assertFalse(v.is_valid(s), json.dumps(s)[:300])

    def test_summary_load_schema(self):
        """LoadSummary: requested_rate only in rate mode."""
        v = Draft202012Validator(self.doc.schema("LoadSummary"), resolver=self.doc.resolver)
        ok = {"mode": "rate", "requested_rate": 5.0, "requested_concurrency": None, "sent": 0,
              "achieved_rate": None, "achieved_concurrency": {"avg": None, "max": 0}}
        v.validate(ok)
        self.assertFalse(v.is_valid(dict(ok, requested_rate=None)))
        self.assertFalse(v.is_valid(dict(ok, mode="concurrency")))
        v.validate(dict(ok, mode="concurrency", requested_rate=None, requested_concurrency=4))
        self.assertFalse(v.is_valid(dict(ok, mode="concurrency", requested_rate=None)))
        v.validate(dict(ok, mode="trace", requested_rate=None))

    def test_telemetry_schemas(self):
        """RunSpec.telemetry and the telemetry results, as far as JSON Schema
        states them (the server's side is in test_api_errors.py and below)."""
        def validator(name):
            return Draft202012Validator(self.doc.schema(name), resolver=self.doc.resolver)
        spec = validator("RunSpec")
        base = hrtest.spec("127.0.0.1:1")

        def with_tele(t):
            s = json.loads(json.dumps(base))
            s["telemetry"] = t
            return s
        url = "http://h:9400/metrics"
        for t in (None, {}, {"nvml": None, "interval_ms": None, "scrape_timeout_ms": None,
                             "dcgm_urls": None, "server_metrics": None, "metrics_urls": None},
                  {"nvml": False, "interval_ms": 50, "scrape_timeout_ms": 10, "dcgm_urls": [],
                   "server_metrics": False, "metrics_urls": []},
                  {"interval_ms": 60000, "scrape_timeout_ms": 60000,
                   "dcgm_urls": ["http://h:%d/metrics" % (9400 + i) for i in range(16)],
                   "metrics_urls": ["https://x" + "a" * 2039]}):
            self.assertEqual([e.message for e in spec.iter_errors(with_tele(t))], [], t)
        for t in ([], "x", {"interval_ms": 49}, {"interval_ms": 60001}, {"interval_ms": 100.5},
                  {"scrape_timeout_ms": 9}, {"scrape_timeout_ms": 60001}, {"nvml": "yes"},
                  {"server_metrics": 1}, {"dcgm_urls": url}, {"dcgm_urls": [url] * 17},
                  {"metrics_urls": [url] * 17}, {"dcgm_urls": ["ftp://h/metrics"]},
                  {"dcgm_urls": ["HTTP://h/metrics"]}, {"dcgm_urls": [url, "http://a b"]},
                  {"metrics_urls": ["http://x\n"]}, {"metrics_urls": [None]},
                  {"metrics_urls": ["https://x" + "a" * 2040]}, {"interval": 100},
                  {"dcgm_urls": [url, url]}, {"metrics_urls": ["http://h/\x01"]}):
            self.assertFalse(spec.is_valid(with_tele(t)), t)

        series = validator("TelemetrySeries")
        gauge = {"source": "nvml", "name": "gpu.power_w", "gpu": "GPU-1", "labels": "",
                 "kind": "gauge", "count": 2, "avg": 1.5, "min": 1, "max": 2, "p50": 1.5,
                 "p90": 1.9, "p99": 1.99}
        counter = {"source": "dcgm", "name": "gpu.energy_j", "gpu": "0", "labels": "",
                   "kind": "counter", "delta": 10.0, "rate": None}
        hist = {"source": "server", "name": "server.ttft_seconds", "gpu": "",
                "labels": '{model_name="m"}', "kind": "histogram", "count": 40.0, "p50": 0.1}
        empty_gauge = {k: gauge[k] for k in ("source", "name", "gpu", "labels", "kind")}
        empty_gauge["count"] = 0
        for ok in (gauge, counter, hist, empty_gauge, dict(counter, rate=2.5),
                   dict(hist, count=0.0)):
            self.assertEqual([e.message for e in series.iter_errors(ok)], [], ok)
        for bad in (dict(gauge, delta=1.0), dict(gauge, count=1.5), dict(counter, count=3),
                    dict(counter, p50=1.0), {k: v for k, v in hist.items() if k != "count"},
                    dict(hist, avg=1.0), dict(gauge, name="DCGM_FI_DEV_FB_FREE"),
                    dict(gauge, kind="summary"), dict(gauge, source="prometheus"),
                    dict(gauge, gpu=0)):
            self.assertFalse(series.is_valid(bad), bad)

        source = validator("TelemetrySource")
        src = {"source": "server", "target": "http://h/metrics", "status": "ok", "detail": None,
               "samples": 3}
        source.validate(src)
        source.validate(dict(src, status="unavailable", samples=0, detail="h: HTTP 404"))
        source.validate(dict(src, detail="h: 1 malformed line(s) skipped"))
        for bad in (dict(src, samples=0), dict(src, status="unavailable"),
                    dict(src, status="down", samples=0)):
            self.assertFalse(source.is_valid(bad), bad)

        summ = validator("TelemetrySummary")
        t = {"sources": [src], "window_start_ns": 10, "window_end_ns": 20,
             "series": [gauge, counter, hist], "raw_series": 3, "energy_j": 5.0,
             "energy_per_output_token_j": 0.5}
        summ.validate(t)
        summ.validate(dict(t, window_start_ns=None, window_end_ns=None, series=[],
                           energy_j=None, energy_per_output_token_j=None))
        summ.validate(dict(t, energy_per_output_token_j=None))
        for bad in (dict(t, window_start_ns=None), dict(t, window_end_ns=None),
                    dict(t, energy_j=None), {k: v for k, v in t.items() if k != "raw_series"}):
            self.assertFalse(summ.is_valid(bad), bad)

        sample = validator("TelemetrySample")
        smp = {"t_ns": 1, "t_s": -0.5, "source": "dcgm", "name": "DCGM_FI_DEV_FB_FREE",
               "gpu": "GPU-1", "labels": "", "kind": "gauge", "value": 3.0}
        sample.validate(smp)
        sample.validate(dict(smp, t_s=None, value=None))
        h = dict(smp, kind="histogram", detail={"sum": 1.5, "buckets": [[0.1, 1], [None, 2]]})
        sample.validate(h)
        for bad in (dict(smp, detail=None), dict(h, detail={"buckets": []}),
                    dict(h, detail={"sum": 1, "buckets": [[0.1]]}),
                    {k: v for k, v in smp.items() if k != "t_s"}):
            self.assertFalse(sample.is_valid(bad), bad)
        cols = self.raw["paths"]["/api/v1/runs/{id}/telemetry"]["get"]["responses"]["200"][
            "content"]["text/csv"]["x-csv-columns"]
        self.assertEqual(cols, list(self.raw["components"]["schemas"]["TelemetrySample"][
            "properties"]))
        with open(os.path.join(hrtest.SRC, "server", "telesum.c"), encoding="utf-8") as f:
            header = re.search(r'tele_csv_header\[\] = "([^"]*)\\n"', f.read()).group(1)
        self.assertEqual(header.split(","), cols, "server/telesum.c's CSV header")

    def test_client_schemas(self):
        """RunSpec.client and target.mock, the client verdict and samples, and the
        client export's CSV columns, as far as JSON Schema states them."""
        def validator(name):
            return Draft202012Validator(self.doc.schema(name), resolver=self.doc.resolver)
        spec = validator("RunSpec")
        base = hrtest.spec("127.0.0.1:1")

        def with_target(**t):
            s = json.loads(json.dumps(base))
            s["target"].update(t)
            return {**s, "target": {k: v for k, v in s["target"].items() if v != "DEL"}}

        def with_client(c):
            return dict(json.loads(json.dumps(base)), client=c)
        for ok in (with_target(mock=True, url="DEL"), with_target(mock=True, url=None),
                   with_target(mock=True, url="http://127.0.0.1:0"), with_target(mock=False),
                   with_target(mock=None), with_client(None), with_client({}),
                   with_client({"allow_client_bound": True, "max_loop_busy": 0.05,
                                "max_busy_share": 0, "max_lag_ms": 0.01}),
                   with_client({"max_loop_busy": 1, "max_busy_share": 1, "max_lag_ms": 60000}),
                   with_client({"allow_client_bound": None, "max_lag_ms": None})):
            self.assertEqual([e.message for e in spec.iter_errors(ok)], [], ok)
        for bad in (with_target(mock=True), with_target(url="DEL"), with_target(url=None),
                    with_target(mock=False, url="DEL"), with_target(mock="yes"),
                    with_target(mock=True, url="http://127.0.0.1:8000"),
                    with_client([]), with_client({"colour": 1}),
                    with_client({"max_loop_busy": 0.04}), with_client({"max_loop_busy": 1.1}),
                    with_client({"max_busy_share": -0.1}), with_client({"max_lag_ms": 0}),
                    with_client({"max_lag_ms": 60001}), with_client({"allow_client_bound": 1})):
            self.assertFalse(spec.is_valid(bad), bad)

        verdict = validator("ClientVerdict")
        head = {k: 0 for k in self.raw["components"]["schemas"]["ClientHeadline"]["required"]}
        head.update(workers=1, timer_late_max_ms=0.0, queued_age_max_ms=0.0)
        for k in ("loop_busy_avg", "loop_busy_max", "cpu_avg", "cpu_max", "timer_late_p99_ms",
                  "schedule_lag_p99_ms", "requested_rate", "achieved_rate", "daemon_cpu_max",
                  "daemon_ingest_backlog_max"):
            head[k] = None
        th = {"max_loop_busy": 0.9, "max_busy_share": 0.2, "max_lag_ms": 10.0,
              "busy_near": 0.7, "rate_min_fraction": 0.9}
        note = {"code": "no_telemetry", "message": "m", "worker": 0, "value": None, "limit": None}
        busy = {"code": "loop_busy", "message": "m", "worker": 0, "value": 1.0, "limit": 0.2}
        near = {"code": "near_calibrated_ceiling", "message": "m", "worker": None, "value": 0.95,
                "limit": 0.9}
        v = {"verdict": "inconclusive", "reasons": [], "notes": [note], "headline": head,
             "workers": [{"worker": 0, "samples": 0}], "ceiling": None,
             "allow_client_bound": False, "thresholds": th}
        verdict.validate(v)
        verdict.validate(dict(v, verdict="client_bound", reasons=[busy]))
        verdict.validate(dict(v, verdict="ok", notes=[near]))
        verdict.validate(dict(v, verdict="ok", notes=[]))
        for bad in (dict(v, verdict="client_bound"), dict(v, reasons=[busy]),
                    dict(v, verdict="ok"), dict(v, notes=[]), dict(v, reasons=[note]),
                    dict(v, notes=[note, busy]), dict(v, workers=[{"worker": 0, "samples": 1}]),
                    dict(v, verdict="client-bound"), dict(v, ceiling={})):
            self.assertFalse(verdict.is_valid(bad), bad)

        sample = validator("ClientSample")
        w = {"source": "w0", "t_ns": -5, "t_s": -5e-9, "interval_s": 1.0, "phase": "profiling",
             "cpu": 0.5, "loop_busy": 0.25, "wakeups": 10, "late_buckets": [1] * 9,
             "late_max_ms": 0.5, "in_flight": 3, "queued": 0, "queued_age_ms": 0,
             "record_backlog": 0, "conn_errors": 0, "port_errors": 0, "sent": 9, "completed": 6,
             "read_lag_buckets": [5] + [0] * 8, "read_lag_max_ms": 0.05,
             "kernel_lag_buckets": [4, 1] + [0] * 7, "kernel_lag_max_ms": 0.12,
             "busy_windows": [10] + [0] * 9}
        d = dict(w, source="daemon", phase=None, loop_busy=None, wakeups=None, late_buckets=None,
                 late_max_ms=None, queued=None, queued_age_ms=None, conn_errors=None,
                 port_errors=None, read_lag_buckets=None, read_lag_max_ms=None,
                 kernel_lag_buckets=None, kernel_lag_max_ms=None, busy_windows=None)
        before = dict(w, read_lag_buckets=None, read_lag_max_ms=None, kernel_lag_buckets=None,
                      kernel_lag_max_ms=None, busy_windows=None)  # stored before they existed
        for ok in (w, d, before, dict(w, cpu=None, loop_busy=None), dict(w, source="w255")):
            self.assertEqual([e.message for e in sample.iter_errors(ok)], [], ok)
        for bad in (dict(w, phase=None), dict(w, late_buckets=[1] * 8), dict(w, loop_busy=1.5),
                    dict(w, busy_windows=[1] * 9), dict(w, read_lag_buckets=[-1] * 9),
                    dict(d, phase="profiling"), dict(d, cpu=None), dict(w, source="w01"),
                    dict(w, source="worker"), {k: v for k, v in w.items() if k != "queued"}):
            self.assertFalse(sample.is_valid(bad), bad)
        cols = self.raw["paths"]["/api/v1/runs/{id}/client"]["get"]["responses"]["200"][
            "content"]["text/csv"]["x-csv-columns"]
        self.assertEqual(cols, list(self.raw["components"]["schemas"]["ClientSample"][
            "properties"]))
        with open(os.path.join(hrtest.SRC, "server", "client.c"), encoding="utf-8") as f:
            header = "".join(re.findall(r'"([^"]*)"', f.read().split(
                "client_csv_header[] =", 1)[1].split(";", 1)[0]))
        self.assertEqual(header, ",".join(cols) + "\\n", "server/client.c's CSV header")

        cal = validator("Calibration")
        c = {"id": 1, "created_ns": 1, "finished_ns": None, "state": "running", "host": "h",
             "params": {"osl": [8], "isl": 128, "concurrency": 4, "duration_s": 0.5,
                        "rates": [], "max_lag_ms": 1},
             "run_ids": [3], "result": None, "error": None}
        point = {"osl": 8, "run_id": 3, "requests_per_s": 10.0, "tokens_per_s": 80.0,
                 "loop_busy_avg": 0.9, "cpu_avg": 0.8, "client_saturated": True,
                 "open_loop": [], "sustained_requests_per_s": None,
                 "sustained_lower_bound": False}
        step = {"rate": 500, "run_id": 4, "run_state": "succeeded", "reason": None,
                "achieved_rate": 498.5, "schedule_lag_p99_ms": 0.4, "errors": 0, "unsent": 0,
                "sustained": True}
        failed_step = dict(step, rate=2000, run_state="failed", reason="worker 0 was silent",
                           achieved_rate=None, schedule_lag_p99_ms=None, errors=None,
                           unsent=None, sustained=False)
        cal.validate(c)
        cal.validate(dict(c, state="succeeded", finished_ns=2, result={"points": [point]}))
        cal.validate(dict(c, state="succeeded", finished_ns=2, result={"points": [dict(
            point, open_loop=[step, dict(step, rate=1000, sustained=False), failed_step],
            sustained_requests_per_s=500)]}))
        for bad_point in (dict(point, open_loop=[dict(step, rate=0)]),
                          dict(point, open_loop=[{k: v for k, v in step.items()
                                                  if k != "sustained"}]),
                          {k: v for k, v in point.items() if k != "open_loop"},
                          dict(point, sustained_requests_per_s=0),
                          dict(point, open_loop=[dict(failed_step, sustained=True)]),
                          dict(point, open_loop=[dict(step, run_state="cancelled")])):
            self.assertFalse(cal.is_valid(dict(c, state="succeeded", finished_ns=2,
                                               result={"points": [bad_point]})), bad_point)
        self.assertFalse(cal.is_valid(dict(c, params=dict(c["params"], rates=[0.5]))))
        cal.validate(dict(c, state="failed", finished_ns=2, error="run 3 failed: x"))
        for bad in (dict(c, state="succeeded"), dict(c, state="failed", finished_ns=2),
                    dict(c, error="x"), dict(c, state="done"),
                    dict(c, state="succeeded", finished_ns=2, result={"points": [point]},
                         error="x")):
            self.assertFalse(cal.is_valid(bad), bad)
        req = validator("CalibrationRequest")
        for ok in ({}, {"osl": None, "isl": None, "concurrency": None, "duration_s": None,
                        "rates": None, "max_lag_ms": None},
                   {"osl": [1, 65536], "isl": 65536, "concurrency": 4096, "duration_s": 600,
                    "rates": [1, 1e6], "max_lag_ms": 0.01}):
            req.validate(ok)
        for bad in ({"osl": []}, {"osl": [8, 8]}, {"osl": [0]}, {"osl": list(range(1, 10))},
                    {"isl": 1.5}, {"duration_s": 0.4}, {"concurrency": 0}, {"x": 1}, []):
            self.assertFalse(req.is_valid(bad), bad)

    def test_metric_tags_match_the_code(self):
        """MetricName and RecordRow's metric columns follow lib/metrics.c's table."""
        with open(os.path.join(hrtest.SRC, "lib", "metrics.c"), encoding="utf-8") as f:
            table = f.read().split("metric_defs[] = {", 1)[1].split("};", 1)[0]
        tags = re.findall(r'\{\s*"(\w+)",\s*"([^"]*)"', table)
        self.assertGreater(len(tags), 5)
        sch = self.raw["components"]["schemas"]
        names = sch["MetricName"]["enum"]
        units = sch["Metric"]["properties"]["unit"]["enum"]
        for tag, unit in tags:
            self.assertIn(tag, names)
            self.assertIn(unit, units)
        cols = self.doc.record_columns()
        self.assertEqual([c for c in cols if c in dict(tags)], [t for t, _ in tags],
                         "RecordRow's metric columns are not lib/metrics.c's, in its order")
        self.assertEqual(cols[-1], "chunk_offsets_ns")
        media = ["images_in", "audio_in", "media_bytes_in", "images_out", "bytes_out"]
        at = cols.index("n_chunks") + 1
        self.assertEqual(cols[at:at + len(media)], media)
        self.assertEqual(cols[at + len(media):-1], [t for t, _ in tags])

    def test_history_constants_match_the_code(self):
        """ComparableMetric (its order, run-level figures and directions) and
        StatName follow lib/metrics.c's catalog; the history's own bounds
        follow server/history.h and server/api_history.c."""
        with open(os.path.join(hrtest.SRC, "lib", "metrics.c"), encoding="utf-8") as f:
            src = f.read()
        table = src.split("metric_catalog[] = {", 1)[1].split("};", 1)[0]
        rows = re.findall(r'\{"(\w+)",\s*"[^"]*",\s*METRIC_(\w+),\s*([01])\}', table)
        self.assertGreater(len(rows), 10)
        sch = self.raw["components"]["schemas"]
        cm = sch["ComparableMetric"]
        self.assertEqual(cm["enum"], [r[0] for r in rows])
        self.assertEqual(cm["x-run-level"], [r[0] for r in rows if r[2] == "1"])
        words = {"LOWER_BETTER": "lower", "HIGHER_BETTER": "higher", "NO_DIRECTION": "none"}
        self.assertEqual(cm["x-directions"], {r[0]: words[r[1]] for r in rows})
        stats = re.search(r"metric_stat_names\[METRIC_NSTATS\] = \{([^}]*)\}", src).group(1)
        self.assertEqual(sch["StatName"]["enum"], re.findall(r'"(\w+)"', stats) + ["value"])
        run_level = cm["x-run-level"]
        gate_if = sch["Gate"]["allOf"][0]["if"]["properties"]["metric"]["enum"]
        self.assertEqual(gate_if, run_level)
        # every per-request metric of the summary can be compared
        self.assertEqual(sch["MetricName"]["enum"], [m for m in cm["enum"] if m != "error_rate"])

        def define(path, name):
            with open(os.path.join(hrtest.SRC, path), encoding="utf-8") as f:
                return int(re.search(r"#define %s (\d+)" % name, f.read()).group(1))
        selectors = define("server/history.h", "HISTORY_MAX_SELECTORS")
        comps = self.raw["components"]["parameters"]
        self.assertEqual(comps["LabelSelectors"]["schema"]["maxProperties"], selectors)
        self.assertIn(str(selectors), comps["LabelSelectors"]["description"])
        self.assertEqual(sch["BaselineRule"]["properties"]["labels"]["maxProperties"], selectors)
        fp = define("server/history.h", "HISTORY_FP_LEN")
        self.assertEqual(sch["Run"]["properties"]["fingerprint"]["pattern"],
                         "^[0-9a-f]{%d}$" % fp)
        self.assertEqual(sch["BaselineRule"]["properties"]["fingerprint"]["maxLength"], fp)

        def params(path, method="get"):
            op = self.raw["paths"][path][method]
            return {p["name"]: p for p in self.doc.parameters(path, op)}
        cmp, ser = params("/api/v1/compare"), params("/api/v1/series")
        self.assertEqual(cmp["resamples"]["schema"]["maximum"],
                         define("server/api_history.c", "COMPARE_MAX_RESAMPLES"))
        self.assertEqual(ser["limit"]["schema"]["maximum"],
                         define("server/api_history.c", "SERIES_MAX_POINTS"))

    def test_history_schemas(self):
        """The spec's repeat, validity and gates, and the history's answers, as
        far as JSON Schema states them (the server's side is exercised in
        HistorySurfaceTest and FinishedRunTest below)."""
        def validator(name):
            return Draft202012Validator(self.doc.schema(name), resolver=self.doc.resolver)
        spec = validator("RunSpec")
        base = hrtest.spec("127.0.0.1:1")

        def with_(**kw):
            return dict(json.loads(json.dumps(base)), **kw)
        thr = {"metric": "time_to_first_token", "stat": "p99", "op": "<", "value": 200}
        reg = {"metric": "time_to_first_token", "stat": "p99",
               "regression": {"baseline": "main", "max_pct": 5, "confidence": 0.9}}
        good = [with_(repeat=None), with_(repeat={"count": 2}),
                with_(repeat={"count": 100, "cooldown_s": 3600}),
                with_(repeat={"count": 3.0, "cooldown_s": None}),
                with_(validity=None), with_(validity={}),
                with_(validity={"min_requests": 0, "min_duration_s": 1e7, "max_error_rate": 1,
                                "percentile": "none", "confidence": 0.9999}),
                with_(validity={"percentile": "p25"}), with_(gates=None), with_(gates=[]),
                with_(gates=[thr, reg, {"metric": "error_rate", "op": "<", "value": 0.01},
                             {"metric": "request_throughput", "stat": "value",
                              "regression": {"baseline": 7}},
                             dict(thr, name=None, stat=None),
                             {"metric": "goodput", "op": ">=", "value": 1, "name": "g"}]),
                with_(gates=[thr] * 32)]
        for s in good:
            self.assertEqual([e.message for e in spec.iter_errors(s)], [], json.dumps(s)[-300:])
        bad = [with_(repeat={}), with_(repeat={"count": 1}), with_(repeat={"count": 101}),
               with_(repeat={"count": 2.5}), with_(repeat={"count": None}),
               with_(repeat={"count": 2, "cooldown_s": 3601}), with_(repeat={"count": 2, "x": 1}),
               with_(repeat=3), with_(validity=[]), with_(validity={"percentile": "p42"}),
               with_(validity={"percentile": "p10"}), with_(validity={"max_error_rate": 1.5}),
               with_(validity={"confidence": 0.4}), with_(validity={"min_requests": -1}),
               with_(validity={"min_requests": 1.5}), with_(validity={"colour": 1}),
               with_(gates={}), with_(gates=[thr] * 33), with_(gates=[{"metric": "nope"}]),
               with_(gates=[{"metric": "time_to_first_token"}]),
               with_(gates=[dict(thr, regression=reg["regression"])]),
               with_(gates=[dict(thr, op="~")]), with_(gates=[dict(thr, stat="p42")]),
               with_(gates=[dict(thr, stat="value")]),
               with_(gates=[dict(thr, metric="request_throughput")]),
               with_(gates=[dict(thr, op=None)]), with_(gates=[dict(thr, value=1e16)]),
               with_(gates=[{k: v for k, v in thr.items() if k != "value"}]),
               with_(gates=[dict(reg, regression={"baseline": 0})]),
               with_(gates=[dict(reg, regression={"max_pct": 5})]),
               with_(gates=[dict(reg, regression={"baseline": "a", "max_pct": 1001})]),
               with_(gates=[dict(reg, regression={"baseline": ""})]),
               with_(gates=[dict(reg, regression=None)]),
               with_(gates=[dict(thr, name="x" * 257)])]
        for s in bad:
            self.assertFalse(spec.is_valid(s), json.dumps(s)[-300:])

        val = validator("Validity")
        v = {"valid": True, "reasons": [], "claims": [],
             "checks": {"valid_requests": 400, "window_s": 2.5, "error_rate": 0.0,
                        "percentile": 90.0, "percentile_needs": 29}}
        val.validate(v)
        few = {"code": "too_few_requests", "message": "p99 needs at least 299 ..."}
        val.validate(dict(v, valid=False, reasons=[few]))
        claim = {"metric": "time_to_first_token", "stat": "p99", "limit": 200.0, "n": 40,
                 "over": 0, "holds": False, "confidence": 0.95, "max_over": -1, "min_n": 299}
        val.validate(dict(v, claims=[claim]))
        for bad in (dict(v, valid=False), dict(v, reasons=[few]),
                    dict(v, reasons=[dict(few, code="slow")]),
                    dict(v, checks=dict(v["checks"], percentile=42)),
                    dict(v, claims=[dict(claim, stat="avg")]),
                    {k: x for k, x in v.items() if k != "checks"}):
            self.assertFalse(val.is_valid(bad), bad)

        res = validator("GateResult")
        t = {"name": "n", "kind": "threshold", "metric": "error_rate", "stat": "value", "op": "<",
             "value": 0.01, "actual": None, "passed": False, "message": "the run has no ..."}
        r = {"name": "n", "kind": "regression", "metric": "time_to_first_token", "stat": "p99",
             "max_pct": 5.0, "confidence": 0.95, "baseline": {"name": "main", "runs": [3]},
             "base": 20.0, "actual": 22.0, "diff_pct": 10.0, "ci_pct": [8.0, 12.0],
             "verdict": "worse", "passed": False, "message": "worse than ..."}
        missing = {k: x for k, x in r.items()
                   if k not in ("base", "actual", "diff_pct", "ci_pct", "verdict")}
        for ok in (t, r, dict(missing, baseline={"name": "nope", "runs": []}),
                   dict(r, ci_pct=None, diff_pct=None, verdict="inconclusive", passed=True)):
            self.assertEqual([e.message for e in res.iter_errors(ok)], [], ok)
        for bad in (dict(t, max_pct=5.0), {k: x for k, x in t.items() if k != "actual"},
                    dict(r, op="<"), {k: x for k, x in r.items() if k != "verdict"},
                    dict(r, kind="limit"), dict(missing, baseline=None)):
            self.assertFalse(res.is_valid(bad), bad)

        entry = validator("CompareEntry")
        e = {"metric": "time_to_first_token", "stat": "p50", "unit": "ms", "direction": "lower",
             "base": 20.0, "head": 22.0, "diff": 2.0, "diff_pct": 10.0, "ci": [1.0, 3.0],
             "ci_pct": [5.0, 15.0], "verdict": "worse", "method": "bootstrap"}
        entry.validate(e)
        entry.validate(dict(e, metric="input_sequence_length", direction="none",
                            verdict="changed"))
        entry.validate(dict(e, ci=None, ci_pct=None, verdict="inconclusive"))
        entry.validate(dict(e, base=0.0, diff_pct=None, ci_pct=None, verdict="worse"))
        for bad in (dict(e, ci=None, ci_pct=None), dict(e, direction="none"),
                    dict(e, verdict="changed"), dict(e, method="ttest"), dict(e, stat="p1")):
            self.assertFalse(entry.is_valid(bad), bad)

        bl = validator("Baseline")
        b = {"name": "main", "kind": "rule", "run": None, "group": None,
             "rule": {"labels": {"branch": "main"}, "valid_only": True},
             "created_at": "2026-12-01T10:00:00.000Z", "updated_at": "2026-12-01T10:00:00.000Z",
             "resolves_to": []}
        bl.validate(b)
        bl.validate(dict(b, kind="run", run=3, rule=None, resolves_to=[3]))
        bl.validate(dict(b, kind="group", group=2, rule=None, resolves_to=[4, 5, 6]))
        for bad in (dict(b, kind="run", run=3), dict(b, kind="run", run=3, rule=None),
                    dict(b, rule={"labels": {}}), dict(b, resolves_to=[1, 2]),
                    dict(b, name="a/b")):
            self.assertFalse(bl.is_valid(bad), bad)
        req = validator("BaselineRequest")
        for ok in ({"run": 1}, {"group": 2}, {"rule": {}},
                   {"rule": {"labels": {"a": "b"}, "fingerprint": "0123456789abcdef",
                             "valid_only": False}}):
            self.assertEqual([e.message for e in req.iter_errors(ok)], [], ok)
        for bad in ({}, {"run": 1, "group": 2}, {"run": 0}, {"rule": {"x": 1}},
                    {"rule": {"labels": {"a": 1}}}, {"run": "1"}, []):
            self.assertFalse(req.is_valid(bad), bad)

class _ApiBase(unittest.TestCase):
    """Shared: a daemon, the document, and a checked request helper."""

    worker_bin = None  # None: the real headroom-worker beside headroomd
    daemon_args = ()  # more headroomd options
    daemon_env = None  # more environment variables for headroomd
    mock_dcgm = False  # the mock also serves its DCGM-like page (cls.dcgm: its address)

    @classmethod
    def setUpClass(cls):
        cls.doc = Doc(load_doc())
        cls.tmp = hrtest.tempdir()
        if cls.mock_dcgm:
            cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "5", "--itl-ms", "2",
                                         "--dcgm-listen", "127.0.0.1:0")
            line = cls.mock.p.stdout.readline().strip()
            if not line.startswith("dcgm listening on"):
                cls.mock.stop()
                raise AssertionError("headroom-mock --dcgm-listen printed %r" % line)
            cls.dcgm = line.split()[-1]
        else:
            cls.mock = hrtest.start_mock("--quiet")
        extra = tuple(cls.daemon_args)
        if cls.worker_bin == "stub":
            stub = os.path.join(cls.tmp.name, "stub-worker")
            with open(stub, "w") as f:
                f.write(STUB_WORKER.format(python=sys.executable))
            os.chmod(stub, stat.S_IRWXU)
            extra += ("--worker-bin", stub)
        data = os.path.join(cls.tmp.name, "data")
        os.mkdir(data)
        env = dict(os.environ)
        env.update(cls.daemon_env or {})
        cls.daemon = hrtest.Proc([HEADROOMD, "--listen", "127.0.0.1:0", "--data", data, *extra],
                                 "listening on", env=env)
        cls.api = hrtest.Api(cls.daemon.addr)

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        cls.mock.stop()
        cls.tmp.cleanup()
        if rc != 0:
            raise AssertionError("headroomd exited with status %s" % rc)

    def req(self, method, path, expect, body=None, raw=None, headers=None):
        """A request to /api/v1 + path, checked against the document; returns
        (parsed body, headers)."""
        if raw is None and body is not None:
            raw = json.dumps(body).encode()
        full = "/api/v1" + path
        status, hdrs, data = http_call(self.daemon.addr, method, full, raw, headers)
        parsed = self.doc.check(method, full, status, hdrs, data)
        self.assertEqual(status, expect, "%s %s: %r" % (method, full, data[:500]))
        return parsed, hdrs

    def error(self, method, path, expect, code, field="?", **kw):
        body, _ = self.req(method, path, expect, **kw)
        self.assertEqual(body["error"]["code"], code, body)
        if field != "?":
            self.assertEqual(body["error"]["field"], field, body)
        return body

    def create(self, spec):
        body, hdrs = self.req("POST", "/runs", 201, body=spec)
        self.assertEqual(hdrs.get("Location"), body["url"])
        self.assertEqual(body["url"], "/api/v1/runs/%d" % body["id"])
        return body["id"]

    def get(self, run_id):
        return self.req("GET", "/runs/%d" % run_id, 200)[0]

    def wait(self, run_id, states, timeout=30, cond=None):
        timeout *= hrtest.time_scale()
        deadline = time.time() + timeout
        while True:
            run = self.get(run_id)
            if run["state"] in states and (cond is None or cond(run)):
                return run
            if time.time() > deadline:
                raise AssertionError("run %d did not reach %s in %s s: %s"
                                     % (run_id, states, timeout, json.dumps(run)[:1500]))
            time.sleep(0.05)

    def check_summary_csv(self, text, summary):
        cols = self.doc.doc["paths"]["/api/v1/runs/{id}/summary"]["get"]["responses"]["200"][
            "content"]["text/csv"]["x-csv-columns"]
        rows = list(csv.reader(io.StringIO(text)))
        self.assertEqual(rows[0], cols)
        # the telemetry rows come last (test_telemetry.py checks their figures)
        tele = [r for r in rows if r[0].startswith("telemetry.")]
        self.assertEqual(rows[len(rows) - len(tele):], tele)
        for r in tele:
            self.assertEqual(len(r), len(cols), r)
        rows = rows[:len(rows) - len(tele)]
        n = len(summary["metrics"])
        self.assertEqual([r[0] for r in rows[1:n + 1]], list(summary["metrics"]))
        # the client rows: the verdict in the unit column, then each numeric
        # headline figure in the avg column, in the headline's order
        client = summary.get("client")
        if client is None:
            self.assertEqual(len(rows), n + 1)
        else:
            head = client["headline"]
            figures = [k for k, v in head.items() if isinstance(v, (int, float))]
            self.assertEqual([r[0] for r in rows[n + 1:]],
                             ["client.verdict"] + ["client." + k for k in figures])
            self.assertEqual(rows[n + 1], ["client.verdict", client["verdict"]] +
                             [""] * (len(cols) - 2))
            for k, r in zip(figures, rows[n + 2:]):
                self.assertEqual(len(r), len(cols), r)
                self.assertEqual(float(r[cols.index("avg")]), float(head[k]), r)
                self.assertEqual([c for i, c in enumerate(r) if i not in (0, cols.index("avg"))],
                                 [""] * (len(cols) - 2), r)
        for r in rows[1:n + 1]:
            self.assertEqual(len(r), len(cols), r)
            m = summary["metrics"][r[0]]
            self.assertEqual(r[1], m["unit"])
            for name, cell in zip(cols[2:], r[2:]):
                if name in m:
                    self.assertEqual(float(cell), float(m[name]), (r[0], name))
                else:
                    self.assertEqual(cell, "", (r[0], name))

    def check_records(self, run_id, expect_rows=None):
        """JSONL and CSV exports of a run: schema, column order, agreement."""
        rows, _ = self.req("GET", "/runs/%d/records" % run_id, 200)
        also, _ = self.req("GET", "/runs/%d/records?format=jsonl" % run_id, 200)
        self.assertEqual(rows, also)
        if expect_rows is not None:
            self.assertEqual(len(rows), expect_rows)
        order = self.doc.record_columns()
        for row in rows:
            self.assertEqual(list(row), order, "JSONL keys are not in RecordRow's order")
        text, _ = self.req("GET", "/runs/%d/records?format=csv" % run_id, 200)
        table = list(csv.reader(io.StringIO(text)))
        cols = self.doc.record_columns(csv_only=True)
        self.assertEqual(table[0], cols, "CSV header differs from RecordRow's properties")
        self.assertEqual(len(table) - 1, len(rows))
        for row, cells in zip(rows, table[1:]):
            self.assertEqual(len(cells), len(cols))
            for name, cell in zip(cols, cells):
                v = row[name]
                if v is None:
                    self.assertEqual(cell, "", name)
                elif isinstance(v, bool):
                    self.assertEqual(cell, "true" if v else "false")
                elif isinstance(v, (int, float)):
                    self.assertEqual(float(cell), float(v), name)
                else:
                    self.assertEqual(cell, v, name)
        return rows

    def check_telemetry(self, run_id, summary=None):
        """The telemetry export of a run as JSON and CSV: schema, order, t_s,
        agreement of the two formats and, when summary is given (the run has
        ended), with the summary's sources and series. Returns the JSON."""
        tj, hdrs = self.req("GET", "/runs/%d/telemetry" % run_id, 200)
        self.assertIsNone(hdrs.get("Content-Length"), "the export is streamed")
        also, _ = self.req("GET", "/runs/%d/telemetry?format=json" % run_id, 200)
        text, _ = self.req("GET", "/runs/%d/telemetry?format=csv" % run_id, 200)
        self.assertEqual(tj["run_id"], run_id)
        samples = tj["samples"]
        key = [(x["t_ns"], x["source"], x["name"], x["gpu"], x["labels"]) for x in samples]
        self.assertEqual(key, sorted(key), "samples are not in (t_ns, source, name, gpu, "
                                           "labels) order")
        t0 = tj["t0_wall_ns"]
        for x in samples:
            if t0 is None:
                self.assertIsNone(x["t_s"], x)
            else:
                self.assertAlmostEqual(x["t_s"], (x["t_ns"] - t0) / 1e9, delta=1e-6)
            self.assertEqual("detail" in x, x["kind"] == "histogram", x)
            if x.get("detail"):
                bounds = [b for b, _ in x["detail"]["buckets"]]
                self.assertIsNone(bounds[-1], "the +Inf bucket comes last: %s" % x)
                self.assertEqual(x["value"], x["detail"]["buckets"][-1][1], x)
        # CSV: the documented columns, the same rows in the same order
        cols = self.doc.doc["paths"]["/api/v1/runs/{id}/telemetry"]["get"]["responses"]["200"][
            "content"]["text/csv"]["x-csv-columns"]
        table = list(csv.reader(io.StringIO(text)))
        self.assertEqual(table[0], cols)
        self.assertTrue(text.endswith("\n"))
        if also != tj or len(table) - 1 != len(samples):
            # a running run stores more samples between the requests
            self.assertIsNone(summary, "the export of an ended run changed")
            return tj
        for x, cells in zip(samples, table[1:]):
            self.assertEqual(len(cells), len(cols), cells)
            row = dict(zip(cols, cells))
            self.assertEqual(int(row["t_ns"]), x["t_ns"])
            self.assertEqual(row["t_s"] == "", x["t_s"] is None, row)
            if x["t_s"] is not None:
                self.assertEqual(float(row["t_s"]), x["t_s"])
            for k in ("source", "name", "gpu", "labels", "kind"):
                self.assertEqual(row[k], x[k])
            if x["value"] is None:
                self.assertIn(row["value"], ("", "inf", "-inf"), row)
            else:
                self.assertEqual(float(row["value"]), x["value"])
            if "detail" in x:
                self.assertEqual(json.loads(row["detail"]), x["detail"])
            else:
                self.assertEqual(row["detail"], "")
        if summary is None:
            return tj
        tele = summary["telemetry"]
        self.assertEqual(tj["sources"], tele["sources"])
        for src in {s["source"] for s in tele["sources"]}:
            self.assertEqual(sum(s["samples"] for s in tele["sources"] if s["source"] == src),
                             sum(1 for x in samples if x["source"] == src),
                             "stored %s samples versus the sources' counts" % src)
        groups = {(x["source"], x["name"], x["gpu"], x["labels"]): x["kind"] for x in samples}
        mapped = {k: v for k, v in groups.items() if k[1].startswith(("gpu.", "server."))}
        self.assertEqual(tele["raw_series"], len(groups) - len(mapped))
        got = [(s["source"], s["name"], s["gpu"], s["labels"]) for s in tele["series"]]
        self.assertEqual(got, sorted(mapped), "one series per mapped group, in order")
        for s in tele["series"]:
            self.assertEqual(s["kind"], mapped[(s["source"], s["name"], s["gpu"], s["labels"])])
        return tj

    def check_series_against_samples(self, summary, export):
        """The window statistics recomputed from the raw samples (docs/metrics.md)."""
        tele = summary["telemetry"]
        ws, we = tele["window_start_ns"], tele["window_end_ns"]
        self.assertIsNotNone(ws)
        self.assertLessEqual(ws, we)
        t0 = export["t0_wall_ns"]
        self.assertAlmostEqual((we - ws) / 1e9, summary["window_s"], delta=1e-6)
        self.assertLessEqual(t0, ws)
        by = {}
        for x in export["samples"]:
            by.setdefault((x["source"], x["name"], x["gpu"], x["labels"]), []).append(x)
        for s in tele["series"]:
            pts = by[(s["source"], s["name"], s["gpu"], s["labels"])]
            what = json.dumps(s)
            if s["kind"] == "gauge":
                inside = [x["value"] for x in pts
                          if ws <= x["t_ns"] <= we and x["value"] is not None]
                self.assertEqual(s["count"], len(inside), what)
                if inside:
                    self.assertEqual((s["min"], s["max"]), (min(inside), max(inside)), what)
                    self.assertAlmostEqual(s["avg"], sum(inside) / len(inside),
                                           delta=1e-9 * max(1, abs(s["avg"])), msg=what)
                    self.assertTrue(s["min"] <= s["p50"] <= s["p90"] <= s["p99"] <= s["max"],
                                    what)
                continue
            # the samples bracketing the window: the last at or before its
            # start (else the first), the first at or after its end (else the last)
            a = max([i for i, x in enumerate(pts) if x["t_ns"] <= ws] or [0])
            b = min([i for i, x in enumerate(pts) if x["t_ns"] >= we] or [len(pts) - 1])
            self.assertLess(a, b, "the baseline and final passes bracket the window")
            if s["kind"] == "counter":
                inc = 0.0
                for p, q in zip(pts[a:b], pts[a + 1:b + 1]):
                    d = q["value"] - p["value"]
                    inc += d if d >= 0 else q["value"]
                self.assertAlmostEqual(s["delta"], inc, delta=1e-9 * max(1, inc), msg=what)
                dt = (pts[b]["t_ns"] - pts[a]["t_ns"]) / 1e9
                self.assertAlmostEqual(s["rate"], inc / dt, delta=1e-6 * max(1, s["rate"]),
                                       msg=what)
            else:
                self.assertEqual(s["count"], pts[b]["value"] - pts[a]["value"], what)

    def check_client(self, run_id, summary=None, spec=None):
        """The client self-telemetry export of a run as JSON and CSV: schema,
        order, agreement of the two formats and, when summary is given (the
        run has ended), with the summary's client section, which it must
        have. Returns the JSON."""
        cj, hdrs = self.req("GET", "/runs/%d/client" % run_id, 200)
        self.assertIsNone(hdrs.get("Content-Length"), "the export is streamed")
        also, _ = self.req("GET", "/runs/%d/client?format=json" % run_id, 200)
        text, _ = self.req("GET", "/runs/%d/client?format=csv" % run_id, 200)
        self.assertEqual(cj["run_id"], run_id)
        samples = cj["samples"]
        key = [(x["t_ns"], x["source"]) for x in samples]
        self.assertEqual(key, sorted(key), "samples are not in (t_ns, source) order")
        if cj["t0_wall_ns"] is None:
            self.assertEqual(samples, [])
        for x in samples:
            self.assertAlmostEqual(x["t_s"], x["t_ns"] / 1e9, delta=1e-9)
        cols = self.doc.doc["paths"]["/api/v1/runs/{id}/client"]["get"]["responses"]["200"][
            "content"]["text/csv"]["x-csv-columns"]
        table = list(csv.reader(io.StringIO(text)))
        self.assertEqual(table[0], cols)
        self.assertTrue(text.endswith("\n"))
        if also != cj or len(table) - 1 != len(samples):
            self.assertIsNone(summary, "the client export of an ended run changed")
            return cj
        for x, cells in zip(samples, table[1:]):
            self.assertEqual(len(cells), len(cols), cells)
            for k, cell in zip(cols, cells):
                v = x[k]
                if v is None:
                    self.assertEqual(cell, "", (k, cells))
                elif isinstance(v, list):  # the histograms: counts in one cell
                    self.assertEqual([int(c) for c in cell.split(" ")], v, (k, cells))
                elif isinstance(v, str):
                    self.assertEqual(cell, v, (k, cells))
                else:
                    self.assertEqual(float(cell), float(v), (k, cells))
        if summary is None:
            return cj
        self.assertIn("client", summary, "a run finished by this version has a client verdict")
        cl = summary["client"]
        if spec is not None:
            sc = spec["client"]
            self.assertEqual(cl["allow_client_bound"], sc["allow_client_bound"])
            for k in ("max_loop_busy", "max_busy_share", "max_lag_ms"):
                self.assertEqual(cl["thresholds"][k], sc[k], k)
        head = cl["headline"]
        self.assertEqual([w["worker"] for w in cl["workers"]], list(range(head["workers"])))
        # the verdict's figures come from the same samples (profiling ones)
        prof = {}
        for x in samples:
            if x["source"] != "daemon" and x["phase"] == "profiling":
                prof.setdefault(int(x["source"][1:]), []).append(x)
        for w in cl["workers"]:
            mine = prof.get(w["worker"], [])
            if w["samples"] == 0:
                self.assertTrue(any(n["code"] == "no_telemetry" and n["worker"] == w["worker"]
                                    for n in cl["notes"]), cl["notes"])
                continue
            what = "worker %d" % w["worker"]
            self.assertEqual(w["samples"], len(mine), what)
            window = sum(x["interval_s"] for x in mine)
            self.assertAlmostEqual(w["window_s"], window, delta=1e-6, msg=what)
            for k in ("loop_busy", "cpu"):  # null only for an interval of 0
                self.assertAlmostEqual(w[k + "_max"], max(x[k] or 0 for x in mine),
                                       delta=1e-12, msg=(what, k))
            self.assertEqual(w["timer_wakeups"], sum(sum(x["late_buckets"]) for x in mine))
            self.assertAlmostEqual(w["timer_late_max_ms"], max(x["late_max_ms"] for x in mine),
                                   delta=1e-9, msg=what)
            for k in ("in_flight", "queued", "port_errors"):
                self.assertEqual(w[k + "_max" if k != "port_errors" else k],
                                 max(x[k] for x in mine), (what, k))
            busy = sum(x["interval_s"] for x in mine
                       if (x["loop_busy"] or 0) >= cl["thresholds"]["max_loop_busy"])
            self.assertAlmostEqual(w["busy_share"], busy / window, delta=1e-6, msg=what)
        self.assertEqual(head["timer_wakeups"], sum(w.get("timer_wakeups", 0)
                                                    for w in cl["workers"]))
        daemon = [x for x in samples if x["source"] == "daemon"]
        if daemon:
            self.assertAlmostEqual(head["daemon_cpu_max"], max(x["cpu"] for x in daemon),
                                   delta=1e-12)
            self.assertEqual(head["daemon_ingest_backlog_max"],
                             max(x["record_backlog"] for x in daemon))
        else:
            self.assertEqual((head["daemon_cpu_max"], head["daemon_ingest_backlog_max"]),
                             (None, None))
        lag = summary["metrics"].get("schedule_lag", {})
        self.assertEqual(head["schedule_lag_p99_ms"], lag.get("p99"))
        return cj


class ApiSurfaceTest(_ApiBase):
    """Every route and error against headroomd with a stand-in worker that never
    gets ready: a started run stays `running` until cancelled, the next ones
    stay `queued`. Does not depend on headroom-worker."""

    worker_bin = "stub"

    def test_healthz(self):
        h, _ = self.req("GET", "/healthz", 200)
        self.assertEqual(h["status"], "ok")
        self.req("GET", "/healthz/", 200)  # one trailing slash is tolerated

    def test_errors(self):
        s = hrtest.spec(self.mock.addr)
        self.error("POST", "/runs", 400, "invalid_json", None, raw=b"{not json")
        self.error("POST", "/runs", 400, "invalid_json", None, raw=b"")
        self.error("POST", "/runs", 400, "wrong_type", None, raw=b"[]")
        bad = dict(s, colour="red")
        self.error("POST", "/runs", 400, "unknown_field", "colour", body=bad)
        bad = json.loads(json.dumps(s))
        bad["load"]["concurrency"] = 0
        self.error("POST", "/runs", 400, "out_of_range", "load.concurrency", body=bad)
        for path in ("/runs/999999", "/runs/abc", "/runs/0", "/runs/-1", "/runs/1.5",
                     "/runs/99999999999999999999999"):
            self.error("GET", path, 404, "not_found", "id")
        self.error("GET", "/runs/999999/summary", 404, "not_found", "id")
        self.error("GET", "/runs/999999/records", 404, "not_found", "id")
        self.error("POST", "/runs/999999/cancel", 404, "not_found", "id")
        self.error("POST", "/runs/x/cancel", 404, "not_found", "id")
        self.error("GET", "/nope", 404, "not_found", None)
        self.error("GET", "/runs/1/nope", 404, "not_found", None)
        self.error("DELETE", "/runs", 405, "method_not_allowed", None)
        self.error("PUT", "/runs/1", 405, "method_not_allowed", None, body={})
        self.error("GET", "/runs/1/cancel", 405, "method_not_allowed", None)
        self.error("POST", "/healthz", 405, "method_not_allowed", None, raw=b"")
        self.error("POST", "/runs/1/summary", 405, "method_not_allowed", None, raw=b"")
        self.error("DELETE", "/runs/1/records", 405, "method_not_allowed", None)
        self.error("GET", "/runs/999999/telemetry", 404, "not_found", "id")
        self.error("GET", "/runs/0/telemetry?format=csv", 404, "not_found", "id")
        self.error("GET", "/runs/999999/telemetry?format=jsonl", 400, "invalid_value", "format")
        self.error("GET", "/runs/1/telemetry?format=", 400, "invalid_value", "format")
        self.error("POST", "/runs/1/telemetry", 405, "method_not_allowed", None, raw=b"")
        self.error("GET", "/runs/1/telemetry/x", 404, "not_found", None)
        bad = dict(s, telemetry={"dcgm_urls": ["http://h:9400/metrics", "h:9401/metrics"]})
        self.error("POST", "/runs", 400, "invalid_value", "telemetry.dcgm_urls[1]", body=bad)
        bad = dict(s, telemetry={"interval_ms": 10})
        self.error("POST", "/runs", 400, "out_of_range", "telemetry.interval_ms", body=bad)
        bad = dict(s, telemetry={"gpus": [0]})
        self.error("POST", "/runs", 400, "unknown_field", "telemetry.gpus", body=bad)
        for q, field, code in (("limit=0", "limit", "out_of_range"),
                               ("limit=1001", "limit", "out_of_range"),
                               ("limit=x", "limit", "out_of_range"),
                               ("before=0", "before", "invalid_value"),
                               ("before=abc", "before", "invalid_value"),
                               ("state=done", "state", "invalid_value")):
            self.error("GET", "/runs?" + q, 400, code, field)
        self.error("GET", "/runs/999999/summary?format=xml", 400, "invalid_value", "format")
        self.error("GET", "/runs/999999/records?format=json", 400, "invalid_value", "format")
        # the client export, and the spec's client section and target.mock
        self.error("GET", "/runs/999999/client", 404, "not_found", "id")
        self.error("GET", "/runs/abc/client?format=csv", 404, "not_found", "id")
        self.error("GET", "/runs/999999/client?format=jsonl", 400, "invalid_value", "format")
        self.error("POST", "/runs/1/client", 405, "method_not_allowed", None, raw=b"")
        # the dashboard's time series
        self.error("GET", "/runs/999999/timeseries", 404, "not_found", "id")
        self.error("GET", "/runs/999999/timeseries?step_ms=0", 400, "out_of_range", "step_ms")
        self.error("POST", "/runs/1/timeseries", 405, "method_not_allowed", None, raw=b"")
        self.error("GET", "/runs/999999/report.html", 404, "not_found", "id")
        self.error("GET", "/runs/999999/distribution", 400, "missing_field", "metric")
        self.error("GET", "/runs/999999/distribution?metric=ttft", 400, "invalid_value", "metric")
        self.error("GET", "/runs/999999/distribution?metric=request_latency", 404, "not_found",
                   "id")
        self.error("GET", "/runs/999999/requests?limit=0", 400, "out_of_range", "limit")
        self.error("GET", "/runs/999999/requests?order=x", 400, "invalid_value", "order")
        self.error("GET", "/runs/999999/requests?order=seq&from=1", 400, "invalid_value", "from")
        self.error("GET", "/runs/999999/requests?from=0/1", 400, "invalid_value", "from")
        self.error("GET", "/runs/999999/requests?order=seq", 404, "not_found", "id")
        self.error("GET", "/runs/999999/live", 404, "not_found", "id")
        self.error("GET", "/runs/999999/requests", 404, "not_found", "id")
        mock = json.loads(json.dumps(s))
        mock["target"]["mock"] = True
        self.error("POST", "/runs", 400, "invalid_value", "target.url", body=mock)
        del mock["target"]["url"]
        mock["target"]["mock"] = "yes"
        self.error("POST", "/runs", 400, "wrong_type", "target.mock", body=mock)
        del mock["target"]["mock"]
        self.error("POST", "/runs", 400, "missing_field", "target.url", body=mock)
        for client, code, field in (({"colour": 1}, "unknown_field", "client.colour"),
                                    ({"max_loop_busy": 0.01}, "out_of_range",
                                     "client.max_loop_busy"),
                                    ({"max_busy_share": 1.5}, "out_of_range",
                                     "client.max_busy_share"),
                                    ({"max_lag_ms": 0}, "out_of_range", "client.max_lag_ms"),
                                    ({"allow_client_bound": 1}, "wrong_type",
                                     "client.allow_client_bound"),
                                    ([], "wrong_type", "client")):
            self.error("POST", "/runs", 400, code, field, body=dict(s, client=client))
        # calibrations: bad bodies (validated before anything is queued), unknown ids
        for body, field in (({"osl": [8], "colour": 1}, "colour"), ({"osl": [0]}, "osl"),
                            ({"osl": [65537]}, "osl"), ({"osl": []}, "osl"),
                            ({"osl": list(range(1, 10))}, "osl"), ({"osl": [8, 8]}, "osl"),
                            ({"osl": [8.0]}, "osl"), ({"osl": 8}, "osl"),
                            ({"duration_s": 0.4}, "duration_s"),
                            ({"duration_s": 601}, "duration_s"),
                            ({"duration_s": "1"}, "duration_s"), ({"isl": 0}, "isl"),
                            ({"isl": 16.0}, "isl"), ({"concurrency": 4097}, "concurrency"),
                            ({"rates": [0.5]}, "rates"), ({"rates": [1e7]}, "rates"),
                            ({"rates": [500, 500.0]}, "rates"), ({"rates": {}}, "rates"),
                            ({"rates": [199], "duration_s": 0.5}, "rates"),
                            ({"max_lag_ms": 0.001}, "max_lag_ms"),
                            ({"max_lag_ms": 1001}, "max_lag_ms"), ([], None)):
            self.error("POST", "/calibrations", 400, "invalid_value", field, body=body)
        self.error("POST", "/calibrations", 400, "invalid_json", None, raw=b"{osl")
        self.error("POST", "/calibrations", 400, "invalid_json", None, raw=b"null")
        for path in ("/calibrations/999999", "/calibrations/abc", "/calibrations/0"):
            self.error("GET", path, 404, "not_found", "id")
        self.error("DELETE", "/calibrations/1", 405, "method_not_allowed", None)
        self.error("PUT", "/calibrations", 405, "method_not_allowed", None, raw=b"")
        for q in ("limit=0", "limit=1001", "limit=x"):
            self.error("GET", "/calibrations?" + q, 400, "out_of_range", "limit")
        lst, _ = self.req("GET", "/calibrations?limit=5", 200)
        self.assertEqual(lst, {"calibrations": []})

    def test_datasets(self):
        """Every dataset route and status (docs/datasets.md; the formats
        themselves are exercised in test_datasets.py)."""
        octet = {"Content-Type": "application/octet-stream"}
        single = b'{"text": "hello", "output_length": 4, "extra": {"top_p": 1}}\n'
        ds, hdrs = self.req("POST", "/datasets?format=single_turn&name=openapi", 201,
                            raw=single, headers=octet)
        self.assertEqual(hdrs.get("Location"), "/api/v1/datasets/%d" % ds["id"])
        again, _ = self.req("POST", "/datasets?format=single_turn", 200, raw=single,
                            headers=octet)
        self.assertEqual(again, ds)
        sgpt = json.dumps([{"id": "x", "conversations": [
            {"from": "human", "value": "a question"}, {"from": "gpt", "value": "an answer"}]},
            {"conversations": []}]).encode()
        filt, _ = self.req("POST", "/datasets?format=sharegpt&max_reply=5&unit=words", 201,
                           raw=sgpt, headers=octet)
        self.assertEqual(filt["stats"]["skipped"], 1)
        multi = (b'{"session_id": "s", "turns": [{"role": "system", "text": "sys"}, '
                 b'{"text": "a", "delay": 5}, {"text": "b", "delay": 6}]}\n')
        mt, _ = self.req("POST", "/datasets?format=multi_turn", 201, raw=multi, headers=octet)
        trace = (b'{"timestamp": 0, "input_length": 5, "output_length": 2, "hash_ids": [3]}\n'
                 b'{"timestamp": 2, "input_length": 6, "output_length": 2}\n')
        mc, _ = self.req("POST", "/datasets?format=mooncake_trace", 201, raw=trace,
                         headers=octet)
        for d in (ds, filt, mt, mc):
            one, _ = self.req("GET", "/datasets/%d" % d["id"], 200)
            self.assertEqual(one, d)
            ent, _ = self.req("GET", "/datasets/%d/entries?limit=100&offset=0" % d["id"], 200)
            self.assertEqual(len(ent["entries"]), d["entries"])
        lst, _ = self.req("GET", "/datasets?limit=1000", 200)
        self.assertEqual([d["id"] for d in lst["datasets"]][:4],
                         [mc["id"], mt["id"], filt["id"], ds["id"]])
        self.req("GET", "/datasets/", 200)
        err = self.error("POST", "/datasets?format=multi_turn", 400, "invalid_dataset",
                         "turns[1].text", raw=b'{"turns": [{"text": "a"}, {"text": 1}]}\n',
                         headers=octet)
        self.assertEqual(err["error"]["line"], 1)
        err = self.error("POST", "/datasets?format=sharegpt", 400, "invalid_dataset", None,
                         raw=b"[]", headers=octet)
        self.assertIsNone(err["error"]["line"])
        self.error("POST", "/datasets", 400, "missing_field", "format", raw=single,
                   headers=octet)
        self.error("POST", "/datasets?format=json", 400, "invalid_value", "format", raw=single,
                   headers=octet)
        self.error("POST", "/datasets?format=sharegpt&min_reply=0", 400, "out_of_range",
                   "min_reply", raw=sgpt, headers=octet)
        self.error("GET", "/datasets?limit=0", 400, "out_of_range", "limit")
        self.error("GET", "/datasets/999999", 404, "not_found", "id")
        self.error("GET", "/datasets/x/entries", 404, "not_found", "id")
        self.error("GET", "/datasets/%d/entries?limit=101" % ds["id"], 400, "out_of_range",
                   "limit")
        self.error("GET", "/datasets/%d/entries?offset=1000000" % ds["id"], 400, "out_of_range",
                   "offset")
        gone, _ = self.req("POST", "/datasets?format=single_turn&name=gone", 201,
                           raw=b'{"text": "short-lived"}\n', headers=octet)
        self.assertIsNone(self.req("DELETE", "/datasets/%d" % gone["id"], 204)[0])
        self.error("DELETE", "/datasets/%d" % gone["id"], 404, "not_found", "id")
        self.error("DELETE", "/datasets", 405, "method_not_allowed", None)
        self.error("POST", "/datasets/%d/entries" % ds["id"], 405, "method_not_allowed", None,
                   raw=b"")
        head = (b"POST /api/v1/datasets?format=single_turn HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Length: %d\r\n\r\n" % ((256 << 20) + 1))
        st, hdrs, body = upload(self.daemon.addr, head, [b" " * 65536])
        self.assertEqual(st, 413)
        parsed = self.doc.check("POST", "/api/v1/datasets", st, hdrs, body)
        self.assertEqual(parsed["error"]["code"], "body_too_large")
        # a body over 1 MiB but within the dataset bound is read
        big = b'{"text": "%s"}\n' % (b"w " * 400000) * 2
        self.assertGreater(len(big), MAX_BODY)
        b, _ = self.req("POST", "/datasets?format=random_pool", 201, raw=big, headers=octet)
        self.assertEqual(b["entries"], 2)

    def test_too_large(self):
        addr = self.daemon.addr
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % (MAX_BODY + 1))
        st, hdrs, body = upload(addr, head, [b" " * 65536] * 16 + [b" "])
        self.assertEqual(st, 413)
        parsed = self.doc.check("POST", "/api/v1/runs", st, hdrs, body)
        self.assertEqual(parsed["error"]["code"], "body_too_large")
        head = (b"POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        st, hdrs, body = upload(addr, head, chunked(MAX_BODY + 4096))
        self.assertEqual(st, 413, body)
        parsed = self.doc.check("POST", "/api/v1/runs", st, hdrs, body)
        self.assertEqual(parsed["error"]["code"], "body_too_large")
        self.req("GET", "/healthz", 200)

    def test_lifecycle(self):
        s = hrtest.spec(self.mock.addr, requests=5)
        s["labels"] = {"suite": "openapi"}
        first = self.create(s)
        run = self.wait(first, ("running",))
        self.assertIsNotNone(run["started_at"])
        second = self.create(dict(s, name="queued one"))
        third = self.create(dict(s, name="queued two"))

        q = self.get(second)
        self.assertEqual(q["state"], "queued")
        self.assertIsNone(q["started_at"])
        self.assertIsNone(q["progress"])
        self.assertIsNone(q["summary"])
        self.assertEqual(q["labels"], {"suite": "openapi"})
        self.assertEqual(q["spec"]["workload"]["kind"], "synthetic")  # normalised
        self.assertEqual(q["spec"]["telemetry"], DEFAULT_TELEMETRY)

        # telemetry of a queued run: nothing yet
        t = self.check_telemetry(second)
        self.assertEqual((t["t0_wall_ns"], t["sources"], t["samples"]), (None, [], []))
        c = self.check_client(second)
        self.assertEqual((c["t0_wall_ns"], c["samples"]), (None, []))
        text, _ = self.req("GET", "/runs/%d/client?format=csv" % second, 200)
        self.assertEqual(text.splitlines(), [",".join(self.doc.doc["paths"][
            "/api/v1/runs/{id}/client"]["get"]["responses"]["200"]["content"]["text/csv"][
            "x-csv-columns"])])
        self.assertEqual(q["spec"]["client"], DEFAULT_CLIENT)
        self.assertIs(q["spec"]["target"]["mock"], False)
        # of a running one whose workers never got ready: samples without t_s
        t = self.check_telemetry(first)
        self.assertIsNone(t["t0_wall_ns"])
        self.assertEqual(t["sources"], [])

        h, _ = self.req("GET", "/healthz", 200)
        self.assertEqual((h["queued"], h["running"]), (2, 1))

        # list: paging and filters
        page, _ = self.req("GET", "/runs", 200)
        ids = [r["id"] for r in page["runs"]]
        self.assertEqual(ids[:3], [third, second, first])
        page, _ = self.req("GET", "/runs?limit=2", 200)
        self.assertEqual([r["id"] for r in page["runs"]], [third, second])
        self.assertEqual(page["next_before"], second)
        page, _ = self.req("GET", "/runs?limit=2&before=%d" % second, 200)
        self.assertEqual(page["runs"][0]["id"], first)
        page, _ = self.req("GET", "/runs?state=queued&limit=1000", 200)
        self.assertEqual([r["id"] for r in page["runs"]], [third, second])
        self.assertIsNone(page["next_before"])
        page, _ = self.req("GET", "/runs?state=running", 200)
        self.assertEqual([r["id"] for r in page["runs"]], [first])
        page, _ = self.req("GET", "/runs/?state=interrupted", 200)
        self.assertEqual(page["runs"], [])

        # no summary yet; records of a queued run: empty
        self.error("GET", "/runs/%d/summary" % second, 409, "not_ready", None)
        self.error("GET", "/runs/%d/summary?format=csv" % first, 409, "not_ready", None)
        self.check_records(second, expect_rows=0)

        # cancel the queued ones at once
        c, _ = self.req("POST", "/runs/%d/cancel" % second, 202)
        self.assertEqual((c["id"], c["state"]), (second, "cancelled"))
        c, _ = self.req("POST", "/runs/%d/cancel" % third, 202, raw=b"ignored")
        self.assertEqual(c["state"], "cancelled")
        q = self.get(second)
        self.assertEqual(q["state"], "cancelled")
        self.assertIsNone(q["started_at"])
        self.assertIsNotNone(q["finished_at"])
        self.assertIsNotNone(q["reason"])
        self.error("POST", "/runs/%d/cancel" % second, 409, "conflict", None)
        self.error("GET", "/runs/%d/summary" % second, 409, "not_ready", None)

        # cancel the running one: it ends cancelled, with a (empty) summary
        c, _ = self.req("POST", "/runs/%d/cancel" % first, 202)
        self.assertEqual((c["id"], c["state"]), (first, "running"))
        run = self.wait(first, hrtest.TERMINAL, timeout=20)
        self.assertEqual(run["state"], "cancelled", run)
        self.assertIsNotNone(run["finished_at"])
        self.assertIsNotNone(run["summary"])
        self.assertIsNotNone(run["progress"])
        self.assertEqual(run["progress"]["phase"], "starting")  # no worker ever got ready
        summary, _ = self.req("GET", "/runs/%d/summary" % first, 200)
        self.assertEqual(summary, run["summary"])
        # telemetry without a profiling window: sources, no statistics
        tele = summary["telemetry"]
        self.assertEqual((tele["window_start_ns"], tele["window_end_ns"],
                          tele["energy_per_output_token_j"]), (None, None, None))
        targets = {}
        for src in tele["sources"]:
            targets.setdefault(src["source"], []).append(src["target"])
        self.assertEqual(len(targets.get("nvml", [])), 1, tele["sources"])
        self.assertEqual(targets["dcgm"], DEFAULT_TELEMETRY["dcgm_urls"])
        self.assertEqual(targets["server"], ["http://%s/metrics" % self.mock.addr])
        server = [src for src in tele["sources"] if src["source"] == "server"][0]
        self.assertEqual(server["status"], "ok", server)  # the mock has a /metrics page
        self.assertTrue(any(x["source"] == "server" for x in tele["series"]))
        for x in tele["series"]:
            if x["kind"] == "gauge":
                self.assertEqual(x["count"], 0, x)
            elif x["kind"] == "counter":
                self.assertEqual((x["delta"], x["rate"]), (0, None), x)
            else:  # the mock has served nothing: nothing to count either way
                self.assertEqual(x["count"], 0, x)
        t = self.check_telemetry(first, summary)
        self.assertIsNone(t["t0_wall_ns"])
        self.assertGreater(len(t["samples"]), 0)
        # no worker ever spoke: no samples, so no evidence either way
        c = self.check_client(first, summary, run["spec"])
        self.assertEqual((c["t0_wall_ns"], c["samples"]), (None, []))
        cl = summary["client"]
        self.assertEqual((cl["verdict"], cl["reasons"], cl["ceiling"]),
                         ("inconclusive", [], None))
        self.assertEqual(cl["workers"], [{"worker": 0, "samples": 0}])
        self.assertEqual([(n["code"], n["worker"]) for n in cl["notes"]], [("no_telemetry", 0)])
        self.assertEqual(summary["run_id"], first)
        self.assertEqual(summary["load"], {
            "mode": "concurrency", "requested_rate": None, "requested_concurrency": 4,
            "sent": 0, "unsent": 0, "achieved_rate": None,
            "achieved_concurrency": {"avg": None, "max": 0}})
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % first, 200)
        self.check_summary_csv(text, summary)
        self.check_records(first, expect_rows=0)
        self.error("POST", "/runs/%d/cancel" % first, 409, "conflict", None)
        h, _ = self.req("GET", "/healthz", 200)
        self.assertEqual((h["queued"], h["running"]), (0, 0))


    def test_mode_specs(self):
        """Rate, trace and warm-up specs through the API: the normalised spec
        GET returns (every default filled in) is a RunSpec, a starting run's
        progress says so, and a rate run's (empty) summary has its load."""
        addr = self.mock.addr
        trace = ('{"timestamp": 0, "input_length": 4, "output_length": 2, "hash_ids": [1]}\n'
                 '\n{"timestamp": 12.5, "input_length": 6, "output_length": 3,'
                 ' "session_id": "a"}\n')
        rate = hrtest.spec(addr)
        rate["load"] = {"mode": "rate", "rate": 50, "arrival": "gamma", "smoothness": 4,
                        "max_concurrency": 8, "requests": 100, "ramp_s": 1,
                        "cancel": {"fraction": 0.1, "after_s": 0.5}}
        rate["workload"]["sessions"] = {"turns": {"mean": 2}}
        rate["warmup"] = {"duration_s": 1}
        replay = hrtest.spec(addr)
        replay["workload"] = {"kind": "trace", "trace": trace}
        replay["load"] = {"mode": "trace", "speedup": 2, "end_s": 10}
        replay["warmup"] = {"requests": 2, "load": {"mode": "rate", "rate": 5}}
        closed = hrtest.spec(addr, requests=None, duration_s=5, ramp_s=0.5, grace_s=1)
        closed["warmup"] = {"requests": 3, "load": {"mode": "rate", "rate": 20,
                                                    "arrival": "constant"}}
        ids = [self.create(rate), self.create(replay), self.create(closed)]
        try:
            # the first runs (with the stand-in worker that never gets ready)
            run = self.wait(ids[0], ("running",) + hrtest.TERMINAL, timeout=10,
                            cond=lambda r: r["progress"] is not None)
            self.assertEqual(run["state"], "running", run["reason"])
            self.assertEqual(run["progress"]["phase"], "starting")
            n = run["spec"]
            self.assertEqual(n["load"], {
                "mode": "rate", "rate": 50, "arrival": "gamma", "smoothness": 4,
                "max_concurrency": 8, "requests": 100, "ramp_s": 1, "grace_s": 30,
                "cancel": {"fraction": 0.1, "after_s": 0.5}})
            self.assertEqual(n["warmup"], {"duration_s": 1, "load": {  # the run's shape
                "mode": "rate", "rate": 50, "arrival": "gamma", "smoothness": 4,
                "max_concurrency": 8, "ramp_s": 1}})
            self.assertEqual(n["workload"]["sessions"], {
                "turns": {"mean": 2, "stddev": 0}, "think_time_s": {"mean": 0, "stddev": 0}})
            self.assertEqual(n["workers"], 1)
            self.assertEqual(n["telemetry"], DEFAULT_TELEMETRY)
            n = self.get(ids[1])["spec"]
            self.assertEqual(n["load"], {"mode": "trace", "speedup": 2, "start_s": 0,
                                         "end_s": 10, "grace_s": 30,
                                         "cancel": {"fraction": 0, "after_s": 0}})
            self.assertEqual(n["workload"]["trace"], trace)
            self.assertEqual(n["warmup"], {"requests": 2, "load": {
                "mode": "rate", "rate": 5, "arrival": "poisson", "ramp_s": 0}})
            n = self.get(ids[2])["spec"]
            self.assertEqual(n["load"], {"mode": "concurrency", "concurrency": 4,
                                         "duration_s": 5, "ramp_s": 0.5, "grace_s": 1,
                                         "cancel": {"fraction": 0, "after_s": 0}})
            self.assertEqual(n["warmup"]["load"], {"mode": "rate", "rate": 20,
                                                   "arrival": "constant", "ramp_s": 0})
        finally:
            for i in reversed(ids):
                st, _, _ = http_call(self.daemon.addr, "POST", "/api/v1/runs/%d/cancel" % i,
                                     b"")
                self.assertIn(st, (202, 409))
        run = self.wait(ids[0], hrtest.TERMINAL, timeout=20)
        self.assertEqual(run["summary"]["load"], {
            "mode": "rate", "requested_rate": 50, "requested_concurrency": 8, "sent": 0,
            "unsent": 0, "achieved_rate": None, "achieved_concurrency": {"avg": None, "max": 0}})
        self.assertEqual(run["summary"]["counts"]["warmup"], 0)
        for tag in ("schedule_lag", "scheduled_time_to_first_token",
                    "scheduled_request_latency", "time_to_first_output_token"):
            self.assertEqual(run["summary"]["metrics"][tag], {"unit": "ms", "count": 0})
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % ids[0], 200)
        self.check_summary_csv(text, run["summary"])
        for i in ids[1:]:
            run = self.wait(i, hrtest.TERMINAL, timeout=20)
            self.assertEqual(run["state"], "cancelled")
            self.assertIsNone(run["summary"])


class HistorySurfaceTest(_ApiBase):
    """The history routes (docs/compare.md) against headroomd with the stand-in
    worker: runs that never finish (the first stays `running`, the next ones
    `queued`), so every list filter, sort and page, PATCH, DELETE, repeat
    groups, baselines, and every 4xx of GET /compare and GET /series, are
    exercised without depending on headroom-worker. What needs finished
    runs is in FinishedRunTest.test_history."""

    worker_bin = "stub"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # one run that stays running for the whole class; every other run
        # stays queued behind it
        st, _, data = http_call(cls.daemon.addr, "POST", "/api/v1/runs",
                                json.dumps(hrtest.spec(cls.mock.addr)).encode())
        assert st == 201, data
        cls.busy = json.loads(data)["id"]
        deadline = time.time() + 30 * hrtest.time_scale()
        while json.loads(http_call(cls.daemon.addr, "GET", "/api/v1/runs/%d" % cls.busy)[2])[
                "state"] != "running":
            assert time.time() < deadline, "run %d did not start" % cls.busy
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        try:
            http_call(cls.daemon.addr, "POST", "/api/v1/runs/%d/cancel" % cls.busy, b"")
            deadline = time.time() + 20 * hrtest.time_scale()
            while json.loads(http_call(cls.daemon.addr, "GET", "/api/v1/runs/%d" % cls.busy)[2])[
                    "state"] == "running" and time.time() < deadline:
                time.sleep(0.05)
        finally:
            super().tearDownClass()

    def setUp(self):
        self.addCleanup(self.cancel_queued)

    def cancel_queued(self):
        """Each test starts with nothing queued."""
        st, _, data = http_call(self.daemon.addr, "GET", "/api/v1/runs?limit=1000&state=queued")
        self.assertEqual(st, 200)
        for r in json.loads(data)["runs"]:
            st, _, _ = http_call(self.daemon.addr, "POST", "/api/v1/runs/%d/cancel" % r["id"],
                                 b"")
            self.assertEqual(st, 202)

    def spec(self, name="hist", labels=None, **load):
        s = hrtest.spec(self.mock.addr, **load)
        s["name"] = name
        s["labels"] = labels or {}
        return s

    def ids(self, query, among=None):
        page, _ = self.req("GET", "/runs?" + query, 200)
        got = [r["id"] for r in page["runs"]]
        return [i for i in got if among is None or i in among]

    def pages(self, query, limit):
        """Every run of query, a page of `limit` at a time by next_cursor."""
        out, cursor, n = [], None, 0
        while True:
            q = "%s&limit=%d%s" % (query, limit, "&cursor=" + urllib.parse.quote(cursor)
                                   if cursor else "")
            page, _ = self.req("GET", "/runs?" + q, 200)
            self.assertLessEqual(len(page["runs"]), limit)
            out += page["runs"]
            cursor = page["next_cursor"]
            n += 1
            self.assertLess(n, 100)
            if cursor is None:
                return out

    def test_list_filters_sorting_and_paging(self):
        a = self.create(self.spec("alpha one", {"model": "m1", "branch": "main",
                                                "git sha": "a/1"}))
        b = self.create(self.spec("Beta", {"model": "m2", "branch": "main"}))
        c = self.create(self.spec("gamma", {"model": "m1"}, requests=7))
        mine = (a, b, c)
        page, _ = self.req("GET", "/runs?limit=1000", 200)
        rows = {r["id"]: r for r in page["runs"]}
        for i in mine:
            r = rows[i]
            self.assertEqual((r["note"], r["pinned"], r["group_id"], r["verdict"], r["valid"],
                              r["gates"]), (None, False, None, None, None, None), r)
            self.assertNotIn("sort_value", r)
        self.assertEqual(rows[a]["labels"]["git sha"], "a/1")
        # the same target, workload and load share a fingerprint; name and labels aside
        self.assertEqual(rows[a]["fingerprint"], rows[b]["fingerprint"])
        self.assertNotEqual(rows[a]["fingerprint"], rows[c]["fingerprint"])
        self.assertEqual((page["next_before"], page["next_cursor"]), (None, None))
        # label selectors, alone and together (AND), percent-encoded
        self.assertEqual(self.ids("label.model=m1", mine), [c, a])
        self.assertEqual(self.ids("label.model!=m1&label.branch", mine), [b])
        self.assertEqual(self.ids("label.branch!&label.model=m1", mine), [c])
        self.assertEqual(self.ids("label.branch", mine), [b, a])
        self.assertEqual(self.ids("label.git%20sha=a%2F1", mine), [a])
        self.assertEqual(self.ids("label.model=", mine), [])  # the empty value, not presence
        self.assertEqual(self.ids("label.nothere!&label.model!=m2", mine), [c, a])
        # name, fingerprint, state, time
        self.assertEqual(self.ids("name=ALPHA", mine), [a])
        self.assertEqual(self.ids("name=a", mine), [c, b, a])
        self.assertEqual(self.ids("fingerprint=%s" % rows[a]["fingerprint"], mine), [b, a])
        self.assertEqual(self.ids("state=queued&label.model=m1", mine), [c, a])
        self.assertEqual(self.ids("state=running", mine + (self.busy,)), [self.busy])
        created = rows[a]["created_at"]
        self.assertEqual(self.ids("since=2000-01-01&until=2999-12-31T23:59:59.999Z", mine),
                         [c, b, a])
        self.assertEqual(self.ids("since=%s" % created[:19] + "Z", mine), [c, b, a])
        self.assertEqual(self.ids("until=2000-01-01T00:00:00.5Z", mine), [])
        self.assertEqual(self.ids("since=253402300799", mine), [])
        self.assertEqual(self.ids("until=946684800", mine), [])  # 2000-01-01 in Unix seconds
        # sorting
        asc = self.ids("sort=id&limit=1000", mine)
        self.assertEqual(asc, [a, b, c])
        self.assertEqual(self.ids("sort=created_at&limit=1000", mine), asc)
        self.assertEqual(self.ids("sort=-created_at&limit=1000", mine), [c, b, a])
        # names compare as bytes: "Beta" < "alpha one" < "gamma"
        self.assertEqual(self.ids("sort=name&limit=1000", mine), [b, a, c])
        self.assertEqual(self.ids("sort=-name&limit=1000", mine), [c, a, b])
        page, _ = self.req("GET", "/runs?sort=-time_to_first_token.p99&limit=1000", 200)
        self.assertTrue(all(r["sort_value"] is None for r in page["runs"]), page)
        page, _ = self.req("GET", "/runs?sort=request_throughput.value&label.model=m1", 200)
        self.assertEqual([r["id"] for r in page["runs"]], [a, c])  # nulls last, by id
        # paging: next_cursor in every order, next_before in the default one
        page, _ = self.req("GET", "/runs?limit=1&label.model=m1", 200)
        self.assertEqual((page["runs"][0]["id"], page["next_before"]), (c, c))
        self.assertIsNotNone(page["next_cursor"])
        page, _ = self.req("GET", "/runs?limit=1&label.model=m1&before=%d" % c, 200)
        self.assertEqual(([r["id"] for r in page["runs"]], page["next_before"]), ([a], None))
        for sort in ("-id", "id", "name", "-name", "-time_to_first_token.p99",
                     "request_throughput.value"):
            whole, _ = self.req("GET", "/runs?limit=1000&sort=" + sort, 200)
            paged = self.pages("sort=" + sort, 2)
            self.assertEqual([r["id"] for r in paged], [r["id"] for r in whole["runs"]], sort)
            page, _ = self.req("GET", "/runs?limit=1&sort=" + sort, 200)
            if sort != "-id":
                self.assertIsNone(page["next_before"], sort)
        # bad queries: the parameter (a selector's key) in `field`
        for q, code, field in (
                ("name=" + "x" * 257, "invalid_value", "name"),
                ("since=yesterday", "invalid_value", "since"),
                ("since=2026-12-01T10:00:00+01:00", "invalid_value", "since"),
                ("until=2026-13-01", "invalid_value", "until"),
                ("fingerprint=XYZ", "invalid_value", "fingerprint"),
                ("fingerprint=%s" % rows[a]["fingerprint"].upper(), "invalid_value",
                 "fingerprint"),
                ("group=0", "invalid_value", "group"), ("group=x", "invalid_value", "group"),
                ("label.=x", "invalid_value", "label."),
                ("label.%s=x" % ("k" * 257), "invalid_value", ("label." + "k" * 257)[:200]),
                ("label.k=" + "v" * 4097, "invalid_value", "label.k"),
                ("&".join("label.k%d=v" % i for i in range(17)), "invalid_value", "label.k16"),
                ("sort=nope", "invalid_value", "sort"),
                ("sort=time_to_first_token.p42", "invalid_value", "sort"),
                ("sort=time_to_first_token.value", "invalid_value", "sort"),
                ("sort=request_throughput.p99", "invalid_value", "sort"),
                ("sort=name&before=3", "invalid_value", "before"),
                ("cursor=zz", "invalid_value", "cursor"),
                ("cursor=v:x:1", "invalid_value", "cursor"),
                ("cursor=i:0", "invalid_value", "cursor"),
                ("limit=0", "out_of_range", "limit"), ("state=done", "invalid_value", "state")):
            self.error("GET", "/runs?" + q, 400, code, field)

    def test_patch_and_delete(self):
        first = self.busy
        rid = self.create(self.spec("to edit", {"a": "1", "b": "2"}))
        run, _ = self.req("PATCH", "/runs/%d" % rid, 200,
                          body={"labels": {"b": None, "c": "3"}, "note": "flaky host",
                                "pinned": True})
        self.assertEqual((run["labels"], run["note"], run["pinned"]),
                         ({"a": "1", "c": "3"}, "flaky host", True))
        self.assertEqual(run["spec"]["labels"], {"a": "1", "b": "2"})  # as submitted
        self.assertEqual(run, self.get(rid))
        self.assertIn(rid, self.ids("label.c=3"))
        self.assertNotIn(rid, self.ids("label.b"))
        run, _ = self.req("PATCH", "/runs/%d" % rid, 200, body={})
        self.assertEqual((run["note"], run["pinned"]), ("flaky host", True))
        run, _ = self.req("PATCH", "/runs/%d/" % rid, 200,
                          body={"note": None, "pinned": False, "labels": {}})
        self.assertEqual((run["labels"], run["note"], run["pinned"]), ({"a": "1", "c": "3"},
                                                                       None, False))
        run, _ = self.req("PATCH", "/runs/%d" % first, 200, body={"note": "x" * 4096})
        self.assertEqual(run["state"], "running")  # a running run can be edited too
        too_many = {"labels": {"k%d" % i: "v" for i in range(63)}}
        for body, raw, code, field in (
                (None, b"{not json", "invalid_json", None),
                (None, b'{"note": "a", "note": "b"}', "invalid_json", None),
                (None, b"", "invalid_json", None),
                ([], None, "invalid_value", None),
                ({"colour": "red"}, None, "invalid_value", "colour"),
                ({"labels": ["a"]}, None, "invalid_value", "labels"),
                ({"labels": {"x": 5}}, None, "invalid_value", "labels.x"),
                ({"labels": {"": "v"}}, None, "invalid_value", "labels."),
                ({"labels": {"x": "v" * 4097}}, None, "invalid_value", "labels.x"),
                ({"note": 5}, None, "invalid_value", "note"),
                ({"note": "x" * 4097}, None, "invalid_value", "note"),
                ({"pinned": "yes"}, None, "invalid_value", "pinned"),
                (too_many, None, "invalid_value", "labels")):
            self.error("PATCH", "/runs/%d" % rid, 400, code, field, body=body, raw=raw)
        self.assertEqual(self.get(rid)["labels"], {"a": "1", "c": "3"})  # nothing written
        self.error("PATCH", "/runs/999999", 404, "not_found", "id", body={"note": "x"})
        self.error("PATCH", "/runs/abc", 404, "not_found", "id", body={"note": "x"})
        # delete: a queued run goes (its id is never given again); a running one stays
        self.assertIsNone(self.req("DELETE", "/runs/%d" % rid, 204)[0])
        self.error("GET", "/runs/%d" % rid, 404, "not_found", "id")
        self.error("GET", "/runs/%d/records" % rid, 404, "not_found", "id")
        self.error("DELETE", "/runs/%d" % rid, 404, "not_found", "id")
        self.error("PATCH", "/runs/%d" % rid, 404, "not_found", "id", body={})
        self.assertGreater(self.create(self.spec("after")), rid)
        self.error("DELETE", "/runs/%d" % first, 409, "conflict", "id")
        self.error("DELETE", "/runs/0", 404, "not_found", "id")
        self.error("POST", "/runs/%d" % first, 405, "method_not_allowed", None, raw=b"")
        # bodies over 1 MiB, as for every route
        for method, path in (("PATCH", "/api/v1/runs/%d" % first),
                             ("PUT", "/api/v1/baselines/big")):
            head = (b"%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % (method.encode(), path.encode(),
                                                       MAX_BODY + 1))
            st, hdrs, body = upload(self.daemon.addr, head, [b" " * 65536] * 17)
            self.assertEqual(st, 413, body)
            parsed = self.doc.check(method, path, st, hdrs, body)
            self.assertEqual(parsed["error"]["code"], "body_too_large")

    def test_repeat_groups(self):
        s = self.spec("repeated", {"kind": "repeat"})
        s["repeat"] = {"count": 3}
        body, hdrs = self.req("POST", "/runs", 201, body=s)
        first, group = body["id"], body["group_id"]
        self.assertEqual(body["run_ids"], [first, first + 1, first + 2])
        self.assertEqual(hdrs.get("Location"), body["url"])
        self.assertEqual(body["url"], "/api/v1/runs/%d" % first)
        for i in body["run_ids"]:
            run = self.get(i)
            self.assertEqual(run["group_id"], group)
            self.assertEqual(run["spec"]["repeat"], {"count": 3, "cooldown_s": 0})
        self.assertEqual(self.ids("group=%d&sort=id" % group), body["run_ids"])
        g, _ = self.req("GET", "/groups/%d" % group, 200)
        self.assertEqual((g["id"], g["name"], g["count"], g["cooldown_s"]),
                         (group, "repeated", 3, 0))
        self.assertEqual([r["id"] for r in g["runs"]], body["run_ids"])
        self.assertIn(g["state"], ("queued", "running"))
        self.assertEqual(g["summary"], {"repeats": 0, "confidence": 0.95, "metrics": {}})
        g, _ = self.req("GET", "/groups/%d/?confidence=0.9" % group, 200)
        self.assertEqual(g["summary"]["confidence"], 0.9)
        # a run without `repeat` has no group; its spec none
        single = self.create(self.spec("single"))
        run = self.get(single)
        self.assertIsNone(run["group_id"])
        self.assertNotIn("repeat", run["spec"])
        # cancelled runs end the group: `finished` once none is left to run
        for i in body["run_ids"]:
            self.req("POST", "/runs/%d/cancel" % i, 202)
        for i in body["run_ids"]:
            self.wait(i, hrtest.TERMINAL)
        g, _ = self.req("GET", "/groups/%d" % group, 200)
        self.assertEqual((g["state"], [r["state"] for r in g["runs"]]),
                         ("finished", ["cancelled"] * 3))
        # errors
        self.error("GET", "/groups/999999", 404, "not_found", "id")
        self.error("GET", "/groups/abc", 404, "not_found", "id")
        self.error("GET", "/groups/%d?confidence=1" % group, 400, "out_of_range", "confidence")
        self.error("GET", "/groups/%d?confidence=x" % group, 400, "out_of_range", "confidence")
        self.error("DELETE", "/groups/%d" % group, 405, "method_not_allowed", None)
        self.error("GET", "/groups", 404, "not_found", None)
        for rep, code, field in (({"count": 1}, "out_of_range", "repeat.count"),
                                 ({"count": 101}, "out_of_range", "repeat.count"),
                                 ({"count": 2.5}, "wrong_type", "repeat.count"),
                                 ({}, "missing_field", "repeat.count"),
                                 ({"count": 2, "cooldown_s": -1}, "out_of_range",
                                  "repeat.cooldown_s"),
                                 ({"count": 2, "x": 1}, "unknown_field", "repeat.x"),
                                 (2, "wrong_type", "repeat")):
            self.error("POST", "/runs", 400, code, field, body=dict(s, repeat=rep))

    def test_spec_validity_and_gates(self):
        """The normalised spec's validity and gates, and their 400s."""
        s = self.spec("judged")
        s["gates"] = [{"metric": "time_to_first_token", "stat": "p99", "op": "<", "value": 200},
                      {"metric": "error_rate", "op": "<", "value": 0.01},
                      {"name": "vs main", "metric": "request_throughput",
                       "regression": {"baseline": "main"}},
                      {"metric": "time_to_first_token", "regression": {"baseline": 3}}]
        rid = self.create(s)
        n = self.get(rid)["spec"]
        self.assertEqual(n["validity"], {"min_requests": 0, "min_duration_s": 0,
                                         "max_error_rate": 0.05, "percentile": "p99",
                                         "confidence": 0.95})
        self.assertEqual(n["gates"], [
            dict(s["gates"][0], name="time_to_first_token.p99 < 200"),
            dict(s["gates"][1], stat="value", name="error_rate.value < 0.01"),
            {"name": "vs main", "metric": "request_throughput", "stat": "value",
             "regression": {"baseline": "main", "max_pct": 5, "confidence": 0.95}},
            {"name": "time_to_first_token.avg regression", "metric": "time_to_first_token",
             "stat": "avg", "regression": {"baseline": 3, "max_pct": 5, "confidence": 0.95}}])
        n = self.get(self.create(dict(self.spec("plain"), validity=None, gates=None)))["spec"]
        self.assertNotIn("gates", n)
        self.assertEqual(n["validity"]["percentile"], "p99")
        thr = {"metric": "time_to_first_token", "op": "<", "value": 1}
        for extra, code, field in (
                ({"validity": {"percentile": "p42"}}, "invalid_value", "validity.percentile"),
                ({"validity": {"percentile": "p10"}}, "invalid_value", "validity.percentile"),
                ({"validity": {"max_error_rate": 1.5}}, "out_of_range",
                 "validity.max_error_rate"),
                ({"validity": {"confidence": 0.4}}, "out_of_range", "validity.confidence"),
                ({"validity": {"min_requests": 1.5}}, "wrong_type", "validity.min_requests"),
                ({"validity": {"colour": 1}}, "unknown_field", "validity.colour"),
                ({"validity": []}, "wrong_type", "validity"),
                ({"gates": {}}, "wrong_type", "gates"),
                ({"gates": [thr] * 33}, "out_of_range", "gates"),
                ({"gates": [5]}, "wrong_type", "gates[0]"),
                ({"gates": [dict(thr, metric="nope")]}, "invalid_value", "gates[0].metric"),
                ({"gates": [thr, dict(thr, stat="p42")]}, "invalid_value", "gates[1].stat"),
                ({"gates": [dict(thr, stat="value")]}, "invalid_value", "gates[0].stat"),
                ({"gates": [dict(thr, metric="goodput", stat="p99")]}, "invalid_value",
                 "gates[0].stat"),
                ({"gates": [dict(thr, op="~")]}, "invalid_value", "gates[0].op"),
                ({"gates": [{"metric": "error_rate", "value": 1}]}, "missing_field",
                 "gates[0].op"),
                ({"gates": [{"metric": "error_rate"}]}, "invalid_value", "gates[0]"),
                ({"gates": [dict(thr, regression={"baseline": "m"})]}, "invalid_value",
                 "gates[0]"),
                ({"gates": [dict(thr, colour=1)]}, "unknown_field", "gates[0].colour"),
                ({"gates": [{"metric": "error_rate", "regression": {"baseline": 0}}]},
                 "invalid_value", "gates[0].regression.baseline"),
                ({"gates": [{"metric": "error_rate", "regression": {}}]}, "missing_field",
                 "gates[0].regression.baseline"),
                ({"gates": [{"metric": "error_rate", "regression": {"baseline": "m",
                                                                     "max_pct": -1}}]},
                 "out_of_range", "gates[0].regression.max_pct"),
                ({"gates": [{"metric": "error_rate", "regression": 5}]}, "wrong_type",
                 "gates[0].regression")):
            self.error("POST", "/runs", 400, code, field, body=dict(self.spec(), **extra))

    def test_compare_and_series_errors(self):
        busy = self.busy
        queued = self.create(self.spec("queued"))
        for q, status, code, field in (
                ("head=1", 400, "missing_field", "base"),
                ("base=abc&head=1", 400, "invalid_value", "base"),
                ("base=1,,2&head=1", 400, "invalid_value", "base"),
                ("base=0&head=1", 400, "invalid_value", "base"),
                ("base=%s&head=1" % ",".join(["1"] * 101), 400, "invalid_value", "base"),
                ("base=group:x&head=1", 400, "invalid_value", "base"),
                ("base=999999&head=1", 404, "not_found", "base"),
                ("base=group:999999&head=1", 404, "not_found", "base"),
                ("base=baseline:nope&head=1", 404, "not_found", "base"),
                ("base=%d&head=%d" % (queued, busy), 409, "not_ready", "base"),
                ("base=%d,%d&head=1" % (busy, queued), 409, "not_ready", "base"),
                ("confidence=2", 400, "out_of_range", "confidence"),
                ("base=1&head=1&confidence=0.4", 400, "out_of_range", "confidence"),
                ("base=1&head=1&noise_pct=-1", 400, "out_of_range", "noise_pct"),
                ("base=1&head=1&noise_pct=x", 400, "out_of_range", "noise_pct"),
                ("base=1&head=1&resamples=99", 400, "out_of_range", "resamples"),
                ("base=1&head=1&resamples=100001", 400, "out_of_range", "resamples"),
                ("base=1&head=1&seed=-1", 400, "invalid_value", "seed")):
            self.error("GET", "/compare?" + q, status, code, field)
        self.error("POST", "/compare", 405, "method_not_allowed", None, raw=b"")
        # a series of no succeeded runs is empty, whatever its parameters
        s, _ = self.req("GET", "/series?metric=time_to_first_token", 200)
        self.assertEqual(s, {"metric": "time_to_first_token", "stat": "avg", "unit": "ms",
                             "direction": "lower", "group_by": None,
                             "rule": {"lookback": 10, "z": 3, "noise_pct": 5}, "points": []})
        s, _ = self.req("GET", "/series?metric=error_rate&group_by=label.branch&state=succeeded"
                        "&name=x&since=2026-01-01&until=2999-01-01&label.a=b&label.c!"
                        "&fingerprint=0123456789abcdef&group=1&limit=5&lookback=2&z=0.5"
                        "&noise_pct=0&confidence=0.9", 200)
        self.assertEqual((s["stat"], s["unit"], s["direction"], s["group_by"], s["rule"]),
                         ("value", "fraction", "lower", "label.branch",
                          {"lookback": 2, "z": 0.5, "noise_pct": 0}))
        for q, code, field in (
                ("", "missing_field", "metric"), ("metric=nope", "invalid_value", "metric"),
                ("metric=time_to_first_token&stat=value", "invalid_value", "stat"),
                ("metric=time_to_first_token&stat=p42", "invalid_value", "stat"),
                ("metric=request_throughput&stat=p99", "invalid_value", "stat"),
                ("metric=error_rate&group_by=branch", "invalid_value", "group_by"),
                ("metric=error_rate&group_by=label.", "invalid_value", "group_by"),
                ("metric=error_rate&limit=0", "out_of_range", "limit"),
                ("metric=error_rate&limit=100001", "out_of_range", "limit"),
                ("metric=error_rate&lookback=1", "out_of_range", "lookback"),
                ("metric=error_rate&z=0.1", "out_of_range", "z"),
                ("metric=error_rate&noise_pct=1001", "out_of_range", "noise_pct"),
                ("metric=error_rate&confidence=1", "out_of_range", "confidence"),
                ("metric=error_rate&state=queued", "invalid_value", "state"),
                ("metric=error_rate&state=done", "invalid_value", "state"),
                ("metric=error_rate&since=yesterday", "invalid_value", "since"),
                ("metric=error_rate&fingerprint=x", "invalid_value", "fingerprint"),
                ("metric=error_rate&label.=x", "invalid_value", "label.")):
            self.error("GET", "/series?" + q, 400, code, field)

    def test_baselines(self):
        busy = self.create(self.spec("queued", {"branch": "main"}))
        s = self.spec("grouped", {"branch": "main"})
        s["repeat"] = {"count": 2}
        grp, _ = self.req("POST", "/runs", 201, body=s)
        self.assertEqual(self.req("GET", "/baselines", 200)[0], {"baselines": []})
        one, _ = self.req("PUT", "/baselines/one", 201, body={"run": busy})
        self.assertEqual((one["name"], one["kind"], one["run"], one["group"], one["rule"],
                          one["resolves_to"]), ("one", "run", busy, None, None, [busy]))
        again, _ = self.req("PUT", "/baselines/one", 200, body={"run": grp["id"]})
        self.assertEqual((again["run"], again["created_at"]), (grp["id"], one["created_at"]))
        self.assertGreaterEqual(again["updated_at"], one["updated_at"])
        g, _ = self.req("PUT", "/baselines/Main_2.x-y", 201, body={"group": grp["group_id"]})
        self.assertEqual((g["kind"], g["group"], g["resolves_to"]),
                         ("group", grp["group_id"], []))  # no succeeded run yet
        r, _ = self.req("PUT", "/baselines/rule", 201,
                        body={"rule": {"labels": {"branch": "main"}}})
        self.assertEqual((r["kind"], r["rule"], r["resolves_to"]),
                         ("rule", {"labels": {"branch": "main"}, "valid_only": True}, []))
        r, _ = self.req("PUT", "/baselines/rule", 200,
                        body={"rule": {"fingerprint": "0123456789abcdef", "valid_only": False}})
        self.assertEqual(r["rule"], {"fingerprint": "0123456789abcdef", "valid_only": False})
        lst, _ = self.req("GET", "/baselines/", 200)
        self.assertEqual([b["name"] for b in lst["baselines"]], ["Main_2.x-y", "one", "rule"])
        self.assertEqual(self.req("GET", "/baselines/one", 200)[0], again)
        # a baseline's runs stay; compared before they end, not ready
        self.error("DELETE", "/runs/%d" % grp["id"], 409, "conflict", "id")
        self.error("DELETE", "/runs/%d" % grp["run_ids"][1], 409, "conflict", "id")
        self.error("GET", "/compare?base=baseline:one&head=%d" % busy, 409, "not_ready", "base")
        self.error("GET", "/compare?base=%d&head=baseline:Main_2.x-y" % busy, 409, "not_ready",
                   "base")
        self.error("GET", "/compare?base=baseline:rule&head=1", 404, "not_found", "base")
        self.error("GET", "/compare?base=group:%d&head=1" % grp["group_id"], 409, "not_ready",
                   "base")
        for body, raw, status, code, field in (
                (None, b"{run", 400, "invalid_json", None),
                (None, b'{"run": 1, "run": 2}', 400, "invalid_json", None),
                ({}, None, 400, "invalid_value", None),
                ([], None, 400, "invalid_value", None),
                ({"run": 1, "group": 2}, None, 400, "invalid_value", None),
                ({"colour": 1}, None, 400, "invalid_value", None),
                ({"run": "1"}, None, 400, "invalid_value", "run"),
                ({"run": 0}, None, 400, "invalid_value", "run"),
                ({"group": 1.5}, None, 400, "invalid_value", "group"),
                ({"rule": []}, None, 400, "invalid_value", "rule"),
                ({"rule": {"labels": []}}, None, 400, "invalid_value", "rule.labels"),
                ({"rule": {"labels": {"a": 1}}}, None, 400, "invalid_value", "rule.labels.a"),
                ({"rule": {"labels": {"k%d" % i: "v" for i in range(17)}}}, None, 400,
                 "invalid_value", "rule.labels"),
                ({"rule": {"fingerprint": "abc"}}, None, 400, "invalid_value",
                 "rule.fingerprint"),
                ({"rule": {"valid_only": 1}}, None, 400, "invalid_value", "rule.valid_only"),
                ({"rule": {"colour": 1}}, None, 400, "invalid_value", "rule.colour"),
                ({"run": 999999}, None, 404, "not_found", "run"),
                ({"group": 999999}, None, 404, "not_found", "group")):
            self.error("PUT", "/baselines/x", status, code, field, body=body, raw=raw)
        self.error("GET", "/baselines/x", 404, "not_found", "name")
        for bad in ("bad!name", "a" * 257, "%C3%A9t%C3%A9"):
            self.error("GET", "/baselines/" + bad, 400, "invalid_value", "name")
            self.error("PUT", "/baselines/" + bad, 400, "invalid_value", "name", body={"run": 1})
            self.error("DELETE", "/baselines/" + bad, 400, "invalid_value", "name")
        self.error("GET", "/baselines/a/b", 404, "not_found", None)
        self.error("POST", "/baselines", 405, "method_not_allowed", None, raw=b"")
        self.error("PATCH", "/baselines/one", 405, "method_not_allowed", None, body={})
        for name in ("one", "Main_2.x-y", "rule"):
            self.assertIsNone(self.req("DELETE", "/baselines/" + name, 204)[0])
        self.error("DELETE", "/baselines/one", 404, "not_found", "name")
        self.assertEqual(self.req("GET", "/baselines", 200)[0], {"baselines": []})
        self.assertIsNone(self.req("DELETE", "/runs/%d" % grp["run_ids"][1], 204)[0])

class FinishedRunTest(_ApiBase):
    """Runs that really send requests: needs a functional headroom-worker."""

    daemon_args = ("--nvml-lib", "/nonexistent/libnvidia-ml.so.1")

    def test_finished_run(self):
        s = hrtest.spec(self.mock.addr, requests=20, concurrency=4)
        run_id = self.create(s)
        run = self.wait(run_id, hrtest.TERMINAL, timeout=30)
        self.assertEqual(run["state"], "succeeded", "the run did not succeed: %s" % run["reason"])
        self.assertIsNotNone(run["started_at"])
        self.assertEqual(run["progress"]["records"], 20)
        summary, _ = self.req("GET", "/runs/%d/summary?format=json" % run_id, 200)
        self.assertEqual(summary, run["summary"])
        self.assertEqual(summary["counts"]["requests"], 20)
        self.assertEqual(summary["counts"]["valid"], 20)
        self.assertEqual(summary["metrics"]["request_latency"]["count"], 20)
        self.assertIn("request_throughput", summary["metrics"])
        self.assertEqual(run["progress"]["phase"], "profiling")
        load = summary["load"]
        self.assertEqual((load["mode"], load["requested_rate"], load["requested_concurrency"],
                          load["sent"]), ("concurrency", None, 4, 20))
        self.assertGreater(load["achieved_rate"], 0)
        self.assertTrue(1 <= load["achieved_concurrency"]["max"] <= 4, load)
        for tag in ("schedule_lag", "scheduled_request_latency", "time_to_first_output_token",
                    "scheduled_time_to_first_token"):
            self.assertEqual(summary["metrics"][tag]["count"], 20, tag)
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % run_id, 200)
        self.check_summary_csv(text, summary)
        rows = self.check_records(run_id, expect_rows=20)
        self.assertTrue(all(r["valid"] for r in rows))
        self.assertEqual(sorted(r["req_id"] for r in rows), list(range(20)))
        for r in rows:
            self.assertEqual(r["phase"], "profiling")
            self.assertIsNotNone(r["schedule_lag"], r)
            self.assertAlmostEqual(r["schedule_lag"], (r["start_ns"] - r["intended_ns"]) / 1e6)
        # telemetry: NVML cannot be loaded (unavailable, with the reason), the
        # mock's /metrics page can; statistics over the profiling window
        self.assertEqual(run["spec"]["telemetry"], DEFAULT_TELEMETRY)
        tele = summary["telemetry"]
        src = {}
        for x in tele["sources"]:
            src.setdefault(x["source"], []).append(x)
        self.assertEqual(len(src["nvml"]), 1)
        nvml = src["nvml"][0]
        self.assertEqual((nvml["target"], nvml["status"], nvml["samples"]),
                         ("/nonexistent/libnvidia-ml.so.1", "unavailable", 0))
        self.assertTrue(nvml["detail"].startswith("NVML not available: "), nvml)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", nvml["detail"])
        self.assertEqual([(x["target"], x["status"]) for x in src["server"]],
                         [("http://%s/metrics" % self.mock.addr, "ok")])
        self.assertFalse([x for x in tele["series"] if x["source"] == "nvml"])
        self.assertTrue([x for x in tele["series"] if x["source"] == "server"])
        export = self.check_telemetry(run_id, summary)
        self.assertLessEqual(export["t0_wall_ns"], tele["window_start_ns"])
        self.assertEqual(tele["window_start_ns"] - export["t0_wall_ns"],
                         min(r["start_ns"] for r in rows))
        self.assertEqual(tele["window_end_ns"] - export["t0_wall_ns"],
                         max(r["end_ns"] for r in rows))
        self.check_series_against_samples(summary, export)
        self.assertEqual(run["spec"]["client"], DEFAULT_CLIENT)
        c = self.check_client(run_id, summary, run["spec"])
        self.assertEqual(c["t0_wall_ns"], export["t0_wall_ns"])
        report, hdrs = self.req("GET", "/runs/%d/report.html" % run_id, 200)
        self.assertEqual(hdrs["Content-Disposition"],
                         'attachment; filename="headroom-run-%d.html"' % run_id)
        self.assertIn("window.HEADROOM_REPORT", report)
        dist, _ = self.req("GET", "/runs/%d/distribution?metric=request_latency" % run_id, 200)
        self.assertEqual(dist["metrics"][0]["values"], sorted(r["request_latency"] for r in rows))
        slow, _ = self.req("GET", "/runs/%d/requests?limit=3" % run_id, 200)
        self.assertEqual(len(slow["requests"]), 3)
        failed, _ = self.req("GET", "/runs/%d/requests?order=failed" % run_id, 200)
        self.assertEqual(failed["requests"], [])
        page, _ = self.req("GET", "/runs/%d/requests?order=seq&limit=7&from=0/3" % run_id, 200)
        self.assertEqual([(r["worker"], r["seq"]) for r in page["requests"]],
                         [(r["worker"], r["seq"]) for r in rows][3:10])
        self.assertEqual((page["next"], page["total"]),
                         ("%d/%d" % (rows[10]["worker"], rows[10]["seq"]), len(rows)))
        live, _ = self.req("GET", "/runs/%d/live" % run_id, 200)
        self.assertEqual(live[0][0], "hello")
        self.assertEqual(live[-1], ("end", {"run_id": run_id, "state": "succeeded"}))
        ts, _ = self.req("GET", "/runs/%d/timeseries?step_ms=100" % run_id, 200)
        self.assertEqual((ts["t0_wall_ns"], ts["records"], sum(ts["sent"])),
                         (export["t0_wall_ns"], len(rows), len(rows)))
        self.assertEqual(summary["client"]["workers"][0]["worker"], 0)
        self.assertGreater(summary["client"]["workers"][0]["samples"], 0)
        self.assertTrue({"w0", "daemon"} <= {x["source"] for x in c["samples"]})
        self.assertEqual(max(x["sent"] for x in c["samples"] if x["source"] == "w0"), 20)
        self.error("POST", "/runs/%d/cancel" % run_id, 409, "conflict", None)
    def test_history(self):
        """The history over runs that finished: a run's validity, gates and
        intervals, a group of repeats and its spread, baselines of each kind,
        regression gates against them, comparisons at the request and the
        run level, series, metric sorts with cursors, and deletion."""
        # a mock with some delay: the client stays far from its limit, so
        # no run is client_bound (and the valid ones are valid)
        slow = hrtest.start_mock("--quiet", "--ttft-ms", "4", "--itl-ms", "1")
        try:
            self.check_history(slow.addr)
        finally:
            slow.stop()

    def check_history(self, addr):
        labels = {"suite": "history", "branch": "main"}
        s = hrtest.spec(addr, requests=40, concurrency=4)
        s.update(name="history", labels=labels, validity={"percentile": "p50"})
        s["telemetry"] = {"nvml": False, "dcgm_urls": [], "server_metrics": False}
        s["gates"] = [{"metric": "error_rate", "op": "<", "value": 0.5},
                      {"metric": "request_throughput", "op": ">", "value": 1e12},
                      {"metric": "request_latency", "stat": "p50", "op": "<=", "value": 60000}]
        a = self.wait(self.create(s), hrtest.TERMINAL, timeout=30)
        self.assertEqual(a["state"], "succeeded", a["reason"])
        summ = a["summary"]
        self.assertEqual(summ["client"]["reasons"], [], summ["client"])
        self.assertEqual((a["valid"], a["gates"], a["verdict"]),
                         (True, "failed", summ["client"]["verdict"]))
        self.assertEqual(summ["validity"]["checks"]["percentile_needs"], 5)
        self.assertEqual([c["stat"] for c in summ["validity"]["claims"]], ["p50"])
        self.assertTrue(summ["validity"]["claims"][0]["holds"])
        self.assertEqual([r["passed"] for r in summ["gates"]["results"]], [True, False, True])
        self.assertIn("avg", summ["metrics"]["request_latency"]["ci"])
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % a["id"], 200)
        self.check_summary_csv(text, summ)
        # a group of repeats, invalid by default (p99 needs 299 valid requests)
        rep = dict(s, name="history repeats", repeat={"count": 2})
        del rep["validity"], rep["gates"]
        made, _ = self.req("POST", "/runs", 201, body=rep)
        group = made["group_id"]
        for i in made["run_ids"]:
            run = self.wait(i, hrtest.TERMINAL, timeout=30)
            self.assertEqual((run["state"], run["valid"], run["gates"], run["group_id"]),
                             ("succeeded", False, None, group))
            self.assertEqual([r["code"] for r in run["summary"]["validity"]["reasons"]],
                             ["too_few_requests"], run["summary"]["client"]["reasons"])
        g, _ = self.req("GET", "/groups/%d" % group, 200)
        self.assertEqual((g["state"], g["summary"]["repeats"]), ("finished", 2))
        p50 = g["summary"]["metrics"]["request_latency"]["p50"]
        self.assertEqual(p50["n"], 2)
        self.assertTrue(p50["min"] <= p50["mean"] <= p50["max"])
        self.assertEqual(list(g["summary"]["metrics"]["error_rate"]), ["unit", "value"])
        # baselines: the rule skips the invalid repeats
        rule, _ = self.req("PUT", "/baselines/history-main", 201,
                           body={"rule": {"labels": {"suite": "history", "branch": "main"}}})
        self.assertEqual(rule["resolves_to"], [a["id"]])
        anyrun, _ = self.req("PUT", "/baselines/history-any", 201,
                             body={"rule": {"labels": labels, "valid_only": False,
                                            "fingerprint": a["fingerprint"]}})
        self.assertEqual(anyrun["resolves_to"], [made["run_ids"][-1]])
        grp, _ = self.req("PUT", "/baselines/history-group", 201, body={"group": group})
        self.assertEqual(grp["resolves_to"], made["run_ids"])
        one, _ = self.req("PUT", "/baselines/history-one", 201, body={"run": a["id"]})
        # regression gates against them
        c_spec = dict(s, labels=dict(labels, branch="feature"))
        c_spec["gates"] = [
            {"metric": "request_latency", "stat": "p50",
             "regression": {"baseline": "history-main", "max_pct": 1000}},
            {"metric": "request_throughput", "regression": {"baseline": a["id"]}},
            {"metric": "time_to_first_token", "regression": {"baseline": "history-group"}},
            {"metric": "error_rate", "regression": {"baseline": "nope"}}]
        c = self.wait(self.create(c_spec), hrtest.TERMINAL, timeout=30)
        self.assertEqual(c["state"], "succeeded", c["reason"])
        res = c["summary"]["gates"]["results"]
        self.assertEqual([r["kind"] for r in res], ["regression"] * 4)
        self.assertEqual([r["baseline"]["runs"] for r in res],
                         [[a["id"]], [a["id"]], made["run_ids"], []])
        self.assertIn("verdict", res[0])  # compared
        self.assertEqual((res[3]["passed"], res[3]["message"]),
                         (False, "no baseline named 'nope'"))
        self.assertEqual(c["gates"], "failed")
        # comparisons: request level (one run a side), run level (a group)
        cmp, _ = self.req("GET", "/compare?base=%d&head=%d" % (a["id"], c["id"]), 200)
        self.assertEqual((cmp["level"], cmp["base"]["ref"], cmp["base"]["records"]),
                         ("requests", str(a["id"]), 40))
        self.assertEqual(sum(cmp["counts"].values()), len(cmp["metrics"]))
        self.assertIn({"label": "branch", "base": "main", "head": "feature"},
                      cmp["label_differences"])
        diffs = {d["field"]: d for d in cmp["spec_differences"]}
        self.assertEqual(sorted(diffs), ["gates"])  # an array is one leaf (labels aside)
        self.assertRegex(diffs["gates"]["base"], r"^<[0-9]+ bytes of JSON>$")
        self.assertTrue(cmp["shifts"])
        stats = {(e["metric"], e["stat"]) for e in cmp["metrics"]}
        self.assertIn(("time_to_first_token", "p99"), stats)
        self.assertIn(("error_rate", "value"), stats)
        cmp, _ = self.req("GET", "/compare?base=group:%d&head=%d&confidence=0.9&noise_pct=10"
                          "&resamples=500&seed=7" % (group, c["id"]), 200)
        self.assertEqual((cmp["level"], cmp["base"]["runs"], cmp["shifts"], cmp["confidence"],
                          cmp["noise_pct"], cmp["resamples"], cmp["seed"]),
                         ("runs", made["run_ids"], [], 0.9, 10, 500, 7))
        self.assertIn(("base", "invalid"), {(w["side"], w["code"]) for w in cmp["warnings"]})
        self.assertEqual(cmp["base"]["valid"], [False, False])
        cmp, _ = self.req("GET", "/compare?base=baseline:history-one&head=%d,%d"
                          % (made["run_ids"][0], c["id"]), 200)
        self.assertEqual((cmp["level"], cmp["head"]["n_runs"]), ("runs", 2))
        cmp, _ = self.req("GET", "/compare?base=baseline:history-main&head=%d" % a["id"], 200)
        self.assertEqual(cmp["level"], "requests")
        self.error("GET", "/compare?base=%d" % a["id"], 400, "missing_field", "head")
        self.error("GET", "/compare?base=%d&head=x" % a["id"], 400, "invalid_value", "head")
        self.error("GET", "/compare?base=%d&head=999999" % a["id"], 404, "not_found", "head")
        # series of the suite: one point per run, or per branch
        ser, _ = self.req("GET", "/series?metric=request_latency&stat=p50&label.suite=history",
                          200)
        runs = [a["id"]] + made["run_ids"] + [c["id"]]
        self.assertEqual([p["runs"] for p in ser["points"]], [[i] for i in runs])
        self.assertEqual([p["key"] for p in ser["points"]], [str(i) for i in runs])
        ser, _ = self.req("GET", "/series?metric=request_latency&stat=p50&label.suite=history"
                          "&group_by=label.branch&lookback=2&z=0.5&noise_pct=0", 200)
        self.assertEqual([(p["key"], p["runs"]) for p in ser["points"]],
                         [("main", runs[:3]), ("feature", [c["id"]])])
        self.assertEqual(ser["points"][0]["n_runs"], 3)
        ser, _ = self.req("GET", "/series?metric=request_throughput&label.suite=history"
                          "&fingerprint=%s&limit=2" % a["fingerprint"], 200)
        self.assertEqual([p["runs"] for p in ser["points"]], [[i] for i in runs[2:]])
        self.req("GET", "/series?metric=error_rate&group=%d&state=succeeded" % group, 200)
        # sorting by a figure, paged by cursor
        for sort in ("request_latency.p50", "-request_throughput.value", "-error_rate.value"):
            whole, _ = self.req("GET", "/runs?label.suite=history&limit=1000&sort=" + sort, 200)
            vals = [r["sort_value"] for r in whole["runs"]]
            self.assertEqual(len(vals), 4)
            self.assertEqual(vals, sorted(vals, reverse=sort.startswith("-")), sort)
            got, cursor = [], None
            while True:
                page, _ = self.req("GET", "/runs?label.suite=history&limit=3&sort=%s%s"
                                   % (sort, "&cursor=" + urllib.parse.quote(cursor)
                                      if cursor else ""), 200)
                got += page["runs"]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            self.assertEqual(got, whole["runs"], sort)
        # deletion: a baseline's runs stay until it goes
        self.error("DELETE", "/runs/%d" % a["id"], 409, "conflict", "id")
        self.error("DELETE", "/runs/%d" % made["run_ids"][0], 409, "conflict", "id")
        self.assertIsNone(self.req("DELETE", "/runs/%d" % c["id"], 204)[0])
        self.error("GET", "/runs/%d/summary" % c["id"], 404, "not_found", "id")
        for name in ("history-main", "history-any", "history-group", "history-one"):
            self.req("DELETE", "/baselines/" + name, 204)
        self.assertIsNone(self.req("DELETE", "/runs/%d" % made["run_ids"][0], 204)[0])
        g, _ = self.req("GET", "/groups/%d" % group, 200)
        self.assertEqual([r["id"] for r in g["runs"]], made["run_ids"][1:])

    def test_rate_run(self):
        """Open loop: 20 requests at a constant 100/s from two workers."""
        s = hrtest.spec(self.mock.addr)
        s["load"] = {"mode": "rate", "rate": 100, "arrival": "constant", "max_concurrency": 8,
                     "requests": 20}
        s["workers"] = 2
        run_id = self.create(s)
        run = self.wait(run_id, hrtest.TERMINAL, timeout=30)
        self.assertEqual(run["spec"]["load"], {
            "mode": "rate", "rate": 100, "arrival": "constant", "max_concurrency": 8,
            "requests": 20, "ramp_s": 0, "grace_s": 30, "cancel": {"fraction": 0, "after_s": 0}})
        self.assertEqual(run["state"], "succeeded", "the rate run did not succeed: %s"
                         % run["reason"])
        self.assertEqual(run["progress"]["phase"], "profiling")
        self.assertEqual(run["progress"]["records"], 20)
        self.assertEqual(run["progress"]["workers"], 2)
        summary, _ = self.req("GET", "/runs/%d/summary" % run_id, 200)
        self.assertEqual(summary, run["summary"])
        self.assertEqual(summary["counts"], {"requests": 20, "valid": 20, "errors": 0,
                                             "warmup": 0})
        load = summary["load"]
        self.assertEqual((load["mode"], load["requested_rate"], load["requested_concurrency"],
                          load["sent"]), ("rate", 100, 8, 20))
        # 20 arrivals 10 ms apart: 19 intervals over 190 ms when the client keeps up
        self.assertTrue(70 <= load["achieved_rate"] <= 130, load)
        self.assertTrue(1 <= load["achieved_concurrency"]["max"] <= 8, load)
        self.assertGreater(load["achieved_concurrency"]["avg"], 0)
        for tag in ("schedule_lag", "scheduled_time_to_first_token",
                    "scheduled_request_latency"):
            self.assertEqual(summary["metrics"][tag]["count"], 20, tag)
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % run_id, 200)
        self.check_summary_csv(text, summary)
        self.check_telemetry(run_id, summary)
        rows = self.check_records(run_id, expect_rows=20)
        self.assertEqual(sorted(r["req_id"] for r in rows), list(range(20)))
        self.assertEqual({r["worker"] for r in rows}, {0, 1})
        self.check_client(run_id, summary, run["spec"])
        head = summary["client"]["headline"]
        self.assertEqual((head["workers"], head["requested_rate"], head["achieved_rate"]),
                         (2, 100, load["achieved_rate"]))
        self.assertTrue(all(r["valid"] and r["phase"] == "profiling" for r in rows))
        intended = sorted(r["intended_ns"] for r in rows)
        gaps = [(b - a) / 1e6 for a, b in zip(intended, intended[1:])]
        for g in gaps:
            self.assertAlmostEqual(g, 10.0, delta=0.01, msg="constant arrivals: %s" % gaps)
        for r in rows:
            self.assertAlmostEqual(r["schedule_lag"], (r["start_ns"] - r["intended_ns"]) / 1e6)
            self.assertAlmostEqual(r["scheduled_request_latency"],
                                   r["request_latency"] + r["schedule_lag"], places=6)

    def test_warmup_run(self):
        """A duration-bounded warm-up, then 12 profiling requests: progress goes
        starting -> warmup -> profiling, and warm-up records are kept apart."""
        slow = hrtest.start_mock("--quiet", "--ttft-ms", "5", "--itl-ms", "1")
        try:
            s = hrtest.spec(slow.addr, requests=12, concurrency=2)
            s["warmup"] = {"duration_s": 1.2}
            s["workers"] = 2
            run_id = self.create(s)
            phases = []
            deadline = time.time() + 40
            while True:
                run = self.get(run_id)
                ph = (run["progress"] or {}).get("phase")
                if ph and (not phases or phases[-1] != ph):
                    phases.append(ph)
                if run["state"] in hrtest.TERMINAL or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(run["spec"]["warmup"], {"duration_s": 1.2, "load": {
                "mode": "concurrency", "concurrency": 2, "ramp_s": 0}})
            self.assertEqual(run["state"], "succeeded", "the warm-up run did not succeed: %s"
                             % run["reason"])
            order = ["starting", "warmup", "profiling"]
            self.assertEqual(phases, sorted(phases, key=order.index), phases)
            self.assertIn("warmup", phases)
            self.assertEqual(phases[-1], "profiling")
            summary, _ = self.req("GET", "/runs/%d/summary" % run_id, 200)
            self.assertEqual(summary, run["summary"])
            self.assertEqual(summary["counts"]["requests"], 12)
            self.assertEqual(summary["counts"]["valid"], 12)
            self.assertGreater(summary["counts"]["warmup"], 0)
            self.assertEqual(summary["load"]["sent"], 12)
            self.assertEqual(summary["load"]["requested_concurrency"], 2)
            self.assertEqual(summary["metrics"]["request_latency"]["count"], 12)
            rows = self.check_records(run_id)
            self.assertEqual(run["progress"]["records"], len(rows))
            warm = [r for r in rows if r["phase"] == "warmup"]
            prof = [r for r in rows if r["phase"] == "profiling"]
            self.assertEqual(len(warm), summary["counts"]["warmup"])
            self.assertEqual(sorted(r["req_id"] for r in prof), list(range(12)))
            self.assertFalse({r["req_id"] for r in warm} & {r["req_id"] for r in prof})
            # profiling starts for everyone once every warm-up request is over
            self.assertLessEqual(max(r["done_ns"] for r in warm),
                                 min(r["intended_ns"] for r in prof))
            text, _ = self.req("GET", "/runs/%d/summary?format=csv" % run_id, 200)
            self.check_summary_csv(text, summary)
            self.check_telemetry(run_id, summary)
            c = self.check_client(run_id, summary, run["spec"])
            self.assertEqual({x["phase"] for x in c["samples"] if x["source"] != "daemon"},
                             {"warmup", "profiling"})
        finally:
            slow.stop()

    def test_running_then_cancelled(self):
        slow = hrtest.start_mock("--quiet", "--ttft-ms", "20", "--itl-ms", "5")
        try:
            long_id = self.create(hrtest.spec(slow.addr, requests=None, duration_s=30,
                                                     concurrency=2))
            run = self.wait(long_id, ("running",) + hrtest.TERMINAL, timeout=30,
                            cond=lambda r: r["state"] != "running" or
                            (r["progress"] or {}).get("completed", 0) > 0)
            self.assertEqual(run["state"], "running", "the long run ended: %s" % run["reason"])
            queued_id = self.create(hrtest.spec(self.mock.addr, requests=5))
            self.assertEqual(self.get(queued_id)["state"], "queued")
            self.error("GET", "/runs/%d/summary" % long_id, 409, "not_ready", None)
            c, _ = self.req("POST", "/runs/%d/cancel" % queued_id, 202)
            self.assertEqual(c["state"], "cancelled")
            c, _ = self.req("POST", "/runs/%d/cancel" % long_id, 202)
            self.assertEqual(c["state"], "running")
            run = self.wait(long_id, hrtest.TERMINAL, timeout=20)
            self.assertEqual(run["state"], "cancelled", run["reason"])
            summary, _ = self.req("GET", "/runs/%d/summary" % long_id, 200)
            self.assertGreater(summary["counts"]["requests"], 0)
            text, _ = self.req("GET", "/runs/%d/summary?format=csv" % long_id, 200)
            self.check_summary_csv(text, summary)
            rows = self.check_records(long_id)
            self.assertGreater(len(rows), 0)
            self.check_telemetry(long_id, summary)
            self.check_client(long_id, summary, run["spec"])
            self.assertEqual(self.get(queued_id)["state"], "cancelled")
        finally:
            slow.stop()


class CalibrationTest(_ApiBase):
    """A calibration (one short run against a mock the daemon starts itself),
    then a run with target.mock whose summary states its load against it.
    Needs a functional headroom-worker and the headroom-mock beside
    headroomd."""

    daemon_args = ("--nvml-lib", "/nonexistent/libnvidia-ml.so.1")

    def test_calibration_then_mock_run(self):
        body = {"osl": [8], "duration_s": 0.5, "concurrency": 4}
        cal, hdrs = self.req("POST", "/calibrations", 201, body=body)
        self.assertEqual(hdrs.get("Cache-Control"), "no-store")
        self.assertEqual((cal["state"], cal["params"], len(cal["run_ids"])),
                         ("running", {"osl": [8], "isl": 128, "concurrency": 4,
                                      "duration_s": 0.5, "rates": [], "max_lag_ms": 1}, 1))
        cid, rid = cal["id"], cal["run_ids"][0]
        run = self.get(rid)
        spec = run["spec"]
        self.assertEqual((run["labels"], spec["workers"], spec["target"]["mock"],
                          spec["target"]["url"], spec["client"]["allow_client_bound"]),
                         ({"calibration": str(cid)}, 1, True, "http://127.0.0.1:0", True))
        self.assertEqual(spec["load"]["concurrency"], 4)
        self.assertEqual(spec["workload"]["osl"]["mean"], 8)
        deadline = time.time() + 60
        while cal["state"] == "running":
            self.assertLess(time.time(), deadline, "calibration %d still running: %s"
                            % (cid, json.dumps(cal)[:1000]))
            time.sleep(0.1)
            cal, _ = self.req("GET", "/calibrations/%d" % cid, 200)
        self.assertEqual(cal["state"], "succeeded", cal["error"])
        self.assertIsNotNone(cal["finished_ns"])
        self.assertGreaterEqual(cal["finished_ns"], cal["created_ns"])
        [point] = cal["result"]["points"]
        self.assertEqual((point["osl"], point["run_id"]), (8, rid))
        self.assertEqual((point["open_loop"], point["sustained_requests_per_s"],
                          point["sustained_lower_bound"]), ([], None, False))
        self.assertGreater(point["requests_per_s"], 0)
        run = self.get(rid)
        self.assertEqual(run["state"], "succeeded", run["reason"])
        summary = run["summary"]
        # stored with 10 significant digits
        self.assertAlmostEqual(point["requests_per_s"],
                               summary["metrics"]["request_throughput"]["avg"],
                               delta=1e-8 * point["requests_per_s"])
        self.assertEqual(point["loop_busy_avg"] is None,
                         summary["client"]["headline"]["loop_busy_avg"] is None)
        self.check_client(rid, summary, spec)
        lst, _ = self.req("GET", "/calibrations", 200)
        self.assertEqual(lst["calibrations"][0], cal)
        lst, _ = self.req("GET", "/calibrations?limit=1", 200)
        self.assertEqual(lst["calibrations"], [cal])

        # a run against a mock of its own: its load against that ceiling
        s = hrtest.spec("127.0.0.1:1", requests=40, concurrency=2)
        del s["target"]["url"]
        s["target"]["mock"] = True
        s["client"] = {"allow_client_bound": True, "max_lag_ms": 50}
        s["telemetry"] = {"nvml": False, "dcgm_urls": []}
        run_id = self.create(s)
        run = self.wait(run_id, hrtest.TERMINAL, timeout=30)
        self.assertEqual(run["state"], "succeeded", run["reason"])
        self.assertEqual(run["spec"]["target"]["url"], "http://127.0.0.1:0")
        self.assertEqual(run["spec"]["client"], dict(DEFAULT_CLIENT, allow_client_bound=True,
                                                     max_lag_ms=50))
        summary, _ = self.req("GET", "/runs/%d/summary" % run_id, 200)
        self.assertEqual(summary, run["summary"])
        self.assertEqual(summary["counts"]["valid"], 40)
        server = [x for x in summary["telemetry"]["sources"] if x["source"] == "server"]
        self.assertEqual(len(server), 1)
        self.assertRegex(server[0]["target"], r"^http://127\.0\.0\.1:[1-9][0-9]*/metrics$")
        ceiling = summary["client"]["ceiling"]
        self.assertEqual((ceiling["calibration_id"], ceiling["host"], ceiling["basis"]),
                         (cid, cal["host"], "closed_loop"))
        self.assertEqual(ceiling["osl"], summary["metrics"]["output_sequence_length"]["avg"])
        self.assertAlmostEqual(ceiling["requests_per_s_per_worker"], point["requests_per_s"],
                               delta=1e-6 * point["requests_per_s"])
        self.assertAlmostEqual(ceiling["fraction"], ceiling["achieved_requests_per_s_per_worker"]
                               / ceiling["requests_per_s_per_worker"], delta=1e-9)
        self.check_client(run_id, summary, run["spec"])
        text, _ = self.req("GET", "/runs/%d/summary?format=csv" % run_id, 200)
        self.check_summary_csv(text, summary)


class TelemetryRunTest(_ApiBase):
    """Real telemetry: the fake NVML library (two GPUs) and the mock's
    DCGM-like page and /metrics. Needs a functional headroom-worker
    (concurrency mode) and the test build's fake NVML."""

    daemon_env = {"HEADROOM_NVML_LIB": FAKE_NVML, "FAKE_NVML_GPUS": "2"}
    mock_dcgm = True

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(FAKE_NVML):
            raise unittest.SkipTest("no fake NVML library at %s (build the tests)" % FAKE_NVML)
        super().setUpClass()

    def test_every_source_measured(self):
        s = hrtest.spec(self.mock.addr, requests=80, concurrency=4)
        dcgm_url = "http://%s/metrics" % self.dcgm
        s["telemetry"] = {"interval_ms": 50, "scrape_timeout_ms": 2000, "dcgm_urls": [dcgm_url]}
        run_id = self.create(s)
        run = self.wait(run_id, hrtest.TERMINAL, timeout=60)
        self.assertEqual(run["state"], "succeeded", run["reason"])
        self.assertEqual(run["spec"]["telemetry"], {
            "nvml": True, "interval_ms": 50, "scrape_timeout_ms": 2000, "dcgm_urls": [dcgm_url],
            "server_metrics": True, "metrics_urls": []})
        summary, _ = self.req("GET", "/runs/%d/summary" % run_id, 200)
        self.assertEqual(summary, run["summary"])
        tele = summary["telemetry"]
        self.assertEqual([(x["source"], x["target"], x["status"]) for x in tele["sources"]], [
            ("nvml", FAKE_NVML, "ok"), ("dcgm", dcgm_url, "ok"),
            ("server", "http://%s/metrics" % self.mock.addr, "ok")])
        names = {(x["source"], x["name"]) for x in tele["series"]}
        for want in (("nvml", "gpu.power_w"), ("nvml", "gpu.energy_j"), ("nvml", "gpu.util_pct"),
                     ("dcgm", "gpu.power_w"), ("dcgm", "gpu.util_pct"),
                     ("server", "server.requests_running"), ("server", "server.ttft_seconds")):
            self.assertIn(want, names)
        self.assertEqual({x["kind"] for x in tele["series"]}, {"gauge", "counter", "histogram"})
        self.assertEqual(len({x["gpu"] for x in tele["series"] if x["source"] == "nvml"}), 2)
        self.assertTrue(all(x["gpu"] == "" for x in tele["series"] if x["source"] == "server"))
        self.assertTrue(any(x["count"] >= 1 for x in tele["series"] if x["kind"] == "gauge"))
        for x in tele["series"]:
            if x["kind"] == "gauge" and x["count"] >= 1:
                for k in ("avg", "min", "max", "p50", "p90", "p99"):
                    self.assertIn(k, x)
            if x["kind"] == "counter":
                self.assertIsNotNone(x["rate"], x)
        ttft = [x for x in tele["series"] if x["name"] == "server.ttft_seconds"][0]
        self.assertEqual(ttft["count"], 80)  # every request, observed in the window
        self.assertGreater(tele["raw_series"], 0)  # e.g. DCGM_FI_DEV_FB_FREE
        rows = self.check_records(run_id, expect_rows=80)
        osl = sum(r["osl"] for r in rows if r["valid"] and r["osl"])
        self.assertGreater(tele["energy_j"], 0)
        self.assertAlmostEqual(tele["energy_per_output_token_j"], tele["energy_j"] / osl,
                               delta=1e-12 * tele["energy_j"])
        export = self.check_telemetry(run_id, summary)
        self.check_series_against_samples(summary, export)
        self.check_client(run_id, summary, run["spec"])
        first = min(r["start_ns"] for r in rows)
        last = max(r["done_ns"] for r in rows)
        for src in ("nvml", "dcgm", "server"):  # a baseline before, a final pass after
            ts = [x["t_s"] for x in export["samples"] if x["source"] == src]
            self.assertLess(min(ts), first / 1e9, src)
            self.assertGreater(max(ts), last / 1e9, src)
        self.assertTrue(any(not x["name"].startswith(("gpu.", "server."))
                            for x in export["samples"]))

    def test_nothing_available(self):
        """Sources that answer nothing usable: unavailable, with the reason; the
        run succeeds with empty statistics and an empty export."""
        s = hrtest.spec(self.mock.addr, requests=10, concurrency=2)
        closed = "http://127.0.0.1:%d/metrics" % hrtest.closed_port()
        nope = "http://%s/no-such-page" % self.mock.addr
        s["telemetry"] = {"nvml": False, "server_metrics": False, "interval_ms": 50,
                          "dcgm_urls": [closed], "metrics_urls": [nope]}
        run_id = self.create(s)
        run = self.wait(run_id, hrtest.TERMINAL, timeout=60)
        self.assertEqual(run["state"], "succeeded", run["reason"])
        tele = run["summary"]["telemetry"]
        self.assertEqual([(x["source"], x["target"], x["status"], x["samples"])
                          for x in tele["sources"]],
                         [("dcgm", closed, "unavailable", 0), ("server", nope, "unavailable", 0)])
        self.assertTrue(tele["sources"][0]["detail"].startswith(closed + ": "), tele)
        self.assertEqual(tele["sources"][1]["detail"], nope + ": HTTP 404")
        self.assertEqual((tele["series"], tele["raw_series"], tele["energy_j"],
                          tele["energy_per_output_token_j"]), ([], 0, None, None))
        self.assertIsNotNone(tele["window_start_ns"])
        export = self.check_telemetry(run_id, run["summary"])
        self.assertEqual(export["samples"], [])
        self.assertIsNotNone(export["t0_wall_ns"])
        text, _ = self.req("GET", "/runs/%d/telemetry?format=csv" % run_id, 200)
        self.assertEqual(text, "t_ns,t_s,source,name,gpu,labels,kind,value,detail\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
