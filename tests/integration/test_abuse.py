#!/usr/bin/env python3
"""test_abuse.py - headroomd stays bounded under abuse (docs/limits.md,
"Bounded under abuse"): slow or greedy clients cannot freeze the API.

- Stalled downloads: eight, then twelve, clients each open
  GET /runs/{id}/records of a run whose export is tens of MB, read a few
  bytes and stop reading (a tiny receive buffer, so the daemon's cursor
  stays open mid-export). Before the fix the export cursors held all eight
  SQLite readers and the four API threads then waited for one forever.
  Exports now read through their own pool (--export-readers, default 8):
  while the downloads stall, /healthz, /runs, /runs/{id} and its summary
  answer 200 within API_BOUND seconds each; with the pool taken (the
  evidence that the stalls are real), the next export - records or
  telemetry - is 503 `busy` with `Retry-After` at once, as are the four
  downloads past eight; once the stalled clients go, exports work again
  and read complete.
- The reader timeout: with one API reader (--readers 1) and a 1 ms wait
  (--reader-wait-ms 1), concurrent requests that overlap are answered 503
  `busy` with `Retry-After: 1` (never hang, never 500), and others 200.
- Connections: with --max-connections-per-client 4, four idle connections
  from 127.0.0.1 are kept and a fifth is closed unanswered; when one of the
  four goes, a new connection is served again.
- The run queue: with --max-queued-runs 3 and a run in progress (against a
  mock that never answers), three more submissions queue and the next is
  503 `queue_full` with `Retry-After` naming the bound; a repeat group that
  would overflow is refused whole; cancelling a queued run makes room.

Timing: API_BOUND is what the test judges (a frozen API never answers);
it is multiplied by hrtest.time_scale() as the machine may be slow.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_abuse.py -v
"""
import http.client
import json
import socket
import threading
import time
import unittest

import hrtest

SCALE = hrtest.time_scale()
# Records of the exported run: ~1.3 kB of JSONL each at osl 64, so the
# export is ~40 MB (~20 MB under the sanitizers), far over the socket
# buffers of a client that stops reading.
REQUESTS = 15000 if hrtest.sanitized() else 30000
API_BOUND = 2.0 * SCALE
EXPORT_READERS = 8  # the default of --export-readers (HR_EXPORT_POOL_SIZE)


def read_response(s, body_at_least=None):
    """Reads an answer from socket s: (status, headers, body). The whole
    body (by Content-Length), or with body_at_least its first bytes only."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionResetError("closed before an answer")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, _, v in
                   (line.partition(":") for line in lines[1:]))
    want = body_at_least if body_at_least is not None else int(headers["content-length"])
    while len(body) < want:
        chunk = s.recv(min(4096, want - len(body)) if body_at_least is None else 1024)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split(" ", 2)[1]), headers, body


def request(addr, path, method="GET", body=None, timeout=None):
    """(status, headers, parsed JSON or bytes, seconds); raises on timeout."""
    host, port = addr.rsplit(":", 1)
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout or API_BOUND * 2)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, "/api/v1" + path, body=data,
                     headers={"Content-Type": "application/json"} if data else {})
        r = conn.getresponse()
        raw = r.read()
        hdrs = dict((k.lower(), v) for k, v in r.getheaders())
    finally:
        conn.close()
    secs = time.monotonic() - t0
    if hdrs.get("content-type", "").startswith("application/json"):
        raw = json.loads(raw)
    return r.status, hdrs, raw, secs


class Stalled:
    """A download that reads its headers and a few bytes, then stops."""

    def __init__(self, addr, path):
        host, port = addr.rsplit(":", 1)
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.s.settimeout(10 * SCALE)
        self.s.connect((host, int(port)))
        self.s.sendall(("GET /api/v1%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, addr)).encode())
        status, headers, body = read_response(self.s, body_at_least=0)
        self.status, self.headers = status, headers
        # a 200 streams on: take a few bytes, then stop reading; an error is whole
        want = 2048 if status == 200 else int(headers.get("content-length", 0))
        while len(body) < want:
            body += self.s.recv(4096)
        self.body = body

    def close(self):
        self.s.close()


class StalledExportTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service()
        spec = hrtest.spec(cls.mock.addr, concurrency=32, requests=REQUESTS)
        spec["workload"]["osl"] = {"mean": 64, "stddev": 0}
        cls.run_id = cls.api.submit(spec)
        run = cls.api.wait(cls.run_id, timeout=180)
        assert run["state"] == "succeeded", run

    def api_answers(self, why):
        """The API routes answer 200, each within API_BOUND."""
        rid = self.run_id
        for path in ("/healthz", "/runs", "/runs/%d" % rid, "/runs/%d/summary" % rid,
                     "/runs?limit=1000"):
            try:
                st, _, body, secs = request(self.daemon.addr, path)
            except (socket.timeout, TimeoutError) as e:
                self.fail("%s: GET %s did not answer within %.1f s (%s)"
                          % (why, path, API_BOUND * 2, e))
            self.assertEqual(st, 200, "%s: GET %s: %s" % (why, path, body))
            self.assertLess(secs, API_BOUND, "%s: GET %s took %.2f s" % (why, path, secs))

    def assert_busy(self, status, headers, body, what):
        self.assertEqual(status, 503, "%s: %s" % (what, body))
        self.assertEqual(headers.get("retry-after"), "1", what)
        err = json.loads(body) if isinstance(body, (bytes, str)) else body
        self.assertEqual(err["error"]["code"], "busy", what)

    def stall(self, n):
        out = []
        for _ in range(n):
            out.append(Stalled(self.daemon.addr, "/runs/%d/records" % self.run_id))
            self.addCleanup(out[-1].close)
        return out

    def test_stalled_downloads(self):
        records = "/runs/%d/records" % self.run_id
        # eight stalled downloads: every export reader is held ...
        first = self.stall(EXPORT_READERS)
        for d in first:
            self.assertEqual(d.status, 200, d.body[:300])
        self.api_answers("eight stalled downloads")
        # ... which the next exports show: busy at once, not queued
        for path in (records, "/runs/%d/telemetry" % self.run_id,
                     "/runs/%d/client?format=csv" % self.run_id):
            st, hdrs, body, secs = request(self.daemon.addr, path)
            self.assert_busy(st, hdrs, body, "GET %s with the export pool taken" % path)
            self.assertLess(secs, API_BOUND, "a busy export waited %.2f s" % secs)
        # twelve: the four past the pool are refused the same way
        more = self.stall(4)
        for d in more:
            self.assert_busy(d.status, d.headers, d.body, "a ninth to twelfth download")
        self.api_answers("twelve stalled downloads")
        # the stalled clients go: their readers come back
        for d in first + more:
            d.close()
        deadline = time.monotonic() + 10 * SCALE
        while True:
            st, hdrs, body, _ = request(self.daemon.addr, records + "?format=csv",
                                        timeout=60 * SCALE)
            if st == 200 or time.monotonic() > deadline:
                break
            self.assert_busy(st, hdrs, body, "an export after the stalls")
            time.sleep(0.1)
        self.assertEqual(st, 200, "no export reader came back after the stalled clients left")
        self.assertEqual(body.count(b"\n"), REQUESTS + 1, "the CSV export is incomplete")
        self.api_answers("after the stalls")


class ReaderTimeoutTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(daemon_args=("--readers", "1", "--reader-wait-ms", "1"))
        spec = hrtest.spec(cls.mock.addr, concurrency=16, requests=3000)
        cls.ids = [cls.api.submit(spec) for _ in range(2)]
        for i in cls.ids:
            run = cls.api.wait(i, timeout=120)
            assert run["state"] == "succeeded", run

    def test_busy_when_no_reader_comes(self):
        paths = ["/compare?base=%d&head=%d" % tuple(self.ids), "/runs/%d" % self.ids[0],
                 "/healthz", "/runs?limit=1000"]
        seen = {"ok": 0, "busy": 0}
        bad = []
        stop = threading.Event()

        def client(k):
            while not stop.is_set():
                path = paths[k % len(paths)]
                try:
                    st, hdrs, body, _ = request(self.daemon.addr, path, timeout=30 * SCALE)
                except Exception as e:  # a hang or a dropped connection
                    bad.append("%s: %r" % (path, e))
                    return
                if st == 200:
                    seen["ok"] += 1
                elif (st == 503 and hdrs.get("retry-after") == "1"
                      and body["error"]["code"] == "busy"):
                    seen["busy"] += 1
                else:
                    bad.append("%s: %s %s %s" % (path, st, hdrs, body))
                    return

        threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30 * SCALE
        while time.monotonic() < deadline and not bad and (seen["busy"] < 3 or seen["ok"] < 3):
            time.sleep(0.05)
        stop.set()
        for t in threads:
            t.join()
        self.assertEqual(bad, [])
        self.assertGreaterEqual(seen["busy"], 3, seen)
        self.assertGreaterEqual(seen["ok"], 3, seen)


class ConnectionLimitTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(daemon_args=("--max-connections-per-client", "4"))

    def served(self, s):
        """Whether a request on connected socket s gets an answer."""
        s.settimeout(10 * SCALE)
        try:
            s.sendall(b"GET /api/v1/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            return read_response(s)[0] == 200
        except (ConnectionResetError, BrokenPipeError):
            return False

    def connect(self):
        host, port = self.daemon.addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
        self.addCleanup(s.close)
        return s

    def test_per_client_limit(self):
        held = [self.connect() for _ in range(4)]
        for s in held:  # all four served, and kept open (keep-alive)
            self.assertTrue(self.served(s))
        self.assertFalse(self.served(self.connect()), "a fifth connection was served")
        held[0].close()
        deadline = time.monotonic() + 10 * SCALE
        ok = False
        while not ok and time.monotonic() < deadline:
            ok = self.served(self.connect())
            time.sleep(0.05)
        self.assertTrue(ok, "no connection was served after one of the four closed")
        for s in held[1:]:
            self.assertTrue(self.served(s), "a held connection was dropped")


class QueueBoundTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(daemon_args=("--max-queued-runs", "3"))
        cls.slow = hrtest.start_mock("--quiet", "--ttft-ms", "600000")

    @classmethod
    def tearDownClass(cls):
        cls.slow.stop()
        super().tearDownClass()

    def test_queue_full(self):
        addr = self.daemon.addr
        hold = self.api.submit(hrtest.spec(self.slow.addr, concurrency=1, requests=1))
        self.addCleanup(self.api.call, "POST", "/runs/%d/cancel" % hold)
        self.api.wait(hold, timeout=30, states=("running",))
        spec = hrtest.spec(self.mock.addr)
        spec["target"]["url"] = "http://" + self.slow.addr
        queued = []
        for _ in range(3):
            st, _, body, _ = request(addr, "/runs", "POST", spec)
            self.assertEqual(st, 201, body)
            queued.append(body["id"])
            self.addCleanup(self.api.call, "POST", "/runs/%d/cancel" % body["id"])
        st, hdrs, body, _ = request(addr, "/runs", "POST", spec)
        self.assertEqual(st, 503, body)
        self.assertEqual(body["error"]["code"], "queue_full", body)
        self.assertEqual(hdrs.get("retry-after"), "60")
        self.assertIn("at most 3", body["error"]["message"])
        st, _, health, _ = request(addr, "/healthz")
        self.assertEqual((st, health["queued"], health["running"]), (200, 3, 1), health)
        # room for one: a group of two is refused whole, one run is taken
        st, _, _, _ = request(addr, "/runs/%d/cancel" % queued[0], "POST")
        self.assertEqual(st, 202)
        group = dict(spec, repeat={"count": 2})
        st, _, body, _ = request(addr, "/runs", "POST", group)
        self.assertEqual((st, body["error"]["code"]), (503, "queue_full"), body)
        st, _, body, _ = request(addr, "/runs", "POST", spec)
        self.assertEqual(st, 201, body)
        self.addCleanup(self.api.call, "POST", "/runs/%d/cancel" % body["id"])


if __name__ == "__main__":
    unittest.main()
