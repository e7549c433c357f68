"""test_lifecycle.py - runs that do not end normally: a daemon killed and
restarted with runs queued, a worker killed or frozen mid-run, cancels."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import hrtest


def worker_pids(daemon_pid):
    out = subprocess.run(["pgrep", "-P", str(daemon_pid), "-f", "headroom-worker"],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def format1(blob):
    """A stored record blob (server/runs.c, format 3) rewritten in format 1:
    without the mask that says which further counts follow, nor them (a
    record without media counts has a one-byte mask, as in format 2)."""
    pos = 1

    def varint():
        nonlocal pos
        while blob[pos] & 0x80:
            pos += 1
        pos += 1
    assert blob[0] == 3
    for _ in range(3):  # req_id, session, turn
        varint()
    pos += 5  # phase, flags, error, isl_src, osl_src
    for _ in range(4):  # http_status, isl, osl, reasoning_tokens
        varint()
    counts_at, mask = pos, blob[pos]
    assert mask < 0x20  # no media counts: one byte
    pos += 1
    for _ in range(bin(mask).count("1")):
        varint()
    return b"\x01" + blob[1:counts_at] + blob[pos:]


def slow_spec(mock_addr, duration=30.0, workers=1, concurrency=4):
    s = hrtest.spec(mock_addr, concurrency=concurrency)
    del s["load"]["requests"]
    s["load"]["duration_s"] = duration
    s["workers"] = workers
    return s


class Lifecycle(unittest.TestCase):
    def setUp(self):
        self.tmp = hrtest.tempdir()
        # every request takes ~0.1 + 8 * 0.05 = 0.5 s
        self.mock = hrtest.start_mock("--ttft-ms", "100", "--itl-ms", "50")
        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)

    def tearDown(self):
        self.daemon.stop()
        self.mock.stop()
        self.tmp.cleanup()

    def wait_records(self, run_id, n=1, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, run, _ = self.api.call("GET", "/runs/%d" % run_id)
            p = run.get("progress") or {}
            if run["state"] == "running" and p.get("records", 0) >= n:
                return run
            time.sleep(0.1)
        self.fail("run %d never reported %d records" % (run_id, n))

    def records(self, run_id):
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
        self.assertEqual(st, 200)
        return [json.loads(line) for line in text.splitlines()]

    def test_daemon_killed_then_restarted_keeps_queue_and_results(self):
        done = self.api.submit(hrtest.spec(self.mock.addr, requests=8))
        self.assertEqual(self.api.wait(done)["state"], "succeeded")
        running = self.api.submit(slow_spec(self.mock.addr))
        queued = [self.api.submit(hrtest.spec(self.mock.addr, requests=8)) for _ in range(2)]
        self.wait_records(running)
        pid = self.daemon.p.pid
        workers = worker_pids(pid)
        self.assertTrue(workers)
        self.daemon.stop(signal.SIGKILL)
        # orphaned workers get SIGTERM from the kernel and exit
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(w) for w in workers):
            time.sleep(0.1)
        for w in workers:
            self.assertFalse(alive(w), "worker %d outlived its daemon" % w)

        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)
        st, run, _ = self.api.call("GET", "/runs/%d" % running)
        self.assertEqual(run["state"], "interrupted")
        self.assertIn("daemon stopped", run["reason"])
        for q in queued:
            self.assertEqual(self.api.wait(q)["state"], "succeeded")
        st, old, _ = self.api.call("GET", "/runs/%d" % done)
        self.assertEqual(old["state"], "succeeded")
        self.assertEqual(old["summary"]["counts"]["valid"], 8)
        self.assertEqual(len(self.records(done)), 8)

    def test_records_stored_by_the_previous_format_still_read(self):
        """Stored record format 1 (before the counts behind isl/osl) reads
        back with those counts unknown and everything else unchanged; format
        2 (before the media counts) reads back whole."""
        run_id = self.api.submit(hrtest.spec(self.mock.addr, requests=8))
        self.assertEqual(self.api.wait(run_id)["state"], "succeeded")
        before = self.records(run_id)
        self.assertTrue(all(r["usage_osl"] == 8 and r["requested_osl"] == 8 for r in before))
        self.assertEqual(self.daemon.stop(), 0)
        db = sqlite3.connect(os.path.join(self.tmp.name, "headroom.db"))
        with db:
            rows = db.execute("SELECT worker, seq, data FROM records WHERE run_id = ?",
                              (run_id,)).fetchall()
            for worker, seq, data in rows:
                old = format1(data) if seq % 2 else b"\x02" + data[1:]
                db.execute("UPDATE records SET data = ? WHERE run_id = ? AND worker = ? "
                           "AND seq = ?", (old, run_id, worker, seq))
        db.close()
        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)
        after = self.records(run_id)
        counts = ("requested_osl", "usage_isl", "usage_osl", "tokenizer_isl", "tokenizer_osl")
        self.assertEqual(len(after), 8)
        for a, b in zip(after, before):
            if a["seq"] % 2 == 0:  # format 2
                self.assertEqual(a, b)
                continue
            self.assertEqual({k: a[k] for k in counts}, dict.fromkeys(counts))
            self.assertEqual({k: v for k, v in a.items() if k not in counts},
                             {k: v for k, v in b.items() if k not in counts})

    def test_graceful_stop_interrupts_and_keeps_records(self):
        run_id = self.api.submit(slow_spec(self.mock.addr))
        self.wait_records(run_id, n=4)
        self.assertEqual(self.daemon.stop(signal.SIGTERM), 0)
        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)
        st, run, _ = self.api.call("GET", "/runs/%d" % run_id)
        self.assertEqual(run["state"], "interrupted")
        rows = self.records(run_id)
        self.assertGreaterEqual(len(rows), 4)
        self.assertTrue(any(r["error"] == "cancelled" for r in rows))
        self.assertIsNotNone(run["summary"])

    def test_worker_killed_mid_run(self):
        run_id = self.api.submit(slow_spec(self.mock.addr, workers=2))
        self.wait_records(run_id, n=2)
        workers = worker_pids(self.daemon.p.pid)
        self.assertEqual(len(workers), 2)
        os.kill(workers[0], signal.SIGKILL)
        run = self.api.wait(run_id, timeout=30)
        self.assertEqual(run["state"], "failed")
        self.assertIn("killed by signal 9", run["reason"])
        self.assertGreaterEqual(len(self.records(run_id)), 2)  # kept what arrived

    def test_worker_frozen_is_declared_silent(self):
        run_id = self.api.submit(slow_spec(self.mock.addr))
        self.wait_records(run_id)
        workers = worker_pids(self.daemon.p.pid)
        os.kill(workers[0], signal.SIGSTOP)
        try:
            run = self.api.wait(run_id, timeout=30)
        finally:
            for w in workers:
                try:
                    os.kill(w, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        self.assertEqual(run["state"], "failed")
        self.assertIn("silent", run["reason"])
        self.assertGreaterEqual(len(self.records(run_id)), 1)

    def test_cancel_running_and_queued(self):
        running = self.api.submit(slow_spec(self.mock.addr))
        queued = self.api.submit(slow_spec(self.mock.addr))
        self.wait_records(running)
        st, body, _ = self.api.call("POST", "/runs/%d/cancel" % queued)
        self.assertEqual((st, body["state"]), (202, "cancelled"))
        st, body, _ = self.api.call("POST", "/runs/%d/cancel" % running)
        self.assertEqual((st, body["state"]), (202, "running"))
        t = time.time()
        run = self.api.wait(running, timeout=15)
        self.assertLess(time.time() - t, 5 * hrtest.time_scale())
        self.assertEqual(run["state"], "cancelled")
        rows = self.records(running)
        self.assertTrue(any(r["error"] == "cancelled" for r in rows))
        st, body, _ = self.api.call("POST", "/runs/%d/cancel" % running)
        self.assertEqual(st, 409)
        self.assertEqual(self.api.wait(queued)["state"], "cancelled")


# A worker whose DONE reaches the daemon after its process has exited (as a
# real one's may, from ZeroMQ's I/O thread): after START it hands its last
# messages to a messenger process and exits 0 at once; the messenger, under
# the same routing id, sends one record and DONE 0.3 s after it started.
LATE_DONE_WORKER = textwrap.dedent("""\
    #!{python}
    import json, os, subprocess, sys, time, zmq
    sys.path.insert(0, {testdir!r})
    ep = sys.argv[sys.argv.index("--connect") + 1]
    idx = sys.argv[sys.argv.index("--index") + 1]
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, ("w" + idx).encode())
    s.connect(ep)
    def send(t, o):
        s.send_multipart([bytes([2, t]), o if isinstance(o, bytes) else json.dumps(o).encode()])
    def recv():
        f = s.recv_multipart()
        return f[0][1], f[1]
    if os.environ.get("LATE_T0"):
        import hrrecords
        time.sleep(0.3)  # the daemon reaps the exited worker within 0.1 s
        t0 = int(os.environ["LATE_T0"])
        ms = 1000000
        rec = dict(seq=0, req_id=0, worker=int(idx), session=0, turn=0, phase=1, error=0,
                   isl_src=3, osl_src=2, flags=1, http_status=200, intended_ns=t0 + ms,
                   start_ns=t0 + ms, headers_ns=t0 + 2 * ms, first_output_ns=t0 + 3 * ms,
                   end_ns=t0 + 5 * ms, done_ns=t0 + 5 * ms, isl=16, osl=3,
                   reasoning_tokens=0, chunks=[t0 + 3 * ms, t0 + 4 * ms, t0 + 5 * ms])
        send(6, hrrecords.encode_batch([rec]))
        send(8, {"sent": 1, "completed": 1, "errors": 0, "records": {claim}})
        s.close(linger=5000)
        sys.exit(0)
    send(1, {"index": int(idx), "pid": os.getpid(), "protocol": 2, "version": "fake",
             "mono_ns": time.monotonic_ns(), "wall_ns": time.time_ns()})
    assert recv()[0] == 2
    send(3, {})
    t, body = recv()
    assert t == 4
    s.close(linger=1000)
    env = dict(os.environ, LATE_T0=str(json.loads(body)["t0_mono_ns"]))
    subprocess.Popen([sys.executable] + sys.argv, env=env, start_new_session=True)
    sys.exit(0)
    """)


class LateDoneTest(unittest.TestCase):
    def run_fake(self, claim):
        """A run of LATE_DONE_WORKER whose DONE says it sent `claim` records
        (it sends one)."""
        with tempfile.TemporaryDirectory(prefix="headroom-test-") as tmp:
            fake = os.path.join(tmp, "fake-worker")
            with open(fake, "w") as f:
                f.write(LATE_DONE_WORKER.replace("{python}", sys.executable).replace(
                    "{testdir!r}", repr(os.path.dirname(os.path.abspath(__file__)))).replace(
                    "{claim}", str(claim)))
            os.chmod(fake, 0o755)
            d = hrtest.start_daemon(os.path.join(tmp, "d"), "--worker-bin", fake)
            try:
                api = hrtest.Api(d.addr)
                rid = api.submit(hrtest.spec("127.0.0.1:%d" % hrtest.closed_port(),
                                             concurrency=1, requests=1))
                return api.wait(rid, timeout=30), api.call(
                    "GET", "/runs/%d/records?format=jsonl" % rid)[1]
            finally:
                self.assertEqual(d.stop(), 0)

    def test_done_arriving_after_a_clean_exit_still_counts(self):
        run, _ = self.run_fake(1)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertEqual(run["summary"]["counts"]["valid"], 1, run["summary"])

    def test_records_lost_on_the_way_fail_the_run(self):
        """DONE counts the records its worker sent: fewer arrived (lost on
        the way) fails the run, saying so, and keeps those that did."""
        run, text = self.run_fake(3)
        self.assertEqual(run["state"], "failed")
        self.assertIn("worker 0 sent 3 records but 1 arrived", run["reason"])
        self.assertEqual(len(text.splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
