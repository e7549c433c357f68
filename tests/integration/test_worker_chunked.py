#!/usr/bin/env python3
# test_worker_chunked.py - the worker reads response bodies raw from libcurl
# and removes the chunked transfer coding itself (lib/chunked.c): streams,
# error bodies and whole bodies cut into chunks anywhere (mid-line, mid
# character), with extensions, upper-case sizes, trailers, an interim 100
# response, several responses on one kept-alive connection, each written in
# many small TCP writes; a broken framing stays libcurl's error (reset), and
# the JSON fast path and jansson agree on all of it.
#
# Drives a real headroom-worker over the protocol, as test_worker.py does
# (its fake-daemon plumbing is reused), against a raw-socket HTTP server.

import json
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_worker as tw  # noqa: E402


def chunked(data, sizes, upper=False, ext=False, trailer=False):
    """data framed as chunks of the given sizes (the last one repeats)."""
    out, i, k = b"", 0, 0
    while i < len(data):
        n = sizes[min(k, len(sizes) - 1)]
        piece = data[i:i + n]
        size = ("%X" if upper else "%x") % len(piece)
        out += size.encode() + (b";k=v" if ext and k % 2 else b"") + b"\r\n" + piece + b"\r\n"
        i += n
        k += 1
    out += b"0\r\n" + (b"X-Trailer: yes\r\n" if trailer else b"") + b"\r\n"
    return out


def sse_stream(texts, usage=None):
    ev = []
    for t in texts:
        ev.append("data: %s\n\n" % json.dumps(
            {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]},
            ensure_ascii=False))
    if usage:
        ev.append("data: %s\n\n" % json.dumps({"id": "c1", "choices": [], "usage": usage}))
    ev.append("data: [DONE]\n\n")
    return "".join(ev).encode()


TEXTS = ["Hello", " w\u00f6rld", " \u4e2d\u6587", " \U0001F600", " end"]
USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


class RawServer:
    """HTTP/1.1 over a plain socket; the answer is chosen by the request's
    model and written in pieces of `piece` bytes with a short pause between
    them, so the worker gets them in separate reads."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.url = "http://127.0.0.1:%d" % self.ls.getsockname()[1]
        self.connections = 0
        self.done = False
        threading.Thread(target=self.accept, daemon=True).start()

    def close(self):
        self.done = True
        self.ls.close()

    def accept(self):
        while not self.done:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    @staticmethod
    def read_request(c, buf):
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return None, b""
            buf += d
        head, rest = buf.split(b"\r\n\r\n", 1)
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
        return json.loads(rest[:n]), rest[n:]

    def serve(self, c):
        buf = b""
        try:
            while True:
                body, buf = self.read_request(c, buf)
                if body is None:
                    return
                raw, piece, close = getattr(self, "answer_" + body["model"])(body)
                for i in range(0, len(raw), piece):
                    c.sendall(raw[i:i + piece])
                    time.sleep(0.001)
                if close:
                    return
        except OSError:
            pass
        finally:
            c.close()

    @staticmethod
    def head(status="200 OK", ctype="text/event-stream"):
        return ("HTTP/1.1 %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
                % (status, ctype)).encode()

    # a stream cut every 7 bytes (mid-line, mid-character), written 5 at a time
    def answer_split(self, body):
        return self.head() + chunked(sse_stream(TEXTS, USAGE), [7]), 5, False

    # upper-case sizes, extensions, a trailer, chunks of varied sizes
    def answer_fancy(self, body):
        return (self.head() + chunked(sse_stream(TEXTS, USAGE), [1, 300, 2, 45], upper=True,
                                      ext=True, trailer=True), 64, False)

    # the whole stream in one chunk, in one write
    def answer_onechunk(self, body):
        return self.head() + chunked(sse_stream(TEXTS, USAGE), [1 << 20]), 1 << 20, False

    # an interim response first (libcurl reads a new header block after it)
    def answer_interim(self, body):
        return (b"HTTP/1.1 100 Continue\r\n\r\n" + self.head() +
                chunked(sse_stream(TEXTS, USAGE), [33]), 50, False)

    # an error body in chunks: the message is the text, not the framing
    def answer_err503(self, body):
        msg = b'{"error": {"message": "overloaded, come back later"}}'
        return self.head("503 Service Unavailable", "application/json") + \
            chunked(msg, [9]), 4, False

    # a whole (non-streamed) body in chunks
    def answer_whole(self, body):
        msg = json.dumps({"choices": [{"message": {"content": "hi there"}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
        return self.head("200 OK", "application/json") + chunked(msg, [5]), 3, False

    # not hex where a size is due, after the first event: libcurl's error
    def answer_badframing(self, body):
        good = chunked(sse_stream(TEXTS[:1]), [1 << 20])[:-5]  # without the last chunk
        return self.head() + good + b"zz\r\nxx\r\n", 1 << 20, True

    # a plain (Content-Length) stream still reads as before
    def answer_plain(self, body):
        data = sse_stream(TEXTS, USAGE)
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n"
                b"\r\n" % len(data)) + data, 11, False


class ChunkedCase(unittest.TestCase):
    # the fake daemon of test_worker.py (its tests are not collected here)
    setUp = tw.WorkerCase.setUp
    tearDown = tw.WorkerCase.tearDown
    setUpSocket = tw.WorkerCase.setUpSocket
    recv = tw.WorkerCase.recv
    send = tw.WorkerCase.send
    start_worker = tw.WorkerCase.start_worker
    run_worker = tw.WorkerCase.run_worker
    finish = tw.WorkerCase.finish
    check_common = tw.WorkerCase.check_common
    spec = staticmethod(tw.WorkerCase.spec)

    def server(self):
        s = RawServer()
        self.servers.append(s)
        return s

    def one(self, s, model, stream=True, env=None, n=1):
        self.setUpSocket()
        res = self.run_worker(self.spec(s.url, 1, n, model=model, stream=stream),
                              {"slots": 1, "requests": n}, env=env)
        self.check_common(res, n)
        return res.records

    def test_streams(self):
        s = self.server()
        for model in ("split", "fancy", "onechunk", "interim", "plain"):
            for mode in ("fast", "jansson"):
                with self.subTest(model=model, json=mode):
                    recs = self.one(s, model, env={"HEADROOM_WORKER_JSON": mode})
                    r = recs[0]
                    self.assertEqual(r["error_name"], "", r["error_msg"])
                    self.assertEqual(r["http_status"], 200)
                    self.assertEqual(len(r["chunks"]), len(TEXTS))
                    self.assertEqual((r["osl"], r["isl"]), (5, 10))
                    self.assertEqual(r["osl_src_name"], "server_usage")
                    self.assertEqual(r["first_output_ns"], r["chunks"][0])

    def test_keep_alive(self):
        # several chunked responses on one connection: each decoded afresh
        s = self.server()
        recs = self.one(s, "split", n=6)
        for r in recs:
            self.assertEqual(r["error_name"], "", r["error_msg"])
            self.assertEqual(len(r["chunks"]), len(TEXTS))
        self.assertEqual(s.connections, 1)

    def test_bodies(self):
        s = self.server()
        recs = self.one(s, "err503")
        r = recs[0]
        self.assertEqual(r["error_name"], "http_5xx")
        self.assertEqual(r["http_status"], 503)
        self.assertEqual(r["error_msg"],
                         'HTTP 503: {"error": {"message": "overloaded, come back later"}}')
        recs = self.one(s, "whole", stream=False)
        r = recs[0]
        self.assertEqual(r["error_name"], "", r["error_msg"])
        self.assertEqual((r["isl"], r["osl"]), (3, 2))

    def test_bad_framing(self):
        s = self.server()
        recs = self.one(s, "badframing")
        r = recs[0]
        self.assertEqual(r["error_name"], "reset", r["error_msg"])
        self.assertEqual(len(r["chunks"]), 1)  # what came before the bad size


if __name__ == "__main__":
    unittest.main()
