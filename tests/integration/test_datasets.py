#!/usr/bin/env python3
"""test_datasets.py - dataset uploads over the real daemon (docs/datasets.md).

Every format is uploaded from a small file the test writes itself
(single_turn, random_pool, multi_turn, mooncake_trace and ShareGPT, with
and without length filters) and read back: the row (sha256 of the bytes,
entries, sessions, statistics), the list, and the entries preview. The
same bytes uploaded again give the same dataset (200, one file on disk
named by the hash); another format of the same bytes gets a row of its
own beside the one file. A broken line in each format is answered 400
invalid_dataset naming the line and the field, and nothing is kept; bad
query parameters name the parameter; an upload over the dataset bound is
413, whether announced by Content-Length or sent chunked, and leaves no
file behind. The `headroom dataset` commands run against the same daemon.
Last, the daemon is restarted on the same data directory and every
dataset is still there.

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_datasets.py
"""
import hashlib
import http.client
import json
import os
import select
import socket
import subprocess
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

MAX_DATASET = 256 << 20  # HR_MAX_DATASET_BYTES
CLI = os.path.join(hrtest.BIN, "headroom")

SINGLE = (b'{"text": "What is the capital of France?", "output_length": 16}\n'
          b'\n'
          b'{"text": "Write a haiku about the sea", "extra": {"temperature": 0.2}}\r\n'
          b'{"text": "caf\\u00e9 au lait", "role": "assistant", "delay": 250}\n')
MULTI = (b'{"session_id": "s1", "turns": [{"role": "system", "text": "Be brief."}, '
         b'{"text": "Hi there", "output_length": 8}, {"text": "And then?", "delay": 1000}]}\n'
         b'{"session_id": 2, "turns": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}\n')
MOONCAKE = (b'{"timestamp": 30, "input_length": 100, "output_length": 10, "hash_ids": [1, 2], '
            b'"session_id": "a"}\n'
            b'{"timestamp": 0, "input_length": 50, "output_length": 5, "session_id": "a"}\n'
            b'{"timestamp": 10, "input_length": 7, "output_length": 3, "hash_ids": [9]}\n')
SHAREGPT = json.dumps([
    {"id": "a", "conversations": [{"from": "human", "value": "What is two plus two?"},
                                  {"from": "gpt", "value": "Four."},
                                  {"from": "human", "value": "And three?"}]},
    {"id": "b", "conversations": [{"from": "gpt", "value": "no question first"}]},
    {"id": "c", "conversations": [{"from": "system", "value": "sys"},
                                  {"from": "human", "value": "Tell me a story about a cat"},
                                  {"from": "gpt", "value": "Once upon a time there was a cat."}]},
    {"id": "d", "conversations": []},
], indent=1).encode()


def datasets_dir(data):
    return os.path.join(data, "datasets")


class DatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.data = os.path.join(cls.tmp.name, "data")
        os.mkdir(cls.data)
        cls.daemon = hrtest.start_daemon(cls.data)

    @classmethod
    def tearDownClass(cls):
        rc = cls.daemon.stop()
        cls.tmp.cleanup()
        if rc != 0:
            raise AssertionError("headroomd exited with status %s" % rc)

    # --- helpers -------------------------------------------------------------------

    def request(self, method, path, body=None, headers=None):
        host, port = self.daemon.addr.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            c.request(method, "/api/v1" + path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            ctype = r.headers.get("Content-Type", "")
            self.assertTrue(ctype.startswith("application/json"), (path, ctype, data[:200]))
            return r.status, json.loads(data), r.headers
        finally:
            c.close()

    def upload(self, data, fmt, expect=201, **params):
        q = dict(params, format=fmt) if fmt is not None else dict(params)
        status, body, hdrs = self.request(
            "POST", "/datasets?" + urllib.parse.urlencode(q), body=data,
            headers={"Content-Type": "application/octet-stream"})
        self.assertEqual(status, expect, body)
        if status in (200, 201):
            self.assertEqual(hdrs.get("Location"), "/api/v1/datasets/%d" % body["id"])
            self.assertEqual(hdrs.get("Cache-Control"), "no-store")
            self.assertEqual(body["sha256"], hashlib.sha256(data).hexdigest())
            self.assertEqual(body["bytes"], len(data))
            self.assertEqual(body["format"], fmt)
            path = os.path.join(datasets_dir(self.data), body["sha256"])
            with open(path, "rb") as f:
                self.assertEqual(f.read(), data, "the stored file is the upload")
            got = self.get(body["id"])
            self.assertEqual(got, body)
        return body

    def delete(self, ds_id):
        """DELETE a dataset: the status (204 has no body)."""
        host, port = self.daemon.addr.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            c.request("DELETE", "/api/v1/datasets/%d" % ds_id)
            r = c.getresponse()
            body = r.read()
            if r.status == 204:
                self.assertEqual(body, b"")
            return r.status
        finally:
            c.close()

    def get(self, ds_id):
        status, body, _ = self.request("GET", "/datasets/%d" % ds_id)
        self.assertEqual(status, 200, body)
        return body

    def entries(self, ds_id, **q):
        path = "/datasets/%d/entries" % ds_id
        if q:
            path += "?" + urllib.parse.urlencode(q)
        status, body, _ = self.request("GET", path)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["dataset_id"], ds_id)
        return body["entries"]

    def bad(self, data, fmt, line, field, msg=None, **params):
        body = self.upload(data, fmt, expect=400, **params)
        err = body["error"]
        self.assertEqual(err["code"], "invalid_dataset", err)
        self.assertEqual(err["line"], line, err)
        self.assertEqual(err["field"], field, err)
        if line is not None:
            self.assertTrue(err["message"].startswith("line %d: " % line), err)
        if msg:
            self.assertIn(msg, err["message"])
        return err

    def error(self, method, path, status, code, field, body=None):
        st, ans, _ = self.request(method, path, body=body)
        self.assertEqual(st, status, ans)
        self.assertEqual(ans["error"]["code"], code, ans)
        self.assertEqual(ans["error"]["field"], field, ans)
        self.assertNotIn("line", ans["error"])

    def no_temporary_files(self):
        left = [n for n in os.listdir(datasets_dir(self.data)) if n.startswith(".")]
        self.assertEqual(left, [], "uploads left behind")

    def stats(self, ds, key):
        d = ds["stats"][key]
        return None if d is None else (d["count"], d["min"], d["avg"], d["max"])

    # --- each format -----------------------------------------------------------------

    def test_single_turn_and_random_pool(self):
        ds = self.upload(SINGLE, "single_turn", name="chat prompts")
        self.assertEqual((ds["name"], ds["entries"], ds["sessions"], ds["options"]),
                         ("chat prompts", 3, 3, {}))
        self.assertEqual(self.stats(ds, "prompt_chars"), (3, 12, (30 + 27 + 12) / 3, 30))
        self.assertEqual(self.stats(ds, "output_length"), (1, 16, 16, 16))
        self.assertIsNone(ds["stats"]["input_length"])
        self.assertEqual((ds["stats"]["with_extra"], ds["stats"]["with_delay"]), (1, 1))
        e = self.entries(ds["id"])
        self.assertEqual([x["line"] for x in e], [1, 3, 4])
        self.assertEqual(e[0]["text"], "What is the capital of France?")
        self.assertEqual(e[0]["output_length"], 16)
        self.assertEqual(e[1]["extra"], {"temperature": 0.2})
        self.assertEqual((e[2]["text"], e[2]["role"], e[2]["delay_ms"]),
                         ("caf\u00e9 au lait", "assistant", 250))
        self.assertEqual([x["session"] for x in e], [0, 1, 2])
        self.assertEqual(self.entries(ds["id"], limit=1, offset=2), e[2:])
        self.assertEqual(self.entries(ds["id"], offset=3), [])
        # the same bytes as a random pool: a dataset of its own, the same file
        pool = self.upload(SINGLE, "random_pool")
        self.assertNotEqual(pool["id"], ds["id"])
        self.assertIsNone(pool["name"])
        self.assertEqual(pool["sha256"], ds["sha256"])
        self.assertEqual(pool["entries"], 3)
        self.assertEqual(len([n for n in os.listdir(datasets_dir(self.data))
                              if n == ds["sha256"]]), 1)

    def test_multi_turn(self):
        ds = self.upload(MULTI, "multi_turn")
        self.assertEqual((ds["entries"], ds["sessions"]), (5, 2))
        self.assertEqual(self.stats(ds, "turns"), (2, 2, 2.5, 3))
        self.assertEqual(ds["stats"]["with_system"], 1)
        e = self.entries(ds["id"])
        self.assertEqual([(x["session"], x["turn"], x["session_id"]) for x in e],
                         [(0, 0, "s1"), (0, 1, "s1"), (1, 0, "2"), (1, 1, "2"), (1, 2, "2")])
        self.assertEqual(e[0]["system"], "Be brief.")
        self.assertIsNone(e[1]["system"])
        self.assertEqual(e[1]["delay_ms"], 1000)
        self.assertEqual([x["line"] for x in e], [1, 1, 2, 2, 2])

    def test_mooncake_trace(self):
        ds = self.upload(MOONCAKE, "mooncake_trace")
        self.assertEqual((ds["entries"], ds["sessions"]), (3, 2))
        self.assertEqual(self.stats(ds, "input_length"), (3, 7, (100 + 50 + 7) / 3, 100))
        self.assertEqual(self.stats(ds, "hash_ids"), (3, 0, 1, 2))
        self.assertIsNone(ds["stats"]["prompt_chars"])
        e = self.entries(ds["id"])
        self.assertEqual([x["timestamp_ms"] for x in e], [0, 10, 30])
        self.assertEqual([x["line"] for x in e], [2, 3, 1])
        self.assertEqual([x["hash_ids"] for x in e], [[], [9], [1, 2]])
        self.assertEqual([(x["session"], x["turn"]) for x in e], [(0, 0), (1, 0), (0, 1)])
        self.assertEqual((e[0]["input_length"], e[0]["text"]), (50, None))

    def test_sharegpt(self):
        ds = self.upload(SHAREGPT, "sharegpt", name="sharegpt sample")
        self.assertEqual((ds["entries"], ds["sessions"]), (2, 2))
        self.assertEqual((ds["stats"]["skipped"], ds["stats"]["filtered"]), (2, 0))
        self.assertEqual(self.stats(ds, "reply_chars"), (2, 5, 19, 33))
        e = self.entries(ds["id"])
        self.assertEqual([(x["text"], x["reply"], x["session_id"]) for x in e],
                         [("What is two plus two?", "Four.", "a"),
                          ("Tell me a story about a cat", "Once upon a time there was a cat.",
                           "c")])
        self.assertEqual([x["line"] for x in e], [2, 28])  # where each element starts
        self.assertIsNone(e[0]["output_length"])
        # length filters make another dataset of the same file
        words = self.upload(SHAREGPT, "sharegpt", max_reply=3, unit="words")
        self.assertEqual(words["options"], {"unit": "words", "min_prompt": 0, "max_prompt": 0,
                                            "min_reply": 0, "max_reply": 3})
        self.assertEqual((words["entries"], words["stats"]["filtered"]), (1, 1))
        chars = self.upload(SHAREGPT, "sharegpt", min_prompt=22)
        self.assertEqual(chars["options"]["unit"], "chars")
        self.assertEqual(self.entries(chars["id"])[0]["session_id"], "c")
        again = self.upload(SHAREGPT, "sharegpt", expect=200, max_reply=3, unit="words")
        self.assertEqual(again, words)
        self.bad(SHAREGPT, "sharegpt", None, None, "no entry has a human turn", min_reply=100)

    # --- storage by content ----------------------------------------------------------------

    def test_same_bytes_same_dataset(self):
        data = b'{"text": "deduplicated by content"}\n'
        first = self.upload(data, "single_turn", name="first")
        second = self.upload(data, "single_turn", expect=200, name="second")
        self.assertEqual(second, first)  # the first name stays
        self.assertEqual(second["name"], "first")
        files = os.listdir(datasets_dir(self.data))
        self.assertEqual(files.count(first["sha256"]), 1)
        self.no_temporary_files()
        status, lst, _ = self.request("GET", "/datasets")
        self.assertEqual(status, 200)
        self.assertEqual([d["id"] for d in lst["datasets"]].count(first["id"]), 1)
        ids = [d["id"] for d in lst["datasets"]]
        self.assertEqual(ids, sorted(ids, reverse=True), "newest first")
        status, one, _ = self.request("GET", "/datasets?limit=1")
        self.assertEqual(one["datasets"], lst["datasets"][:1])

    # --- errors ------------------------------------------------------------------------------

    def test_broken_lines(self):
        before = self.request("GET", "/datasets?limit=1000")[1]
        self.bad(b'{"text": "a"}\n{"text": "b", "output_length": 0}\n', "single_turn", 2,
                 "output_length", "'output_length' must be an integer from 1 to 1000000")
        self.bad(b'{"text": "a"}\n\n{"text": "b", "colour": 1}\n', "random_pool", 3, "colour",
                 "unknown field 'colour'")
        self.bad(b'{"text": "a"}\n{"text": "b"\n', "single_turn", 2, None, "not valid JSON")
        self.bad(b'{"turns": [{"text": "a"}]}\n{"turns": [{"text": "a"}, {"text": "b"}, '
                 b'{"text": 3}]}\n', "multi_turn", 2, "turns[2].text",
                 "line 2: 'turns[2].text' must be a string")
        self.bad(b'{"session_id": "x", "turns": [{"text": "a"}]}\n'
                 b'{"session_id": "x", "turns": [{"text": "b"}]}\n', "multi_turn", 2,
                 "session_id", "repeats the one of line 1")
        self.bad(MOONCAKE + b'{"timestamp": 1, "input_length": -5, "output_length": 1}\n',
                 "mooncake_trace", 4, "input_length", "'input_length' must be an integer")
        broken = SHAREGPT.replace(b'"value": "Four."', b'"value": 4')
        self.bad(broken, "sharegpt", 2, "conversations[1].value",
                 "'conversations[1].value' must be a string (entry 0)")
        self.bad(b'{"text": "\xff"}\n', "single_turn", 1, None, "not valid JSON")
        self.bad(b"", "single_turn", None, None, "the dataset has no entries")
        self.bad(b"[]", "sharegpt", None, None)
        after = self.request("GET", "/datasets?limit=1000")[1]
        self.assertEqual(after, before, "a refused upload leaves no dataset")
        self.no_temporary_files()

    def test_bad_parameters(self):
        up = "/datasets?"
        data = b'{"text": "a"}\n'
        self.error("POST", up, 400, "missing_field", "format", body=data)
        self.error("POST", up + "format=csv", 400, "invalid_value", "format", body=data)
        self.error("POST", up + "format=single_turn&name=", 400, "invalid_value", "name",
                   body=data)
        self.error("POST", up + "format=single_turn&name=" + "n" * 257, 400, "invalid_value",
                   "name", body=data)
        self.error("POST", up + "format=single_turn&name=a%01b", 400, "invalid_value", "name",
                   body=data)
        self.error("POST", up + "format=single_turn&name=%ff", 400, "invalid_value", "name",
                   body=data)
        self.error("POST", up + "format=single_turn&max_reply=5", 400, "invalid_value",
                   "format", body=data)
        self.error("POST", up + "format=sharegpt&min_prompt=0", 400, "out_of_range",
                   "min_prompt", body=SHAREGPT)
        self.error("POST", up + "format=sharegpt&max_reply=x", 400, "out_of_range",
                   "max_reply", body=SHAREGPT)
        self.error("POST", up + "format=sharegpt&min_prompt=9&max_prompt=3", 400,
                   "invalid_value", "max_prompt", body=SHAREGPT)
        self.error("POST", up + "format=sharegpt&unit=bytes", 400, "invalid_value", "unit",
                   body=SHAREGPT)
        for q in ("limit=0", "limit=1001", "limit=x"):
            self.error("GET", "/datasets?" + q, 400, "out_of_range", "limit")
        for path in ("/datasets/999999", "/datasets/abc", "/datasets/0",
                     "/datasets/999999/entries"):
            self.error("GET", path, 404, "not_found", "id")
        ds = self.upload(b'{"text": "for the preview"}\n', "single_turn")
        for q, field in (("limit=0", "limit"), ("limit=101", "limit"), ("offset=-1", "offset"),
                         ("offset=x", "offset")):
            self.error("GET", "/datasets/%d/entries?%s" % (ds["id"], q), 400, "out_of_range",
                       field)
        self.error("DELETE", "/datasets", 405, "method_not_allowed", None)
        self.error("PUT", "/datasets", 405, "method_not_allowed", None, body=b"")
        self.no_temporary_files()

    def test_bad_query_answered_before_the_body(self):
        """A bad query is refused at once: the 400 arrives before a byte of a
        (large) announced body has been sent."""
        host, port = self.daemon.addr.rsplit(":", 1)
        for query, field in (("format=csv", "format"), ("", "format"),
                             ("format=sharegpt&min_prompt=0", "min_prompt")):
            s = socket.create_connection((host, int(port)), timeout=10)
            try:
                s.sendall(("POST /api/v1/datasets?%s HTTP/1.1\r\nHost: localhost\r\n"
                           "Content-Length: 100000000\r\n\r\n" % query).encode())
                r = http.client.HTTPResponse(s, method="POST")
                r.begin()
                ans = json.loads(r.read())
                self.assertEqual((r.status, ans["error"]["field"]), (400, field), ans)
            finally:
                s.close()
        self.no_temporary_files()

    def test_delete(self):
        data = b'{"text": "to be deleted", "output_length": 2}\n'
        one = self.upload(data, "single_turn", name="one")
        two = self.upload(data, "random_pool", name="two")  # the same file
        path = os.path.join(datasets_dir(self.data), one["sha256"])
        self.assertEqual(self.delete(one["id"]), 204)
        self.error("GET", "/datasets/%d" % one["id"], 404, "not_found", "id")
        self.error("DELETE", "/datasets/%d" % one["id"], 404, "not_found", "id")
        self.assertTrue(os.path.exists(path), "another dataset reads the file")
        self.assertEqual(self.entries(two["id"])[0]["text"], "to be deleted")
        # in use by a queued or running run: refused, naming the run
        mock = hrtest.start_mock("--quiet", "--ttft-ms", "200")
        try:
            api = hrtest.Api(self.daemon.addr)
            spec = hrtest.spec(mock.addr, concurrency=1, requests=20)
            spec["workload"] = {"kind": "dataset", "dataset": {"id": two["id"]}}
            rid = api.submit(spec)
            st, ans, _ = self.request("DELETE", "/datasets/%d" % two["id"])
            self.assertEqual((st, ans["error"]["code"], ans["error"]["field"]),
                             (409, "conflict", "id"), ans)
            self.assertIn("run %d" % rid, ans["error"]["message"])
            api.call("POST", "/runs/%d/cancel" % rid)
            self.assertEqual(api.wait(rid)["state"], "cancelled")
        finally:
            self.assertEqual(mock.stop(), 0)
        r = self.cli("delete", str(two["id"]))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "dataset %d deleted\n" % two["id"])
        self.assertFalse(os.path.exists(path), "the last dataset reading the file took it")
        r = self.cli("delete", str(two["id"]))
        self.assertEqual(r.returncode, 3)
        self.assertIn("error: no dataset with id %d (field: id)" % two["id"], r.stderr)
        # a finished run still names it by content; a new one is refused
        st, run, _ = api.call("GET", "/runs/%d" % rid)
        self.assertEqual(run["spec"]["workload"]["dataset"]["sha256"], two["sha256"])
        st, ans, _ = api.call("POST", "/runs", spec)
        self.assertEqual((st, ans["error"]["field"]), (400, "workload.dataset.id"))
        # the same bytes uploaded again are stored again, under a new id: ids
        # are never reused, and an old spec naming another dataset is refused
        again = self.upload(data, "single_turn")
        self.assertGreater(again["id"], two["id"])
        other = self.upload(b'{"text": "other bytes"}\n', "random_pool")
        old = run["spec"]
        old["workload"]["dataset"]["id"] = other["id"]
        st, ans, _ = api.call("POST", "/runs", old)
        self.assertEqual((st, ans["error"]["field"]), (400, "workload.dataset.sha256"), ans)
        old["workload"]["dataset"].update(id=again["id"], sha256=again["sha256"])
        st, ans, _ = api.call("POST", "/runs", old)
        self.assertEqual((st, ans["error"]["field"]), (400, "workload.dataset.format"), ans)

    def test_too_large(self):
        host, port = self.daemon.addr.rsplit(":", 1)

        def send(head, pieces):
            s = socket.create_connection((host, int(port)), timeout=60)
            try:
                s.sendall(head)
                for p in pieces:
                    if select.select([s], [], [], 0)[0]:
                        break  # answered early
                    try:
                        s.sendall(p)
                    except (BrokenPipeError, ConnectionResetError):
                        break
                r = http.client.HTTPResponse(s, method="POST")
                r.begin()
                return r.status, json.loads(r.read())
            finally:
                s.close()

        path = b"/api/v1/datasets?format=single_turn"
        head = (b"POST " + path + b" HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Length: %d\r\n\r\n" % (MAX_DATASET + 1))
        st, body = send(head, [b" " * 65536] * 4)
        self.assertEqual((st, body["error"]["code"]), (413, "body_too_large"))
        self.assertIn(str(MAX_DATASET), body["error"]["message"])

        block = b" " * (1 << 20)

        def chunks():
            for _ in range(MAX_DATASET // len(block)):
                yield b"%x\r\n" % len(block) + block + b"\r\n"
            yield b"2\r\n  \r\n0\r\n\r\n"
        head = b"POST " + path + b" HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
        st, body = send(head, chunks())
        self.assertEqual((st, body["error"]["code"]), (413, "body_too_large"))
        self.assertIn(str(MAX_DATASET), body["error"]["message"])
        status, _, _ = self.request("GET", "/healthz")
        self.assertEqual(status, 200)
        self.no_temporary_files()
        # the other routes keep their 1 MiB bound
        st, body = send(b"POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\n"
                        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                        % ((1 << 20) + 1), [b" " * 65536])
        self.assertEqual(st, 413)

    # --- the CLI ---------------------------------------------------------------------------------

    def cli(self, *args):
        env = dict(os.environ, HEADROOM_URL="http://" + self.daemon.addr)
        return subprocess.run([CLI, "dataset", *args], capture_output=True, text=True, env=env,
                              timeout=60)

    def test_cli(self):
        path = os.path.join(self.tmp.name, "cli-prompts.jsonl")
        data = b'{"text": "from the command line"}\n{"text": "second", "output_length": 4}\n'
        with open(path, "wb") as f:
            f.write(data)
        r = self.cli("upload", path, "--format", "single_turn")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^dataset (\d+): single_turn, 2 entries in 2 sessions")
        self.assertIn("stored (sha256 %s)" % hashlib.sha256(data).hexdigest(), r.stdout)
        ds_id = int(r.stdout.split()[1].rstrip(":"))
        self.assertEqual(self.get(ds_id)["name"], "cli-prompts.jsonl")
        r = self.cli("upload", path, "--format=single_turn", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), self.get(ds_id))
        r = self.cli("upload", path, "--format", "single_turn")
        self.assertIn("already stored", r.stdout)
        r = self.cli("list")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cli-prompts.jsonl", r.stdout)
        r = self.cli("list", "--json", "--limit", "2")
        self.assertEqual(len(json.loads(r.stdout)["datasets"]), 2)
        r = self.cli("show", str(ds_id), "--entries", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("from the command line", r.stdout)
        self.assertIn("prompt, characters", r.stdout)
        # errors: the daemon's message with line and field; usage errors
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(bad, "wb") as f:
            f.write(b'{"turns": [{"text": "a"}]}\n{"turns": [{"text": 1}]}\n')
        r = self.cli("upload", bad, "--format", "multi_turn")
        self.assertEqual(r.returncode, 3)
        self.assertIn("error: line 2: 'turns[0].text' must be a string", r.stderr)
        self.assertIn("(field: turns[0].text)", r.stderr)
        for args in (("upload", path), ("upload", path, "--format", "csv"), ("upload",),
                     ("show", "x"), ("frobnicate",), ("list", "--entries", "3"),
                     ("upload", os.path.join(self.tmp.name, "missing"), "--format", "sharegpt"),
                     ("upload", path, "--format", "sharegpt", "--unit", "bytes")):
            r = self.cli(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
        r = self.cli("show", "999999")
        self.assertEqual(r.returncode, 3)
        r = self.cli("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("headroom dataset upload", r.stdout)

    # --- last: a restart keeps everything ----------------------------------------------------------

    def test_zz_restart_keeps_datasets(self):
        ds = self.upload(MOONCAKE + b"\n", "mooncake_trace", name="kept")
        before = self.request("GET", "/datasets?limit=1000")[1]
        preview = self.entries(ds["id"])
        self.assertEqual(self.daemon.stop(), 0)
        type(self).daemon = hrtest.start_daemon(self.data)
        self.assertEqual(self.request("GET", "/datasets?limit=1000")[1], before)
        self.assertEqual(self.entries(ds["id"]), preview)
        self.upload(MOONCAKE + b"\n", "mooncake_trace", expect=200)
        self.no_temporary_files()


if __name__ == "__main__":
    unittest.main(verbosity=2)
