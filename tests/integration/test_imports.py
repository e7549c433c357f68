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
files get a 4xx naming the field (and the line of a JSONL file)."""

import hashlib
import json
import os
import socket
import subprocess
import sys
import unittest

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
        self.refused({"file": json.dumps({"benchmarks": []})}, "file")  # GuideLLM: not yet
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
