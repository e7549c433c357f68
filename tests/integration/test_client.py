#!/usr/bin/env python3
"""test_client.py - the load generator's self-telemetry and the client
verdict, end to end: headroomd, real workers, headroom-mock and SQLite.

Saturation is induced on purpose, two ways:
  - a worker made slow by HEADROOM_WORKER_BURN_US (CPU burnt per send, so
    its ceiling is known: 3 ms per send is at most ~330 sends/s), asked
    for three times that, must be reported client_bound for its busy loop,
    while a light run at otherwise equal settings (same slow worker, same
    mock) must say ok;
  - a plain worker asked for far more than any worker sends (30,000/s)
    must be client_bound too.
Also: the samples are stored and exported (JSON and CSV) with the fields
the verdict used; `headroom submit --wait` exits 4 for a client_bound run
unless the spec allows it; `headroom show` puts the verdict first; a
calibration measures a ceiling that later runs report against; a worker
that sends a malformed sample fails its run with a message naming the
field, and the daemon goes on.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_client.py
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

CLI = os.path.join(hrtest.BIN, "headroom")
BURN_US = 3000


def start_daemon(data, *extra, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                        "--data", data, *extra], "listening on", env=e)


def rate_spec(mock, rate, duration_s, **extra):
    s = hrtest.spec(mock, mode="rate", rate=rate, arrival="constant", duration_s=duration_s)
    del s["load"]["concurrency"]
    del s["load"]["requests"]
    s.update(extra)
    return s


class ClientVerdictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="headroom-test-")
        # a mock that answers in a few ms, so light runs hold few streams
        cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "2", "--itl-ms", "1")
        cls.daemon = start_daemon(os.path.join(cls.tmp.name, "plain"))
        cls.slow = start_daemon(os.path.join(cls.tmp.name, "slow"),
                                env={"HEADROOM_WORKER_BURN_US": str(BURN_US)})
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.slow_api = hrtest.Api(cls.slow.addr)

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.daemon.stop(), cls.slow.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0, 0]:
            raise AssertionError("headroomd, headroomd, headroom-mock exit statuses %s" % rcs)

    def run_to_end(self, api, spec):
        rid = api.submit(spec)
        run = api.wait(rid, timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        return rid, run["summary"]

    def codes(self, client):
        return [r["code"] for r in client["reasons"]]

    def test_connection_and_socket_errors_are_counted(self):
        """The samples count requests lost to connection and socket errors:
        refused connections, and connections reset mid-response."""
        resets = hrtest.start_mock("--quiet", "--fail-reset", "1")
        try:
            for target, category in (("127.0.0.1:%d" % hrtest.closed_port(), "connect"),
                                     (resets.addr, "reset")):
                rid = self.api.submit(hrtest.spec(target, concurrency=2, requests=20))
                run = self.api.wait(rid, timeout=120)
                self.assertEqual(run["state"], "failed")  # nothing succeeded
                self.assertEqual(run["summary"]["errors"], {category: 20})
                self.assertEqual(run["summary"]["client"]["headline"]["conn_errors"], 20,
                                 category)
                self.assertEqual(run["summary"]["client"]["headline"]["port_errors"], 0)
        finally:
            self.assertEqual(resets.stop(), 0)

    # --- induced saturation ------------------------------------------------------

    def test_slow_worker_overloaded_is_client_bound_light_run_ok(self):
        # ceiling ~330 sends/s at 3 ms each: 1,000/s is three times that
        _, heavy = self.run_to_end(self.slow_api, rate_spec(self.mock.addr, 1000, 2))
        c = heavy["client"]
        self.assertEqual(c["verdict"], "client_bound", c)
        self.assertIn("loop_busy", self.codes(c))
        busy = [r for r in c["reasons"] if r["code"] == "loop_busy"][0]
        self.assertEqual(busy["worker"], 0)
        self.assertRegex(busy["message"], r"^worker 0 loop busy 90% or more for \d+% of the window")
        self.assertGreaterEqual(busy["value"], 0.2)
        # the schedule could not be kept: the records say so too
        self.assertIn("schedule_lag", self.codes(c))
        self.assertIn("rate_shortfall", self.codes(c))
        self.assertGreater(c["headline"]["loop_busy_avg"], 0.8)
        self.assertLess(heavy["load"]["achieved_rate"], 700)
        self.assertGreater(c["headline"]["queued_max"], 0)

        # same slow worker, same mock, 20/s: ~6% busy
        _, light = self.run_to_end(self.slow_api, rate_spec(self.mock.addr, 20, 2))
        c = light["client"]
        hrtest.client_ok(self, c)
        self.assertEqual(c["reasons"], [])
        self.assertLess(c["headline"]["loop_busy_avg"], 0.5)

    def test_plain_worker_asked_far_too_much_is_client_bound(self):
        # far past what one worker can send on this kind of host (the
        # native transport paces ~30,000/s on one core, docs/performance.md)
        asked = 150000
        _, s = self.run_to_end(self.api, rate_spec(self.mock.addr, asked, 1.0))
        c = s["client"]
        self.assertEqual(c["verdict"], "client_bound", c)
        self.assertIn("schedule_lag", self.codes(c))
        self.assertLess(s["load"]["achieved_rate"], 0.9 * asked)
        # the worker's safety cap held its streams in check
        self.assertLessEqual(c["headline"]["in_flight_max"], 2048)

    def test_light_concurrency_run_ok(self):
        spec = hrtest.spec(self.mock.addr, concurrency=2, requests=60)
        _, s = self.run_to_end(self.api, spec)
        c = s["client"]
        hrtest.client_ok(self, c)
        self.assertEqual(c["headline"]["workers"], 1)
        self.assertEqual(len(c["workers"]), 1)
        self.assertGreaterEqual(c["workers"][0]["samples"], 1)
        self.assertEqual(c["thresholds"]["max_loop_busy"], 0.9)

    # --- the samples ----------------------------------------------------------------

    def test_samples_stored_and_exported(self):
        rid, s = self.run_to_end(self.api, rate_spec(self.mock.addr, 40, 2.5, workers=2))
        st, doc, _ = self.api.call("GET", "/runs/%d/client" % rid)
        self.assertEqual(st, 200)
        self.assertEqual(doc["run_id"], rid)
        samples = doc["samples"]
        by = {}
        for x in samples:
            by.setdefault(x["source"], []).append(x)
        self.assertEqual(sorted(by), ["daemon", "w0", "w1"])
        for w in ("w0", "w1"):
            prof = [x for x in by[w] if x["phase"] == "profiling"]
            # about one a second over 2.5 s, plus the last partial one
            self.assertGreaterEqual(len(prof), 3, prof)
            for x in prof:
                self.assertGreater(x["interval_s"], 0)
                self.assertTrue(0 <= x["loop_busy"] <= 1, x)
                self.assertGreaterEqual(x["cpu"], 0)
                self.assertEqual(len(x["late_buckets"]), 9)
                self.assertGreaterEqual(x["in_flight"], 0)
            # totals only grow, and the last one is the worker's whole run
            sent = [x["sent"] for x in by[w]]
            self.assertEqual(sent, sorted(sent))
            self.assertGreater(sent[-1], 40)
        self.assertEqual(by["w0"][-1]["sent"] + by["w1"][-1]["sent"], s["counts"]["requests"])
        d = by["daemon"][-1]
        self.assertEqual(d["record_backlog"], 0)  # everything stored at the end
        self.assertIsNone(d["loop_busy"])
        times = [x["t_ns"] for x in samples]
        self.assertEqual(times, sorted(times))
        # the verdict's headline is built from these samples
        c = s["client"]
        peak = max(x["loop_busy"] for x in samples if x["source"] != "daemon"
                   and x["phase"] == "profiling")
        self.assertAlmostEqual(c["headline"]["loop_busy_max"], peak, places=9)

        st, text, hdrs = self.api.call("GET", "/runs/%d/client?format=csv" % rid)
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["Content-Type"].startswith("text/csv"))
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual(len(rows), len(samples))
        self.assertEqual(rows[0]["source"], samples[0]["source"])
        self.assertEqual(int(rows[-1]["sent"]), samples[-1]["sent"])

        st, text, _ = self.api.call("GET", "/runs/%d/summary?format=csv" % rid)
        self.assertEqual(st, 200)
        self.assertIn("\nclient.verdict,%s," % s["client"]["verdict"], text)
        hrtest.client_ok(self, s["client"])
        self.assertIn("\nclient.loop_busy_max,,", text)

        st, err, _ = self.api.call("GET", "/runs/%d/client?format=xml" % rid)
        self.assertEqual(st, 400)
        self.assertEqual(err["error"]["field"], "format")
        st, _, _ = self.api.call("GET", "/runs/999999/client")
        self.assertEqual(st, 404)

    # --- the CLI ----------------------------------------------------------------------

    def cli(self, *args, stdin=None):
        return subprocess.run([CLI, "--url", "http://" + self.slow.addr, *args], input=stdin,
                              capture_output=True, text=True, timeout=180)

    def test_cli_exit_code_and_show(self):
        spec = rate_spec(self.mock.addr, 1000, 1.5)
        r = self.cli("submit", "-", "--wait", stdin=json.dumps(spec))
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn("client_bound", r.stderr)
        lines = r.stdout.splitlines()
        title = [i for i, l in enumerate(lines) if l.startswith("Run ")][0]
        self.assertTrue(lines[title + 1].lstrip().startswith("client    CLIENT_BOUND"), lines)
        rid = int(lines[title].split()[1].rstrip(":"))
        show = self.cli("show", str(rid))
        self.assertEqual(show.returncode, 0, show.stderr)
        self.assertIn("worker 0 loop busy", show.stdout)
        exp = self.cli("export", str(rid), "--client", "--format", "csv")
        self.assertEqual(exp.returncode, 0, exp.stderr)
        self.assertTrue(exp.stdout.startswith("source,t_ns,"))

        spec["client"] = {"allow_client_bound": True}
        r = self.cli("submit", "-", "--wait", stdin=json.dumps(spec))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("CLIENT_BOUND", r.stdout)

    def test_bad_client_spec_rejected(self):
        for client, field in (({"max_loop_busy": 2}, "client.max_loop_busy"),
                              ({"allow_client_bound": "yes"}, "client.allow_client_bound"),
                              ({"max_lag": 1}, "client.max_lag")):
            spec = rate_spec(self.mock.addr, 10, 1)
            spec["client"] = client
            st, err, _ = self.api.call("POST", "/runs", spec)
            self.assertEqual(st, 400, err)
            self.assertEqual(err["error"]["field"], field)

    # --- calibration ---------------------------------------------------------------------

    def calibrate(self, *args):
        """headroom calibrate ARGS against the plain daemon; (the finished
        process, the newest calibration, which must have succeeded)."""
        r = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "calibrate", *args],
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        st, lst, _ = self.api.call("GET", "/calibrations")
        cal = lst["calibrations"][0]
        self.assertEqual(cal["state"], "succeeded", cal)
        return r, cal

    def test_calibration_a_open_loop_steps(self):
        """Open-loop steps: each rate is judged by its run's own lag, errors
        and unsent count; a paced run is then set against the sustained
        rate, a closed-loop run against the closed-loop figure. (Runs before
        test_calibration_then_..., whose calibration is then the newest.)"""
        r, cal = self.calibrate("--osl", "8", "--duration", "0.5", "--concurrency", "4",
                                "--rates", "2000,200", "--max-lag-ms", "1000")
        self.assertIn("OPEN LOOP", r.stdout)
        # every step under the table, with its evidence
        self.assertIn("open loop (sustained: schedule lag p99 within 1,000", r.stdout)
        steps = r.stdout.split("\nOSL    RATE/S  ACHIEVED/S  LAG P99 MS  ERRORS  UNSENT  "
                               "SUSTAINED  RUN\n")[1].splitlines()
        self.assertEqual([line.split()[0:2] for line in steps], [["8", "200.00"],
                                                                 ["8", "2,000.00"]])
        self.assertEqual((cal["params"]["rates"], cal["params"]["max_lag_ms"]), ([200, 2000], 1000))
        self.assertEqual(len(cal["run_ids"]), 3)  # closed loop, then 200/s and 2000/s
        [p] = cal["result"]["points"]
        self.assertEqual(p["run_id"], cal["run_ids"][0])
        self.assertEqual([s["rate"] for s in p["open_loop"]], [200, 2000])
        self.assertEqual([line.split()[6] for line in steps],
                         ["yes" if s["sustained"] else "no" for s in p["open_loop"]])
        sustained = []
        for step, rid in zip(p["open_loop"], cal["run_ids"][1:]):
            self.assertEqual(step["run_id"], rid)
            st, run, _ = self.api.call("GET", "/runs/%d" % rid)
            self.assertEqual((run["spec"]["load"]["mode"], run["spec"]["load"]["rate"],
                              run["spec"]["load"]["arrival"]), ("rate", step["rate"], "poisson"))
            self.assertIn("at %g/s" % step["rate"], run["spec"]["name"])
            s = run["summary"]
            lag = s["metrics"]["schedule_lag"]["p99"]
            self.assertAlmostEqual(step["schedule_lag_p99_ms"], lag, delta=1e-9 * lag)
            self.assertEqual((step["errors"], step["unsent"]),
                             (s["counts"]["errors"], s["load"]["unsent"]))
            self.assertEqual(step["sustained"], lag <= 1000 and step["errors"] == 0
                             and step["unsent"] == 0, step)
            if step["sustained"]:
                sustained.append(step["rate"])
        # 100 requests in 0.5 s against a zero-delay mock: on time by far
        self.assertTrue(p["open_loop"][0]["sustained"], p["open_loop"][0])
        self.assertEqual(p["sustained_requests_per_s"], max(sustained))
        self.assertEqual(p["sustained_lower_bound"], p["open_loop"][-1]["sustained"])
        self.assertIn(">= 2,000" if p["sustained_lower_bound"] else "200", r.stdout)

        _, s = self.run_to_end(self.api, rate_spec(self.mock.addr, 4, 1))
        ceil = s["client"]["ceiling"]
        self.assertEqual((ceil["calibration_id"], ceil["basis"]), (cal["id"], "open_loop"))
        self.assertEqual(ceil["requests_per_s_per_worker"], p["sustained_requests_per_s"])
        self.assertAlmostEqual(ceil["tokens_per_s_per_worker"],
                               p["sustained_requests_per_s"] * ceil["osl"], places=6)
        _, s = self.run_to_end(self.api, hrtest.spec(self.mock.addr, concurrency=2, requests=10))
        ceil = s["client"]["ceiling"]
        self.assertEqual(ceil["basis"], "closed_loop")
        self.assertAlmostEqual(ceil["requests_per_s_per_worker"], p["requests_per_s"],
                               delta=1e-6 * p["requests_per_s"])

        for body, field in (({"rates": [0]}, "rates"), ({"rates": [300, 300]}, "rates"),
                            ({"rates": [99], "duration_s": 1}, "rates"),
                            ({"rates": list(range(1, 10))}, "rates"), ({"rates": 5}, "rates"),
                            ({"rates": ["5"]}, "rates"), ({"max_lag_ms": 0}, "max_lag_ms"),
                            ({"max_lag_ms": "1"}, "max_lag_ms")):
            st, err, _ = self.api.call("POST", "/calibrations", body)
            self.assertEqual(st, 400, err)
            self.assertEqual(err["error"]["field"], field)
        # the calibration read back: listed newest first, and in full by id
        def cli(*args):
            return subprocess.run([CLI, "--url", "http://" + self.daemon.addr, *args],
                                  capture_output=True, text=True, timeout=60)
        r2 = cli("calibrations", "--limit", "1")
        self.assertEqual(r2.returncode, 0, r2.stderr)
        lines = r2.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "STATE", "HOST", "CREATED", "OSL", "RATES"])
        self.assertEqual(len(lines), 2, r2.stdout)
        self.assertEqual(lines[1].split()[:3], [str(cal["id"]), "succeeded", cal["host"]])
        self.assertEqual(lines[1].split()[-2:], ["8", "200,2000"])
        r2 = cli("calibrations", str(cal["id"]))
        self.assertEqual(r2.returncode, 0, r2.stderr)
        # the same text calibrate printed when it ended
        self.assertEqual(r2.stdout, r.stdout.split("\n", 1)[1])
        # its runs target a mock the daemon started: show says so, not the placeholder url
        r2 = cli("show", str(cal["run_ids"][0]))
        self.assertEqual(r2.returncode, 0, r2.stderr)
        self.assertRegex(r2.stdout, r"\n  target +headroom-mock \(started for the run\)  model ")
        self.assertNotIn("127.0.0.1:0", r2.stdout)
        for args, code in ((("calibrations", "abc"), 2), (("calibrations", "424242"), 3),
                           (("calibrations", "--limit", "0"), 2)):
            r2 = cli(*args)
            self.assertEqual(r2.returncode, code, (args, r2.stdout, r2.stderr))

        for bad in ("10,,20", "10,", "1..2", "1.2.3", ".", "0x10", "1e3", "0.5", "2000000",
                    " 5", ""):
            r = subprocess.run([CLI, "--url", "http://" + self.daemon.addr, "calibrate",
                                "--rates", bad], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, (bad, r.stdout + r.stderr))
            self.assertIn("--rates", r.stderr)

    def test_calibration_stored_before_open_loop_reads_with_none(self):
        """A calibration stored by a daemon without open-loop steps (its
        params and points lack them) reads with empty steps, and paced runs
        are set against its closed-loop figures."""
        import sqlite3
        data = os.path.join(self.tmp.name, "old-calibration")
        d = start_daemon(data)
        try:
            api = hrtest.Api(d.addr)
            st, cal, _ = api.call("POST", "/calibrations",
                                  {"osl": [8], "duration_s": 0.5, "concurrency": 2})
            self.assertEqual(st, 201, cal)
            api.wait(cal["run_ids"][0])
            st, cal, _ = api.call("GET", "/calibrations/%d" % cal["id"])
            self.assertEqual(cal["state"], "succeeded", cal)
        finally:
            self.assertEqual(d.stop(), 0)
        db = sqlite3.connect(os.path.join(data, "headroom.db"))
        params = {k: v for k, v in cal["params"].items() if k not in ("rates", "max_lag_ms")}
        points = [{k: v for k, v in p.items()
                   if k not in ("open_loop", "sustained_requests_per_s", "sustained_lower_bound")}
                  for p in cal["result"]["points"]]
        db.execute("UPDATE calibrations SET params = ?, result = ? WHERE id = ?",
                   (json.dumps(params), json.dumps({"points": points}), cal["id"]))
        db.commit()
        db.close()
        d = start_daemon(data)
        try:
            api = hrtest.Api(d.addr)
            st, old, _ = api.call("GET", "/calibrations/%d" % cal["id"])
            self.assertEqual(st, 200)
            self.assertEqual(old, cal)
            _, s = self.run_to_end(api, rate_spec(self.mock.addr, 4, 1))
            self.assertEqual(s["client"]["ceiling"]["basis"], "closed_loop")
        finally:
            self.assertEqual(d.stop(), 0)

    def test_calibration_then_runs_report_their_fraction(self):
        r, cal = self.calibrate("--osl", "32,8", "--duration", "1", "--concurrency", "8")
        self.assertIn("succeeded", r.stdout)
        pts = cal["result"]["points"]
        self.assertEqual([p["osl"] for p in pts], [8, 32])
        for p in pts:
            self.assertGreater(p["requests_per_s"], 50)
            self.assertAlmostEqual(p["tokens_per_s"] / p["requests_per_s"], p["osl"], delta=0.5)
            st, run, _ = self.api.call("GET", "/runs/%d" % p["run_id"])
            self.assertEqual(run["spec"]["labels"]["calibration"], str(cal["id"]))
        # a later run is set against the newest calibration
        _, s = self.run_to_end(self.api, hrtest.spec(self.mock.addr, concurrency=2, requests=40))
        ceil = s["client"]["ceiling"]
        self.assertEqual(ceil["calibration_id"], cal["id"])
        self.assertGreater(ceil["requests_per_s_per_worker"], 0)
        self.assertAlmostEqual(ceil["fraction"],
                               ceil["achieved_requests_per_s_per_worker"] /
                               ceil["requests_per_s_per_worker"], places=6)

        for body, field in (({"osl": [0]}, "osl"), ({"duration_s": 0.1}, "duration_s"),
                            ({"osl": [8], "speed": 1}, "speed")):
            st, err, _ = self.api.call("POST", "/calibrations", body)
            self.assertEqual(st, 400, err)
            self.assertEqual(err["error"]["field"], field)
        st, _, _ = self.api.call("GET", "/calibrations/424242")
        self.assertEqual(st, 404)

    def test_calibration_whose_run_is_cancelled_while_queued_fails(self):
        # a long run holds the runner; the calibration's run waits behind it
        busy = self.api.submit(rate_spec(self.mock.addr, 5, 60))
        self.api.wait(busy, states=("running",))
        st, cal, _ = self.api.call("POST", "/calibrations",
                                   {"osl": [8], "duration_s": 0.5, "concurrency": 2})
        self.assertEqual(st, 201, cal)
        self.assertEqual(cal["state"], "running")
        (rid,) = cal["run_ids"]
        st, ans, _ = self.api.call("POST", "/runs/%d/cancel" % rid)
        self.assertEqual((st, ans["state"]), (202, "cancelled"))
        st, cal, _ = self.api.call("GET", "/calibrations/%d" % cal["id"])
        self.assertEqual(cal["state"], "failed", cal)
        self.assertIn("cancelled", cal["error"])
        self.api.call("POST", "/runs/%d/cancel" % busy)
        self.assertEqual(self.api.wait(busy)["state"], "cancelled")


# What every fake worker below does first: connect as the worker the
# daemon started and say HELLO ...
FAKE_HELLO = textwrap.dedent("""\
    #!{python}
    import json, sys, zmq
    sys.path.insert(0, {testdir!r})
    ep = sys.argv[sys.argv.index("--connect") + 1]
    idx = sys.argv[sys.argv.index("--index") + 1]
    s = zmq.Context().socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, ("w" + idx).encode())
    s.connect(ep)
    def send(t, o):
        s.send_multipart([bytes([2, t]), o if isinstance(o, bytes) else json.dumps(o).encode()])
    def recv():
        return s.recv_multipart()[0][1]
    send(1, {"index": int(idx), "pid": 1, "protocol": 2, "version": "fake",
             "mono_ns": 1, "wall_ns": 1})
    """)

# ... then take the SCHEDULE, say READY, take START.
FAKE_START = FAKE_HELLO + textwrap.dedent("""\
    assert recv() == 2
    send(3, {})
    assert recv() == 4
    """)

# ... then a sample whose busy_ns is not a number.
FAKE_WORKER = FAKE_START + textwrap.dedent("""\
    sample = {k: 0 for k in ("t_ns", "interval_ns", "cpu_ns", "wakeups", "late_max_ns",
              "in_flight", "queued", "queued_age_ns", "record_backlog", "conn_errors",
              "port_errors", "sent", "completed")}
    sample.update(busy_ns="lots", phase=1, late=[0] * 9)
    send(11, sample)
    s.setsockopt(zmq.RCVTIMEO, 10000)
    try:
        recv()  # STOP
    except zmq.Again:
        pass
    """)


# ... then a sample that is well formed but for its burst evidence: a
# read lag histogram one bucket short.
FAKE_BURST_WORKER = FAKE_START + textwrap.dedent("""\
    sample = {k: 0 for k in ("t_ns", "interval_ns", "cpu_ns", "busy_ns", "wakeups",
              "late_max_ns", "in_flight", "queued", "queued_age_ns", "record_backlog",
              "conn_errors", "port_errors", "sent", "completed", "read_lag_max_ns",
              "kernel_lag_max_ns")}
    sample.update(phase=1, late=[0] * 9, read_lag=[0] * 8, kernel_lag=[0] * 9,
                  windows=[0] * 10)
    send(11, sample)
    s.setsockopt(zmq.RCVTIMEO, 10000)
    try:
        recv()  # STOP
    except zmq.Again:
        pass
    """)


# ... then samples saying its pacer woke 50 ms or more late at every
# wake-up and that connections failed for want of a local port: the two
# rules no real run of the test suite can provoke on demand.
LATE_WORKER = FAKE_START + textwrap.dedent("""\
    for i in range(3):
        send(11, {"t_ns": (i + 1) * 10**9, "interval_ns": 10**9, "phase": 1,
                  "cpu_ns": 10**8, "busy_ns": 10**8, "wakeups": 100,
                  "late": [0] * 8 + [100], "late_max_ns": 80 * 10**6, "in_flight": 1,
                  "queued": 0, "queued_age_ns": 0, "record_backlog": 0,
                  "conn_errors": 7, "port_errors": 7, "sent": 100 * (i + 1),
                  "completed": 100 * (i + 1)})
    send(8, {"sent": 300, "completed": 300, "errors": 0, "unsent": 0, "records": 0})
    s.close(linger=5000)
    """)


# A worker that copes with closed-loop runs (one request, then DONE) and
# dies on a rate run as soon as it sees its schedule.
RATE_FAILING_WORKER = FAKE_HELLO + textwrap.dedent("""\
    import hrrecords
    f = s.recv_multipart()
    assert f[0][1] == 2
    if json.loads(f[1])["spec"]["load"]["mode"] == "rate":
        sys.exit(3)
    send(3, {})
    assert recv() == 4
    ms = 1000000
    rec = dict(seq=0, req_id=0, worker=int(idx), session=0, turn=0, phase=1, error=0,
               isl_src=3, osl_src=2, flags=1, http_status=200, intended_ns=ms, start_ns=ms,
               headers_ns=2 * ms, first_output_ns=3 * ms, end_ns=5 * ms, done_ns=5 * ms,
               isl=128, osl=3, reasoning_tokens=0, chunks=[3 * ms, 4 * ms, 5 * ms])
    send(6, hrrecords.encode_batch([rec]))
    send(8, {"sent": 1, "completed": 1, "errors": 0})
    s.close(linger=5000)
    """)


class FakeWorkerTest(unittest.TestCase):
    """Runs whose worker is a script playing the protocol (the daemon starts
    it through --worker-bin), to reach what a real worker rarely says."""

    def start_fake(self, template):
        """A daemon whose workers are the fake of template; its API. The
        daemon stays up until the test's cleanup, which checks its exit."""
        tmp = tempfile.TemporaryDirectory(prefix="headroom-test-")
        self.addCleanup(tmp.cleanup)
        fake = os.path.join(tmp.name, "fake-worker")
        with open(fake, "w") as f:
            f.write(template.replace("{python}", sys.executable).replace(
                "{testdir!r}", repr(os.path.dirname(os.path.abspath(__file__)))))
        os.chmod(fake, 0o755)
        d = start_daemon(os.path.join(tmp.name, "d"), "--worker-bin", fake)
        self.addCleanup(lambda: self.assertEqual(d.stop(), 0))
        return hrtest.Api(d.addr)

    def run_fake(self, template):
        """One run with the fake worker of template: (run, api)."""
        api = self.start_fake(template)
        rid = api.submit(hrtest.spec("127.0.0.1:%d" % hrtest.closed_port()))
        return api.wait(rid, timeout=60), api

    def test_failed_open_loop_step_is_not_sustained(self):
        """An open-loop calibration run that fails is a step not sustained
        (with its run's state and reason), not a failed calibration."""
        api = self.start_fake(RATE_FAILING_WORKER)
        st, cal, _ = api.call("POST", "/calibrations", {"osl": [8], "duration_s": 1,
                                                        "concurrency": 1, "rates": [100]})
        self.assertEqual(st, 201, cal)
        closed, rate = cal["run_ids"]
        self.assertEqual(api.wait(closed, timeout=60)["state"], "succeeded")
        run = api.wait(rate, timeout=60)
        self.assertEqual(run["state"], "failed")
        st, cal, _ = api.call("GET", "/calibrations/%d" % cal["id"])
        self.assertEqual(cal["state"], "succeeded", cal)
        [p] = cal["result"]["points"]
        [step] = p["open_loop"]
        self.assertEqual((step["rate"], step["run_id"], step["run_state"], step["reason"],
                          step["sustained"]), (100, rate, "failed", run["reason"], False))
        self.assertIn("exited", step["reason"])
        self.assertEqual((p["sustained_requests_per_s"], p["sustained_lower_bound"]),
                         (None, False))
        # a cancelled step still fails the calibration
        st, cal2, _ = api.call("POST", "/calibrations", {"osl": [8], "duration_s": 60,
                                                         "concurrency": 1, "rates": [100]})
        self.assertEqual(st, 201, cal2)
        for rid in reversed(cal2["run_ids"]):
            st, ans, _ = api.call("POST", "/runs/%d/cancel" % rid)
            self.assertEqual(st, 202, ans)
        for rid in cal2["run_ids"]:
            api.wait(rid, timeout=60)
        st, cal2, _ = api.call("GET", "/calibrations/%d" % cal2["id"])
        self.assertEqual(cal2["state"], "failed", cal2)
        self.assertIn("cancelled", cal2["error"])

    def test_timer_lateness_and_local_ports_make_a_run_client_bound(self):
        run, _ = self.run_fake(LATE_WORKER)
        cl = run["summary"]["client"]
        self.assertEqual(cl["verdict"], "client_bound", cl)
        reasons = {r["code"]: r for r in cl["reasons"]}
        self.assertEqual(set(reasons), {"timer_late", "local_ports"}, cl["reasons"])
        self.assertEqual(reasons["timer_late"]["value"], 50)  # the open bucket's edge
        self.assertEqual(reasons["local_ports"]["value"], 7)
        self.assertEqual(cl["headline"]["port_errors"], 7)
        self.assertEqual(cl["headline"]["timer_late_max_ms"], 80)

    def test_malformed_sample_fails_the_run_naming_the_field(self):
        run, api = self.run_fake(FAKE_WORKER)
        self.assertEqual(run["state"], "failed")
        self.assertIn("malformed sample", run["reason"])
        self.assertIn("'busy_ns' must be an integer", run["reason"])
        st, h, _ = api.call("GET", "/healthz")
        self.assertEqual(st, 200)

    def test_malformed_burst_evidence_fails_the_run_naming_the_field(self):
        run, api = self.run_fake(FAKE_BURST_WORKER)
        self.assertEqual(run["state"], "failed")
        self.assertIn("'read_lag' must be an array of 9 counts", run["reason"])

if __name__ == "__main__":
    unittest.main()
