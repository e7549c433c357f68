"""test_telemetry.py - GPU and server telemetry on the requests' clock: the
fake NVML library loaded through dlopen, the mock's DCGM-exporter and
vLLM-like pages, alignment of samples with request records, the baseline
before the warm-up even with a stalled exporter, each GPU's name, UUID and
index, the summary CSV's telemetry rows, the clock anchors, and runs that
go on when nothing can be measured."""

import csv
import io
import json
import os
import socket
import subprocess
import threading
import time
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


class StalledExporter:
    """A listening socket that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d/metrics" % self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)  # kept open, never read or answered

    def stop(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        return 0


class Telemetry(unittest.TestCase):
    def setUp(self):
        self.tmp = hrtest.tempdir()
        self.procs = []

    def tearDown(self):
        for p in reversed(self.procs):
            p.stop()
        self.tmp.cleanup()

    def daemon(self, env_extra):
        """A headroomd on this test's data directory with env_extra in its
        environment, stopped at tearDown: (its Proc, its Api)."""
        d = start_daemon_env(self.tmp.name, env_extra)
        self.procs.append(d)
        return d, hrtest.Api(d.addr)

    def records(self, api, run_id):
        st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
        self.assertEqual(st, 200)
        return [json.loads(x) for x in text.splitlines()]

    def export(self, api, run_id):
        st, tj, _ = api.call("GET", "/runs/%d/telemetry" % run_id)
        self.assertEqual(st, 200)
        return tj

    def test_all_sources_stored_aligned_and_summarised(self):
        mock, dcgm = start_mock_with_dcgm("--ttft-ms", "40", "--itl-ms", "20")
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_GPUS": "2"})
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
        d, api = self.daemon({"HEADROOM_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"})
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
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_SCRIPT": script})
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

    def test_baseline_precedes_warmup_despite_stalled_exporter(self):
        stalled = StalledExporter()
        self.procs.append(stalled)
        mock, dcgm = start_mock_with_dcgm("--ttft-ms", "5", "--itl-ms", "5")
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML})
        spec = hrtest.spec(mock.addr, concurrency=2)
        del spec["load"]["requests"]
        spec["load"]["duration_s"] = 2
        spec["warmup"] = {"requests": 4}
        # the stalled page first: scraped in turn, it would hold the others
        # back by its whole timeout
        spec["telemetry"] = {"interval_ms": 100, "scrape_timeout_ms": 1000,
                             "dcgm_urls": [stalled.url, "http://%s/metrics" % dcgm]}
        run = api.wait(api.submit(spec), timeout=60)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        tj = self.export(api, run["id"])
        t0 = tj["t0_wall_ns"]
        recs = self.records(api, run["id"])
        warm = [r for r in recs if r["phase"] == "warmup"]
        self.assertEqual(len(warm), 4)
        first_warm = min(r["start_ns"] for r in warm) + t0
        first = {}
        for x in tj["samples"]:
            first[x["source"]] = min(first.get(x["source"], x["t_ns"]), x["t_ns"])
        self.assertEqual(set(first), {"nvml", "dcgm", "server"})
        for source, t in first.items():
            self.assertLess(t, first_warm, "%s's baseline came %.0f ms after the warm-up began"
                            % (source, (t - first_warm) / 1e6))
        src = {s["target"]: s for s in tj["sources"]}
        self.assertEqual(src[stalled.url]["status"], "unavailable")
        self.assertIn("timed out", src[stalled.url]["detail"])
        self.assertEqual(src["http://%s/metrics" % dcgm]["status"], "ok")
        # the stalled page holds back only itself: the others keep their
        # 100 ms interval instead of one pass per scrape timeout
        prof = [r for r in recs if r["phase"] == "profiling"]
        lo = min(r["start_ns"] for r in prof) + t0
        hi = max(r["done_ns"] for r in prof) + t0
        for source in ("dcgm", "server"):
            times = {x["t_ns"] for x in tj["samples"]
                     if x["source"] == source and lo <= x["t_ns"] <= hi}
            self.assertGreater(len(times), (hi - lo) / 1e9 * 10 / 3, source)

    def test_cancel_does_not_wait_for_a_stalled_baseline(self):
        stalled = StalledExporter()
        self.procs.append(stalled)
        mock = hrtest.start_mock("--quiet")
        self.procs.append(mock)
        d, api = self.daemon({})
        spec = hrtest.spec(mock.addr, concurrency=1, requests=5)
        spec["telemetry"] = {"scrape_timeout_ms": 30000, "dcgm_urls": [stalled.url]}
        rid = api.submit(spec)
        api.wait(rid, states=("running",), timeout=30)
        t = time.monotonic()
        api.call("POST", "/runs/%d/cancel" % rid)
        run = api.wait(rid, timeout=30)
        self.assertEqual(run["state"], "cancelled")
        # well under the 30 s the stalled baseline would take
        self.assertLess(time.monotonic() - t, min(10 * hrtest.time_scale(), 20),
                        "the cancel waited for the baseline")

    def test_gpu_names_uuids_and_indices(self):
        script = os.path.join(self.tmp.name, "nvml.script")
        with open(script, "w") as f:
            f.write("1 name Scripted GPU One\n"
                    "1 uuid GPU-5c819000-0000-4000-8000-000000000001\n"
                    "2 uuid err:3\n"   # no UUID: keyed by index
                    "3 name err:3\n")  # no name
        mock, dcgm = start_mock_with_dcgm("--gpus", "2")
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_GPUS": "4", "FAKE_NVML_SCRIPT": script})
        spec = hrtest.spec(mock.addr)
        spec["telemetry"] = {"interval_ms": 100, "dcgm_urls": ["http://%s/metrics" % dcgm]}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        tele = run["summary"]["telemetry"]
        want = [
            {"source": "nvml", "gpu": "GPU-fa4e0000-0000-4000-8000-000000000000", "index": 0,
             "uuid": "GPU-fa4e0000-0000-4000-8000-000000000000", "name": "Headroom Fake GPU 0"},
            {"source": "nvml", "gpu": "GPU-5c819000-0000-4000-8000-000000000001", "index": 1,
             "uuid": "GPU-5c819000-0000-4000-8000-000000000001", "name": "Scripted GPU One"},
            {"source": "nvml", "gpu": "2", "index": 2, "uuid": None,
             "name": "Headroom Fake GPU 2"},
            {"source": "nvml", "gpu": "GPU-fa4e0000-0000-4000-8000-000000000003", "index": 3,
             "uuid": "GPU-fa4e0000-0000-4000-8000-000000000003", "name": None},
        ] + [
            {"source": "dcgm", "gpu": "GPU-00000000-mock-0000-0000-%012d" % i, "index": i,
             "uuid": "GPU-00000000-mock-0000-0000-%012d" % i,
             "name": "NVIDIA H100 80GB HBM3 (headroom-mock)"} for i in range(2)]
        self.assertEqual(tele["gpus"], want)
        # every GPU series is described
        keys = {(g["source"], g["gpu"]) for g in tele["gpus"]}
        for x in tele["series"]:
            if x["gpu"]:
                self.assertIn((x["source"], x["gpu"]), keys)
        self.assertEqual(self.export(api, run["id"])["gpus"], want)

    def test_nvml_without_gpus_says_so(self):
        mock = hrtest.start_mock()
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_GPUS": "0"})
        spec = hrtest.spec(mock.addr)
        spec["telemetry"] = {"interval_ms": 100, "server_metrics": False, "dcgm_urls": []}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        tele = run["summary"]["telemetry"]
        self.assertEqual(len(tele["sources"]), 1)
        nv = tele["sources"][0]
        self.assertEqual((nv["source"], nv["status"], nv["samples"]), ("nvml", "unavailable", 0))
        self.assertIsNotNone(nv["detail"])
        self.assertIn("no GPU found", nv["detail"])
        self.assertEqual(tele["gpus"], [])

    def test_summary_csv_has_telemetry_rows(self):
        mock, dcgm = start_mock_with_dcgm("--ttft-ms", "5", "--itl-ms", "5")
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML,
                                             "FAKE_NVML_GPUS": "2"})
        spec = hrtest.spec(mock.addr, concurrency=4)
        del spec["load"]["requests"]
        spec["load"]["duration_s"] = 1
        spec["telemetry"] = {"interval_ms": 100, "dcgm_urls": ["http://%s/metrics" % dcgm]}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        tele = run["summary"]["telemetry"]
        st, text, hdrs = api.call("GET", "/runs/%d/summary?format=csv" % run["id"])
        self.assertEqual(st, 200)
        reader = csv.reader(io.StringIO(text))
        cols = next(reader)
        rows = {r[0]: dict(zip(cols, r)) for r in reader}
        for r in rows.values():
            self.assertEqual(len(r), len(cols), r)

        def key(name, x):
            k = 'telemetry.%s{source="%s"' % (name, x["source"])
            if x.get("gpu"):
                k += ',gpu="%s"' % x["gpu"]
            labels = x.get("labels") or ""
            return k + ("," + labels[1:] if labels else "}")

        def num(cell):
            return None if cell == "" else float(cell)

        # each GPU: its name in the unit column, its index in avg
        self.assertEqual(len(tele["gpus"]), 3)  # two NVML, one DCGM
        for g in tele["gpus"]:
            r = rows[key("gpu", g)]
            self.assertEqual(r["unit"], g["name"])
            self.assertEqual(num(r["avg"]), g["index"])
            self.assertEqual([c for c in cols[2:] if r[c] != "" and c != "avg"], [])
        # each series: its window statistics in their columns
        counters = gauges = hists = 0
        for x in tele["series"]:
            if x["kind"] == "counter":
                counters += 1
                r = rows[key(x["name"] + ".delta", x)]
                self.assertAlmostEqual(num(r["avg"]), x["delta"], places=6)
                if x["rate"] is not None:
                    r = rows[key(x["name"] + ".rate", x)]
                    self.assertAlmostEqual(num(r["avg"]), x["rate"], places=6)
                continue
            r = rows[key(x["name"], x)]
            gauges += x["kind"] == "gauge"
            hists += x["kind"] == "histogram"
            for c in cols[2:]:
                if c in x:
                    self.assertAlmostEqual(num(r[c]), x[c], places=6, msg=(c, x, r))
                else:
                    self.assertEqual(r[c], "", (c, x, r))
        self.assertGreater(counters, 0)
        self.assertGreater(gauges, 0)
        self.assertGreater(hists, 0)
        self.assertEqual(rows[key("gpu.power_w", {"source": "nvml", "gpu": tele["gpus"][0]["gpu"]})]
                         ["unit"], "W")
        self.assertAlmostEqual(num(rows["telemetry.energy_j"]["avg"]), tele["energy_j"], places=6)
        self.assertEqual(rows["telemetry.energy_per_output_token_j"]["unit"], "J/token")
        self.assertAlmostEqual(num(rows["telemetry.energy_per_output_token_j"]["avg"]),
                               tele["energy_per_output_token_j"], places=9)
        # the metrics come first, as before
        self.assertEqual(list(rows)[:len(run["summary"]["metrics"])],
                         list(run["summary"]["metrics"]))

    def test_clock_anchors(self):
        mock = hrtest.start_mock()
        self.procs.append(mock)
        d, api = self.daemon({"HEADROOM_NVML_LIB": FAKE_NVML})
        spec = hrtest.spec(mock.addr)
        spec["workers"] = 2
        spec["telemetry"] = {"server_metrics": False, "dcgm_urls": []}
        run = api.wait(api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        clock = self.export(api, run["id"])["clock"]
        daemon = clock["daemon"]
        self.assertEqual([w["worker"] for w in clock["workers"]], [0, 1])
        # local workers share the daemon's clocks: the same wall - monotonic
        # offset, which is what makes wall = t0_wall_ns + t_ns hold
        off = daemon["wall_ns"] - daemon["mono_ns"]
        for w in clock["workers"]:
            self.assertGreater(w["mono_ns"], daemon["mono_ns"])
            self.assertLess(abs(w["wall_ns"] - w["mono_ns"] - off), 50_000_000, w)


if __name__ == "__main__":
    unittest.main()
