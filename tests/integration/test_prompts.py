#!/usr/bin/env python3
"""test_prompts.py - shared prompts and length mixtures of synthetic
workloads, end to end (headroomd, workers, headroom-mock counting prompt
words): workload.system_prompt opens every request (and every
conversation), workload.prefix_prompts puts one of N shared prefixes
before each prompt, workload.mix draws (input, output) lengths by weight.
The mock's usage count of each request's input is checked exactly. A
small recording server checks the output-length fields of the bodies
(target.max_tokens_field, workload.ignore_eos).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_prompts.py
"""
import collections
import http.server
import json
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402


class SharedPromptsTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service()

    def records(self, spec):
        rid = self.api.submit(spec)
        run = self.api.wait(rid)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records" % rid)
        return [json.loads(line) for line in text.splitlines()]

    def test_system_prefix_and_mix(self):
        spec = hrtest.spec(self.mock.addr, concurrency=4, requests=400)
        spec["workers"] = 2
        spec["workload"] = {"system_prompt": {"tokens": 5},
                            "prefix_prompts": {"count": 3, "tokens": 4},
                            "mix": [{"isl": 10, "osl": 3},
                                    {"isl": 20, "osl": 6, "weight": 3}],
                            "seed": 5}
        recs = self.records(spec)
        pairs = collections.Counter((r["isl"], r["osl"]) for r in recs)
        self.assertEqual(set(pairs), {(5 + 4 + 10, 3), (5 + 4 + 20, 6)}, pairs)
        share = pairs[(29, 6)] / len(recs)
        self.assertGreater(share, 0.65)  # 0.75 expected; 400 draws
        self.assertLess(share, 0.85)
        # the same seed draws the same lengths for the same requests
        again = {r["req_id"]: r["isl"] for r in self.records(spec)}
        self.assertEqual(again, {r["req_id"]: r["isl"] for r in recs})

    def test_system_prompt_opens_each_conversation(self):
        spec = hrtest.spec(self.mock.addr, concurrency=2, requests=12)
        spec["workload"] = {"isl": {"mean": 6}, "osl": {"mean": 4},
                            "system_prompt": {"tokens": 7},
                            "sessions": {"turns": {"mean": 3}}}
        recs = self.records(spec)
        for r in recs:
            if r["turn"] == 0:
                self.assertEqual(r["isl"], 7 + 6)
            else:  # the system prompt once, then each earlier turn and answer
                self.assertEqual(r["isl"], 7 + (6 + 4) * r["turn"] + 6)

    def test_completions_endpoint(self):
        spec = hrtest.spec(self.mock.addr, concurrency=2, requests=10)
        spec["target"]["endpoint"] = "completions"
        spec["workload"] = {"isl": {"mean": 8}, "osl": {"mean": 2},
                            "system_prompt": {"tokens": 3},
                            "prefix_prompts": {"count": 1, "tokens": 2}}
        for r in self.records(spec):
            self.assertEqual(r["isl"], 3 + 2 + 8)


class ReasoningTest(unittest.TestCase):
    def test_reasoning_tokens_and_time_to_first_output(self):
        # The first token (reasoning) is due when the mock takes the request,
        # the first output token five ITLs later, on the mock's absolute
        # schedule. A gap between the two as the worker read them shrinks
        # when the first read is late, so the bounds are from the request's
        # start, and the ITL is wide enough for a slow machine to read the
        # first token well before the first output token is due.
        itl_ms = 20 * hrtest.time_scale()
        mock, api = hrtest.service(self, "--quiet", "--reasoning-tokens", "5",
                                   "--itl-ms", "%g" % itl_ms)
        spec = hrtest.spec(mock.addr, concurrency=2, requests=6)
        spec["workload"]["osl"] = {"mean": 12}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = api.call("GET", "/runs/%d/records" % run["id"])
        for r in (json.loads(line) for line in text.splitlines()):
            self.assertEqual(r["reasoning_tokens"], 5)
            self.assertEqual(r["osl"], 12)  # reasoning included, as servers count
            # the first output token comes after the five reasoning ones
            self.assertGreaterEqual(r["time_to_first_output_token"], 5 * itl_ms - 0.1, r)
            self.assertGreaterEqual(r["time_to_first_output_token"],
                                    r["time_to_first_token"], r)
        # and time_to_first_token is the first (reasoning) token's: typically
        # before the first output token is even due
        m = run["summary"]["metrics"]
        self.assertLess(m["time_to_first_token"]["p50"], 5 * itl_ms, m["time_to_first_token"])
        self.assertGreater(m["time_to_first_output_token"]["p50"],
                           m["time_to_first_token"]["p50"])


class GoodputTest(unittest.TestCase):
    def test_goodput_counts_requests_meeting_every_objective(self):
        mock, api = hrtest.service(self, "--quiet", "--ttft-ms", "3", "--itl-ms", "1")
        spec = hrtest.spec(mock.addr, concurrency=4, requests=60)
        # the median request latency splits the run in two
        spec["goodput"] = {"time_to_first_token": 10000, "request_latency": 1e9}
        run = api.wait(api.submit(spec))
        s = run["summary"]
        self.assertEqual(s["counts"]["good"], s["counts"]["valid"])
        self.assertAlmostEqual(s["metrics"]["goodput"]["avg"],
                               s["metrics"]["request_throughput"]["avg"])
        limit = s["metrics"]["request_latency"]["p50"]
        spec["goodput"] = {"request_latency": limit,
                           "output_token_throughput_per_user": 1}
        run = api.wait(api.submit(spec))
        s = run["summary"]
        st, text, _ = api.call("GET", "/runs/%d/records" % run["id"])
        recs = [json.loads(line) for line in text.splitlines()]
        want = sum(1 for r in recs if r["valid"] and r["request_latency"] <= limit and
                   r["output_token_throughput_per_user"] >= 1)
        self.assertEqual(s["counts"]["good"], want)
        self.assertAlmostEqual(s["metrics"]["goodput"]["avg"], want / s["window_s"])
        self.assertIn("\ngoodput,requests/sec,", api.call(
            "GET", "/runs/%d/summary?format=csv" % run["id"])[1])
        # objectives name per-request metrics only
        for bad, field in (({"request_throughput": 5}, "goodput.request_throughput"),
                           ({"time_to_first_token": 0}, "goodput.time_to_first_token"),
                           ({}, "goodput")):
            spec["goodput"] = bad
            st, err, _ = api.call("POST", "/runs", spec)
            self.assertEqual(st, 400, err)
            self.assertEqual(err["error"]["field"], field)

    def test_goodput_on_itl_and_scheduled_latencies(self):
        """Objectives on inter_token_latency, scheduled_time_to_first_token
        and scheduled_request_latency, each alone and all three: the good
        count is the records' count by the same fields.

        One request at a time (max_concurrency 1) against arrivals every
        2.5 ms: each waits for those before it, so the schedule lag, and the
        scheduled TTFT and latency with it, grow request by request (while
        the plain TTFT stays at the mock's 2 ms), and their p50 splits the
        run. The mock sends 4 tokens a chunk, 8 ms apart: 5 tokens are 2
        chunks, ITL 8/4 = 2 ms; 8 tokens are 2 chunks, ITL 8/7 = 1.14 ms; a
        limit between the two ITLs fails the 5-token requests."""
        import statistics
        mock, api = hrtest.service(self, "--quiet", "--ttft-ms", "2", "--itl-ms", "8",
                                   "--tokens-per-chunk", "4")
        spec = hrtest.spec(mock.addr, mode="rate", rate=400, arrival="constant",
                           max_concurrency=1, requests=24)
        del spec["load"]["concurrency"]
        spec["workload"] = {"mix": [{"isl": 8, "osl": 5}, {"isl": 8, "osl": 8}],
                            "seed": 3}

        def run_records(spec):
            run = api.wait(api.submit(spec))
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            st, text, _ = api.call("GET", "/runs/%d/records" % run["id"])
            self.assertEqual(st, 200)
            recs = [json.loads(line) for line in text.splitlines()]
            self.assertEqual(len(recs), 24)
            for r in recs:  # the fields are what docs/metrics.md defines
                self.assertTrue(r["valid"], r)
                first = r["start_ns"] + r["chunk_offsets_ns"][0]
                self.assertEqual(r["scheduled_time_to_first_token"],
                                 (first - r["intended_ns"]) / 1e6)
                self.assertEqual(r["scheduled_request_latency"],
                                 (r["end_ns"] - r["intended_ns"]) / 1e6)
                self.assertEqual(r["inter_token_latency"],
                                 ((r["end_ns"] - r["start_ns"]) / 1e6 -
                                  (first - r["start_ns"]) / 1e6) / (r["osl"] - 1))
            return run, recs

        ref, recs = run_records(spec)
        self.assertNotIn("good", ref["summary"]["counts"])
        itl = {5: [], 8: []}
        for r in recs:
            itl[r["osl"]].append(r["inter_token_latency"])
        self.assertTrue(itl[5] and itl[8], itl)
        m = ref["summary"]["metrics"]
        limits = {"inter_token_latency": (statistics.median(itl[5]) +
                                          statistics.median(itl[8])) / 2,
                  "scheduled_time_to_first_token":
                      m["scheduled_time_to_first_token"]["p50"],
                  "scheduled_request_latency": m["scheduled_request_latency"]["p50"]}
        for names in (["inter_token_latency"], ["scheduled_time_to_first_token"],
                      ["scheduled_request_latency"], list(limits)):
            spec["goodput"] = {k: limits[k] for k in names}
            run, recs = run_records(spec)
            s = run["summary"]
            self.assertEqual(run["spec"]["goodput"], spec["goodput"])
            want = sum(1 for r in recs if r["valid"] and
                       all(r[k] is not None and r[k] <= limits[k] for k in names))
            self.assertEqual(s["counts"]["good"], want, names)
            self.assertGreater(want, 0, (names, limits))             # some pass...
            self.assertLess(want, s["counts"]["valid"], (names, limits))  # ...some fail
            self.assertAlmostEqual(s["metrics"]["goodput"]["avg"], want / s["window_s"])


class Recorder(http.server.BaseHTTPRequestHandler):
    """Keeps every request body; answers a minimal non-streamed chat reply."""
    bodies = []

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        Recorder.bodies.append(json.loads(self.rfile.read(n)))
        if self.path.endswith("/responses"):
            answer = {"object": "response", "status": "completed",
                      "output": [{"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "ok"}]}],
                      "usage": {"input_tokens": 1, "output_tokens": 1}}
        elif self.path.endswith("/messages"):
            answer = {"type": "message", "role": "assistant", "stop_reason": "end_turn",
                      "content": [{"type": "text", "text": "ok"}],
                      "usage": {"input_tokens": 1, "output_tokens": 1}}
        else:
            answer = {"choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": "ok"}}],
                      "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


class BodyFieldsTest(unittest.TestCase):
    """Request bodies as a recording server sees them."""

    def setUp(self):
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.tmp = hrtest.tempdir()
        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)
        self.addr = "127.0.0.1:%d" % self.srv.server_address[1]
        Recorder.bodies = []

    def tearDown(self):
        rc = self.daemon.stop()
        self.srv.shutdown()
        self.tmp.cleanup()
        self.assertEqual(rc, 0)

    def test_output_length_fields(self):
        api, addr = self.api, self.addr
        for extra, want in (({}, {"max_tokens": 7}),
                            ({"target": {"max_tokens_field": "max_completion_tokens"}},
                             {"max_completion_tokens": 7}),
                            ({"workload": {"ignore_eos": True}},
                             {"max_tokens": 7, "min_tokens": 7, "ignore_eos": True}),
                            # extra_body's length (by either name) stands alone
                            ({"workload": {"ignore_eos": True},
                              "target": {"extra_body": {"max_tokens": 4}}},
                             {"max_tokens": 4, "ignore_eos": True}),
                            ({"target": {"max_tokens_field": "max_completion_tokens",
                                         "extra_body": {"max_tokens": 4}}},
                             {"max_tokens": 4})):
            Recorder.bodies = []
            spec = hrtest.spec(addr, concurrency=1, requests=3)
            spec["target"]["stream"] = False
            spec["target"].update(extra.get("target", {}))
            spec["workload"].update({"osl": {"mean": 7}}, **extra.get("workload", {}))
            run = api.wait(api.submit(spec))
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            self.assertEqual(len(Recorder.bodies), 3)
            for b in Recorder.bodies:
                got = {k: b[k] for k in ("max_tokens", "max_completion_tokens",
                                         "min_tokens", "ignore_eos") if k in b}
                self.assertEqual(got, want)

    def test_dataset_entry_extra(self):
        """A dataset entry's `extra` is merged over the body: it wins over the
        run's members (and the output length), never over the prompt."""
        api = self.api
        lines = [{"text": "plain entry", "output_length": 5},
                 {"text": "warm entry", "output_length": 5,
                  "extra": {"temperature": 0.25, "model": "other", "max_tokens": 3,
                            "messages": "not the prompt", "nested": {"a": [1, 2]},
                            "stream": True, "stream_options": {"include_usage": False}}},
                 {"text": "empty extra", "extra": {}}]
        raw = "".join(json.dumps(x) + "\n" for x in lines).encode()
        st, ds, _ = api.call("POST", "/datasets?format=single_turn&name=x", raw=raw)
        self.assertEqual(st, 201, ds)
        Recorder.bodies = []
        spec = hrtest.spec(self.addr, concurrency=1, requests=3)
        spec["target"].update(stream=False, extra_body={"top_k": 4})
        spec["workload"] = {"kind": "dataset", "dataset": {"id": ds["id"]},
                            "osl": {"mean": 9}, "ignore_eos": True}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        bodies = {b["messages"][-1]["content"]: b for b in Recorder.bodies}
        self.assertEqual(bodies["plain entry"],
                         {"messages": [{"role": "user", "content": "plain entry"}],
                          "max_tokens": 5, "min_tokens": 5, "ignore_eos": True,
                          "model": "mock-model", "stream": False, "top_k": 4})
        self.assertEqual(bodies["warm entry"],
                         {"messages": [{"role": "user", "content": "warm entry"}],
                          "max_tokens": 3, "model": "other", "stream": False,
                          "ignore_eos": True, "top_k": 4, "temperature": 0.25,
                          "nested": {"a": [1, 2]}})  # no min_tokens: its length is its own
        self.assertEqual(bodies["empty extra"]["max_tokens"], 9)
        st, text, _ = api.call("GET", "/runs/%d/records" % run["id"])
        req = {json.loads(line)["req_id"]: json.loads(line)["requested_osl"]
               for line in text.splitlines()}
        self.assertEqual(req, {0: 5, 1: None, 2: 9})  # 3 came from the entry's extra

    def test_dataset_entry_extra_responses_and_messages(self):
        """The same merge for the Responses and Messages endpoints: the
        entry's members win, its system prompt and output length replace
        the run's, the prompt and streaming stay the run's."""
        api = self.api
        for ep, prompt_key, sys_key, max_key in (
                ("responses", "input", "instructions", "max_output_tokens"),
                ("messages", "messages", "system", "max_tokens")):
            lines = [{"text": "plain entry", "output_length": 5},
                     {"text": "warm entry", "output_length": 5,
                      "extra": {"temperature": 0.25, "model": "other", max_key: 3,
                                sys_key: "be brief", prompt_key: "not the prompt",
                                "stream": True}},
                     {"text": "empty extra", "extra": {}}]
            raw = "".join(json.dumps(x) + "\n" for x in lines).encode()
            st, ds, _ = api.call("POST", "/datasets?format=single_turn&name=" + ep, raw=raw)
            self.assertEqual(st, 201, ds)
            Recorder.bodies = []
            spec = hrtest.spec(self.addr, concurrency=1, requests=3)
            spec["target"].update(endpoint=ep, stream=False, extra_body={"top_k": 4})
            spec["workload"] = {"kind": "dataset", "dataset": {"id": ds["id"]},
                                "osl": {"mean": 9}}
            run = api.wait(api.submit(spec))
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            bodies = {b[prompt_key][-1]["content"]: b for b in Recorder.bodies}
            user = [{"role": "user", "content": "plain entry"}]
            self.assertEqual(bodies["plain entry"],
                             {prompt_key: user, max_key: 5, "model": "mock-model",
                              "stream": False, "top_k": 4}, ep)
            self.assertEqual(bodies["warm entry"],
                             {prompt_key: [{"role": "user", "content": "warm entry"}],
                              max_key: 3, "model": "other", "stream": False, "top_k": 4,
                              "temperature": 0.25, sys_key: "be brief"}, ep)
            self.assertEqual(bodies["empty extra"][max_key], 9, ep)
            st, text, _ = api.call("GET", "/runs/%d/records" % run["id"])
            req = {json.loads(line)["req_id"]: json.loads(line)["requested_osl"]
                   for line in text.splitlines()}
            self.assertEqual(req, {0: 5, 1: None, 2: 9}, ep)


class LengthDistributionTest(unittest.TestCase):
    """Synthetic lengths follow the normal distribution the spec asks for:
    workload.isl and .osl with a stddev, 600 requests against the mock that
    counts prompt words and answers max_tokens tokens, judged from the
    records (the mock's usage counts). The bounds are ones a correct
    implementation meets with overwhelming probability (docs/spec.md:
    lengths are normal, rounded, >= 1; the means are 5 standard deviations
    above 1, so the clamp does not matter)."""

    N = 600

    @classmethod
    def setUpClass(cls):
        # class cleanups run even when a start fails, so nothing is left behind
        cls.tmp = hrtest.tempdir()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.mock = hrtest.start_mock("--quiet")
        cls.addClassCleanup(cls.stop, cls.mock)
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.addClassCleanup(cls.stop, cls.daemon)
        cls.api = hrtest.Api(cls.daemon.addr)

    @staticmethod
    def stop(proc):
        rc = proc.stop()
        if rc != 0:
            raise AssertionError("%s exit status %s" % (proc.argv[0], rc))

    def lengths(self, isl, osl, requests):
        spec = hrtest.spec(self.mock.addr, concurrency=8, requests=requests)
        spec["target"]["stream"] = False
        spec["workers"] = 2
        spec["workload"] = {"isl": isl, "osl": osl, "seed": 21}
        run = self.api.wait(self.api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records" % run["id"])
        recs = [json.loads(line) for line in text.splitlines()]
        self.assertEqual(sorted(r["req_id"] for r in recs), list(range(requests)))
        for r in recs:
            self.assertEqual((r["isl_source"], r["osl_source"]),
                             ("server_usage", "server_usage"), r)
            self.assertEqual(r["osl"], r["requested_osl"], r)  # the mock answers max_tokens
        return [r["isl"] for r in recs], [r["osl"] for r in recs]

    def check_normal(self, xs, mean, sd):
        import math

        def normal_cdf(x):
            return 0.5 * (1 + math.erf(x / math.sqrt(2)))

        n = len(xs)
        m = sum(xs) / n
        s = math.sqrt(sum((x - m) ** 2 for x in xs) / n)  # population stddev
        # the sample mean within 4 standard errors (P(fail) ~ 6e-5)
        self.assertLess(abs(m - mean), 4 * sd / math.sqrt(n), (m, mean, sd))
        # the stddev within 15%: its standard error is about sd / sqrt(2n),
        # 2.9% here, so 15% is 5 of them
        self.assertLess(abs(s - sd), 0.15 * sd, (s, sd))
        # the shape: the share within one stddev of the mean is a normal
        # one's (68%, a bit more for rounded integers; a uniform spread of
        # the same stddev has 58%), within 5 binomial standard errors
        lo, hi = math.ceil(mean - sd), math.floor(mean + sd)
        p = normal_cdf((hi + 0.5 - mean) / sd) - normal_cdf((lo - 0.5 - mean) / sd)
        share = sum(1 for x in xs if lo <= x <= hi) / n
        self.assertLess(abs(share - p), 5 * math.sqrt(p * (1 - p) / n), (share, p))
        self.assertGreaterEqual(min(xs), 1)

    def test_normal_lengths(self):
        isl, osl = self.lengths({"mean": 300, "stddev": 60}, {"mean": 40, "stddev": 8}, self.N)
        self.check_normal(isl, 300, 60)
        self.check_normal(osl, 40, 8)

    def test_stddev_zero_is_exact(self):
        isl, osl = self.lengths({"mean": 300, "stddev": 0}, {"mean": 40, "stddev": 0}, 60)
        self.assertEqual(set(isl), {300})
        self.assertEqual(set(osl), {40})


if __name__ == "__main__":
    unittest.main()
