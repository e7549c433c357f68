"""test_selfmetrics.py - the daemon reports on itself (docs/operations.md,
"Metrics" and "Health").

- GET /metrics passes Debian's `promtool check metrics` and its numbers
  follow what happened: a run's records ingested, the run counted by
  state, requests counted by route pattern, method and status (a 404
  too), commits timed, no worker alive between runs, build_info carrying
  the version `--version` prints;
- GET /api/v1/readyz is 200 with every check ok, and 503 naming the disk
  when the free-space floor is not met (while /healthz, liveness, stays
  200); every program prints the one version;
- with tokens, /metrics needs a read token (the scraper's bearer), and
  /readyz, like /healthz, none;
- under systemd's Type=notify protocol ($NOTIFY_SOCKET, a path or an
  abstract name) the daemon says READY=1 once it listens and STOPPING=1
  when SIGTERM stops it.
"""

import os
import re
import subprocess
import tempfile
import unittest
import urllib.request

import hrtest


def scrape(addr, token=None):
    req = urllib.request.Request("http://%s/metrics" % addr)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def value(text, name, labels=None):
    """The sample of name whose labels include labels (a dict), or None."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(got.get(k) == v for k, v in (labels or {}).items()):
            return float(m.group(4))
    return None


class SelfMetrics(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=())

    def test_metrics_follow_a_run(self):
        rid = self.api.submit(hrtest.spec(self.mock.addr, requests=37))
        run = self.api.wait(rid)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertEqual(self.api.call("GET", "/runs/999999")[0], 404)
        # a request is counted when the server is done with its connection,
        # a moment after the client has the answer: wait for the evidence
        not_found = {"route": "/api/v1/runs/{id}", "method": "GET", "code": "404"}
        text = self.scrape_until(lambda t: value(t, "headroom_http_requests_total", not_found))
        st, ctype, text = scrape(self.daemon.addr)
        self.assertEqual(st, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(value(text, "headroom_runs", {"state": "succeeded"}), 1)
        self.assertEqual(value(text, "headroom_runs", {"state": "queued"}), 0)
        self.assertEqual(value(text, "headroom_records_ingested_total"), 37)
        self.assertEqual(value(text, "headroom_workers_alive"), 0)
        self.assertGreaterEqual(value(text, "headroom_http_requests_total",
                                      {"route": "/api/v1/runs", "method": "POST",
                                       "code": "201"}), 1)
        self.assertGreaterEqual(value(text, "headroom_http_requests_total",
                                      {"route": "/api/v1/runs/{id}", "method": "GET",
                                       "code": "200"}), 1)
        self.assertEqual(value(text, "headroom_http_requests_total",
                               {"route": "/api/v1/runs/{id}", "method": "GET", "code": "404"}), 1)
        self.assertGreater(value(text, "headroom_store_commit_duration_seconds_count"), 0)
        self.assertEqual(value(text, "headroom_store_commit_failures_total"), 0)
        self.assertGreater(value(text, "headroom_data_free_bytes"), 0)
        self.assertLess(value(text, "headroom_runner_idle_seconds"), 5)
        n = value(text, "headroom_http_request_duration_seconds_count",
                  {"route": "/api/v1/runs/{id}"})
        self.assertGreaterEqual(n, 2)
        version = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "--version"],
                                 capture_output=True, text=True, timeout=30).stdout.split()
        self.assertEqual(value(text, "headroom_build_info", {"version": version[1]}), 1)
        # the scrapes themselves are counted by the next ones
        self.scrape_until(lambda t: value(t, "headroom_http_requests_total",
                                          {"route": "/metrics", "method": "GET", "code": "200"}))

    def scrape_until(self, pred, timeout=10):
        import time
        deadline = time.monotonic() + timeout * hrtest.time_scale()
        while True:
            st, _, text = scrape(self.daemon.addr)
            self.assertEqual(st, 200)
            if pred(text):
                return text
            if time.monotonic() > deadline:
                self.fail("the metrics never showed it:\n" + text)
            time.sleep(0.05)

    def test_ready(self):
        st, body, _ = self.api.call("GET", "/readyz")
        self.assertEqual(st, 200, body)
        self.assertEqual(body, {"ready": True, "checks": {"store": "ok", "disk": "ok",
                                                          "runner": "ok"}})

    def test_one_version_everywhere(self):
        outs = set()
        for prog in ("headroomd", "headroom", "headroom-worker", "headroom-mock"):
            out = subprocess.run([os.path.join(hrtest.BIN, prog), "--version"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, prog)
            name, ver, commit = out.stdout.split()
            self.assertEqual(name, prog)
            outs.add((ver, commit))
        self.assertEqual(len(outs), 1, outs)
        st, h, _ = self.api.call("GET", "/healthz")
        self.assertEqual(h["version"], outs.pop()[0])


class NotReady(unittest.TestCase):
    def test_disk_floor_unmet_is_not_ready(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = hrtest.start_daemon(tmp, "--min-free-mb", "1000000000")
            try:
                api = hrtest.Api(d.addr)
                st, body, _ = api.call("GET", "/readyz")
                self.assertEqual(st, 503, body)
                self.assertFalse(body["ready"])
                self.assertIn("free", body["checks"]["disk"])
                self.assertEqual(body["checks"]["store"], "ok")
                st, h, _ = api.call("GET", "/healthz")  # liveness: still answers
                self.assertEqual(st, 200)
            finally:
                d.stop()


class WithTokens(unittest.TestCase):
    def test_metrics_need_a_read_token(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "token", "create",
                                "--name", "scraper", "--role", "read", "--data", tmp],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            token = re.search(r"hr_[A-Za-z0-9_-]{43}", r.stdout).group(0)
            d = hrtest.start_daemon(tmp)
            try:
                st, _, _ = scrape(d.addr)
                self.assertEqual(st, 401)
                st, _, text = scrape(d.addr, token)
                self.assertEqual(st, 200)
                self.assertIsNotNone(value(text, "headroom_build_info"))
                st, body, _ = hrtest.Api(d.addr).call("GET", "/readyz")
                self.assertEqual(st, 200, body)
            finally:
                d.stop()


class Notify(unittest.TestCase):
    def notified(self, name):
        import socket
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        with tempfile.TemporaryDirectory() as tmp:
            addr = os.path.join(tmp, "notify") if name == "path" else "\0headroom-test-%d" % os.getpid()
            sock.bind(addr)
            sock.settimeout(30 * hrtest.time_scale())
            env = dict(os.environ, NOTIFY_SOCKET=addr if name == "path" else "@" + addr[1:])
            d = hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                             "--data", os.path.join(tmp, "data")], "listening on", env=env)
            try:
                msg = sock.recv(4096).decode()
                self.assertTrue(msg.startswith("READY=1\n"), msg)
                self.assertIn("STATUS=listening on " + d.addr, msg)
                # ready means ready: the API answers now
                st, _, _ = hrtest.Api(d.addr).call("GET", "/readyz")
                self.assertEqual(st, 200)
                d.p.send_signal(15)
                msg = sock.recv(4096).decode()
                self.assertTrue(msg.startswith("STOPPING=1"), msg)
                self.assertEqual(d.p.wait(30), 0)
            finally:
                d.stop()
                sock.close()

    def test_ready_and_stopping_path(self):
        self.notified("path")

    def test_ready_and_stopping_abstract(self):
        self.notified("abstract")


if __name__ == "__main__":
    unittest.main()
