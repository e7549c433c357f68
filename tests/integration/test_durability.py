"""test_durability.py - no lost data (docs/operations.md, "Durability").

Proves, with the real programs:
- a crash matrix: headroomd killed with SIGKILL while a run is queued
  behind another, just after the workers started, in the middle of
  ingestion (with the daemon's own headroom-mock), and near the summary;
  no worker or mock outlives it (/proc), a restart marks the run
  `interrupted` with a summary built from exactly the records the store
  holds, removes its stale socket, leaves nothing `running`, and runs
  what was queued;
- headroomd killed with SIGKILL while a large dataset upload is in flight
  (its temporary file growing), with a dataset uploaded before: after the
  restart only the acknowledged dataset is listed, its bytes intact, no
  temporary file is left and no file that no dataset reads (one standing
  for a crash between an upload's rename and its row is planted), and the
  same upload then succeeds;
- a worker killed with SIGKILL in each phase, at an exact point chosen by
  an LD_PRELOAD shim (tests/shims/kill_at.c) behind a --worker-bin
  wrapper: before its HELLO (while connecting), during its warm-up,
  mid-profiling, and after its final records, before DONE: the run ends
  `failed` naming the worker and the signal (never `running` for good),
  keeps every record that reached the daemon (exactly those sent, where
  the shim lets them arrive first), has a summary built from them, and
  the daemon runs the next run;
- a full disk: the data directory on a 6 MiB tmpfs in a private mount
  namespace (`unshare -m`; if one cannot be made the test FAILS with the
  reason): the run fails with the store's reason, the daemon stays up
  and /healthz answers 200 `degraded` with why; a run below the free
  space floor (--min-free-mb) fails at once;
- SIGTERM with a run in progress and a frozen worker ends within the
  documented bound, exit 0, the run `interrupted` with its summary; a
  second signal during that stop exits at once with 128 + the signal.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_durability.py -v
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

import hrtest

SHUTDOWN_LIMIT_S = 20  # server/main.c SHUTDOWN_LIMIT_S


def children(pid, name):
    out = subprocess.run(["pgrep", "-P", str(pid), "-f", name], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout * hrtest.time_scale()
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def long_spec(target, duration=60.0, workers=1, concurrency=4, osl=8):
    s = hrtest.spec("x", concurrency=concurrency)
    del s["load"]["requests"]
    s["load"]["duration_s"] = duration
    s["workers"] = workers
    s["workload"]["osl"]["mean"] = osl
    if target is None:
        s["target"] = {"mock": True, "model": "mock-model", "endpoint": "chat", "stream": True}
    else:
        s["target"]["url"] = "http://" + target
    return s


class Durability(unittest.TestCase):
    def setUp(self):
        self.tmp = hrtest.tempdir()
        self.addCleanup(self.tmp.cleanup)
        # every request takes ~0.1 + 8 * 0.05 = 0.5 s
        self.mock = hrtest.start_mock("--quiet", "--ttft-ms", "100", "--itl-ms", "50")
        self.addCleanup(self.mock.stop)
        self.daemon = None

    def tearDown(self):
        if self.daemon:
            self.daemon.stop(signal.SIGKILL)

    def start(self, *extra):
        self.daemon = hrtest.start_daemon(self.tmp.name, *extra)
        self.api = hrtest.Api(self.daemon.addr)

    def run_of(self, run_id):
        st, run, _ = self.api.call("GET", "/runs/%d" % run_id)
        self.assertEqual(st, 200)
        return run

    def records(self, run_id):
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
        self.assertEqual(st, 200)
        return [json.loads(line) for line in text.splitlines()]

    def progress(self, run_id, key):
        run = self.run_of(run_id)
        return run["state"] == "running" and (run.get("progress") or {}).get(key, 0)

    # --- crash matrix ---------------------------------------------------------

    def crash_and_recover(self, run_id, stage, queued=()):
        pid = self.daemon.p.pid
        kids = children(pid, "headroom-worker") + children(pid, "headroom-mock")
        self.daemon.stop(signal.SIGKILL)
        self.daemon = None
        for k in kids:
            wait_for(lambda: not alive(k), 5, "child %d of the killed daemon to die (%s)"
                     % (k, stage))
        self.start()
        run = self.run_of(run_id)
        self.assertIn(run["state"], ("interrupted", "succeeded"), stage)
        if run["state"] == "interrupted":
            self.assertIn("daemon stopped", run["reason"], stage)
        st, summary, _ = self.api.call("GET", "/runs/%d/summary" % run_id)
        self.assertEqual(st, 200, "%s: an interrupted run has a summary: %s" % (stage, summary))
        stored = self.records(run_id)
        self.assertEqual(summary["counts"]["requests"] + summary["counts"]["warmup"],
                         len(stored), "%s: the summary is built from what was stored" % stage)
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "run-%d.sock" % run_id)),
                         "%s: the stale socket is removed" % stage)
        st, running, _ = self.api.call("GET", "/runs?state=running")
        self.assertNotIn(run_id, [r["id"] for r in running["runs"]], stage)
        for q in queued:
            self.assertEqual(self.api.wait(q)["state"], "succeeded", stage)
        wait_for(lambda: not self.api.call("GET", "/runs?state=running")[1]["runs"], 30,
                 "nothing running")
        return run, stored

    def test_crash_while_a_run_is_queued_and_mid_ingest(self):
        """Mid-ingest with the daemon's own mock (it must die too) and a run
        queued behind (it runs after the restart)."""
        self.start()
        run_id = self.api.submit(long_spec(None, workers=2))
        queued = self.api.submit(hrtest.spec(self.mock.addr, requests=8))
        wait_for(lambda: self.progress(run_id, "records") >= 200, 30, "records")
        mocks = children(self.daemon.p.pid, "headroom-mock")
        self.assertEqual(len(mocks), 1, "the run's own headroom-mock")
        self.assertEqual(self.run_of(queued)["state"], "queued")
        run, stored = self.crash_and_recover(run_id, "mid-ingest", queued=(queued,))
        self.assertEqual(run["state"], "interrupted")
        self.assertGreater(len(stored), 0)
        self.assertEqual(self.run_of(queued)["summary"]["counts"]["valid"], 8)

    def test_crash_just_after_workers_start(self):
        self.start()
        run_id = self.api.submit(long_spec(self.mock.addr, workers=2))
        wait_for(lambda: len(children(self.daemon.p.pid, "headroom-worker")) == 2, 30,
                 "two workers")
        run, _ = self.crash_and_recover(run_id, "workers started")
        self.assertEqual(run["state"], "interrupted")

    def test_crash_near_the_summary(self):
        """Killed as the last requests complete: the summary may be under way
        (or done); either way the run ends with a summary of what is stored."""
        self.start()
        n = 3000
        s = long_spec(None, workers=2, concurrency=8)
        del s["load"]["duration_s"]
        s["load"]["requests"] = n
        run_id = self.api.submit(s)
        wait_for(lambda: self.progress(run_id, "completed") >= n * 0.95
                 or self.run_of(run_id)["state"] != "running", 120, "the end of the run")
        self.crash_and_recover(run_id, "near the summary")

    def datasets_dir(self):
        return os.path.join(self.tmp.name, "datasets")

    def test_crash_during_a_dataset_upload(self):
        self.start()
        line = json.dumps({"text": "x" * 200, "output_length": 4}) + "\n"
        st, kept, _ = self.api.call("POST", "/datasets?format=single_turn&name=kept",
                                    raw=(line * 50).encode(),
                                    headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(st, 201, kept)
        # a large upload, announced whole and sent in part: in flight
        host, port = self.daemon.addr.rsplit(":", 1)
        big = (line * 100000).encode()  # about 21 MB
        s = socket.create_connection((host, int(port)), timeout=30)
        self.addCleanup(s.close)
        s.sendall(("POST /api/v1/datasets?format=single_turn&name=half HTTP/1.1\r\n"
                   "Host: localhost\r\nContent-Type: application/octet-stream\r\n"
                   "Content-Length: %d\r\n\r\n" % len(big)).encode())
        s.sendall(big[:len(big) // 2])

        def partial():
            for n in os.listdir(self.datasets_dir()):
                p = os.path.join(self.datasets_dir(), n)
                if n.startswith(".upload-") and os.path.getsize(p) >= 4 << 20:
                    return n
        wait_for(partial, 30, "the upload's temporary file to grow past 4 MiB")
        # a crash between an upload's rename and its row leaves a file under a
        # content name that no dataset reads: stand one in for it
        orphan = os.path.join(self.datasets_dir(), "ab" * 32)
        with open(orphan, "wb") as f:
            f.write(line.encode())
        self.daemon.stop(signal.SIGKILL)
        self.daemon = None
        s.close()
        self.start()
        st, body, _ = self.api.call("GET", "/datasets")
        self.assertEqual(st, 200)
        self.assertEqual([d["id"] for d in body["datasets"]], [kept["id"]],
                         "only the acknowledged dataset is listed")
        st, got, _ = self.api.call("GET", "/datasets/%d" % kept["id"])
        self.assertEqual((st, got["sha256"], got["entries"]), (200, kept["sha256"], 50))
        left = sorted(os.listdir(self.datasets_dir()))
        self.assertEqual(left, [kept["sha256"]],
                         "no temporary file and no unread file stays after the restart")
        st, whole, _ = self.api.call("POST", "/datasets?format=single_turn&name=half",
                                     raw=big,
                                     headers={"Content-Type": "application/octet-stream"})
        self.assertEqual((st, whole.get("entries")), (201, 100000), whole)

    # --- a worker killed in each phase ---------------------------------------------

    def killing_worker(self):
        """A --worker-bin that runs the real worker, worker 0 with the
        kill_at shim configured from a file the test rewrites per run."""
        shim = os.path.join(hrtest.BIN, "..", "tests", "libhr_kill_at.so")
        self.assertTrue(os.path.exists(shim), shim)
        self.kill_conf = os.path.join(self.tmp.name, "kill.conf")
        wrapper = os.path.join(self.tmp.name, "worker-wrapper")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\n'
                    'case " $* " in *" --index 0 "*)\n'
                    '  . %s\n'
                    '  export LD_PRELOAD=%s HR_KILL_AT_TYPE HR_KILL_AT_NTH HR_KILL_AFTER_TYPE'
                    ' HR_KILL_DELAY_MS\n'
                    '  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}'
                    'verify_asan_link_order=0" ;;\n'
                    'esac\n'
                    'exec %s "$@"\n' % (self.kill_conf, os.path.abspath(shim),
                                        os.path.join(os.path.abspath(hrtest.BIN),
                                                     "headroom-worker")))
        os.chmod(wrapper, 0o755)
        return wrapper

    def test_worker_killed_in_each_phase(self):
        self.start("--worker-bin", self.killing_worker())
        HELLO, RECORDS, DONE = 1, 6, 8
        # ms before the kill, so that what was sent before has arrived (well
        # under the 5 s after which a silent worker fails the run)
        delay = int(300 * hrtest.time_scale())
        for phase, at, nth, workers, load, warmup in (
                ("before HELLO", HELLO, 1, 2, {"requests": 40}, None),
                ("during warm-up", RECORDS, 2, 1, {"requests": 40}, {"duration_s": 60}),
                ("mid-profiling", RECORDS, 3, 2, {"duration_s": 60}, None),
                ("after its final records, before DONE", DONE, 1, 1, {"requests": 24}, None)):
            with self.subTest(phase=phase):
                with open(self.kill_conf, "w") as f:
                    f.write("HR_KILL_AT_TYPE=%d\nHR_KILL_AT_NTH=%d\nHR_KILL_DELAY_MS=%d\n"
                            % (at, nth, delay))
                s = hrtest.spec(self.mock.addr, concurrency=4, **load)
                if "duration_s" in load:
                    del s["load"]["requests"]
                s["workers"] = workers
                if warmup:
                    s["warmup"] = warmup
                run_id = self.api.submit(s)
                run = self.api.wait(run_id, timeout=60)
                self.assertEqual(run["state"], "failed", run)
                self.assertRegex(run["reason"], r"worker 0 .*killed by signal 9", run)
                stored = self.records(run_id)
                summary = run["summary"]
                self.assertIsNotNone(summary, "%s: a failed run has a summary" % phase)
                self.assertEqual(summary["counts"]["requests"] + summary["counts"]["warmup"],
                                 len(stored), "%s: the summary is of what was stored" % phase)
                w0 = [r for r in stored if r["worker"] == 0]
                if at == HELLO:
                    self.assertEqual(w0, [], phase)
                elif warmup:
                    self.assertGreater(len(w0), 0, "%s: its first batch is kept" % phase)
                    self.assertEqual({r["phase"] for r in stored}, {"warmup"}, phase)
                elif at == RECORDS:
                    self.assertGreater(len(w0), 0, "%s: its first batches are kept" % phase)
                else:  # every request's record was sent before DONE: all kept
                    self.assertEqual(len(w0), 24, phase)
                    self.assertEqual(summary["counts"]["requests"], 24, phase)
                wait_for(lambda: not children(self.daemon.p.pid, "headroom-worker"), 10,
                         "%s: no worker left" % phase)
        with open(self.kill_conf, "w") as f:
            f.write("")
        run = self.api.wait(self.api.submit(hrtest.spec(self.mock.addr, requests=8)), 60)
        self.assertEqual(run["state"], "succeeded", run)

    # --- a full disk ------------------------------------------------------------

    def start_on_tmpfs(self, size, *extra):
        data = os.path.join(self.tmp.name, "small")
        os.mkdir(data)
        probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                'mount -t tmpfs -o size=%s tmpfs "$0"' % size, data],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            self.fail("cannot make a private mount namespace with a small tmpfs "
                      "(run as root, or where 'unshare -m' and mount work): %s"
                      % (probe.stderr.strip() or probe.returncode))
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                'mount -t tmpfs -o size=%s tmpfs "$0" && exec "$@"' % size, data,
                os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                "--data", data, *extra]
        self.daemon = hrtest.Proc(argv, "listening on")
        self.api = hrtest.Api(self.daemon.addr)

    def health(self):
        st, h, _ = self.api.call("GET", "/healthz")
        self.assertEqual(st, 200, "healthz stays 200 (liveness)")
        return h

    def test_disk_full_fails_the_run_with_the_reason(self):
        self.start_on_tmpfs("16m", "--min-free-mb", "0")
        self.assertEqual(self.health()["status"], "ok")
        # big records (256 chunk arrivals each) from a zero-delay mock fill 6 MiB fast
        run_id = self.api.submit(long_spec(None, duration=120, workers=2, concurrency=8,
                                           osl=256))
        try:
            run = self.api.wait(run_id, timeout=120)
        except AssertionError as e:  # say where it stands
            self.fail("%s: run %s, healthz %s" % (e, self.run_of(run_id), self.health()))
        self.assertEqual(run["state"], "failed", run)
        self.assertRegex(run["reason"], r"^the store could not write \d+ of the \d+ records "
                         r"received: .*database or disk is full")
        self.assertIsNotNone(run["summary"], "the run's end fits in the released reserve")
        h = self.health()
        self.assertEqual(h["status"], "degraded", h)
        self.assertIn("full", h["store"]["reason"])
        self.assertGreater(h["store"]["commit_failures"], 0)
        self.assertFalse(h["store"]["reserve_held"], "released for the run's end")
        # the next run cannot make its reserve again: it fails at once
        nxt = self.api.wait(self.api.submit(hrtest.spec(self.mock.addr, requests=4)), 30)
        self.assertEqual(nxt["state"], "failed")
        self.assertIn("cannot reserve", nxt["reason"])
        self.assertEqual(self.daemon.p.poll(), None, "the daemon stays up")
        st, running, _ = self.api.call("GET", "/runs?state=running")
        self.assertEqual(running["runs"], [])
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None

    def test_free_space_floor(self):
        self.start_on_tmpfs("6m", "--min-free-mb", "100")
        h = self.health()
        self.assertEqual(h["status"], "degraded", h)
        # the degraded answer is the one the API document describes
        import jsonschema
        import yaml
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "api",
                               "openapi.yaml")) as f:
            doc = yaml.safe_load(f)
        jsonschema.validate(h, doc["components"]["schemas"]["Health"])
        self.assertIn("below the floor", h["store"]["reason"])
        self.assertEqual(h["store"]["min_free_mb"], 100)
        self.assertLess(h["store"]["free_mb"], 100)
        self.assertFalse(h["store"]["last_commit_failed"])
        run = self.api.wait(self.api.submit(hrtest.spec(self.mock.addr, requests=4)), 30)
        self.assertEqual(run["state"], "failed")
        self.assertIn("--min-free-mb", run["reason"])
        self.assertEqual(self.daemon.stop(), 0)
        self.daemon = None

    # --- SIGTERM ----------------------------------------------------------------

    def frozen_run(self):
        """A run in progress whose worker is frozen (SIGSTOP): the worst case
        for an orderly stop (STOP is never answered)."""
        self.start()
        run_id = self.api.submit(long_spec(self.mock.addr))
        wait_for(lambda: self.progress(run_id, "records") >= 4, 30, "records")
        workers = children(self.daemon.p.pid, "headroom-worker")
        self.assertTrue(workers)
        for w in workers:
            os.kill(w, signal.SIGSTOP)
        return run_id, workers

    def test_sigterm_during_a_run_ends_within_the_bound(self):
        run_id, workers = self.frozen_run()
        t = time.monotonic()
        self.daemon.p.send_signal(signal.SIGTERM)
        rc = self.daemon.p.wait(SHUTDOWN_LIMIT_S + 5)
        took = time.monotonic() - t
        self.assertEqual(rc, 0, "an orderly stop within the bound exits 0")
        self.assertLessEqual(took, SHUTDOWN_LIMIT_S + 1)
        for w in workers:
            wait_for(lambda: not alive(w), 5, "the frozen worker to be killed")
        self.daemon.stop()
        self.start()
        run = self.run_of(run_id)
        self.assertEqual(run["state"], "interrupted")
        self.assertIsNotNone(run["summary"])

    def test_second_signal_exits_at_once(self):
        run_id, workers = self.frozen_run()
        self.daemon.p.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # in its STOP grace (3 s): the frozen worker never answers
        self.assertIsNone(self.daemon.p.poll(), "still stopping")
        t = time.monotonic()
        self.daemon.p.send_signal(signal.SIGINT)
        rc = self.daemon.p.wait(10)
        self.assertLess(time.monotonic() - t, 1.0 * hrtest.time_scale())
        self.assertEqual(rc, 128 + signal.SIGINT)
        for w in workers:  # PR_SET_PDEATHSIG: gone with the daemon, frozen or not
            wait_for(lambda: not alive(w), 5, "the worker to die with the daemon")
        self.daemon.stop()
        self.start()
        run = self.run_of(run_id)
        self.assertEqual(run["state"], "interrupted")
        self.assertIsNotNone(run["summary"], "recovered with a summary of what was stored")


if __name__ == "__main__":
    unittest.main()
