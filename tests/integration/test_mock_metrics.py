#!/usr/bin/env python3
"""test_mock_metrics.py - headroom-mock's Prometheus pages over real sockets:
the vLLM-like GET /metrics on the main port and the DCGM-exporter-like page
on --dcgm-listen, whose values follow the simulated load (docs/mock.md).

Each test starts the mock with hrtest.start_mock(flags) (the DCGM port is
read from the second stdout line, "dcgm listening on HOST:PORT"), holds
streamed requests open on raw sockets, scrapes both pages while they are in
flight and after, and parses the pages with the small exposition-format
parser below, which also checks the format (HELP and TYPE before the
samples, label syntax, cumulative histogram buckets). Every mock is stopped
with SIGTERM at the end of its test and must exit 0, so that under
AddressSanitizer a leak or error report fails the test.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_mock_metrics.py
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
SCALE = hrtest.time_scale()
CTYPE = "text/plain; version=0.0.4; charset=utf-8"
TTFT = "vllm:time_to_first_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
DCGM_LABELS = {"gpu", "UUID", "device", "modelName", "Hostname"}

# ---- a tiny Prometheus text-format (0.0.4) parser ----

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def _unescape(v):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def _value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise ValueError("bad sample value %r" % text)
    return float(text)


class Page:
    """A parsed page: help and type per family, samples in order as
    (name, labels dict, value)."""

    def __init__(self, text):
        self.help, self.type, self.samples = {}, {}, []
        if not text.endswith("\n"):
            raise ValueError("a page ends with a newline")
        for line in text.split("\n")[:-1]:
            if line.startswith("# HELP "):
                name, _, doc = line[7:].partition(" ")
                if not NAME_RE.fullmatch(name) or name in self.help:
                    raise ValueError("bad HELP line %r" % line)
                self.help[name] = doc
            elif line.startswith("# TYPE "):
                name, _, typ = line[7:].partition(" ")
                if typ not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ValueError("bad TYPE line %r" % line)
                if name in self.type or any(s[0] == name for s in self.samples):
                    raise ValueError("TYPE after samples or repeated: %r" % line)
                self.type[name] = typ
            elif line.startswith("#") or not line:
                raise ValueError("unexpected line %r" % line)
            else:
                self.samples.append(self._sample(line))
        for name, _, _ in self.samples:
            fam = self.family(name)
            if fam not in self.type or fam not in self.help:
                raise ValueError("sample %s without HELP/TYPE" % name)

    @staticmethod
    def _sample(line):
        m = NAME_RE.match(line)
        if not m:
            raise ValueError("bad sample %r" % line)
        name, rest, labels = m.group(0), line[m.end():], {}
        if rest.startswith("{"):
            rest = rest[1:]
            while not rest.startswith("}"):
                lm = LABEL_RE.match(rest)
                if not lm or lm.group(1) in labels:
                    raise ValueError("bad labels in %r" % line)
                labels[lm.group(1)] = _unescape(lm.group(2))
                rest = rest[lm.end():]
                if rest.startswith(","):
                    rest = rest[1:]
                elif not rest.startswith("}"):
                    raise ValueError("bad labels in %r" % line)
            rest = rest[1:]
        if not rest.startswith(" "):
            raise ValueError("bad sample %r" % line)
        parts = rest[1:].split(" ")
        if len(parts) not in (1, 2):
            raise ValueError("bad sample %r" % line)
        return name, labels, _value(parts[0])

    def family(self, name):
        if name in self.type:
            return name
        for suffix in ("_bucket", "_count", "_sum"):
            base = name[:-len(suffix)]
            if name.endswith(suffix) and self.type.get(base) == "histogram":
                return base
        return name

    def get(self, name, **labels):
        """The one sample called name whose labels include labels."""
        hits = [v for n, lab, v in self.samples
                if n == name and all(lab.get(k) == v2 for k, v2 in labels.items())]
        if len(hits) != 1:
            raise AssertionError("%d samples %s %s" % (len(hits), name, labels))
        return hits[0]

    def series(self, name):
        return [(lab, v) for n, lab, v in self.samples if n == name]

    def histogram(self, name):
        """([(le, cumulative count)], count, sum), checked for consistency."""
        buckets = [(float(lab["le"].replace("+Inf", "inf")), v)
                   for lab, v in self.series(name + "_bucket")]
        les = [le for le, _ in buckets]
        counts = [c for _, c in buckets]
        if les != sorted(les) or les[-1] != math.inf or counts != sorted(counts):
            raise AssertionError("bad buckets %s" % buckets)
        count = self.get(name + "_count")
        if counts[-1] != count:
            raise AssertionError("+Inf bucket %s != count %s" % (counts[-1], count))
        return buckets, count, self.get(name + "_sum")


# ---- clients ----

def scrape_bracketed(addr, path="/metrics"):
    """GET addr path; returns (Page, before, after): the monotonic times
    just before the request was sent and just after the answer came, which
    bracket the moment the mock made the page (its clock is the same
    CLOCK_MONOTONIC)."""
    host, _, port = addr.rpartition(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        t = time.monotonic()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        after = time.monotonic()
        if r.status != 200:
            raise AssertionError("GET %s: %s %s" % (path, r.status, body))
        if r.getheader("Content-Type") != CTYPE:
            raise AssertionError("Content-Type %s" % r.getheader("Content-Type"))
        return Page(body), t, after
    finally:
        c.close()


def scrape(addr, path="/metrics"):
    """GET addr path; returns (Page, monotonic time of the request)."""
    page, t, _ = scrape_bracketed(addr, path)
    return page, t


def request_bytes(max_tokens, prompt="hello mock server", stream=True, close=True):
    data = json.dumps({"model": "m", "prompt": prompt, "max_tokens": max_tokens,
                       "stream": stream}).encode()
    return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n%s"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (b"Connection: close\r\n" if close else b"", len(data), data))


def open_streams(addr, n, max_tokens, prompt="hello mock server"):
    """n streamed requests on their own connections, each sent; returns the
    sockets once every response's status line has arrived (so the mock has
    taken them all)."""
    host, _, port = addr.rpartition(":")
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(request_bytes(max_tokens, prompt))
        socks.append(s)
    for s in socks:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("closed before the headers: %r" % head)
            head += chunk
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head[:100]
    return socks


def drain(socks, limit_s=30):
    """Read every socket to EOF; returns the bytes each received."""
    sel = selectors.DefaultSelector()
    got = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        got[s] = b""
    deadline = time.monotonic() + limit_s
    left = len(socks)
    try:
        while left and time.monotonic() < deadline:
            for key, _ in sel.select(0.5):
                data = key.fileobj.recv(65536)
                if data:
                    got[key.fileobj] += data
                else:
                    sel.unregister(key.fileobj)
                    left -= 1
    finally:
        sel.close()
        for s in socks:
            s.close()
    if left:
        raise AssertionError("%d streams unfinished" % left)
    return [got[s] for s in socks]


def raw_exchange(addr, data):
    """Send data on a fresh connection, read to EOF (the mock closes)."""
    host, _, port = addr.rpartition(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
    finally:
        s.close()


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.mocks = []

    def tearDown(self):
        for m in self.mocks:
            self.assertEqual(m.stop(), 0, "headroom-mock %s did not exit cleanly" % m.argv)

    def start(self, *flags):
        m = hrtest.start_mock("--quiet", *flags)
        self.mocks.append(m)
        return m

    def start_dcgm(self, *flags):
        """A mock with --dcgm-listen; returns (mock, dcgm addr)."""
        m = self.start("--dcgm-listen", "127.0.0.1:0", *flags)
        line = m.p.stdout.readline().strip()
        self.assertTrue(line.startswith("dcgm listening on "), line)
        return m, line.split()[-1]

    # ---- the vLLM-like page ----

    def test_vllm_page_format(self):
        m = self.start("--model", 'org/odd "name"\\x')
        page, _ = scrape(m.addr)
        want = {
            "vllm:num_requests_running": "gauge",
            "vllm:num_requests_waiting": "gauge",
            "vllm:gpu_cache_usage_perc": "gauge",
            "vllm:num_preemptions_total": "counter",
            "vllm:prompt_tokens_total": "counter",
            "vllm:generation_tokens_total": "counter",
            "vllm:request_success_total": "counter",
            TTFT: "histogram",
            E2E: "histogram",
        }
        self.assertEqual(page.type, want)
        for _, labels, value in page.samples:
            self.assertEqual(labels["model_name"], 'org/odd "name"\\x')
            self.assertEqual(value, 0.0)
        self.assertEqual(page.get("vllm:request_success_total", finished_reason="length"), 0)
        buckets, count, total = page.histogram(TTFT)
        self.assertEqual([le for le, _ in buckets][0], 0.001)
        self.assertEqual([le for le, _ in buckets][-2], 10.0)
        self.assertEqual((count, total), (0, 0))
        page.histogram(E2E)
        # HEAD: the headers only; other methods: 405 with Allow
        host, _, port = m.addr.rpartition(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("HEAD", "/metrics")
        r = c.getresponse()
        self.assertEqual((r.status, r.read()), (200, b""))
        self.assertEqual(r.getheader("Content-Type"), CTYPE)
        self.assertGreater(int(r.getheader("Content-Length")), 1000)
        c.request("POST", "/metrics", body=b"{}")
        r = c.getresponse()
        r.read()
        self.assertEqual(r.status, 405)
        self.assertEqual(r.getheader("Allow"), "GET, HEAD")
        c.close()

    def test_running_waiting_follow_load(self):
        m = self.start("--max-batch", "2", "--decode-ms", "20")
        before, _ = scrape(m.addr)
        socks = open_streams(m.addr, 6, 40)  # a pair takes 40 steps of 20 ms
        # until the running pair has its first tokens (a step or two, well
        # before the pair's 0.8 s are up)
        deadline = time.monotonic() + 10 * SCALE
        while True:
            during, _ = scrape(m.addr)
            if during.histogram(TTFT)[1] >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.assertEqual(during.get("vllm:num_requests_running"), 2)
        self.assertEqual(during.get("vllm:num_requests_waiting"), 4)
        usage = during.get("vllm:gpu_cache_usage_perc")
        self.assertGreater(usage, 0)
        self.assertLess(usage, 0.01)  # two sequences of at most 3 + 40 tokens
        self.assertEqual(during.get("vllm:prompt_tokens_total"), 2 * 3)
        self.assertEqual(during.histogram(TTFT)[1], 2)  # the running pair's first tokens
        bodies = drain(socks)
        for b in bodies:
            self.assertIn(b"data: [DONE]", b)
        after, _ = scrape(m.addr)
        self.assertEqual(after.get("vllm:num_requests_running"), 0)
        self.assertEqual(after.get("vllm:num_requests_waiting"), 0)
        self.assertEqual(after.get("vllm:gpu_cache_usage_perc"), 0)
        self.assertEqual(after.get("vllm:prompt_tokens_total")
                         - before.get("vllm:prompt_tokens_total"), 6 * 3)
        self.assertEqual(after.get("vllm:generation_tokens_total")
                         - before.get("vllm:generation_tokens_total"), 6 * 40)
        self.assertEqual(after.get("vllm:request_success_total", finished_reason="length"), 6)
        self.assertEqual(after.get("vllm:num_preemptions_total"), 0)
        # TTFT on the mock's schedule: pairs admitted at ~0, ~0.8 and ~1.6 s
        buckets, count, total = after.histogram(TTFT)
        self.assertEqual(count, 6)
        cum = dict(buckets)
        self.assertEqual(cum[0.1], 2, buckets)
        self.assertEqual(cum[1.0], 4, buckets)
        self.assertEqual(cum[2.5], 6, buckets)
        self.assertGreater(total, 4.5)  # ~0.02 + 0.04 + 0.82 + 0.84 + 1.62 + 1.64
        buckets, count, total = after.histogram(E2E)
        self.assertEqual(count, 6)
        self.assertGreater(total, 9.0)  # ~0.8 + 0.82 + 1.62 + 1.64 + 2.42 + 2.44

    def test_exact_counters_fixed_timing(self):
        m = self.start("--ttft-ms", "30", "--itl-ms", "1")
        before, _ = scrape(m.addr)
        prompts = ["one", "two words", "three words here", " ".join(["w"] * 100)]
        lengths = [1, 7, 16, 50]
        socks = []
        for p, n in zip(prompts, lengths):
            socks += open_streams(m.addr, 1, n, prompt=p)
        drain(socks)
        # not streamed, and max_tokens 0
        out = raw_exchange(m.addr, request_bytes(5, prompt="a b", stream=False))
        self.assertEqual(json.loads(out.partition(b"\r\n\r\n")[2])["usage"]["completion_tokens"], 5)
        out = raw_exchange(m.addr, request_bytes(0, prompt="c d e"))
        self.assertIn(b"data: [DONE]", out)
        after, _ = scrape(m.addr)
        self.assertEqual(after.get("vllm:prompt_tokens_total")
                         - before.get("vllm:prompt_tokens_total"), 1 + 2 + 3 + 100 + 2 + 3)
        self.assertEqual(after.get("vllm:generation_tokens_total")
                         - before.get("vllm:generation_tokens_total"), sum(lengths) + 5)
        self.assertEqual(after.get("vllm:request_success_total", finished_reason="length"), 6)
        self.assertEqual(after.get("vllm:num_requests_running"), 0)
        self.assertEqual(after.get("vllm:num_requests_waiting"), 0)
        # five responses with a first chunk exactly 30 ms after arrival,
        # one with none (answered at once)
        buckets, count, total = after.histogram(TTFT)
        self.assertEqual(count, 6)
        cum = dict(buckets)
        self.assertEqual(cum[0.02], 1, buckets)
        self.assertEqual(cum[0.04], 6, buckets)
        self.assertAlmostEqual(total, 5 * 0.030, delta=0.01)
        _, count, total = after.histogram(E2E)
        self.assertEqual(count, 6)
        # e2e = 30 ms + ITL * (chunks - 1), on the mock's schedule
        want = sum(0.030 + 0.001 * (n - 1) for n in lengths + [5])
        self.assertAlmostEqual(total, want, delta=0.01)

    def test_kv_usage_and_disconnect(self):
        m, daddr = self.start_dcgm("--ttft-ms", "60000", "--kv-capacity-tokens", "1000")
        socks = open_streams(m.addr, 4, 5, prompt=" ".join(["w"] * 10))
        page, _ = scrape(m.addr)
        self.assertEqual(page.get("vllm:num_requests_running"), 4)
        self.assertEqual(page.get("vllm:num_requests_waiting"), 0)
        self.assertEqual(page.get("vllm:gpu_cache_usage_perc"), 0.04)  # 40 / 1000
        self.assertEqual(page.get("vllm:prompt_tokens_total"), 40)
        self.assertEqual(page.histogram(TTFT)[1], 0)
        gpu, _ = scrape(daddr)
        self.assertEqual(gpu.get("DCGM_FI_DEV_FB_USED"), 2000 + 0.04 * 70000)
        self.assertEqual(gpu.get("DCGM_FI_DEV_FB_FREE"), 80000 - 2000 - 0.04 * 70000)
        self.assertEqual(gpu.get("DCGM_FI_DEV_GPU_UTIL"), round(100 * 4 / 64))
        # capped at 1
        more = open_streams(m.addr, 1, 5, prompt=" ".join(["w"] * 2000))
        self.assertEqual(scrape(m.addr)[0].get("vllm:gpu_cache_usage_perc"), 1)
        self.assertEqual(scrape(daddr)[0].get("DCGM_FI_DEV_FB_USED"), 72000)
        # clients that leave cancel: nothing running, nothing counted as success
        for s in socks + more:
            s.close()
        deadline = time.monotonic() + 10
        while True:
            page, _ = scrape(m.addr)
            if page.get("vllm:num_requests_running") == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(page.get("vllm:num_requests_running"), 0)
        self.assertEqual(page.get("vllm:gpu_cache_usage_perc"), 0)
        self.assertEqual(page.get("vllm:request_success_total", finished_reason="length"), 0)
        gpu, _ = scrape(daddr)
        self.assertEqual(gpu.get("DCGM_FI_DEV_FB_USED"), 2000)
        self.assertEqual(gpu.get("DCGM_FI_DEV_GPU_UTIL"), 0)

    # ---- the DCGM-exporter-like page ----

    def check_dcgm_page(self, page, gpus):
        want = {
            "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
            "DCGM_FI_DEV_MEM_COPY_UTIL": ("gauge", "Memory utilization (in %)."),
            "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
                ("counter", "Total energy consumption since boot (in mJ)."),
            "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB)."),
            "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB)."),
            "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
            "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM frequency (in MHz)."),
            "DCGM_FI_DEV_MEM_CLOCK": ("gauge", "Memory frequency (in MHz)."),
        }
        self.assertEqual({k: (page.type[k], page.help[k]) for k in page.type}, want)
        for name in want:
            series = page.series(name)
            self.assertEqual(len(series), gpus, name)
            for i, (labels, _) in enumerate(series):
                self.assertEqual(set(labels), DCGM_LABELS)
                self.assertEqual(labels["gpu"], str(i))
                self.assertEqual(labels["device"], "nvidia%d" % i)
                self.assertEqual(labels["modelName"], "NVIDIA H100 80GB HBM3 (headroom-mock)")
                self.assertEqual(labels["Hostname"], "headroom-mock")
            self.assertEqual(len({lab["UUID"] for lab, _ in series}), gpus)
        self.assertEqual(page.series("DCGM_FI_DEV_GPU_UTIL")[0][0]["UUID"],
                         "GPU-00000000-mock-0000-0000-000000000000")
        for i in range(gpus):
            util = page.get("DCGM_FI_DEV_GPU_UTIL", gpu=str(i))
            self.assertTrue(0 <= util <= 100)
            self.assertEqual(page.get("DCGM_FI_DEV_MEM_COPY_UTIL", gpu=str(i)), util // 2)
            self.assertAlmostEqual(page.get("DCGM_FI_DEV_POWER_USAGE", gpu=str(i)),
                                   100 + 6 * util, places=5)
            self.assertEqual(page.get("DCGM_FI_DEV_GPU_TEMP", gpu=str(i)),
                             round(35 + 0.4 * util + 1e-9))
            self.assertEqual(page.get("DCGM_FI_DEV_SM_CLOCK", gpu=str(i)),
                             1980 if util else 345)
            self.assertEqual(page.get("DCGM_FI_DEV_MEM_CLOCK", gpu=str(i)), 2619)
            self.assertEqual(page.get("DCGM_FI_DEV_FB_USED", gpu=str(i))
                             + page.get("DCGM_FI_DEV_FB_FREE", gpu=str(i)), 80000)

    def utils(self, page, gpus):
        return [page.get("DCGM_FI_DEV_GPU_UTIL", gpu=str(i)) for i in range(gpus)]

    def test_dcgm_util_follows_streams(self):
        m, daddr = self.start_dcgm("--ttft-ms", "1500", "--itl-ms", "10")
        idle, _ = scrape(daddr)
        self.check_dcgm_page(idle, 1)
        self.assertEqual(self.utils(idle, 1), [0])
        self.assertEqual(idle.get("DCGM_FI_DEV_POWER_USAGE"), 100)
        socks = open_streams(m.addr, 16, 3)
        busy, _ = scrape(daddr)
        self.check_dcgm_page(busy, 1)
        self.assertEqual(self.utils(busy, 1), [25])  # 16 of 64
        self.assertEqual(busy.get("DCGM_FI_DEV_POWER_USAGE"), 250)
        self.assertEqual(busy.get("DCGM_FI_DEV_GPU_TEMP"), 45)
        self.assertEqual(busy.get("DCGM_FI_DEV_SM_CLOCK"), 1980)
        drain(socks)
        after, _ = scrape(daddr)
        self.check_dcgm_page(after, 1)
        self.assertEqual(self.utils(after, 1), [0])
        self.assertEqual(after.get("DCGM_FI_DEV_SM_CLOCK"), 345)
        e = [p.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") for p in (idle, busy, after)]
        self.assertEqual(e, sorted(e))
        # with the load model, active is the running sequences and
        # saturation is --max-batch
        m2, daddr2 = self.start_dcgm("--max-batch", "8", "--decode-ms", "10")
        socks = open_streams(m2.addr, 12, 100)  # 8 run, 4 wait
        time.sleep(0.1)
        page, _ = scrape(daddr2)
        self.assertEqual(self.utils(page, 1), [100])
        self.assertEqual(page.get("DCGM_FI_DEV_POWER_USAGE"), 700)
        self.assertEqual(scrape(m2.addr)[0].get("vllm:num_requests_waiting"), 4)
        drain(socks)
        self.assertEqual(self.utils(scrape(daddr2)[0], 1), [0])

    def test_dcgm_gpus_split(self):
        m, daddr = self.start_dcgm("--gpus", "2", "--ttft-ms", "60000")
        page, _ = scrape(daddr)
        self.check_dcgm_page(page, 2)
        uuids = [lab["UUID"] for lab, _ in page.series("DCGM_FI_DEV_GPU_UTIL")]
        self.assertEqual(len(set(uuids)), 2)
        self.assertEqual(self.utils(page, 2), [0, 0])
        socks = open_streams(m.addr, 17, 1)
        page, _ = scrape(daddr)
        self.check_dcgm_page(page, 2)
        # 17 sequences over two GPUs: 9 and 8 of 64
        self.assertEqual(self.utils(page, 2), [round(100 * 9 / 64), round(100 * 8 / 64 + 1e-9)])
        for s in socks:
            s.close()
        deadline = time.monotonic() + 10
        while self.utils(page, 2) != [0, 0] and time.monotonic() < deadline:
            time.sleep(0.02)
            page, _ = scrape(daddr)
        self.assertEqual(self.utils(page, 2), [0, 0])

    def assert_energy(self, a, b, gpu, watts_lo, watts_hi):
        """The energy of gpu between the scrapes a and b ((Page, before,
        after) each) is at least watts_lo and at most watts_hi over the time
        between them. The mock integrates up to the moment it makes each
        page, somewhere in its scrape's bracket, so the time lies between
        b.before - a.after and b.after - a.before; the pages print whole mJ
        (floor), hence 1 mJ either way. A slow scrape widens the bracket;
        it cannot make a right rate fail."""
        e = [p.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu=gpu) for p, _, _ in (a, b)]
        shortest, longest = b[1] - a[2], b[2] - a[1]
        why = (gpu, e, shortest, longest)
        self.assertGreaterEqual(e[1] - e[0], watts_lo * 1e3 * shortest - 1, why)
        self.assertLessEqual(e[1] - e[0], watts_hi * 1e3 * longest + 1, why)

    def test_dcgm_energy(self):
        m, daddr = self.start_dcgm("--ttft-ms", "60000", "--gpus", "2")
        s1 = scrape_bracketed(daddr)
        time.sleep(0.5)
        s2 = scrape_bracketed(daddr)
        for g in ("0", "1"):
            # idle: 100 W = 100,000 mJ per second
            self.assert_energy(s1, s2, g, 100, 100)
        # a full GPU 0 (64 of 64) and a half-full GPU 1 (63 -> 98%)
        socks = open_streams(m.addr, 127, 1)
        s3 = scrape_bracketed(daddr)
        self.assertEqual(self.utils(s3[0], 2), [100, 98])
        time.sleep(0.5)
        s4 = scrape_bracketed(daddr)
        for g, watts in (("0", 700), ("1", 100 + 6 * 98)):
            self.assertEqual(s4[0].get("DCGM_FI_DEV_POWER_USAGE", gpu=g), watts)
            self.assert_energy(s3, s4, g, watts, watts)
        for s in socks:
            s.close()
        # until the mock has seen every client leave
        deadline = time.monotonic() + 10 * SCALE
        while True:
            s5 = scrape_bracketed(daddr)
            if self.utils(s5[0], 2) == [0, 0] or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(self.utils(s5[0], 2), [0, 0])
        # monotonic through everything; over the whole time between at least
        # the idle power and at most the busy power
        for g in ("0", "1"):
            e = [p.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu=g)
                 for p, _, _ in (s1, s2, s3, s4, s5)]
            self.assertEqual(e, sorted(e))
            self.assert_energy(s1, s5, g, 100, 700)

    def test_dcgm_hostile(self):
        m, daddr = self.start_dcgm()
        host, _, port = daddr.rpartition(":")
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        for method, path, status in (("POST", "/metrics", 405), ("PUT", "/metrics", 405),
                                     ("GET", "/v1/models", 404), ("GET", "/health", 404),
                                     ("POST", "/v1/completions", 404),
                                     ("HEAD", "/metrics", 200), ("GET", "/metrics?x=1", 200)):
            c.request(method, path, body=b"{}" if method in ("POST", "PUT") else None)
            r = c.getresponse()
            body = r.read()
            self.assertEqual(r.status, status, (method, path, body))
            if status == 405:
                self.assertEqual(r.getheader("Allow"), "GET, HEAD")
            if method == "HEAD":
                self.assertEqual(body, b"")
        c.close()
        # pipelined scrapes on one connection, then garbage: 400 and closed
        req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        out = raw_exchange(daddr, req * 20 + b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                           b"Connection: close\r\n\r\n")
        self.assertEqual(out.count(b"HTTP/1.1 200 OK\r\n"), 21)
        out = raw_exchange(daddr, b"\x16\x03\x01garbage\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 400 "), out[:100])
        # the main port still works and has no DCGM page
        page, _ = scrape(m.addr)
        self.assertNotIn("DCGM_FI_DEV_GPU_UTIL", page.type)
        self.assertEqual(scrape(daddr)[0].type["DCGM_FI_DEV_GPU_UTIL"], "gauge")

    def test_flags(self):
        listen = ["--listen", "127.0.0.1:0"]
        bad = [["--gpus", "0"], ["--gpus", "65"], ["--gpus", "x"], ["--gpus", "-1"],
               ["--gpus", "1.5"], ["--kv-capacity-tokens", "0"],
               ["--kv-capacity-tokens", "-5"], ["--kv-capacity-tokens", ""],
               ["--kv-capacity-tokens", "1000000000001"], ["--dcgm-listen", "nonsense"],
               ["--dcgm-listen", "127.0.0.1:99999"]]
        for args in bad:
            p = subprocess.run([MOCK, *listen, *args], capture_output=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"", args)
            self.assertTrue(p.stderr.startswith(b"headroom-mock: "), (args, p.stderr))
        # the DCGM port taken: exit 1
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        try:
            p = subprocess.run([MOCK, *listen, "--dcgm-listen",
                                "127.0.0.1:%d" % s.getsockname()[1]],
                               capture_output=True, timeout=30)
        finally:
            s.close()
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, b"")
        p = subprocess.run([MOCK, "--help"], capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        for flag in (b"--dcgm-listen", b"--gpus", b"--kv-capacity-tokens"):
            self.assertIn(flag, p.stdout)
        # without --dcgm-listen there is one line; with it, two, in order
        m = self.start()
        self.assertTrue(m.banner.startswith("listening on "))
        m2, daddr = self.start_dcgm("--gpus", "64")
        self.assertNotEqual(daddr, m2.addr)
        self.check_dcgm_page(scrape(daddr)[0], 64)


if __name__ == "__main__":
    unittest.main()
