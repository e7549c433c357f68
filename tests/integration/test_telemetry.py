"""test_telemetry.py - GPU and server telemetry on the requests' clock: the
fake NVML library loaded through dlopen, the mock's DCGM-exporter and
vLLM-like pages, alignment of samples with request records, and runs that
go on when nothing can be measured."""

import csv
import io
import json
import os
import subprocess
import unittest

import hrtest

FAKE_NVML = os.path.join(hrtest.BIN, "..", "tests", "fake_nvml", "libnvidia-ml.so.1")


def start_mock_with_dcgm(*flags):
    """headroom-mock with a DCGM-like page; returns (proc, api addr, dcgm addr)."""
    m = hrtest.start_mock("--dcgm-listen", "127.0.0.1:0", *flags)
    line = m.p.stdout.readline().strip()
    assert line.startswith("dcgm listening on"), line
    return m, line.split()[-1]


def start_daemon_env(data, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    return hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                        "--data", data], "listening on", env=env)


class Telemetry(unittest.TestCase):
    def setUp(self):
        self.tmp = hrtest.tempdir()
        self.procs = []

    def tearDown(self):
        for p in reversed(self.procs):
            p.stop()
        self.tmp.cleanup()

    def records(self, api, run_id):
        st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
        self.assertEqual(st, 200)
        return [json.loads(x) for x in text.splitlines()]

    def test_all_sources_stored_aligned_and_summarised(self):
        mock, dcgm = start_mock_with_dcgm("--ttft-ms", "40", "--itl-ms", "20")
        self.procs.append(mock)
        d = start_daemon_env(self.tmp.name, {"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_GPUS": "2"})
        self.procs.append(d)
        api = hrtest.Api(d.addr)
        # steady light traffic with a burst of 40 requests 2 s in
        lines = [{"timestamp": 200 * i, "input_length": 8, "output_length": 20}
                 for i in range(25)]
        lines += [{"timestamp": 2000, "input_length": 8, "output_length": 20}] * 40
        lines.sort(key=lambda x: x["timestamp"])
        spec = hrtest.spec(mock.addr)
        spec["load"] = {"mode": "trace"}
        spec["workload"] = {"kind": "trace", "trace": "\n".join(json.dumps(x) for x in lines)}
        spec["telemetry"] = {"interval_ms": 100, "dcgm_urls": ["http://%s/metrics" % dcgm]}
        run = api.wait(api.submit(spec), timeout=60)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        tele = run["summary"]["telemetry"]
        status = {(s["source"], s["status"]) for s in tele["sources"]}
        self.assertIn(("nvml", "ok"), status)
        self.assertIn(("dcgm", "ok"), status)
        self.assertIn(("server", "ok"), status)
        names = {(s["source"], s["name"]) for s in tele["series"]}
        for want in [("nvml", "gpu.power_w"), ("nvml", "gpu.util_pct"), ("nvml", "gpu.energy_j"),
                     ("dcgm", "gpu.util_pct"), ("dcgm", "gpu.power_w"),
                     ("server", "server.requests_running")]:
            self.assertIn(want, names)
        self.assertGreater(tele["energy_j"], 0)
        self.assertGreater(tele["energy_per_output_token_j"], 0)
        gpus = {s["gpu"] for s in tele["series"] if s["source"] == "nvml"}
        self.assertEqual(len(gpus), 2)

        # the raw samples: baseline before the first request, final after the last
        st, text, hdrs = api.call("GET", "/runs/%d/telemetry?format=csv" % run["id"])
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["Content-Type"].startswith("text/csv"))
        rows = list(csv.DictReader(io.StringIO(text)))
        recs = self.records(api, run["id"])
        t0 = run_t0 = None
        st, tj, _ = api.call("GET", "/runs/%d/telemetry" % run["id"])
        self.assertEqual(st, 200)
        run_t0 = tj["t0_wall_ns"]
        self.assertEqual(len(tj["samples"]), len(rows))
        first_req = min(r["start_ns"] for r in recs) + run_t0
        last_req = max(r["done_ns"] for r in recs) + run_t0
        ts = [int(r["t_ns"]) for r in rows]
        self.assertLess(min(ts), first_req)
        self.assertGreater(max(ts), last_req)

        # alignment: the second with the most requests in flight is the second
        # with the highest utilisation the mock reported
        def sec(t_wall):
            return (t_wall - run_t0) // 1_000_000_000
        inflight = {}
        for r in recs:
            a, b = r["start_ns"] + run_t0, r["done_ns"] + run_t0
            s = sec(a)
            while True:
                lo = max(a, run_t0 + s * 1_000_000_000)
                hi = min(b, run_t0 + (s + 1) * 1_000_000_000)
                if hi <= lo:
                    break
                inflight[s] = inflight.get(s, 0) + (hi - lo)
                s += 1
        util = {}
        for r in rows:
            if r["source"] == "dcgm" and r["name"] == "gpu.util_pct":
                s = sec(int(r["t_ns"]))
                util[s] = max(util.get(s, 0), float(r["value"]))
        busiest = max(inflight, key=inflight.get)
        hottest = max(util, key=util.get)
        self.assertEqual(busiest, hottest, (inflight, util))

        # the CLI exports it
        out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "export", str(run["id"]),
                              "--telemetry", "--format", "csv", "--url", "http://" + d.addr],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, text)

        # the CLI shows it
        out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "show", str(run["id"]),
                              "--url", "http://" + d.addr], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Telemetry", out.stdout)
        self.assertIn("gpu.util_pct", out.stdout)
        self.assertIn("energy per output token", out.stdout)

    def test_nothing_to_measure_still_succeeds(self):
        mock = hrtest.start_mock()
        self.procs.append(mock)
        d = start_daemon_env(self.tmp.name, {"HEADROOM_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"})
        self.procs.append(d)
        api = hrtest.Api(d.addr)
        spec = hrtest.spec(mock.addr, requests=50)
        spec["telemetry"] = {"server_metrics": False,
                             "dcgm_urls": ["http://127.0.0.1:%d/metrics" % hrtest.closed_port()]}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        src = {s["source"]: s for s in run["summary"]["telemetry"]["sources"]}
        self.assertEqual(src["nvml"]["status"], "unavailable")
        self.assertIn("NVML not available", src["nvml"]["detail"])
        self.assertEqual(src["dcgm"]["status"], "unavailable")
        self.assertEqual(run["summary"]["telemetry"]["series"], [])
        self.assertIsNone(run["summary"]["telemetry"]["energy_per_output_token_j"])

    def test_scripted_power_gives_energy_per_token(self):
        script = os.path.join(self.tmp.name, "nvml.script")
        with open(script, "w") as f:
            f.write("0 power 300000\n")  # GPU 0, mW
        mock = hrtest.start_mock("--ttft-ms", "5", "--itl-ms", "5")
        self.procs.append(mock)
        d = start_daemon_env(self.tmp.name, {"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_SCRIPT": script})
        self.procs.append(d)
        api = hrtest.Api(d.addr)
        spec = hrtest.spec(mock.addr, concurrency=4)
        del spec["load"]["requests"]
        spec["load"]["duration_s"] = 1.5
        spec["telemetry"] = {"interval_ms": 100, "server_metrics": False, "dcgm_urls": []}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        t = run["summary"]["telemetry"]
        power = [s for s in t["series"] if s["name"] == "gpu.power_w"][0]
        self.assertEqual(power["avg"], 300)
        window = run["summary"]["window_s"]
        # the fake's energy counter integrates power: ~300 W over the window
        self.assertAlmostEqual(t["energy_j"] / window, 300, delta=300 * 0.25)
        osl = sum(r["osl"] for r in self.records(api, run["id"]) if r["valid"])
        self.assertAlmostEqual(t["energy_per_output_token_j"], t["energy_j"] / osl, places=9)


if __name__ == "__main__":
    unittest.main()
