"""test_worker.py - headroom-worker against headroom-mock, driven by a fake
daemon.

The test plays headroomd's part of api/protocol.md: it binds a ZeroMQ
ROUTER on an ipc path in a temporary directory, starts headroom-worker
(and headroom-mock, or a small scripted Python server for odd responses),
answers HELLO with SCHEDULE and READY with START, collects RECORDS,
HEARTBEAT and DONE, and checks what the records say.

Environment: HEADROOM_BIN is the build's bin directory (default:
build/bin of this checkout). Needs Python 3 and python3-zmq.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrrecords  # noqa: E402
from hrtest import closed_port, sanitized, time_scale  # noqa: E402
from hrworker import (DONE, FAIL, HEARTBEAT, HELLO, MS, READY, RECORDS,  # noqa: E402
                      SAMPLE, SCHEDULE, START, STOP, WORKER, HttpServer, QuietHandler,
                      ServersMixin, assert_no_sanitizer, read_stderr, router)

# Incidental upper bounds on wall time (a process starting, a run ending)
# are multiplied by this: 4 under ASan/UBSan, 1 otherwise (hrtest.py).
SCALE = time_scale()
SANITIZED = sanitized()


# Streamed chunks that probe the worker's JSON fast path (worker/chunkscan.c):
# (payload, content chunks it adds, whether the stream is malformed).
DIFF_CASES = [
    (b'{"choices":[{"delta":{"content":"a"}}]}', 1, False),
    (b'{"choices":[{"delta":{"content":"a","content":""}}]}', 0, False),
    (b'{"choices":[{"delta":{"content":""},"delta":{"content":"x"}}]}', 1, False),
    (b'{"choices":[{"delta":{"content":"x"}}],"choices":[]}', 0, False),
    (b'{"choices":[{"delta":{"content":"\\u00e9\\ud83d\\ude00\\n"}}]}', 1, False),
    ('{"choices":[{"delta":{"content":"\u00e9\u4e2d\U0001F600"}}]}'.encode(), 1, False),
    (b'{"choices":[{"delta":{"reasoning":"r"}}]}', 1, False),
    (b'{"choices":[{"delta":{"content":null,"reasoning_content":"r"}}]}', 1, False),
    (b'{"choices":[{"delta":{"content":5}}]}', 0, False),
    (b'{"choices":[{"delta":{}},{"delta":{"content":"x"}}]}', 0, False),
    (b'{"choices":{"0":{"delta":{"content":"x"}}}}', 0, False),
    (b'{"choices":[{"delta":"content"}]}', 0, False),
    (b'{"choices":[{"text":"x","delta":{"content":"y"}}]}', 1, False),
    (b'{"x":[1.5e10,-0,0.25,1E+2,-1234567890,true,false,null,{},[]],'
     b'"choices":[{"delta":{"content":"n"}}]}', 1, False),
    (b'{"usage":{"prompt_tokens":5,"completion_tokens":7,"completion_tokens":3,'
     b'"completion_tokens_details":{"reasoning_tokens":2}}}', 0, False),
    (b'{"usage":{"prompt_tokens":-1,"completion_tokens":2.0}}', 0, False),
    (b'{"usage":{"prompt_tokens":4},"usage":null}', 0, False),
    (b'{"choices":[{"delta":{"cont\\u0065nt":"x"}}]}', 1, False),
    (b'{"error":null,"choices":[{"delta":{"content":"z"}}]}', 1, False),
    (b'{"a":' + b"[" * 40 + b"]" * 40 + b',"choices":[{"delta":{"content":"d"}}]}', 1, False),
    (b' \t{ "choices" : [ { "delta" : { "content" : "w" } } ] }\r ', 1, False),
    (b'{"a":1,}', 0, True),
    (b'{"a":01}', 0, True),
    (b'{"a":"\\u0000"}', 0, True),
    (b'{"a":"\\ud800"}', 0, True),
    (b'{"a":"\\udc00\\ud800"}', 0, True),
    (b'{"a":"\xc0\x80"}', 0, True),
    (b'{"a":"\xed\xa0\x80"}', 0, True),
    (b'{"a":"\xf4\x90\x80\x80"}', 0, True),
    (b'{"a":"\x01"}', 0, True),
    (b'{"a":1e999}', 0, True),
    (b'{"a":123456789012345678901}', 0, True),
    (b'{"a":-}', 0, True),
    (b'{"a":1.}', 0, True),
    (b'[1]', 0, True),
    (b'{"a":1} x', 0, True),
    (b'{"a":tru}', 0, True),
    (b'{"a":"\\x"}', 0, True),
    (b'{"a" 1}', 0, True),
    (b'', 0, True),
]


class Scripted(HttpServer):
    """A Python HTTP server whose answer is chosen by the model name; it
    keeps what it received (headers, body) for inspection."""

    def __init__(self):
        self.requests = []
        self.counter = 0
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.json_body()
                outer.requests.append((self.path, dict(self.headers), body))
                getattr(outer, "answer_" + body["model"])(self, body)

        super().__init__(Handler)

    @staticmethod
    def sse(h, events, status=200):
        h.send_response(status)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        try:
            for e in events:
                h.wfile.write(e if isinstance(e, bytes) else e.encode())
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker gave up on a malformed stream

    @staticmethod
    def chunk(delta=None, usage=None, choices=True):
        obj = {"object": "chat.completion.chunk"}
        obj["choices"] = [{"index": 0, "delta": delta or {}}] if choices else []
        if usage:
            obj["usage"] = usage
        return "data: %s\n\n" % json.dumps(obj)

    def answer_reasoning(self, h, body):
        c = self.chunk
        self.sse(h, [": keep-alive\n\n", c({"role": "assistant"}),
                     c({"reasoning_content": "hmm"}), c({"reasoning_content": "ok"}),
                     c({"content": "a"}), c({"content": ""}), c({"content": "b"}),
                     c(choices=False, usage={"prompt_tokens": 3, "completion_tokens": 4}),
                     "data: [DONE]\n\n"])

    def answer_nousage(self, h, body):
        # split across writes, CRLF line ends, no usage, no [DONE]
        c = self.chunk
        self.sse(h, [c({"role": "assistant"}), c({"content": "x"}).replace("\n", "\r\n"),
                     "data: {\"choices\":[{\"delta\":{\"con", "tent\":\"y\"}}]}\n", "\n"])

    def answer_badjson(self, h, body):
        self.sse(h, [self.chunk({"content": "a"}), "data: {not json\n\n",
                     self.chunk({"content": "b"})])

    def answer_empty(self, h, body):
        self.sse(h, [self.chunk({"role": "assistant"}), "data: [DONE]\n\n"])

    def answer_err500(self, h, body):
        msg = b'{"error": {"message": "overloaded\nreally"}}' + b"x" * 1000
        h.send_response(503)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(msg)))
        h.end_headers()
        h.wfile.write(msg)

    def answer_diff(self, h, body):
        case = DIFF_CASES[self.counter % len(DIFF_CASES)][0]
        self.counter += 1
        self.sse(h, [b"data: " + case + b"\n\n",
                     self.chunk({"content": "end"}).encode(), "data: [DONE]\n\n"])

    def answer_huge(self, h, body):
        self.sse(h, [self.chunk({"content": "a"}), "data: " + "x" * (1100 * 1024)])

    def answer_badbody(self, h, body):
        msg = b'{"choices": [{"message": {"content": 7}}]}'
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(msg)))
        h.end_headers()
        h.wfile.write(msg)

    def answer_goodbody(self, h, body):
        msg = json.dumps({"choices": [{"message": {"content": "hello"}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(msg)))
        h.end_headers()
        h.wfile.write(msg)

    def answer_echo(self, h, body):
        self.sse(h, [self.chunk({"content": "hi"}), "data: [DONE]\n\n"])


class Result:
    def __init__(self):
        self.records = []
        self.heartbeats = []
        self.samples = []
        self.done = None
        self.fail = None
        self.rc = None
        self.t0 = None
        self.done_at = None
        self.stop_at = None
        self.stderr = ""


class WorkerCase(ServersMixin, unittest.TestCase):
    scripted_class = Scripted

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hrw-")
        self.ctx = zmq.Context()
        self.sock, self.endpoint = router(self.ctx, os.path.join(self.tmp, "d.sock"))
        self.servers = []
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for s in self.servers:
            s.close()
        self.sock.close()
        self.ctx.term()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- plumbing -----------------------------------------------------

    def recv(self, timeout):
        if not self.sock.poll(int(timeout * 1000)):
            raise TimeoutError("no message from the worker in %.1f s" % timeout)
        frames = self.sock.recv_multipart()
        self.assertEqual(len(frames), 3, "routing id, header, payload")
        ident, hdr, payload = frames
        self.assertEqual(ident, b"w0")
        self.assertEqual(len(hdr), 2)
        self.assertEqual(hdr[0], 2, "protocol version")
        if hdr[1] == RECORDS:
            return hdr[1], hrrecords.decode_batch(payload)
        obj = json.loads(payload)
        self.assertIsInstance(obj, dict)
        return hdr[1], obj

    def send(self, typ, obj):
        self.sock.send_multipart([b"w0", bytes([2, typ]), json.dumps(obj).encode()])

    def start_worker(self, env=None):
        err = open(os.path.join(self.tmp, "worker.err"), "w+", errors="replace")
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.Popen([WORKER, "--connect", self.endpoint, "--index", "0"],
                             stdout=subprocess.DEVNULL, stderr=err, env=e)
        self.procs.append(p)
        self.err = err
        return p

    def run_worker(self, spec, share, env=None, stop_when=None, timeout=20.0,
                   schedule=None):
        """Plays the daemon for one worker until its DONE (or FAIL). With
        stop_when, STOP is sent once a HEARTBEAT satisfies stop_when(hb)."""
        res = Result()
        p = self.start_worker(env)
        typ, hello = self.recv(5 * SCALE)
        self.assertEqual(typ, HELLO)
        self.assertEqual(hello["index"], 0)
        self.assertEqual(hello["pid"], p.pid)
        self.assertEqual(hello["protocol"], 2)
        for k in ("version", "mono_ns", "wall_ns"):
            self.assertIn(k, hello)
        if schedule is None:
            schedule = {"run_id": 1, "worker": 0, "workers": 1, "spec": spec, "share": share}
        self.send(SCHEDULE, schedule)
        typ, msg = self.recv(5 * SCALE)
        if typ == FAIL:
            res.fail = msg
            res.rc = p.wait(5 * SCALE)
            return self.finish(res)
        self.assertEqual(typ, READY, msg)
        res.t0 = time.monotonic_ns() + 50 * MS
        self.send(START, {"t0_mono_ns": res.t0, "t0_wall_ns": time.time_ns() + 50 * MS,
                          "phase": "profiling", "phase_start_ns": 0})
        deadline = time.monotonic() + timeout * SCALE
        while True:
            typ, msg = self.recv(max(deadline - time.monotonic(), 0.001))
            if typ == RECORDS:
                res.records.extend(msg)
            elif typ == HEARTBEAT:
                res.heartbeats.append(msg)
                if stop_when is not None and res.stop_at is None and stop_when(msg):
                    res.stop_at = time.monotonic_ns()
                    self.send(STOP, {"reason": "test"})
            elif typ == SAMPLE:
                res.samples.append(msg)
            elif typ == DONE:
                res.done = msg
                res.done_at = time.monotonic_ns()
                break
            else:
                self.fail("unexpected message type %d: %r" % (typ, msg))
        res.rc = p.wait(5 * SCALE)
        return self.finish(res)

    def finish(self, res):
        res.stderr = read_stderr(self.err)
        assert_no_sanitizer(self, res.stderr)
        return res

    @staticmethod
    def spec(url, concurrency=1, requests=None, duration_s=None, endpoint="chat",
             stream=True, isl=10, osl=20, model="mock-model", **target):
        load = {"concurrency": concurrency}
        if duration_s is not None:
            load["duration_s"] = duration_s
        else:
            load["requests"] = requests or 1
        t = {"url": url, "model": model, "endpoint": endpoint, "stream": stream,
             "timeout_s": 10}
        t.update(target)
        return {"name": "t", "target": t,
                "workload": {"isl": {"mean": isl}, "osl": {"mean": osl}, "seed": 7},
                "load": load}

    def check_common(self, res, n):
        """Invariants of every record of a run that sent n requests."""
        self.assertEqual(res.rc, 0, res.stderr)
        self.assertIsNotNone(res.done)
        self.assertEqual(len(res.records), n)
        self.assertEqual(res.done["sent"], n)
        self.assertEqual(res.done["completed"], n)
        self.assertEqual(res.done["records"], n)
        self.assertEqual(res.done["errors"],
                         sum(1 for r in res.records if r["error"]))
        self.assertEqual(sorted(r["seq"] for r in res.records), list(range(n)))
        for r in res.records:
            self.assertEqual(r["worker"], 0)
            self.assertEqual(r["phase"], 1)
            self.assertLessEqual(0, r["intended_ns"])
            self.assertLessEqual(r["intended_ns"], r["start_ns"])
            self.assertLessEqual(r["start_ns"], r["done_ns"])
            ch = r["chunks"]
            self.assertEqual(ch, sorted(ch))
            if ch:
                self.assertLessEqual(r["start_ns"], ch[0])
                self.assertEqual(ch[-1], r["end_ns"])
                self.assertLessEqual(r["end_ns"], r["done_ns"])
            if r["headers_ns"] != -1:
                self.assertLessEqual(r["start_ns"], r["headers_ns"])
                if ch:
                    self.assertLessEqual(r["headers_ns"], ch[0])

    @staticmethod
    def max_in_flight(records):
        events = []
        for r in records:
            events.append((r["start_ns"], 1))
            events.append((r["done_ns"], -1))
        events.sort(key=lambda e: (e[0], e[1]))  # a finish before a start at the same ns
        cur = peak = 0
        for _, d in events:
            cur += d
            peak = max(peak, cur)
        return peak

    # --- tests ----------------------------------------------------------

    def test_a_streamed_chat(self):
        m = self.mock()
        share = {"slots": 16, "requests": 200, "duration_s": 0, "req_id_base": 3,
                 "req_id_stride": 2}
        res = self.run_worker(self.spec(m.url, 16, 200), share)
        self.check_common(res, 200)
        for r in res.records:
            self.assertEqual(r["http_status"], 200)
            self.assertEqual(r["error_name"], "", r["error_msg"])
            self.assertEqual(r["flags"], hrrecords.FLAG_STREAMED)
            self.assertEqual(r["req_id"], 3 + 2 * r["seq"])
            self.assertEqual(len(r["chunks"]), 20)
            self.assertEqual(r["osl"], 20)
            self.assertEqual(r["osl_src_name"], "server_usage")
            self.assertEqual(r["isl"], 10)
            self.assertEqual(r["isl_src_name"], "server_usage")
            self.assertEqual(r["reasoning_tokens"], 0)
            self.assertEqual(r["first_output_ns"], r["chunks"][0])
            self.assertNotEqual(r["headers_ns"], -1)
        self.assertLessEqual(self.max_in_flight(res.records), 16)
        first_wave = [r for r in res.records if r["intended_ns"] == 0]
        self.assertEqual(len(first_wave), 16)

    def test_b_completions_and_non_streaming(self):
        m = self.mock()
        for endpoint, stream in (("completions", True), ("chat", False),
                                 ("completions", False)):
            with self.subTest(endpoint=endpoint, stream=stream):
                self.setUpSocket()
                res = self.run_worker(self.spec(m.url, 4, 12, endpoint=endpoint, stream=stream),
                                      {"slots": 4, "requests": 12})
                self.check_common(res, 12)
                for r in res.records:
                    self.assertEqual(r["error_name"], "", r["error_msg"])
                    self.assertEqual(r["http_status"], 200)
                    self.assertEqual(r["osl"], 20)
                    self.assertEqual(r["isl"], 10)
                    if stream:
                        self.assertEqual(len(r["chunks"]), 20)
                        self.assertEqual(r["flags"], hrrecords.FLAG_STREAMED)
                    else:
                        self.assertEqual(r["chunks"], [])
                        self.assertEqual(r["flags"], 0)
                        self.assertEqual(r["end_ns"], r["done_ns"])
                        self.assertEqual(r["first_output_ns"], r["done_ns"])

    def setUpSocket(self):
        """A fresh ROUTER for a sub-test (the previous worker's id is gone)."""
        self.sock.close()
        self.sock, self.endpoint = router(
            self.ctx, os.path.join(self.tmp, "d%d.sock" % len(self.procs)))

    def test_c_timing(self):
        """Each chunk is timestamped when it arrives. The mock sends chunk k
        of a stream at first + 5k ms (absolute times: after a stall it
        catches up, so a stall on either side shortens later gaps but never
        stretches the stream)."""
        m = self.mock("--ttft-ms", "30", "--itl-ms", "5")
        res = self.run_worker(self.spec(m.url, 4, 8), {"slots": 4, "requests": 8})
        self.check_common(res, 8)
        gaps = []
        for r in res.records:
            self.assertEqual(r["error_name"], "", r["error_msg"])
            ttft = r["chunks"][0] - r["start_ns"]
            self.assertGreaterEqual(ttft, 29 * MS)
            self.assertLess(ttft, 500 * MS * SCALE)
            # 20 chunks, chunk k due 30 + 5k ms after the mock took the
            # request (after start_ns): none can be read before it is due; a
            # stall of either side only makes one later (and the rest, as
            # the mock catches up, closer together)
            self.assertEqual(len(r["chunks"]), 20)
            for k, c in enumerate(r["chunks"]):
                self.assertGreaterEqual(c - r["start_ns"], (29 + 5 * k) * MS, (k, r["chunks"]))
            gaps += [b - a for a, b in zip(r["chunks"], r["chunks"][1:])]
        gaps.sort()
        median = gaps[len(gaps) // 2]
        # a stall only bunches chunks (smaller gaps): the upper bound holds
        # on any machine; the lower one only sees chunks not collapsed into
        # one read (each chunk's own time is judged above, from below)
        self.assertGreaterEqual(median, 2 * MS, gaps)
        self.assertLessEqual(median, 8 * MS, gaps)
        self.assertGreaterEqual(len(res.heartbeats), 1)
        hb = res.heartbeats[-1]
        for k in ("sent", "completed", "errors", "in_flight", "records"):
            self.assertIn(k, hb)

    def test_d_unreachable(self):
        url = "http://127.0.0.1:%d" % closed_port()
        res = self.run_worker(self.spec(url, 4, 20), {"slots": 4, "requests": 20})
        # refused connections fail at once: no retries, no waiting out a timeout
        self.assertLess(res.done_at - res.t0, 5000 * MS * SCALE)
        self.check_common(res, 20)
        for r in res.records:
            self.assertEqual(r["error_name"], "connect", r["error_msg"])
            self.assertEqual(r["http_status"], 0)
            self.assertTrue(r["error_msg"])
            self.assertEqual(r["headers_ns"], -1)
        self.assertEqual(res.done["errors"], 20)

    def test_e_stop(self):
        # STOP once a heartbeat shows all 8 in flight; the first token would
        # come 10 s later, far beyond even the scaled STOP-to-DONE bound
        m = self.mock("--ttft-ms", "10000")
        res = self.run_worker(self.spec(m.url, 8, 100), {"slots": 8, "requests": 100},
                              stop_when=lambda hb: hb["in_flight"] == 8)
        self.assertIsNotNone(res.stop_at)
        self.assertLess(res.done_at - res.stop_at, 1000 * MS * SCALE)
        self.check_common(res, 8)
        for r in res.records:
            self.assertEqual(r["error_name"], "cancelled")
            self.assertIn("test", r["error_msg"])
            self.assertEqual(r["chunks"], [])

    def test_f_bad_schedule(self):
        m_url = "http://127.0.0.1:1"
        good = self.spec(m_url, 2, 4)
        no_target = dict(good)
        del no_target["target"]
        cases = [
            ("spec without target", no_target, {"slots": 2, "requests": 4}, "target"),
            ("slots a string", good, {"slots": "2", "requests": 4}, "slots"),
            ("slots zero", good, {"slots": 0, "requests": 4}, "slots"),
            ("share missing", good, None, "share"),
            ("negative stride", good, {"slots": 2, "requests": 4, "req_id_stride": -1},
             "req_id_stride"),
            ("requests and duration", good, {"slots": 2, "requests": 4, "duration_s": 1},
             "duration_s"),
            ("rate without rate", good, {"mode": "rate", "slots": 0, "requests": 4},
             "share.rate"),
            ("unknown law", good, {"mode": "rate", "slots": 0,
                                   "rate": {"law": "zipf", "rate": 5, "total_requests": 4}},
             "law"),
            ("zero rate", good, {"mode": "rate", "slots": 0,
                                 "rate": {"rate": 0, "total_requests": 4}}, "rate.rate"),
            ("unbounded rate", good, {"mode": "rate", "slots": 0, "rate": {"rate": 5}},
             "total_requests"),
            ("unknown mode", good, {"mode": "burst", "slots": 2, "requests": 4}, "mode"),
            ("trace without trace", good, {"mode": "trace", "slots": 0}, "trace"),
            ("warm-up replaying a trace", good,
             {"slots": 2, "requests": 4, "warmup": {"mode": "trace", "slots": 0}}, "warmup"),
            ("warm-up without slots", good, {"slots": 2, "requests": 4, "warmup": {}},
             "share.warmup.slots"),
            ("bad cancel", good, {"slots": 2, "requests": 4, "cancel": {"fraction": 2}},
             "cancel.fraction"),
            ("sessions without turns", good,
             {"slots": 2, "requests": 4, "sessions": {"think_time_s": {"mean": 1}}},
             "sessions.turns"),
            ("negative grace", good, {"slots": 2, "requests": 4, "grace_s": -1}, "grace_s"),
            ("another worker's share", good, {"slots": 2, "requests": 4, "worker": 1,
                                              "workers": 2}, "share.worker"),
        ]
        for name, spec, share, word in cases:
            with self.subTest(name):
                self.setUpSocket()
                sched = {"run_id": 1, "worker": 0, "spec": spec}
                if share is not None:
                    sched["share"] = share
                res = self.run_worker(None, None, schedule=sched)
                self.assertIsNotNone(res.fail, name)
                self.assertIn(word, res.fail["message"])
                self.assertEqual(res.rc, 1)

    def test_f_messages_during_a_send(self):
        """SCHEDULE arriving while the worker is still inside its HELLO send,
        and START inside its READY send (tests/shims/slow_send.c holds each
        send 300 ms): the worker reads them then and acts on them, instead of
        waiting for a wake-up of the edge-triggered ZMQ_FD that never comes."""
        shim = os.path.join(os.path.dirname(WORKER), "..", "tests", "libhr_slow_send.so")
        self.assertTrue(os.path.exists(shim), shim)
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": shim, "HR_SLOW_SEND_MS": "300", "HR_SLOW_SEND_MESSAGES": "2",
               "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}
        m = self.mock()
        with self.subTest("refused share"):
            self.setUpSocket()
            res = self.run_worker(self.spec(m.url, 2, 4), {"slots": 2, "requests": 4,
                                                           "duration_s": 1}, env=env)
            self.assertIsNotNone(res.fail)
            self.assertIn("duration_s", res.fail["message"])
            self.assertEqual(res.rc, 1)
        with self.subTest("run"):
            self.setUpSocket()
            res = self.run_worker(self.spec(m.url, 2, 4), {"slots": 2, "requests": 4},
                                  env=env, timeout=10)
            self.check_common(res, 4)
            for r in res.records:
                self.assertEqual(r["error_name"], "", r["error_msg"])

    def test_g_duration(self):
        m = self.mock("--itl-ms", "5")
        res = self.run_worker(self.spec(m.url, 4, duration_s=1),
                              {"slots": 4, "requests": 0, "duration_s": 1})
        n = len(res.records)
        self.check_common(res, n)
        self.assertGreater(n, 8)
        for r in res.records:
            self.assertEqual(r["error_name"], "", r["error_msg"])
            self.assertLess(r["start_ns"], 1000 * MS)
        last_done = max(r["done_ns"] for r in res.records)
        self.assertGreaterEqual(last_done, 1000 * MS)
        # ~100 ms requests: by the worker's own clock everything is over
        # well before 1.5 s (exactly so in the optimised build), and DONE
        # follows the last completion promptly
        self.assertLess(last_done, (1000 + 500 * SCALE) * MS)
        self.assertLess(res.done_at - res.t0 - last_done, 500 * MS * SCALE)
        # a heartbeat at START (50 ms before t0), then every 250 ms; a late
        # worker skips rather than bursts, so ask for one per 500 ms of the
        # observed run (3 for a run of 1.0-1.5 s)
        span = res.done_at - (res.t0 - 50 * MS)
        self.assertGreaterEqual(len(res.heartbeats), 1 + span // (500 * MS),
                                (span, res.heartbeats))
        # self-telemetry: one sample a second, and a last one at the end
        # whose totals are the worker's own (lib/csample.h)
        self.assertGreaterEqual(len(res.samples), 2, res.samples)
        for smp in res.samples:
            self.assertEqual(smp["phase"], 1)
            self.assertGreater(smp["interval_ns"], 0)
            self.assertLessEqual(smp["busy_ns"], smp["interval_ns"] * 1.05)
            self.assertEqual(len(smp["late"]), 9)
            self.assertLessEqual(smp["in_flight"], 4)
        self.assertGreaterEqual(res.samples[0]["interval_ns"], 900 * MS)
        last = res.samples[-1]
        self.assertEqual(last["sent"], res.done["sent"])
        self.assertEqual(last["completed"], res.done["completed"])
        self.assertEqual(last["in_flight"], 0)
        self.assertEqual(last["port_errors"], 0)
        t = [smp["t_ns"] for smp in res.samples]
        self.assertEqual(t, sorted(t))

    def test_h_api_key(self):
        var = "HEADROOM_TEST_UNSET_KEY_4711"
        env = dict(os.environ)
        env.pop(var, None)
        spec = self.spec("http://127.0.0.1:1", 1, 1, api_key_env=var)
        res = self.run_worker(spec, {"slots": 1, "requests": 1})
        self.assertIsNotNone(res.fail)
        self.assertIn(var, res.fail["message"])
        self.assertEqual(res.rc, 1)

    def test_i_request_shape(self):
        s = self.scripted()
        spec = self.spec(s.url + "/", 1, 1, model="echo", api_key_env="HR_TEST_KEY",
                         headers={"X-Run": "abc", "Accept": "*/*"},
                         extra_body={"temperature": 0.5, "max_tokens": 7})
        res = self.run_worker(spec, {"slots": 1, "requests": 1},
                              env={"HR_TEST_KEY": "sekrit"})
        self.check_common(res, 1)
        path, headers, body = s.requests[0]
        self.assertEqual(path, "/v1/chat/completions")
        self.assertEqual(headers["Authorization"], "Bearer sekrit")
        self.assertEqual(headers["X-Run"], "abc")
        self.assertEqual(headers["Accept"], "*/*")
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertNotIn("Expect", headers)
        self.assertEqual(body["model"], "echo")
        self.assertEqual(body["max_tokens"], 7)
        self.assertEqual(body["temperature"], 0.5)
        self.assertIs(body["stream"], True)
        self.assertEqual(body["stream_options"], {"include_usage": True})
        self.assertEqual(body["messages"][0]["role"], "user")
        self.assertEqual(len(body["messages"][0]["content"].split()), 10)
        r = res.records[0]
        self.assertEqual(r["osl"], 1)
        self.assertEqual(r["osl_src_name"], "chunks")
        self.assertEqual(r["isl"], 10)
        self.assertEqual(r["isl_src_name"], "requested")

    def test_j_odd_streams(self):
        s = self.scripted()
        cases = {
            "reasoning": dict(error="", n=4, osl=4, isl=3, reasoning=2, first_output=2),
            "nousage": dict(error="", n=2, osl=2, isl=10, reasoning=0, first_output=0),
            "badjson": dict(error="malformed_stream", n=1),
            "empty": dict(error="no_content", n=0),
            "err500": dict(error="http_5xx", n=0),
        }
        for model, want in cases.items():
            with self.subTest(model):
                self.setUpSocket()
                res = self.run_worker(self.spec(s.url, 1, 1, model=model),
                                      {"slots": 1, "requests": 1})
                self.check_common(res, 1)
                r = res.records[0]
                self.assertEqual(r["error_name"], want["error"], r["error_msg"])
                self.assertEqual(len(r["chunks"]), want["n"])
                if want["error"]:
                    self.assertTrue(r["error_msg"])
                else:
                    self.assertEqual(r["osl"], want["osl"])
                    self.assertEqual(r["isl"], want["isl"])
                    self.assertEqual(r["reasoning_tokens"], want["reasoning"])
                    self.assertEqual(r["first_output_ns"], r["chunks"][want["first_output"]])
                if model == "err500":
                    self.assertEqual(r["http_status"], 503)
                    self.assertTrue(r["error_msg"].startswith("HTTP 503: "))
                    self.assertIn("overloaded really", r["error_msg"])
                    self.assertLessEqual(len(r["error_msg"]), 300)

    def test_l_json_fast_path_agrees(self):
        s = self.scripted()
        n = len(DIFF_CASES)
        runs = {}
        for mode in ("fast", "jansson"):
            self.setUpSocket()
            s.counter = 0
            env = {"HEADROOM_WORKER_JSON": mode}
            res = self.run_worker(self.spec(s.url, 1, n, model="diff"),
                                  {"slots": 1, "requests": n}, env=env)
            self.check_common(res, n)
            runs[mode] = sorted(res.records, key=lambda r: r["seq"])
        keys = ("error", "osl", "osl_src", "isl", "isl_src", "reasoning_tokens", "http_status")
        for (payload, chunks, bad), a, b in zip(DIFF_CASES, runs["fast"], runs["jansson"]):
            with self.subTest(payload=payload):
                self.assertEqual({k: a[k] for k in keys}, {k: b[k] for k in keys})
                self.assertEqual(len(a["chunks"]), len(b["chunks"]))
                self.assertEqual(a["first_output_ns"] == -1, b["first_output_ns"] == -1)
                if bad:
                    self.assertEqual(a["error_name"], "malformed_stream")
                else:
                    self.assertEqual(a["error_name"], "", a["error_msg"])
                    self.assertEqual(len(a["chunks"]), chunks + 1)

    def test_m_odd_bodies(self):
        s = self.scripted()
        for model, stream, err in (("huge", True, "malformed_stream"),
                                   ("badbody", False, "malformed_stream"),
                                   ("goodbody", False, ""),
                                   ("err500", False, "http_5xx")):
            with self.subTest(model):
                self.setUpSocket()
                res = self.run_worker(self.spec(s.url, 1, 1, model=model, stream=stream),
                                      {"slots": 1, "requests": 1})
                self.check_common(res, 1)
                r = res.records[0]
                self.assertEqual(r["error_name"], err, r["error_msg"])
                if model == "goodbody":
                    self.assertEqual((r["isl"], r["osl"]), (3, 2))
                    self.assertEqual(r["end_ns"], r["done_ns"])

    def test_n_timeout(self):
        m = self.mock("--ttft-ms", "10000")
        spec = self.spec(m.url, 2, 2)
        spec["target"]["timeout_s"] = 0.3
        res = self.run_worker(spec, {"slots": 2, "requests": 2})
        self.assertLess(res.done_at - res.t0, 2000 * MS * SCALE)
        self.check_common(res, 2)
        for r in res.records:
            self.assertEqual(r["error_name"], "timeout", r["error_msg"])
            took = r["done_ns"] - r["start_ns"]
            self.assertGreaterEqual(took, 290 * MS)
            # cut at 0.3 s, long before the first token (10 s)
            self.assertLess(took, (300 + 700 * SCALE) * MS)

    def test_o_hostile_daemon(self):
        """Garbage before SCHEDULE is dropped; STOP before START ends cleanly."""
        m = self.mock()
        p = self.start_worker()
        self.assertEqual(self.recv(5 * SCALE)[0], HELLO)
        for frames in ([b"w0", b"\x01\x02", b"{}"], [b"w0", b"xx"],
                       [b"w0", b"\x02\x02", b"not json"], [b"w0", b"\x02\x63", b"{}"],
                       [b"w0", b"\x02\x02", b"[1]", b"extra"], [b"w0", b"\x02\x04", b"{}"]):
            self.sock.send_multipart(frames)
        self.send(SCHEDULE, {"worker": 0, "spec": self.spec(m.url, 2, 4),
                             "share": {"slots": 2.0, "requests": 4, "unknown": [1]}})
        typ, _ = self.recv(5 * SCALE)
        self.assertEqual(typ, READY)
        self.send(STOP, {"reason": "early"})
        typ, done = self.recv(5 * SCALE)
        self.assertEqual(typ, DONE)
        self.assertEqual(done, {"sent": 0, "completed": 0, "errors": 0, "records": 0,
                                "unsent": 0})
        res = self.finish(Result())
        self.assertEqual(p.wait(5 * SCALE), 0, res.stderr)
        self.assertIn("malformed", res.stderr)

    def test_p_start_fields(self):
        """START without the phase fields means the profiling share (old
        daemons); a warm-up START for a share without warm-up is refused."""
        m = self.mock()
        for start, ok in (({}, True), ({"phase": "profiling", "phase_start_ns": 20 * MS}, True),
                          ({"phase": "warmup"}, False), ({"phase": "later"}, False),
                          ({"phase_start_ns": -1}, False)):
            with self.subTest(start=start):
                self.setUpSocket()
                p = self.start_worker()
                self.assertEqual(self.recv(5 * SCALE)[0], HELLO)
                self.send(SCHEDULE, {"worker": 0, "spec": self.spec(m.url, 2, 4),
                                     "share": {"slots": 2, "requests": 4}})
                self.assertEqual(self.recv(5 * SCALE)[0], READY)
                t0 = time.monotonic_ns()
                msg = {"t0_mono_ns": t0, "t0_wall_ns": time.time_ns()}
                msg.update(start)
                self.send(START, msg)
                recs = []
                while True:
                    typ, body = self.recv(5 * SCALE)
                    if typ == RECORDS:
                        recs.extend(body)
                    elif typ in (DONE, FAIL):
                        break
                res = self.finish(Result())
                self.assertEqual(typ, DONE if ok else FAIL, res.stderr)
                self.assertEqual(p.wait(5 * SCALE), 0 if ok else 1)
                if ok:
                    self.assertEqual(len(recs), 4)
                    first = min(r["intended_ns"] for r in recs)
                    self.assertEqual(first, start.get("phase_start_ns", 0))
                    self.assertTrue(all(r["start_ns"] >= first for r in recs))
                else:
                    self.assertIn("START", body["message"])

    def test_q_rate_share(self):
        """A rate share (slots 0: no ceiling) sends exactly its arrivals."""
        m = self.mock()
        spec = self.spec(m.url, 1, 10)
        spec["load"] = {"mode": "rate", "rate": 100, "arrival": "constant", "requests": 10}
        share = {"mode": "rate", "slots": 0, "requests": 10,
                 "rate": {"law": "constant", "rate": 100, "total_requests": 10}}
        res = self.run_worker(spec, share)
        self.check_common(res, 10)
        self.assertEqual(sorted(r["req_id"] for r in res.records), list(range(10)))
        self.assertEqual(sorted(r["intended_ns"] for r in res.records),
                         [k * 10 * MS for k in range(10)])

    def test_k_sigterm(self):
        m = self.mock("--ttft-ms", "10000")
        res = Result()
        p = self.start_worker()
        self.assertEqual(self.recv(5 * SCALE)[0], HELLO)
        self.send(SCHEDULE, {"worker": 0, "spec": self.spec(m.url, 2, 10),
                             "share": {"slots": 2, "requests": 10}})
        self.assertEqual(self.recv(5 * SCALE)[0], READY)
        self.send(START, {"t0_mono_ns": time.monotonic_ns(), "t0_wall_ns": time.time_ns()})
        # SIGTERM once a heartbeat shows both requests in flight (their
        # first token is 10 s away)
        while True:
            typ, msg = self.recv(5 * SCALE)
            self.assertNotIn(typ, (RECORDS, DONE, FAIL), msg)
            if typ == HEARTBEAT and msg["in_flight"] == 2:
                break
        p.send_signal(signal.SIGTERM)
        while res.done is None:
            typ, msg = self.recv(2 * SCALE)
            if typ == RECORDS:
                res.records.extend(msg)
            elif typ == DONE:
                res.done = msg
        res.rc = p.wait(5 * SCALE)
        self.finish(res)
        self.assertEqual(res.rc, 0, res.stderr)
        self.assertEqual([r["error_name"] for r in res.records], ["cancelled"] * 2)
        self.assertIn("signal", res.records[0]["error_msg"])


if __name__ == "__main__":
    unittest.main()
