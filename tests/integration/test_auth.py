#!/usr/bin/env python3
"""test_auth.py - identities and roles (docs/security.md), against the real
headroomd over real sockets.

- Every route of api/openapi.yaml is called with no token, a read, a
  submit and an admin token: 401 without one (but GET /healthz), 403 when
  the role is too low, anything else when it is enough ({id} is 999999 and
  bodies are refused, so nothing is changed by the walk).
- Tokens: made by `headroomd token create` on the data directory (before
  the daemon starts, and while it runs) and over the API, listed without
  secrets or hashes, revoked over the API and by `headroomd token revoke`,
  and then refused (401).
- The audit log holds every write with the token's name and status; runs
  say who submitted and who cancelled them.
- A text/plain POST is 415; a foreign Host is 421 (DNS rebinding); a write
  from a foreign Origin is 403.
- Open mode: a loopback daemon that never had a token answers without one,
  as "local".
- Listening beyond loopback: refused at start without --tls-cert and
  --tls-key (before binding), allowed with --insecure-plaintext (a loud
  warning, tokens required); HTTPS with a self-signed certificate made by
  `openssl req`, reached by Python's ssl and by the CLI with --cacert and
  $HEADROOM_TOKEN.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_auth.py -v
"""

import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import hrtest  # noqa: E402
import yaml  # noqa: E402

HEADROOMD = os.path.join(hrtest.BIN, "headroomd")
HEADROOM = os.path.join(hrtest.BIN, "headroom")
DOC_PATH = os.path.join(hrtest.SRC, "api", "openapi.yaml")
TOKEN_RE = re.compile(r"^hr_[A-Za-z0-9_-]{43}$")

SUBMIT_ROUTES = {("POST", "/api/v1/runs"), ("POST", "/api/v1/runs/{id}/cancel"),
                 ("PATCH", "/api/v1/runs/{id}"), ("POST", "/api/v1/datasets"),
                 ("POST", "/api/v1/calibrations"), ("PUT", "/api/v1/baselines/{name}"),
                 ("POST", "/api/v1/sweeps"), ("POST", "/api/v1/sweeps/{id}/cancel"),
                 ("POST", "/api/v1/imports")}
ADMIN_GETS = {("GET", "/api/v1/tokens"), ("GET", "/api/v1/audit")}


def needed_role(method, path):
    """The role the documentation promises for a route (docs/security.md)."""
    if (method, path) in (("GET", "/api/v1/healthz"), ("GET", "/api/v1/readyz")):
        return None
    if (method, path) in ADMIN_GETS:
        return "admin"
    if method == "GET":
        return "read"
    if (method, path) in SUBMIT_ROUTES:
        return "submit"
    return "admin"


RANK = {"read": 1, "submit": 2, "admin": 3}


def token_cli(data, *args):
    return subprocess.run([HEADROOMD, "token", *args, "--data", data], capture_output=True,
                          text=True, timeout=60 * hrtest.time_scale())


def call(addr, method, path, body=None, token=None, headers=None, raw=None, json_type=True):
    """(status, headers, parsed JSON or bytes) over a fresh connection; a
    body goes as application/json unless headers say otherwise or
    json_type is false (then without a Content-Type)."""
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=30 * hrtest.time_scale())
    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = "Bearer " + token
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                        else None)
    if data is not None and "Content-Type" not in hdrs and json_type:
        hdrs["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=data, headers=hdrs)
        r = c.getresponse()
        out = r.read()
        if r.headers.get("Content-Type", "").startswith("application/json") and out:
            out = json.loads(out)
        return r.status, r.headers, out
    finally:
        c.close()


class TokenModeTest(unittest.TestCase):
    """One daemon whose store got an admin token before it started."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        r = token_cli(cls.tmp.name, "create", "--name", "boss", "--role", "admin")
        if r.returncode != 0:
            raise AssertionError("token create: %s" % r.stderr)
        cls.admin = r.stdout.strip()
        cls.mock = hrtest.start_mock("--quiet")
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.addr = cls.daemon.addr
        cls.tokens = {"admin": cls.admin}
        for role in ("read", "submit"):
            st, _, body = call(cls.addr, "POST", "/api/v1/tokens",
                               {"name": "t-" + role, "role": role}, token=cls.admin)
            if st != 201:
                raise AssertionError("POST /tokens: %s %s" % (st, body))
            cls.tokens[role] = body["token"]

    @classmethod
    def tearDownClass(cls):
        rcs = [cls.daemon.stop(), cls.mock.stop()]
        cls.tmp.cleanup()
        if rcs != [0, 0]:
            raise AssertionError("exit statuses %s" % rcs)

    def routes(self):
        with open(DOC_PATH, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        for path, item in doc["paths"].items():
            for method in item:
                if method in ("get", "post", "put", "patch", "delete"):
                    yield method.upper(), path

    def test_every_route_by_role(self):
        walked = 0
        for method, path in self.routes():
            url = path.replace("{id}", "999999").replace("{name}", "no-such-baseline")
            raw, headers = None, {}
            if method in ("POST", "PUT", "PATCH"):
                if path == "/api/v1/datasets":
                    raw, headers = b"not a dataset\n", {
                        "Content-Type": "application/octet-stream"}
                else:
                    raw = b'{"__not_a_member__": 1}'
            need = needed_role(method, path)
            for who in (None, "read", "submit", "admin"):
                with self.subTest(route="%s %s" % (method, path), token=who):
                    st, hdrs, body = call(self.addr, method, url, token=self.tokens.get(who),
                                          raw=raw, headers=headers)
                    what = "%s %s as %s: %s %r" % (method, url, who, st, body)
                    if need is None:
                        self.assertNotIn(st, (401, 403), what)
                    elif who is None:
                        self.assertEqual(st, 401, what)
                        self.assertIn("Bearer", hdrs.get("WWW-Authenticate", ""), what)
                        self.assertEqual(body["error"]["code"], "unauthorized", what)
                    elif RANK[who] < RANK[need]:
                        self.assertEqual(st, 403, what)
                        self.assertEqual(body["error"]["code"], "forbidden", what)
                        self.assertIn("'%s'" % need, body["error"]["message"], what)
                    else:
                        self.assertNotIn(st, (401, 403), what)
            walked += 1
        self.assertGreater(walked, 25)

    def test_bad_tokens_refused(self):
        for authz in ("Bearer hr_" + "A" * 43, "Bearer ", "Basic dXNlcjpwYXNz",
                      "Bearer " + self.admin + "x"):
            st, hdrs, body = call(self.addr, "GET", "/api/v1/runs",
                                  headers={"Authorization": authz})
            self.assertEqual(st, 401, authz)
            self.assertIn("Bearer", hdrs.get("WWW-Authenticate", ""))

    def test_tokens_listed_without_secrets(self):
        st, _, body = call(self.addr, "GET", "/api/v1/tokens", token=self.admin)
        self.assertEqual(st, 200)
        names = {t["name"]: t for t in body["tokens"]}
        self.assertEqual(names["boss"]["role"], "admin")
        self.assertEqual(names["t-read"]["role"], "read")
        for t in body["tokens"]:
            self.assertEqual(set(t), {"id", "name", "role", "created_at", "revoked_at",
                                      "last_used_at", "quotas"})
        text = json.dumps(body)
        for tok in self.tokens.values():
            self.assertTrue(TOKEN_RE.match(tok), tok)
            self.assertNotIn(tok, text)
        self.assertIsNotNone(names["boss"]["last_used_at"])
        r = token_cli(self.tmp.name, "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("t-submit", r.stdout)
        for tok in self.tokens.values():
            self.assertNotIn(tok, r.stdout)

    def test_token_create_refusals(self):
        for body, status, field in (({"name": "boss", "role": "read"}, 409, "name"),
                                    ({"name": "x", "role": "root"}, 400, "role"),
                                    ({"name": "123", "role": "read"}, 400, "name"),
                                    ({"name": "a b", "role": "read"}, 400, "name"),
                                    ({"role": "read"}, 400, "name"),
                                    ({"name": "x", "role": "read", "extra": 1}, 400, "extra")):
            st, _, resp = call(self.addr, "POST", "/api/v1/tokens", body, token=self.admin)
            self.assertEqual(st, status, body)
            self.assertEqual(resp["error"]["field"], field, resp)

    def test_revoked_tokens_refused(self):
        st, _, made = call(self.addr, "POST", "/api/v1/tokens", {"name": "short", "role": "read"},
                           token=self.admin)
        self.assertEqual(st, 201)
        self.assertEqual(call(self.addr, "GET", "/api/v1/runs", token=made["token"])[0], 200)
        st, _, _ = call(self.addr, "DELETE", "/api/v1/tokens/%d" % made["id"], token=self.admin)
        self.assertEqual(st, 204)
        st, _, body = call(self.addr, "GET", "/api/v1/runs", token=made["token"])
        self.assertEqual(st, 401)
        self.assertIn("revoked", body["error"]["message"])
        self.assertEqual(call(self.addr, "DELETE", "/api/v1/tokens/%d" % made["id"],
                              token=self.admin)[0], 409)
        self.assertEqual(call(self.addr, "DELETE", "/api/v1/tokens/999999",
                              token=self.admin)[0], 404)
        _, _, lst = call(self.addr, "GET", "/api/v1/tokens", token=self.admin)
        self.assertIsNotNone([t for t in lst["tokens"] if t["id"] == made["id"]][0]["revoked_at"])
        # the command line, on the data directory of the running daemon
        r = token_cli(self.tmp.name, "create", "--name", "cli-made", "--role", "read")
        self.assertEqual(r.returncode, 0, r.stderr)
        tok = r.stdout.strip()
        self.assertEqual(call(self.addr, "GET", "/api/v1/runs", token=tok)[0], 200)
        r = token_cli(self.tmp.name, "revoke", "cli-made")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(call(self.addr, "GET", "/api/v1/runs", token=tok)[0], 401)

    def test_audit_and_who_did_it(self):
        spec = hrtest.spec(self.mock.addr, mode="concurrency", concurrency=1, requests=100000)
        st, _, made = call(self.addr, "POST", "/api/v1/runs", spec, token=self.tokens["submit"])
        self.assertEqual(st, 201, made)
        rid = made["id"]
        st, _, c = call(self.addr, "POST", "/api/v1/runs/%d/cancel" % rid, token=self.admin)
        self.assertEqual(st, 202, c)
        deadline = time.time() + 60 * hrtest.time_scale()
        while True:
            st, _, run = call(self.addr, "GET", "/api/v1/runs/%d" % rid, token=self.tokens["read"])
            self.assertEqual(st, 200)
            if run["state"] in hrtest.TERMINAL or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(run["state"], "cancelled")
        self.assertEqual(run["submitted_by"], "t-submit")
        self.assertEqual(run["cancelled_by"], "boss")
        # a refused write is logged too, with its status; reads are not
        self.assertEqual(call(self.addr, "DELETE", "/api/v1/runs/%d" % rid,
                              token=self.tokens["submit"])[0], 403)
        deadline = time.time() + 10 * hrtest.time_scale()
        while True:
            st, _, audit = call(self.addr, "GET", "/api/v1/audit?limit=1000", token=self.admin)
            self.assertEqual(st, 200)
            got = [(e["who"], e["method"], e["path"], e["status"]) for e in audit["entries"]]
            if ("t-submit", "DELETE", "/api/v1/runs/%d" % rid, 403) in got or \
                    time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertIn(("t-submit", "POST", "/api/v1/runs", 201), got)
        self.assertIn(("boss", "POST", "/api/v1/runs/%d/cancel" % rid, 202), got)
        self.assertIn(("t-submit", "DELETE", "/api/v1/runs/%d" % rid, 403), got)
        self.assertIn(("boss", "POST", "/api/v1/tokens", 201), got)
        self.assertFalse([e for e in audit["entries"] if e["method"] == "GET"])
        for e in audit["entries"]:
            self.assertTrue(e["at"].endswith("Z"), e)
        # paging: newest first, next_before continues
        st, _, page = call(self.addr, "GET", "/api/v1/audit?limit=1", token=self.admin)
        self.assertEqual(len(page["entries"]), 1)
        st, _, page2 = call(self.addr, "GET", "/api/v1/audit?limit=1&before=%d" %
                            page["next_before"], token=self.admin)
        self.assertLess(page2["entries"][0]["id"], page["entries"][0]["id"])
        self.assertEqual(call(self.addr, "GET", "/api/v1/audit?limit=0", token=self.admin)[0],
                         400)

    def test_unsupported_media_type(self):
        spec = json.dumps(hrtest.spec(self.mock.addr)).encode()
        for ctype in ("text/plain", "application/x-www-form-urlencoded", None):
            st, _, body = call(self.addr, "POST", "/api/v1/runs", raw=spec,
                               token=self.tokens["submit"], json_type=False,
                               headers={"Content-Type": ctype} if ctype else {})
            self.assertEqual(st, 415, ctype)
            self.assertEqual(body["error"]["code"], "unsupported_media_type")

    def test_foreign_host_and_origin(self):
        port = self.addr.rsplit(":", 1)[1]
        st, _, body = call(self.addr, "GET", "/api/v1/healthz",
                           headers={"Host": "rebind.example:%s" % port})
        self.assertEqual(st, 421, body)
        self.assertEqual(body["error"]["code"], "host_not_allowed")
        for host in ("localhost:" + port, "127.0.0.1:" + port, "LOCALHOST:" + port):
            self.assertEqual(call(self.addr, "GET", "/api/v1/healthz",
                                  headers={"Host": host})[0], 200, host)
        st, _, body = call(self.addr, "POST", "/api/v1/tokens", {"name": "o", "role": "read"},
                           token=self.admin, headers={"Origin": "https://evil.example"})
        self.assertEqual(st, 403, body)
        self.assertEqual(body["error"]["code"], "origin_not_allowed")
        st, _, _ = call(self.addr, "POST", "/api/v1/tokens", {"name": "o", "role": "read"},
                        token=self.admin, headers={"Origin": "http://" + self.addr})
        self.assertEqual(st, 201)
        # reads are not refused for their Origin (the browser's CORS rules keep them)
        self.assertEqual(call(self.addr, "GET", "/api/v1/runs", token=self.admin,
                              headers={"Origin": "https://evil.example"})[0], 200)

    def test_dashboard_page_needs_no_token(self):
        st, hdrs, body = call(self.addr, "GET", "/")
        self.assertEqual(st, 200)
        self.assertIn(b"Authorization", body)


class OpenModeTest(hrtest.ServiceCase):
    """A loopback daemon that never had a token: open, as "local"."""

    @classmethod
    def setUpClass(cls):
        cls.start_service()

    def test_open_as_local(self):
        rid = self.api.submit(hrtest.spec(self.mock.addr, requests=4))
        run = self.api.wait(rid)
        self.assertEqual(run["submitted_by"], "local")
        self.assertIsNone(run["cancelled_by"])
        st, audit, _ = self.api.call("GET", "/audit")
        self.assertEqual(st, 200)
        self.assertIn(("local", "POST", "/api/v1/runs", 201),
                      [(e["who"], e["method"], e["path"], e["status"])
                       for e in audit["entries"]])
        # a text/plain POST from a foreign page was answered 201 before
        st, body, _ = self.api.call("POST", "/runs", hrtest.spec(self.mock.addr),
                                    headers={"Content-Type": "text/plain"})
        self.assertEqual(st, 415, body)
        st, body, _ = self.api.call("POST", "/runs", hrtest.spec(self.mock.addr),
                                    headers={"Origin": "http://evil.example"})
        self.assertEqual(st, 403, body)


class ListenTest(unittest.TestCase):
    """Where the daemon may listen, and HTTPS."""

    def setUp(self):
        self.tmp = hrtest.tempdir()
        self.addCleanup(self.tmp.cleanup)

    def headroomd(self, *args, timeout=30):
        return subprocess.run([HEADROOMD, "--data", self.tmp.name, *args],
                              capture_output=True, text=True,
                              timeout=timeout * hrtest.time_scale())

    def test_beyond_loopback_needs_tls(self):
        for args in (("--listen", "0.0.0.0:0"), ("--listen", "0.0.0.0:0", "--tls-cert", "x"),
                     ("--listen", "127.0.0.1:0", "--tls-key", "x")):
            r = self.headroomd(*args)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn("--tls-cert", r.stderr, args)
            self.assertNotIn("listening on", r.stdout, args)
        r = self.headroomd("--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/c.pem",
                           "--tls-key", "/nonexistent/k.pem")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/c.pem", r.stderr)

    def test_insecure_plaintext_warns_and_requires_tokens(self):
        d = hrtest.Proc([HEADROOMD, "--listen", "0.0.0.0:0", "--data", self.tmp.name,
                         "--insecure-plaintext", "--allowed-host", "127.0.0.1"],
                        "listening on")
        self.addCleanup(d.stop)
        port = d.addr.rsplit(":", 1)[1]
        addr = "127.0.0.1:" + port
        self.assertEqual(call(addr, "GET", "/api/v1/healthz")[0], 200)
        self.assertEqual(call(addr, "GET", "/api/v1/runs")[0], 401)
        self.assertEqual(d.stop(), 0)

    @unittest.skipUnless(shutil.which("openssl"), "needs openssl")
    def test_https_with_a_self_signed_certificate(self):
        cert = os.path.join(self.tmp.name, "cert.pem")
        key = os.path.join(self.tmp.name, "key.pem")
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "2", "-subj",
                            "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        data = os.path.join(self.tmp.name, "data")
        r = token_cli(data, "create", "--name", "ci", "--role", "submit")
        self.assertEqual(r.returncode, 0, r.stderr)
        tok = r.stdout.strip()
        d = hrtest.Proc([HEADROOMD, "--listen", "127.0.0.1:0", "--data", data,
                         "--tls-cert", cert, "--tls-key", key], "listening on")
        self.addCleanup(d.stop)
        self.assertIn("https://", d.banner)
        addr = d.addr.replace("https://", "")
        host, port = addr.rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=cert)
        c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
        c.request("GET", "/api/v1/runs", headers={"Authorization": "Bearer " + tok})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        r.read()
        c.close()
        # plain HTTP to a TLS port gets no HTTP answer
        with self.assertRaises((http.client.HTTPException, ConnectionError, socket.timeout)):
            call(addr, "GET", "/api/v1/healthz")
        # the CLI: --cacert and $HEADROOM_TOKEN; without the CA it refuses the certificate
        env = dict(os.environ, HEADROOM_TOKEN=tok)
        url = "https://" + addr
        r = subprocess.run([HEADROOM, "--url", url, "--cacert", cert, "list"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([HEADROOM, "--url", url, "list"], capture_output=True, text=True,
                           env=env, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        r = subprocess.run([HEADROOM, "--url", url, "--cacert", cert, "list"],
                           capture_output=True, text=True,
                           env=dict(os.environ, HEADROOM_TOKEN=""), timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("needs a token", r.stderr + r.stdout)
        r = subprocess.run([HEADROOM, "--url", url, "--cacert", cert, "--token", tok, "list"],
                           capture_output=True, text=True,
                           env=dict(os.environ, HEADROOM_TOKEN=""), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(d.stop(), 0)


class TokenCommandTest(unittest.TestCase):
    """headroomd token create|list|revoke on a data directory, no daemon."""

    def test_create_list_revoke(self):
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        r = token_cli(tmp.name, "create", "--name", "ci", "--role", "submit")
        self.assertEqual(r.returncode, 0, r.stderr)
        tok = r.stdout.strip()
        self.assertTrue(TOKEN_RE.match(tok), tok)
        self.assertIn("only this once", r.stderr)
        r = token_cli(tmp.name, "create", "--name", "ci", "--role", "read")
        self.assertEqual(r.returncode, 2)
        self.assertIn("exists", r.stderr)
        r = token_cli(tmp.name, "create", "--name", "x", "--role", "root")
        self.assertEqual(r.returncode, 2)
        r = token_cli(tmp.name, "create", "--name", "ops", "--role", "admin")
        self.assertEqual(r.returncode, 0)
        r = token_cli(tmp.name, "list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\n1 +ci +submit ")
        self.assertRegex(r.stdout, r"\n2 +ops +admin ")
        self.assertNotIn(tok, r.stdout)
        self.assertEqual(token_cli(tmp.name, "revoke", "2").returncode, 0)
        self.assertEqual(token_cli(tmp.name, "revoke", "ci").returncode, 0)
        r = token_cli(tmp.name, "revoke", "ci")
        self.assertEqual(r.returncode, 1)
        self.assertIn("already", r.stderr)
        self.assertEqual(token_cli(tmp.name, "revoke", "nobody").returncode, 1)
        r = token_cli(tmp.name, "list")
        self.assertEqual(len(re.findall(r"\d{4}-\d\d-\d\dT[^ ]*Z +\d{4}-", r.stdout)), 2,
                         r.stdout)
        # a directory without a store is said, not made
        r = token_cli(os.path.join(tmp.name, "nothing"), "list")
        self.assertEqual(r.returncode, 1)
        self.assertFalse(os.path.exists(os.path.join(tmp.name, "nothing")))
        # a daemon on that store requires tokens: every one made, even revoked
        d = hrtest.start_daemon(tmp.name)
        self.addCleanup(d.stop)
        self.assertEqual(call(d.addr, "GET", "/api/v1/runs")[0], 401)
        self.assertEqual(call(d.addr, "GET", "/api/v1/runs", token=tok)[0], 401)
        self.assertEqual(d.stop(), 0)


if __name__ == "__main__":
    unittest.main()
