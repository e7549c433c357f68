#!/usr/bin/env python3
"""test_peers.py - a real run (headroomd, headroom-worker, headroom-mock
with injected failures) exported in the other tools' shapes through GET
/runs/{id}/export and `headroom export --format aiperf|vllm`: every field
of AIPerf's profile_export_aiperf.json / .csv / profile_export.jsonl and
of vLLM's bench serve result JSON is present with its type, and its value
equals the run's summary (GET /runs/{id}) and a recomputation from the
records export (docs/formats.md)."""

import csv
import io
import json
import math
import os
import subprocess
import sys
import unittest
from datetime import datetime

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402

CLI = os.path.join(hrtest.BIN, "headroom")
STATS = ["avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"]
PCTS = [1, 5, 10, 25, 50, 75, 90, 95, 99]
# vLLM's names for headroom's distributions (its TPOT is the inter-token
# latency, its ITL every gap between chunks)
VLLM = {"ttft": "time_to_first_token", "tpot": "inter_token_latency",
        "itl": "inter_chunk_latency", "e2el": "request_latency"}


class PeerExports(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "4", "--itl-ms", "1",
                                     "--fail-500", "0.05", "--fail-reset", "0.03"))
        spec = hrtest.spec(cls.mock.addr, concurrency=8, requests=300)
        spec["workers"] = 2
        spec["workload"] = {"isl": {"mean": 24, "stddev": 4}, "osl": {"mean": 12, "stddev": 3},
                            "seed": 3}
        try:
            cls.run_id = cls.api.submit(spec)
            cls.run_doc = cls.api.wait(cls.run_id, timeout=120)
            st, text, _ = cls.api.call("GET", "/runs/%d/records?format=jsonl" % cls.run_id)
            assert st == 200, (st, text)
            st, tele, _ = cls.api.call("GET", "/runs/%d/telemetry?format=json" % cls.run_id)
            assert st == 200, (st, tele)
        except BaseException:
            cls.tearDownClass()  # not called when setUpClass fails
            raise
        cls.records = [json.loads(x) for x in text.splitlines()]
        cls.t0 = tele["t0_wall_ns"]

    def export(self, fmt, status=200):
        st, body, hdrs = self.api.call("GET", "/runs/%d/export?format=%s" % (self.run_id, fmt))
        self.assertEqual(st, status, body)
        return body, hdrs

    @property
    def summary(self):
        return self.run_doc["summary"]

    def profiling(self):
        return [r for r in self.records if r["phase"] == "profiling"]

    def valid(self):
        return [r for r in self.profiling() if r["valid"]]

    def test_run_has_failures_and_successes(self):
        # the exports below are judged on both kinds of request
        self.assertEqual(self.run_doc["state"], "succeeded", self.run_doc.get("reason"))
        self.assertGreater(self.summary["counts"]["errors"], 0)
        self.assertGreater(self.summary["counts"]["valid"], 200)

    # --- AIPerf ----------------------------------------------------------------------

    def test_aiperf_json(self):
        doc, hdrs = self.export("aiperf-json")
        self.assertIn("profile_export_aiperf.json", hdrs["Content-Disposition"])
        self.assertEqual(doc["schema_version"], "1.0")
        self.assertEqual(doc["producer"], "headroom")
        self.assertIsInstance(doc["producer_version"], str)
        self.assertEqual(doc["benchmark_id"], "headroom-run-%d" % self.run_id)
        m = self.summary["metrics"]
        dists = [t for t, v in m.items() if v.get("count", 0) > 0]
        self.assertIn("time_to_first_token", dists)
        self.assertIn("inter_chunk_latency", dists)
        for tag in dists:
            self.assertEqual(list(doc[tag]), ["unit"] + STATS, tag)
            self.assertEqual(doc[tag]["unit"], m[tag]["unit"])
            for k in STATS:
                self.assertIsInstance(doc[tag][k], float, (tag, k))
                self.assertEqual(doc[tag][k], m[tag][k], (tag, k))
        # a distribution without values is left out, as AIPerf leaves None out
        for tag, v in m.items():
            if v.get("count") == 0:
                self.assertNotIn(tag, doc)
        valid = self.valid()
        scalars = {
            "request_throughput": ("requests/sec", m["request_throughput"]["avg"]),
            "output_token_throughput": ("tokens/sec", m["output_token_throughput"]["avg"]),
            "total_token_throughput": ("tokens/sec", m["total_token_throughput"]["avg"]),
            "request_count": ("requests", len(valid)),
            "error_request_count": ("requests", self.summary["counts"]["errors"]),
            "benchmark_duration": ("sec", self.summary["window_s"]),
            "total_isl": ("tokens", sum(r["isl"] for r in valid)),
            "total_osl": ("tokens", sum(r["osl"] for r in valid)),
        }
        for tag, (unit, value) in scalars.items():
            self.assertEqual(doc[tag], {"unit": unit, "avg": value}, tag)
        self.assertEqual(len(valid), self.summary["counts"]["valid"])
        self.assertNotIn("goodput", doc)  # the spec set no objectives
        cfg = doc["input_config"]
        self.assertEqual(cfg["endpoint"]["model_names"], ["mock-model"])
        self.assertEqual(cfg["endpoint"]["type"], "chat")
        self.assertIs(cfg["endpoint"]["streaming"], True)
        self.assertEqual(cfg["loadgen"], {"concurrency": 8, "request_count": 300})
        self.assertIs(doc["was_cancelled"], False)
        errs = {e["error_details"]["type"]: e["count"] for e in doc["error_summary"]}
        self.assertEqual(errs, self.summary["errors"])
        for e in doc["error_summary"]:
            self.assertEqual(set(e["error_details"]), {"code", "type", "message"})
        # the profiling window, wall clock
        start = datetime.fromisoformat(doc["start_time"]).timestamp()
        end = datetime.fromisoformat(doc["end_time"]).timestamp()
        first = min(r["start_ns"] for r in valid) + self.t0
        last = max(r["end_ns"] for r in valid) + self.t0
        self.assertAlmostEqual(start, first / 1e9, delta=2e-6)
        self.assertAlmostEqual(end, last / 1e9, delta=2e-6)

    def test_aiperf_csv(self):
        text, hdrs = self.export("aiperf-csv")
        self.assertTrue(hdrs["Content-Type"].startswith("text/csv"))
        req, sysm = text.split("\n\n")
        rows = list(csv.reader(io.StringIO(req)))
        self.assertEqual(rows[0], ["Metric", "avg", "min", "max", "sum", "p1", "p5", "p10", "p25",
                                   "p50", "p75", "p90", "p95", "p99", "std"])
        m = self.summary["metrics"]
        by_name = {r[0]: r[1:] for r in rows[1:]}
        ttft = by_name["Time to First Token (ms)"]
        for i, k in enumerate(rows[0][1:]):
            want = "" if k == "sum" else "%.2f" % m["time_to_first_token"][k]
            self.assertEqual(ttft[i], want, k)
        icl = by_name["Inter Chunk Latency (ms)"]
        self.assertEqual(icl[rows[0].index("p99") - 1], "%.2f" % m["inter_chunk_latency"]["p99"])
        # rows sorted by tag, as AIPerf sorts them
        self.assertEqual(len(rows) - 1, sum(1 for v in m.values() if v.get("count", 0) > 0))
        srows = list(csv.reader(io.StringIO(sysm)))
        self.assertEqual(srows[0], ["Metric", "Value"])
        vals = {r[0]: r[1] for r in srows[1:]}
        self.assertEqual(vals["Request Count"], str(self.summary["counts"]["valid"]))
        self.assertEqual(vals["Error Request Count"], str(self.summary["counts"]["errors"]))
        self.assertEqual(vals["Request Throughput (requests/sec)"],
                         "%.2f" % m["request_throughput"]["avg"])
        self.assertEqual(vals["Total Output Sequence Length (tokens)"],
                         str(sum(r["osl"] for r in self.valid())))
        self.assertEqual(vals["Benchmark Duration (sec)"], "%.2f" % self.summary["window_s"])

    def test_aiperf_jsonl(self):
        text, hdrs = self.export("aiperf-jsonl")
        self.assertIn("ndjson", hdrs["Content-Type"])
        lines = [json.loads(x) for x in text.splitlines()]
        prof = self.profiling()
        self.assertEqual(len(lines), len(prof))
        meta_keys = ["session_num", "x_request_id", "x_correlation_id", "conversation_id",
                     "turn_index", "request_start_ns", "request_ack_ns", "request_end_ns",
                     "worker_id", "record_processor_id", "benchmark_phase", "was_cancelled",
                     "cancellation_time_ns"]
        ttfts = []
        for line, r in zip(lines, prof):
            self.assertEqual(list(line), ["metadata", "metrics", "error"])
            md = line["metadata"]
            self.assertEqual(list(md), meta_keys)
            self.assertEqual(md["x_request_id"], "w%d-%d" % (r["worker"], r["seq"]))
            self.assertEqual(md["session_num"], r["req_id"])
            self.assertEqual(md["x_correlation_id"], "r%d" % r["req_id"])
            self.assertEqual(md["turn_index"], r["turn"])
            self.assertEqual(md["request_start_ns"], self.t0 + r["start_ns"])
            self.assertEqual(md["worker_id"], "worker_%d" % r["worker"])
            self.assertEqual(md["benchmark_phase"], "profiling")
            self.assertIs(md["was_cancelled"], False)
            if r["headers_ns"] is not None:
                self.assertEqual(md["request_ack_ns"], self.t0 + r["headers_ns"])
            if r["valid"]:
                self.assertIsNone(line["error"])
                self.assertEqual(md["request_end_ns"], self.t0 + r["end_ns"])
                for tag, mv in line["metrics"].items():
                    self.assertEqual(set(mv), {"value", "unit"})
                    if tag == "inter_chunk_latency":
                        offs = r["chunk_offsets_ns"]
                        self.assertEqual(mv["value"], [(b - a) / 1e6 for a, b in
                                                       zip(offs, offs[1:])])
                    else:
                        self.assertEqual(mv["value"], r[tag], tag)
                ttfts.append(line["metrics"]["time_to_first_token"]["value"])
            else:
                self.assertEqual(set(line["error"]), {"code", "type", "message"})
                self.assertEqual(line["error"]["type"], r["error"])
                self.assertEqual(line["error"]["code"], r["status"] or None)
                self.assertEqual(line["error"]["message"], r["error_message"])
                self.assertEqual(line["metrics"], {"error_isl": {"value": r["isl"],
                                                                 "unit": "tokens"}})
        # AIPerf's own reading of the file: its percentiles are the summary's
        ttft = self.summary["metrics"]["time_to_first_token"]
        for p in PCTS:
            self.assertEqual(hrtest.numpy_percentile(ttfts, p), ttft["p%d" % p])

    # --- vLLM ------------------------------------------------------------------------

    def check_vllm_head(self, doc):
        m = self.summary["metrics"]
        valid = self.valid()
        spec = self.run_doc["spec"]
        self.assertEqual(datetime.strptime(doc["date"], "%Y%m%d-%H%M%S").year,
                         int(self.run_doc["started_at"][:4]))
        self.assertEqual(doc["backend"], "openai-chat")
        self.assertEqual(doc["model_id"], spec["target"]["model"])
        self.assertEqual(doc["tokenizer_id"], spec["target"]["model"])
        self.assertEqual(doc["best_of"], 1)
        self.assertEqual(doc["num_prompts"], len(self.profiling()))
        self.assertEqual(doc["request_rate"], "inf")
        self.assertEqual(doc["burstiness"], 1.0)  # vLLM's default, written without a rate
        self.assertEqual(doc["max_concurrency"], 8)
        self.assertEqual(doc["duration"], self.summary["window_s"])
        self.assertEqual(doc["completed"], len(valid))
        self.assertEqual(doc["total_input_tokens"], sum(r["isl"] for r in valid))
        self.assertEqual(doc["total_output_tokens"], sum(r["osl"] for r in valid))
        self.assertEqual(doc["request_throughput"], m["request_throughput"]["avg"])
        self.assertIn("request_goodput:", doc)  # sic, vLLM's key
        self.assertIsNone(doc["request_goodput:"])
        self.assertEqual(doc["output_throughput"], m["output_token_throughput"]["avg"])
        self.assertEqual(doc["total_token_throughput"], m["total_token_throughput"]["avg"])
        for short, tag in VLLM.items():
            self.assertEqual(doc["mean_%s_ms" % short], m[tag]["avg"], short)
            self.assertEqual(doc["median_%s_ms" % short], m[tag]["p50"], short)
            self.assertEqual(doc["std_%s_ms" % short], m[tag]["std"], short)
            for p in PCTS:
                key = "p%d_%s_ms" % (p, short)
                self.assertIsInstance(doc[key], float, key)
                self.assertEqual(doc[key], m[tag]["p%d" % p], key)

    def test_vllm_summary_only(self):
        doc, hdrs = self.export("vllm")
        self.assertIn("vllm_result.json", hdrs["Content-Disposition"])
        self.check_vllm_head(doc)
        for k in ("ttfts", "itls", "input_lens", "output_lens", "errors"):
            self.assertNotIn(k, doc)

    def test_vllm_with_arrays(self):
        doc, _ = self.export("vllm&detail=true")
        self.check_vllm_head(doc)
        prof = self.profiling()
        for k in ("ttfts", "itls", "input_lens", "output_lens", "errors", "generated_texts"):
            self.assertEqual(len(doc[k]), len(prof), k)
        ok_ttft, gaps, tpots = [], [], []
        for i, r in enumerate(prof):
            self.assertEqual(doc["input_lens"][i], r["isl"])
            if r["valid"]:
                offs = r["chunk_offsets_ns"]
                self.assertEqual(doc["ttfts"][i], offs[0] / 1e9)
                self.assertEqual(doc["itls"][i], [(b - a) / 1e9 for a, b in zip(offs, offs[1:])])
                self.assertEqual(doc["output_lens"][i], r["osl"])
                self.assertEqual(doc["errors"][i], "")
                ok_ttft.append(doc["ttfts"][i])
                gaps += doc["itls"][i]
                if r["osl"] > 1:  # vLLM's TPOT, from its own fields
                    tpots.append((r["request_latency"] / 1e3 - doc["ttfts"][i]) / (r["osl"] - 1))
            else:
                self.assertEqual(doc["ttfts"][i], 0.0)
                self.assertEqual(doc["itls"][i], [])
                self.assertEqual(doc["output_lens"][i], 0)
                self.assertTrue(doc["errors"][i].startswith(r["error"]), doc["errors"][i])
        # vLLM recomputes its figures from the arrays as np.percentile(seconds)
        # * 1000: equal to the headline ones up to the rounding of that scaling
        for short, values in (("ttft", ok_ttft), ("itl", gaps), ("tpot", tpots)):
            for p in (50, 99):
                got = hrtest.numpy_percentile(values, p) * 1000
                want = doc["p%d_%s_ms" % (p, short)]
                self.assertTrue(math.isclose(got, want, rel_tol=1e-9), (short, p, got, want))

    def test_vllm_shape_matches_vllms_own_file(self):
        """A file written by vLLM's benchmark_serving.py itself (against
        headroom-mock, tests/integration/data/peers/README.md): each of its
        members is in headroom's export with the same JSON type, and its
        figures relate to its arrays as headroom's do."""
        with open(os.path.join(os.path.dirname(__file__), "data", "peers",
                               "vllm_mock_200.json")) as f:
            ref = json.load(f)
        doc, _ = self.export("vllm&detail=true")

        def kind(v):
            return "number" if isinstance(v, (int, float)) and not isinstance(v, bool) else \
                type(v).__name__
        for key, value in ref.items():
            self.assertIn(key, doc)
            self.assertEqual(kind(doc[key]), kind(value), key)
            if isinstance(value, int) and not isinstance(value, bool):
                self.assertIsInstance(doc[key], int, key)  # counts stay integers
        for key in ("input_lens", "output_lens", "ttfts", "itls", "errors", "generated_texts"):
            self.assertEqual({kind(x) for x in doc[key]}, {kind(x) for x in ref[key]}, key)
        # vLLM's own relation between its arrays and its figures, which
        # headroom's file keeps up to the ms scaling's rounding
        self.assertEqual(ref["p99_ttft_ms"],
                         hrtest.numpy_percentile([t for t, e in zip(ref["ttfts"], ref["errors"])
                                                  if not e], 99) * 1000)
        self.assertEqual(ref["completed"], sum(1 for e in ref["errors"] if not e))

    # --- refusals ----------------------------------------------------------------------

    def test_refusals(self):
        cases = [("", 400, "missing_field", "format"),
                 ("?format=aiperf", 400, "invalid_value", "format"),
                 ("?format=vllm&detail=yes", 400, "invalid_value", "detail"),
                 ("?format=aiperf-json&detail=true", 400, "invalid_value", "detail")]
        for query, status, code, field in cases:
            st, body, _ = self.api.call("GET", "/runs/%d/export%s" % (self.run_id, query))
            self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                             (status, code, field), query)
        st, body, _ = self.api.call("GET", "/runs/999999/export?format=vllm")
        self.assertEqual((st, body["error"]["code"]), (404, "not_found"))

    def test_a_run_without_summary_is_not_ready(self):
        slow = hrtest.spec(self.mock.addr, concurrency=1, requests=100000)
        rid = self.api.submit(slow)
        try:
            self.api.wait(rid, states=("running",) + hrtest.TERMINAL)
            for fmt in ("aiperf-json", "aiperf-jsonl", "vllm"):
                st, body, _ = self.api.call("GET", "/runs/%d/export?format=%s" % (rid, fmt))
                self.assertEqual((st, body["error"]["code"]), (409, "not_ready"), fmt)
        finally:
            self.api.call("POST", "/runs/%d/cancel" % rid)
            self.api.wait(rid)

    # --- the CLI -----------------------------------------------------------------------

    def cli(self, *args):
        env = dict(os.environ, HEADROOM_URL="http://" + self.daemon.addr)
        return subprocess.run([CLI, *args], capture_output=True, text=True, env=env,
                              timeout=120 * hrtest.time_scale())

    def test_cli_writes_the_files(self):
        out = os.path.join(self.tmp.name, "aiperf-out")
        r = self.cli("export", str(self.run_id), "--format", "aiperf", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["profile_export.jsonl",
                                                   "profile_export_aiperf.csv",
                                                   "profile_export_aiperf.json"])
        for name, fmt in (("profile_export_aiperf.json", "aiperf-json"),
                          ("profile_export_aiperf.csv", "aiperf-csv"),
                          ("profile_export.jsonl", "aiperf-jsonl")):
            with open(os.path.join(out, name)) as f:
                got = f.read()
            body, _ = self.export(fmt)
            self.assertEqual(json.loads(got) if fmt == "aiperf-json" else got, body, name)
        path = os.path.join(self.tmp.name, "vllm.json")
        r = self.cli("export", str(self.run_id), "--format", "vllm", "-o", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            doc = json.load(f)
        self.check_vllm_head(doc)
        self.assertEqual(len(doc["ttfts"]), len(self.profiling()))
        # usage errors: aiperf needs a directory; a peer format is not --records
        r = self.cli("export", str(self.run_id), "--format", "aiperf")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("-o DIR", r.stderr)
        r = self.cli("export", str(self.run_id), "--records", "--format", "vllm")
        self.assertEqual(r.returncode, 2, r.stderr)
        r = self.cli("export", "999999", "--format", "vllm")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("999999", r.stderr)


class PeerExportsOpenLoop(hrtest.ServiceCase):
    """A rate-mode run with gamma arrivals, a warm-up and goodput
    objectives: the fields a closed-loop run leaves out or fixes."""

    @classmethod
    def setUpClass(cls):
        # TTFT = 2 ms + 0.1 ms per prompt token (the mock's load model, one
        # step of 1 ms per token): prompts of 30 +- 15 tokens put TTFT on
        # both sides of the 7 ms objective whatever the host
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "2", "--prefill-ms-per-1k", "100",
                                     "--decode-ms", "1"))
        spec = hrtest.spec(cls.mock.addr)
        spec["workload"] = {"isl": {"mean": 30, "stddev": 15}, "osl": {"mean": 8, "stddev": 0},
                            "seed": 5}
        spec["load"] = {"mode": "rate", "rate": 100, "arrival": "gamma", "smoothness": 2.5,
                        "requests": 120}
        spec["warmup"] = {"requests": 10}
        spec["goodput"] = {"time_to_first_token": 7}
        try:
            cls.run_id = cls.api.submit(spec)
            cls.run_doc = cls.api.wait(cls.run_id, timeout=120)
            st, text, _ = cls.api.call("GET", "/runs/%d/records?format=jsonl" % cls.run_id)
            assert st == 200, (st, text)
        except BaseException:
            cls.tearDownClass()  # not called when setUpClass fails
            raise
        cls.records = [json.loads(x) for x in text.splitlines()]

    def export(self, fmt):
        st, body, _ = self.api.call("GET", "/runs/%d/export?format=%s" % (self.run_id, fmt))
        self.assertEqual(st, 200, body)
        return body

    def test_warmup_left_out_goodput_and_arrivals_written(self):
        summary = self.run_doc["summary"]
        self.assertEqual(self.run_doc["state"], "succeeded", self.run_doc.get("reason"))
        warm = [r for r in self.records if r["phase"] == "warmup"]
        prof = [r for r in self.records if r["phase"] == "profiling"]
        self.assertEqual(len(warm), 10)
        good = summary["counts"]["good"]
        # some requests meet the objective and some miss it, or the figure
        # below would not show which requests it counts
        self.assertGreater(good, 0)
        self.assertLess(good, summary["counts"]["valid"])

        doc = self.export("aiperf-json")
        self.assertEqual(doc["goodput"], {"unit": "requests/sec",
                                          "avg": summary["metrics"]["goodput"]["avg"]})
        self.assertEqual(doc["good_request_count"], {"unit": "requests", "avg": good})
        self.assertEqual(doc["request_count"]["avg"], len(prof))
        self.assertEqual(doc["input_config"]["loadgen"],
                         {"request_rate": 100, "request_count": 120,
                          "warmup_request_count": 10})
        lines = self.export("aiperf-jsonl").splitlines()
        self.assertEqual(len(lines), len(prof))
        self.assertEqual({json.loads(x)["metadata"]["benchmark_phase"] for x in lines},
                         {"profiling"})

        v = self.export("vllm&detail=true")
        self.assertEqual(v["request_rate"], 100)
        self.assertEqual(v["burstiness"], 2.5)
        self.assertIsNone(v["max_concurrency"])
        self.assertEqual(v["num_prompts"], len(prof))
        self.assertEqual(len(v["ttfts"]), len(prof))
        self.assertEqual(v["request_goodput:"], summary["metrics"]["goodput"]["avg"])
        # vLLM's own goodput rule over its arrays counts the same requests
        self.assertEqual(sum(1 for t, e in zip(v["ttfts"], v["errors"])
                             if not e and t * 1000 <= 7), good)
        csv_text = self.export("aiperf-csv")
        self.assertIn("\nGoodput (requests/sec),%.2f\n" % summary["metrics"]["goodput"]["avg"],
                      csv_text)
        self.assertIn("\nGood Request Count,%d\n" % good, csv_text)


if __name__ == "__main__":
    unittest.main()
