#!/usr/bin/env python3
"""test_faults.py - every failure headroom-mock injects lands in its own error
category, end to end: REST submit -> worker -> records in SQLite -> summary
and JSONL export.

Each run gets a fresh mock with a mix of failures (--fail-429, --fail-500,
--fail-reset, --fail-malformed, --fail-stall without --stall-ms, so a stall
lasts until the worker's request timeout). The mock draws each request's
failure from its seed and the request's number alone (docs/mock.md), so the
counts expected for N requests are computed here exactly with the same
formula (fault_draw below), and the summary's `errors` object must hold
exactly them: 429 -> rate_limited, 500 -> http_5xx, reset -> reset,
malformed -> malformed_stream, stall -> timeout, the rest valid. Every
mock is stopped with SIGTERM and must exit 0 (under AddressSanitizer a
leak or an error report fails the test), and its own tally of injected
failures must match too.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_faults.py
"""
import collections
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import unittest

import hrtest

KINDS = ["429", "500", "reset", "malformed", "stall"]
CATEGORY = {"429": "rate_limited", "500": "http_5xx", "reset": "reset",
            "malformed": "malformed_stream", "stall": "timeout"}
MASK = (1 << 64) - 1


def fault_draw(seed, n, probs):
    """The failure the mock gives generation request n (1, 2, ...): the
    formula of mock/fault.c and docs/mock.md. probs: dict kind -> p."""
    z = (seed + n * 0x9e3779b97f4a7c15) & MASK
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    z ^= z >> 31
    u = (z >> 11) * 2.0 ** -53
    edge = 0.0
    for kind in KINDS:
        p = probs.get(kind, 0.0)
        edge += p
        if p > 0 and u < edge:
            return kind
    return None


def expected_counts(seed, n, probs):
    return collections.Counter(fault_draw(seed, i, probs) for i in range(1, n + 1))


class Mock:
    """headroom-mock with its stderr kept, to read its tally of failures."""

    def __init__(self, *args):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(
            [os.path.join(hrtest.BIN, "headroom-mock"), "--listen", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.err, text=True)
        ready, _, _ = select.select([self.p.stdout], [], [], 30)
        line = self.p.stdout.readline() if ready else ""
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError("headroom-mock did not start: %r %s" % (line, self.log()))
        self.addr = line.split()[2]

    def log(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stdout.close()
        return self.p.returncode

    def close(self):
        self.err.close()

    def injected(self):
        """The mock's own tally, from its last stderr line: kind -> count."""
        m = re.search(r"injected 429 (\d+), 500 (\d+), reset (\d+), malformed (\d+), "
                      r"stall (\d+)", self.log())
        if not m:
            return None
        return dict(zip(KINDS, map(int, m.groups())))


class Faults(unittest.TestCase):
    PROBS = {"429": 0.1, "500": 0.1, "reset": 0.1, "malformed": 0.1, "stall": 0.05}
    SEED = 4
    N = 60
    OSL = 8
    TIMEOUT_S = 1.5  # the worker's request timeout: what ends a stall

    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.expected = expected_counts(cls.SEED, cls.N, cls.PROBS)
        # the seed is chosen so that the run has every kind and valid requests
        assert all(cls.expected[k] >= 2 for k in KINDS), cls.expected
        assert cls.expected[None] >= 20, cls.expected

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.tmp.cleanup()

    def mock_args(self):
        args = []
        for k in KINDS:
            args += ["--fail-" + k, str(self.PROBS[k])]
        return args + ["--fail-seed", str(self.SEED)]

    def run_with_faults(self, endpoint, stream):
        mock = Mock(*self.mock_args())
        try:
            spec = hrtest.spec(mock.addr, concurrency=8, requests=self.N)
            spec["target"]["endpoint"] = endpoint
            spec["target"]["stream"] = stream
            spec["target"]["timeout_s"] = self.TIMEOUT_S
            spec["workload"] = {"isl": {"mean": 16, "stddev": 0},
                                "osl": {"mean": self.OSL, "stddev": 0}, "seed": 3}
            run = self.api.wait(self.api.submit(spec), timeout=120)
            st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
            self.assertEqual(st, 200)
            rows = [json.loads(line) for line in text.splitlines()]
        finally:
            rc = mock.stop()
        try:
            self.assertEqual(rc, 0, mock.log())
            # the mock injected exactly what the formula says
            self.assertEqual(mock.injected(), {k: self.expected[k] for k in KINDS},
                             mock.log())
        finally:
            mock.close()
        return run, rows

    def check_summary(self, run):
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        s = run["summary"]
        nfail = sum(self.expected[k] for k in KINDS)
        self.assertEqual(s["counts"]["requests"], self.N)
        self.assertEqual(s["counts"]["valid"], self.expected[None])
        self.assertEqual(s["counts"]["errors"], nfail)
        self.assertEqual(s["errors"], {CATEGORY[k]: self.expected[k] for k in KINDS})
        # only valid requests feed the metrics
        m = s["metrics"]
        self.assertEqual(m["request_latency"]["count"], self.expected[None])
        self.assertEqual(m["output_sequence_length"]["min"], self.OSL)
        self.assertEqual(m["output_sequence_length"]["max"], self.OSL)

    def check_rows(self, rows, stream):
        self.assertEqual(len(rows), self.N)
        by = collections.Counter(r["error"] for r in rows)
        self.assertEqual(by, collections.Counter(
            {("" if k is None else CATEGORY[k]): v for k, v in self.expected.items()}))
        for r in rows:
            err, msg = r["error"], r["error_message"]
            if err == "":
                self.assertTrue(r["valid"], r)
                self.assertEqual(r["status"], 200)
                self.assertEqual(msg, "")
                self.assertEqual(r["osl"], self.OSL)
                continue
            self.assertFalse(r["valid"], r)
            self.assertNotEqual(msg, "", r)
            if err == "rate_limited":
                self.assertEqual(r["status"], 429)
                self.assertTrue(msg.startswith("HTTP 429"), msg)
                self.assertIn("rate limit", msg)
            elif err == "http_5xx":
                self.assertEqual(r["status"], 500)
                self.assertTrue(msg.startswith("HTTP 500"), msg)
                self.assertIn("internal server error", msg)
            elif err == "reset":
                self.assertEqual(r["status"], 200)  # the headers came
                # streamed: at most the tokens before the halfway point
                self.assertLessEqual(r["n_chunks"], self.OSL // 2 if stream else 0, r)
            elif err == "malformed_stream":
                self.assertEqual(r["status"], 200)
                self.assertIn("not JSON" if stream else "not a JSON object", msg)
                if stream:  # the worker stopped at the bad event
                    self.assertEqual(r["n_chunks"], self.OSL // 2, r)
            elif err == "timeout":
                self.assertIn("timed out", msg.lower())
                # stalled after the first half (streamed) or before the body
                self.assertEqual(r["status"], 200 if stream else 0)
                self.assertEqual(r["n_chunks"], self.OSL // 2 if stream else 0, r)
                self.assertGreaterEqual(r["done_ns"] - r["start_ns"], self.TIMEOUT_S * 1e9 * 0.9)
            else:
                self.fail("unexpected error category %r: %r" % (err, r))

    def test_streamed_chat(self):
        run, rows = self.run_with_faults("chat", True)
        self.check_summary(run)
        self.check_rows(rows, True)

    def test_completions_not_streamed(self):
        run, rows = self.run_with_faults("completions", False)
        self.check_summary(run)
        self.check_rows(rows, False)


if __name__ == "__main__":
    unittest.main()
