#!/usr/bin/env python3
"""test_endpoints_llm.py - the OpenAI Responses (`responses`, /v1/responses)
and Anthropic Messages (`messages`, /v1/messages) endpoint types end to
end: REST submit -> worker -> headroom-mock -> records in SQLite ->
summary, on both transports (target.transport native and curl).

Each run must count every request valid with status 200, its input and
output lengths what the mock defines (docs/mock.md: one token per word;
the input counts the system prompt / instructions and every turn), and
its exported records must reproduce the summary's percentiles exactly
(numpy's linear percentiles). Streamed runs: one chunk per token, TTFT
and ITL those of the mock; with --reasoning-tokens the first chunks are
reasoning (Responses: usage's reasoning_tokens; Messages: thinking
chunks) and the first token is the first text after them. Sessions carry
the earlier turns as input items / messages and the shared system prompt
as `instructions` / top-level `system`.

Failures: injected 500s and malformed events or bodies (http_5xx,
malformed_stream, counted exactly with the mock's draw), and scripted
streams from a small HTTP server in this process: bad JSON in a delta
(malformed_stream), an error event before any text (no_content, the
server's message) or after some (malformed_stream), a stream that ends
before message_stop / response.completed (malformed_stream), one with
only pings (no_content), an error answer (no_content). The request the
worker sends is checked there too (headers x-api-key and
anthropic-version, the body's members).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_endpoints_llm.py
"""
import collections
import json
import os
import re
import subprocess
import unittest
import urllib.error
import urllib.request

import hrtest
import hrworker
from test_faults import fault_draw

ISL, OSL = 16, 8
TTFT_MS, ITL_MS = 20, 4
N = 12
EPS = ("responses", "messages")
TRANSPORTS = ("native", "curl")
KEY_ENV = "HR_TEST_LLM_KEY"
KEY = "sekrit-llm"


def metric_value(text, name):
    m = re.search(r"^%s\{[^}]*\} ([0-9.e+]+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


class Scripted(hrworker.HttpServer):
    """Answers /v1/responses and /v1/messages with the stream (or body) the
    request's model names; keeps every request (path, headers, body)."""

    def __init__(self):
        outer = self
        self.requests = []

        class Handler(hrworker.QuietHandler):
            def do_POST(self):
                body = self.json_body()
                outer.requests.append((self.path, dict(self.headers), body))
                events = SCRIPTS[body["model"]]
                if isinstance(events, dict):  # a whole answer
                    data = json.dumps(events).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for e in events:
                        self.wfile.write(e.encode())
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the worker gave up on a broken stream

        super().__init__(Handler)


def ev(name, obj):
    data = obj if isinstance(obj, str) else json.dumps(dict({"type": name}, **obj))
    return "event: %s\ndata: %s\n\n" % (name, data)


def m_text(t):
    return ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": t}})


def r_text(t):
    return ev("response.output_text.delta", {"sequence_number": 1, "item_id": "m",
                                              "output_index": 0, "content_index": 0,
                                              "delta": t})


M_START = ev("message_start", {"message": {"id": "x", "type": "message", "role": "assistant",
                                           "content": [], "usage": {"input_tokens": 3,
                                                                    "output_tokens": 1}}})
M_END = [ev("message_delta", {"delta": {"stop_reason": "end_turn"},
                              "usage": {"output_tokens": 2}}), ev("message_stop", {})]
R_START = ev("response.created", {"sequence_number": 0, "response": {"id": "r",
                                                                     "status": "in_progress"}})
R_DONE = ev("response.completed", {"sequence_number": 9, "response": {
    "id": "r", "status": "completed", "usage": {"input_tokens": 3, "output_tokens": 2}}})

# model name -> (events, or a whole answer) and the record it must give
SCRIPTS = {
    "m_ok": [M_START, ev("ping", {}), m_text("a"), ev("ping", {}), m_text("b")] + M_END,
    "m_badjson": [M_START, m_text("a"),
                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"del\n\n",
                  m_text("b")] + M_END,
    "m_error_first": [M_START, ev("ping", {}),
                      ev("error", {"error": {"type": "overloaded_error",
                                             "message": "Overloaded right now"}})],
    "m_error_later": [M_START, m_text("a"),
                      ev("error", {"error": {"type": "api_error", "message": "went away"}})],
    "m_no_stop": [M_START, m_text("a"), m_text("b"), M_END[0]],
    "m_pings": [M_START, ev("ping", {}), ev("ping", {})] + M_END,
    "m_error_answer": {"type": "error", "error": {"type": "overloaded_error",
                                                  "message": "Overloaded whole"}},
    "m_answer_bad": {"type": "message", "content": "not a list"},
    "r_ok": [R_START, r_text("a"), r_text("b"), R_DONE],
    "r_badjson": [R_START, r_text("a"), "event: response.output_text.delta\ndata: {\"del\n\n",
                  R_DONE],
    "r_error_first": [R_START, ev("error", {"code": "server_error",
                                            "message": "Model crashed"})],
    "r_failed_later": [R_START, r_text("a"),
                       ev("response.failed", {"sequence_number": 3, "response": {
                           "status": "failed", "error": {"code": "server_error",
                                                         "message": "failed halfway"}}})],
    "r_no_completed": [R_START, r_text("a"), r_text("b")],
    "r_incomplete": [R_START, r_text("a"),
                     ev("response.incomplete", {"sequence_number": 4, "response": {
                         "status": "incomplete", "usage": {"input_tokens": 3,
                                                           "output_tokens": 1}}})],
    "r_error_answer": {"status": "failed", "output": [],
                       "error": {"code": "server_error", "message": "Failed whole"}},
}
EXPECT = {  # model -> (error, message part, chunks)
    "m_ok": ("", None, 2),
    "m_badjson": ("malformed_stream", "not JSON", 1),
    "m_error_first": ("no_content", "Overloaded right now", 0),
    "m_error_later": ("malformed_stream", "went away", 1),
    "m_no_stop": ("malformed_stream", "ended before its last event", 2),
    "m_pings": ("no_content", "no content-bearing chunk", 0),
    "r_ok": ("", None, 2),
    "r_badjson": ("malformed_stream", "not JSON", 1),
    "r_error_first": ("no_content", "Model crashed", 0),
    "r_failed_later": ("malformed_stream", "failed halfway", 1),
    "r_no_completed": ("malformed_stream", "ended before its last event", 2),
    "r_incomplete": ("", None, 1),
}
EXPECT_WHOLE = {
    "m_error_answer": ("no_content", "Overloaded whole"),
    "m_answer_bad": ("malformed_stream", "content is not an array"),
    "r_error_answer": ("no_content", "Failed whole"),
}


class LlmEndpoints(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        os.environ[KEY_ENV] = KEY  # headroomd reads the secret from it
        cls.start_service(mock_args=("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                                     "--api-key", KEY, "--quiet"),
                          daemon_args=("--secret", "llm=env:%s@127.0.0.1" % KEY_ENV))
        cls.slow = hrtest.sanitized()

    # --- helpers ------------------------------------------------------------------------

    def spec(self, endpoint, stream, transport, addr=None, requests=N, workload=None,
             model="mock-model", key=True):
        sp = hrtest.spec(addr or self.mock.addr, concurrency=4, requests=requests)
        sp["name"] = "endpoint %s %s" % (endpoint, transport)
        sp["target"].update(endpoint=endpoint, stream=stream, timeout_s=30,
                            transport=transport, model=model)
        if key:
            sp["target"]["api_key_secret"] = "llm"
        sp["workload"] = {"isl": {"mean": ISL, "stddev": 0}, "osl": {"mean": OSL, "stddev": 0},
                          "seed": 5}
        sp["workload"].update(workload or {})
        return sp

    def run_spec(self, sp, api=None):
        api = api or self.api
        run = api.wait(api.submit(sp), timeout=120 * hrtest.time_scale())
        st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        return run, [json.loads(line) for line in text.splitlines()]

    def check_valid(self, run, rows, isl, osl, n_chunks, reasoning=None):
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        s = run["summary"]
        self.assertEqual(s["counts"]["valid"], N, s.get("errors"))
        self.assertEqual(s["errors"], {})
        self.assertEqual(len(rows), N)
        for r in rows:
            self.assertEqual((r["status"], r["error"]), (200, ""), r)
            self.assertEqual((r["isl"], r["isl_source"]), (isl, "server_usage"), r)
            self.assertEqual((r["osl"], r["osl_source"]), (osl, "server_usage"), r)
            self.assertEqual(r["n_chunks"], n_chunks, r)
            if reasoning is not None:
                self.assertEqual(r["reasoning_tokens"], reasoning, r)
        m = s["metrics"]
        # the exported values reproduce the stored statistics exactly
        hrtest.check_exact(self, run, rows)
        self.assertEqual(m["input_sequence_length"]["avg"], isl)
        self.assertEqual(m["output_sequence_length"]["avg"], osl)
        return m

    def check_streamed_timing(self, m):
        hi = 50 if self.slow else 10
        ttft, itl = m["time_to_first_token"], m["inter_token_latency"]
        self.assertEqual((ttft["count"], itl["count"]), (N, N))
        self.assertGreaterEqual(ttft["min"], TTFT_MS * 0.9)
        self.assertLess(ttft["p50"], TTFT_MS * hi)
        self.assertGreater(itl["max"], 0)
        # (no lower bound on the ITL: a late first chunk shortens it by any
        # amount; the latency below is the pacing's evidence)
        self.assertLess(itl["p50"], ITL_MS * hi)
        self.assertGreater(m["request_latency"]["min"], TTFT_MS + (OSL - 2) * ITL_MS * 0.9)

    def mock_prompt_tokens(self, mock=None):
        with urllib.request.urlopen("http://%s/metrics" % (mock or self.mock).addr,
                                    timeout=10) as f:
            return metric_value(f.read().decode(), "vllm:prompt_tokens_total")

    # --- valid runs ---------------------------------------------------------------------

    def test_streamed(self):
        for ep in EPS:
            for tr in TRANSPORTS:
                with self.subTest(endpoint=ep, transport=tr):
                    run, rows = self.run_spec(self.spec(ep, True, tr))
                    self.assertEqual(run["spec"]["target"]["endpoint"], ep)
                    m = self.check_valid(run, rows, ISL, OSL, OSL)
                    self.check_streamed_timing(m)
                    for r in rows:
                        self.assertEqual(r["first_output_ns"], r["start_ns"] +
                                         r["chunk_offsets_ns"][0], r)

    def test_not_streamed(self):
        for ep in EPS:
            for tr in TRANSPORTS:
                with self.subTest(endpoint=ep, transport=tr):
                    run, rows = self.run_spec(self.spec(ep, False, tr))
                    m = self.check_valid(run, rows, ISL, OSL, 0)
                    self.assertEqual(m["time_to_first_token"]["count"], 0)
                    self.assertGreater(m["request_latency"]["min"],
                                       TTFT_MS + (OSL - 2) * ITL_MS * 0.9)

    def test_reasoning(self):
        """--reasoning-tokens 3: three reasoning chunks, then text; the first
        token is the fourth chunk; reasoning_tokens from Responses' usage and
        from Messages' thinking chunks (its usage has no such count)."""
        mock = hrtest.start_mock("--ttft-ms", "5", "--itl-ms", "2", "--reasoning-tokens", "3",
                                 "--quiet")
        try:
            for ep in EPS:
                for stream in (True, False):
                    with self.subTest(endpoint=ep, stream=stream):
                        run, rows = self.run_spec(self.spec(ep, stream, "native",
                                                            addr=mock.addr, key=False))
                        want = 3 if stream or ep == "responses" else None
                        self.check_valid(run, rows, ISL, OSL, OSL if stream else 0, want)
                        for r in rows:
                            if stream:
                                self.assertEqual(r["first_output_ns"], r["start_ns"] +
                                                 r["chunk_offsets_ns"][3], r)
        finally:
            self.assertEqual(mock.stop(), 0)

    def test_sessions(self):
        """Two turns with a shared system prompt of 5 words: the first turn
        counts it and the prompt, the second also the first turn's prompt
        and answer; the mock counted exactly what the records say."""
        for ep in EPS:
            for tr in TRANSPORTS:
                with self.subTest(endpoint=ep, transport=tr):
                    before = self.mock_prompt_tokens()
                    sp = self.spec(ep, True, tr, workload={
                        "sessions": {"turns": {"mean": 2}}, "system_prompt": {"tokens": 5}})
                    run, rows = self.run_spec(sp)
                    self.assertEqual(run["state"], "succeeded", run.get("reason"))
                    self.assertEqual(run["summary"]["counts"]["valid"], N)
                    by_turn = collections.defaultdict(set)
                    for r in rows:
                        by_turn[r["turn"]].add(r["isl"])
                    self.assertEqual(by_turn[0], {5 + ISL})
                    self.assertEqual(by_turn[1], {5 + ISL + OSL + ISL})
                    self.assertEqual(self.mock_prompt_tokens() - before,
                                     sum(r["isl"] for r in rows))

    def test_profile_endpoint_types(self):
        """headroom profile --endpoint-type maps AIPerf's names."""
        for ep in EPS:
            out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "-m", "x",
                                  "--endpoint-type", ep, "--streaming", "--print-spec"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            sp = json.loads(out.stdout)
            self.assertEqual(sp["target"]["endpoint"], ep)
            self.assertTrue(sp["target"]["stream"])

    # --- failures -----------------------------------------------------------------------

    def test_injected_failures(self):
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        self.assertTrue(expected["500"] and expected["malformed"] and expected[None])
        for ep in EPS:
            for stream in (True, False):
                with self.subTest(endpoint=ep, stream=stream):
                    mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                             "--fail-seed", str(seed), "--quiet")
                    try:
                        sp = self.spec(ep, stream, "native", addr=mock.addr, key=False)
                        sp["load"]["concurrency"] = 1  # the mock numbers requests in order
                        run, rows = self.run_spec(sp)
                    finally:
                        self.assertEqual(mock.stop(), 0)
                    s = run["summary"]
                    self.assertEqual(s["counts"]["valid"], expected[None])
                    self.assertEqual(s["errors"], {"http_5xx": expected["500"],
                                                   "malformed_stream": expected["malformed"]})
                    for r in rows:
                        if r["error"] == "malformed_stream":
                            self.assertEqual(r["status"], 200)
                            self.assertIn("not JSON", r["error_message"])

    def test_wrong_key(self):
        """The mock's --api-key: a Messages request without x-api-key is a 401."""
        sp = self.spec("messages", True, "native", requests=4, key=False)
        run, rows = self.run_spec(sp)
        self.assertEqual({(r["status"], r["error"]) for r in rows}, {(401, "http_4xx")})

    def test_mock_bad_bodies(self):
        """The mock's routes answer hostile bodies 400, naming the member."""
        cases = [
            ("/v1/messages", {"messages": [{"role": "user", "content": "a"}]}, "'max_tokens'"),
            ("/v1/messages", {"max_tokens": 0, "messages": [{"role": "user", "content": "a"}]},
             "'max_tokens'"),
            ("/v1/messages", {"max_tokens": 2, "messages": []}, "'messages'"),
            ("/v1/messages", {"max_tokens": 2, "messages": [{"role": "system", "content": "a"}]},
             "'role'"),
            ("/v1/messages", {"max_tokens": 2, "messages": [{"role": "user", "content": [
                {"type": "text"}]}]}, "'text'"),
            ("/v1/messages", {"max_tokens": 2, "system": 5,
                              "messages": [{"role": "user", "content": "a"}]}, "'system'"),
            ("/v1/responses", {"input": 7}, "'input'"),
            ("/v1/responses", {"input": "a", "instructions": []}, "'instructions'"),
            ("/v1/responses", {"input": "a", "max_output_tokens": 2 ** 40},
             "'max_output_tokens'"),
            ("/v1/responses", {"input": [5]}, "'input'"),
            ("/v1/responses", {"input": "a", "stream": "yes"}, "'stream'"),
            ("/v1/responses", [], "JSON object"),
        ]
        for path, body, part in cases:
            with self.subTest(path=path, body=body):
                req = urllib.request.Request(
                    "http://%s%s" % (self.mock.addr, path), data=json.dumps(body).encode(),
                    headers={"x-api-key": KEY, "Content-Type": "application/json"})
                with self.assertRaises(urllib.error.HTTPError) as cm:
                    urllib.request.urlopen(req, timeout=10)
                self.assertEqual(cm.exception.code, 400)
                err = json.loads(cm.exception.read())["error"]
                self.assertIn(part, err["message"])

    def test_scripted_streams(self):
        s = Scripted()
        try:
            for model, (err, part, chunks) in EXPECT.items():
                ep = "messages" if model.startswith("m_") else "responses"
                for tr in TRANSPORTS:
                    with self.subTest(model=model, transport=tr):
                        sp = self.spec(ep, True, tr, addr=s.url[len("http://"):], requests=1,
                                       model=model)
                        sp["load"]["concurrency"] = 1
                        run, rows = self.run_spec(sp)
                        self.assertEqual(len(rows), 1)
                        r = rows[0]
                        self.assertEqual((r["status"], r["error"]), (200, err), r)
                        self.assertEqual(r["n_chunks"], chunks, r)
                        if part:
                            self.assertIn(part, r["error_message"], r)
                        elif model == "r_incomplete":
                            self.assertEqual((r["isl"], r["osl"]), (3, 1), r)
                        else:
                            self.assertEqual((r["isl"], r["osl"]), (3, 2), r)
            for model, (err, part) in EXPECT_WHOLE.items():
                ep = "messages" if model.startswith("m_") else "responses"
                with self.subTest(model=model):
                    sp = self.spec(ep, False, "native", addr=s.url[len("http://"):],
                                   requests=1, model=model)
                    sp["load"]["concurrency"] = 1
                    run, rows = self.run_spec(sp)
                    self.assertEqual((rows[0]["status"], rows[0]["error"]), (200, err), rows[0])
                    self.assertIn(part, rows[0]["error_message"])
            # what the worker sent
            for path, headers, body in s.requests:
                h = {k.lower(): v for k, v in headers.items()}
                if path == "/v1/messages":
                    self.assertNotIn("authorization", h)
                    self.assertEqual(h["x-api-key"], KEY)
                    self.assertEqual(h["anthropic-version"], "2023-06-01")
                    self.assertEqual(body["max_tokens"], OSL)
                    self.assertEqual(body["messages"][0]["role"], "user")
                    self.assertEqual(len(body["messages"][0]["content"].split()), ISL)
                else:
                    self.assertEqual(path, "/v1/responses")
                    self.assertEqual(h["authorization"], "Bearer " + KEY)
                    self.assertNotIn("x-api-key", h)
                    self.assertEqual(body["max_output_tokens"], OSL)
                    self.assertEqual(body["input"][0]["role"], "user")
                self.assertIn("stream", body)
        finally:
            s.close()

    def test_request_bodies(self):
        """A system prompt goes to top-level `system` / `instructions`; the
        Bearer key for Responses."""
        s = Scripted()
        try:
            for ep, model in (("messages", "m_ok"), ("responses", "r_ok")):
                sp = self.spec(ep, True, "native", addr=s.url[len("http://"):], requests=1,
                               model=model, workload={"system_prompt": {"tokens": 5}})
                sp["load"]["concurrency"] = 1
                run, rows = self.run_spec(sp)
                self.assertEqual(run["summary"]["counts"]["valid"], 1, rows)
            (p1, h1, b1), (p2, h2, b2) = s.requests
            self.assertEqual(p1, "/v1/messages")
            self.assertEqual(len(b1["system"].split()), 5)
            self.assertEqual([m["role"] for m in b1["messages"]], ["user"])
            self.assertEqual(p2, "/v1/responses")
            self.assertEqual(len(b2["instructions"].split()), 5)
            self.assertEqual([m["role"] for m in b2["input"]], ["user"])
            self.assertEqual(h2["Authorization"], "Bearer " + KEY)
            self.assertNotIn("anthropic-version", {k.lower() for k in h2})
        finally:
            s.close()


if __name__ == "__main__":
    unittest.main()
