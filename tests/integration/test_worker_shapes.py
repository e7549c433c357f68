"""test_worker_shapes.py - the shapes of load headroom-worker generates:
paced arrivals (constant, Poisson, gamma, ramps), warm-up and profiling
phases, the grace period, cancellation by policy, multi-turn sessions and
trace replay.

Like test_worker.py, the test plays headroomd (api/protocol.md): a ZeroMQ
ROUTER on an ipc path, one or more real headroom-worker processes, and
headroom-mock with zero delay (or a scripted Python server where the test
must see the request bodies). Schedules are checked exactly where they are
deterministic (intended times, request indices, which requests are
cancelled) by recomputing them here from lib/sched.c and lib/rng.c, and
statistically where the clock is involved (actual start times).

Environment: HEADROOM_BIN is the build's bin directory (default:
build/bin of this checkout). Needs Python 3 and python3-zmq.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrrecords  # noqa: E402
import hrtest  # noqa: E402
from hrworker import (DONE, FAIL, HELLO, MS, PHASE_DONE, READY, RECORDS,  # noqa: E402
                      SCHEDULE, START, WORKER, HttpServer, QuietHandler, ServersMixin,
                      assert_no_sanitizer, read_stderr, router)


# Under ASan/UBSan the worker and the mock run several times slower: the
# schedules are still checked exactly, but what the clock says about actual
# start times is only checked in optimised builds.
SANITIZED = hrtest.sanitized()
# Incidental upper bounds on wall time (processes starting and stopping) are
# multiplied by this: 4 under ASan/UBSan, 1 otherwise (hrtest.py).
SCALE = hrtest.time_scale()
ATTEMPTS = 3  # a timing check may be retried on a busy machine
SEC = 1000000000
WARMUP_OFFSET = 1 << 40
M64 = (1 << 64) - 1

# --- lib/rng.c and lib/trace.c, ported ------------------------------------


def _mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def rng_hash(seed, stream, index):
    h = _mix64((seed + 0x9e3779b97f4a7c15) & M64)
    h = _mix64(h ^ ((stream * 0xd1b54a32d192ed03) & M64))
    return _mix64(h ^ ((index + 0x632be59bd9b4e019) & M64))


def rng_uniform(seed, stream, index):
    return (rng_hash(seed, stream, index) >> 11) * 2.0 ** -53


def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def constant_schedule(rate, n):
    """lib/sched.c for the constant law: operational time summed in
    doubles, rounded to ns."""
    out, s = [], 0.0
    for _ in range(n):
        out.append(int(round(s * 1e9)))
        s += 1.0 / rate
    return out


# --- statistics -------------------------------------------------------------


def cv(xs):
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return math.sqrt(var) / m


def ks_exponential(xs, rate):
    """Kolmogorov-Smirnov statistic of xs against exponential(rate)."""
    xs = sorted(xs)
    n = len(xs)
    d = 0.0
    for i, x in enumerate(xs):
        f = 1.0 - math.exp(-rate * x)
        d = max(d, (i + 1) / n - f, f - i / n)
    return d


def peak_in_flight(recs):
    """The most requests in flight at once (by start_ns and done_ns)."""
    events = sorted([(r["start_ns"], 1) for r in recs] + [(r["done_ns"], -1) for r in recs])
    cur = peak = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    return peak


def intervals(times):
    times = sorted(times)
    return [b - a for a, b in zip(times, times[1:])]


# --- servers ---------------------------------------------------------------


# Answers with JSON escapes and non-ASCII text: a conversation must carry
# them back exactly.
ANSWERS = ['Sure: "quoted", a\\back\nslash', "caf\u00e9 \u4e2d \U0001F600 </tag>", "ok"]


class Scripted(HttpServer):
    """A streaming chat server that keeps every request body. Answer i (in
    arrival order per session, see answer_for) is sent as two content
    deltas; usage counts words of all messages like headroom-mock."""

    def __init__(self):
        self.bodies = []
        self.lock = threading.Lock()
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.json_body()
                with outer.lock:
                    outer.bodies.append(body)
                text = outer.answer_for(body)
                words = sum(len(m["content"].split()) for m in body.get("messages", [])) \
                    if "messages" in body else len(body.get("prompt", "").split())
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                half = len(text) // 2
                events = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
                          {"choices": [{"index": 0, "delta": {"content": text[:half]}}]},
                          {"choices": [{"index": 0, "delta": {"reasoning_content": "hm"}}]},
                          {"choices": [{"index": 0, "delta": {"content": text[half:]}}]},
                          {"choices": [], "usage": {"prompt_tokens": words,
                                                    "completion_tokens": 2}}]
                for e in events:
                    self.chunk(b"data: " + json.dumps(e).encode() + b"\n\n")
                self.chunk(b"data: [DONE]\n\n")
                self.chunk(b"")

            def chunk(self, data):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        super().__init__(Handler)

    @staticmethod
    def answer_for(body):
        msgs = body.get("messages", [])
        turn = sum(1 for m in msgs if m["role"] == "user") - 1
        return ANSWERS[turn % len(ANSWERS)]


# --- the fake daemon ----------------------------------------------------------


class Pool:
    """The result of one run: records (each with 'w', the worker), DONE
    per worker, every control message with its receive time."""

    def __init__(self):
        self.records = []
        self.done = {}
        self.fail = {}
        self.events = []
        self.t0 = None
        self.phase_start = 0
        self.stderr = ""


class ShapeCase(ServersMixin, unittest.TestCase):
    scripted_class = Scripted

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hrws-")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def spec(url, load, seed=7, isl=16, osl=8, endpoint="chat", **workload):
        wl = {"isl": {"mean": isl}, "osl": {"mean": osl}, "seed": seed}
        wl.update(workload)
        return {"name": "shape", "target": {"url": url, "model": "mock-model",
                                            "endpoint": endpoint, "stream": True,
                                            "timeout_s": 10},
                "workload": wl, "load": load}

    @staticmethod
    def rate_share(rate, law="poisson", total=0, duration=0.0, smoothness=1.0, ramp=0.0,
                   slots=0, **extra):
        sh = {"mode": "rate", "slots": slots, "requests": total, "duration_s": duration,
              "total_slots": slots, "ramp_s": ramp, "grace_s": 5,
              "rate": {"law": law, "rate": rate, "smoothness": smoothness, "ramp_s": ramp,
                       "stream": 4, "total_requests": total, "duration_s": duration}}
        sh.update(extra)
        return sh

    def run_pool(self, spec, share_of, n=1, timeout=30.0):
        """Plays headroomd for n workers: SCHEDULE, START (and the second
        START after every PHASE_DONE), until every worker sent DONE."""
        ctx = zmq.Context()
        sock, ep = router(ctx, os.path.join(self.tmp, "d%d.sock" % time.monotonic_ns()))
        err = open(os.path.join(self.tmp, "workers.err"), "w+", errors="replace")
        procs = [subprocess.Popen([WORKER, "--connect", ep, "--index", str(i)],
                                  stdout=subprocess.DEVNULL, stderr=err) for i in range(n)]
        res = Pool()
        shares = [share_of(i) for i in range(n)]
        ready, phase_done = set(), set()
        deadline = time.monotonic() + timeout * SCALE
        try:
            while len(res.done) + len(res.fail) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not sock.poll(int(left * 1000) + 1):
                    raise AssertionError("workers silent; got %r" % [e[1:3] for e in res.events])
                ident, hdr, payload = sock.recv_multipart()
                w = int(ident[1:])
                self.assertEqual(hdr[0], 2)
                typ = hdr[1]
                if typ == RECORDS:
                    for r in hrrecords.decode_batch(payload):
                        r["w"] = w
                        res.records.append(r)
                    continue
                msg = json.loads(payload)
                res.events.append((time.monotonic_ns(), w, typ, msg))
                if typ == HELLO:
                    self.send(sock, w, SCHEDULE, {"run_id": 1, "worker": w, "workers": n,
                                                  "spec": spec, "share": shares[w]})
                elif typ == READY:
                    ready.add(w)
                    if len(ready) == n:
                        res.t0 = time.monotonic_ns() + 100 * MS
                        phase = "warmup" if "warmup" in shares[0] else "profiling"
                        for i in range(n):
                            self.send(sock, i, START, {"t0_mono_ns": res.t0,
                                                       "t0_wall_ns": time.time_ns(),
                                                       "phase": phase, "phase_start_ns": 0})
                elif typ == PHASE_DONE:
                    phase_done.add(w)
                    if len(phase_done) == n:
                        res.phase_start = time.monotonic_ns() + 50 * MS - res.t0
                        for i in range(n):
                            self.send(sock, i, START, {"t0_mono_ns": res.t0,
                                                       "t0_wall_ns": time.time_ns(),
                                                       "phase": "profiling",
                                                       "phase_start_ns": res.phase_start})
                elif typ == DONE:
                    res.done[w] = msg
                elif typ == FAIL:
                    res.fail[w] = msg
            for p in procs:
                self.assertEqual(p.wait(10 * SCALE), 0 if not res.fail else 1)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            sock.close()
            ctx.term()
            res.stderr = read_stderr(err)
        assert_no_sanitizer(self, res.stderr)
        self.assertEqual(res.fail, {}, res.stderr)
        self.assertEqual(sum(d["records"] for d in res.done.values()), len(res.records))
        for r in res.records:
            self.assertLessEqual(r["intended_ns"], r["start_ns"])
            self.assertLessEqual(r["start_ns"], r["done_ns"])
        return res

    @staticmethod
    def send(sock, w, typ, obj):
        sock.send_multipart([b"w%d" % w, bytes([2, typ]), json.dumps(obj).encode()])

    # --- paced arrivals -------------------------------------------------------

    def timed(self, attempt_fn):
        """Runs attempt_fn (which returns a list of failure messages about
        actual times, empty when all is well) up to ATTEMPTS times."""
        for i in range(ATTEMPTS):
            problems = attempt_fn()
            if not problems or SANITIZED:
                return
            sys.stderr.write("timing attempt %d: %s\n" % (i + 1, "; ".join(problems)))
        self.fail("; ".join(problems))

    def test_a_constant_rate(self):
        m = self.mock()
        spec = self.spec(m.url, {"mode": "rate", "rate": 500, "arrival": "constant",
                                 "duration_s": 2})

        def attempt():
            res = self.run_pool(spec, lambda i: self.rate_share(500, "constant", duration=2.0),
                                n=2)
            recs = sorted(res.records, key=lambda r: r["req_id"])
            self.assertEqual(len(recs), 1000)
            want = constant_schedule(500, 1000)
            self.assertEqual([r["req_id"] for r in recs], list(range(1000)))
            self.assertEqual([r["intended_ns"] for r in recs], want)
            for r in recs:
                self.assertEqual(r["w"], r["req_id"] % 2)
                self.assertEqual(r["error_name"], "", r["error_msg"])
                self.assertEqual(r["phase"], 1)
            self.assertEqual(set(intervals(want)), {2 * MS})
            actual = intervals([r["start_ns"] for r in recs])
            # a constant schedule is not Poisson: the KS test of test_b can fail
            d = ks_exponential([x / SEC for x in actual], 500)
            self.assertGreater(d, 1.63 / math.sqrt(len(actual)))
            # millisecond-scale scheduling jitter of a shared VM is tolerated;
            # a Poisson process would be near 1
            c = cv(actual)
            return [] if c < 0.5 else ["CV of actual intervals %.3f" % c]
        self.timed(attempt)

    def test_b_poisson(self):
        m = self.mock()
        # 200/s keeps the mean gap (5 ms) well above a shared machine's
        # occasional millisecond stalls, which collapse short gaps
        spec = self.spec(m.url, {"mode": "rate", "rate": 200, "duration_s": 5})

        def attempt():
            res = self.run_pool(spec, lambda i: self.rate_share(200, "poisson", duration=5.0))
            n = len(res.records)
            self.assertGreater(n, 850)
            self.assertLess(n, 1150)
            crit = 1.63 / math.sqrt(n - 1)
            planned = intervals([r["intended_ns"] for r in res.records])
            self.assertLess(ks_exponential([x / SEC for x in planned], 200), crit)
            actual = intervals([r["start_ns"] for r in res.records])
            d = ks_exponential([x / SEC for x in actual], 200)
            problems = []
            if d >= crit:
                problems.append("actual start times are not Poisson (KS %.4f >= %.4f)"
                                % (d, crit))
            if abs(cv(actual) - 1) >= 0.15:
                problems.append("CV of actual intervals %.3f" % cv(actual))
            return problems
        self.timed(attempt)

    def test_c_gamma(self):
        m = self.mock()
        spec = self.spec(m.url, {"mode": "rate", "rate": 2000, "arrival": "gamma",
                                 "smoothness": 0.25, "duration_s": 3})

        def attempt():
            res = self.run_pool(spec, lambda i: self.rate_share(2000, "gamma", duration=3.0,
                                                                smoothness=0.25))
            planned = cv(intervals([r["intended_ns"] for r in res.records]))
            self.assertLess(abs(planned - 2.0), 0.2, planned)
            actual = cv(intervals([r["start_ns"] for r in res.records]))
            if abs(actual - planned) < 0.15 * planned:
                return []
            return ["CV of actual intervals %.3f, planned %.3f" % (actual, planned)]
        self.timed(attempt)

    def test_d_seed(self):
        m = self.mock()
        runs = []
        for seed in (11, 11, 12):
            spec = self.spec(m.url, {"mode": "rate", "rate": 4000, "requests": 200}, seed=seed)
            res = self.run_pool(spec, lambda i: self.rate_share(4000, total=200), n=2)
            self.assertEqual(len(res.records), 200)
            runs.append(sorted((r["req_id"], r["intended_ns"]) for r in res.records))
        self.assertEqual(runs[0], runs[1])
        self.assertEqual([k for k, _ in runs[0]], list(range(200)))
        self.assertNotEqual([t for _, t in runs[0]], [t for _, t in runs[2]])

    def test_e_ramp(self):
        m = self.mock()
        spec = self.spec(m.url, {"mode": "rate", "rate": 1000, "ramp_s": 2, "duration_s": 3})
        res = self.run_pool(spec, lambda i: self.rate_share(1000, duration=3.0, ramp=2.0))
        t = [r["intended_ns"] / SEC for r in res.records]
        first = sum(1 for x in t if x < 1)
        ramp = sum(1 for x in t if x < 2)
        last = sum(1 for x in t if x >= 2)
        # rate rises linearly over 2 s: t^2 / (2 ramp) of the full rate
        self.assertLess(abs(first / ramp - 0.25), 0.06, (first, ramp))
        self.assertLess(abs(ramp - 1000), 100)
        self.assertLess(abs(last - 1000), 100)
        self.assertLess(max(t), 3)

    def test_l_ceiling(self):
        """Rate 200/s with a ceiling of 2 against 50 ms requests: arrivals
        wait in order for a slot, keep their intended times, lag grows."""
        m = self.mock("--ttft-ms", "50")
        spec = self.spec(m.url, {"mode": "rate", "rate": 200, "arrival": "constant",
                                 "requests": 20, "max_concurrency": 2})
        res = self.run_pool(spec, lambda i: self.rate_share(200, "constant", total=20, slots=2))
        recs = sorted(res.records, key=lambda r: r["start_ns"])
        self.assertEqual([r["req_id"] for r in recs], list(range(20)))
        self.assertEqual([r["intended_ns"] for r in recs], constant_schedule(200, 20))
        self.assertEqual(peak_in_flight(recs), 2)
        dones = sorted(r["done_ns"] for r in recs)
        for k, r in enumerate(recs[2:]):
            # each waiting arrival goes when a request ends (promptly: judged
            # in the optimised build, with room for a host that stalls the
            # worker; a wait for a later timer - the next arrival, a
            # heartbeat - would show as its whole period)
            self.assertGreaterEqual(r["start_ns"], dones[k])
            if not SANITIZED:
                self.assertLess(r["start_ns"] - dones[k], 100 * MS)
        lag = [r["start_ns"] - r["intended_ns"] for r in recs]
        self.assertGreater(lag[-1], 300 * MS)  # 20 requests * 25 ms - 19 * 5 ms

    def test_l_ceiling_duration(self):
        """Arrivals still waiting for a slot when the duration ends are
        not sent."""
        m = self.mock("--ttft-ms", "100")
        spec = self.spec(m.url, {"mode": "rate", "rate": 100, "arrival": "constant",
                                 "duration_s": 0.35, "max_concurrency": 2})
        res = self.run_pool(spec, lambda i: self.rate_share(100, "constant", duration=0.35,
                                                            slots=2))
        recs = sorted(res.records, key=lambda r: r["start_ns"])
        # 35 scheduled; 2 at 0, 2 at ~100 ms, 2 at ~200 ms, 2 at ~300 ms go
        # out. A slot serves at most 4 requests of 100 ms in 350 ms, so never
        # more than 8; a slow machine may fit fewer rounds, and the rest are
        # counted as still waiting, whatever their number
        self.assertEqual([r["req_id"] for r in recs], list(range(len(recs))))
        self.assertLessEqual(len(recs), 8)
        self.assertGreaterEqual(len(recs), 4)
        self.assertTrue(all(r["start_ns"] < 350 * MS for r in recs),
                        [r["start_ns"] for r in recs])
        self.assertEqual(peak_in_flight(recs), 2)
        unsent = 35 - len(recs)
        self.assertEqual(res.done[0]["unsent"], unsent)
        said = re.findall(r"(\d+) arrivals were still waiting", res.stderr)
        self.assertEqual(said, [str(unsent)], res.stderr)

    def test_m_concurrency_ramp(self):
        """4 slots over 2 workers, ramp 1 s: global slot j opens at j/4 s."""
        m = self.mock("--ttft-ms", "100")
        spec = self.spec(m.url, {"concurrency": 4, "ramp_s": 1, "duration_s": 1.2})
        share = lambda i: {"slots": 2, "duration_s": 1.2, "total_slots": 4, "ramp_s": 1,
                           "req_id_base": i, "req_id_stride": 2}
        res = self.run_pool(spec, share, n=2)
        for w in (0, 1):
            mine = sorted((r for r in res.records if r["w"] == w), key=lambda r: r["start_ns"])
            opens = [j * 250 * MS for j in (w, w + 2)]
            self.assertEqual(mine[0]["intended_ns"], opens[0])
            self.assertIn(opens[1], [r["intended_ns"] for r in mine])
            self.assertTrue(all(r["start_ns"] >= opens[0] for r in mine))
            # one slot until the second opens
            early = [r for r in mine if r["start_ns"] < opens[1]]
            for a, b in zip(early, early[1:]):
                self.assertGreaterEqual(b["start_ns"], a["done_ns"])
            self.assertTrue(all(r["start_ns"] < 1200 * MS for r in mine))

    # --- phases, grace, cancellation -----------------------------------------

    def test_f_warmup(self):
        m = self.mock()
        spec = self.spec(m.url, {"concurrency": 4, "requests": 50})
        spec["warmup"] = {"requests": 20, "load": {"concurrency": 2}}
        for mode in ("concurrency", "rate"):
            with self.subTest(mode=mode):
                warm = {"mode": "concurrency", "slots": 2, "requests": 20, "duration_s": 0,
                        "req_id_base": WARMUP_OFFSET, "req_id_stride": 1, "total_slots": 2}
                if mode == "rate":
                    warm = self.rate_share(400, "constant", total=20)
                    warm["rate"]["stream"] = 5
                    del warm["grace_s"]
                share = {"mode": "concurrency", "slots": 4, "requests": 50,
                         "total_slots": 4, "warmup": warm}
                res = self.run_pool(spec, lambda i: share)
                self.assertEqual(len(res.records), 70)
                warm_recs = [r for r in res.records if r["phase"] == 0]
                prof = [r for r in res.records if r["phase"] == 1]
                self.assertEqual(len(warm_recs), 20)
                self.assertEqual(len(prof), 50)
                self.assertEqual(sorted(r["req_id"] for r in warm_recs),
                                 [WARMUP_OFFSET + k for k in range(20)])
                self.assertEqual(sorted(r["req_id"] for r in prof), list(range(50)))
                types = [e[2] for e in res.events]
                self.assertEqual(types.count(PHASE_DONE), 1)
                pd = [e for e in res.events if e[2] == PHASE_DONE][0]
                self.assertEqual(pd[3], {"phase": "warmup", "sent": 20, "completed": 20})
                pd_ns = pd[0] - res.t0
                for r in warm_recs:
                    self.assertLessEqual(r["done_ns"], pd_ns)
                for r in prof:
                    self.assertGreaterEqual(r["start_ns"], res.phase_start)
                self.assertEqual(len([r for r in prof if r["intended_ns"] == res.phase_start]),
                                 4)
                if mode == "rate":
                    self.assertEqual(sorted(r["intended_ns"] for r in warm_recs),
                                     constant_schedule(400, 20))
                self.assertEqual(res.done[0]["sent"], 70)
                self.assertEqual(sorted(r["seq"] for r in res.records), list(range(70)))

    def test_g_grace(self):
        m = self.mock("--ttft-ms", "3000")
        for mode in ("concurrency", "rate"):
            with self.subTest(mode=mode):
                if mode == "rate":
                    share = self.rate_share(20, "constant", duration=0.5, grace_s=0.5)
                    load = {"mode": "rate", "rate": 20, "duration_s": 0.5}
                else:
                    share = {"slots": 4, "duration_s": 0.5, "grace_s": 0.5}
                    load = {"concurrency": 4, "duration_s": 0.5}
                t = time.monotonic()
                res = self.run_pool(self.spec(m.url, load), lambda i: share)
                # the worker's start and exit included (several times slower
                # under ASan); the grace itself is judged by done_ns below
                self.assertLess(time.monotonic() - t, 2.5 * SCALE)
                self.assertEqual(len(res.records), 4 if mode == "concurrency" else 10)
                if mode == "rate":
                    self.assertEqual(sorted(r["intended_ns"] for r in res.records),
                                     constant_schedule(20, 10))
                for r in res.records:
                    self.assertEqual(r["error_name"], "cancelled")
                    self.assertEqual(r["error_msg"], "grace period over")
                    # nothing is due at or after the end; a paced arrival
                    # (due by 450 ms) that the worker is late for still goes,
                    # however late (its lag says so)
                    self.assertLess(r["intended_ns"], 500 * MS)
                    if mode == "concurrency":
                        self.assertLess(r["start_ns"], 500 * MS)
                    # cancelled when the grace period ends (1 s), not
                    # before; late only by what a stalled host adds
                    self.assertGreaterEqual(r["done_ns"], 1000 * MS)
                    self.assertLess(r["done_ns"], 1600 * MS)

    def test_h_cancel_policy(self):
        m = self.mock("--ttft-ms", "200")
        share = {"slots": 8, "requests": 40, "cancel": {"fraction": 0.5, "after_s": 0.05}}
        spec = self.spec(m.url, {"concurrency": 8, "requests": 40,
                                 "cancel": {"fraction": 0.5, "after_s": 0.05}})
        res = self.run_pool(spec, lambda i: share)
        self.assertEqual(len(res.records), 40)
        self.assertEqual(res.done[0]["completed"], 40)
        want = {k for k in range(40) if rng_uniform(7, 6, k) < 0.5}
        self.assertTrue(10 <= len(want) <= 30)
        got = {r["req_id"] for r in res.records if r["error_name"] == "cancelled"}
        self.assertEqual(got, want)
        for r in res.records:
            took = r["done_ns"] - r["start_ns"]
            if r["req_id"] in want:
                self.assertEqual(r["error_msg"], "cancelled by policy after 0.05 s")
                self.assertGreaterEqual(took, 50 * MS)
                if not SANITIZED:  # before the answer was due (200 ms)
                    self.assertLess(took, 200 * MS)
                self.assertEqual(r["chunks"], [])
            else:
                self.assertEqual(r["error_name"], "", r["error_msg"])
                self.assertGreaterEqual(took, 200 * MS)

    # --- sessions -------------------------------------------------------------

    def test_i_sessions_chat(self):
        s = self.scripted()
        sess = {"turns": {"mean": 3, "stddev": 0}, "think_time_s": {"mean": 0.1, "stddev": 0}}
        spec = self.spec(s.url, {"concurrency": 2, "requests": 6}, sessions=sess)
        res = self.run_pool(spec, lambda i: {"slots": 2, "requests": 6, "sessions": sess})
        self.assertEqual(len(res.records), 6)
        by = {}
        for r in res.records:
            self.assertEqual(r["error_name"], "", r["error_msg"])
            by.setdefault(r["session"], []).append(r)
        # session s = local index * workers + worker; 6 turns in all, so a
        # third session may begin before the second one's last turn
        self.assertIn(sorted(by), [[1, 2], [1, 2, 3]])
        complete = 0
        for session, turns in by.items():
            turns.sort(key=lambda r: r["start_ns"])
            self.assertEqual([r["turn"] for r in turns], list(range(len(turns))))
            self.assertEqual([r["req_id"] for r in turns],
                             [(session - 1) * 1024 + j for j in range(len(turns))])
            complete += len(turns) == 3
            for a, b in zip(turns, turns[1:]):
                self.assertEqual(b["intended_ns"], a["done_ns"] + 100 * MS)
                self.assertGreaterEqual(b["start_ns"], a["done_ns"] + 100 * MS)
            # usage counts the words of every message: the prompt grows
            isl = [r["isl"] for r in turns]
            self.assertEqual(isl, sorted(set(isl)))
        # the third turn's body: the whole conversation, answers exactly as sent
        third = [b for b in s.bodies if len(b["messages"]) == 5]
        self.assertGreaterEqual(complete, 1)
        self.assertEqual(len(third), complete)
        for body in third:
            msgs = body["messages"]
            self.assertEqual([m["role"] for m in msgs],
                             ["user", "assistant", "user", "assistant", "user"])
            self.assertEqual(msgs[1]["content"], ANSWERS[0])
            self.assertEqual(msgs[3]["content"], ANSWERS[1])
            for m in msgs[0::2]:
                self.assertEqual(len(m["content"].split()), 16)
            first = [b for b in s.bodies if len(b["messages"]) == 1
                     and b["messages"][0]["content"] == msgs[0]["content"]]
            self.assertEqual(len(first), 1)

    def test_j_sessions_rate_completions(self):
        m = self.mock()
        sess = {"turns": {"mean": 3, "stddev": 0}, "think_time_s": {"mean": 0.05, "stddev": 0}}
        spec = self.spec(m.url, {"mode": "rate", "rate": 20, "requests": 12},
                         endpoint="completions", sessions=sess)
        res = self.run_pool(spec, lambda i: self.rate_share(20, "constant", total=12,
                                                            sessions=sess))
        # the count is of turns: 12 records; sessions still going when it
        # is reached stop there (arrivals every 50 ms, turns 50 ms apart)
        self.assertEqual(len(res.records), 12)
        by = {}
        for r in res.records:
            self.assertEqual(r["error_name"], "", r["error_msg"])
            by.setdefault(r["session"], []).append(r)
        self.assertEqual(sorted(by), list(range(1, len(by) + 1)))
        self.assertGreaterEqual(len(by), 4)
        arrivals = constant_schedule(20, len(by))
        for session, turns in by.items():
            turns.sort(key=lambda r: r["turn"])
            self.assertEqual([r["turn"] for r in turns], list(range(len(turns))))
            self.assertEqual([r["req_id"] for r in turns],
                             [(session - 1) * 1024 + j for j in range(len(turns))])
            self.assertEqual(turns[0]["intended_ns"], arrivals[session - 1])
            # prompt = user0 answer0 user1 ...: 16, 16 + 8 + 16, ...
            self.assertEqual([r["isl"] for r in turns], [16, 40, 64][:len(turns)])
            for a, b in zip(turns, turns[1:]):
                self.assertEqual(b["intended_ns"], a["done_ns"] + 50 * MS)
        self.assertEqual(len(by[1]), 3)

    # --- trace replay ---------------------------------------------------------

    def test_k_trace(self):
        s = self.scripted()
        lines = []
        for i in range(50):
            e = {"timestamp": i * 20, "input_length": 20 + i, "output_length": 4}
            if i % 10 == 3:
                e["session_id"] = "conv-a"
            elif i % 10 == 7:
                e["session_id"] = "conv-b"
            if i % 5 == 1:
                e["hash_ids"] = [1, 2]
            lines.append(json.dumps(e))
        trace = "\n".join(lines) + "\n"
        spec = self.spec(s.url, {"mode": "trace", "speedup": 2, "start_s": 0.2, "end_s": 0.9},
                         kind="trace", trace=trace)
        del spec["workload"]["isl"], spec["workload"]["osl"]
        spec["workload"]["block_size"] = 20  # tokens (here words) per hash id
        share = {"mode": "trace", "slots": 0, "requests": 0, "duration_s": 0,
                 "trace": {"speedup": 2, "start_s": 0.2, "end_s": 0.9}, "grace_s": 5}
        res = self.run_pool(spec, lambda i: share, n=2)
        idx = [i for i in range(50) if 200 <= i * 20 < 900]
        self.assertEqual(sorted(r["req_id"] for r in res.records), idx)
        owner = {"conv-a": fnv1a("conv-a") % 2, "conv-b": fnv1a("conv-b") % 2}
        sessions = {}
        for r in res.records:
            i = r["req_id"]
            self.assertEqual(r["error_name"], "", r["error_msg"])
            sid = json.loads(lines[i]).get("session_id")
            planned = int(round((i * 20 / 1000 - 0.2) / 2 * 1e9))
            if sid is None:
                self.assertEqual(r["w"], i % 2)
                self.assertEqual(r["intended_ns"], planned)
                self.assertEqual((r["session"], r["turn"]), (0, 0))
            else:
                self.assertEqual(r["w"], owner[sid])
                self.assertGreaterEqual(r["intended_ns"], planned)
                sessions.setdefault(sid, []).append(r)
        for sid, turns in sessions.items():
            turns.sort(key=lambda r: r["req_id"])
            self.assertEqual([r["turn"] for r in turns], list(range(len(turns))))
            self.assertEqual({r["session"] for r in turns}, {turns[0]["req_id"] + 1})
            for a, b in zip(turns, turns[1:]):
                self.assertGreaterEqual(b["intended_ns"], a["done_ns"])
        # sends ~10 ms apart (20 ms of trace at speedup 2)
        lone = sorted(r["intended_ns"] for r in res.records if r["session"] == 0)
        self.assertTrue(all(d % (10 * MS) == 0 for d in intervals(lone)))
        # prompts: input_length words; hash ids 1, 2 give the same first 40
        lone_bodies = [b for b in s.bodies if len(b["messages"]) == 1]
        for b in lone_bodies:
            self.assertIn(len(b["messages"][0]["content"].split()), [20 + i for i in idx])
        shared = [b["messages"][0]["content"].split() for b in lone_bodies
                  if len(b["messages"][0]["content"].split()) in
                  [20 + i for i in idx if i % 5 == 1]]
        full = [w for w in shared if len(w) > 40]
        self.assertGreaterEqual(len(full), 3)
        self.assertEqual(len({" ".join(w[:40]) for w in full}), 1)
        self.assertEqual(len({" ".join(w[40:]) for w in full}), len(full))
        # blocks beyond input_length are cut: 31 and 36 words are the first ones
        cut = sorted((w for w in shared if len(w) <= 40), key=len)
        self.assertEqual(cut, [full[0][:31], full[0][:36]])
        # a session's later turns carry its earlier ones
        longest = max(s.bodies, key=lambda b: len(b["messages"]))
        self.assertGreater(len(longest["messages"]), 1)
        self.assertEqual(longest["messages"][1]["content"], ANSWERS[0])


if __name__ == "__main__":
    unittest.main()
