#!/usr/bin/env python3
"""test_chat_embeddings.py - the chat_embeddings endpoint end to end (vLLM's
multimodal embeddings: a chat-style body posted to /v1/embeddings, an
embeddings answer timed as one piece): REST submit -> worker ->
headroom-mock -> records in SQLite -> exports.

Text only and with 2 PNG pictures per request (workload.images), with both
transports (the native client and libcurl, target.transport "curl"): every
request valid, one chunk (TTFT = the answer's arrival), no output; ISL is
the mock's usage.prompt_tokens (the text parts' words: the pictures count
none); images_in and media_bytes_in are exactly what the mock received
(it runs with --media-dir; every picture must decode as a PNG of the asked
size); the summary's request_latency and TTFT percentiles are reproduced
exactly (numpy, linear) from the exported records.

Failures: injected 500s and malformed bodies are counted exactly as the
mock draws them (http_5xx, malformed_stream). The mock gives chat-style
/v1/embeddings bodies to this route and input bodies to OpenAI's, and
refuses a malformed picture part with a 400. Specs: workload.batch_size and
target.stream true are refused naming the field; `headroom profile
--endpoint-type chat_embeddings` maps to the type.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_chat_embeddings.py
"""
import base64
import collections
import glob
import json
import os
import subprocess
import unittest
import urllib.error
import urllib.request

import hrtest
import test_multimodal as mm
from test_faults import fault_draw

try:  # api/openapi.yaml's RunSpec, checked against every spec here
    import yaml
    from jsonschema import Draft202012Validator, RefResolver
except ImportError:  # test_openapi.py reports what is missing
    yaml = None

ISL = 16
N = 12
TTFT_MS = 20


class ChatEmbeddings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.media = os.path.join(cls.tmp.name, "media")
        os.mkdir(cls.media)
        cls.mock = hrtest.start_mock("--ttft-ms", str(TTFT_MS), "--itl-ms", "4", "--quiet",
                                     "--embedding-dim", "8", "--media-dir", cls.media)
        cls.daemon = hrtest.start_daemon(os.path.join(cls.tmp.name, "data"))
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.runspec = None
        if yaml:
            with open(os.path.join(hrtest.SRC, "api", "openapi.yaml")) as f:
                doc = yaml.safe_load(f)
            cls.runspec = Draft202012Validator({"$ref": "#/components/schemas/RunSpec"},
                                               resolver=RefResolver.from_schema(doc))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.mock.stop()
        cls.tmp.cleanup()

    def spec(self, transport=None, addr=None, **workload):
        sp = hrtest.spec(addr or self.mock.addr, concurrency=4, requests=N)
        sp["name"] = "chat embeddings"
        sp["target"]["endpoint"] = "chat_embeddings"
        sp["target"]["stream"] = False
        sp["target"]["timeout_s"] = 30
        if transport:
            sp["target"]["transport"] = transport
        sp["workload"] = {"isl": {"mean": ISL, "stddev": 0}, "osl": {"mean": 8, "stddev": 0},
                          "seed": 7}
        sp["workload"].update(workload)
        return sp

    def check_schema(self, sp):
        if self.runspec:
            errors = [e.message[:200] for e in self.runspec.iter_errors(sp)]
            self.assertEqual(errors, [], json.dumps(sp)[:500])

    def received(self):
        """The pictures the mock saved since the last call: (head, bytes)."""
        images = []
        for path in sorted(glob.glob(os.path.join(self.media, "*"))):
            with open(path, "rb") as f:
                text = f.read().decode()
            os.unlink(path)
            self.assertTrue(path.endswith(".image"), path)
            head, _, b64 = text.partition(",")
            images.append((head, base64.b64decode(b64, validate=True)))
        return images

    def run_spec(self, sp):
        self.check_schema(sp)
        run = self.api.wait(self.api.submit(sp), timeout=120)
        self.check_schema(run["spec"])
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        return run, [json.loads(line) for line in text.splitlines()]

    def run_valid(self, sp):
        self.received()  # (nothing left from an earlier run)
        run, rows = self.run_spec(sp)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertFalse(run["spec"]["target"]["stream"])
        self.assertNotIn("batch_size", run["spec"]["workload"])
        s = run["summary"]
        self.assertEqual((s["counts"]["valid"], s["counts"]["errors"]), (N, 0), s["errors"])
        self.assertEqual(len(rows), N)
        for r in rows:
            self.assertEqual((r["status"], r["error"]), (200, ""), r)
            self.assertTrue(r["valid"], r)
            self.assertEqual((r["isl"], r["isl_source"]), (ISL, "server_usage"), r)
            self.assertEqual(r["osl"], 0, r)
            self.assertEqual(r["n_chunks"], 1, r)
            self.assertEqual(r["end_ns"], r["done_ns"], r)
        m = s["metrics"]
        self.assertEqual(m["input_sequence_length"]["avg"], ISL)
        self.assertEqual(m["inter_token_latency"]["count"], 0)
        self.assertGreaterEqual(m["time_to_first_token"]["min"], TTFT_MS * 0.9)
        for tag in ("time_to_first_token", "request_latency"):
            self.assertEqual(m[tag]["count"], N, tag)
        hrtest.check_exact(self, run, rows)
        return run, rows

    def check_text_only(self, transport):
        run, rows = self.run_valid(self.spec(transport))
        self.assertNotIn("images", run["spec"]["workload"])
        self.assertEqual(self.received(), [])
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"], r["media_bytes_in"]),
                             (None, None, None), r)

    def check_pictures(self, transport):
        sp = self.spec(transport, images={"count": 2, "width": 32, "height": 24, "pool": 3})
        run, rows = self.run_valid(sp)
        self.assertEqual(run["spec"]["workload"]["images"],
                         {"count": 2, "width": 32, "height": 24, "pool": 3, "format": "png"})
        images = self.received()
        self.assertEqual(len(images), 2 * N)
        for head, data in images:
            self.assertEqual(head, "data:image/png;base64")
            self.assertEqual(mm.png_size(data), (32, 24))
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"]), (2, 0), r)
        self.assertEqual(sum(r["media_bytes_in"] for r in rows),
                         sum(len(d) for _, d in images))
        distinct = {d for _, d in images}
        self.assertTrue(1 < len(distinct) <= 3, len(distinct))

    def test_text_only_native(self):
        self.check_text_only(None)

    def test_text_only_curl(self):
        self.check_text_only("curl")

    def test_pictures_native(self):
        self.check_pictures(None)

    def test_pictures_curl(self):
        self.check_pictures("curl")

    def test_injected_failures(self):
        """500s and malformed bodies land in http_5xx and malformed_stream,
        exactly as the mock draws them."""
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        self.assertTrue(expected["500"] and expected["malformed"] and expected[None])
        mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                 "--fail-seed", str(seed), "--quiet")
        try:
            sp = self.spec(addr=mock.addr, images={"count": 1, "width": 16, "height": 16})
            sp["load"]["concurrency"] = 1  # the mock numbers requests in order
            run, rows = self.run_spec(sp)
        finally:
            self.assertEqual(mock.stop(), 0)
        s = run["summary"]
        self.assertEqual(s["counts"]["valid"], expected[None])
        self.assertEqual(s["errors"], {"http_5xx": expected["500"],
                                       "malformed_stream": expected["malformed"]})
        for r in rows:
            if r["error"] == "http_5xx":
                self.assertEqual(r["status"], 500)
            elif r["error"] == "malformed_stream":
                self.assertEqual(r["status"], 200)
                self.assertIn("not JSON", r["error_message"])
            else:
                self.assertEqual(r["error"], "", r)

    def post(self, body):
        req = urllib.request.Request("http://%s/v1/embeddings" % self.mock.addr,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as f:
                return f.status, json.loads(f.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_mock_route(self):
        """Chat-style bodies are this route's, "input" bodies OpenAI's; the
        text parts are the prompt; bad picture parts are 400s."""
        msg = {"role": "user", "content": [
            {"type": "text", "text": "one two three"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
        st, body = self.post({"model": "m", "messages": [msg], "encoding_format": "float"})
        self.assertEqual(st, 200, body)
        self.assertEqual(len(body["data"]), 1)
        self.assertEqual(len(body["data"][0]["embedding"]), 8)
        self.assertEqual(body["usage"]["prompt_tokens"], 3)
        self.received()
        st, body = self.post({"model": "m", "input": ["a b", "c"]})
        self.assertEqual((st, len(body["data"]), body["usage"]["prompt_tokens"]), (200, 2, 3))
        bad = {"role": "user", "content": [{"type": "image_url", "image_url": {}}]}
        for req in ({"model": "m", "messages": [bad]},
                    {"model": "m", "messages": []},
                    {"model": "m", "messages": [msg], "input": "x"},
                    {"model": "m", "messages": [msg], "encoding_format": "int8"}):
            with self.subTest(body=req):
                st, body = self.post(req)
                self.assertEqual(st, 400, body)
        self.received()

    def test_bad_specs(self):
        sp = self.spec(batch_size=2)
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "workload.batch_size"), body)
        sp = self.spec()
        sp["target"]["stream"] = True
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "target.stream"), body)
        sp = self.spec(audio={"count": 1})
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "workload.audio"), body)

    def test_profile_name(self):
        r = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "--print-spec",
                            "-m", "m", "--endpoint-type", "chat_embeddings"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        sp = json.loads(r.stdout)
        self.assertEqual(sp["target"]["endpoint"], "chat_embeddings")
        self.check_schema(sp)
        r = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "--print-spec",
                            "-m", "m", "--endpoint-type", "chat_embeddings", "--streaming"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    unittest.main()
