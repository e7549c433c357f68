"""test_logs.py - headroomd's log lines (docs/operations.md, "Logs"):
with --log-format json every line the daemon writes to standard error is a
JSON object with its time, level, component and message, lines about a
run carry its id, and --access-log adds one line per HTTP request (id,
client, who, method, path, status, duration); logfmt lines parse as
key=value pairs; --log-level warn drops the info lines; the options work
from the configuration file too, and a bad value is refused."""

import json
import os
import re
import subprocess
import tempfile
import time
import unittest

import hrtest

HEADROOMD = os.path.join(hrtest.BIN, "headroomd")
LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


class Logs(unittest.TestCase):
    def daemon_lines(self, *args, run=True, access=False):
        """Starts headroomd with args, makes a run against a mock and a 404,
        stops it; returns its standard error lines and the run id."""
        with tempfile.TemporaryDirectory() as tmp:
            err_path = os.path.join(tmp, "stderr")
            mock = hrtest.start_mock("--quiet")
            with open(err_path, "w") as err:
                p = subprocess.Popen([HEADROOMD, "--listen", "127.0.0.1:0", "--data",
                                      os.path.join(tmp, "data"), *args],
                                     stdout=subprocess.PIPE, stderr=err, text=True)
                rid = None
                try:
                    line = hrtest._read_banner(p, "listening on")
                    addr = [w for w in line.split() if ":" in w][0].split("//")[-1]
                    api = hrtest.Api(addr)
                    if run:
                        rid = api.submit(hrtest.spec(mock.addr, requests=5))
                        self.assertEqual(api.wait(rid)["state"], "succeeded")
                    self.assertEqual(api.call("GET", "/runs/424242")[0], 404)
                    if access:  # a request is logged when its connection ends: wait for it
                        deadline = time.monotonic() + 10 * hrtest.time_scale()
                        while time.monotonic() < deadline:
                            with open(err_path) as f:
                                if "424242" in f.read():
                                    break
                            time.sleep(0.05)
                finally:
                    p.terminate()
                    p.wait(30)
                    p.stdout.close()
                    mock.stop()
            with open(err_path) as f:
                return f.read().splitlines(), rid

    def test_json_lines_and_access_log(self):
        lines, rid = self.daemon_lines("--log-format", "json", "--access-log", access=True)
        self.assertTrue(lines)
        objs = [json.loads(l) for l in lines]  # every line is one JSON object
        for o in objs:
            self.assertRegex(o["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertIn(o["level"], ("debug", "info", "warn", "error"))
            self.assertTrue(o["component"])
            self.assertTrue(o["msg"])
        runs = [o for o in objs if o["component"] == "runner"]
        self.assertTrue(any(o["msg"].startswith("run %d succeeded" % rid) for o in runs), runs)
        self.assertTrue(all(o.get("run") == rid for o in runs if o["msg"].startswith("run ")))
        http = [o for o in objs if o["component"] == "http"]
        post = [o for o in http if o["method"] == "POST" and o["path"] == "/api/v1/runs"]
        self.assertEqual(len(post), 1, http)
        self.assertEqual(post[0]["status"], "201")
        self.assertEqual(post[0]["who"], "local")
        self.assertEqual(post[0]["client"], "127.0.0.1")
        self.assertGreaterEqual(float(post[0]["ms"]), 0)
        miss = [o for o in http if o["path"] == "/runs/424242" or o["path"].endswith("/424242")]
        self.assertEqual([o["status"] for o in miss], ["404"])
        ids = [int(o["request"]) for o in http]
        self.assertEqual(len(set(ids)), len(ids))  # one id per request

    def test_logfmt_and_level(self):
        lines, rid = self.daemon_lines("--log-format", "logfmt")
        for l in lines:
            kv = dict(LOGFMT.findall(l))
            self.assertTrue({"ts", "level", "component", "msg"} <= set(kv), l)
        self.assertTrue(any('run=%d' % rid in l and "succeeded" in l for l in lines), lines)
        self.assertFalse(any("component=http" in l for l in lines))  # no access log asked
        quiet, _ = self.daemon_lines("--log-format", "logfmt", "--log-level", "warn")
        self.assertFalse(any("level=info" in l for l in quiet), quiet)

    def test_text_is_the_default_and_config_sets_it(self):
        lines, rid = self.daemon_lines()
        self.assertTrue(any(l == "headroomd: run %d started with 1 worker(s)" % rid
                            for l in lines), lines)
        with tempfile.TemporaryDirectory() as tmp:
            conf = os.path.join(tmp, "c.conf")
            with open(conf, "w") as f:
                f.write("log-format = json\naccess-log = true\n")
            lines, _ = self.daemon_lines("--config", conf, run=False, access=True)
            self.assertTrue(lines)
            self.assertTrue(all(l.startswith("{") for l in lines), lines)
            with open(conf, "w") as f:
                f.write("log-level = loud\n")
            p = subprocess.run([HEADROOMD, "--config", conf, "--check-config"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--log-level must be debug, info, warn or error", p.stderr)
            self.assertIn("c.conf:1 (log-level)", p.stderr)


if __name__ == "__main__":
    unittest.main()
