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
waits, what grows), not the exact milliseconds. What the client's clock
can prove is a lower bound: the mock never sends a token before it is due
(a stalled client or mock only makes it later). Upper bounds on the
simulated timing are read from the mock's own view instead, the TTFT and
end-to-end histograms of its GET /metrics, which it fills from each
chunk's due time on its schedule, not from when anyone read it; the few
upper bounds on wall time left are incidental and scaled by
hrtest.time_scale().

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_mock_load.py
"""
import http.client
import json
import math
import os
import re
import selectors
import socket
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


def run_streams(addr, plan, limit_s=20.0 * hrtest.time_scale()):
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


SCALE = hrtest.time_scale()
TTFT = "vllm:time_to_first_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
SAMPLE_RE = re.compile(r'^([^{ ]+)(?:\{([^}]*)\})? (\S+)$')


class Hist:
    """One histogram of the mock's GET /metrics: cumulative counts by upper
    bound (le), count and sum; subtract two scrapes for what lies between."""

    def __init__(self, cum, count, total):
        self.cum, self.count, self.sum = cum, count, total

    def __sub__(self, other):
        return Hist({le: c - other.cum[le] for le, c in self.cum.items()},
                    self.count - other.count, self.sum - other.sum)

    def above(self, le):
        return self.count - self.cum[le]

    def quantile(self, q):
        """(lo, hi]: the bucket that holds the q-quantile, the ceil(q * count)-th
        smallest observation."""
        k = math.ceil(q * self.count)
        lo = 0.0
        for le in sorted(self.cum):
            if self.cum[le] >= k:
                return lo, le
            lo = le
        raise AssertionError("no bucket holds %s of %s" % (k, self.count))

    def __repr__(self):
        return "Hist(count=%s, sum=%.6f, %s)" % (self.count, self.sum, sorted(self.cum.items()))


def mock_hists(addr):
    """The mock's TTFT and e2e histograms, {name: Hist}, from GET /metrics."""
    host, _, port = addr.rpartition(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        text = r.read().decode()
        if r.status != 200:
            raise AssertionError("GET /metrics: %s %s" % (r.status, text))
    finally:
        c.close()
    parts = {name: ({}, None, None) for name in (TTFT, E2E)}
    for line in text.splitlines():
        m = SAMPLE_RE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        for h in (TTFT, E2E):
            cum, count, total = parts[h]
            if name == h + "_bucket":
                le = re.search(r'le="([^"]+)"', labels).group(1)
                cum[float(le.replace("+Inf", "inf"))] = value
            elif name == h + "_count":
                parts[h] = (cum, value, total)
            elif name == h + "_sum":
                parts[h] = (cum, count, value)
    return {h: Hist(*parts[h]) for h in parts}


def lateness(streams):
    """How much later than planned the latest request of streams was sent."""
    t0 = min(st.sent - st.offset for st in streams)
    return max(st.sent - (t0 + st.offset) for st in streams)


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
        ttft = mock_hists(m.addr)[TTFT]
        # One batch of 10 tokens takes 10 steps of 5 ms: the first four
        # start at once, the next four after ~50 ms, the last four after
        # ~100 ms (two batches' worth of decoding). That four start at
        # once is the mock's view (their first token due within a step or
        # two of arrival); that the rest wait, the client's (a lower bound).
        self.assertEqual(ttft.count, 12, ttft)
        self.assertGreaterEqual(ttft.cum[0.04], 4, ttft)
        for t in ttfts[4:8]:
            self.assertGreaterEqual(t, 0.045, ttfts)
        for t in ttfts[8:]:
            self.assertGreaterEqual(t, 0.095, ttfts)
        self.assertEqual(ttft.cum[0.25], 12, ttft)
        self.assertLess(ttfts[-1], 1.0 * SCALE, ttfts)
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
        h0 = mock_hists(m.addr)
        alone = run_streams(m.addr, [(0, completion(30))])
        self.check_complete(alone, 30)
        h1 = mock_hists(m.addr)
        loaded = run_streams(m.addr, [(0, completion(30))] * 16)
        self.check_complete(loaded, 30)
        h2 = mock_hists(m.addr)

        def mean_itl(a, b, n):
            # on the mock's schedule: (last token due - first token due)
            # averaged over its n streams' 29 gaps each
            e2e, ttft = b[E2E] - a[E2E], b[TTFT] - a[TTFT]
            self.assertEqual((e2e.count, ttft.count), (n, n))
            return (e2e.sum - ttft.sum) / (n * 29)
        itl_alone = mean_itl(h0, h1, 1)
        itl_loaded = mean_itl(h1, h2, 16)
        # 2 + 1 * 1 = 3 ms alone; 2 + 1 * 16 = 18 ms with sixteen. The lower
        # bounds are on when the streams end (30 steps each), which stalls
        # of a busy machine can only delay; the mock's own schedule bounds
        # from above (a stalled client's gaps say nothing of it).
        self.assertGreaterEqual(alone[0].tokens[-1] - alone[0].sent, 30 * 0.0025)
        self.assertLess(itl_alone, 0.009, (itl_alone, itl_loaded))
        for st in loaded:
            self.assertGreaterEqual(st.tokens[-1] - st.sent, 30 * 0.016)
        self.assertLess(itl_loaded, 0.040, (itl_alone, itl_loaded))
        self.assertGreater(itl_loaded, 3 * itl_alone, (itl_alone, itl_loaded))

    # (3) prefill time grows with the prompt, and it holds up the engine
    def test_prefill_grows_with_prompt(self):
        m = self.start("--prefill-ms-per-1k", "100")
        long_prompt = " ".join(["word"] * 2000)
        h0 = mock_hists(m.addr)
        short = run_streams(m.addr, [(0, completion(5, prompt=" ".join(["w"] * 10)))])
        h1 = mock_hists(m.addr)
        long_ = run_streams(m.addr, [(0, completion(5, prompt=long_prompt))])
        h2 = mock_hists(m.addr)
        self.check_complete(short + long_, 5)
        # TTFT and e2e of each on the mock's schedule (one request each)
        short_ttft, long_ttft = (h1[TTFT] - h0[TTFT]).sum, (h2[TTFT] - h1[TTFT]).sum
        self.assertLess(short_ttft, 0.05, h1)
        self.assertGreaterEqual(long_[0].ttft, 0.200)  # 2000 * 100 / 1000 ms
        self.assertGreaterEqual(long_ttft, 0.200, h2)
        self.assertLess(long_ttft, 1.0, h2)
        self.assertLess(long_[0].ttft, 1.0 * SCALE)
        # with no decode time all tokens are due with the first
        self.assertLess((h2[E2E] - h1[E2E]).sum - long_ttft, 0.05, h2)
        # prefill is serialised with the engine's steps: a short prompt
        # sent while the long one prefills waits for that step to end, so
        # its first token comes no sooner than the long prefill's 200 ms
        # after the long prompt was sent (alone it would take 0.1 ms). Not
        # the order in which the two first tokens were read: due 0.1 ms
        # apart, a client that stalls reads them in either order.
        both = run_streams(m.addr, [(0, completion(5, prompt=long_prompt)),
                                    (0.05, completion(5, prompt="tiny"))])
        self.check_complete(both, 5)
        self.assertGreaterEqual(both[1].tokens[0] - both[0].sent, 0.200)

    # (4) bursts widen the TTFT tail that smooth traffic of the same rate avoids
    def test_bursty_tail(self):
        flags = ("--max-batch", "8", "--decode-ms", "3", "--decode-ms-per-seq", "0.3")
        m = self.start(*flags)
        body = completion(20)
        h0 = mock_hists(m.addr)
        bursty = run_streams(m.addr, [(0.4 * b, body) for b in range(5) for _ in range(16)])
        self.check_complete(bursty, 20)
        h1 = mock_hists(m.addr)
        # Smooth traffic is the premise of the comparison: a client that
        # stalls 0.2 s sends nine requests at once, a burst of its own. Such
        # a run is done again (the mock's view cannot tell it from queueing).
        for _ in range(3):
            smooth = run_streams(m.addr, [(0.025 * i, body) for i in range(80)])
            self.check_complete(smooth, 20)
            h2 = mock_hists(m.addr)
            if lateness(smooth) < 0.1:
                break
            h1 = h2
        self.assertLess(lateness(smooth), 0.1, "the client could not send smoothly")
        # The tails on the mock's schedule (first token due - arrival), as
        # bucket bounds (lo, hi] of the 99th percentile: a client that reads
        # late does not move them. A burst of 16 fills the 8 slots and
        # queues 8 behind ~20 steps of 3 + 0.3 * 8 ms (~110 ms); 40
        # requests/s evenly spaced keep about three running and never queue
        # (a first token within two steps, ~10 ms).
        hb, hs = h1[TTFT] - h0[TTFT], h2[TTFT] - h1[TTFT]
        self.assertEqual((hb.count, hs.count), (80, 80))
        lo_bursty, _ = hb.quantile(0.99)
        _, hi_smooth = hs.quantile(0.99)
        why = (hb, hs)
        self.assertGreaterEqual(lo_bursty, 0.08, why)
        self.assertGreater(lo_bursty, 3 * hi_smooth, why)
        self.assertLessEqual(hi_smooth, 0.04, why)
        # and the tail is wide: most bursts queue half of their requests
        self.assertGreaterEqual(hb.above(0.08), 20, why)

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
        self.assertLess(time.monotonic() - t0, 1.0 * SCALE)  # not the hog's 10 s
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
        h0 = mock_hists(m.addr)
        st = run_streams(m.addr, [(0, completion(0))])[0]
        self.assertIn(b"data: [DONE]", st.raw)
        self.assertLess(st.closed - st.sent, 1.0 * SCALE)
        # answered at once, without a step of the engine (10 ms): on the
        # mock's schedule it completes when it arrives
        e2e = mock_hists(m.addr)[E2E] - h0[E2E]
        self.assertEqual(e2e.count, 1)
        self.assertLess(e2e.sum, 0.005, e2e)

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
