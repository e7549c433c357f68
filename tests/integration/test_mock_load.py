#!/usr/bin/env python3
"""test_mock_load.py - headroom-mock's load model (continuous batching) over
real sockets.

Each test starts the mock with hrtest.start_mock(flags), drives streamed
/v1/completions requests from one selector loop (one connection each, sent
at planned times), timestamps every token event as it arrives, and checks
the queueing, batch and prefill effects the model promises (docs/mock.md).
Every mock is stopped with SIGTERM at the end of its test and must exit 0,
so that under AddressSanitizer a leak or error report fails the test.
The bounds leave room for a loaded machine: they test the shape (who
waits, what grows), not the exact milliseconds.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_mock_load.py
"""
import json
import math
import os
import selectors
import socket
import statistics
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

MOCK = os.path.join(hrtest.BIN, "headroom-mock")
TEXT_KEY = b'"text":"'  # once in every completions event that carries tokens


def completion(max_tokens, prompt="hello mock server", stream=True):
    return {"model": "mock-model", "prompt": prompt, "max_tokens": max_tokens,
            "stream": stream}


def request_bytes(body):
    data = json.dumps(body).encode()
    return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(data), data))


class Stream:
    def __init__(self, offset, body):
        self.offset = offset
        self.req = request_bytes(body)
        self.sent = None    # monotonic seconds
        self.tokens = []    # monotonic seconds of each token event
        self.raw = b""
        self.closed = None  # monotonic seconds of EOF

    @property
    def ttft(self):
        return self.tokens[0] - self.sent

    def itls(self):
        return [b - a for a, b in zip(self.tokens, self.tokens[1:])]


def run_streams(addr, plan, limit_s=20.0):
    """plan: [(offset_s, body)]. Connects all first, then sends request i at
    t0 + offset_i on its own connection and reads every response to EOF.
    Returns the Streams in plan order."""
    host, _, port = addr.rpartition(":")
    streams = [Stream(off, body) for off, body in plan]
    sel = selectors.DefaultSelector()
    socks = {}
    for st in streams:
        s = socket.create_connection((host, int(port)), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks[st] = s
    order = sorted(streams, key=lambda st: st.offset)
    t0 = time.monotonic() + 0.05
    deadline = t0 + limit_s
    nxt = 0
    open_count = len(streams)
    try:
        while open_count and time.monotonic() < deadline:
            now = time.monotonic()
            while nxt < len(order) and t0 + order[nxt].offset <= now:
                st = order[nxt]
                st.sent = time.monotonic()  # before: the server may take it at once
                socks[st].sendall(st.req)  # small: loopback takes it whole
                sel.register(socks[st], selectors.EVENT_READ, st)
                nxt += 1
                now = time.monotonic()
            wait = 0.5
            if nxt < len(order):
                wait = max(0.0, min(wait, t0 + order[nxt].offset - now))
            for key, _ in sel.select(wait):
                st = key.data
                data = key.fileobj.recv(65536)
                t = time.monotonic()
                if not data:
                    st.closed = t
                    sel.unregister(key.fileobj)
                    open_count -= 1
                    continue
                before = st.raw.count(TEXT_KEY)
                st.raw += data
                st.tokens.extend([t] * (st.raw.count(TEXT_KEY) - before))
    finally:
        sel.close()
        for s in socks.values():
            s.close()
    if open_count:
        raise AssertionError("%d of %d streams unfinished after %s s"
                             % (open_count, len(streams), limit_s))
    return streams


def p99(values):
    v = sorted(values)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]


class LoadModelTest(unittest.TestCase):
    def setUp(self):
        self.mocks = []

    def tearDown(self):
        for m in self.mocks:
            self.assertEqual(m.stop(), 0, "headroom-mock %s did not exit cleanly" % m.argv)

    def start(self, *flags):
        m = hrtest.start_mock("--quiet", *flags)
        self.mocks.append(m)
        return m

    def check_complete(self, streams, tokens):
        for st in streams:
            self.assertEqual(len(st.tokens), tokens, st.raw[-300:])
            self.assertTrue(st.raw.startswith(b"HTTP/1.1 200 OK\r\n"), st.raw[:100])
            self.assertIn(b"data: [DONE]\n\n", st.raw)

    # (1) a full batch makes the rest queue
    def test_max_batch_queues(self):
        m = self.start("--max-batch", "4", "--decode-ms", "5")
        streams = run_streams(m.addr, [(0, completion(10))] * 12)
        self.check_complete(streams, 10)
        ttfts = sorted(st.ttft for st in streams)
        # One batch of 10 tokens takes 10 steps of 5 ms: the first four
        # start at once, the next four after ~50 ms, the last four after
        # ~100 ms (two batches' worth of decoding).
        for t in ttfts[:4]:
            self.assertLess(t, 0.045, ttfts)
        for t in ttfts[4:8]:
            self.assertGreaterEqual(t, 0.045, ttfts)
        for t in ttfts[8:]:
            self.assertGreaterEqual(t, 0.095, ttfts)
            self.assertLess(t, 1.0, ttfts)
        # With at most four running a step is 5 ms, so a stream's ten tokens
        # take ten steps: its last token comes at least 50 ms after it was
        # admitted. A bound on when the stream ends, not on single gaps: a
        # stalled client or mock (a busy CI machine) reads several due
        # tokens in one go, which zeroes gaps but never ends a stream early.
        ends = sorted(st.tokens[-1] - st.sent for st in streams)
        for i, t in enumerate(ends):
            self.assertGreaterEqual(t, 0.045 * (i // 4 + 1), ends)

    # (2) ITL grows with the number of running sequences
    def test_itl_grows_with_batch(self):
        m = self.start("--decode-ms", "2", "--decode-ms-per-seq", "1")
        alone = run_streams(m.addr, [(0, completion(30))])
        self.check_complete(alone, 30)
        itl_alone = statistics.median(alone[0].itls())
        loaded = run_streams(m.addr, [(0, completion(30))] * 16)
        self.check_complete(loaded, 30)
        itl_loaded = statistics.median(x for st in loaded for x in st.itls())
        # 2 + 1 * 1 = 3 ms alone; 2 + 1 * 16 = 18 ms with sixteen. The lower
        # bounds are on when the streams end (30 steps each), which stalls
        # of a busy machine can only delay; the medians bound from above.
        self.assertGreaterEqual(alone[0].tokens[-1] - alone[0].sent, 30 * 0.0025)
        self.assertLess(itl_alone, 0.009)
        for st in loaded:
            self.assertGreaterEqual(st.tokens[-1] - st.sent, 30 * 0.016)
        self.assertLess(itl_loaded, 0.040)
        self.assertGreater(itl_loaded, 3 * itl_alone)

    # (3) prefill time grows with the prompt, and it holds up the engine
    def test_prefill_grows_with_prompt(self):
        m = self.start("--prefill-ms-per-1k", "100")
        long_prompt = " ".join(["word"] * 2000)
        short = run_streams(m.addr, [(0, completion(5, prompt=" ".join(["w"] * 10)))])
        long_ = run_streams(m.addr, [(0, completion(5, prompt=long_prompt))])
        self.check_complete(short + long_, 5)
        self.assertLess(short[0].ttft, 0.05)
        self.assertGreaterEqual(long_[0].ttft, 0.200)  # 2000 * 100 / 1000 ms
        self.assertLess(long_[0].ttft, 1.0)
        # with no decode time all tokens come with the first
        self.assertLess(long_[0].tokens[-1] - long_[0].tokens[0], 0.05)
        # prefill is serialised with the engine's steps: a short prompt
        # sent while the long one prefills waits for that step to end
        both = run_streams(m.addr, [(0, completion(5, prompt=long_prompt)),
                                    (0.05, completion(5, prompt="tiny"))])
        self.check_complete(both, 5)
        self.assertGreaterEqual(both[1].ttft, 0.1)
        self.assertGreaterEqual(both[1].tokens[0], both[0].tokens[0])

    # (4) bursts widen the TTFT tail that smooth traffic of the same rate avoids
    def test_bursty_tail(self):
        flags = ("--max-batch", "8", "--decode-ms", "3", "--decode-ms-per-seq", "0.3")
        m = self.start(*flags)
        body = completion(20)
        bursty = run_streams(m.addr, [(0.4 * b, body) for b in range(5) for _ in range(16)])
        smooth = run_streams(m.addr, [(0.025 * i, body) for i in range(80)])
        self.check_complete(bursty + smooth, 20)
        p_bursty = p99([st.ttft for st in bursty])
        p_smooth = p99([st.ttft for st in smooth])
        # A burst of 16 fills the 8 slots and queues 8 behind ~20 steps of
        # 3 + 0.3 * 8 ms (~110 ms); 40 requests/s evenly spaced keep about
        # three running and never queue.
        self.assertGreaterEqual(p_bursty, 0.08, (p_bursty, p_smooth))
        self.assertGreater(p_bursty, 3 * p_smooth, (p_bursty, p_smooth))
        self.assertLess(p_smooth, 0.04, (p_bursty, p_smooth))

    # a client that leaves frees its slot for the queue
    def test_disconnect_frees_slot(self):
        m = self.start("--max-batch", "1", "--decode-ms", "5")
        host, _, port = m.addr.rpartition(":")
        hog = socket.create_connection((host, int(port)), timeout=10)
        hog.sendall(request_bytes(completion(2000)))  # 10 s if left to run
        self.assertTrue(hog.recv(100).startswith(b"HTTP/1.1 200"))
        waiter = socket.create_connection((host, int(port)), timeout=10)
        waiter.sendall(request_bytes(completion(3)))
        time.sleep(0.1)
        t0 = time.monotonic()
        hog.close()
        data = b""
        while TEXT_KEY not in data:
            chunk = waiter.recv(65536)
            self.assertTrue(chunk, data)
            data += chunk
        self.assertLess(time.monotonic() - t0, 1.0)
        waiter.close()

    # chunks of several tokens come when their last token's step ends
    def test_tokens_per_chunk(self):
        m = self.start("--decode-ms", "10", "--tokens-per-chunk", "4")
        st = run_streams(m.addr, [(0, completion(10))])[0]
        self.assertEqual(len(st.tokens), 3)  # 4 + 4 + 2 tokens
        self.assertGreaterEqual(st.tokens[0] - st.sent, 0.035)  # 4 steps of 10 ms
        self.assertGreaterEqual(st.tokens[2] - st.sent, 0.100)  # 10 steps
        self.assertEqual(st.raw.count(b"finish_reason\":\"length\""), 1)

    # not streamed, and max_tokens 0
    def test_plain_and_empty(self):
        m = self.start("--max-batch", "2", "--decode-ms", "10")
        host, _, port = m.addr.rpartition(":")
        t0 = time.monotonic()
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(request_bytes(completion(5, stream=False)))
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        s.close()
        self.assertGreaterEqual(time.monotonic() - t0, 0.05)  # 5 steps of 10 ms
        body = json.loads(raw.partition(b"\r\n\r\n")[2])
        self.assertEqual(body["usage"]["completion_tokens"], 5)
        t0 = time.monotonic()
        st = run_streams(m.addr, [(0, completion(0))])[0]
        self.assertIn(b"data: [DONE]", st.raw)
        self.assertLess(st.closed - st.sent, 0.05)

    def test_flags(self):
        listen = ["--listen", "127.0.0.1:0"]
        bad = [["--max-batch", "0"], ["--max-batch", "x"], ["--max-batch", "65537"],
               ["--max-batch", "2.5"], ["--decode-ms", "-1"], ["--decode-ms", "nan"],
               ["--decode-ms-per-seq", ""], ["--prefill-ms-per-1k", "inf"],
               ["--decode-ms", "5", "--itl-ms", "5"], ["--max-batch", "4", "--itl-ms", "0"]]
        for args in bad:
            p = subprocess.run([MOCK, *listen, *args], capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"", args)
            self.assertTrue(p.stderr.startswith(b"headroom-mock: "), (args, p.stderr))
        p = subprocess.run([MOCK, "--help"], capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        for flag in (b"--max-batch", b"--prefill-ms-per-1k", b"--decode-ms",
                     b"--decode-ms-per-seq"):
            self.assertIn(flag, p.stdout)


if __name__ == "__main__":
    unittest.main()
