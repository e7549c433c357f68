"""test_timeseries.py - GET /api/v1/runs/{id}/timeseries, /distribution and
/requests (the dashboard's bounded views of a run) against the records.

A real run (headroom-mock failing a share of its requests with 500s and
resets, a warm-up, a Poisson rate) is bucketed by the daemon; every
bucket's counts, in-flight figure, output tokens per second and
percentiles are recomputed here from the same run's `/records` export and
must agree (counts exactly, figures to 1e-9). Also: the daemon's own
choice of step, the bound on buckets, bad steps, unknown and queued runs;
each metric's CDF (every value, or quantiles when there are more than
asked for) and the slowest and failed requests, row for row as /records
has them.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_timeseries.py
"""

import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402

METRICS = ("time_to_first_token", "inter_token_latency", "request_latency", "schedule_lag")


def rate_spec(addr, **load):
    spec = hrtest.spec(addr, mode="rate", **load)
    del spec["load"]["concurrency"]
    return spec


def floor_div(a, b):
    return a // b  # Python's // floors, as the daemon's floor_div does


def expected(records, step_ms):
    """The answer's buckets recomputed from records (dicts of /records)."""
    step = step_ms * 1000000

    def end_of(r):
        return r["end_ns"] if r["end_ns"] is not None else r["done_ns"]

    times = []
    timed = []
    for r in records:
        if r["intended_ns"] is None and r["start_ns"] is None and end_of(r) is None:
            continue
        timed.append(r)
        for t in (r["intended_ns"], r["start_ns"], end_of(r)):
            if t is not None:
                times.append(t)
        if r["start_ns"] is not None:
            times.extend(r["start_ns"] + c for c in r["chunk_offsets_ns"])
    if not timed:
        return None
    first = floor_div(min(times), step)
    n = floor_div(max(times), step) - first + 1

    def b(t):
        return min(max(floor_div(t, step) - first, 0), n - 1)

    out = {k: [0] * n for k in ("intended", "sent", "completed", "errors")}
    out["t_ms"] = [(first + i) * step_ms for i in range(n)]
    kinds = {}
    tokens = [0.0] * n
    vals = {m: [[] for _ in range(n)] for m in METRICS}
    for r in timed:
        end = end_of(r)
        if r["intended_ns"] is not None:
            out["intended"][b(r["intended_ns"])] += 1
        if r["start_ns"] is not None:
            out["sent"][b(r["start_ns"])] += 1
        if not r["valid"]:
            et = end if end is not None else (r["start_ns"] if r["start_ns"] is not None
                                              else r["intended_ns"])
            out["errors"][b(et)] += 1
            kind = r["error"] or "invalid"
            kinds.setdefault(kind, [0] * n)[b(et)] += 1
        elif end is not None:
            out["completed"][b(end)] += 1
            if r["osl"] is not None and r["osl"] > 0:
                offs = r["chunk_offsets_ns"]
                if offs:
                    for c in offs:
                        tokens[b(r["start_ns"] + c)] += r["osl"] / len(offs)
                else:
                    tokens[b(end)] += r["osl"]
        if r["start_ns"] is not None:
            for m in METRICS:
                v = r[m]
                if v is not None and (r["valid"] or m == "schedule_lag"):
                    vals[m][b(r["start_ns"])].append(v)
    # in flight at each bucket's end: sent before it, not ended by then
    out["in_flight"] = []
    for i in range(n):
        te = (first + i + 1) * step
        out["in_flight"].append(sum(
            1 for r in timed if r["start_ns"] is not None and r["start_ns"] < te and
            not (end_of(r) is not None and end_of(r) < te)))
    out["error_kinds"] = kinds
    out["output_tokens_per_s"] = [t / (step_ms / 1000.0) for t in tokens]
    out["metrics"] = {}
    for m in METRICS:
        e = {"count": [len(v) for v in vals[m]]}
        for p in (50, 90, 99):
            e["p%d" % p] = [hrtest.numpy_percentile(v, p) if v else None for v in vals[m]]
        out["metrics"][m] = e
    out["buckets"] = n
    return out


class TimeseriesTest(hrtest.ServiceCase):

    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "3", "--itl-ms", "1",
                                     "--fail-500", "0.05", "--fail-reset", "0.05",
                                     "--fail-seed", "7"))
        spec = rate_spec(cls.mock.addr, rate=400, arrival="poisson", requests=600)
        spec["warmup"] = {"requests": 40}
        spec["workers"] = 2
        cls.run_id = cls.api.submit(spec)
        run = cls.api.wait(cls.run_id)
        if run["state"] != "succeeded":
            raise AssertionError("run ended %s: %s" % (run["state"], run.get("reason")))
        st, text, _ = cls.api.call("GET", "/runs/%d/records" % cls.run_id)
        if st != 200:
            raise AssertionError("records: %s" % st)
        cls.records = [json.loads(line) for line in text.splitlines() if line]

    def ts(self, query=""):
        st, body, _ = self.api.call("GET", "/runs/%d/timeseries%s" % (self.run_id, query))
        self.assertEqual(st, 200, body)
        return body

    def check_against_records(self, got, step_ms):
        want = expected(self.records, step_ms)
        self.assertEqual(got["step_ms"], step_ms)
        self.assertEqual(got["records"], len(self.records))
        self.assertEqual(got["untimed"], 0)
        self.assertEqual(got["buckets"], want["buckets"])
        for k in ("t_ms", "intended", "sent", "completed", "errors", "in_flight",
                  "error_kinds"):
            self.assertEqual(got[k], want[k], k)
        for i, (g, w) in enumerate(zip(got["output_tokens_per_s"],
                                       want["output_tokens_per_s"])):
            self.assertTrue(math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-9),
                            "output_tokens_per_s[%d]: %s != %s" % (i, g, w))
        for m in METRICS:
            self.assertEqual(got["metrics"][m]["count"], want["metrics"][m]["count"], m)
            for p in ("p50", "p90", "p99"):
                for i, (g, w) in enumerate(zip(got["metrics"][m][p], want["metrics"][m][p])):
                    if w is None:
                        self.assertIsNone(g, "%s.%s[%d]" % (m, p, i))
                    else:
                        self.assertTrue(math.isclose(g, w, rel_tol=1e-9, abs_tol=1e-12),
                                        "%s.%s[%d]: %s != %s" % (m, p, i, g, w))

    def test_buckets_match_the_records(self):
        # the run has what the test means to check: errors of two kinds,
        # a warm-up, several buckets with requests in flight at their end
        kinds = {r["error"] for r in self.records if not r["valid"]}
        self.assertTrue({"http_5xx", "reset"} <= kinds, kinds)
        for step in (7, 50, 250):
            with self.subTest(step_ms=step):
                got = self.ts("?step_ms=%d" % step)
                self.check_against_records(got, step)
                self.assertEqual(sum(got["sent"]), len(self.records))
                self.assertEqual(sum(got["completed"]) + sum(got["errors"]),
                                 len(self.records))
        got = self.ts("?step_ms=7")
        self.assertGreater(max(got["in_flight"]), 0)
        self.assertGreater(len(got["error_kinds"]), 1)

    def test_warmup_span(self):
        got = self.ts("?step_ms=100")
        warm = [r for r in self.records if r["phase"] == "warmup"]
        self.assertEqual(len(warm), 40)
        lo = min(r["start_ns"] for r in warm)
        hi = max(r["end_ns"] if r["end_ns"] is not None else r["done_ns"] for r in warm)
        self.assertEqual(got["warmup_ms"], [lo // 1000000, -(-hi // 1000000)])

    def test_default_step(self):
        got = self.ts()
        self.assertIn(got["step_ms"], [m * 10 ** e for e in range(8) for m in (1, 2, 5)])
        self.assertLessEqual(got["buckets"], 500)
        self.check_against_records(got, got["step_ms"])
        # the step is the smallest of its kind giving at most 500 buckets
        smaller = [m * 10 ** e for e in range(8) for m in (1, 2, 5)
                   if m * 10 ** e < got["step_ms"]]
        if smaller:
            self.assertGreater(expected(self.records, max(smaller))["buckets"], 500)

    def test_buckets_asked(self):
        for n in (1, 7, 200):
            with self.subTest(buckets=n):
                got = self.ts("?buckets=%d" % n)
                self.assertLessEqual(got["buckets"], n)
                self.check_against_records(got, got["step_ms"])
                smaller = [m * 10 ** e for e in range(8) for m in (1, 2, 5)
                           if m * 10 ** e < got["step_ms"]]
                if smaller:  # the smallest such step
                    self.assertGreater(expected(self.records, max(smaller))["buckets"], n)
        for q, code, field in (("?buckets=0", "out_of_range", "buckets"),
                               ("?buckets=10001", "out_of_range", "buckets"),
                               ("?buckets=10&step_ms=5", "invalid_value", "buckets")):
            st, body, _ = self.api.call("GET", "/runs/%d/timeseries%s" % (self.run_id, q))
            self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                             (400, code, field), body)

    def test_bucket_bound(self):
        span_ms = expected(self.records, 1)["buckets"]
        if span_ms <= 10000:  # a run this short fits at 1 ms: ask the bound another way
            got = self.ts("?step_ms=1")
            self.assertEqual(got["buckets"], span_ms)
        else:
            st, body, _ = self.api.call("GET", "/runs/%d/timeseries?step_ms=1" % self.run_id)
            self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                             (400, "out_of_range", "step_ms"), body)

    def test_bad_steps(self):
        for q in ("0", "-5", "1.5", "abc", "86400001", ""):
            with self.subTest(step_ms=q):
                st, body, _ = self.api.call("GET", "/runs/%d/timeseries?step_ms=%s" %
                                            (self.run_id, q))
                self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                                 (400, "out_of_range", "step_ms"), body)
        # the step is checked before the id
        st, body, _ = self.api.call("GET", "/runs/999999/timeseries?step_ms=0")
        self.assertEqual(st, 400, body)
        st, body, _ = self.api.call("GET", "/runs/999999/timeseries")
        self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                         (404, "not_found", "id"), body)


class DistributionRequestsTest(hrtest.ServiceCase):
    """/distribution and /requests of one run with failures."""

    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "2", "--itl-ms", "1",
                                     "--fail-500", "0.08", "--fail-seed", "5"))
        spec = rate_spec(cls.mock.addr, rate=300, arrival="poisson", requests=400)
        spec["warmup"] = {"requests": 20}
        cls.run_id = cls.api.submit(spec)
        run = cls.api.wait(cls.run_id)
        if run["state"] != "succeeded":
            raise AssertionError("run ended %s: %s" % (run["state"], run.get("reason")))
        st, text, _ = cls.api.call("GET", "/runs/%d/records" % cls.run_id)
        cls.records = [json.loads(line) for line in text.splitlines() if line]

    def get(self, path):
        st, body, _ = self.api.call("GET", "/runs/%d/%s" % (self.run_id, path))
        self.assertEqual(st, 200, body)
        return body

    def values(self, metric):
        return sorted(r[metric] for r in self.records
                      if r["phase"] == "profiling" and r["start_ns"] is not None and
                      (r["valid"] or metric == "schedule_lag") and r[metric] is not None)

    def test_distribution_exact(self):
        for m in METRICS + ("scheduled_time_to_first_token", "output_sequence_length"):
            with self.subTest(metric=m):
                want = self.values(m)
                got = self.get("distribution?metric=%s&points=10000" % m)["metrics"][0]
                self.assertEqual((got["metric"], got["count"], got["exact"]), (m, len(want), True))
                self.assertEqual(got["values"], want)
                self.assertEqual(got["fractions"], [(i + 1) / len(want) for i in range(len(want))])
        # the summary counts the same values
        st, summary, _ = self.api.call("GET", "/runs/%d/summary" % self.run_id)
        self.assertEqual(len(self.values("time_to_first_token")),
                         summary["metrics"]["time_to_first_token"]["count"])

    def test_distribution_quantiles(self):
        want = self.values("request_latency")
        self.assertGreater(len(want), 50)
        got = self.get("distribution?metric=request_latency&points=50")["metrics"][0]
        self.assertEqual((got["count"], got["exact"], len(got["values"])), (len(want), False, 50))
        for i, v in enumerate(got["values"]):
            self.assertTrue(math.isclose(v, hrtest.numpy_percentile(want, 100 * i / 49),
                                         rel_tol=1e-12), i)
        self.assertEqual(got["fractions"], [i / 49 for i in range(50)])
        self.assertEqual(self.get("distribution?metric=request_latency")["metrics"][0]["exact"],
                         True)

    def test_distribution_several(self):
        """Several metrics from one read, each as it is alone, in the order asked."""
        names = ["request_latency", "time_to_first_token", "schedule_lag"]
        got = self.get("distribution?metric=%s&points=100" % ",".join(names))["metrics"]
        self.assertEqual([g["metric"] for g in got], names)
        for g, m in zip(got, names):
            self.assertEqual(g, self.get("distribution?metric=%s&points=100" % m)["metrics"][0])

    def test_slowest_requests(self):
        valid = [r for r in self.records if r["valid"] and r["phase"] == "profiling"]
        want = sorted(valid, key=lambda r: (-r["request_latency"], r["worker"], r["seq"]))[:10]
        got = self.get("requests?order=slowest&limit=10")
        self.assertEqual(got["order"], "slowest")
        self.assertEqual(got["requests"], want)  # row for row as /records has them
        self.assertEqual(len(self.get("requests")["requests"]), 15)  # the default limit

    def test_failed_requests(self):
        bad = [r for r in self.records if not r["valid"]]
        self.assertGreater(len(bad), 5)
        got = self.get("requests?order=failed&limit=5")
        self.assertEqual(got["requests"], bad[:5])
        got = self.get("requests?order=failed&limit=100")
        self.assertEqual(got["requests"], bad[:100])

    def test_bad_queries(self):
        for path, st, code, field in (
                ("distribution", 400, "missing_field", "metric"),
                ("distribution?metric=nope", 400, "invalid_value", "metric"),
                ("distribution?metric=request_latency,request_latency", 400, "invalid_value",
                 "metric"),
                ("distribution?metric=request_latency,", 400, "invalid_value", "metric"),
                ("distribution?metric=" + ",".join(METRICS * 3), 400, "invalid_value", "metric"),
                ("distribution?metric=request_latency&points=1", 400, "out_of_range", "points"),
                ("distribution?metric=request_latency&points=10001", 400, "out_of_range",
                 "points"),
                ("requests?order=fastest", 400, "invalid_value", "order"),
                ("requests?limit=0", 400, "out_of_range", "limit"),
                ("requests?limit=101", 400, "out_of_range", "limit")):
            with self.subTest(path=path):
                got_st, body, _ = self.api.call("GET", "/runs/%d/%s" % (self.run_id, path))
                self.assertEqual((got_st, body["error"]["code"], body["error"]["field"]),
                                 (st, code, field), body)
        for path in ("distribution?metric=request_latency", "requests"):
            st, body, _ = self.api.call("GET", "/runs/999999/" + path)
            self.assertEqual((st, body["error"]["field"]), (404, "id"), body)


class TooManyBucketsTest(unittest.TestCase):
    """A run long enough that 1 ms buckets pass the 10,000 bound."""

    def test_bound(self):
        mock, api = hrtest.service(self, "--quiet", "--ttft-ms", "1")
        rid = api.submit(rate_spec(mock.addr, rate=20, requests=240))
        run = api.wait(rid)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, body, _ = api.call("GET", "/runs/%d/timeseries?step_ms=1" % rid)
        self.assertEqual((st, body["error"]["code"], body["error"]["field"]),
                         (400, "out_of_range", "step_ms"), body)
        self.assertIn("the step must be at least 2 ms", body["error"]["message"])
        st, body, _ = api.call("GET", "/runs/%d/timeseries?step_ms=2" % rid)
        self.assertEqual(st, 200, body)
        self.assertLessEqual(body["buckets"], 10000)


class QueuedRunTest(unittest.TestCase):
    def test_no_records_no_buckets(self):
        mock, api = hrtest.service(self, "--quiet", "--ttft-ms", "200")
        # the first run holds the runner for 8 s; the second stays queued
        first = api.submit(hrtest.spec(mock.addr, concurrency=1, requests=40))
        second = api.submit(hrtest.spec(mock.addr, requests=1))
        st, body, _ = api.call("GET", "/runs/%d/timeseries" % second)
        self.assertEqual(st, 200, body)
        # still queued after the answer, so queued while it was computed
        self.assertEqual(api.call("GET", "/runs/%d" % second)[1]["state"], "queued")
        self.assertEqual((body["records"], body["buckets"], body["t_ms"], body["sent"],
                          body["warmup_ms"], body["metrics"]["request_latency"]["p50"]),
                         (0, 0, [], [], None, []))
        api.call("POST", "/runs/%d/cancel" % second)
        api.call("POST", "/runs/%d/cancel" % first)
        api.wait(first)


if __name__ == "__main__":
    unittest.main()
