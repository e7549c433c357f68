#!/usr/bin/env python3
"""test_profile.py - `headroom profile`: AIPerf's flags become a run spec
(checked with --print-spec, flag by flag), flags for features headroom does
not have are refused naming the flag, and real runs go end to end through
headroomd, a worker and headroom-mock: synthetic streaming at a
concurrency, and a Mooncake trace from --input-file.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_profile.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

CLI = os.path.join(hrtest.BIN, "headroom")


def profile(*args, env=None):
    return subprocess.run([CLI, "profile", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def spec_of(*args):
    r = profile("--print-spec", *args)
    if r.returncode != 0:
        raise AssertionError("exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


class FlagsTest(unittest.TestCase):
    def test_concurrency_defaults(self):
        s = spec_of("-m", "llama", "--url", "localhost:8000/")
        self.assertEqual(s["target"], {"url": "http://localhost:8000", "model": "llama",
                                       "endpoint": "chat", "stream": False})
        self.assertEqual(s["load"], {"mode": "concurrency", "concurrency": 1, "requests": 10})
        self.assertEqual(s["labels"], {"from": "aiperf-flags"})

    def test_rate_with_ceiling_and_inputs(self):
        s = spec_of("--model", "m", "--url", "https://srv:9000", "--endpoint-type",
                    "completions", "--streaming", "--request-rate", "12.5",
                    "--arrival-pattern", "gamma", "--arrival-smoothness", "0.5",
                    "--concurrency", "32", "--benchmark-duration", "30",
                    "--benchmark-grace-period", "5", "--isl", "512", "--isl-stddev", "10",
                    "--output-tokens-mean", "128", "--warmup-request-count", "4",
                    "--random-seed", "9", "--extra-inputs", "ignore_eos:true",
                    "--extra-inputs", "min_tokens:128", "--extra-inputs", '{"top_k": 5}',
                    "-H", "Authorization: Bearer x", "--request-timeout-seconds", "60",
                    "--workers-max", "3", "--name", "rate run")
        self.assertEqual(s["name"], "rate run")
        self.assertEqual(s["target"]["url"], "https://srv:9000")
        self.assertEqual(s["target"]["endpoint"], "completions")
        self.assertTrue(s["target"]["stream"])
        self.assertEqual(s["target"]["timeout_s"], 60)
        self.assertEqual(s["target"]["headers"], {"Authorization": "Bearer x"})
        self.assertEqual(s["target"]["extra_body"],
                         {"ignore_eos": True, "min_tokens": 128, "top_k": 5})
        self.assertEqual(s["load"], {"mode": "rate", "rate": 12.5, "arrival": "gamma",
                                     "smoothness": 0.5, "max_concurrency": 32,
                                     "duration_s": 30, "grace_s": 5})
        self.assertEqual(s["workload"], {"seed": 9, "isl": {"mean": 512, "stddev": 10},
                                         "osl": {"mean": 128, "stddev": 0}})
        self.assertEqual(s["warmup"], {"requests": 4})
        self.assertEqual(s["workers"], 3)

    def test_refused_and_bad_flags_name_the_flag(self):
        cases = [
            (["-m", "x", "--goodput", "time_to_first_token"], "--goodput"),
            (["-m", "x", "--goodput", "time_to_first_token:-1"], "--goodput"),
            (["-m", "x", "--public-dataset", "sharegpt"], "--public-dataset"),
            (["-m", "x", "--endpoint-type", "dall_e"], "--endpoint-type"),
            (["-m", "x", "--endpoint-type", "embeddings", "--streaming"], "--streaming"),
            (["-m", "x", "--input-file", "f", "--custom-dataset-type", "multi_turn"],
             "--custom-dataset-type"),
            (["-m", "x", "--concurrency", "0"], "--concurrency"),
            (["-m", "x", "--request-rate", "abc"], "--request-rate"),
            (["-m", "x", "--arrival-pattern", "gamma"], "--arrival-pattern"),
            (["-m", "x", "--request-rate", "5", "--arrival-pattern", "zipf"],
             "--arrival-pattern"),
            (["-m", "x", "--extra-inputs", "novalue"], "--extra-inputs"),
            (["-m", "x", "-H", "NoColon"], "-H"),
            (["-m", "x", "--frobnicate"], "--frobnicate"),
            (["--url", "x"], "--model"),
            (["-m", "x", "-m", "y"], "--model"),
            (["-m", "x", "--concurrency"], "--concurrency"),
            (["-m", "x", "--input-file", "/nonexistent/trace.jsonl"], "--input-file"),
        ]
        for args, flag in cases:
            r = profile("--print-spec", *args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertTrue(r.stderr.startswith("headroom profile: %s:" % flag),
                            (args, r.stderr))
            self.assertEqual(r.stdout, "")

    def test_goodput(self):
        s = spec_of("-m", "m", "--goodput",
                    "time_to_first_token:100 inter_token_latency:3.40,request_latency:900")
        self.assertEqual(s["goodput"], {"time_to_first_token": 100, "inter_token_latency": 3.4,
                                        "request_latency": 900})

    def test_endpoint_types(self):
        for aiperf, ours in (("embeddings", "embeddings"), ("rankings", "rankings_nim"),
                             ("cohere_rankings", "rankings_cohere"),
                             ("hf_tei_rankings", "rankings_tei"),
                             ("huggingface_generate", "tgi")):
            s = spec_of("-m", "m", "--endpoint-type", aiperf)
            self.assertEqual(s["target"]["endpoint"], ours)

    def test_help(self):
        r = profile("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--request-rate", r.stdout)


class EndToEndTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="headroom-test-")
        cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "1")
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.api = hrtest.Api(cls.daemon.addr)

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.daemon.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0]:
            raise AssertionError("exit statuses %s" % rcs)

    def test_synthetic_streaming(self):
        r = profile("-m", "mock-model", "--url", self.mock.addr, "--streaming",
                    "--concurrency", "4", "--request-count", "24", "--isl", "16", "--osl", "8",
                    "--warmup-request-count", "4", "--daemon", "http://" + self.daemon.addr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rid = int(r.stdout.split()[1])
        self.assertIn("Run %d:" % rid, r.stdout)
        st, run, _ = self.api.call("GET", "/runs/%d" % rid)
        self.assertEqual(run["state"], "succeeded")
        self.assertEqual(run["summary"]["counts"]["valid"], 24)
        self.assertEqual(run["summary"]["counts"]["warmup"], 4)
        self.assertEqual(run["summary"]["metrics"]["output_sequence_length"]["avg"], 8)
        self.assertEqual(run["labels"], {"from": "aiperf-flags"})

    def test_mooncake_trace(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for i in range(10):
                f.write(json.dumps({"timestamp": i * 20, "input_length": 12,
                                    "output_length": 4}) + "\n")
            path = f.name
        try:
            env = dict(os.environ, HEADROOM_URL="http://" + self.daemon.addr)
            r = profile("-m", "mock-model", "--url", "http://" + self.mock.addr,
                        "--streaming", "--input-file", path, "--custom-dataset-type",
                        "mooncake_trace", "--fixed-schedule", env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            rid = int(r.stdout.split()[1])
            st, run, _ = self.api.call("GET", "/runs/%d" % rid)
            self.assertEqual(run["spec"]["load"]["mode"], "trace")
            self.assertEqual(run["summary"]["counts"]["valid"], 10)
        finally:
            os.unlink(path)


if __name__ == "__main__":
    unittest.main()
