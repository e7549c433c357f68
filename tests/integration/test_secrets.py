#!/usr/bin/env python3
"""test_secrets.py - API keys by secret reference (target.api_key_secret):
the key reaches the server (a headroom-mock started with --api-key, which
answers 401 to anything else), and it is never stored, returned or exported:
the runs, summaries, records and client samples, and the SQLite files
themselves, hold the secret's name only. A missing secret, one readable by
others, or a wrong key fail the run with a reason that says which.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_secrets.py
"""
import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

KEY = "hr-test-key-7f3a9c1e5b"


class SecretsTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.data = os.path.join(cls.tmp.name, "data")
        cls.secrets = os.path.join(cls.tmp.name, "secrets")
        os.makedirs(cls.secrets)
        cls.put("prod", KEY + "\n")
        cls.put("wrong", "not-the-key\n")
        cls.put("open", KEY + "\n", mode=0o644)
        cls.start_service(mock_args=("--quiet", "--api-key", KEY),
                          daemon_args=("--secrets-dir", cls.secrets), data=cls.data)

    @classmethod
    def put(cls, name, text, mode=0o600):
        path = os.path.join(cls.secrets, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)

    def spec(self, secret):
        s = hrtest.spec(self.mock.addr, concurrency=2, requests=10)
        s["target"]["api_key_secret"] = secret
        return s

    def run_to_end(self, spec):
        rid = self.api.submit(spec)
        return rid, self.api.wait(rid)

    def test_key_reaches_the_server_and_is_kept_nowhere(self):
        rid, run = self.run_to_end(self.spec("prod"))
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.assertEqual(run["summary"]["counts"]["valid"], 10)
        self.assertEqual(run["spec"]["target"]["api_key_secret"], "prod")
        self.assertNotIn("api_key_env", run["spec"]["target"])
        for path in ("/runs/%d" % rid, "/runs/%d/summary" % rid,
                     "/runs/%d/summary?format=csv" % rid, "/runs/%d/records" % rid,
                     "/runs/%d/records?format=csv" % rid, "/runs/%d/client" % rid,
                     "/runs/%d/telemetry" % rid, "/runs"):
            st, body, _ = self.api.call("GET", path)
            self.assertEqual(st, 200, path)
            self.assertNotIn(KEY, str(body), path)
        # nor in the store's files (database, WAL), byte for byte
        for f in glob.glob(os.path.join(self.data, "*")):
            if os.path.isfile(f):
                with open(f, "rb") as fh:
                    self.assertNotIn(KEY.encode(), fh.read(), f)

    def test_wrong_key_is_refused_by_the_server(self):
        _, run = self.run_to_end(self.spec("wrong"))
        self.assertEqual(run["state"], "failed")
        self.assertEqual(run["summary"]["counts"]["valid"], 0)
        self.assertEqual(run["summary"]["errors"], {"http_4xx": 10})

    def test_missing_and_unsafe_secrets_fail_the_run(self):
        _, run = self.run_to_end(self.spec("absent"))
        self.assertEqual(run["state"], "failed")
        self.assertIn("no secret 'absent'", run["reason"])
        _, run = self.run_to_end(self.spec("open"))
        self.assertEqual(run["state"], "failed")
        self.assertIn("readable by others", run["reason"])

    def test_spec_errors(self):
        for secret, field in (("../etc/passwd", "target.api_key_secret"),
                              ("", "target.api_key_secret"),
                              (5, "target.api_key_secret")):
            st, err, _ = self.api.call("POST", "/runs", self.spec(secret))
            self.assertEqual(st, 400, err)
            self.assertEqual(err["error"]["field"], field)
        both = self.spec("prod")
        both["target"]["api_key_env"] = "SOME_VAR"
        st, err, _ = self.api.call("POST", "/runs", both)
        self.assertEqual(st, 400, err)
        self.assertEqual(err["error"]["field"], "target.api_key_secret")


if __name__ == "__main__":
    unittest.main()
