#!/usr/bin/env python3
"""test_mock.py - headroom-mock over real sockets.

Starts the mock on port 0 for each test (reading the port from its
"listening on HOST:PORT" line), drives it with http.client and raw sockets,
and at the end of every test stops it with SIGTERM and requires exit status
0, so that under AddressSanitizer a leak or an error report fails the test.
Timings are checked from below, from before the request was sent (the mock
never sends early; a busy machine only makes things later); the few upper
bounds on wall time are incidental and scaled by hrtest.time_scale().

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_mock.py
"""
import http.client
import json
import os
import resource
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hrtest  # noqa: E402

BIN = os.environ.get("HEADROOM_BIN") or os.path.join(HERE, "..", "..", "build", "bin")
MOCK = os.path.join(BIN, "headroom-mock")
MAX_REQUEST_BYTES = 16 << 20  # HR_MOCK_MAX_REQUEST_BYTES in lib/hrlimits.h
START_TIMEOUT_S = 30
SCALE = hrtest.time_scale()


class Mock:
    """One headroom-mock process."""

    def __init__(self, *args):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [MOCK, "--listen", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr)
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("listening on "):
            self.kill()
            raise RuntimeError("headroom-mock did not start: %r %s" % (line, self.log()))
        self.host, _, port = line.split()[2].rpartition(":")
        self.port = int(port)
        self.stopped = False
        self.clients = []  # closed by kill()

    def log(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signal the process and return its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        finally:
            self.kill()
        self.stopped = True
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        for c in getattr(self, "clients", []):
            c.close()

    def conn(self, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        self.clients.append(c)
        return c

    def sock(self, timeout=30):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        self.clients.append(s)
        return s


def chat_body(max_tokens=None, stream=False, usage=None, content="hello mock server", **extra):
    body = {"model": "mock-model", "messages": [{"role": "user", "content": content}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:
        body["stream"] = True
    if usage is not None:
        body["stream_options"] = {"include_usage": usage}
    body.update(extra)
    return body


def do(conn, method, path, body=None, headers=None):
    """One request on an http.client connection: (status, headers, bytes)."""
    hdrs = dict(headers or {})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def sse_events(text):
    """The data payloads of an SSE body, in order."""
    out = []
    assert text.endswith("\n\n"), text[-80:]
    for block in text[:-2].split("\n\n"):
        assert block.startswith("data: "), block
        out.append(block[len("data: "):])
    return out


def timed_events(conn, path, body):
    """Stream a request; return (seconds since send, data) for each event."""
    t0 = time.monotonic()
    conn.request("POST", path, body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    events = []
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.decode()
        if line.startswith("data: "):
            events.append((time.monotonic() - t0, line[6:].rstrip("\n")))
            if line.startswith("data: [DONE]"):
                break
    assert resp.readline() == b"\n"
    assert resp.read() == b""
    return events


def read_response(f):
    """Read one HTTP response from a binary file object (raw framing)."""
    status_line = f.readline()
    if not status_line:
        return None
    parts = status_line.decode().split(" ", 2)
    status = int(parts[1])
    headers = {}
    while True:
        line = f.readline().decode()
        if line in ("\r\n", ""):
            break
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if status == 100:
        return status, headers, b""
    if headers.get("transfer-encoding") == "chunked":
        body = bytearray()
        while True:
            size = int(f.readline().strip(), 16)
            if size == 0:
                assert f.readline() == b"\r\n"
                break
            body += f.read(size)
            assert f.read(2) == b"\r\n"
        body = bytes(body)
    elif "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    else:
        body = f.read()
    return status, headers, body


def words(text):
    return text.split()


class MockCase(unittest.TestCase):
    """Tests that start mocks with self.start(...): each is stopped at the
    end and must exit 0 (its log is shown when it does not)."""
    def setUp(self):
        self.mocks = []

    def tearDown(self):
        failed = []
        for m in self.mocks:
            if not m.stopped:
                rc = m.stop()
                if rc != 0:
                    failed.append("headroom-mock exited %s:\n%s" % (rc, m.log()))
            m.stderr.close()
        self.assertEqual(failed, [])

    def start(self, *args):
        m = Mock(*args)
        self.mocks.append(m)
        return m


class MockTest(MockCase):

    def assert_error(self, status, headers, body, code):
        self.assertEqual(status, code, body)
        self.assertEqual(headers.get("content-type"), "application/json")
        err = json.loads(body)["error"]
        self.assertIsInstance(err["message"], str)
        self.assertEqual(err["type"], "invalid_request_error")
        self.assertEqual(err["code"], code)

    # ---- plain endpoints ----

    def test_health(self):
        m = self.start()
        status, headers, body = do(m.conn(), "GET", "/health")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body), {"status": "ok"})

    def test_models(self):
        m = self.start()
        status, _, body = do(m.conn(), "GET", "/v1/models")
        self.assertEqual(status, 200)
        doc = json.loads(body)
        self.assertEqual(doc["object"], "list")
        self.assertEqual([d["id"] for d in doc["data"]], ["mock-model"])
        self.assertEqual(doc["data"][0]["object"], "model")

        m2 = self.start("--model", 'my "odd" model')
        c = m2.conn()
        status, _, body = do(c, "GET", "/v1/models")
        self.assertEqual(json.loads(body)["data"][0]["id"], 'my "odd" model')
        status, _, body = do(c, "GET", "/v1/models/mock-model")
        self.assertEqual(status, 404)
        status, _, body = do(m.conn(), "GET", "/v1/models/mock-model")
        self.assertEqual((status, json.loads(body)["id"]), (200, "mock-model"))

    def test_unknown_path_and_method(self):
        m = self.start()
        c = m.conn()
        self.assert_error(*do(c, "GET", "/v1/nothing"), 404)
        self.assert_error(*do(c, "GET", "/"), 404)
        status, headers, body = do(c, "GET", "/v1/chat/completions")
        self.assert_error(status, headers, body, 405)
        self.assertEqual(headers["allow"], "POST")
        status, headers, body = do(c, "POST", "/health", body={})
        self.assert_error(status, headers, body, 405)
        self.assertEqual(headers["allow"], "GET, HEAD")
        self.assertEqual(do(c, "GET", "/health?x=1")[0], 200)
        # HEAD: the GET answer's headers, no body; the connection stays in step
        status, headers, body = do(c, "HEAD", "/v1/models")
        self.assertEqual((status, body), (200, b""))
        self.assertGreater(int(headers["content-length"]), 0)
        self.assertEqual(do(c, "HEAD", "/nope")[:3:2], (404, b""))
        self.assertEqual(do(c, "HEAD", "/v1/completions")[:3:2], (405, b""))
        self.assertEqual(do(c, "GET", "/health")[2], b'{"status":"ok"}')

    # ---- generation, not streamed ----

    def test_chat_not_streamed(self):
        m = self.start()
        c = m.conn()
        body = {"messages": [{"role": "system", "content": "one two three"},
                             {"role": "user", "content": "four  five\n"}],
                "max_tokens": 7}
        status, headers, raw = do(c, "POST", "/v1/chat/completions", body)
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        doc = json.loads(raw)
        self.assertEqual(doc["object"], "chat.completion")
        self.assertEqual(doc["model"], "mock-model")
        self.assertTrue(doc["id"])
        self.assertIsInstance(doc["created"], int)
        choice = doc["choices"][0]
        self.assertEqual(choice["index"], 0)
        self.assertEqual(choice["finish_reason"], "length")
        self.assertEqual(choice["message"]["role"], "assistant")
        self.assertEqual(len(words(choice["message"]["content"])), 7)
        self.assertEqual(doc["usage"], {"prompt_tokens": 5, "completion_tokens": 7,
                                        "total_tokens": 12})
        # deterministic
        again = json.loads(do(c, "POST", "/v1/chat/completions", body)[2])
        self.assertEqual(again["choices"][0]["message"]["content"],
                         choice["message"]["content"])

        # max_completion_tokens wins over max_tokens; 16 by default
        body["max_completion_tokens"] = 9
        doc = json.loads(do(c, "POST", "/v1/chat/completions", body)[2])
        self.assertEqual(doc["usage"]["completion_tokens"], 9)
        self.assertEqual(len(words(doc["choices"][0]["message"]["content"])), 9)
        del body["max_completion_tokens"], body["max_tokens"]
        doc = json.loads(do(c, "POST", "/v1/chat/completions", body)[2])
        self.assertEqual(doc["usage"]["completion_tokens"], 16)

        # content parts: only text parts count
        body = {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "a b c"},
            {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
            {"type": "text", "text": "d"}]}], "max_tokens": 1}
        doc = json.loads(do(c, "POST", "/v1/chat/completions", body)[2])
        self.assertEqual(doc["usage"]["prompt_tokens"], 4)

    def test_completions_not_streamed(self):
        m = self.start()
        c = m.conn()
        status, _, raw = do(c, "POST", "/v1/completions",
                            {"model": "x", "prompt": "a b c d", "max_tokens": 5})
        self.assertEqual(status, 200)
        doc = json.loads(raw)
        self.assertEqual(doc["object"], "text_completion")
        self.assertEqual(doc["choices"][0]["finish_reason"], "length")
        self.assertEqual(len(words(doc["choices"][0]["text"])), 5)
        self.assertEqual(doc["usage"], {"prompt_tokens": 4, "completion_tokens": 5,
                                        "total_tokens": 9})
        doc = json.loads(do(c, "POST", "/v1/completions",
                            {"prompt": ["a b", "c"], "max_tokens": 0})[2])
        self.assertEqual(doc["usage"]["prompt_tokens"], 3)
        self.assertEqual(doc["choices"][0]["text"], "")
        self.assertEqual(doc["usage"]["completion_tokens"], 0)
        doc = json.loads(do(c, "POST", "/v1/completions",
                            {"prompt": [1, 2, 3], "max_completion_tokens": 2})[2])
        self.assertEqual(doc["usage"]["prompt_tokens"], 3)
        self.assertEqual(doc["usage"]["completion_tokens"], 2)

    # ---- streaming ----

    def check_chat_stream(self, events, n, usage, tokens_per_chunk=1):
        docs = [json.loads(e) for e in events[:-1]]
        self.assertEqual(events[-1], "[DONE]")
        for d in docs:
            self.assertEqual(d["object"], "chat.completion.chunk")
            self.assertEqual(d["model"], "mock-model")
            self.assertEqual(d["id"], docs[0]["id"])
        self.assertEqual(docs[0]["choices"][0]["delta"], {"role": "assistant", "content": ""})
        self.assertIsNone(docs[0]["choices"][0]["finish_reason"])
        nchunks = (n + tokens_per_chunk - 1) // tokens_per_chunk
        content = docs[1:1 + nchunks]
        text = ""
        for i, d in enumerate(content):
            ch = d["choices"][0]
            self.assertEqual(set(ch["delta"]), {"content"})
            self.assertIsNone(ch["finish_reason"])
            want = min(tokens_per_chunk, n - i * tokens_per_chunk)
            self.assertEqual(len(words(ch["delta"]["content"])), want, ch)
            self.assertTrue(ch["delta"]["content"].endswith(" "))
            text += ch["delta"]["content"]
        self.assertEqual(len(words(text)), n)
        fin = docs[1 + nchunks]
        self.assertEqual(fin["choices"][0]["delta"], {})
        self.assertEqual(fin["choices"][0]["finish_reason"], "length")
        rest = docs[2 + nchunks:]
        if usage:
            self.assertEqual(len(rest), 1)
            self.assertEqual(rest[0]["choices"], [])
            u = rest[0]["usage"]
            self.assertEqual(u["completion_tokens"], n)
            self.assertEqual(u["total_tokens"], u["prompt_tokens"] + n)
        else:
            self.assertEqual(rest, [])
            self.assertFalse(any("usage" in d for d in docs))
        return text

    def test_stream_chat_with_usage(self):
        m = self.start()
        c = m.conn()
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps(chat_body(6, stream=True, usage=True)),
                  headers={"Content-Type": "application/json"})
        resp = c.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.getheader("Content-Type"), "text/event-stream; charset=utf-8")
        self.assertEqual(resp.getheader("Transfer-Encoding"), "chunked")
        events = sse_events(resp.read().decode())
        self.assertEqual(len(events), 1 + 6 + 1 + 1 + 1)
        text = self.check_chat_stream(events, 6, usage=True)
        self.assertEqual(json.loads(events[-2])["usage"]["prompt_tokens"], 3)
        # same words as the non-streamed answer to the same prompt
        doc = json.loads(do(c, "POST", "/v1/chat/completions", chat_body(6))[2])
        self.assertEqual(doc["choices"][0]["message"]["content"], text)

    def test_stream_chat_without_usage(self):
        m = self.start()
        for usage in (None, False):
            status, _, raw = do(m.conn(), "POST", "/v1/chat/completions",
                                chat_body(4, stream=True, usage=usage))
            self.assertEqual(status, 200)
            events = sse_events(raw.decode())
            self.assertEqual(len(events), 1 + 4 + 1 + 1)
            self.check_chat_stream(events, 4, usage=False)

    def test_stream_zero_tokens(self):
        m = self.start()
        _, _, raw = do(m.conn(), "POST", "/v1/chat/completions",
                       chat_body(0, stream=True, usage=True))
        events = sse_events(raw.decode())
        self.assertEqual(len(events), 4)
        self.check_chat_stream(events, 0, usage=True)
        _, _, raw = do(m.conn(), "POST", "/v1/completions",
                       {"prompt": "x", "max_tokens": 0, "stream": True})
        events = sse_events(raw.decode())
        self.assertEqual(len(events), 2)
        self.assertEqual(json.loads(events[0])["choices"][0]["finish_reason"], "length")
        self.assertEqual(events[1], "[DONE]")

    def test_stream_completions(self):
        m = self.start()
        _, _, raw = do(m.conn(), "POST", "/v1/completions",
                       {"prompt": "a b c", "max_tokens": 5, "stream": True,
                        "stream_options": {"include_usage": True}})
        events = sse_events(raw.decode())
        self.assertEqual(len(events), 5 + 1 + 1)
        self.assertEqual(events[-1], "[DONE]")
        docs = [json.loads(e) for e in events[:-1]]
        for i, d in enumerate(docs[:5]):
            self.assertEqual(d["object"], "text_completion")
            ch = d["choices"][0]
            self.assertEqual(len(words(ch["text"])), 1)
            self.assertEqual(ch["finish_reason"], "length" if i == 4 else None)
        self.assertEqual(docs[5]["choices"], [])
        self.assertEqual(docs[5]["usage"], {"prompt_tokens": 3, "completion_tokens": 5,
                                            "total_tokens": 8})

    def test_tokens_per_chunk(self):
        m = self.start("--tokens-per-chunk", "3")
        _, _, raw = do(m.conn(), "POST", "/v1/chat/completions",
                       chat_body(7, stream=True, usage=True))
        events = sse_events(raw.decode())
        self.assertEqual(len(events), 1 + 3 + 1 + 1 + 1)
        self.check_chat_stream(events, 7, usage=True, tokens_per_chunk=3)

    def test_timing(self):
        # a TTFT long enough that the role chunk, sent at once, comes well
        # before it even on a slow machine
        ttft, itl = 0.2 * SCALE, 0.010
        m = self.start("--ttft-ms", "%g" % (ttft * 1000), "--itl-ms", "10")
        events = timed_events(m.conn(), "/v1/chat/completions",
                              chat_body(5, stream=True, usage=True))
        self.check_chat_stream([e for _, e in events], 5, usage=True)
        times = [t for t, _ in events]
        self.assertLess(times[0], 0.75 * ttft, "the role chunk goes at once")
        # Chunk i is due at ttft + i * itl after the server took the
        # request, which is after we sent it; a late wake-up may make one
        # gap longer and the next shorter, but no chunk comes early.
        for i in range(5):
            self.assertGreaterEqual(times[1 + i], ttft + i * itl - 0.002, times)
        self.assertGreaterEqual(times[-1], ttft + 4 * itl - 0.002)
        self.assertLess(times[-1], ttft + 3.0 * SCALE)
        # a response that is not streamed comes after its last token
        t0 = time.monotonic()
        status, _, _ = do(m.conn(), "POST", "/v1/completions", {"prompt": "x", "max_tokens": 5})
        self.assertEqual(status, 200)
        self.assertGreaterEqual(time.monotonic() - t0, ttft + 4 * itl - 0.002)

    # ---- connections ----

    def test_keep_alive(self):
        m = self.start("--itl-ms", "1")
        c = m.conn()
        self.assertEqual(do(c, "GET", "/health")[0], 200)
        sock = c.sock
        self.assertIsNotNone(sock)
        local = sock.getsockname()
        for _ in range(3):
            status, _, raw = do(c, "POST", "/v1/chat/completions",
                                chat_body(3, stream=True, usage=True))
            self.assertEqual(status, 200)
            self.check_chat_stream(sse_events(raw.decode()), 3, usage=True)
            self.assertEqual(do(c, "POST", "/v1/chat/completions", chat_body(2))[0], 200)
            self.assertEqual(do(c, "GET", "/v1/models")[0], 200)
            self.assert_error(*do(c, "POST", "/v1/completions", b"{not json"), 400)
            self.assert_error(*do(c, "GET", "/nope"), 404)
        self.assertIs(c.sock, sock)
        self.assertEqual(c.sock.getsockname(), local)

    def test_pipelining(self):
        m = self.start()
        s = m.sock()
        stream = json.dumps(chat_body(2, stream=True)).encode()
        plain = json.dumps({"prompt": "p q", "max_tokens": 3}).encode()
        reqs = (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                % (len(stream), stream, len(plain), plain))
        # split the bytes at awkward places
        for i in range(0, len(reqs), 7):
            s.sendall(reqs[i:i + 7])
        f = s.makefile("rb")
        st, _, body = read_response(f)
        self.assertEqual((st, json.loads(body)), (200, {"status": "ok"}))
        st, h, body = read_response(f)
        self.assertEqual(h["transfer-encoding"], "chunked")
        self.check_chat_stream(sse_events(body.decode()), 2, usage=False)
        st, _, body = read_response(f)
        self.assertEqual(json.loads(body)["usage"]["completion_tokens"], 3)
        st, h, body = read_response(f)
        self.assertEqual(h.get("connection"), "close")
        self.assertEqual(json.loads(body)["object"], "list")
        self.assertEqual(f.read(), b"")  # then the server closes
        s.close()

    def test_http10(self):
        m = self.start()
        s = m.sock()
        s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        f = s.makefile("rb")
        st, h, body = read_response(f)
        self.assertEqual((st, h.get("connection")), (200, "close"))
        self.assertEqual(f.read(), b"")
        s.close()
        s = m.sock()
        body = json.dumps(chat_body(3, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        st, h, raw = read_response(s.makefile("rb"))
        self.assertNotIn("transfer-encoding", h)
        self.check_chat_stream(sse_events(raw.decode()), 3, usage=False)
        s.close()

    def test_expect_continue(self):
        m = self.start()
        s = m.sock()
        body = json.dumps(chat_body(2)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        f = s.makefile("rb")
        self.assertEqual(read_response(f)[0], 100)
        s.sendall(body)
        st, _, raw = read_response(f)
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(raw)["usage"]["completion_tokens"], 2)
        s.close()

    def test_disconnect_mid_stream(self):
        m = self.start("--itl-ms", "50")
        for _ in range(20):
            s = m.sock()
            body = json.dumps(chat_body(100, stream=True)).encode()
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(body), body))
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 200"))
            s.close()
        # a reset while the response is being written
        s = m.sock()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        s.recv(10)
        s.close()
        time.sleep(0.2)
        self.assertEqual(do(m.conn(), "GET", "/health")[0], 200)

    # ---- hostile input ----

    def test_malformed_json(self):
        m = self.start()
        c = m.conn()
        for raw in (b"{not json", b"", b"[1,2]", b"null", b'{"messages": "hi"}',
                    b'{"messages": []}', b'{"messages": [1]}',
                    b'{"messages": [{"role": "user", "content": 5}]}',
                    b'{"messages": [{"role": "user", "content": [{"type": 1}]}]}',
                    b'{"messages": [{"content": "x"}]}',
                    b'{"messages": [{"role":"user","content":"x"}], "max_tokens": "5"}',
                    b'{"messages": [{"role":"user","content":"x"}], "max_tokens": -1}',
                    b'{"messages": [{"role":"user","content":"x"}], "max_tokens": 1.5}',
                    b'{"messages": [{"role":"user","content":"x"}], "max_tokens": 99999999999}',
                    b'{"messages": [{"role":"user","content":"x"}], "stream": "yes"}',
                    b'{"messages": [{"role":"user","content":"x"}], "stream_options": 1}',
                    b'{"messages": [{"role":"user","content":"x"}], "model": 3}',
                    b'{"messages": [{"role":"user","content":"\\u0000"}]}',
                    b'{"messages": [{"role":"user","content":"\xff\xfe"}]}',
                    b"[" * 100000):
            status, headers, body = do(c, "POST", "/v1/chat/completions", raw)
            self.assert_error(status, headers, body, 400)
        for raw in (b'{}', b'{"prompt": 3}', b'{"prompt": [1.5]}', b'{"prompt": [[1, "a"]]}'):
            self.assert_error(*do(c, "POST", "/v1/completions", raw), 400)
        # the message names the member as the request spelled it
        msg = '{"messages": [{"role":"user","content":"x"}], %s}'
        for member, words in (('"max_tokens": -1', "'max_tokens' must be an integer from 0 to "),
                              ('"max_tokens": 5, "max_completion_tokens": 1.5',
                               "'max_completion_tokens' must be an integer from 0 to "),
                              ('"max_completion_tokens": null, "max_tokens": "5"',
                               "'max_tokens' must be an integer from 0 to "),
                              ('"min_tokens": -1', "'min_tokens' must be a non-negative integer")):
            status, headers, body = do(c, "POST", "/v1/chat/completions",
                                       (msg % member).encode())
            self.assert_error(status, headers, body, 400)
            self.assertIn(words, json.loads(body)["error"]["message"], member)
        # the connection is still good after all that
        self.assertEqual(do(c, "GET", "/health")[0], 200)

    def raw_exchange(self, m, data):
        s = m.sock()
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        f = s.makefile("rb")
        resp = read_response(f)
        rest = f.read()
        s.close()
        return resp, rest

    def test_malformed_http(self):
        m = self.start()
        cases = [
            (b"GARBAGE\r\n\r\n", 400),
            (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400),  # a TLS hello
            (b"get /health HTTP/1.1\r\n\r\n", 400),
            (b"GET /health HTTP/2.0\r\n\r\n", 505),
            (b"GET /health HTTX/1.1\r\n\r\n", 400),
            (b"GET health HTTP/1.1\r\n\r\n", 400),
            (b"GET /health HTTP/1.1\r\nNoColon\r\n\r\n", 400),
            (b"GET /health HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
            (b"GET /health HTTP/1.1\r\n folded: x\r\n\r\n", 400),
            (b"GET /health HTTP/1.1\r\nX: a\x00b\r\n\r\n", 400),
            (b"POST /v1/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400),
            (b"POST /v1/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
            (b"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n"
             b"\r\n{}", 400),
            (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
             b"2\r\n{}\r\n0\r\n\r\n", 411),
            (b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n", 431),
            (b"GET /health HTTP/1.1\r\nX: " + b"y" * 20000 + b"\r\n\r\n", 431),
        ]
        for data, code in cases:
            (status, headers, body), rest = self.raw_exchange(m, data)
            self.assert_error(status, headers, body, code)
            self.assertEqual(headers.get("connection"), "close")
            self.assertEqual(rest, b"", data[:40])
        self.assertEqual(do(m.conn(), "GET", "/health")[0], 200)

    def test_oversize_body(self):
        m = self.start()
        c = m.conn()
        big = b'{"prompt": "' + b"w " * MAX_REQUEST_BYTES + b'"}'
        self.assert_error(*do(c, "POST", "/v1/completions", big), 413)
        # announced but not sent: answered from the headers alone
        (status, headers, body), _ = self.raw_exchange(
            m, b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n")
        self.assert_error(status, headers, body, 413)
        # just under the bound is fine
        fill = MAX_REQUEST_BYTES - 4096
        ok = b'{"prompt": "' + b"w " * (fill // 2) + b'", "max_tokens": 1}'
        status, _, raw = do(m.conn(), "POST", "/v1/completions", ok)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(raw)["usage"]["prompt_tokens"], fill // 2)

    def test_random_input(self):
        """Mutated requests in random pieces: always an answer or a close."""
        import random
        rng = random.Random(1234)
        m = self.start("--quiet")
        body = json.dumps(chat_body(3, stream=True, usage=True)).encode()
        seeds = [
            b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body),
            b"POST /v1/completions HTTP/1.1\r\nContent-Length: 30\r\n\r\n"
            b'{"prompt":"a b","max_tokens":2}',
        ]
        for _ in range(300):
            data = bytearray(rng.choice(seeds) * rng.randint(1, 3))
            for _ in range(rng.randint(1, 4)):
                op = rng.randrange(3)
                i = rng.randrange(len(data))
                if op == 0:
                    data[i] = rng.randrange(256)
                elif op == 1:
                    del data[i:i + rng.randint(1, 20)]
                else:
                    data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            s = m.sock(timeout=10)
            try:
                pos = 0
                while pos < len(data):
                    n = rng.randint(1, 64)
                    s.sendall(data[pos:pos + n])
                    pos += n
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
            except (ConnectionResetError, BrokenPipeError):
                pass
            s.close()
        self.assertEqual(do(m.conn(), "GET", "/health")[0], 200)

    def test_large_stream_slow_reader(self):
        # About 7 MB of events: more than the socket buffers hold, so the
        # server meets EAGAIN and resumes on EPOLLOUT.
        m = self.start("--tokens-per-chunk", "100")
        n = 1000000
        s = m.sock()
        body = json.dumps(chat_body(n, stream=True, usage=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        time.sleep(0.3)  # let the server fill the socket and wait for EPOLLOUT
        f = s.makefile("rb")
        status, _, raw = read_response(f)
        self.assertEqual(status, 200)
        events = sse_events(raw.decode())
        self.assertEqual(len(events), 1 + n // 100 + 1 + 1 + 1)
        text = self.check_chat_stream(events, n, usage=True, tokens_per_chunk=100)
        self.assertEqual(len(words(text)), n)
        # and the same connection still serves
        s.sendall(b"GET /health HTTP/1.1\r\n\r\n")
        self.assertEqual(read_response(f)[0], 200)
        f.close()
        # the largest answer that is not streamed
        status, _, raw = do(m.conn(), "POST", "/v1/completions",
                            {"prompt": "x", "max_tokens": 1000000})
        self.assertEqual(status, 200)
        self.assertEqual(len(words(json.loads(raw)["choices"][0]["text"])), 1000000)

    # ---- scale ----

    def test_many_concurrent_streams(self):
        n = 1000
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, 4 * n) if hard != resource.RLIM_INFINITY else 4 * n
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        # every first chunk (the headers and role, sent at once) must be in
        # before the first stream's TTFT ends: a window that a slow machine
        # opening a thousand sockets still meets
        ttft_ms = 1500 * SCALE
        m = self.start("--ttft-ms", "%g" % ttft_ms, "--itl-ms", "20", "--quiet")
        body = json.dumps(chat_body(3, stream=True, usage=True)).encode()
        req = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        sel = selectors.DefaultSelector()
        state = {}
        t0 = time.monotonic()
        for i in range(n):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", m.port))
            state[s] = {"out": req, "in": b"", "first": None, "done": None}
            sel.register(s, selectors.EVENT_WRITE)
        open_count = n
        deadline = t0 + 60 * SCALE
        while open_count and time.monotonic() < deadline:
            for key, ev in sel.select(timeout=1):
                s = key.fileobj
                st = state[s]
                if ev & selectors.EVENT_WRITE:
                    try:
                        k = s.send(st["out"])
                    except BlockingIOError:
                        continue
                    st["out"] = st["out"][k:]
                    if not st["out"]:
                        sel.modify(s, selectors.EVENT_READ)
                    continue
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                now = time.monotonic()
                if data and st["first"] is None:
                    st["first"] = now
                st["in"] += data
                if not data:
                    st["done"] = now
                    sel.unregister(s)
                    s.close()
                    open_count -= 1
        elapsed = time.monotonic() - t0
        for s in list(sel.get_map().values()):
            s.fileobj.close()
        sel.close()
        self.assertEqual(open_count, 0, "streams left unfinished")
        firsts = [st["first"] for st in state.values()]
        dones = [st["done"] for st in state.values()]
        # every stream had begun before any had ended: all were open at once
        self.assertLess(max(firsts), min(dones))
        self.assertGreaterEqual(min(dones) - t0, ttft_ms / 1000 + 2 * 0.020 - 0.002)
        self.assertLess(elapsed, ttft_ms / 1000 + 30 * SCALE)
        for st in state.values():
            head, _, rest = st["in"].partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 200 OK"))
            body_text = b""
            while True:
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line, 16)
                if size == 0:
                    break
                body_text += rest[:size]
                rest = rest[size + 2:]
            self.check_chat_stream(sse_events(body_text.decode()), 3, usage=True)

    # ---- stopping ----

    def test_sigterm_and_sigint(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            m = self.start("--itl-ms", "100")
            idle = m.conn()
            self.assertEqual(do(idle, "GET", "/health")[0], 200)
            busy = m.sock()
            body = json.dumps(chat_body(1000, stream=True)).encode()
            busy.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))
            busy.recv(100)
            t0 = time.monotonic()
            rc = m.stop(sig, timeout=10 * SCALE)
            self.assertEqual(rc, 0, m.log())
            self.assertLess(time.monotonic() - t0, 5 * SCALE)
            busy.close()
            idle.close()

    def test_bad_command_line(self):
        for args in ([], ["--listen", "nonsense"], ["--listen", "127.0.0.1:0", "--itl-ms", "x"],
                     ["--listen", "127.0.0.1:0", "--tokens-per-chunk", "0"],
                     ["--listen", "127.0.0.1:0", "--ttft-ms", "-1"],
                     ["--listen", "127.0.0.1:0", "extra"]):
            p = subprocess.run([MOCK, *args], capture_output=True, timeout=30)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertEqual(p.stdout, b"")

    # ---- injected failures (test_faults.py takes them end to end) ----

    def test_fault_flags(self):
        fail_flags = ["--fail-429", "--fail-500", "--fail-reset", "--fail-malformed",
                      "--fail-stall"]
        for args, named in (
                (["--fail-429", "1.5"], ["--fail-429"]),
                (["--fail-500", "-0.1"], ["--fail-500"]),
                (["--fail-reset", "x"], ["--fail-reset"]),
                (["--fail-malformed", "nan"], ["--fail-malformed"]),
                (["--fail-stall", "inf"], ["--fail-stall"]),
                (["--fail-stall", ""], ["--fail-stall"]),
                (["--fail-429", "0.6", "--fail-stall", "0.5"], fail_flags),
                (["--fail-500", "0.5", "--fail-reset", "0.3", "--fail-malformed", "0.3"],
                 fail_flags),
                (["--fail-seed", "-1"], ["--fail-seed"]),
                (["--fail-seed", "1.5"], ["--fail-seed"]),
                (["--fail-seed", "18446744073709551616"], ["--fail-seed"]),
                (["--fail-seed", ""], ["--fail-seed"]),
                (["--stall-ms", "-1"], ["--stall-ms"]),
                (["--stall-ms", "3600001"], ["--stall-ms"])):
            p = subprocess.run([MOCK, "--listen", "127.0.0.1:0", *args], capture_output=True,
                               timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"", args)
            err = p.stderr.decode()
            self.assertTrue(err.startswith("headroom-mock: "), err)
            self.assertEqual(err.count("\n"), 1, err)
            for flag in named:
                self.assertIn(flag, err, args)
        # the edges are accepted
        m = self.start("--fail-429", "0.25", "--fail-500", "0.25", "--fail-reset", "0.25",
                       "--fail-malformed", "0.125", "--fail-stall", "0.125",
                       "--fail-seed", "18446744073709551615", "--stall-ms", "0")
        self.assertEqual(do(m.conn(), "GET", "/health")[0], 200)
        self.assertEqual(m.stop(), 0, m.log())
        self.assertIn("injecting failures", m.log())
        p = subprocess.run([MOCK, "--help"], capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 0)
        for flag in fail_flags + ["--fail-seed", "--stall-ms"]:
            self.assertIn(flag.encode(), p.stdout)

    def test_fault_429_and_500(self):
        for flag, code, etype in (("--fail-429", 429, "rate_limit_error"),
                                  ("--fail-500", 500, "server_error")):
            m = self.start(flag, "1")
            c = m.conn()
            # streamed or not, chat or completions, on one kept-alive connection
            for path, body in (("/v1/chat/completions", chat_body(8, stream=True)),
                               ("/v1/chat/completions", chat_body(8)),
                               ("/v1/completions", {"prompt": "hi", "max_tokens": 8}),
                               ("/v1/completions", {"prompt": "hi", "stream": True})):
                status, headers, raw = do(c, "POST", path, body)
                self.assertEqual(status, code, raw)
                self.assertEqual(headers["content-type"], "application/json")
                self.assertNotIn("connection", headers)
                err = json.loads(raw)["error"]
                self.assertEqual(err["type"], etype)
                self.assertEqual(err["code"], code)
                self.assertIn("injected", err["message"])
                if code == 429:
                    self.assertEqual(headers["retry-after"], "1")
                else:
                    self.assertNotIn("retry-after", headers)
            # only generation requests fail; a bad one is still a 400
            self.assertEqual(do(c, "GET", "/health")[0], 200)
            self.assertEqual(do(c, "GET", "/v1/models")[0], 200)
            self.assert_error(*do(c, "POST", "/v1/completions", b"{not json"), 400)

    def read_until_reset(self, s):
        """Everything the socket gives before it is reset; fails on a clean end."""
        data = b""
        while True:
            try:
                part = s.recv(65536)
            except ConnectionResetError:
                return data
            if not part:
                self.fail("the connection ended without a reset: %r" % data[-200:])
            data += part

    def test_fault_reset(self):
        m = self.start("--fail-reset", "1")
        # streamed: the headers, the role event and the first half of the tokens
        s = m.sock()
        body = json.dumps(chat_body(8, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        data = self.read_until_reset(s)
        head, _, rest = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200 OK"), head)
        self.assertIn(b"Transfer-Encoding: chunked", head)
        self.assertNotIn(b"0\r\n\r\n", rest)  # no last chunk
        events = [e for e in rest.split(b"\r\n") if e.startswith(b"data: ")]
        self.assertEqual(len(events), 5, rest)
        deltas = [json.loads(e[6:])["choices"][0]["delta"] for e in events]
        self.assertEqual(deltas[0], {"role": "assistant", "content": ""})
        self.assertEqual(len(words("".join(d["content"] for d in deltas[1:]))), 4)
        # not streamed: the headers with the whole Content-Length, half the body
        s = m.sock()
        body = json.dumps({"prompt": "hi", "max_tokens": 8}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        data = self.read_until_reset(s)
        head, _, rest = data.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200 OK"), head)
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        self.assertEqual(len(rest), length // 2)
        self.assertTrue(rest.startswith(b'{"id":"cmpl-mock-2"'), rest)
        # a client that reads slowly still gets all of the first half before the reset
        s = m.sock()
        body = json.dumps(chat_body(40000, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        time.sleep(0.3)  # the socket buffers fill up meanwhile
        data = self.read_until_reset(s)
        self.assertEqual(data.count(b"data: "), 1 + 20000)
        self.assertTrue(data.endswith(b"}\n\n\r\n"), data[-100:])
        # the server goes on
        self.assertEqual(do(m.conn(), "GET", "/health")[0], 200)

    def test_fault_malformed(self):
        m = self.start("--fail-malformed", "1")
        c = m.conn()
        for path, body, chat in (("/v1/chat/completions", chat_body(8, stream=True), True),
                                 ("/v1/completions",
                                  {"prompt": "hi", "max_tokens": 8, "stream": True}, False)):
            status, _, raw = do(c, "POST", path, body)
            self.assertEqual(status, 200)
            events = sse_events(raw.decode())
            self.assertEqual(events[-1], "[DONE]")
            bad = [i for i, e in enumerate(events[:-1]) if not self.is_json(e)]
            # after the first 4 tokens (and the role event of a chat stream)
            self.assertEqual(bad, [5 if chat else 4], events)
            self.assertTrue(events[bad[0]].startswith('{"id":"'), events[bad[0]])
            good = [json.loads(e) for e in events[:-1] if self.is_json(e)]
            key = "delta" if chat else None
            text = "".join((ch["choices"][0]["delta"].get("content", "") if key
                            else ch["choices"][0]["text"]) for ch in good)
            self.assertEqual(len(words(text)), 8)  # the stream goes on, whole
        # not streamed: a complete HTTP response whose JSON is cut in half
        status, headers, raw = do(c, "POST", "/v1/chat/completions", chat_body(8))
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(int(headers["content-length"]), len(raw))
        self.assertFalse(self.is_json(raw.decode()))
        self.assertTrue(raw.startswith(b'{"id":"chatcmpl-mock-3"'), raw)
        self.assertEqual(do(c, "GET", "/health")[0], 200)  # the connection is still good

    @staticmethod
    def is_json(text):
        try:
            json.loads(text)
            return True
        except ValueError:
            return False

    def test_fault_stall(self):
        # a stall of --stall-ms: the first half, a pause, the rest (all due by then)
        stall = 0.3 * SCALE
        m = self.start("--fail-stall", "1", "--stall-ms", "%g" % (stall * 1000))
        ev = timed_events(m.conn(), "/v1/chat/completions", chat_body(8, stream=True))
        self.assertEqual(len(ev), 1 + 8 + 1 + 1)  # role, tokens, finish, [DONE]
        # From before the request was sent: the first half before the stall
        # ends, the rest after it (the stall holds from the stopped token's
        # due time, at the earliest when the mock took the request). Not
        # the gap between the two reads, which a late reader shrinks.
        self.assertLess(ev[4][0], stall, ev)
        self.assertGreaterEqual(ev[5][0], stall - 0.001, ev)
        t0 = time.monotonic()
        status, _, raw = do(m.conn(), "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 4})
        self.assertGreaterEqual(time.monotonic() - t0, stall - 0.001)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(raw)["usage"]["completion_tokens"], 4)
        # without --stall-ms it lasts until the client leaves
        m = self.start("--fail-stall", "1")
        s = m.sock(timeout=0.5 * SCALE)
        body = json.dumps(chat_body(8, stream=True)).encode()
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(body), body))
        data = b""
        with self.assertRaises(socket.timeout):
            while True:
                part = s.recv(65536)
                self.assertNotEqual(part, b"")
                data += part
        self.assertEqual(data.count(b"data: "), 5)  # role + 4 tokens
        c = m.conn()
        self.assertIn(b'vllm:num_requests_running{model_name="mock-model"} 1.0',
                      do(c, "GET", "/metrics")[2])
        s.close()
        deadline = time.monotonic() + 10
        while b'vllm:num_requests_running{model_name="mock-model"} 0.0' not in \
                do(c, "GET", "/metrics")[2]:
            self.assertLess(time.monotonic(), deadline, "the stalled response was not dropped")
            time.sleep(0.05)

    def test_fault_draw(self):
        """Request n gets the failure the documented formula gives (test_faults.fault_draw),
        whatever the kind, streamed or not."""
        from test_faults import fault_draw
        probs = {"429": 0.15, "500": 0.15, "reset": 0.15, "malformed": 0.15, "stall": 0.1}
        seed = 42
        # a stall is told by its length: one no quick answer reaches
        stall = 0.4 * SCALE
        m = self.start("--fail-429", "0.15", "--fail-500", "0.15", "--fail-reset", "0.15",
                       "--fail-malformed", "0.15", "--fail-stall", "0.1",
                       "--stall-ms", "%g" % (stall * 1000), "--fail-seed", str(seed))
        got, want = [], []
        for n in range(1, 31):
            want.append(fault_draw(seed, n, probs))
            c = m.conn()
            t0 = time.monotonic()
            try:
                status, _, raw = do(c, "POST", "/v1/completions", {"prompt": "hi", "max_tokens": 4})
            except (ConnectionResetError, http.client.IncompleteRead):
                got.append("reset")
                continue
            finally:
                c.close()
            elapsed = time.monotonic() - t0
            if status in (429, 500):
                got.append(str(status))
            elif not self.is_json(raw.decode()):
                got.append("malformed")
            else:
                self.assertEqual(json.loads(raw)["id"], "cmpl-mock-%d" % n)
                got.append("stall" if elapsed >= stall - 0.001 else None)
        self.assertEqual(got, want)
        self.assertEqual(len(set(want)), 6, want)  # every kind, and no failure


if __name__ == "__main__":
    unittest.main()
