#!/usr/bin/env python3
"""test_bursts.py - the client verdict catches a worker whose loop delayed
the stamping of stream reads (docs/client.md, "Bursts"), end to end:
headroomd, real workers, headroom-mock and SQLite.

The starved worker is made slow on purpose with HEADROOM_WORKER_BURN_US
(CPU burnt per send): 10 ms per send at concurrency 8 against a mock that
streams a chunk every 10 ms keeps the loop about a quarter busy on average
(under every one-second rule), but every burn holds the other streams'
next chunks unread for up to 10 ms (one chunk each: so the kernel's
receive time of the newest data a read brings is that chunk's). The
verdict must say client_bound for the read lag. The same run with an
ordinary worker must be ok, unless the kernel's receive times prove that
the shared host did not run the worker in time while its loop kept up
(then the verdict must say exactly that). Also target.prewarm:
the worker opens its slots' connections on receipt of its schedule, so
every one is accepted well before time zero (50 ms after the workers are
ready) and before any request byte; without it the requests follow their
connections at once. The evidence is
judged with wide margins: the starved run's read lag p99 is in a bucket of
5 ms or more (the burn is 10 ms), the ordinary run's loop lag within the
2 ms tolerance (its reads wait microseconds).

Runs on both transports (make check: also with HEADROOM_WORKER_TRANSPORT=curl,
where the pre-warming test is skipped: pre-warming is the native client's).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_bursts.py
"""
import os
import selectors
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

BURN_US = 10000
CURL = os.environ.get("HEADROOM_WORKER_TRANSPORT") == "curl"


def start_daemon(data, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                        "--data", data], "listening on", env=e)


def spec(mock):
    s = hrtest.spec(mock, concurrency=8, requests=64)
    s["workload"]["osl"] = {"mean": 32, "stddev": 0}
    s["target"]["endpoint"] = "completions"
    return s



def cpu_pressure_us():
    """Microseconds runnable tasks of this host have waited for a CPU
    (the 'some' total of /proc/pressure/cpu)."""
    with open("/proc/pressure/cpu") as f:
        return int(f.readline().split("total=")[1])

class Relay:
    """A TCP relay in front of the mock that notes, per connection, when it
    was accepted and when its first byte from the client came."""

    def __init__(self, upstream):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(256)
        self.addr = "127.0.0.1:%d" % self.ls.getsockname()[1]
        self.conns = []  # [accepted, first_byte or None]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.ls, selectors.EVENT_READ, None)
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            for key, _ in self.sel.select(0.05):
                if key.data is None:
                    c, _ = self.ls.accept()
                    info = [time.monotonic(), None, b""]
                    self.conns.append(info)
                    u = socket.create_connection(self.upstream)
                    self.sel.register(c, selectors.EVENT_READ, (u, info))
                    self.sel.register(u, selectors.EVENT_READ, (c, None))
                    continue
                peer, info = key.data
                try:
                    b = key.fileobj.recv(65536)
                except OSError:
                    b = b""
                if not b:
                    for x in (key.fileobj, peer):
                        try:
                            self.sel.unregister(x)
                        except (KeyError, ValueError):
                            pass
                        x.close()
                    continue
                if info is not None and info[1] is None:
                    info[1] = time.monotonic()
                    info[2] = b[:5]
                peer.sendall(b)

    def close(self):
        self.stop = True
        self.t.join()
        self.ls.close()


class BurstVerdictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="headroom-test-")
        cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "20", "--itl-ms", "10")
        cls.plain = start_daemon(os.path.join(cls.tmp.name, "plain"))
        cls.starved = start_daemon(os.path.join(cls.tmp.name, "starved"),
                                   env={"HEADROOM_WORKER_BURN_US": str(BURN_US)})

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.plain.stop(), cls.starved.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0, 0]:
            raise AssertionError("headroomd, headroomd, headroom-mock exit statuses %s" % rcs)

    def run_to_end(self, daemon, target=None, **extra):
        api = hrtest.Api(daemon.addr)
        sp = spec(target or self.mock.addr)
        sp["target"].update(extra)
        rid = api.submit(sp)
        run = api.wait(rid, timeout=120 * hrtest.time_scale())
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        return api, rid, run["summary"]

    def check_host_notes(self, s):
        """The host's figures over the run (the kernel's pressure stall
        share and the hypervisor's steal share of the host's CPU time), and
        a note naming each that is over its bar when the verdict is not ok
        or the schedule lag p99 is over 1 ms."""
        c = s["client"]
        h = c["headline"]
        named = c["verdict"] != "ok" or s["metrics"]["schedule_lag"]["p99"] > 1
        notes = {n["code"]: n for n in c["notes"]}
        for key, code, bar in (("host_cpu_wait", "host_contended", 0.05),
                               ("host_steal", "host_steal", 0.01)):
            v = h[key]
            self.assertIsNotNone(v, (key, h))  # measured where the suite runs
            self.assertGreaterEqual(v, 0, key)
            self.assertLessEqual(v, 1 if key == "host_steal" else 2, key)
            self.assertEqual(code in notes, named and v > bar, (key, v, c["notes"]))
            if code in notes:
                self.assertEqual((notes[code]["value"], notes[code]["limit"],
                                  notes[code]["worker"]), (v, bar, None))

    def test_starved_worker_is_client_bound_for_its_read_lag(self):
        api, rid, s = self.run_to_end(self.starved)
        c = s["client"]
        if os.environ.get("HEADROOM_TEST_VERBOSE"):
            print("starved:", c["headline"], c["reasons"], file=sys.stderr)
        codes = [r["code"] for r in c["reasons"]]
        self.assertEqual(c["verdict"], "client_bound", c)
        self.assertIn("read_lag", codes, c)
        h = c["headline"]
        # the host's contention measured (the suite runs where the kernel
        # keeps pressure figures); named as a cause when it was high
        wait = h["host_cpu_wait"]
        self.assertIsNotNone(wait, h)
        self.assertGreaterEqual(wait, 0)
        self.check_host_notes(s)
        self.assertGreaterEqual(h["reads"], 200)
        # the bucket holding the p99 reaches 5 ms or more (null: over 50 ms)
        self.assertTrue(h["read_lag_p99_ms"] is None or h["read_lag_p99_ms"] >= 5, h)
        r = [x for x in c["reasons"] if x["code"] == "read_lag"][0]
        self.assertEqual(r["measure"], "loop" if CURL else "kernel")
        self.assertGreaterEqual(h["read_lag_max_ms"], 1, h)
        # 5% of the TTFT p50 (the mock's 20 ms, and whatever the late
        # stamps added to it), at least 2 ms
        p50 = s["metrics"]["time_to_first_token"]["p50"]
        self.assertAlmostEqual(h["read_lag_limit_ms"], max(2.0, 0.05 * p50), places=6)
        r = [x for x in c["reasons"] if x["code"] == "read_lag"][0]
        self.assertRegex(r["message"], r"^stream reads stamped (up to|over) [\d.,]+ ms after "
                         r"(the kernel received their data|their sockets were ready)")
        self.assertIn("TTFT p50", r["message"])
        self.assertEqual(r["limit"], h["read_lag_limit_ms"])
        if CURL:  # no kernel receive times through libcurl
            self.assertEqual(h["kernel_reads"], 0)
        else:  # the kernel's receive times agree: reads waited 5 ms or more
            self.assertGreaterEqual(h["kernel_reads"], 200)
            self.assertTrue(h["kernel_lag_p99_ms"] is None or h["kernel_lag_p99_ms"] >= 5, h)
        w = c["workers"][0]
        self.assertGreaterEqual(w["reads"], 200)
        self.assertGreater(w["busy_windows"], 0)
        self.assertEqual(c["thresholds"]["read_inflation"], 0.05)
        self.assertEqual(c["thresholds"]["read_lag_floor_ms"], 2.0)

    def test_ordinary_worker_same_run_is_ok(self):
        # Other processes on these cores can hold the worker off its CPU;
        # the kernel's pressure stall figures (/proc/pressure/cpu) say how
        # long runnable tasks waited. A run judged late while they waited
        # more than 5% of it is run again (at most three times), and if
        # every try was so contended, the late verdict stands on that
        # evidence; one judged late on an uncontended host fails.
        for attempt in range(3):
            before, t0 = cpu_pressure_us(), time.monotonic()
            api, rid, s = self.run_to_end(self.plain)
            waited = (cpu_pressure_us() - before) / 1e6 / (time.monotonic() - t0)
            c = s["client"]
            late = c["verdict"] == "client_bound" or \
                [r["code"] for r in c["reasons"]] not in ([], ["host_lag"])
            if not late or waited <= 0.05:
                break
            if attempt == 2:
                self.assertEqual([r["code"] for r in c["reasons"]], ["read_lag"], c)
                return
        if os.environ.get("HEADROOM_TEST_VERBOSE"):
            print("ordinary:", c["headline"], s["metrics"]["time_to_first_token"],
                  file=sys.stderr)
        h = c["headline"]
        self.check_host_notes(s)
        self.assertGreaterEqual(h["reads"], 200)
        self.assertIsNotNone(h["read_lag_p99_ms"])
        codes = [r["code"] for r in c["reasons"]]
        if CURL and c["verdict"] != "ok":
            # through libcurl the loop's bound is all there is: a host that
            # held the worker off its CPU mid-span shows as read lag, and
            # the verdict says the host may be overcommitted
            self.assertEqual((c["verdict"], codes), ("client_bound", ["read_lag"]), c)
            self.assertIn("no worker loop was busy", c["reasons"][0]["message"])
        elif not CURL:
            # ok, or (this machine is shared) inconclusive for the host's
            # own lateness, proven by the kernel's receive times
            hrtest.client_ok(self, c)
        if not CURL or c["verdict"] == "ok":
            # the loop itself never held a read back past the tolerance
            self.assertLessEqual(h["read_lag_p99_ms"], h["read_lag_limit_ms"], h)
        if not CURL:
            self.assertGreaterEqual(h["kernel_reads"], 200)
        # 100 ms windows cover the profiling time (about 1.5 s or more)
        self.assertGreaterEqual(h["busy_windows"], 10, h)
        self.assertEqual(h["busy_windows_saturated"], 0, h)
        # the TTFT the records report is the mock's 20 ms, give or take
        ttft = s["metrics"]["time_to_first_token"]
        self.assertLess(ttft["p50"], 30, ttft)


    @unittest.skipIf(os.environ.get("HEADROOM_WORKER_TRANSPORT") == "curl",
                     "target.prewarm is the native transport's (libcurl opens its own)")
    def test_prewarm_opens_connections_before_time_zero(self):
        for prewarm in (True, False):
            # the relay stamps accepts and first bytes from a Python thread:
            # a host that held it (or the worker) off its CPU blurs the
            # 50 ms lead, so a run whose margin is lost while runnable tasks
            # waited for a CPU over 5% of it is tried again (three times
            # at most); on an uncontended host the margin must hold
            for attempt in range(3):
                relay = Relay(self.mock.addr)
                before, t0 = cpu_pressure_us(), time.monotonic()
                try:
                    extra = {"prewarm": True} if prewarm else {}
                    api, rid, s = self.run_to_end(self.plain, relay.addr, **extra)
                finally:
                    relay.close()
                waited = (cpu_pressure_us() - before) / 1e6 / (time.monotonic() - t0)
                conns = [c for c in relay.conns if c[2] == b"POST "]
                gap = (min(c[1] for c in conns) - max(c[0] for c in conns)) if conns else 0
                if (gap > 0.02) == prewarm or waited <= 0.05:
                    break
            self.assertEqual(s["counts"]["requests"], 64)
            self.assertEqual(s["counts"].get("errors", 0), 0, s["counts"])
            # the worker's connections (the daemon's own look at the
            # server, GET /v1/models and /metrics, comes through too)
            # one kept-alive connection per slot (8), whichever way
            self.assertEqual(len(conns), 8, conns)
            if prewarm:
                # every connection open before the first request byte, by
                # most of the 50 ms lead of time zero
                self.assertGreater(gap, 0.02, conns)
                _, doc, _ = api.call("GET", "/runs/%d" % rid)
                self.assertIs(doc["spec"]["target"]["prewarm"], True)
            else:
                self.assertLess(gap, 0.02, conns)
                _, doc, _ = api.call("GET", "/runs/%d" % rid)
                self.assertNotIn("prewarm", doc["spec"]["target"])  # stored only when given

    def test_prewarm_must_be_a_boolean(self):
        api = hrtest.Api(self.plain.addr)
        sp = spec(self.mock.addr)
        sp["target"]["prewarm"] = "yes"
        st, err, _ = api.call("POST", "/runs", sp)
        self.assertEqual(st, 400, err)
        self.assertEqual(err["error"]["field"], "target.prewarm")


if __name__ == "__main__":
    unittest.main()
