"""hrtest.py - shared helpers for integration tests: start the real
headroom-mock and headroomd on free ports, talk to the REST API, wait for
runs, and always clean up the processes a test started."""

import json
import os
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

BIN = os.environ.get("HEADROOM_BIN", os.path.join(os.path.dirname(__file__), "../../build/bin"))
SRC = os.environ.get("HEADROOM_SRC", os.path.join(os.path.dirname(__file__), "../.."))
TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")


def _read_banner(proc, marker, timeout=15):
    """Reads stdout lines until one contains marker; returns that line. Gives
    up after timeout (scaled by time_scale()) even if the process hangs
    without finishing a line. Reads a byte at a time so that nothing after
    the banner is taken from proc.stdout (tests read later lines there)."""
    import select
    timeout *= time_scale()
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    line = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError("no '%s' line within %s s" % (marker, timeout))
        if not select.select([fd], [], [], left)[0]:
            continue
        c = os.read(fd, 1)
        if not c:
            proc.wait(5)
            raise RuntimeError("process exited early with %s" % proc.returncode)
        if c != b"\n":
            line += c
            continue
        text = line.decode("utf-8", "replace")
        if marker in text:
            return text.strip()
        line = b""


class Proc:
    """A child process that is killed when the test ends."""

    def __init__(self, argv, marker, env=None):
        self.argv = argv
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, text=True,
                                  env=env)
        self.banner = _read_banner(self.p, marker)
        # host:port is the last word, possibly prefixed by http://
        addr = [w for w in self.banner.split() if ":" in w][0]
        self.addr = addr.replace("http://", "")

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if self.p.stdout:
            self.p.stdout.close()
        return self.p.returncode


def start_mock(*extra):
    return Proc([os.path.join(BIN, "headroom-mock"), "--listen", "127.0.0.1:0", *extra],
                "listening on")


def start_daemon(data_dir, *extra):
    return Proc([os.path.join(BIN, "headroomd"), "--listen", "127.0.0.1:0", "--data", data_dir,
                 *extra], "listening on")


class Api:
    def __init__(self, addr):
        self.base = "http://%s/api/v1" % addr

    def call(self, method, path, body=None, raw=None, headers=None):
        """Returns (status, parsed JSON or text, headers)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = dict(headers or {})
        if data is not None and not any(k.lower() == "content-type" for k in headers):
            # urllib would say application/x-www-form-urlencoded: answered 415
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text, hdrs = r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            status, text, hdrs = e.code, e.read().decode(), e.headers
        ctype = hdrs.get("Content-Type", "")
        if ctype.startswith("application/json"):
            return status, json.loads(text), hdrs
        return status, text, hdrs

    def submit(self, spec):
        st, body, _ = self.call("POST", "/runs", spec)
        if st != 201:
            raise AssertionError("submit failed: %s %s" % (st, body))
        return body["id"]

    def wait(self, run_id, timeout=120, states=TERMINAL):
        timeout *= time_scale()
        deadline = time.time() + timeout
        while time.time() < deadline:
            st, run, _ = self.call("GET", "/runs/%d" % run_id)
            if st == 200 and run["state"] in states:
                return run
            time.sleep(0.1)
        raise AssertionError("run %d not in %s after %s s" % (run_id, states, timeout))


def client_ok(test, client):
    """A light run's client verdict: ok, or inconclusive for the host's own
    lateness alone (docs/client.md, "Bursts": stream reads stamped late
    against the kernel's receive times while the worker's loop kept up, as
    on a shared machine whose other work held the worker off its CPU)."""
    if client["verdict"] == "ok":
        return
    test.assertEqual((client["verdict"], client["reasons"]), ("inconclusive", []), client)
    test.assertEqual([n["code"] for n in client["notes"]], ["host_lag"], client)
    test.assertIn("the host did not run the worker in time", client["notes"][0]["message"])


def spec(url, **load):
    """A small valid spec against url; load fields override."""
    ld = {"mode": "concurrency", "concurrency": 4, "requests": 20}
    ld.update(load)
    return {"name": "test", "target": {"url": "http://" + url, "model": "mock-model",
                                       "endpoint": "chat", "stream": True},
            "workload": {"isl": {"mean": 16, "stddev": 0}, "osl": {"mean": 8, "stddev": 0}},
            "load": ld, "workers": 1}


def sanitized():
    """Whether the binaries under test carry AddressSanitizer (a -O0 build,
    several times slower: timing statistics are judged in the other build)."""
    try:
        with open(os.path.join(BIN, "headroom-worker"), "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


_SCALE = None


def time_scale():
    """How many times slower than a quiet optimised build this run may be:
    HEADROOM_TEST_TIME_SCALE when set, else 4 for the sanitizer build, else 1.
    Incidental upper bounds on wall time (a process starting, a run ending)
    are multiplied by it; the timing a test exists to judge is not."""
    global _SCALE
    if _SCALE is None:
        env = os.environ.get("HEADROOM_TEST_TIME_SCALE")
        try:
            _SCALE = float(env) if env else (4.0 if sanitized() else 1.0)
        except ValueError:
            raise AssertionError("HEADROOM_TEST_TIME_SCALE=%r is not a number" % env)
        if _SCALE < 1:
            _SCALE = 1.0
    return _SCALE


_HELD_PORTS = []


def closed_port():
    """A loopback port nothing listens on. The socket stays bound (never
    listening) for the life of the test process, so a connection is refused
    and no other test can take the port meanwhile."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD_PORTS.append(s)
    return s.getsockname()[1]


def tempdir():
    return tempfile.TemporaryDirectory(prefix="headroom-test-")


def numpy_percentile(values, pct):
    import numpy
    return float(numpy.percentile(numpy.array(values, dtype=numpy.float64), pct))


# The per-record metrics of a summary (lib/metrics.c's metric_defs, each a
# column of the records export): schedule_lag is over every record sent,
# the others over the valid ones; and inter_chunk_latency, the gaps between
# the chunks (the export's chunk_offsets_ns) of the valid records.
RECORD_METRICS = ("time_to_first_token", "time_to_second_token", "time_to_first_output_token",
                  "request_latency", "inter_token_latency", "output_token_throughput_per_user",
                  "input_sequence_length", "output_sequence_length", "schedule_lag",
                  "scheduled_time_to_first_token", "scheduled_request_latency",
                  "inter_chunk_latency")
SUMMARY_PCTS = (1, 5, 10, 25, 50, 75, 90, 95, 99)


def check_exact(test, run, rows, tags=RECORD_METRICS):
    """The stored summary's statistics of each per-record metric are numpy's
    over the exported records (rows: the JSONL export, profiling phase
    only counted): the count, min, max and every percentile exactly
    (numpy's linear method), the mean to 1e-12 (its summation order is the
    store's). A metric no record has must have count 0."""
    import numpy
    m = run["summary"]["metrics"]
    prof = [r for r in rows if r.get("phase", "profiling") == "profiling"]
    for tag in tags:
        sent = tag == "schedule_lag"
        if tag == "inter_chunk_latency":  # every gap between a valid record's chunks
            vals = [(b - a) / 1e6 for r in prof if r["valid"]
                    for a, b in zip(r["chunk_offsets_ns"], r["chunk_offsets_ns"][1:])]
        else:
            vals = [r[tag] for r in prof
                    if (r["start_ns"] is not None if sent else r["valid"]) and r[tag] is not None]
        st = m[tag]
        test.assertEqual(st["count"], len(vals), tag)
        if not vals:
            continue
        for pct in SUMMARY_PCTS:
            test.assertEqual(numpy_percentile(vals, pct), st["p%d" % pct], "%s p%d" % (tag, pct))
        test.assertEqual((min(vals), max(vals)), (st["min"], st["max"]), tag)
        want = float(numpy.mean(numpy.array(vals, dtype=numpy.float64)))
        test.assertTrue(abs(want - st["avg"]) <= 1e-12 * max(1.0, abs(want)),
                        "%s avg %r, numpy %r" % (tag, st["avg"], want))


def service(test, *mock_args):
    """A headroom-mock (started with mock_args) and a headroomd for one
    test: both stopped when it ends, and each must exit 0. Returns (mock,
    Api)."""
    tmp = tempdir()
    test.addCleanup(tmp.cleanup)
    mock = start_mock(*mock_args)
    test.addCleanup(lambda: test.assertEqual(mock.stop(), 0, "headroom-mock exit status"))
    d = start_daemon(tmp.name)
    test.addCleanup(lambda: test.assertEqual(d.stop(), 0, "headroomd exit status"))
    return mock, Api(d.addr)


class ServiceCase(unittest.TestCase):
    """A class of tests against one headroom-mock and one headroomd, started
    by start_service() in setUpClass and stopped after the last test (both
    must exit 0)."""

    @classmethod
    def start_service(cls, mock_args=("--quiet",), daemon_args=(), data=None):
        """Starts them: cls.mock, cls.daemon (data in `data`, else cls.tmp,
        made here unless the class made it) and cls.api."""
        if not hasattr(cls, "tmp"):
            cls.tmp = tempdir()
        cls.mock = start_mock(*mock_args)
        cls.daemon = start_daemon(data or cls.tmp.name, *daemon_args)
        cls.api = Api(cls.daemon.addr)

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.daemon.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0]:
            raise AssertionError("exit statuses %s" % rcs)
