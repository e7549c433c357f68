#!/usr/bin/env python3
"""test_bursts.py - the client verdict catches a worker whose loop delayed
the stamping of stream reads (docs/client.md, "Bursts"), end to end:
headroomd, real workers, headroom-mock and SQLite.

The starved worker is made slow on purpose with HEADROOM_WORKER_BURN_US
(CPU burnt per send): 5 ms per send at concurrency 4 against a mock that
streams a chunk every 2 ms keeps the loop about a quarter busy on average
(under every one-second rule), but every burn holds the other streams'
chunks unread for up to 5 ms. The verdict must say client_bound for the
read lag. The same run with an ordinary worker must be ok. The evidence is
judged with wide margins: the starved run's read lag p99 is in a bucket of
2 ms or more (the burn is 5 ms), the ordinary run's within the 1 ms
tolerance (its reads wait microseconds).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_bursts.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

BURN_US = 5000


def start_daemon(data, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                        "--data", data], "listening on", env=e)


def spec(mock):
    s = hrtest.spec(mock, concurrency=4, requests=120)
    s["workload"]["osl"] = {"mean": 32, "stddev": 0}
    s["target"]["endpoint"] = "completions"
    return s


class BurstVerdictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="headroom-test-")
        cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "20", "--itl-ms", "2")
        cls.plain = start_daemon(os.path.join(cls.tmp.name, "plain"))
        cls.starved = start_daemon(os.path.join(cls.tmp.name, "starved"),
                                   env={"HEADROOM_WORKER_BURN_US": str(BURN_US)})

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.plain.stop(), cls.starved.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0, 0]:
            raise AssertionError("headroomd, headroomd, headroom-mock exit statuses %s" % rcs)

    def run_to_end(self, daemon):
        api = hrtest.Api(daemon.addr)
        rid = api.submit(spec(self.mock.addr))
        run = api.wait(rid, timeout=120 * hrtest.time_scale())
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        return api, rid, run["summary"]

    def test_starved_worker_is_client_bound_for_its_read_lag(self):
        api, rid, s = self.run_to_end(self.starved)
        c = s["client"]
        if os.environ.get("HEADROOM_TEST_VERBOSE"):
            print("starved:", c["headline"], c["reasons"], file=sys.stderr)
        codes = [r["code"] for r in c["reasons"]]
        self.assertEqual(c["verdict"], "client_bound", c)
        self.assertIn("read_lag", codes, c)
        h = c["headline"]
        self.assertGreaterEqual(h["reads"], 200)
        # the bucket holding the p99 reaches 2 ms or more (null: over 50 ms)
        self.assertTrue(h["read_lag_p99_ms"] is None or h["read_lag_p99_ms"] >= 2, h)
        self.assertGreaterEqual(h["read_lag_max_ms"], 1, h)
        # 5% of the TTFT p50 (the mock's 20 ms and a little), at least 1 ms
        self.assertTrue(1.0 <= h["read_lag_limit_ms"] <= 1.5, h)
        r = [x for x in c["reasons"] if x["code"] == "read_lag"][0]
        self.assertRegex(r["message"], r"^stream reads stamped (up to|over) [\d.,]+ ms after")
        self.assertIn("TTFT p50", r["message"])
        self.assertEqual(r["limit"], h["read_lag_limit_ms"])
        w = c["workers"][0]
        self.assertGreaterEqual(w["reads"], 200)
        self.assertGreater(w["busy_windows"], 0)
        self.assertEqual(c["thresholds"]["read_inflation"], 0.05)
        self.assertEqual(c["thresholds"]["read_lag_floor_ms"], 1.0)

    def test_ordinary_worker_same_run_is_ok(self):
        api, rid, s = self.run_to_end(self.plain)
        c = s["client"]
        if os.environ.get("HEADROOM_TEST_VERBOSE"):
            print("ordinary:", c["headline"], s["metrics"]["time_to_first_token"],
                  file=sys.stderr)
        self.assertEqual(c["verdict"], "ok", c)
        h = c["headline"]
        self.assertGreaterEqual(h["reads"], 200)
        self.assertIsNotNone(h["read_lag_p99_ms"])
        self.assertLessEqual(h["read_lag_p99_ms"], h["read_lag_limit_ms"], h)
        # 100 ms windows cover the profiling time (about 1.5 s or more)
        self.assertGreaterEqual(h["busy_windows"], 10, h)
        self.assertEqual(h["busy_windows_saturated"], 0, h)
        # the TTFT the records report is the mock's 20 ms, give or take
        ttft = s["metrics"]["time_to_first_token"]
        self.assertLess(ttft["p50"], 30, ttft)


if __name__ == "__main__":
    unittest.main()
