#!/usr/bin/env python3
"""test_endpoints_native.py - the servers' own endpoint types end to end:
REST submit -> worker -> headroom-mock -> records in SQLite -> summary and
exports, on both transports (the native HTTP/1.1 client and libcurl), for
NVIDIA NIM, Cohere and Hugging Face TEI embeddings (batches of inputs),
vLLM's token-in/token-out /inference/v1/generate, SGLang's native
/generate (streamed and not, and multi-turn sessions over it) and raw
(a body sent as given, the answer timed but not parsed, streamed or not).

Each run must count every request valid with status 200, its input and
output lengths what the mock defines (docs/mock.md) with the sources
docs/metrics.md gives for the type, and the summary's statistics must be
the exported records' exactly (hrtest.check_exact: numpy's linear
percentiles, min, max and count of every per-record metric). Timing
comes from a mock with a fixed TTFT and ITL: TTFT and ITL of the streamed
types are judged against them with wide margins.

Failures: injected 500s and malformed bodies or events on every type land
in http_5xx and malformed_stream exactly as the mock draws them; a raw run
against a path the server has not is every request's http_4xx; specs with
a bad raw or endpoint field are refused naming the field.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_endpoints_native.py
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
from test_faults import fault_draw

try:  # api/openapi.yaml's RunSpec, checked against every spec here
    import yaml
    from jsonschema import Draft202012Validator, RefResolver
except ImportError:  # test_openapi.py reports what is missing
    yaml = None

ISL, OSL = 16, 8
TTFT_MS, ITL_MS = 20, 4
N = 12
TRANSPORTS = ("native", "curl")


def metric_value(text, name):
    m = re.search(r"^%s\{[^}]*\} ([0-9.e+]+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


class NativeEndpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.mock = hrtest.start_mock("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS),
                                     "--quiet")
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.slow = hrtest.sanitized()
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

    # --- helpers ------------------------------------------------------------------------

    def spec(self, endpoint, stream, transport="native", addr=None, requests=N, workload=None):
        sp = hrtest.spec(addr or self.mock.addr, concurrency=4, requests=requests)
        sp["name"] = "endpoint %s %s" % (endpoint, transport)
        sp["target"]["endpoint"] = endpoint
        sp["target"]["stream"] = stream
        sp["target"]["timeout_s"] = 30
        sp["target"]["transport"] = transport
        sp["workload"] = {"isl": {"mean": ISL, "stddev": 0}, "osl": {"mean": OSL, "stddev": 0},
                          "seed": 5}
        sp["workload"].update(workload or {})
        return sp

    def check_schema(self, sp):
        if self.runspec:
            errors = [e.message[:200] for e in self.runspec.iter_errors(sp)]
            self.assertEqual(errors, [], json.dumps(sp)[:500])

    def run_spec(self, sp):
        self.check_schema(sp)
        run = self.api.wait(self.api.submit(sp), timeout=120)
        self.check_schema(run["spec"])  # the normalised spec
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        rows = [json.loads(line) for line in text.splitlines()]
        return run, rows

    def check_valid(self, run, rows, isl, osl, isl_source, osl_source, n_chunks):
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        s = run["summary"]
        self.assertEqual(s["counts"]["requests"], N)
        self.assertEqual(s["counts"]["valid"], N, s.get("errors"))
        self.assertEqual(s["errors"], {})
        self.assertEqual(len(rows), N)
        for r in rows:
            self.assertEqual(r["status"], 200, r)
            self.assertEqual(r["error"], "", r)
            self.assertTrue(r["valid"], r)
            self.assertEqual((r["isl"], r["isl_source"]), (isl, isl_source), r)
            self.assertEqual((r["osl"], r["osl_source"]), (osl, osl_source), r)
            if n_chunks is not None:
                self.assertEqual(r["n_chunks"], n_chunks, r)
            self.assertGreaterEqual(r["done_ns"], r["end_ns"])
        m = s["metrics"]
        if isl is None:  # not known: not in the statistics
            self.assertEqual(m["input_sequence_length"]["count"], 0)
        else:
            self.assertEqual(m["input_sequence_length"]["avg"], isl)
        if osl is None:
            self.assertEqual(m["output_sequence_length"]["count"], 0)
        else:
            self.assertEqual(m["output_sequence_length"]["avg"], osl)
        self.assertEqual(m["request_latency"]["count"], N)
        hrtest.check_exact(self, run, rows)
        return m

    def check_streamed_timing(self, m):
        hi = 50 if self.slow else 10
        ttft, itl = m["time_to_first_token"], m["inter_token_latency"]
        self.assertEqual(ttft["count"], N)
        self.assertGreaterEqual(ttft["min"], TTFT_MS * 0.9)
        self.assertLess(ttft["p50"], TTFT_MS * hi)
        self.assertGreater(itl["max"], 0)
        self.assertLess(itl["p50"], ITL_MS * hi)
        self.assertGreater(m["request_latency"]["min"], TTFT_MS + (OSL - 2) * ITL_MS * 0.9)

    def check_one_piece_timing(self, m, rows):
        ttft = m["time_to_first_token"]
        self.assertEqual(ttft["count"], N)
        self.assertGreaterEqual(ttft["min"], TTFT_MS * 0.9)
        self.assertLess(ttft["p50"], TTFT_MS * (50 if self.slow else 10))
        self.assertEqual(m["inter_token_latency"]["count"], 0)
        for r in rows:
            self.assertEqual(r["end_ns"], r["done_ns"], r)
            self.assertGreaterEqual(r["first_output_ns"], r["headers_ns"], r)

    def mock_prompt_tokens(self):
        with urllib.request.urlopen("http://%s/metrics" % self.mock.addr, timeout=10) as f:
            return metric_value(f.read().decode(), "vllm:prompt_tokens_total")

    # --- valid runs ---------------------------------------------------------------------

    def test_embeddings_variants(self):
        """NIM (usage), Cohere (billed input tokens) and TEI (no usage) with
        batches of 3 inputs: one piece each, the inputs' lengths summed."""
        for ep, source in (("nim_embeddings", "server_usage"),
                           ("cohere_embeddings", "server_usage"),
                           ("tei_embeddings", "requested")):
            for tr in TRANSPORTS:
                with self.subTest(endpoint=ep, transport=tr):
                    sp = self.spec(ep, False, tr, workload={"batch_size": 3})
                    run, rows = self.run_spec(sp)
                    self.assertEqual(run["spec"]["workload"]["batch_size"], 3)
                    self.assertFalse(run["spec"]["target"]["stream"])
                    m = self.check_valid(run, rows, 3 * ISL, 0, source, "requested", 1)
                    self.check_one_piece_timing(m, rows)

    def test_embeddings_lengths_vary(self):
        """TEI has no usage: the input length the worker counts is the one
        the mock counted, input by input."""
        before = self.mock_prompt_tokens()
        sp = self.spec("tei_embeddings", False, workload={"batch_size": 2,
                                                          "isl": {"mean": 20, "stddev": 6}})
        run, rows = self.run_spec(sp)
        self.assertEqual(run["summary"]["counts"]["valid"], N, run["summary"].get("errors"))
        self.assertEqual(sum(r["isl"] for r in rows), self.mock_prompt_tokens() - before)
        self.assertGreater(len({r["isl"] for r in rows}), 1)

    def test_vllm_generate(self):
        """Token ids in and out: the ISL is the ids sent (exact by
        construction, the mock counts one token per id), the OSL the ids
        returned; not streamed, so no TTFT."""
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                before = self.mock_prompt_tokens()
                run, rows = self.run_spec(self.spec("vllm_generate", False, tr))
                m = self.check_valid(run, rows, ISL, OSL, "requested", "server_usage", 0)
                self.assertEqual(m["time_to_first_token"]["count"], 0)
                self.assertGreater(m["request_latency"]["min"],
                                   TTFT_MS + (OSL - 2) * ITL_MS * 0.9)
                self.assertEqual(self.mock_prompt_tokens() - before, N * ISL)
                for r in rows:
                    self.assertEqual(r["requested_osl"], OSL, r)

    def test_vllm_generate_prefix(self):
        """Shared prefix prompts become ids too (one per word, the same
        prefix the same ids): every request sends the prefix's 10 ids and
        its own 16, all of which the mock counts."""
        before = self.mock_prompt_tokens()
        sp = self.spec("vllm_generate", False,
                       workload={"prefix_prompts": {"count": 2, "tokens": 10}})
        run, rows = self.run_spec(sp)
        self.check_valid(run, rows, ISL + 10, OSL, "requested", "server_usage", 0)
        self.assertEqual(self.mock_prompt_tokens() - before, N * (ISL + 10))

    def test_vllm_generate_tokenizer(self):
        """With workload.tokenizer the ids are the prompt's, encoded by it:
        exactly the ISL asked for (the prompt is built to that length), as
        the mock counts them (one token per id)."""
        from test_profile import byte_tokenizer
        tok = os.path.join(self.tmp.name, "tokenizer.json")
        with open(tok, "w") as f:
            json.dump(byte_tokenizer(), f)
        before = self.mock_prompt_tokens()
        sp = self.spec("vllm_generate", False, workload={"tokenizer": tok})
        run, rows = self.run_spec(sp)
        self.check_valid(run, rows, ISL, OSL, "tokenizer", "server_usage", 0)
        self.assertEqual(self.mock_prompt_tokens() - before, N * ISL)

    def test_sglang_streamed(self):
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                run, rows = self.run_spec(self.spec("sglang_generate", True, tr))
                self.assertTrue(run["spec"]["target"]["stream"])
                m = self.check_valid(run, rows, ISL, OSL, "server_usage", "server_usage", OSL)
                self.check_streamed_timing(m)
                self.assertEqual(m["time_to_second_token"]["count"], N)

    def test_sglang_chunks_of_several_tokens(self):
        """Steps of 3 tokens: 3 events' worth of output in fewer events;
        each event with new output is one chunk, the OSL the server's."""
        mock = hrtest.start_mock("--tokens-per-chunk", "3", "--quiet")
        try:
            run, rows = self.run_spec(self.spec("sglang_generate", True, addr=mock.addr))
        finally:
            self.assertEqual(mock.stop(), 0)
        self.check_valid(run, rows, ISL, OSL, "server_usage", "server_usage", 3)

    def test_sglang_not_streamed(self):
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                run, rows = self.run_spec(self.spec("sglang_generate", False, tr))
                m = self.check_valid(run, rows, ISL, OSL, "server_usage", "server_usage", 0)
                self.assertEqual(m["time_to_first_token"]["count"], 0)

    def test_sglang_sessions(self):
        """Multi-turn over SGLang's text: each turn carries the text so far,
        the answer as the last event spelled it."""
        sp = self.spec("sglang_generate", True, workload={"sessions": {"turns": {"mean": 2}}})
        run, rows = self.run_spec(sp)
        self.assertEqual(run["summary"]["counts"]["valid"], N, run["summary"].get("errors"))
        by_turn = collections.defaultdict(set)
        for r in rows:
            by_turn[r["turn"]].add(r["isl"])
        self.assertEqual(by_turn[0], {ISL})
        self.assertEqual(by_turn[1], {ISL + OSL + ISL})

    def raw_spec(self, stream, transport, body, path="/v1/chat/completions", **raw):
        sp = self.spec("raw", stream, transport)
        sp["target"]["path"] = path
        sp["target"]["raw"] = dict(body=body, **raw)
        return sp

    def test_raw_not_streamed(self):
        """A JSON body as given against the chat route: one piece at the
        body's end, no token counts, its bytes recorded (those of the same
        body asked for by hand, give or take the id's digits)."""
        body = {"model": "mock-model", "max_tokens": OSL,
                "messages": [{"role": "user", "content": "one two three"}]}
        req = urllib.request.Request("http://%s/v1/chat/completions" % self.mock.addr,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as f:
            size = len(f.read())
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                run, rows = self.run_spec(self.raw_spec(False, tr, body))
                self.assertEqual(run["spec"]["target"]["raw"], {"body": body})
                m = self.check_valid(run, rows, None, None, "none", "none", 1)
                self.assertGreater(m["request_latency"]["min"],
                                   TTFT_MS + (OSL - 2) * ITL_MS * 0.9)
                for r in rows:
                    self.assertLessEqual(abs(r["bytes_out"] - size), 8, r)
                    self.assertEqual(r["first_output_ns"], r["chunk_offsets_ns"][0] +
                                     r["start_ns"], r)

    def test_raw_streamed(self):
        """A string body sent as given (its own content type) asking the
        chat route to stream: every read is a chunk, the first the first
        token, no output length, the bytes counted."""
        body = json.dumps({"model": "mock-model", "max_tokens": OSL, "stream": True,
                           "messages": [{"role": "user", "content": "one two"}]})
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                sp = self.raw_spec(True, tr, body,
                                   content_type="application/json; charset=utf-8")
                run, rows = self.run_spec(sp)
                m = self.check_valid(run, rows, None, None, "none", "none", None)
                # the first bytes are the SSE head event the mock sends at
                # once; the last read brings the last token, due after TTFT
                # and the ITLs
                self.assertEqual(m["time_to_first_token"]["count"], N)
                for r in rows:
                    self.assertGreaterEqual(r["chunk_offsets_ns"][-1] / 1e6,
                                            TTFT_MS + (OSL - 2) * ITL_MS * 0.9, r)
                    # at most one chunk per event (plus [DONE]); reads may merge them
                    self.assertGreaterEqual(r["n_chunks"], 1, r)
                    self.assertLessEqual(r["n_chunks"], OSL + 2, r)
                    self.assertGreater(r["bytes_out"], OSL * 20, r)
                self.assertGreater(max(r["n_chunks"] for r in rows), 1)

    def test_raw_http_errors(self):
        """A path the server has not: every request's 404, as today."""
        for stream in (False, True):
            run, rows = self.run_spec(self.raw_spec(stream, "native", {"x": 1}, path="/nope"))
            self.assertEqual({(r["status"], r["error"], r["bytes_out"]) for r in rows},
                             {(404, "http_4xx", None)})
        # a body the route refuses: 400s
        run, rows = self.run_spec(self.raw_spec(False, "curl", "not json"))
        self.assertEqual({(r["status"], r["error"]) for r in rows}, {(400, "http_4xx")})

    # --- failures -----------------------------------------------------------------------

    def test_injected_failures(self):
        """500s and malformed bodies and events land in http_5xx and
        malformed_stream, exactly as the mock draws them."""
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        self.assertTrue(expected["500"] and expected["malformed"] and expected[None])
        for ep, stream, tr in (("nim_embeddings", False, "native"),
                               ("cohere_embeddings", False, "curl"),
                               ("tei_embeddings", False, "native"),
                               ("vllm_generate", False, "curl"),
                               ("sglang_generate", False, "native"),
                               ("sglang_generate", True, "native"),
                               ("sglang_generate", True, "curl")):
            with self.subTest(endpoint=ep, stream=stream, transport=tr):
                mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                         "--fail-seed", str(seed), "--quiet")
                try:
                    sp = self.spec(ep, stream, tr, addr=mock.addr)
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
                hrtest.check_exact(self, run, rows)

    def test_bad_specs(self):
        def raw(t):
            t.update(endpoint="raw", stream=False)
        cases = [
            ("target.raw", "missing_field", lambda t: raw(t)),
            ("target.raw", "wrong_type", lambda t: (raw(t), t.update(raw=[1]))),
            ("target.raw.body", "missing_field", lambda t: (raw(t), t.update(raw={}))),
            ("target.raw.content_type", "invalid_value",
             lambda t: (raw(t), t.update(raw={"body": "x", "content_type": "a\nb"}))),
            ("target.raw.body", "out_of_range",
             lambda t: (raw(t), t.update(raw={"body": "x" * 300000}))),
            ("target.raw", "invalid_value", lambda t: t.update(raw={"body": "x"})),
            ("target.stream", "invalid_value",
             lambda t: t.update(endpoint="vllm_generate", stream=True)),
            ("target.stream", "invalid_value",
             lambda t: t.update(endpoint="cohere_embeddings", stream=True)),
        ]
        for field, code, change in cases:
            with self.subTest(field=field, code=code):
                sp = self.spec("chat", True)
                change(sp["target"])
                st, body, _ = self.api.call("POST", "/runs", sp)
                self.assertEqual(st, 400, body)
                self.assertEqual(body["error"]["field"], field, body)
                self.assertEqual(body["error"]["code"], code, body)
        sp = self.spec("raw", False)
        sp["target"]["raw"] = {"body": "x", "other": 1}
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "target.raw.other"), body)
        sp = self.spec("vllm_generate", False, workload={"sessions": {"turns": {"mean": 2}}})
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "workload.sessions"), body)
        sp = self.spec("tei_embeddings", False, workload={"passages": 2})
        st, body, _ = self.api.call("POST", "/runs", sp)
        self.assertEqual((st, body["error"]["field"]), (400, "workload.passages"), body)


class MockRoutes(unittest.TestCase):
    """The mock's wire format of these routes, asked by hand (docs/mock.md)."""

    @classmethod
    def setUpClass(cls):
        cls.mock = hrtest.start_mock("--embedding-dim", "4", "--quiet")

    @classmethod
    def tearDownClass(cls):
        cls.mock.stop()

    def post(self, path, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request("http://%s%s" % (self.mock.addr, path), data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as f:
                return f.status, f.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def test_cohere_embed(self):
        st, text = self.post("/v2/embed", {"model": "m", "texts": ["a b", "c"],
                                           "input_type": "search_query",
                                           "embedding_types": ["float"]})
        self.assertEqual(st, 200, text)
        j = json.loads(text)
        self.assertEqual(len(j["embeddings"]["float"]), 2)
        self.assertEqual(len(j["embeddings"]["float"][0]), 4)
        self.assertEqual(j["texts"], ["a b", "c"])
        self.assertEqual(j["meta"]["billed_units"]["input_tokens"], 3)
        # the vectors are those of /v1/embeddings for the same texts
        st2, text2 = self.post("/v1/embeddings", {"model": "m", "input": ["a b", "c"]})
        self.assertEqual([d["embedding"] for d in json.loads(text2)["data"]],
                         j["embeddings"]["float"])
        for body, word in (({"texts": ["a"], "input_type": "search_query"}, "'model'"),
                           ({"model": "m", "texts": ["a"]}, "'input_type'"),
                           ({"model": "m", "texts": [], "input_type": "image"}, "'texts'"),
                           ({"model": "m", "texts": ["a"], "input_type": "image",
                             "embedding_types": ["int8"]}, "'embedding_types'")):
            st, text = self.post("/v2/embed", body)
            self.assertEqual(st, 400, text)
            self.assertIn(word, text)

    def test_tei_embed(self):
        st, text = self.post("/embed", {"inputs": "a b"})
        self.assertEqual(st, 200, text)
        self.assertEqual(len(json.loads(text)), 1)
        st, text = self.post("/embed", {"inputs": ["a", "b", "c"], "normalize": True})
        self.assertEqual((st, len(json.loads(text))), (200, 3))
        st, text = self.post("/embed", {"inputs": [1]})
        self.assertEqual(st, 400, text)
        self.assertIn("'inputs[0]'", text)

    def test_nim_members(self):
        st, text = self.post("/v1/embeddings", {"model": "m", "input": ["a"],
                                                "input_type": "passage", "truncate": "END"})
        self.assertEqual(st, 200, text)
        for body, word in (({"input": "a", "input_type": "doc"}, "'input_type'"),
                           ({"input": "a", "truncate": "LEFT"}, "'truncate'")):
            st, text = self.post("/v1/embeddings", body)
            self.assertEqual(st, 400, text)
            self.assertIn(word, text)

    def test_vllm_generate(self):
        st, text = self.post("/inference/v1/generate",
                             {"model": "m", "token_ids": [5, 6], "stream": False,
                              "sampling_params": {"max_tokens": 3}})
        self.assertEqual(st, 200, text)
        j = json.loads(text)
        self.assertEqual(j["choices"][0]["token_ids"], [102, 103, 104])
        self.assertEqual(j["choices"][0]["finish_reason"], "length")
        self.assertEqual(j["prompt_token_count"], 2)
        for body, word in (({"token_ids": []}, "'token_ids'"),
                           ({"token_ids": [1, -2]}, "'token_ids[1]'"),
                           ({"token_ids": [1], "stream": True}, "'stream'"),
                           ({"token_ids": [1], "sampling_params": {"max_tokens": 0}},
                            "'sampling_params.max_tokens'")):
            st, text = self.post("/inference/v1/generate", body)
            self.assertEqual(st, 400, text)
            self.assertIn(word, text)

    def test_sglang_generate(self):
        st, text = self.post("/generate", {"text": "a b c", "stream": True,
                                           "sampling_params": {"max_new_tokens": 3}})
        self.assertEqual(st, 200, text)
        events = [e[len("data: "):] for e in text.split("\n\n") if e]
        self.assertEqual(events[-1], "[DONE]")
        evs = [json.loads(e) for e in events[:-1]]
        self.assertEqual(len(evs), 3)
        self.assertEqual([e["meta_info"]["completion_tokens"] for e in evs], [1, 2, 3])
        self.assertEqual([e["output_ids"] for e in evs], [[103], [104], [105]])
        self.assertEqual(evs[-1]["text"], "fox jumps over ")
        self.assertIsNone(evs[0]["meta_info"]["finish_reason"])
        self.assertEqual(evs[-1]["meta_info"]["finish_reason"]["type"], "length")
        st, text = self.post("/generate", {"input_ids": [1, 2, 3],
                                           "sampling_params": {"max_new_tokens": 2}})
        j = json.loads(text)
        self.assertEqual((j["text"], j["output_ids"]), ("fox jumps ", [103, 104]))
        self.assertEqual(j["meta_info"]["prompt_tokens"], 3)
        # TGI keeps its /generate: a body with "inputs" is TGI's
        st, text = self.post("/generate", {"inputs": "a b c",
                                           "parameters": {"max_new_tokens": 2}})
        self.assertEqual(json.loads(text), {"generated_text": "fox jumps "})
        for body, word in (({"text": "a", "input_ids": [1]}, "not both"),
                           ({"text": ""}, "'text'"),
                           ({"text": "a", "sampling_params": []}, "'sampling_params'")):
            st, text = self.post("/generate", body)
            self.assertEqual(st, 400, text)
            self.assertIn(word, text)
        # neither shape: TGI's route, which wants "inputs"
        st, text = self.post("/generate", b"[1]")
        self.assertEqual(st, 400, text)


class Profile(unittest.TestCase):
    """`headroom profile --endpoint-type` with AIPerf's names for these types."""

    def profile(self, *args):
        return subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "--print-spec",
                               *args], capture_output=True, text=True, timeout=30)

    def test_names(self):
        for aiperf, ours in (("nim_embeddings", "nim_embeddings"),
                             ("cohere_embeddings", "cohere_embeddings"),
                             ("vllm_generate", "vllm_generate"),
                             ("sglang_generate", "sglang_generate")):
            with self.subTest(aiperf=aiperf):
                r = self.profile("-m", "m", "--endpoint-type", aiperf)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["target"]["endpoint"], ours)
        r = self.profile("-m", "m", "--endpoint-type", "sglang_generate", "--streaming")
        self.assertTrue(json.loads(r.stdout)["target"]["stream"])
        r = self.profile("-m", "m", "--endpoint-type", "vllm_generate", "--streaming")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--streaming", r.stderr)

    def test_raw(self):
        r = self.profile("-m", "m", "--endpoint-type", "raw", "--endpoint", "/infer",
                         "--extra-inputs", '{"q": [1, 2]}')
        self.assertEqual(r.returncode, 0, r.stderr)
        t = json.loads(r.stdout)["target"]
        self.assertEqual((t["endpoint"], t["path"], t["raw"]), ("raw", "/infer",
                                                                 {"body": {"q": [1, 2]}}))
        self.assertNotIn("extra_body", t)
        r = self.profile("-m", "m", "--endpoint-type", "raw")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--extra-inputs", r.stderr)

    def test_help(self):
        r = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "--help"],
                           capture_output=True, text=True, timeout=30)
        for name in ("nim_embeddings", "cohere_embeddings", "vllm_generate",
                     "sglang_generate", "raw"):
            self.assertIn(name, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
