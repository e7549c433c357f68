"""test_quotas.py - per-token quotas (docs/security.md, "Quotas"): a submit
token made with `headroomd token create --max-rate --max-concurrency
--max-duration-s --max-requests --max-queued --max-dataset-mb` is refused
403 `quota_exceeded` naming the spec field over its quota (load.rate,
load.concurrency, load.duration_s, load.requests), 429 naming max_queued
when it has that many runs queued, and 413 naming max_dataset_mb for a
larger upload; a run within its quotas is accepted; quotas made through
POST /tokens are listed by GET /tokens; a bad quota is refused naming it.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_quotas.py
"""

import json
import os
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402

HEADROOMD = os.path.join(hrtest.BIN, "headroomd")


def token_cli(data, *args):
    return subprocess.run([HEADROOMD, "token", *args, "--data", data], capture_output=True,
                          text=True, timeout=60 * hrtest.time_scale())


class QuotaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.data = os.path.join(cls.tmp.name, "data")
        r = token_cli(cls.data, "create", "--name", "admin", "--role", "admin")
        assert r.returncode == 0, r.stderr
        cls.admin = r.stdout.strip()
        r = token_cli(cls.data, "create", "--name", "ci", "--role", "submit", "--max-rate", "50",
                      "--max-concurrency", "4", "--max-duration-s", "60", "--max-requests",
                      "100", "--max-queued", "2", "--max-dataset-mb", "1")
        assert r.returncode == 0, r.stderr
        cls.ci = r.stdout.strip()
        # a mock that never answers keeps the first run going, so the next queue
        cls.mock = hrtest.start_mock("--quiet", "--ttft-ms", "600000")
        cls.d = hrtest.start_daemon(cls.data)
        cls.base = "http://%s/api/v1" % cls.d.addr

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.mock.stop()
        cls.tmp.cleanup()

    def call(self, method, path, body=None, token=None, raw=None, ctype="application/json"):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        req.add_header("Authorization", "Bearer " + (token or self.ci))
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def spec(self, **load):
        ld = {"mode": "concurrency", "concurrency": 2, "requests": 10}
        ld.update(load)
        ld = {k: v for k, v in ld.items() if v is not None}
        s = hrtest.spec(self.mock.addr)
        s["load"] = ld
        s["target"]["timeout_s"] = 600
        return s

    def test_1_spec_fields_over_quota(self):
        cases = [({"concurrency": 5}, "load.concurrency"),
                 ({"requests": 101}, "load.requests"),
                 ({"requests": None, "duration_s": 61}, "load.duration_s"),
                 ({"mode": "rate", "rate": 51, "max_concurrency": 4, "concurrency": None},
                  "load.rate")]
        for load, field in cases:
            sp = self.spec(**load)
            sp["load"] = {k: v for k, v in sp["load"].items() if v is not None}
            if field == "load.rate":
                sp["load"].pop("concurrency", None)
            st, body = self.call("POST", "/runs", sp)
            self.assertEqual(st, 403, (load, body))
            self.assertEqual(body["error"]["code"], "quota_exceeded")
            self.assertEqual(body["error"]["field"], field)

    def test_2_queued_runs(self):
        ids = []
        api = hrtest.Api(self.d.addr)
        for i in range(3):  # one starts (never ends: the mock is silent), two queue
            st, body = self.call("POST", "/runs", self.spec(requests=50))
            self.assertEqual(st, 201, body)
            ids.append(body["id"])
            if i == 0:
                self.wait_running(body["id"])
        st, body = self.call("POST", "/runs", self.spec(requests=None, duration_s=30))
        self.assertEqual(st, 429, body)
        self.assertEqual(body["error"]["field"], "max_queued")
        # the admin has no quota
        st, body = self.call("POST", "/runs", self.spec(), token=self.admin)
        self.assertEqual(st, 201, body)
        ids.append(body["id"])
        for i in reversed(ids):
            self.call("POST", "/runs/%d/cancel" % i, token=self.admin)
        del api

    def wait_running(self, run_id):
        import time
        deadline = time.time() + 30 * hrtest.time_scale()
        while time.time() < deadline:
            st, run = self.call("GET", "/runs/%d" % run_id, token=self.admin)
            if run["state"] != "queued":
                return
            time.sleep(0.05)
        self.fail("run %d never started" % run_id)

    def test_3_dataset_bytes(self):
        line = json.dumps({"text": "x" * 1000}) + "\n"
        raw = (line * 1100).encode()  # over 1 MiB
        st, body = self.call("POST", "/datasets?format=single_turn&name=big", raw=raw,
                             ctype="application/x-ndjson")
        self.assertEqual(st, 413, body)
        self.assertEqual(body["error"]["field"], "max_dataset_mb")

    def test_4_tokens_api(self):
        st, body = self.call("POST", "/tokens", {"name": "q2", "role": "submit",
                                                 "max_concurrency": 8, "max_rate": 2.5},
                             token=self.admin)
        self.assertEqual(st, 201, body)
        self.assertEqual(body["quotas"]["max_concurrency"], 8)
        self.assertEqual(body["quotas"]["max_rate"], 2.5)
        self.assertIsNone(body["quotas"]["max_queued"])
        st, body = self.call("GET", "/tokens", token=self.admin)
        q2 = [t for t in body["tokens"] if t["name"] == "q2"][0]
        self.assertEqual(q2["quotas"]["max_concurrency"], 8)
        for bad in ({"max_concurrency": 0}, {"max_concurrency": 1.5}, {"max_rate": "x"},
                    {"max_bogus": 1}):
            st, body = self.call("POST", "/tokens", dict(name="q3", role="submit", **bad),
                                 token=self.admin)
            self.assertEqual(st, 400, (bad, body))
            self.assertEqual(body["error"]["field"], list(bad)[0])

    def test_6_concurrent_submissions_never_pass_max_queued(self):
        """24 submissions at once from one token with max_queued 3: the
        count and the insert are one store transaction, so exactly 3 are
        queued and every other one is answered 429 (counted first, then
        inserted apart, several passed together)."""
        import threading
        st, body = self.call("POST", "/tokens", {"name": "burst", "role": "submit",
                                                 "max_queued": 3}, token=self.admin)
        self.assertEqual(st, 201, body)
        burst = body["token"]
        # a run that never ends holds the runner, so what is submitted queues
        st, body = self.call("POST", "/runs", self.spec(requests=50), token=self.admin)
        self.assertEqual(st, 201, body)
        blocker = body["id"]
        self.wait_running(blocker)
        n = 24  # under the 32 connections a client address may hold (docs/limits.md)
        go = threading.Barrier(n)
        answers = []
        lock = threading.Lock()

        def submit():
            go.wait()
            a = self.call("POST", "/runs", self.spec(), token=burst)
            with lock:
                answers.append(a)
        threads = [threading.Thread(target=submit) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        accepted = [b["id"] for st, b in answers if st == 201]
        refused = [b for st, b in answers if st == 429]
        self.assertEqual(len(answers), n)
        self.assertEqual(len(accepted), 3, answers)
        self.assertEqual(len(refused), n - 3, answers)
        for b in refused:
            self.assertEqual((b["error"]["code"], b["error"]["field"]),
                             ("quota_exceeded", "max_queued"))
        st, body = self.call("GET", "/runs?state=queued&limit=100", token=self.admin)
        mine = [r["id"] for r in body["runs"]
                if self.call("GET", "/runs/%d" % r["id"], token=self.admin)[1]
                ["submitted_by"] == "burst"]
        self.assertEqual(sorted(mine), sorted(accepted))
        for i in [blocker] + accepted:
            self.call("POST", "/runs/%d/cancel" % i, token=self.admin)

    def test_7_sweeps_count_against_max_queued(self):
        """A sweep's runs queued at once count like submitted ones: three
        values from a token with max_queued 2 are refused (no sweep made),
        two are accepted."""
        st, before = self.call("GET", "/sweeps", token=self.admin)
        body = {"spec": self.spec(), "variable": "load.concurrency", "values": [1, 2, 3]}
        st, ans = self.call("POST", "/sweeps", body)
        self.assertEqual(st, 429, ans)
        self.assertEqual(ans["error"]["field"], "max_queued")
        st, after = self.call("GET", "/sweeps", token=self.admin)
        self.assertEqual(len(after["sweeps"]), len(before["sweeps"]))
        body["values"] = [1, 2]
        st, sw = self.call("POST", "/sweeps", body)
        self.assertEqual(st, 201, sw)
        self.call("POST", "/sweeps/%d/cancel" % sw["id"], token=self.admin)

    def test_5_cli_refuses_bad_quota(self):
        for args in (("--max-rate", "0"), ("--max-queued", "x"), ("--max-bogus", "1")):
            r = token_cli(self.data, "create", "--name", "bad", "--role", "submit", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))


if __name__ == "__main__":
    unittest.main()
