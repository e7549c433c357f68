#!/usr/bin/env python3
"""test_export_memory.py - the records export streams: headroomd serves
GET /api/v1/runs/{id}/records?format=jsonl|csv from a cursor as the client
reads (server/api.c), so its memory does not grow with the run.

One run against headroom-mock with zero delay makes many small records
cheaply (150,000 records; 80,000 under the sanitizers, which are several
times slower). Each format is then read by a slow client first (small
reads with pauses, so a server that runs ahead of its client would fill its
memory meanwhile), then to the end. The daemon's peak resident memory over
the export is taken from /proc/PID/status: VmHWM after resetting it with
`echo 5 > /proc/PID/clear_refs` just before the request, and VmRSS sampled
every 2 ms by a thread (the only measure where the reset is refused). The
peak growth over the resident memory before the request must be a small
fraction of the bytes exported (tens of MB: an export held in memory
would grow the daemon by at least its size) and under a fixed bound, and
the export must be complete: one row per request, every row parses, every
request index exactly once.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_export_memory.py
"""
import csv
import http.client
import io
import json
import threading
import time
import unittest

import hrtest

SANITIZED = hrtest.sanitized()
REQUESTS = 80000 if SANITIZED else 150000
OSL = 8
# The export must be at least RATIO times the daemon's peak growth, and the
# growth under GROWTH_MAX. Measured on 2 CPUs: growth 0.2-2.5 MiB (SQLite's
# page cache, the row buffer, a thread's first allocations), exports of
# 30 MB (CSV) and 135 MB (JSONL); under ASan 16 and 65 MB. A daemon that
# generates the export ahead of its client grows by more than its size.
RATIO = 4
GROWTH_MAX = 12 << 20
# Sizes below which the test would prove nothing (checked, not assumed).
MIN_BYTES = {"jsonl": 40 << 20, "csv": 12 << 20}
# The slow client: SLOW_READ bytes every SLOW_PAUSE s, for SLOW_FOR s.
SLOW_READ, SLOW_PAUSE, SLOW_FOR = 64 << 10, 0.02, 1.0


def proc_status(pid):
    """VmRSS and VmHWM of pid, in bytes."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, val = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(val.split()[0]) * 1024
    return out


def reset_hwm(pid):
    """Resets pid's peak resident size to its current one; False if refused."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
    except OSError:
        return False
    st = proc_status(pid)
    return st["VmHWM"] <= st["VmRSS"] + (256 << 10)


class RssSampler(threading.Thread):
    """The largest VmRSS of pid seen while running."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.n = pid, 0, 0
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            self.peak = max(self.peak, proc_status(self.pid)["VmRSS"])
            self.n += 1
            time.sleep(0.002)

    def finish(self):
        self.stop_ev.set()
        self.join()
        return self.peak


class Rows:
    """Splits a streamed body into lines and checks each as it arrives."""

    def __init__(self, fmt):
        self.fmt, self.rest, self.rows, self.bytes = fmt, b"", 0, 0
        self.req_ids, self.header = set(), None

    def feed(self, data):
        self.bytes += len(data)
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            self.row(line.decode())

    def row(self, text):
        if self.fmt == "jsonl":
            r = json.loads(text)
            req_id = r["req_id"]
            if r["status"] != 200 or len(r["chunk_offsets_ns"]) != r["n_chunks"]:
                raise AssertionError("unexpected row %r" % text[:300])
        else:
            cells = next(csv.reader(io.StringIO(text)))
            if self.header is None:
                self.header = cells
                return
            if len(cells) != len(self.header):
                raise AssertionError("%d cells, header has %d: %r"
                                     % (len(cells), len(self.header), text[:300]))
            req_id = int(cells[self.header.index("req_id")])
        self.rows += 1
        self.req_ids.add(req_id)


class ExportMemoryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.mock = hrtest.start_mock("--quiet")
        cls.addClassCleanup(cls.mock.stop)
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.addClassCleanup(cls.daemon.stop)
        cls.api = hrtest.Api(cls.daemon.addr)
        spec = hrtest.spec(cls.mock.addr, concurrency=64, requests=REQUESTS)
        spec["workload"]["osl"] = {"mean": OSL, "stddev": 0}
        t0 = time.monotonic()
        cls.run_id = cls.api.submit(spec)
        run = cls.api.wait(cls.run_id, timeout=240)
        cls.run_s = time.monotonic() - t0
        assert run["state"] == "succeeded", run

    @classmethod
    def tearDownClass(cls):
        # a clean exit (under ASan: no leak, no error report)
        rc = cls.daemon.stop()
        assert rc == 0, "headroomd exited %s" % rc

    def export(self, fmt):
        """Reads the export slowly, then to the end; returns (Rows, peak
        growth in bytes, how it was measured, seconds)."""
        pid = self.daemon.p.pid
        hwm = reset_hwm(pid)
        base = proc_status(pid)["VmRSS"]
        sampler = RssSampler(pid)
        sampler.start()
        rows = Rows(fmt)
        t0 = time.monotonic()
        conn = http.client.HTTPConnection(self.daemon.addr, timeout=60)
        try:
            conn.request("GET", "/api/v1/runs/%d/records?format=%s" % (self.run_id, fmt))
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            slow_until = time.monotonic() + SLOW_FOR
            while time.monotonic() < slow_until:
                rows.feed(resp.read(SLOW_READ))
                time.sleep(SLOW_PAUSE)
            while True:
                data = resp.read(1 << 20)
                if not data:
                    break
                rows.feed(data)
            peak = sampler.finish()
            if hwm:
                peak = max(peak, proc_status(pid)["VmHWM"])
        finally:
            sampler.finish()
            conn.close()
        how = ("VmHWM after clear_refs and " if hwm else "") + \
            "%d VmRSS samples" % sampler.n
        return rows, max(0, peak - base), how, time.monotonic() - t0

    def check(self, fmt):
        rows, growth, how, secs = self.export(fmt)
        note = ("%s export of %d records: %.1f MB in %.1f s, daemon peak RSS growth "
                "%.2f MiB (%s; run took %.1f s)"
                % (fmt, REQUESTS, rows.bytes / 1e6, secs, growth / 2**20, how, self.run_s))
        print(note)
        self.assertEqual(rows.rest, b"", "the export does not end with a newline")
        self.assertEqual(rows.rows, REQUESTS, note)
        self.assertEqual(rows.req_ids, set(range(REQUESTS)), note)
        self.assertGreaterEqual(rows.bytes, MIN_BYTES[fmt],
                                "export too small to judge its memory: " + note)
        self.assertLess(growth, GROWTH_MAX, note)
        self.assertGreater(rows.bytes, RATIO * growth, note)

    def test_jsonl(self):
        self.check("jsonl")

    def test_csv(self):
        self.check("csv")


if __name__ == "__main__":
    unittest.main()
