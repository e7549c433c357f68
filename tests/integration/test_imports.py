#!/usr/bin/env python3
"""test_imports.py - other tools' result files read into the run history
(POST /api/v1/imports, `headroom import`; docs/formats.md, "Imports"),
against a real headroomd and a real run on headroom-mock: the vLLM file
that vLLM's own benchmark_serving.py wrote (tests/integration/data/peers)
imports with its per-request arrays and its TTFT and ITL percentiles come
back as the file states them; a headroom run exported as vLLM and as
AIPerf files and imported back compares with the original figure for
figure; summary-only files compare as such; the imported run lists with
its labels, shows its origin and refuses cancel; malformed and hostile
files get a 4xx naming the field (and the line of a JSONL file). GuideLLM
reports, JSON and YAML (tests/integration/data/guidellm, and reports of
the current schema built here from GuideLLM's models), give one run per
benchmark, recomputed from the requests when all are listed, else its
figures; hostile YAML (alias bombs, deep nesting, tags) is refused with
its line.

    HEADROOM_BIN=build-check/bin /usr/bin/python3 tests/integration/test_imports.py"""

import hashlib
import json
import math
import os
import random
import socket
import subprocess
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402
import test_openapi  # noqa: E402  (api/openapi.yaml, to check every answer against)

CLI = os.path.join(hrtest.BIN, "headroom")
FIXTURE = os.path.join(os.path.dirname(__file__), "data", "peers", "vllm_mock_200.json")
# vLLM's names for headroom's distributions
VLLM = {"ttft": "time_to_first_token", "tpot": "inter_token_latency",
        "itl": "inter_chunk_latency", "e2el": "request_latency"}
STATS = {"mean": "avg", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p99": "p99"}
# what each format carries: the metrics whose figures must come back
VLLM_CARRIES = ["time_to_first_token", "inter_token_latency", "inter_chunk_latency",
                "request_latency", "time_to_second_token", "input_sequence_length",
                "output_sequence_length", "output_token_throughput_per_user",
                "request_throughput", "output_token_throughput", "total_token_throughput",
                "error_rate"]
AIPERF_CARRIES = VLLM_CARRIES + ["time_to_first_output_token"]


DOC = test_openapi.Doc(test_openapi.load_doc())


def ns_ms(seconds):
    """A time of vLLM's arrays as headroom stores it: whole nanoseconds, in ms."""
    return round(seconds * 1e9) / 1e6


class Imports(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "4", "--itl-ms", "1",
                                     "--fail-500", "0.05"))
        spec = hrtest.spec(cls.mock.addr, concurrency=8, requests=300)
        spec["workload"] = {"isl": {"mean": 24, "stddev": 4}, "osl": {"mean": 12, "stddev": 3},
                            "seed": 3}
        try:
            cls.run_id = cls.api.submit(spec)
            cls.run_doc = cls.api.wait(cls.run_id, timeout=120)
        except BaseException:
            cls.tearDownClass()
            raise
        with open(FIXTURE) as f:
            cls.fixture_text = f.read()
        cls.fixture = json.loads(cls.fixture_text)

    def imp(self, body, status=201, query=""):
        st, doc, _ = self.api.call("POST", "/imports" + query, body)
        self.assertEqual(st, status, doc)
        # every answer is as api/openapi.yaml documents it
        DOC.validate(DOC.schema("Run" if st == 201 else "Error"), doc, "POST /imports")
        return doc

    def export(self, fmt):
        st, body, _ = self.api.call("GET", "/runs/%d/export?format=%s" % (self.run_id, fmt))
        self.assertEqual(st, 200, body)
        return body

    def compare(self, base, head):
        st, c, _ = self.api.call("GET", "/compare?base=%d&head=%d" % (base, head))
        self.assertEqual(st, 200, c)
        return {(e["metric"], e["stat"]): e for e in c["metrics"]}, c

    # --- vLLM's own file ---------------------------------------------------------------

    def test_vllm_fixture_percentiles(self):
        run = self.imp({"file": self.fixture_text, "labels": {"origin": "vllm-fixture"}})
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        imp = run["import"]
        self.assertEqual(imp["producer"], "vllm")
        self.assertEqual(imp["format"], "vllm")
        self.assertEqual(imp["sha256"], hashlib.sha256(self.fixture_text.encode()).hexdigest())
        self.assertEqual(imp["bytes"], len(self.fixture_text.encode()))
        self.assertEqual(imp["records"], 200)
        self.assertFalse(imp["summary_only"])
        self.assertEqual(imp["start_times"], "laid_out")
        # what has no counterpart is kept with the run
        for k in ("tokenizer_id", "best_of", "generated_texts"):
            self.assertEqual(imp["unmapped"][k], self.fixture[k], k)
        self.assertEqual(imp["stated"]["p99_ttft_ms"], self.fixture["p99_ttft_ms"])
        m = run["summary"]["metrics"]
        f = self.fixture
        ok = [i for i, e in enumerate(f["errors"]) if not e]
        self.assertEqual(run["summary"]["counts"]["valid"], f["completed"])
        self.assertEqual(m["time_to_first_token"]["count"], len(ok))
        # the per-request arrays recompute the percentiles exactly, as numpy
        # does over the same values (headroom's records hold whole ns)
        ttft = [ns_ms(f["ttfts"][i]) for i in ok]
        gaps = [ns_ms(g) for i in ok for g in f["itls"][i]]
        for pct in (50, 90, 99):
            self.assertEqual(m["time_to_first_token"]["p%d" % pct],
                             hrtest.numpy_percentile(ttft, pct))
            self.assertEqual(m["inter_chunk_latency"]["p%d" % pct],
                             hrtest.numpy_percentile(gaps, pct))
        # and equal the file's own figures but for that rounding: half a
        # nanosecond per value at most
        for x in ("ttft", "itl"):
            for s, stat in STATS.items():
                got, want = m[VLLM[x]][stat], f["%s_%s_ms" % (s, x)]
                self.assertAlmostEqual(got, want, delta=5e-7, msg="%s %s" % (x, s))
        # vLLM's E2EL (and its TPOT, from it) is its own latency, which the
        # arrays do not hold: it reads the clock for TTFT a moment after the
        # reading its first ITL starts from, so TTFT + the ITLs (headroom's
        # request latency of the file) differ from it by that moment, well
        # under a microsecond here (docs/formats.md, "Imports")
        for x in ("e2el", "tpot"):
            for s in ("mean", "median", "p99"):
                got, want = m[VLLM[x]][STATS[s]], f["%s_%s_ms" % (s, x)]
                self.assertAlmostEqual(got, want, delta=1e-3, msg="%s %s" % (x, s))
        # the file's run-level figures are the run's
        self.assertEqual(m["request_throughput"]["avg"], f["request_throughput"])
        self.assertEqual(m["output_token_throughput"]["avg"], f["output_throughput"])
        self.assertEqual(run["summary"]["window_s"], f["duration"])
        # the stated load becomes the spec
        self.assertEqual(run["spec"]["target"]["model"], "mock")
        self.assertEqual(run["spec"]["load"]["concurrency"], 8)
        self.assertEqual(run["spec"]["load"]["requests"], 200)

        # it lists with its labels, shows with its origin, and is read-only
        st, lst, _ = self.api.call("GET", "/runs?label.origin=vllm-fixture")
        self.assertEqual(st, 200, lst)
        self.assertEqual([r["id"] for r in lst["runs"]], [run["id"]])
        self.assertEqual(lst["runs"][0]["labels"], {"origin": "vllm-fixture"})
        st, shown, _ = self.api.call("GET", "/runs/%d" % run["id"])
        self.assertEqual(shown["import"]["sha256"], imp["sha256"])
        st, body, _ = self.api.call("POST", "/runs/%d/cancel" % run["id"])
        self.assertEqual(st, 409, body)
        # its records are there as any run's
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        self.assertEqual(len(text.splitlines()), 200)
        # the original file is kept by its content
        path = os.path.join(self.tmp.name, "imports", imp["sha256"])
        with open(path) as fh:
            self.assertEqual(fh.read(), self.fixture_text)

    def test_vllm_summary_only(self):
        doc = {k: v for k, v in self.fixture.items()
               if k not in ("ttfts", "itls", "input_lens", "output_lens", "errors")}
        run = self.imp({"file": json.dumps(doc)})
        self.assertTrue(run["import"]["summary_only"])
        self.assertEqual(run["import"]["records"], 0)
        m = run["summary"]["metrics"]
        for x, tag in VLLM.items():
            for s, stat in STATS.items():
                self.assertEqual(m[tag][stat], self.fixture["%s_%s_ms" % (s, x)])
        self.assertEqual(run["summary"]["counts"]["valid"], self.fixture["completed"])
        self.assertTrue(run["summary"]["summary_only"])
        self.assertEqual(m["request_throughput"]["avg"], self.fixture["request_throughput"])
        self.assertEqual(m["total_token_throughput"]["avg"],
                         self.fixture["total_token_throughput"])
        # no records to write another tool's file from: its own file is the export
        st, body, _ = self.api.call("GET", "/runs/%d/export?format=vllm" % run["id"])
        self.assertEqual((st, body["error"]["code"]), (409, "conflict"), body)
        # compared with a run that has records: the figures, and it says why
        figs, c = self.compare(self.run_id, run["id"])
        self.assertEqual(c["level"], "runs")
        self.assertIn("summary_only", [w["code"] for w in c["warnings"]])
        self.assertEqual(figs[("time_to_first_token", "p99")]["head"],
                         self.fixture["p99_ttft_ms"])

    # --- round trips -------------------------------------------------------------------

    def check_round_trip(self, imported, carries):
        """The imported run against the original: every figure the format
        carries comes back (to the nanosecond), and its verdict is the one
        the original gets against itself - unchanged, or inconclusive where
        even identical data cannot show a change within the noise band."""
        figs, c = self.compare(self.run_id, imported)
        self_figs, _ = self.compare(self.run_id, self.run_id)
        self.assertEqual(c["level"], "requests")
        self.assertEqual(c["counts"]["better"] + c["counts"]["worse"] + c["counts"]["changed"],
                         0, c["counts"])
        seen = 0
        for (metric, stat), e in self_figs.items():
            if metric not in carries:
                continue
            got = figs.get((metric, stat))
            self.assertIsNotNone(got, (metric, stat))
            self.assertAlmostEqual(got["head"], e["base"],
                                   delta=1e-9 * max(1.0, abs(e["base"])) + 1e-6,
                                   msg="%s %s" % (metric, stat))
            self.assertEqual(got["verdict"], e["verdict"], (metric, stat))
            seen += 1
        self.assertGreater(seen, 40)
        unchanged = [k for k, e in self_figs.items()
                     if k[0] in carries and e["verdict"] == "unchanged"]
        self.assertGreater(len(unchanged), 0)

    def test_vllm_round_trip(self):
        doc = self.export("vllm&detail=true")
        run = self.imp({"file": json.dumps(doc), "labels": {"trip": "vllm"}})
        self.assertEqual(run["import"]["records"], self.run_doc["summary"]["counts"]["requests"])
        self.check_round_trip(run["id"], VLLM_CARRIES)

    def test_aiperf_round_trip(self):
        doc = self.export("aiperf-json")
        jsonl = self.export("aiperf-jsonl")
        run = self.imp({"file": json.dumps(doc), "jsonl": jsonl, "name": "trip"})
        imp = run["import"]
        self.assertEqual((imp["producer"], imp["format"]), ("headroom", "aiperf-json"))
        self.assertEqual(imp["start_times"], "file")
        self.assertEqual(imp["jsonl_sha256"], hashlib.sha256(jsonl.encode()).hexdigest())
        self.assertEqual(run["name"], "trip")
        self.check_round_trip(run["id"], AIPERF_CARRIES)

    def test_aiperf_summary_only(self):
        doc = self.export("aiperf-json")
        run = self.imp({"file": json.dumps(doc)})
        self.assertTrue(run["import"]["summary_only"])
        m, base = run["summary"]["metrics"], self.run_doc["summary"]["metrics"]
        for tag in ("time_to_first_token", "request_latency", "inter_chunk_latency"):
            for stat in ("avg", "p50", "p99", "min", "max", "std"):
                self.assertEqual(m[tag][stat], base[tag][stat], (tag, stat))
        self.assertEqual(run["summary"]["counts"]["errors"],
                         self.run_doc["summary"]["counts"]["errors"])
        figs, c = self.compare(self.run_id, run["id"])
        self.assertIn("summary_only", [w["code"] for w in c["warnings"]])
        self.assertEqual(figs[("request_latency", "p99")]["head"], base["request_latency"]["p99"])

    def test_aiperf_documented_records(self):
        # the records of AIPerf's own documentation (data/peers/README.md):
        # worker names, a member given twice (the last counts, as Python
        # reads it), a cancelled request with status 499
        with open(os.path.join(os.path.dirname(FIXTURE), "aiperf_doc_records.jsonl")) as fh:
            jsonl = fh.read()
        run = self.imp({"file": json.dumps({"schema_version": "1.0", "aiperf_version": "0.3.0"}),
                        "jsonl": jsonl})
        self.assertEqual((run["import"]["producer"], run["import"]["version"]),
                         ("aiperf", "0.3.0"))
        self.assertEqual(run["import"]["records"], 2)
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        recs = [json.loads(x) for x in text.splitlines()]
        ok, bad = recs
        self.assertEqual((ok["worker"], bad["worker"]), (0, 1))
        self.assertTrue(ok["valid"])
        self.assertEqual(ok["time_to_first_token"], 4.898437)
        self.assertEqual(ok["isl"], 550)
        self.assertEqual(ok["osl"], 9)
        self.assertEqual(ok["n_chunks"], 9)
        self.assertEqual(ok["request_latency"], (1759813207838764604 - 1759813207532900363) / 1e6)
        self.assertFalse(bad["valid"])
        self.assertEqual(bad["error"], "cancelled")
        self.assertEqual(bad["status"], 499)
        self.assertEqual(bad["isl"], 550)
        self.assertEqual(run["summary"]["counts"], {"requests": 2, "valid": 1, "errors": 1,
                                                    "warmup": 0})

    # --- the CLI -----------------------------------------------------------------------

    def test_cli_import(self):
        out = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "import", FIXTURE,
                              "--label", "via=cli", "--label", "gpu=none", "--json"],
                             capture_output=True, text=True, timeout=60 * hrtest.time_scale())
        self.assertEqual(out.returncode, 0, out.stderr)
        run = json.loads(out.stdout)
        self.assertEqual(run["labels"], {"via": "cli", "gpu": "none"})
        self.assertEqual(run["import"]["records"], 200)
        with hrtest.tempdir() as d:
            bad = os.path.join(d, "bad.jsonl")
            with open(bad, "w") as fh:
                fh.write('{"metadata": {"request_start_ns": 1, "request_end_ns": 2}}\n'
                         '{"metadata": {"request_start_ns": "x"}}\n')
            good = os.path.join(d, "p.json")
            with open(good, "w") as fh:
                json.dump(self.export("aiperf-json"), fh)
            out = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "import", good,
                                  "--jsonl", bad], capture_output=True, text=True,
                                 timeout=60 * hrtest.time_scale())
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("line 2", out.stderr)
        self.assertIn("jsonl.metadata.request_start_ns", out.stderr)

    # --- refusals ----------------------------------------------------------------------

    def refused(self, body, field, line=None, status=400, code="invalid_import", query=""):
        doc = self.imp(body, status=status, query=query)
        self.assertEqual(doc["error"]["code"], code, doc)
        self.assertEqual(doc["error"]["field"], field, doc)
        if code == "invalid_import":
            self.assertEqual(doc["error"]["line"], line, doc)
        return doc

    def test_bad_files(self):
        f = self.fixture
        def with_(**kv):
            d = dict(f)
            d.update(kv)
            return {"file": json.dumps(d)}
        n = len(f["ttfts"])
        self.refused({"file": self.fixture_text[:1000]}, "file")  # truncated
        self.refused({"file": "[1, 2]"}, "file")
        self.refused({"file": "{\"hello\": 1}"}, "file")  # neither format
        self.refused({"file": "[" * 100000 + "]" * 100000}, "file")  # deep nesting
        self.refused(with_(ttfts="fast"), "file.ttfts")
        self.refused(with_(ttfts=f["ttfts"][:3] + ["x"] + f["ttfts"][4:]), "file.ttfts[3]")
        self.refused(with_(ttfts=f["ttfts"][:-1]), "file.itls")
        self.refused(with_(itls=f["itls"][:7] + [[0.001, -1]] + f["itls"][8:]),
                     "file.itls[7][1]")
        self.refused(with_(output_lens=[1.5] * n), "file.output_lens[0]")
        self.refused(with_(errors=[3] * n), "file.errors[0]")
        self.refused(with_(mean_ttft_ms="slow"), "file.mean_ttft_ms")
        self.refused(with_(max_concurrency=-1), "file.max_concurrency")
        self.refused(with_(request_rate=[]), "file.request_rate")
        huge = 1000001
        self.refused({"file": '{"backend": "openai", "num_prompts": 1, "ttfts": [' +
                      ",".join(["0"] * huge) + "]}"}, "file.ttfts")
        # AIPerf, with its per-request file: the line and the field
        doc = json.dumps(self.export("aiperf-json"))
        good = '{"metadata": {"request_start_ns": 5, "request_end_ns": 9}, "error": null}'
        for jsonl, field, line in (
                (good + "\n{\"metadata\": 7}\n", "jsonl.metadata", 2),
                (good + "\n" + good + "\n{\"metadata\": {}}\n",
                 "jsonl.metadata.request_start_ns", 3),
                (good + "\n\n{broken\n", "jsonl", 3),
                (good + '\n{"metadata": {"request_start_ns": 1}, "metrics": {'
                 '"time_to_first_token": {"value": "x", "unit": "ms"}}}\n',
                 "jsonl.metrics.time_to_first_token", 2),
                ('{"metadata": {"request_start_ns": 10, "request_end_ns": 20}, "metrics": '
                 '{"time_to_first_token": {"value": 1, "unit": "ms"}, "inter_chunk_latency": '
                 '{"value": [1, "a"], "unit": "ms"}}}\n',
                 "jsonl.metrics.inter_chunk_latency.value", 1),
                (good + "\n" + "[" * 50 + "]" * 50 + "\n", "jsonl", 2),
                ("\n\n", "jsonl", None)):
            self.refused({"file": doc, "jsonl": jsonl}, field, line)
        self.refused({"file": self.fixture_text, "jsonl": good}, "jsonl")  # vLLM has none
        # AIPerf figures of the wrong type
        bad = self.export("aiperf-json")
        bad["time_to_first_token"]["p99"] = "high"
        self.refused({"file": json.dumps(bad)}, "file.time_to_first_token")
        bad = self.export("aiperf-json")
        bad["request_count"] = 12
        self.refused({"file": json.dumps(bad)}, "file.request_count")
        # the request itself
        self.refused({"file": self.fixture_text, "format": "csv"}, "format",
                     code="invalid_value")
        self.refused({"file": self.fixture_text, "extra": 1}, "extra", code="unknown_field")
        self.refused({"file": self.fixture_text, "labels": []}, "labels", code="wrong_type")
        self.refused({"file": self.fixture_text, "labels": {"k": 5}}, "labels.k",
                     code="wrong_type")
        self.refused({"file": self.fixture_text}, "label", code="invalid_value",
                     query="?label=novalue")
        # nothing of the refused files became a run
        st, lst, _ = self.api.call("GET", "/runs?limit=1000")
        for r in lst["runs"]:
            self.assertNotEqual(r["state"], "running", r)

    def test_file_as_the_body(self):
        # the file itself as the body; labels and name in the query
        st, run, _ = self.api.call("POST", "/imports?label=k=v&label=x=y&name=raw&format=vllm",
                                   raw=self.fixture_text.encode())
        self.assertEqual(st, 201, run)
        self.assertEqual(run["labels"], {"k": "v", "x": "y"})
        self.assertEqual(run["name"], "raw")
        self.assertEqual(run["import"]["records"], 200)

    def test_body_too_large(self):
        # refused from its Content-Length, before a byte of it is read
        host, port = self.daemon.addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST /api/v1/imports HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 70000000\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        self.assertTrue(data.startswith(b"HTTP/1.1 413"), data[:200])


# --- GuideLLM reports ------------------------------------------------------------------

GUIDE_DIR = os.path.join(os.path.dirname(__file__), "data", "guidellm")
GUIDE_PCTS = {"p001": 0.001, "p01": 0.01, "p05": 0.05, "p10": 0.1, "p25": 0.25, "p50": 0.5,
              "p75": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
# GuideLLM's distributions and headroom's tags (the scale makes ms)
GUIDE_TAGS = {"time_to_first_token_ms": ("time_to_first_token", 1),
              "inter_token_latency_ms": ("inter_token_latency", 1),
              "request_latency": ("request_latency", 1000),
              "prompt_token_count": ("input_sequence_length", 1),
              "output_token_count": ("output_sequence_length", 1)}
GUIDE_STATS = {"mean": "avg", "min": "min", "max": "max", "std_dev": "std"}


def guide_dist(values):
    """A DistributionSummary as GuideLLM computes one from equally weighted
    values (src/guidellm/schemas/statistics.py: from_values, from_pdf)."""
    if not values:
        z = {"mean": 0.0, "median": 0.0, "mode": 0.0, "variance": 0.0, "std_dev": 0.0,
             "min": 0.0, "max": 0.0, "count": 0, "total_sum": 0.0,
             "percentiles": {k: 0.0 for k in GUIDE_PCTS}, "pdf": None}
        return z
    v = sorted(float(x) for x in values)
    n = len(v)
    cdf = [(i + 1) / n for i in range(n)]
    pct = {}
    for k, p in GUIDE_PCTS.items():
        i = next(j for j, c in enumerate(cdf) if c >= p - 1e-12)  # searchsorted, left
        pct[k] = v[i]
    mean = sum(v) / n
    var = sum((x - mean) ** 2 for x in v) / n
    return {"mean": mean, "median": pct["p50"], "mode": v[0], "variance": var,
            "std_dev": math.sqrt(var), "min": v[0], "max": v[-1], "count": n,
            "total_sum": mean * n, "percentiles": pct, "pdf": None}


def guide_status(ok, err=(), inc=()):
    return {"successful": guide_dist(ok), "errored": guide_dist(err),
            "incomplete": guide_dist(inc), "total": guide_dist(list(ok) + list(err) + list(inc))}


def guide_request(rid, start, ttft, itl, osl, isl, error=None, status="completed", end_gap=0.0004):
    """One GenerativeRequestStats as GuideLLM's model_dump(mode="json")
    writes it (src/guidellm/schemas/request_stats.py, info.py, request.py):
    its fields, RequestInfo with RequestTimings, and the computed fields."""
    first = start + ttft if ttft is not None else None
    last = first + itl * (osl - 1) if first is not None else None
    end = (last if last is not None else start + 0.01) + end_gap
    iters = osl if first is not None else 0
    usage_in = {"text_tokens": isl, "cached_tokens": None, "text_words": None,
                "text_characters": None, "total_tokens": isl}
    usage_out = {"text_tokens": osl, "cached_tokens": None, "text_words": None,
                 "text_characters": None, "total_tokens": osl}
    lat = end - start
    return {
        "type_": "generative_request_stats", "request_id": rid, "response_id": None,
        "request_args": None, "output": None, "reasoning_output": None, "tool_calls": None,
        "info": {"request_id": rid, "conversation_id": None, "history_len": 0, "turn_index": 0,
                 "node_id": None, "agent_id": None, "parent_node_ids": [], "status": status,
                 "scheduler_node_id": 0, "scheduler_process_id": 0,
                 "scheduler_start_time": start - 1.0,
                 "timings": {"targeted_start": start - 0.0002, "queued": start - 0.5,
                             "dequeued": start - 0.0003, "scheduled_at": start - 0.0003,
                             "resolve_start": start - 0.0001, "request_start": start,
                             "first_request_iteration": first, "first_token_iteration": first,
                             "first_output_token_iteration": first,
                             "last_token_iteration": last, "last_request_iteration": last,
                             "request_iterations": iters + (1 if iters else 0),
                             "token_iterations": iters, "request_end": end,
                             "resolve_end": end + 0.0001, "finalized": end + 0.0002},
                 "settings": {"relative_timestamp": None, "requeue_delay": None},
                 "error": error, "traceback": None},
        "input_metrics": usage_in, "output_metrics": usage_out,
        "request_start_time": start, "request_end_time": end,
        "request_latency": lat, "prompt_tokens": isl, "cached_tokens": None,
        "output_tokens": osl, "total_tokens": isl + osl,
        "time_to_first_token_ms": 1000 * (first - start) if first is not None else None,
        "time_per_output_token_ms": 1000 * (last - start) / osl if first is not None else None,
        "inter_token_latency_ms": (1000 * (last - first) / (osl - 1)
                                   if first is not None and osl > 1 else None),
        "tokens_per_second": (isl + osl) / lat, "output_tokens_per_second": osl / lat,
        "time_to_first_output_token_ms": 1000 * (first - start) if first is not None else None,
        "iter_tokens_per_iteration": 1.0 if iters > 1 else None,
        "output_tokens_per_iteration": 1.0 if iters else None,
    }


def guide_benchmark(index, strategy, n_ok, n_err=0, n_inc=0, seed=1, t0=1764590000.0):
    """One GenerativeBenchmark (src/guidellm/benchmark/schemas/benchmark.py,
    metrics.py) with every request listed (no sampling)."""
    rnd = random.Random(seed)
    ok, err, inc = [], [], []
    t = t0
    for i in range(n_ok + n_err + n_inc):
        t += rnd.uniform(0.002, 0.02)
        isl = rnd.randint(64, 256)
        if i < n_ok:
            ok.append(guide_request("ok-%d-%d" % (index, i), t, rnd.uniform(0.02, 0.05),
                                    rnd.uniform(0.003, 0.006), rnd.randint(2, 40), isl))
        elif i < n_ok + n_err:
            err.append(guide_request("err-%d-%d" % (index, i), t, None, 0, 0, isl,
                                     error="HTTPStatusError: 500 Internal Server Error",
                                     status="errored"))
        else:
            inc.append(guide_request("inc-%d-%d" % (index, i), t, 0.03, 0.004, 3, isl,
                                     status="cancelled"))
    start = t0
    end = max(r["request_end_time"] for r in ok + err + inc)
    dur = end - start
    osl_sum = sum(r["output_tokens"] for r in ok)
    tok_sum = sum(r["output_tokens"] + r["prompt_tokens"] for r in ok)

    def vals(key, rs=ok):
        return [r[key] for r in rs if r[key] is not None]

    metrics = {
        "request_totals": {"successful": n_ok, "incomplete": n_inc, "errored": n_err,
                           "total": n_ok + n_err + n_inc},
        "requests_per_second": guide_status([n_ok / dur] * 3),
        "request_concurrency": guide_status([1.0, 2.0, 2.0, 3.0]),
        "request_latency": guide_status(vals("request_latency"), vals("request_latency", err)),
        "request_streaming_iterations_count": guide_status(
            [r["info"]["timings"]["request_iterations"] for r in ok]),
        "prompt_token_count": guide_status(vals("prompt_tokens")),
        "output_token_count": guide_status(vals("output_tokens")),
        "total_token_count": guide_status(vals("total_tokens")),
        "time_to_first_token_ms": guide_status(vals("time_to_first_token_ms")),
        "time_to_first_output_token_ms": guide_status(vals("time_to_first_output_token_ms")),
        "time_per_output_token_ms": guide_status(vals("time_per_output_token_ms")),
        "inter_token_latency_ms": guide_status(vals("inter_token_latency_ms")),
        "prompt_tokens_per_second": guide_status([tok_sum / dur - osl_sum / dur]),
        "output_tokens_per_second": guide_status([osl_sum / dur]),
        "tokens_per_second": guide_status([tok_sum / dur]),
        "output_tokens_per_iteration": guide_status(vals("output_tokens_per_iteration")),
        "iter_tokens_per_iteration": guide_status(vals("iter_tokens_per_iteration")),
        "text": {"tokens": None, "words": None, "characters": None},
    }
    return {
        "type_": "generative_benchmark",
        "config": {"id_": "bench-%d" % index, "run_id": "run-1", "run_index": index,
                   "strategy": strategy, "constraints": {"max_requests": {"max_num": 1000}},
                   "sample_size": None,
                   "warmup": {"percent": None, "value": None, "mode": "prefer_duration"},
                   "cooldown": {"percent": None, "value": None, "mode": "prefer_duration"},
                   "prefer_response_metrics": True,
                   "profile": {"type_": "sweep", "sweep_size": 3},
                   "requests": {"data": ["prompt_tokens=128,output_tokens=32"]},
                   "backend": {"type_": "openai_http", "target": "http://127.0.0.1:8000",
                               "model": "llama-guide"},
                   "environment": {"type_": "non_distributed"}},
        "scheduler_state": {"node_id": 0, "num_processes": 1, "start_time": start - 1.0,
                            "end_time": end + 0.1, "end_queuing_time": end,
                            "created_requests": n_ok + n_err + n_inc},
        "scheduler_metrics": {"start_time": start - 1.0, "request_start_time": start,
                              "measure_start_time": start, "measure_end_time": end,
                              "request_end_time": end, "end_time": end + 0.1,
                              "requests_made": metrics["request_totals"],
                              "queued_time_avg": 0.5, "resolve_start_delay_avg": 0.0001,
                              "resolve_targeted_start_delay_avg": 0.0002,
                              "request_start_delay_avg": 0.0001,
                              "request_targeted_start_delay_avg": 0.0002,
                              "request_time_avg": 0.1, "resolve_end_delay_avg": 0.0001,
                              "resolve_time_avg": 0.1, "finalized_delay_avg": 0.0001,
                              "processed_delay_avg": 0.0001},
        "metrics": metrics,
        "requests": {"successful": ok, "incomplete": inc, "errored": err, "total": None},
        "start_time": start, "end_time": end, "duration": dur, "warmup_duration": 0.0,
        "cooldown_duration": 0.0,
    }


def guide_report():
    """A GuideLLM report of the current schema (GenerativeBenchmarksReport,
    src/guidellm/benchmark/schemas/report.py, metadata version 2): a
    synchronous, a concurrent and a constant-rate benchmark."""
    return {
        "metadata": {"version": 2, "guidellm_version": "0.7.1", "python_version": "3.12.3",
                     "platform": "Linux-6.1.0-x86_64-with-glibc2.36"},
        "config": {"metadata": {"labels": {}}, "spec": {"backend": {
            "kind": "openai_http", "target": "http://127.0.0.1:8000", "model": "llama-guide"}}},
        "benchmarks": [
            guide_benchmark(0, {"type_": "synchronous"}, 30, seed=1),
            guide_benchmark(1, {"type_": "concurrent", "streams": 4, "rampup_duration": 0.0},
                            40, n_err=3, n_inc=2, seed=2),
            guide_benchmark(2, {"type_": "constant", "rate": 12.5, "max_concurrency": None},
                            25, n_err=1, seed=3),
        ],
    }


class GuidellmImports(hrtest.ServiceCase):
    """GuideLLM's reports (docs/formats.md, "GuideLLM"): one imported run per
    benchmark, from JSON and from YAML, per-request records when the report
    lists every request, its own figures otherwise."""

    @classmethod
    def setUpClass(cls):
        cls.start_service()
        cls.report = guide_report()
        cls.json_text = json.dumps(cls.report)
        cls.yaml_text = yaml.dump(cls.report)  # as GuideLLM's save_file writes it

    def imp(self, body, status=201, query=""):
        st, doc, _ = self.api.call("POST", "/imports" + query, body)
        self.assertEqual(st, status, doc)
        if st == 201:
            DOC.validate(DOC.schema("ImportedRuns"), doc, "POST /imports")
        else:
            DOC.validate(DOC.schema("Error"), doc, "POST /imports")
        return doc

    def refused(self, text, field, line=None, code="invalid_import", query=""):
        doc = self.imp({"file": text}, status=400, query=query)
        self.assertEqual(doc["error"]["code"], code, doc)
        self.assertEqual(doc["error"]["field"], field, doc)
        if code == "invalid_import":
            self.assertEqual(doc["error"]["line"], line, doc)
        return doc

    def check_recomputed(self, run, bench):
        """A run with records against its benchmark: counts, the figures
        recomputed from the records, the run-level figures stated."""
        ok = bench["requests"]["successful"]
        tot = bench["metrics"]["request_totals"]
        s = run["summary"]
        self.assertEqual(s["counts"]["requests"], tot["total"])
        self.assertEqual(s["counts"]["valid"], tot["successful"])
        self.assertEqual(s["counts"]["errors"], tot["errored"] + tot["incomplete"])
        m = s["metrics"]
        # headroom keeps whole nanoseconds: TTFT and the last token from the start
        ttft = [round((r["info"]["timings"]["first_token_iteration"] - r["request_start_time"])
                      * 1e9) for r in ok]
        last = [round((r["info"]["timings"]["last_token_iteration"] - r["request_start_time"])
                      * 1e9) for r in ok]
        osl = [r["output_tokens"] for r in ok]
        itl = [(lt - ft) / 1e6 / (n - 1) for ft, lt, n in zip(ttft, last, osl) if n > 1]
        for pct in (50, 90, 99):
            self.assertEqual(m["time_to_first_token"]["p%d" % pct],
                             hrtest.numpy_percentile([x / 1e6 for x in ttft], pct))
            self.assertAlmostEqual(m["inter_token_latency"]["p%d" % pct],
                                   hrtest.numpy_percentile(itl, pct), delta=1e-9)
            self.assertEqual(m["request_latency"]["p%d" % pct],
                             hrtest.numpy_percentile([x / 1e6 for x in last], pct))
        # the file's own TTFT and ITL: the same to within the nanosecond rounding
        gm = bench["metrics"]
        for key in ("time_to_first_token_ms", "inter_token_latency_ms"):
            tag = GUIDE_TAGS[key][0]
            for gs, hs in GUIDE_STATS.items():
                if gs == "std_dev":
                    continue  # GuideLLM's is the population's, headroom's the sample's
                self.assertAlmostEqual(m[tag][hs], gm[key]["successful"][gs], delta=2e-6,
                                       msg="%s %s" % (key, gs))
        self.assertEqual(m["input_sequence_length"]["avg"],
                         gm["prompt_token_count"]["successful"]["mean"])
        self.assertEqual(m["output_sequence_length"]["max"],
                         gm["output_token_count"]["successful"]["max"])
        # the run-level figures are the file's
        self.assertEqual(m["request_throughput"]["avg"],
                         gm["requests_per_second"]["successful"]["mean"])
        self.assertEqual(m["output_token_throughput"]["avg"],
                         gm["output_tokens_per_second"]["successful"]["mean"])
        self.assertEqual(m["total_token_throughput"]["avg"],
                         gm["tokens_per_second"]["successful"]["mean"])
        self.assertEqual(s["window_s"], bench["duration"])

    def test_json_and_yaml_reports(self):
        runs = {}
        for kind, text in (("json", self.json_text), ("yaml", self.yaml_text)):
            doc = self.imp({"file": text, "labels": {"origin": "guide-" + kind}})
            runs[kind] = doc["runs"]
            self.assertEqual(len(doc["runs"]), 3)
            for i, (run, bench) in enumerate(zip(doc["runs"], self.report["benchmarks"])):
                imp = run["import"]
                self.assertEqual(run["state"], "succeeded", run.get("reason"))
                self.assertEqual(run["name"], "guidellm import %d/3" % (i + 1))
                self.assertEqual((imp["producer"], imp["version"], imp["format"]),
                                 ("guidellm", "0.7.1", "guidellm-" + kind))
                self.assertEqual(imp["sha256"], hashlib.sha256(text.encode()).hexdigest())
                self.assertEqual(imp["records"], bench["metrics"]["request_totals"]["total"])
                self.assertEqual(imp["start_times"], "file")
                self.assertFalse(imp["summary_only"])
                self.assertEqual(imp["stated"]["benchmark"],
                                 {"index": i, "of": 3, "id": "bench-%d" % i})
                self.assertEqual(imp["stated"]["time_to_first_token_ms"],
                                 bench["metrics"]["time_to_first_token_ms"])
                # what has no counterpart stays readable with the run
                self.assertEqual(imp["unmapped"]["scheduler_metrics"], bench["scheduler_metrics"])
                self.assertEqual(imp["unmapped"]["metadata"], self.report["metadata"])
                self.assertEqual(imp["unmapped"]["metrics"]["total_token_count"],
                                 bench["metrics"]["total_token_count"])
                self.assertEqual(run["spec"]["target"]["model"], "llama-guide")
                self.assertEqual(run["spec"]["target"]["url"], "http://127.0.0.1:8000")
                self.check_recomputed(run, bench)
            spec = [r["spec"]["load"] for r in doc["runs"]]
            self.assertEqual((spec[0]["mode"], spec[0]["concurrency"]), ("concurrency", 1))
            self.assertEqual((spec[1]["mode"], spec[1]["concurrency"]), ("concurrency", 4))
            self.assertEqual((spec[2]["mode"], spec[2]["rate"], spec[2]["arrival"]),
                             ("rate", 12.5, "constant"))
        # JSON and YAML give the same runs
        for a, b in zip(runs["json"], runs["yaml"]):
            self.assertEqual(a["summary"]["metrics"], b["summary"]["metrics"])
        # the records are the report's requests, failures with their category
        rid = runs["json"][1]["id"]
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % rid)
        recs = [json.loads(x) for x in text.splitlines()]
        self.assertEqual(len(recs), 45)
        self.assertEqual(sorted(r["error"] for r in recs if not r["valid"]),
                         ["cancelled"] * 2 + ["transport"] * 3)
        # listed by label, shown, compared, read-only as any imported run
        st, lst, _ = self.api.call("GET", "/runs?label.origin=guide-yaml")
        self.assertEqual(sorted(r["id"] for r in lst["runs"]),
                         sorted(r["id"] for r in runs["yaml"]))
        st, c, _ = self.api.call("GET", "/compare?base=%d&head=%d"
                                 % (runs["json"][1]["id"], runs["yaml"][1]["id"]))
        self.assertEqual(st, 200, c)
        self.assertEqual(c["level"], "requests")
        self.assertEqual(c["counts"]["better"] + c["counts"]["worse"] + c["counts"]["changed"],
                         0, c["counts"])
        st, body, _ = self.api.call("POST", "/runs/%d/cancel" % rid)
        self.assertEqual(st, 409, body)
        st, shown, _ = self.api.call("GET", "/runs/%d" % rid)
        self.assertEqual(st, 200, shown)
        self.assertEqual(shown["import"], runs["json"][1]["import"])
        self.assertEqual(shown["summary"], runs["json"][1]["summary"])
        # the original file, kept once by its content
        path = os.path.join(self.tmp.name, "imports", runs["yaml"][0]["import"]["sha256"])
        with open(path) as fh:
            self.assertEqual(fh.read(), self.yaml_text)

    def test_sampled_requests_are_summary_only(self):
        # GuideLLM may keep a sample of the requests: the file's figures then
        rep = guide_report()
        del rep["benchmarks"][1:]
        b = rep["benchmarks"][0]
        b["requests"]["successful"] = b["requests"]["successful"][:5]
        doc = self.imp({"file": yaml.dump(rep), "name": "sampled"})
        run = doc["runs"][0]
        self.assertEqual(run["name"], "sampled")
        self.assertTrue(run["import"]["summary_only"])
        m = run["summary"]["metrics"]
        for key, (tag, scale) in GUIDE_TAGS.items():
            src = b["metrics"][key]["successful"]
            for gs, hs in GUIDE_STATS.items():
                self.assertEqual(m[tag][hs], src[gs] * scale, (key, gs))
            for p in ("p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99"):
                self.assertEqual(m[tag]["p%d" % int(p[1:])], src["percentiles"][p] * scale,
                                 (key, p))
        self.assertEqual(run["summary"]["counts"]["valid"], 30)
        self.assertEqual(len(run["import"]["unmapped"]["requests"]["successful"]), 5)

    def test_guidellm_own_fixtures(self):
        # the report GuideLLM's own tests read (data/guidellm/README.md): an
        # older schema (0.3: run_stats, args, worker), one request of 46 kept
        for name, fmt in (("benchmarks_stripped.json", "guidellm-json"),
                          ("benchmarks_stripped.yaml", "guidellm-yaml")):
            with open(os.path.join(GUIDE_DIR, name)) as fh:
                text = fh.read()
            with open(os.path.join(GUIDE_DIR, "benchmarks_stripped.json")) as fh:
                src = json.load(fh)
            b = src["benchmarks"][0]
            run = self.imp({"file": text})["runs"][0]
            self.assertEqual(run["import"]["format"], fmt)
            self.assertTrue(run["import"]["summary_only"])
            self.assertEqual(run["spec"]["target"]["model"], "example_model")
            c = run["summary"]["counts"]
            self.assertEqual((c["requests"], c["valid"], c["errors"]), (47, 46, 1))
            m = run["summary"]["metrics"]
            for key, (tag, scale) in GUIDE_TAGS.items():
                s = b["metrics"][key]["successful"]
                self.assertEqual(m[tag]["avg"], s["mean"] * scale)
                self.assertEqual(m[tag]["p50"], s["median"] * scale)  # no p50 there
                self.assertEqual(m[tag]["p99"], s["percentiles"]["p99"] * scale)
            self.assertEqual(m["request_throughput"]["avg"],
                             b["metrics"]["requests_per_second"]["successful"]["mean"])
            self.assertEqual(run["summary"]["window_s"], b["duration"])
            self.assertEqual(run["import"]["unmapped"]["run_stats"], b["run_stats"])

    def test_old_schema_records(self):
        # a 0.3 report whose lists hold every request it counts: records from
        # start_time, first_token_time, last_token_time, end_time
        with open(os.path.join(GUIDE_DIR, "benchmarks_stripped.json")) as fh:
            src = json.load(fh)
        b = src["benchmarks"][0]
        b["request_totals"] = {"successful": 1, "errored": 0, "incomplete": 0, "total": 1}
        b["requests"]["errored"] = b["requests"]["incomplete"] = []
        req = b["requests"]["successful"][0]
        run = self.imp({"file": yaml.dump(src)})["runs"][0]
        self.assertEqual(run["import"]["records"], 1)
        self.assertEqual(run["import"]["format"], "guidellm-yaml")
        m = run["summary"]["metrics"]
        ttft = round((req["first_token_time"] - req["start_time"]) * 1e9) / 1e6
        self.assertEqual(m["time_to_first_token"]["p50"], ttft)
        self.assertAlmostEqual(m["time_to_first_token"]["avg"], req["time_to_first_token_ms"],
                               delta=1e-6)
        self.assertAlmostEqual(m["inter_token_latency"]["avg"], req["inter_token_latency_ms"],
                               delta=1e-6)
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        rec = json.loads(text)
        self.assertEqual((rec["isl"], rec["osl"], rec["n_chunks"]), (257, 128, 128))

    def test_yaml_scalars(self):
        # plain scalars resolve as PyYAML's safe_load (GuideLLM's reader) does
        rep = guide_report()
        del rep["benchmarks"][1:]
        y = yaml.dump(rep) + ("extra:\n  yes_: yes\n  off_: Off\n  tilde: ~\n  empty:\n"
                              "  under: 1_000\n  quoted: '7'\n  exp: 1.5e+3\n  noexp: 1e3\n"
                              "  inf: .inf\n  nan: .NaN\n  hex: 0x1f\n  oct: 017\n  bin: 0b101\n"
                              "  tagged: !!str 12\n"
                              "  big: 123456789012345678901234567890\n  anchored: &x {a: [1, 2]}\n"
                              "  aliased: *x\n")
        run = self.imp({"file": y})["runs"][0]
        self.assertEqual(run["import"]["unmapped"]["extra"], {
            "yes_": True, "off_": False, "tilde": None, "empty": None, "under": 1000,
            "quoted": "7", "exp": 1500.0, "noexp": "1e3", "inf": None, "nan": None,
            "hex": 31, "oct": 15, "bin": 5, "tagged": "12", "big": 1.2345678901234568e+29,
            "anchored": {"a": [1, 2]}, "aliased": {"a": [1, 2]}})

    def test_cli_import_yaml(self):
        with hrtest.tempdir() as d:
            path = os.path.join(d, "benchmarks.yaml")
            with open(path, "w") as fh:
                fh.write(self.yaml_text)
            out = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "import", path,
                                  "--label", "via=cli"], capture_output=True, text=True,
                                 timeout=60 * hrtest.time_scale())
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(len(lines), 3, out.stdout)
            self.assertTrue(all("(guidellm, succeeded; per-request records)" in x
                                for x in lines), out.stdout)
            bad = os.path.join(d, "bad.yaml")
            with open(bad, "w") as fh:
                fh.write(self.yaml_text.replace("version: 2", "version: [2", 1))
            out = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "import", bad],
                                 capture_output=True, text=True, timeout=60 * hrtest.time_scale())
            self.assertEqual(out.returncode, 3, out.stderr)
            self.assertIn("line ", out.stderr)
        out = subprocess.run([CLI, "import", "--help"], capture_output=True, text=True)
        self.assertIn("GuideLLM", out.stdout)

    def test_bad_reports(self):
        rep = guide_report()
        text = self.json_text
        self.refused(text[:5000], "file")  # truncated JSON
        self.refused(self.yaml_text[:3000] + "\n  - [unclosed", "file",
                     line=self.yaml_text[:3000].count("\n") + 2)  # broken YAML: its line
        self.refused(json.dumps({"benchmarks": []}), "file.benchmarks")
        self.refused(json.dumps({"benchmarks": 5}), "file.benchmarks", query="?format=guidellm")
        self.refused(json.dumps({"benchmarks": [rep["benchmarks"][0], 7]}),
                     "file.benchmarks[1]")
        self.refused(json.dumps({"metadata": {}, "benchmarks": [{"requests": {}}]}),
                     "file.benchmarks[0].metrics")
        self.refused(self.fixture_vllm(), "file.benchmarks", query="?format=guidellm")

        def broken(path, value):
            r = guide_report()
            o = r
            for k in path[:-1]:
                o = o[k]
            o[path[-1]] = value
            return r
        b = ["benchmarks", 1]
        for path, value, field in (
                (b + ["metrics", "time_to_first_token_ms", "successful", "mean"], "x",
                 "file.benchmarks[1].metrics.time_to_first_token_ms.successful.mean"),
                (b + ["metrics", "request_totals", "errored"], -3,
                 "file.benchmarks[1].metrics.request_totals.errored"),
                (b + ["metrics", "inter_token_latency_ms", "successful", "percentiles"], [],
                 "file.benchmarks[1].metrics.inter_token_latency_ms.successful.percentiles"),
                (b + ["requests", "successful"], {"a": 1},
                 "file.benchmarks[1].requests.successful"),
                (b + ["requests", "successful", 7, "info", "timings", "request_start"], "soon",
                 "file.benchmarks[1].requests.successful[7].info.timings.request_start"),
                (b + ["requests", "errored", 1, "info", "error"], 500,
                 "file.benchmarks[1].requests.errored[1].info.error"),
                (b + ["requests", "successful", 3, "info", "timings", "token_iterations"],
                 10 ** 8, "file.benchmarks[1].requests.successful[3]"),
                (["metadata", "guidellm_version"], 7, "file.metadata.guidellm_version")):
            r = broken(path, value)
            self.refused(json.dumps(r), field)
            # in YAML too, with the line of the value at fault
            y = yaml.dump(r)
            doc = self.imp({"file": y}, status=400)
            self.assertEqual(doc["error"]["field"], field, doc)
            self.assertIsInstance(doc["error"]["line"], int, doc)
            self.assertIn("line %d: " % doc["error"]["line"], doc["error"]["message"])
        # the line is the value's: the wrong mean
        r = broken(b + ["metrics", "time_to_first_token_ms", "successful", "mean"], "x")
        y = yaml.dump(r)
        doc = self.imp({"file": y}, status=400)
        self.assertIn("mean: x", y.splitlines()[doc["error"]["line"] - 1])
        # the start after its first token
        r = guide_report()
        q = r["benchmarks"][0]["requests"]["successful"][2]
        q["info"]["timings"]["first_token_iteration"] = q["request_start_time"] - 1
        self.refused(json.dumps(r), "file.benchmarks[0].requests.successful[2]")
        # hostile YAML: an alias bomb, deep nesting, tags, documents, huge lists
        bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
        for i in range(1, 12):
            bomb += "%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n" % (
                chr(97 + i), chr(97 + i), *([chr(96 + i)] * 9))
        bomb += "benchmarks: [*l]\n"
        doc = self.refused(bomb, "file", line=7)  # where the copies pass 1,000,000 nodes
        self.assertIn("alias", doc["error"]["message"])
        deep = "benchmarks:\n" + "".join("  " * i + "- \n" for i in range(1, 60))
        self.refused(deep, "file", line=33)  # the 33rd level
        self.refused("benchmarks: " + "[" * 100 + "]" * 100 + "\n", "file", line=1)
        self.refused("benchmarks: !!python/object:os.system [ls]\n", "file", line=1)
        self.refused("benchmarks: []\n---\nbenchmarks: []\n", "file", line=2)
        self.refused("- 1\n- 2\n", "file")
        self.refused("benchmarks:\n" + "- 1\n" * 1001, "file.benchmarks", line=2)
        many = {"benchmarks": [{"metrics": {"request_totals": {"successful": 1000001}},
                                "requests": {"successful": [0] * 1000001}}]}
        self.refused(json.dumps(many), "file.benchmarks[0].requests.successful")
        # nothing of the refused files became a run
        st, lst, _ = self.api.call("GET", "/runs?limit=1000")
        for r in lst["runs"]:
            self.assertNotEqual(r["state"], "running", r)

    @staticmethod
    def fixture_vllm():
        with open(FIXTURE) as fh:
            return fh.read()


class ImportFilesKept(unittest.TestCase):
    """The original file of an imported run stays while a run names it; a
    deleted run's file is removed when the daemon next starts (with any
    temporary file a crash left), another run's is kept."""

    def test_deleted_runs_file_goes_at_the_next_start(self):
        import hashlib
        import tempfile as tf
        with tf.TemporaryDirectory() as tmp:
            with open(FIXTURE, "rb") as f:
                raw = f.read()
            doc = json.loads(raw)
            doc["model_id"] = "another-model"  # other bytes: another file
            other = json.dumps(doc).encode()
            d = hrtest.start_daemon(tmp)
            try:
                api = hrtest.Api(d.addr)
                ids = []
                for body in (raw, other):
                    st, run, _ = api.call("POST", "/imports?format=vllm", raw=body,
                                          headers={"Content-Type": "application/json"})
                    self.assertEqual(st, 201, run)
                    ids.append(run["id"])
                st, _, _ = api.call("DELETE", "/runs/%d" % ids[0])
                self.assertIn(st, (200, 204))
            finally:
                d.stop()
            imports = os.path.join(tmp, "imports")
            gone = hashlib.sha256(raw).hexdigest()
            kept = hashlib.sha256(other).hexdigest()
            self.assertTrue(os.path.exists(os.path.join(imports, gone)))  # until the restart
            with open(os.path.join(imports, ".tmp-%s-1" % gone), "wb") as f:
                f.write(b"half")  # what a crash mid-write would leave
            d = hrtest.start_daemon(tmp)
            try:
                st, run, _ = hrtest.Api(d.addr).call("GET", "/runs/%d" % ids[1])
                self.assertEqual(st, 200)
            finally:
                d.stop()
            self.assertEqual(sorted(os.listdir(imports)), [kept])


if __name__ == "__main__":
    unittest.main()
