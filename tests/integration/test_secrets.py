#!/usr/bin/env python3
"""test_secrets.py - API keys come only from secrets the operator declares
(headroomd --secret NAME=env:VAR@HOST / NAME=file:PATH@HOST,
docs/security.md#secrets), and credentials are never stored or shown:

- a declared secret reaches its host (a headroom-mock started with
  --api-key, which answers 401 to anything else), and its value is in no
  answer (GET /runs/{id}, /runs, summaries, records and telemetry exports,
  /compare), in no file of the store, in the daemon's stderr, nor in
  `headroom show`;
- it is refused (400, field target.url) for a host or port it was not
  declared for, and a header sink (a small HTTP server here, on another
  port of 127.0.0.1) never receives it nor any variable of the daemon;
- an undeclared name, the name of a variable the daemon has, and one it
  has not get the same 400; target.api_key_env is refused the same way
  whatever it names;
- credential-looking headers, URL user-info and token-like query
  parameters are refused at submission (they would be stored and shown);
- target.api_key_header names the header the key goes in: the header
  sink, with a secret declared for it, receives the bare key under
  x-api-key or api-key only (no Authorization, the key in no other
  header) and `Authorization: Bearer KEY` by default; a header the
  redaction rules do not treat as a credential, a bad name, or one without
  a secret is refused naming the field; a secret is still refused for a
  host it was not declared for, whatever its header (the sink sees
  nothing), and the key is in no answer, file or log;
- a worker's environment (/proc/PID/environ, read while it runs) holds
  none of the daemon's other variables;
- a file secret readable by others, or a variable that is unset, fails the
  run with a reason that says which; a wrong key is refused by the server.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_secrets.py
"""
import glob
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

KEY = "hr-test-key-7f3a9c1e5b"
OTHER = "daemon-private-value-c81d3e"  # a variable of the daemon's, never declared
UNDECLARED = "target.api_key_secret: not a secret this daemon declares"


class Sink(http.server.ThreadingHTTPServer):
    """Records every request's headers; answers 500 after self.delay s."""
    daemon_threads = True

    def __init__(self):
        self.seen = []
        self.delay = 0.0

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(h):
                n = int(h.headers.get("Content-Length") or 0)
                body = h.rfile.read(n) if n else b""
                self.seen.append((h.path, dict(h.headers.items()), body))
                time.sleep(self.delay)
                h.send_response(500)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", "2")
                h.end_headers()
                h.wfile.write(b"{}")

            do_GET = do_POST

            def log_message(h, *a):
                pass

        super().__init__(("127.0.0.1", 0), H)
        self.addr = "127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


class Daemon(hrtest.Proc):
    """headroomd with its own environment and its stderr kept in a file."""

    def __init__(self, argv, env, errpath):
        self.argv = argv
        self.err = open(errpath, "w")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  env=env)
        self.banner = hrtest._read_banner(self.p, "listening on")
        addr = [w for w in self.banner.split() if ":" in w][0]
        self.addr = addr.replace("http://", "")


class SecretsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.data = os.path.join(cls.tmp.name, "data")
        cls.dir = os.path.join(cls.tmp.name, "secrets")
        os.makedirs(cls.dir)
        cls.put("prod", KEY + "\n")
        cls.put("wrong", "not-the-key\n")
        cls.put("open", KEY + "\n", mode=0o644)
        cls.mock = hrtest.start_mock("--quiet", "--api-key", KEY)
        cls.sink = Sink()
        mport = cls.mock.addr.rsplit(":", 1)[1]
        env = dict(os.environ, HR_SECRET_PROD=KEY, HR_DAEMON_OTHER=OTHER)
        env.pop("HR_NOT_SET_ANYWHERE", None)
        cls.errpath = os.path.join(cls.tmp.name, "daemon.err")
        cls.daemon = Daemon(
            [os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0", "--data",
             cls.data,
             "--secret", "prod=env:HR_SECRET_PROD@127.0.0.1:%s" % mport,
             "--secret", "prodfile=file:%s/prod@localhost,127.0.0.1:%s" % (cls.dir, mport),
             "--secret", "wrong=file:%s/wrong@127.0.0.1" % cls.dir,
             "--secret", "open=file:%s/open@127.0.0.1" % cls.dir,
             "--secret", "unset=env:HR_NOT_SET_ANYWHERE@127.0.0.1",
             "--secret", "elsewhere=env:HR_SECRET_PROD@example.invalid",
             "--secret", "sinkkey=env:HR_SECRET_PROD@%s" % cls.sink.addr],
            env, cls.errpath)
        cls.api = hrtest.Api(cls.daemon.addr)

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.daemon.stop(), cls.mock.stop()]
        cls.daemon.err.close()
        cls.sink.shutdown()
        cls.tmp.cleanup()
        if rcs != [0, 0]:
            raise AssertionError("exit statuses %s" % rcs)

    @classmethod
    def put(cls, name, text, mode=0o600):
        path = os.path.join(cls.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def spec(self, secret, addr=None, **load):
        ld = dict(concurrency=2, requests=10)
        ld.update(load)
        s = hrtest.spec(addr or self.mock.addr, **ld)
        if secret is not None:
            s["target"]["api_key_secret"] = secret
        return s

    def run_to_end(self, spec):
        rid = self.api.submit(spec)
        return rid, self.api.wait(rid)

    def refused(self, spec, field):
        st, err, _ = self.api.call("POST", "/runs", spec)
        self.assertEqual(st, 400, err)
        self.assertEqual(err["error"]["field"], field, err)
        return err["error"]["message"]

    def assert_nowhere(self, secret):
        rid, run = self.run_to_end(self.spec(secret))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertEqual(run["summary"]["counts"]["valid"], 10)
        self.assertEqual(run["spec"]["target"]["api_key_secret"], secret)
        self.assertNotIn("api_key_env", run["spec"]["target"])
        for path in ("/runs/%d" % rid, "/runs/%d/summary" % rid,
                     "/runs/%d/summary?format=csv" % rid, "/runs/%d/records" % rid,
                     "/runs/%d/records?format=csv" % rid, "/runs/%d/client" % rid,
                     "/runs/%d/telemetry" % rid, "/runs",
                     "/compare?base=%d&head=%d" % (rid, rid)):
            st, body, _ = self.api.call("GET", path)
            self.assertIn(st, (200, 400), path)
            self.assertNotIn(KEY, str(body), path)
        for f in glob.glob(os.path.join(self.data, "*")):
            if os.path.isfile(f):
                with open(f, "rb") as fh:
                    self.assertNotIn(KEY.encode(), fh.read(), f)
        out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "--url",
                              "http://" + self.daemon.addr, "show", str(rid)],
                             capture_output=True, text=True, timeout=60)
        self.assertNotIn(KEY, out.stdout + out.stderr)
        with open(self.errpath) as f:
            self.assertNotIn(KEY, f.read())

    def test_env_secret_reaches_its_host_and_is_kept_nowhere(self):
        self.assert_nowhere("prod")

    def test_file_secret_reaches_its_host_and_is_kept_nowhere(self):
        self.assert_nowhere("prodfile")

    def test_secret_refused_for_other_hosts_and_ports(self):
        n = len(self.sink.seen)
        self.refused(self.spec("prod", addr=self.sink.addr), "target.url")
        self.refused(self.spec("prodfile", addr=self.sink.addr), "target.url")
        self.refused(self.spec("elsewhere"), "target.url")
        time.sleep(0.5)
        self.assertEqual(len(self.sink.seen), n)

    def test_undeclared_names_are_all_alike(self):
        msgs = {self.refused(self.spec(name), "target.api_key_secret")
                for name in ("absent", "HR_DAEMON_OTHER", "HR_SECRET_PROD", "PATH", "HOME")}
        self.assertEqual(len(msgs), 1, msgs)
        for m in msgs:
            self.assertNotIn("HR_", m)
        secret_msgs = msgs
        msgs = set()
        for var in ("HR_DAEMON_OTHER", "HR_SECRET_PROD", "PATH", "HR_NOT_SET_ANYWHERE"):
            s = self.spec(None)
            s["target"]["api_key_env"] = var
            msgs.add(self.refused(s, "target.api_key_env"))
        self.assertEqual(len(msgs), 1, msgs)
        both = self.spec("prod")
        both["target"]["api_key_env"] = "SOME_VAR"
        self.refused(both, "target.api_key_secret")
        for secret in ("../etc/passwd", "", 5):
            self.refused(self.spec(secret), "target.api_key_secret")
        mock = self.spec("absent")  # no url yet: the name is still checked
        del mock["target"]["url"]
        mock["target"]["mock"] = True
        self.assertEqual({self.refused(mock, "target.api_key_secret")}, secret_msgs)

    def test_credentials_in_specs_are_refused(self):
        n = len(self.sink.seen)
        for field, change in (
                ("target.headers.Authorization", ("headers", {"Authorization": "Bearer x"})),
                ("target.headers.proxy-authorization",
                 ("headers", {"X-Ok": "1", "proxy-authorization": "Basic eA=="})),
                ("target.headers.Cookie", ("headers", {"Cookie": "s=1"})),
                ("target.headers.X-Api-Key", ("headers", {"X-Api-Key": "k"})),
                ("target.headers.X-Session-Id", ("headers", {"X-Session-Id": "k"})),
                ("target.url", ("url", "http://user:pw@%s" % self.sink.addr)),
                ("target.url", ("url", "http://%s/?api_key=abc" % self.sink.addr)),
                ("target.url", ("url", "http://%s/x?a=1&access_token=abc#f" % self.sink.addr))):
            s = self.spec(None, addr=self.sink.addr)
            s["target"][change[0]] = change[1]
            msg = self.refused(s, field)
            self.assertIn("declared secret", msg)
            self.assertNotIn("Bearer x", msg)
            self.assertNotIn("pw@", msg)
        s = self.spec(None, addr=self.sink.addr)
        s["telemetry"] = {"metrics_urls": ["http://%s/metrics" % self.sink.addr,
                                           "http://%s/metrics?token=t0k" % self.sink.addr]}
        self.refused(s, "telemetry.metrics_urls[1]")
        s["telemetry"] = {"dcgm_urls": ["http://u:p@%s/metrics" % self.sink.addr]}
        self.refused(s, "telemetry.dcgm_urls[0]")
        time.sleep(0.5)
        self.assertEqual(len(self.sink.seen), n)
        # ordinary headers and query parameters are kept as they were
        s = self.spec(None, addr=self.sink.addr, requests=1, concurrency=1)
        s["target"]["headers"] = {"X-Test": "1"}
        s["target"]["url"] = "http://%s/base?region=eu" % self.sink.addr
        rid, run = self.run_to_end(s)
        self.assertEqual(run["spec"]["target"]["headers"], {"X-Test": "1"})
        seen = self.sink.seen[n:]
        self.assertTrue([b for _, _, b in seen if b])
        for _, headers, body in seen:
            if body:  # the workers' requests (the daemon's scrapes of /metrics are GETs)
                self.assertEqual(headers.get("X-Test"), "1")
            self.assertNotIn("Authorization", headers)
            self.assertNotIn(KEY, json.dumps(headers))
            self.assertNotIn(OTHER, json.dumps(headers))

    def test_secret_in_a_named_header(self):
        def sent(header):
            s = self.spec("sinkkey", addr=self.sink.addr, requests=2, concurrency=1)
            if header is not None:
                s["target"]["api_key_header"] = header
            n = len(self.sink.seen)
            rid, run = self.run_to_end(s)
            posts = [h for _, h, b in self.sink.seen[n:] if b]
            self.assertEqual(len(posts), 2, (header, run.get("reason")))
            for path in ("/runs/%d" % rid, "/runs/%d/records" % rid, "/runs",
                         "/runs/%d/summary" % rid):
                self.assertNotIn(KEY, str(self.api.call("GET", path)[1]), path)
            return run, [{k.lower(): v for k, v in h.items()} for h in posts]

        for header in ("X-Api-Key", "api-key"):
            run, posts = sent(header)
            self.assertEqual(run["spec"]["target"]["api_key_header"], header.lower())
            for h in posts:
                self.assertEqual(h.get(header.lower()), KEY, h)
                self.assertNotIn("authorization", h)
                others = {k: v for k, v in h.items() if k != header.lower()}
                self.assertNotIn(KEY, json.dumps(others))
        for header in (None, "authorization"):  # the default, normalised away
            run, posts = sent(header)
            self.assertNotIn("api_key_header", run["spec"]["target"])
            for h in posts:
                self.assertEqual(h.get("authorization"), "Bearer " + KEY, h)
                self.assertNotIn("x-api-key", h)
        n = len(self.sink.seen)
        for header, secret in (("X-Trace", "sinkkey"), ("x api key", "sinkkey"), (5, "sinkkey"),
                               ("", "sinkkey"), ("X-Api-Key", None)):
            s = self.spec(secret, addr=self.sink.addr)
            s["target"]["api_key_header"] = header
            self.refused(s, "target.api_key_header")
        s = self.spec("prod", addr=self.sink.addr)  # declared for the mock only
        s["target"]["api_key_header"] = "x-api-key"
        self.refused(s, "target.url")
        time.sleep(0.5)
        self.assertEqual(len(self.sink.seen), n)
        with open(self.errpath) as f:
            self.assertNotIn(KEY, f.read())
        for f in glob.glob(os.path.join(self.data, "*")):
            if os.path.isfile(f):
                with open(f, "rb") as fh:
                    self.assertNotIn(KEY.encode(), fh.read(), f)

    def test_worker_environment_is_scrubbed(self):
        self.sink.delay = 2.0 * hrtest.time_scale()
        try:
            rid = self.api.submit(self.spec(None, addr=self.sink.addr, concurrency=1,
                                            requests=3))
            dpid = self.daemon.p.pid
            deadline = time.monotonic() + 30 * hrtest.time_scale()
            envs = []
            while not envs and time.monotonic() < deadline:
                for pid in os.listdir("/proc"):
                    if not pid.isdigit():
                        continue
                    try:
                        with open("/proc/%s/stat" % pid) as f:
                            stat = f.read()
                        if int(stat.rsplit(")", 1)[1].split()[1]) != dpid:
                            continue
                        with open("/proc/%s/cmdline" % pid, "rb") as f:
                            if b"headroom-worker" not in f.read():
                                continue
                        with open("/proc/%s/environ" % pid, "rb") as f:
                            envs.append(f.read().split(b"\0"))
                    except (OSError, ValueError, IndexError):
                        continue
                time.sleep(0.05)
            self.assertTrue(envs, "no running worker found")
            for env in envs:
                names = {e.split(b"=", 1)[0].decode() for e in env if e}
                self.assertNotIn("HR_DAEMON_OTHER", names)
                self.assertNotIn("HR_SECRET_PROD", names)
                self.assertNotIn("HEADROOM_TARGET_API_KEY", names)
                self.assertIn("HEADROOM_PARENT_PID", names)
                for e in env:
                    self.assertNotIn(OTHER.encode(), e)
                    self.assertNotIn(KEY.encode(), e)
                allowed = {"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "ASAN_OPTIONS",
                           "UBSAN_OPTIONS", "LSAN_OPTIONS", "HEADROOM_PARENT_PID",
                           "HEADROOM_WORKER_JSON", "HEADROOM_WORKER_BURN_US",
                           "HEADROOM_WORKER_SPIN_US", "HEADROOM_WORKER_TRANSPORT",
                           "HEADROOM_NVML_LIB"}
                for n in names:
                    self.assertTrue(n in allowed or n.startswith("LC_"), n)
            self.api.call("POST", "/runs/%d/cancel" % rid)
            self.api.wait(rid)
        finally:
            self.sink.delay = 0.0

    def test_wrong_key_is_refused_by_the_server(self):
        s = self.spec("wrong")
        _, run = self.run_to_end(s)
        self.assertEqual(run["state"], "failed")
        self.assertEqual(run["summary"]["counts"]["valid"], 0)
        self.assertEqual(run["summary"]["errors"], {"http_4xx": 10})

    def test_unsafe_or_missing_values_fail_the_run(self):
        _, run = self.run_to_end(self.spec("open"))
        self.assertEqual(run["state"], "failed")
        self.assertIn("readable by others", run["reason"])
        _, run = self.run_to_end(self.spec("unset"))
        self.assertEqual(run["state"], "failed")
        self.assertIn("not set", run["reason"])


if __name__ == "__main__":
    unittest.main()
