"""test_h1.py - the worker's native HTTP/1.1 transport (worker/h1.c,
target.transport "native") beside the libcurl one, over real sockets.

A small Python server (RawServer) plays the target with the odd
behaviours a real one shows now and then, counting the connections and
requests it sees: keep-alive reuse (one connection per slot), a server
that closes idle connections between requests (the retry rule of
worker/h1.h: a request that went out on a reused connection the server
closed without answering is sent once more on a new one; on a fresh
connection it is not), a server that closes mid-stream, slow headers, 1xx
interim answers, a 5xx with a body, a connect that never completes and an
answer that never comes (target.timeout_s). Both transports must put the
same error class in the record. Last, the same seeded run against
headroom-mock gives records identical in content on both transports
(timing aside).

The fake daemon is test_worker.py's (WorkerCase).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_h1.py
"""

import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_worker as tw  # noqa: E402
from hrtest import time_scale  # noqa: E402

SCALE = time_scale()
TRANSPORTS = ("native", "curl")


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_answer(n=3, text=b"x"):
    """A chunked SSE chat stream of n content chunks, then [DONE]."""
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    ev = b'data: {"choices":[{"delta":{"content":"%s"}}]}\n\n' % text
    return head, [chunk(ev) for _ in range(n)] + [chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"]


class RawServer:
    """A TCP server on a free loopback port: each connection gets a thread
    that reads requests (head and Content-Length body) and hands each to
    behave(server, conn_no, req_no_on_conn, sock), which answers (or not)
    and returns True to keep the connection for the next request."""

    def __init__(self, behave, backlog=64, accept=True):
        self.behave = behave
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.closing = False
        self.conns = []
        if accept:
            threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                n = self.connections
                self.conns.append(c)
            threading.Thread(target=self.serve, args=(c, n), daemon=True).start()

    @staticmethod
    def read_request(c, buf):
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, buf
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(rest) < n:
            d = c.recv(65536)
            if not d:
                return None, b""
            rest += d
        return head + b"\r\n\r\n" + rest[:n], rest[n:]

    def serve(self, c, conn_no):
        buf = b""
        k = 0
        try:
            while True:
                req, buf = self.read_request(c, buf)
                if req is None:
                    return
                k += 1
                with self.lock:
                    self.requests += 1
                if not self.behave(self, conn_no, k, c):
                    return
        except OSError:
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def close(self):
        self.closing = True
        try:
            self.sock.close()
        except OSError:
            pass
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def stream_ok(srv, conn_no, k, c):
    head, chunks = sse_answer()
    c.sendall(head + b"".join(chunks))
    return True


class H1Case(tw.WorkerCase):
    def raw(self, behave, **kw):
        s = RawServer(behave, **kw)
        self.servers.append(s)
        return s

    def both(self, make_server, spec_kw, n, check):
        """Runs the same spec on each transport against a fresh server;
        check(transport, result, server)."""
        for tr in TRANSPORTS:
            with self.subTest(transport=tr):
                srv = make_server()
                spec = self.spec(srv.url, transport=tr, **spec_kw)
                res = self.run_worker(spec, {"slots": spec["load"]["concurrency"],
                                             "requests": n})
                self.check_common(res, n)
                check(tr, res, srv)

    def test_a_keepalive_reuse(self):
        """Native: one connection per slot for every request."""
        srv = self.raw(stream_ok)
        res = self.run_worker(self.spec(srv.url, 3, 30, transport="native"),
                              {"slots": 3, "requests": 30})
        self.check_common(res, 30)
        self.assertEqual([r["error_name"] for r in res.records], [""] * 30)
        self.assertEqual([len(r["chunks"]) for r in res.records], [3] * 30)
        self.assertEqual(srv.requests, 30)
        self.assertEqual(srv.connections, 3)

    def test_b_idle_close_between_requests(self):
        """Every connection answers one request and then closes without a
        word: each next request either finds the connection closed or goes
        out on it and is retried once on a new one; none fails."""
        def one_then_close(srv, conn_no, k, c):
            if k > 1:
                return False  # the request came after we meant to close: no answer
            stream_ok(srv, conn_no, k, c)
            return True

        def check(tr, res, srv):
            errors = [r["error_name"] for r in res.records]
            if tr == "curl":  # libcurl retries too, but may give up ("Connection died")
                self.assertLessEqual(set(errors), {"", "reset"})
                return
            self.assertEqual(errors, [""] * 12, [r["error_msg"] for r in res.records])
            # each reused connection got its request, closed, and the request
            # went again on a new connection: 12 + 11 requests seen
            self.assertEqual(srv.connections, 12)
            self.assertEqual(srv.requests, 23)

        self.both(lambda: self.raw(one_then_close), {"concurrency": 1, "requests": 12}, 12,
                  check)

    def test_c_fresh_connection_not_retried(self):
        """A fresh connection closed without an answer is the record's error,
        sent once (no retry)."""
        def close_at_once(srv, conn_no, k, c):
            return False

        def check(tr, res, srv):
            self.assertEqual([r["error_name"] for r in res.records], ["reset"] * 4)
            self.assertEqual(srv.requests, 4)
            self.assertEqual(srv.connections, 4)

        self.both(lambda: self.raw(close_at_once), {"concurrency": 1, "requests": 4}, 4, check)

    def test_d_close_mid_stream(self):
        def half(srv, conn_no, k, c):
            head, chunks = sse_answer(4)
            c.sendall(head + chunks[0] + chunks[1])
            time.sleep(0.05)
            return False

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "reset", r["error_msg"])
                self.assertEqual(r["http_status"], 200)
                self.assertEqual(len(r["chunks"]), 2)

        self.both(lambda: self.raw(half), {"concurrency": 1, "requests": 3}, 3, check)

    def test_e_slow_headers(self):
        """The head arrives a byte at a time over 0.3 s; headers_ns is when
        it ended."""
        def slow(srv, conn_no, k, c):
            head, chunks = sse_answer()
            for i in range(len(head)):
                c.sendall(head[i:i + 1])
                time.sleep(0.3 / len(head))
            c.sendall(b"".join(chunks))
            return True

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "", r["error_msg"])
                self.assertGreaterEqual(r["headers_ns"] - r["start_ns"], 250 * tw.MS)
                self.assertEqual(len(r["chunks"]), 3)

        self.both(lambda: self.raw(slow), {"concurrency": 1, "requests": 2}, 2, check)

    def test_f_interim_answers(self):
        """100 Continue and 103 Early Hints before the answer are skipped."""
        def interim(srv, conn_no, k, c):
            head, chunks = sse_answer()
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.01)
            c.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            c.sendall(head + b"".join(chunks))
            return True

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "", r["error_msg"])
                self.assertEqual(r["http_status"], 200)
                self.assertEqual(len(r["chunks"]), 3)

        self.both(lambda: self.raw(interim), {"concurrency": 1, "requests": 3}, 3, check)

    def test_g_5xx_with_body(self):
        """A 503 with a body: http_5xx, the body in the message, and the
        connection kept for the next request (native: one connection)."""
        def busy(srv, conn_no, k, c):
            body = b'{"error":"overloaded, try later"}'
            c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            return True

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "http_5xx")
                self.assertEqual(r["http_status"], 503)
                self.assertIn("overloaded, try later", r["error_msg"])
            if tr == "native":
                self.assertEqual(srv.connections, 1)

        self.both(lambda: self.raw(busy), {"concurrency": 1, "requests": 4}, 4, check)

    def test_h_connect_timeout(self):
        """A listener whose accept queue is full never completes a connect:
        the request times out (target.timeout_s) on both transports."""
        def unused(srv, conn_no, k, c):
            return False

        def full():
            s = self.raw(unused, backlog=0, accept=False)
            fill = []
            for _ in range(4):  # fill the accept queue; further SYNs are dropped
                f = socket.socket()
                f.setblocking(False)
                try:
                    f.connect(("127.0.0.1", int(s.url.rsplit(":", 1)[1])))
                except BlockingIOError:
                    pass
                fill.append(f)
            time.sleep(0.1)
            self.addCleanup(lambda: [f.close() for f in fill])
            return s

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "timeout", r["error_msg"])
                self.assertEqual(r["headers_ns"], -1)
                self.assertGreaterEqual(r["done_ns"] - r["start_ns"], 400 * tw.MS)

        self.both(full, {"concurrency": 2, "requests": 2, "timeout_s": 0.5}, 2, check)

    def test_i_request_deadline(self):
        """Headers, one chunk, then nothing: the deadline ends the request
        as a timeout, with the chunk that came."""
        def stall(srv, conn_no, k, c):
            head, chunks = sse_answer(3)
            c.sendall(head + chunks[0])
            time.sleep(3 * SCALE)
            return False

        def check(tr, res, srv):
            for r in res.records:
                self.assertEqual(r["error_name"], "timeout", r["error_msg"])
                self.assertEqual(len(r["chunks"]), 1)
                self.assertGreaterEqual(r["done_ns"] - r["start_ns"], 550 * tw.MS)

        self.both(lambda: self.raw(stall), {"concurrency": 2, "requests": 2, "timeout_s": 0.6},
                  2, check)

    def test_j_records_identical_on_both_transports(self):
        """The same seeded run against headroom-mock: the records agree in
        everything but timing."""
        m = self.mock("--ttft-ms", "2", "--itl-ms", "1")
        timing = {"intended_ns", "start_ns", "headers_ns", "first_output_ns", "end_ns",
                  "done_ns", "chunks", "seq"}
        got = {}
        for tr in TRANSPORTS:
            for endpoint, stream in (("chat", True), ("completions", False)):
                spec = self.spec(m.url, 4, 40, endpoint=endpoint, stream=stream, isl=20,
                                 osl=12, transport=tr)
                res = self.run_worker(spec, {"slots": 4, "requests": 40})
                self.check_common(res, 40)
                rows = sorted(({k: v for k, v in r.items() if k not in timing}
                               | {"n_chunks": len(r["chunks"])} for r in res.records),
                              key=lambda r: r["req_id"])
                got[(tr, endpoint)] = rows
        for endpoint in ("chat", "completions"):
            a, b = got[("native", endpoint)], got[("curl", endpoint)]
            self.assertEqual(len(a), 40)
            self.assertEqual(a, b)
            self.assertTrue(all(r["error_name"] == "" for r in a))

    def test_k_spec_validation(self):
        """target.transport: an unknown value, and native for https://."""
        for tr, url in (("fast", "http://127.0.0.1:1"), ("native", "https://127.0.0.1:1")):
            res = self.run_worker(self.spec(url, transport=tr), {"slots": 1, "requests": 1})
            self.assertIsNotNone(res.fail)
            self.assertIn("target.transport", res.fail.get("message", "") + str(res.fail))


# the fake daemon's own tests stay in test_worker.py
for _name in dir(tw.WorkerCase):
    if _name.startswith("test_") and _name not in H1Case.__dict__:
        setattr(H1Case, _name, None)


if __name__ == "__main__":
    unittest.main()
