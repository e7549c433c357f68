#!/usr/bin/env python3
"""test_live.py - GET /api/v1/runs/{id}/live, a run's server-sent events
(docs/api.md, "Live progress"), against the real headroomd and
headroom-mock over real sockets.

- A run followed from its submission: the stream is text/event-stream, its
  first event is hello, progress events come while it runs, and its end
  event says the state GET /runs/{id} then has; after it the daemon closes
  the stream. The last value of each second agrees with the run's
  /records: completions and failures per second of their end, sends per
  second of their send, and each second's TTFT sample count, so the
  aggregates cover every record.
- A finished run's stream is hello and end at once; an unknown run is 404.
- A queued run's stream gets hello (queued) and a keep-alive comment line
  while it waits, and its end (cancelled) when it is cancelled.
- The cap: with HR_MAX_LIVE_STREAMS (16) open, one more is 503 busy with
  Retry-After; once one is closed, a new one is accepted again.
- Roles: with tokens, no token is 401, a read token may follow a run.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_live.py -v
"""

import http.client
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402

MAX_STREAMS = 16  # HR_MAX_LIVE_STREAMS
HEARTBEAT_S = 10  # HR_LIVE_HEARTBEAT_S


class Stream:
    """One open GET /runs/{id}/live: its status, headers and events."""

    def __init__(self, addr, run_id, token=None, timeout=60):
        host, port = addr.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port),
                                               timeout=timeout * hrtest.time_scale())
        headers = {"Accept": "text/event-stream"}
        if token:
            headers["Authorization"] = "Bearer " + token
        self.conn.request("GET", "/api/v1/runs/%d/live" % run_id, headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.comments = 0

    def body(self):
        return json.loads(self.resp.read().decode())

    def next_event(self):
        """(type, data) of the next event, or None at the stream's end;
        comment lines are counted."""
        etype, data = "message", []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line == "":
                if data:
                    return etype, json.loads("\n".join(data))
                etype = "message"
                continue
            if line.startswith(":"):
                self.comments += 1
            elif line.startswith("event:"):
                etype = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())

    def wait_comment(self):
        """Reads up to the next comment line; an event before it fails."""
        while True:
            line = self.resp.readline()
            if not line:
                raise AssertionError("the stream ended before a comment line")
            line = line.decode().rstrip("\n")
            if line.startswith(":"):
                self.comments += 1
                return
            if line:
                raise AssertionError("a line before the comment: %r" % line)

    def until(self, etype):
        """Every event up to and including the first of etype."""
        seen = []
        deadline = time.time() + 120 * hrtest.time_scale()
        while True:
            self.assert_before(deadline, etype, seen)
            ev = self.next_event()
            if ev is None:
                raise AssertionError("the stream ended before %s: %s" % (etype, seen))
            seen.append(ev)
            if ev[0] == etype:
                return seen

    @staticmethod
    def assert_before(deadline, etype, seen):
        if time.time() > deadline:
            raise AssertionError("no %s event in time: %s" % (etype, seen[-5:]))

    def close(self):
        self.conn.close()


def second_of(ns):
    return ns // 1000000000


class LiveTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "10", "--itl-ms", "2",
                                     "--fail-500", "0.05", "--fail-seed", "7"))

    def records(self, rid):
        st, text, _ = self.api.call("GET", "/runs/%d/records" % rid)
        self.assertEqual(st, 200)
        return [json.loads(x) for x in text.splitlines() if x]

    def test_a_run_followed_to_its_end(self):
        spec = hrtest.spec(self.mock.addr, mode="rate", rate=40, duration_s=3)
        del spec["load"]["concurrency"]
        del spec["load"]["requests"]
        rid = self.api.submit(spec)
        s = Stream(self.daemon.addr, rid)
        self.assertEqual(s.status, 200)
        self.assertTrue(s.resp.getheader("Content-Type").startswith("text/event-stream"))
        self.assertEqual(s.resp.getheader("Cache-Control"), "no-store")
        events = s.until("end")
        self.assertIsNone(s.next_event(), "the daemon closes the stream after its end")
        s.close()
        self.assertEqual(events[0][0], "hello")
        self.assertEqual(events[0][1]["run_id"], rid)
        self.assertIn(events[0][1]["state"], ("queued", "running"))
        kinds = [e[0] for e in events]
        self.assertIn("progress", kinds)
        self.assertIn("second", kinds)
        run = self.api.wait(rid)
        self.assertEqual(events[-1][1], {"run_id": rid, "state": run["state"]})
        self.assertEqual(run["state"], "succeeded")
        progress = [e[1] for e in events if e[0] == "progress"]
        for p in progress:
            self.assertEqual(p["run_id"], rid)
            self.assertIn(p["phase"], ("starting", "warmup", "profiling"))
        self.assertGreater(progress[-1]["completed"] + progress[-1]["errors"], 0)
        # the last value of each second: every record counted where it fell
        secs = {}
        for etype, d in events:
            if etype == "second":
                secs[d["t_s"]] = d
        recs = self.records(rid)
        self.assertGreater(len(recs), 40)
        want = {}

        def add(t, key):
            if t is not None and t >= 0:
                want.setdefault(second_of(t), {}).setdefault(key, 0)
                want[second_of(t)][key] += 1

        for r in recs:
            end = r["end_ns"] if r["end_ns"] is not None else r["done_ns"]
            add(r["intended_ns"], "intended")
            add(r["start_ns"], "sent")
            if r["valid"]:
                add(end, "completed")
                if r.get("time_to_first_token") is not None:
                    add(end, "ttft")
            else:
                t = end if end is not None else (r["start_ns"] if r["start_ns"] is not None
                                                 else r["intended_ns"])
                add(t, "errors")
        self.assertTrue(any(not r["valid"] for r in recs), "the mock failed some requests")
        self.assertEqual(sorted(set(want) - set(secs)), [], "seconds never sent")
        for t in set(secs) - set(want):  # a second with only a progress sample
            for key in ("intended", "sent", "completed", "errors"):
                self.assertEqual(secs[t][key], 0)
        for t, w in want.items():
            got = secs[t]
            for key in ("intended", "sent", "completed", "errors"):
                self.assertEqual(got[key], w.get(key, 0), "second %d %s" % (t, key))
            ttft = got["time_to_first_token"]
            self.assertEqual(ttft["count"] if ttft else 0, w.get("ttft", 0), "second %d" % t)
            if ttft:
                self.assertLessEqual(ttft["p50"], ttft["p99"])
                self.assertGreater(ttft["p50"], 0)
            self.assertGreaterEqual(got["output_tokens_per_s"], 0)
        # a finished run: hello and end at once
        s = Stream(self.daemon.addr, rid)
        events = s.until("end")
        self.assertEqual(events[0], ("hello", {"run_id": rid, "state": "succeeded",
                                               "heartbeat_s": HEARTBEAT_S, "max_s": 900}))
        self.assertIsNone(s.next_event())
        s.close()

    def test_unknown_run(self):
        s = Stream(self.daemon.addr, 999999)
        self.assertEqual(s.status, 404)
        self.assertEqual(s.body()["error"]["code"], "not_found")
        s.close()

    def test_cap_heartbeat_and_queued_cancel(self):
        spec = hrtest.spec(self.mock.addr, concurrency=1, duration_s=600)
        del spec["load"]["requests"]
        long_id = self.api.submit(spec)
        queued_id = self.api.submit(hrtest.spec(self.mock.addr))
        try:
            self.api.wait(long_id, states=("running",))
            streams = []
            try:
                # a queued run's stream: hello, then keep-alive comments
                q = Stream(self.daemon.addr, queued_id)
                streams.append(q)
                self.assertEqual(q.until("hello")[-1][1]["state"], "queued")
                for _ in range(MAX_STREAMS - 1):
                    s = Stream(self.daemon.addr, long_id)
                    self.assertEqual(s.status, 200)
                    self.assertEqual(s.until("hello")[-1][1]["state"], "running")
                    streams.append(s)
                extra = Stream(self.daemon.addr, long_id)
                self.assertEqual(extra.status, 503)
                self.assertEqual(extra.resp.getheader("Retry-After"), "1")
                self.assertEqual(extra.body()["error"]["code"], "busy")
                extra.close()
                # the running run's streams carry its progress
                self.assertTrue(streams[1].until("progress"))
                # one closed: the daemon notices at its next write, then takes a new one
                streams.pop().close()
                deadline = time.time() + 30 * hrtest.time_scale()
                while True:
                    s = Stream(self.daemon.addr, long_id)
                    if s.status == 200:
                        streams.append(s)
                        break
                    self.assertEqual(s.status, 503)
                    s.close()
                    self.assertLess(time.time(), deadline, "the closed stream was never freed")
                    time.sleep(0.2)
                # the queued run's stream: a comment line while it waits
                # (heartbeat), then its end when it is cancelled
                q.wait_comment()
                self.assertEqual(q.comments, 1)
                st, _, _ = self.api.call("POST", "/runs/%d/cancel" % queued_id)
                self.assertEqual(st, 202)
                self.assertEqual(q.until("end")[-1][1], {"run_id": queued_id,
                                                         "state": "cancelled"})
                # the long run cancelled: each of its streams ends
                st, _, _ = self.api.call("POST", "/runs/%d/cancel" % long_id)
                self.assertEqual(st, 202)
                for s in streams[1:]:
                    self.assertEqual(s.until("end")[-1][1]["state"], "cancelled")
            finally:
                for s in streams:
                    s.close()
        finally:
            for rid in (long_id, queued_id):
                self.api.call("POST", "/runs/%d/cancel" % rid)
            self.api.wait(long_id)


class LiveAuthTest(unittest.TestCase):
    def test_roles(self):
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        headroomd = os.path.join(hrtest.BIN, "headroomd")

        def token(name, role):
            r = subprocess.run([headroomd, "token", "create", "--name", name, "--role", role,
                                "--data", tmp.name], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.strip()

        reader, submitter = token("viewer", "read"), token("ci", "submit")
        mock = hrtest.start_mock("--quiet")
        self.addCleanup(lambda: self.assertEqual(mock.stop(), 0))
        d = hrtest.start_daemon(tmp.name)
        self.addCleanup(lambda: self.assertEqual(d.stop(), 0))
        api = hrtest.Api(d.addr)
        st, body, _ = api.call("POST", "/runs", hrtest.spec(mock.addr),
                               headers={"Authorization": "Bearer " + submitter})
        self.assertEqual(st, 201, body)
        rid = body["id"]
        s = Stream(d.addr, rid)
        self.assertEqual(s.status, 401)
        self.assertEqual(s.body()["error"]["code"], "unauthorized")
        s.close()
        s = Stream(d.addr, rid, token="hr_" + "x" * 43)
        self.assertEqual(s.status, 401)
        s.close()
        s = Stream(d.addr, rid, token=reader)
        self.assertEqual(s.status, 200)
        events = s.until("end")
        self.assertEqual(events[0][0], "hello")
        self.assertIn(events[-1][1]["state"], ("succeeded", "failed"))
        s.close()


if __name__ == "__main__":
    unittest.main()
