"""test_sweeps.py - sweeps and capacity searches over real runs
(docs/sweeps.md).

The mock's continuous-batching model with --max-batch 4 --decode-ms 10
serves requests of 10 output tokens in 10 steps of 10 ms, four at a time:
at most 4 / (10 x 10 ms) = 40 requests/s. Above that its queue, and every
time to first token, grows without bound. So:

- a search for the largest Poisson rate with TTFT p90 <= 150 ms ends
  between the values a grid of short runs over the same mock passes and
  fails, never above 40/s, with far fewer runs than a grid at the same
  resolution, and its hopeless values stop early as oversaturated;
- a search whose load generator is deliberately starved (each send burns
  3 ms of CPU: ~330 sends/s at most) ends client_bound, with no capacity;
- a sweep over listed values runs each once, labelled with the sweep,
  and gives its curve as JSON and CSV;
- bad requests are refused naming the field, and a cancel stops the
  sweep's runs.
"""

import csv
import io
import json
import math
import os
import subprocess
import tempfile
import unittest

import hrtest

CAPACITY = 40.0  # requests/s the mock model can serve (module docstring)


def base_spec(addr, duration=4, allow_client_bound=True):
    s = {"name": "sweep-test",
         "target": {"url": "http://" + addr, "model": "m", "endpoint": "chat", "stream": True},
         "workload": {"isl": {"mean": 32, "stddev": 0}, "osl": {"mean": 10, "stddev": 0},
                      "seed": 5},
         "load": {"mode": "rate", "rate": 10, "arrival": "poisson", "duration_s": duration},
         "workers": 1, "validity": {"percentile": "p90"}}
    if allow_client_bound:
        # a busy test machine can make the client verdict client_bound
        # anywhere; these tests judge the server (the starved search below
        # judges the client)
        s["client"] = {"allow_client_bound": True}
    return s


SLO = [{"metric": "time_to_first_token", "stat": "p90", "max": 150}]


class Sweeps(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--max-batch", "4", "--decode-ms", "10"))

    def wait_sweep(self, sid, timeout=300):
        import time
        deadline = time.time() + timeout * hrtest.time_scale()
        while time.time() < deadline:
            st, sw, _ = self.api.call("GET", "/sweeps/%d" % sid)
            self.assertEqual(st, 200, sw)
            if sw["state"] != "running":
                return sw
            time.sleep(0.3)
        raise AssertionError("sweep %d still running" % sid)

    def create(self, body, status=201):
        st, sw, _ = self.api.call("POST", "/sweeps", body)
        self.assertEqual(st, status, sw)
        return sw

    def test_search_matches_grid(self):
        sw = self.create({"name": "capacity", "spec": base_spec(self.mock.addr),
                          "variable": "load.rate", "slo": SLO,
                          "search": {"from": 5, "to": 100, "resolution_rel": 0.1}})
        sw = self.wait_sweep(sw["id"])
        self.assertEqual(sw["state"], "succeeded", sw.get("error"))
        res = sw["result"]
        cap = res["capacity"]
        self.assertIsNotNone(cap)
        self.assertIn(res["stop_reason"], ("resolution", "max_runs"))
        self.assertLessEqual(cap, CAPACITY)  # nothing above what the model serves passes
        fail = res["fail"]["value"]
        self.assertGreater(fail, cap)
        self.assertLessEqual(fail - cap, max(0.1 * cap, 1) + 1e-9)
        # each step's judgement follows its pooled counts
        for step in sw["steps"]:
            for o in step["slo"]:
                if o["outcome"] == "pass":
                    self.assertGreaterEqual(o["n"], 29)  # p90 needs 29 with none over
                    self.assertLess(o["over"], o["n"] * 0.1)
        # the values far above capacity were stopped as oversaturated
        top = [s for s in sw["steps"] if s["value"] == 100][0]
        self.assertEqual(top["outcome"], "fail")
        self.assertTrue(top.get("saturated"), top)
        st, run, _ = self.api.call("GET", "/runs/%d" % top["runs"][0]["id"])
        self.assertTrue(run["summary"]["saturation"]["stopped"])
        self.assertIn("oversaturated", run["summary"]["saturation"]["message"])
        self.assertLess(run["summary"]["window_s"], 4.0)  # stopped before its 4 s
        # a grid of short runs over the same mock: the search's bracket sits
        # where the grid's outcomes change (allowing one grid step of noise)
        grid_values = [10, 20, 25, 30, 35, 40, 50]
        g = self.create({"spec": base_spec(self.mock.addr), "variable": "load.rate",
                         "slo": SLO, "values": grid_values})
        g = self.wait_sweep(g["id"])
        self.assertEqual(g["state"], "succeeded", g.get("error"))
        passing = [s["value"] for s in g["steps"] if s["outcome"] == "pass"]
        self.assertTrue(passing, g["steps"])
        grid_cap = g["result"]["capacity"]
        self.assertEqual(grid_cap, max(passing))
        self.assertLessEqual(grid_cap, CAPACITY)
        self.assertLessEqual(abs(cap - grid_cap), 10.0, (cap, grid_cap))
        # far fewer runs than a grid at the search's resolution would take
        grid_runs = math.ceil((100 - 5) / (0.1 * cap)) + 1
        print("search: capacity %s in %d runs; grid: %s over %d values (a grid at the "
              "search's resolution: %d runs)" % (cap, res["runs_spent"], grid_cap,
                                                 len(grid_values), grid_runs))
        self.assertLess(res["runs_spent"], grid_runs / 2)
        # the runs are ordinary runs in the history, labelled with the sweep
        st, lst, _ = self.api.call("GET", "/runs?label.sweep=%d&limit=100" % sw["id"])
        self.assertEqual(st, 200)
        self.assertEqual(len(lst["runs"]), res["runs_spent"])

    def test_search_grows_from_the_specs_value(self):
        """`headroom sweep spec.json --variable load.rate --slo ... --wait`: no
        range given, the search doubles from the spec's own rate until a
        value fails, then narrows."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "spec.json")
            spec = base_spec(self.mock.addr, duration=3)
            spec["load"]["rate"] = 10
            with open(path, "w") as f:
                json.dump(spec, f)
            p = subprocess.run(
                [os.path.join(hrtest.BIN, "headroom"), "sweep", path, "--variable",
                 "load.rate", "--slo", "time_to_first_token:p90<=150", "--resolution-rel",
                 "0.15", "--wait", "--poll-ms", "200", "--url", "http://" + self.daemon.addr],
                capture_output=True, text=True, timeout=600 * hrtest.time_scale())
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertRegex(p.stdout, r"capacity: load.rate = [0-9.]+ \((resolution|max_runs)\)")
            self.assertIn("confidence: 0.95 per SLO", p.stdout)
            sid = int(p.stdout.split()[1])
            st, sw, _ = self.api.call("GET", "/sweeps/%d" % sid)
            values = [s["value"] for s in sw["steps"]]
            # 10, doubled while passing (40 is above what the model serves), then
            # values inside the bracket; steps are listed by value
            self.assertTrue({10, 20, 40} <= set(values), values)
            self.assertLessEqual(max(values), 80)
            self.assertIsNone(sw["params"]["search"]["to"])
            cap = sw["result"]["capacity"]
            self.assertTrue(20 <= cap <= CAPACITY, cap)
        # a search needs somewhere to start
        body = {"spec": base_spec(self.mock.addr), "variable": "load.max_concurrency",
                "slo": SLO, "search": {}}
        st, ans, _ = self.api.call("POST", "/sweeps", body)
        self.assertEqual(st, 400, ans)
        self.assertEqual(ans["error"]["field"], "search.from")

    def test_values_sweep_curve_csv_and_list(self):
        sw = self.create({"spec": base_spec(self.mock.addr, duration=2),
                          "variable": "load.rate", "values": [10, 20]})
        self.assertEqual(sw["state"], "running")
        self.assertEqual(sw["runs_spent"], 2)  # both queued at once
        sw = self.wait_sweep(sw["id"])
        self.assertEqual(sw["state"], "succeeded", sw.get("error"))
        self.assertEqual([s["value"] for s in sw["steps"]], [10, 20])
        for s in sw["steps"]:
            self.assertEqual(s["outcome"], "pass")  # no SLO: the curve only
            f = s["runs"][0]["figures"]
            self.assertGreater(f["request_throughput"], 0)
            self.assertEqual(f["time_to_first_token"]["unit"], "ms")
            st, run, _ = self.api.call("GET", "/runs/%d" % s["runs"][0]["id"])
            self.assertEqual(run["spec"]["load"]["rate"], s["value"])
            self.assertEqual(run["labels"]["sweep"], str(sw["id"]))
            self.assertAlmostEqual(f["request_throughput"],
                                   run["summary"]["metrics"]["request_throughput"]["avg"])
        st, text, hdrs = self.api.call("GET", "/sweeps/%d?format=csv" % sw["id"])
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["Content-Type"].startswith("text/csv"))
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual([float(r["value"]) for r in rows], [10, 20])
        self.assertEqual({r["state"] for r in rows}, {"succeeded"})
        st, lst, _ = self.api.call("GET", "/sweeps?limit=5")
        self.assertEqual(st, 200)
        self.assertIn(sw["id"], [x["id"] for x in lst["sweeps"]])
        # the CLI prints the same sweep
        p = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "sweeps", str(sw["id"]),
                            "--url", "http://" + self.daemon.addr], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("load.rate", p.stdout)
        self.assertIn("pass", p.stdout)

    def test_bad_requests_name_the_field(self):
        good = {"spec": base_spec(self.mock.addr), "variable": "load.rate", "slo": SLO,
                "search": {"from": 5, "to": 50}}

        def variant(**kw):
            b = json.loads(json.dumps(good))
            for k, v in kw.items():
                if v is None:
                    b.pop(k, None)
                else:
                    b[k] = v
            return b
        cases = [
            (variant(spec=None), 400, "spec"),
            (variant(variable=None), 400, "variable"),
            (variant(variable="target.url"), 400, "variable"),
            (variant(variable="load..rate"), 400, "variable"),
            (variant(values=[1, 2]), 400, "search"),
            (variant(search=None), 400, "values"),
            (variant(slo=None), 400, "slo"),
            (variant(slo=[{"metric": "time_to_first_token", "stat": "avg", "max": 1}]), 400,
             "slo[0].stat"),
            (variant(slo=[{"metric": "nope", "stat": "p99", "max": 1}]), 400, "slo[0].metric"),
            (variant(slo=[{"metric": "error_rate", "max": 2}]), 400, "slo[0].max"),
            (variant(search={"from": 50, "to": 5}), 400, "search.to"),
            (variant(search={"from": 5, "to": 50, "bogus": 1}), 400, "search.bogus"),
            (variant(search={"from": -5, "to": 50}), 400, "search.from"),
            (variant(search=None, range={"from": 1, "to": 5, "steps": 1}), 400, "range.steps"),
            (variant(search=None, values=[10, "x"]), 400, "values[1]"),
            (variant(colour="red"), 400, "colour"),
            (variant(repeats=0), 400, "repeats"),
            (variant(confidence=2), 400, "confidence"),
        ]
        spec_bad = json.loads(json.dumps(good))
        spec_bad["spec"]["load"]["mode"] = "sideways"
        cases.append((spec_bad, 400, "spec.load.mode"))
        spec_rep = json.loads(json.dumps(good))
        spec_rep["spec"]["repeat"] = {"count": 2}
        cases.append((spec_rep, 400, "spec.repeat"))
        for body, status, field in cases:
            st, ans, _ = self.api.call("POST", "/sweeps", body)
            self.assertEqual(st, status, (field, ans))
            self.assertEqual(ans["error"]["field"], field, ans)
        st, ans, _ = self.api.call("POST", "/sweeps", raw=b"{not json")
        self.assertEqual(st, 400)
        self.assertEqual(ans["error"]["code"], "invalid_json")
        for path in ("/sweeps/999999", "/sweeps/abc"):
            st, ans, _ = self.api.call("GET", path)
            self.assertEqual(st, 404, path)
            self.assertEqual(ans["error"]["field"], "id")
        st, ans, _ = self.api.call("GET", "/sweeps/1?format=xml")
        self.assertEqual(st, 400)
        self.assertEqual(ans["error"]["field"], "format")
        # the CLI refuses bad flags before asking the daemon
        p = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "sweep", "/dev/null",
                            "--variable", "load.rate", "--search", "5:x"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--search wants FROM[:TO]", p.stderr)

    def test_cancel_stops_the_runs(self):
        sw = self.create({"spec": base_spec(self.mock.addr, duration=30),
                          "variable": "load.rate", "values": [5, 6, 7]})
        st, ans, _ = self.api.call("POST", "/sweeps/%d/cancel" % sw["id"])
        self.assertEqual(st, 200, ans)
        self.assertEqual(ans["state"], "cancelled")
        for step in ans["steps"]:
            for r in step["runs"]:
                run = self.api.wait(r["id"], timeout=60)
                self.assertEqual(run["state"], "cancelled", run)
        st, ans, _ = self.api.call("POST", "/sweeps/%d/cancel" % sw["id"])
        self.assertEqual(st, 409)


class StarvedClient(unittest.TestCase):
    """A load generator that cannot keep up: the search says so and claims
    no capacity."""

    def test_search_ends_client_bound(self):
        with tempfile.TemporaryDirectory() as tmp:
            mock = hrtest.start_mock()
            env = dict(os.environ, HEADROOM_WORKER_BURN_US="3000")
            daemon = hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen",
                                  "127.0.0.1:0", "--data", tmp], "listening on", env=env)
            try:
                spec = base_spec(mock.addr, duration=2, allow_client_bound=False)
                with open(os.path.join(tmp, "spec.json"), "w") as f:
                    json.dump(spec, f)
                p = subprocess.run(
                    [os.path.join(hrtest.BIN, "headroom"), "sweep",
                     os.path.join(tmp, "spec.json"), "--variable", "load.rate",
                     "--search", "20:3000", "--slo", "time_to_first_token:p90<=500",
                     "--wait", "--poll-ms", "200", "--url", "http://" + daemon.addr],
                    capture_output=True, text=True, timeout=300 * hrtest.time_scale())
                self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
                self.assertIn("client_bound", p.stdout)
                api = hrtest.Api(daemon.addr)
                st, lst, _ = api.call("GET", "/sweeps")
                sw = lst["sweeps"][0]
                self.assertEqual(sw["state"], "client_bound")
                self.assertIn("load generator", sw["error"])
                self.assertIsNone(sw["result"])
                st, full, _ = api.call("GET", "/sweeps/%d" % sw["id"])
                top = [s for s in full["steps"] if s["value"] == 3000][0]
                self.assertEqual(top["outcome"], "client_bound")
                self.assertEqual(top["runs"][0]["verdict"], "client_bound")
            finally:
                daemon.stop()
                mock.stop()


class Saturation(hrtest.ServiceCase):
    """load.stop_on_saturation on plain runs: an open-loop run far above
    the mock's capacity stops early; one well below it runs its course."""

    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--max-batch", "4", "--decode-ms", "10"))

    def test_stop_and_no_stop(self):
        over = base_spec(self.mock.addr, duration=20)
        over["load"]["rate"] = 100
        over["load"]["stop_on_saturation"] = True
        rid = self.api.submit(over)
        run = self.api.wait(rid, timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertEqual(run["spec"]["load"]["stop_on_saturation"], True)
        sat = run["summary"]["saturation"]
        self.assertTrue(sat["stopped"])
        self.assertRegex(sat["message"], r"^oversaturated: requests in flight grew")
        self.assertLess(run["summary"]["window_s"], 12)  # well before its 20 s
        under = base_spec(self.mock.addr, duration=4)
        under["load"]["rate"] = 15
        under["load"]["stop_on_saturation"] = True
        rid = self.api.submit(under)
        run = self.api.wait(rid, timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertNotIn("saturation", run["summary"])
        self.assertGreater(run["summary"]["window_s"], 3)
        # false is the default and is not kept (fingerprints unchanged)
        plain = base_spec(self.mock.addr, duration=1)
        plain["load"]["stop_on_saturation"] = False
        rid = self.api.submit(plain)
        st, r, _ = self.api.call("GET", "/runs/%d" % rid)
        self.assertNotIn("stop_on_saturation", r["spec"]["load"])
        st, ans, _ = self.api.call("POST", "/runs", dict(plain, load=dict(plain["load"],
                                                           stop_on_saturation="yes")))
        self.assertEqual(st, 400)
        self.assertEqual(ans["error"]["field"], "load.stop_on_saturation")
        self.api.wait(rid, timeout=60)


if __name__ == "__main__":
    unittest.main()
