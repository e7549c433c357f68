#!/usr/bin/env python3
"""test_mock_eos.py - headroom-mock's --early-stop over real sockets: a
seeded share of chat, completions and TGI responses ends early, as at an
EOS token (half the max tokens, finish_reason "stop"), with the text and
the usage agreeing; requests that ask for their full length (ignore_eos,
min_tokens) never do; the draw follows the formula of docs/mock.md, is the
same for the same seed and apart from the failure draw; bad values of the
flag are refused naming it.

Each test starts the real mock on port 0; every mock is stopped with SIGTERM
at the end of its test and must exit 0 (under AddressSanitizer a leak or an
error report fails the test).

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_mock_eos.py
"""
import json
import re
import subprocess
import unittest

import test_mock as tm
from test_faults import MASK, fault_draw

EOS_SALT = 0x656f732d73746f70  # "eos-stop", mock/fault.c
N = 200
MAX = 10


def early_draw(seed, n, f):
    """Whether response n stops early: the formula of docs/mock.md."""
    z = ((seed ^ EOS_SALT) + n * 0x9e3779b97f4a7c15) & MASK
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    z ^= z >> 31
    return (z >> 11) * 2.0 ** -53 < f


def body_for(path, stream, max_tokens=MAX, **extra):
    if path == "/v1/chat/completions":
        body = tm.chat_body(max_tokens, stream=stream, usage=True if stream else None)
    else:
        body = {"model": "mock-model", "prompt": "hello mock server", "max_tokens": max_tokens}
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
    body.update(extra)
    return body


def generate(conn, path, stream, **extra):
    """One chat or completions request: (response number, words of the
    text, usage.completion_tokens, finish_reason)."""
    status, _, raw = tm.do(conn, "POST", path, body_for(path, stream, **extra))
    assert status == 200, raw
    if not stream:
        doc = json.loads(raw)
        choice = doc["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        return (int(doc["id"].rsplit("-", 1)[1]), len(text.split()),
                doc["usage"]["completion_tokens"], choice["finish_reason"])
    events = tm.sse_events(raw.decode())
    assert events[-1] == "[DONE]", events[-1]
    docs = [json.loads(e) for e in events[:-1]]
    nwords, finish, deltas = 0, None, 0
    for d in docs[:-1]:
        choice = d["choices"][0]
        text = choice["delta"].get("content", "") if "delta" in choice else choice["text"]
        if text:
            deltas += 1
        nwords += len(text.split())
        if choice.get("finish_reason"):
            assert finish is None, docs
            finish = choice["finish_reason"]
    assert deltas == nwords, docs  # one token per content event
    usage = docs[-1]
    assert usage["choices"] == [], usage
    return (int(usage["id"].rsplit("-", 1)[1]), nwords, usage["usage"]["completion_tokens"],
            finish)


class EarlyStopTest(tm.MockCase):

    def stopped_ids(self, m, path="/v1/chat/completions", stream=False, n=N, **extra):
        """Send n requests; check each one's length against its finish
        reason; return the set of response numbers that stopped early."""
        conn = m.conn()
        stopped = set()
        for _ in range(n):
            rid, nwords, usage, finish = generate(conn, path, stream, **extra)
            self.assertEqual(nwords, usage, (path, stream, rid))
            if finish == "stop":
                self.assertEqual(nwords, MAX // 2, (path, stream, rid))
                stopped.add(rid)
            else:
                self.assertEqual((nwords, finish), (MAX, "length"), (path, stream, rid))
        return stopped

    def test_share_stopped(self):
        m = self.start("--early-stop", "0.5")
        first = 1
        for path in ("/v1/chat/completions", "/v1/completions"):
            for stream in (False, True):
                stopped = self.stopped_ids(m, path, stream)
                ids = range(first, first + N)
                self.assertTrue(N * 0.25 <= len(stopped) <= N * 0.75,
                                (path, stream, len(stopped)))
                self.assertEqual(stopped, {n for n in ids if early_draw(0, n, 0.5)},
                                 (path, stream))
                first += N
        page = tm.do(m.conn(), "GET", "/metrics")[2].decode()
        counts = dict(re.findall(r'vllm:request_success_total\{model_name="mock-model",'
                                 r'finished_reason="(\w+)"\} (\d+)', page))
        nstop = sum(early_draw(0, n, 0.5) for n in range(1, first))
        self.assertEqual(counts, {"stop": str(nstop), "length": str(first - 1 - nstop)})

    def test_full_length_asked(self):
        m = self.start("--early-stop", "1")
        for stream in (False, True):
            for path in ("/v1/chat/completions", "/v1/completions"):
                # every response stops early with F 1, unless it asks not to
                self.assertEqual(len(self.stopped_ids(m, path, stream, n=20)), 20)
                self.assertEqual(self.stopped_ids(m, path, stream, n=20, ignore_eos=True), set())
                self.assertEqual(self.stopped_ids(m, path, stream, n=20, min_tokens=MAX), set())
                self.assertEqual(self.stopped_ids(m, path, stream, n=20, min_tokens=MAX + 5),
                                 set())
                self.assertEqual(
                    len(self.stopped_ids(m, path, stream, n=20, ignore_eos=False, min_tokens=2)),
                    20)
        conn = m.conn()
        for stream in (False, True):
            # min_tokens above half: the EOS comes no earlier than it
            self.assertEqual(generate(conn, "/v1/completions", stream, min_tokens=7)[1:],
                             (7, 7, "stop"))
            # at least one token
            self.assertEqual(generate(conn, "/v1/chat/completions", stream, max_tokens=1)[1:],
                             (1, 1, "stop"))
            self.assertEqual(generate(conn, "/v1/chat/completions", stream, max_tokens=3)[1:],
                             (1, 1, "stop"))
            self.assertEqual(generate(conn, "/v1/chat/completions", stream, max_tokens=0)[1:],
                             (0, 0, "length"))
        for bad in ({"ignore_eos": 1}, {"min_tokens": -1}, {"min_tokens": "3"}):
            status, _, raw = tm.do(conn, "POST", "/v1/chat/completions",
                                   body_for("/v1/chat/completions", False, **bad))
            self.assertEqual(status, 400, bad)
            self.assertIn(list(bad)[0], json.loads(raw)["error"]["message"])

    def test_without_flag(self):
        m = self.start()
        self.assertEqual(self.stopped_ids(m, n=50), set())
        self.assertEqual(self.stopped_ids(m, stream=True, n=50), set())
        page = tm.do(m.conn(), "GET", "/metrics")[2].decode()
        self.assertNotIn('finished_reason="stop"', page)

    def test_tgi(self):
        m = self.start("--early-stop", "0.5")
        conn = m.conn()
        seen = set()
        for n in range(1, 41):
            stop = early_draw(0, n, 0.5)
            ntok = MAX // 2 if stop else MAX
            reason = "eos_token" if stop else "length"
            params = {"max_new_tokens": MAX, "details": True}
            if n % 2:
                status, hdrs, raw = tm.do(conn, "POST", "/generate",
                                          {"inputs": "hello", "parameters": params})
                self.assertEqual(status, 200, raw)
                doc = json.loads(raw)
                self.assertEqual(hdrs["x-generated-tokens"], str(ntok))
                self.assertEqual(len(doc["details"]["tokens"]), ntok)
            else:
                status, _, raw = tm.do(conn, "POST", "/generate_stream",
                                       {"inputs": "hello", "parameters": params})
                self.assertEqual(status, 200, raw)
                text = raw.decode()
                events = [json.loads(b[len("data:"):]) for b in text[:-2].split("\n\n")]
                self.assertEqual(len(events), ntok)
                doc = events[-1]
            self.assertEqual(len(doc["generated_text"].split()), ntok)
            self.assertEqual(doc["details"]["finish_reason"], reason)
            self.assertEqual(doc["details"]["generated_tokens"], ntok)
            seen.add(stop)
        self.assertEqual(seen, {False, True})

    def test_seed(self):
        sets = []
        for seed in ("7", "7", "8"):
            m = self.start("--early-stop", "0.5", "--fail-seed", seed)
            sets.append(self.stopped_ids(m, n=100))
            m.stop()
        self.assertEqual(sets[0], sets[1])
        self.assertNotEqual(sets[0], sets[2])
        self.assertEqual(sets[0], {n for n in range(1, 101) if early_draw(7, n, 0.5)})
        # apart from the failure draw: the 500s are where they are without it
        m = self.start("--early-stop", "0.5", "--fail-500", "0.3", "--fail-seed", "7")
        conn = m.conn()
        failed, stopped = set(), set()
        for n in range(1, 101):
            status, _, raw = tm.do(conn, "POST", "/v1/chat/completions",
                                   body_for("/v1/chat/completions", False))
            if status == 500:
                failed.add(n)
                continue
            self.assertEqual(status, 200, raw)
            if json.loads(raw)["choices"][0]["finish_reason"] == "stop":
                stopped.add(n)
        self.assertEqual(failed, {n for n in range(1, 101)
                                  if fault_draw(7, n, {"500": 0.3}) == "500"})
        self.assertEqual(stopped, sets[0] - failed)

    def test_bad_flags(self):
        for value in ("-1", "2", "x", "", "nan", "0.5x"):
            p = subprocess.run([tm.MOCK, "--listen", "127.0.0.1:0", "--early-stop", value],
                               capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 2, value)
            self.assertEqual(p.stdout, b"")
            self.assertIn(b"--early-stop", p.stderr)
        p = subprocess.run([tm.MOCK, "--help"], capture_output=True, timeout=30)
        self.assertIn(b"--early-stop F", p.stdout)


if __name__ == "__main__":
    unittest.main()
