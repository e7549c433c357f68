"""test_allowlist.py - the operator's allow-list of targets (--allow-target,
docs/security.md "Targets") is enforced on the resolved address when a
worker or the telemetry scraper connects, before any byte is sent.

A daemon with `--allow-target 127.0.0.2` only: a target on 127.0.0.2 is
reached; targets on 127.0.0.3, on 127.0.0.2 at a port outside the list
(given as a name, so that only the connect-time check can see it), at
`localhost` (which resolves to the refused 127.0.0.1) and at the daemon's
own API are refused, each request recorded as a connect error "address not
allowed: ...", and Python listeners on the refused addresses accept no
connection. A literal refused address is answered 400 at submission,
naming the field; a refused telemetry URL is reported unavailable and its
listener sees nothing. Only loopback addresses are ever connected to.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_allowlist.py
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402


class Listener:
    """A TCP listener on a loopback address that counts the connections it
    accepts (and answers nothing)."""

    def __init__(self, host):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind((host, 0))
        self.s.listen(64)
        self.port = self.s.getsockname()[1]
        self.accepted = 0
        self.stopped = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        self.s.settimeout(0.1)
        while not self.stopped:
            try:
                c, _ = self.s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            c.close()

    def stop(self):
        self.stopped = True
        self.t.join(5)
        self.s.close()


def has_loopback(host):
    try:
        s = socket.socket()
        s.bind((host, 0))
        s.close()
        return True
    except OSError:
        return False


@unittest.skipUnless(has_loopback("127.0.0.2") and has_loopback("127.0.0.3"),
                     "needs 127.0.0.2 and 127.0.0.3 (Linux loopback)")
class AllowListTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        # the mock on 127.0.0.2, the only address allowed
        cls.mock = hrtest.Proc([os.path.join(hrtest.BIN, "headroom-mock"), "--listen",
                                "127.0.0.2:0", "--quiet"], "listening on")
        cls.daemon = hrtest.start_daemon(cls.tmp.name, "--allow-target", "127.0.0.2")
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.mock_port = int(cls.mock.addr.rsplit(":", 1)[1])

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.mock.stop()
        cls.tmp.cleanup()

    def records(self, run_id):
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
        self.assertEqual(st, 200)
        return [json.loads(x) for x in text.splitlines()]

    def assert_refused_run(self, url, needle):
        run = self.api.wait(self.api.submit(hrtest.spec(url, requests=4, concurrency=2)))
        recs = self.records(run["id"])
        self.assertEqual(len(recs), 4, run)
        for r in recs:
            self.assertEqual(r["error"], "connect", r)
            self.assertIn("address not allowed", r["error_message"])
            self.assertIn(needle, r["error_message"])
        return run

    def test_allowed_target_is_reached(self):
        run = self.api.wait(self.api.submit(hrtest.spec(self.mock.addr, requests=8)))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        recs = self.records(run["id"])
        self.assertEqual(sum(1 for r in recs if r["valid"]), 8)

    def test_unlisted_address_sees_no_connection(self):
        lst = Listener("127.0.0.3")
        self.addCleanup(lst.stop)
        # a literal address: refused at submission, naming the field
        st, body, _ = self.api.call("POST", "/runs",
                                    hrtest.spec("127.0.0.3:%d" % lst.port))
        self.assertEqual(st, 400, body)
        self.assertEqual(body["error"]["field"], "target.url")
        self.assertEqual(body["error"]["code"], "target_not_allowed")
        self.assertIn("127.0.0.3", body["error"]["message"])
        # the same address written as one number (2130706435 = 127.0.0.3)
        # is no literal at submission: only the connect-time check sees it
        self.assert_refused_run("%d:%d" % (0x7f000003, lst.port), "127.0.0.3")
        time.sleep(0.3)
        self.assertEqual(lst.accepted, 0)

    def test_port_outside_the_list(self):
        lst = Listener("127.0.0.2")
        self.addCleanup(lst.stop)
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        d = hrtest.start_daemon(tmp.name, "--allow-target",
                                "127.0.0.2:%d" % self.mock_port)
        self.addCleanup(d.stop)
        api = hrtest.Api(d.addr)
        st, body, _ = api.call("POST", "/runs", hrtest.spec("127.0.0.2:%d" % lst.port))
        self.assertEqual(st, 400, body)
        self.assertEqual(body["error"]["field"], "target.url")
        run = api.wait(api.submit(hrtest.spec("%d:%d" % (0x7f000002, lst.port), requests=2,
                                              concurrency=1)))
        st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        recs = [json.loads(x) for x in text.splitlines()]
        self.assertEqual(len(recs), 2)
        for r in recs:
            self.assertEqual(r["error"], "connect", r)
            self.assertIn("address not allowed", r["error_message"])
        run = api.wait(api.submit(hrtest.spec(self.mock.addr, requests=4)))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        time.sleep(0.3)
        self.assertEqual(lst.accepted, 0)

    def test_name_resolving_to_a_refused_address(self):
        # localhost resolves to 127.0.0.1 (and perhaps ::1): both refused
        lst = Listener("127.0.0.1")
        self.addCleanup(lst.stop)
        self.assert_refused_run("localhost:%d" % lst.port, "not in the allow-list")
        time.sleep(0.3)
        self.assertEqual(lst.accepted, 0)

    def test_daemon_itself_is_refused(self):
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        # even a list that allows all of loopback leaves out the daemon's API
        d = hrtest.start_daemon(tmp.name, "--allow-target", "127.0.0.0/8")
        self.addCleanup(d.stop)
        api = hrtest.Api(d.addr)
        port = int(d.addr.rsplit(":", 1)[1])
        st, body, _ = api.call("POST", "/runs", hrtest.spec(d.addr))
        self.assertEqual(st, 400, body)
        self.assertIn("daemon's own API", body["error"]["message"])
        run = api.wait(api.submit(hrtest.spec("localhost:%d" % port, requests=2,
                                              concurrency=1)))
        st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        recs = [json.loads(x) for x in text.splitlines()]
        self.assertEqual(len(recs), 2)
        for r in recs:
            self.assertEqual(r["error"], "connect")
            self.assertIn("address not allowed", r["error_message"])

    def test_default_refuses_metadata_and_itself(self):
        # no --allow-target (loopback daemon): the metadata address is
        # refused at submission; nothing is connected to
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        d = hrtest.start_daemon(tmp.name)
        self.addCleanup(d.stop)
        api = hrtest.Api(d.addr)
        for url, needle in (("169.254.169.254", "metadata"), ("169.254.1.2:80", "link-local"),
                            ("[fe80::1]:80", "link-local"), (d.addr, "daemon's own API")):
            st, body, _ = api.call("POST", "/runs", hrtest.spec(url))
            self.assertEqual(st, 400, (url, body))
            self.assertEqual(body["error"]["field"], "target.url")
            self.assertIn(needle, body["error"]["message"])

    def test_telemetry_url_refused(self):
        lst = Listener("127.0.0.3")
        self.addCleanup(lst.stop)
        spec = hrtest.spec(self.mock.addr, requests=8)
        spec["telemetry"] = {"server_metrics": False,
                             "dcgm_urls": ["http://127.0.0.3:%d/metrics" % lst.port]}
        st, body, _ = self.api.call("POST", "/runs", spec)
        self.assertEqual(st, 400, body)
        self.assertEqual(body["error"]["field"], "telemetry.dcgm_urls[0]")
        # through a name, only the scraper's connect-time check sees it
        lst1 = Listener("127.0.0.1")
        self.addCleanup(lst1.stop)
        spec["telemetry"] = {"server_metrics": False, "nvml": False,
                             "dcgm_urls": ["http://localhost:%d/metrics" % lst1.port]}
        run = self.api.wait(self.api.submit(spec))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        src = {s["source"]: s for s in run["summary"]["telemetry"]["sources"]}
        self.assertEqual(src["dcgm"]["status"], "unavailable")
        self.assertIn("address not allowed", src["dcgm"]["detail"])
        time.sleep(0.3)
        self.assertEqual(lst.accepted, 0)
        self.assertEqual(lst1.accepted, 0)

    def test_bad_entry_stops_the_daemon(self):
        for entry in ("10.0.0.1/33", "host:0", "a b", "10.1.2.3/24"):
            r = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "--listen",
                                "127.0.0.1:0", "--data", self.tmp.name, "--allow-target",
                                entry], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, entry)
            self.assertIn("--allow-target", r.stderr)


if __name__ == "__main__":
    unittest.main()
