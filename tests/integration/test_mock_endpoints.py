#!/usr/bin/env python3
"""test_mock_endpoints.py - headroom-mock's endpoints beyond chat and text
completions, over real sockets: OpenAI /v1/embeddings, NIM /v1/ranking,
Cohere /v2/rerank (and /v1/rerank), TEI /rerank, TGI /generate and
/generate_stream, and chat reasoning content (--reasoning-tokens).

Each test starts the real mock on port 0; every mock is stopped with SIGTERM
at the end of its test and must exit 0 (under AddressSanitizer a leak or an
error report fails the test). Vectors and scores are recomputed here with
the formulas of docs/mock.md and compared exactly; timings are bounded
from below, from before the request was sent (the mock never sends early;
a busy machine only makes things later), and the few upper bounds on wall
time are generous and scaled by hrtest.time_scale() (tm.SCALE).

Run: HEADROOM_BIN=build/bin /usr/bin/python3 tests/integration/test_mock_endpoints.py
"""
import base64
import http.client
import json
import math
import re
import socket
import struct
import subprocess
import time
import unittest

import test_mock as tm
from test_faults import fault_draw

MASK = (1 << 64) - 1
WORDS = ("the quick brown fox jumps over lazy dog a model serves tokens at steady pace while "
         "many users wait for their answers to arrive each word counts as one token and every "
         "stream ends with done light moves fast through quiet rooms where numbers grow into "
         "long tables of timing data that tell how servers behave under load when batches "
         "fill up again soon").split()
assert len(WORDS) == 64


# ---- the documented formulas ----

def splitmix64(seed, n):
    z = (seed + n * 0x9e3779b97f4a7c15) & MASK
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    return z ^ (z >> 31)


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & MASK
    return h


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def embedding(text, dim):
    """The vector of a text (a token-id input's text: its ids joined by spaces)."""
    h = fnv1a(text.encode())
    v = [2.0 * ((splitmix64(h, i) >> 11) * 2.0 ** -53) - 1.0 for i in range(1, dim + 1)]
    total = 0.0
    for x in v:
        total += x * x
    norm = math.sqrt(total)
    return [f32(x / norm) for x in v]


WORD_RE = re.compile(rb"[A-Za-z0-9\x80-\xff]+")


def logit(query, passage):
    q = {w.lower() for w in WORD_RE.findall(query.encode())}
    p = {w.lower() for w in WORD_RE.findall(passage.encode())}
    return 8.0 * len(q & p) / max(len(q), 1) - 4.0


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def ranked(query, passages):
    """(index, logit), best first, ties by index."""
    scores = [(i, logit(query, p)) for i, p in enumerate(passages)]
    return sorted(scores, key=lambda e: (-e[1], e[0]))


def ntok(text):
    return len(text.split())


def mock_words(prompt_tokens, start, n):
    return [WORDS[(prompt_tokens + i) % 64] for i in range(start, start + n)]


def tgi_token(prompt_tokens, i):
    w = (prompt_tokens + i) % 64
    return {"id": 100 + w, "text": WORDS[w] + " ", "logprob": -(w % 8 + 1) / 8,
            "special": False}


def tgi_events(raw):
    """The data payloads of a TGI stream ("data:JSON" blocks, no [DONE])."""
    text = raw.decode()
    assert text.endswith("\n\n"), text[-80:]
    out = []
    for block in text[:-2].split("\n\n"):
        assert block.startswith("data:") and not block.startswith("data: "), block
        out.append(block[len("data:"):])
    return out


def post_raw(sock, path, body, extra=b""):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sock.sendall(b"POST %s HTTP/1.1\r\nContent-Type: application/json\r\n%sContent-Length: %d"
                 b"\r\n\r\n%s" % (path.encode(), extra, len(data), data))


DOCS = ["The cat sat on the mat.",
        "GPU memory bandwidth of the H100 is 3 TB/s.",
        "Memory is fast; the GPU is faster.",
        "Nothing relevant here at all",
        "bandwidth, bandwidth, BANDWIDTH"]
QUERY = "What is the GPU memory bandwidth?"


class EndpointTest(tm.MockCase):

    def post(self, conn, path, body):
        status, headers, raw = tm.do(conn, "POST", path, body)
        return status, headers, raw

    def ok_json(self, conn, path, body):
        status, headers, raw = self.post(conn, path, body)
        self.assertEqual(status, 200, raw)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(int(headers["content-length"]), len(raw))
        return json.loads(raw), headers

    def assert_400(self, conn, path, body, field):
        status, headers, raw = self.post(conn, path, body)
        self.assertEqual(status, 400, (path, body, raw))
        err = json.loads(raw)["error"]
        self.assertEqual((err["type"], err["code"]), ("invalid_request_error", 400))
        self.assertIn(field, err["message"], (body, err["message"]))

    # ---- embeddings ----

    def test_embeddings(self):
        m = self.start()
        c = m.conn()
        doc, _ = self.ok_json(c, "/v1/embeddings", {"model": "any", "input": "hello mock world"})
        self.assertEqual(set(doc), {"id", "object", "created", "model", "data", "usage"})
        self.assertEqual((doc["object"], doc["model"], doc["id"]),
                         ("list", "mock-model", "embd-mock-1"))
        self.assertEqual(doc["usage"], {"prompt_tokens": 3, "total_tokens": 3})
        self.assertEqual(len(doc["data"]), 1)
        item = doc["data"][0]
        self.assertEqual(set(item), {"object", "index", "embedding"})
        self.assertEqual((item["object"], item["index"]), ("embedding", 0))
        self.assertEqual(len(item["embedding"]), 32)  # the default dimension
        self.assertEqual(item["embedding"], embedding("hello mock world", 32))
        self.assertAlmostEqual(sum(x * x for x in item["embedding"]), 1.0, places=5)

        texts = ["one", "two words", "hello mock world", "one"]
        doc, _ = self.ok_json(c, "/v1/embeddings", {"input": texts, "encoding_format": "float"})
        self.assertEqual([d["index"] for d in doc["data"]], [0, 1, 2, 3])
        for d, t in zip(doc["data"], texts):
            self.assertEqual(d["embedding"], embedding(t, 32), t)
        self.assertEqual(doc["data"][0]["embedding"], doc["data"][3]["embedding"])
        self.assertNotEqual(doc["data"][0]["embedding"], doc["data"][1]["embedding"])
        self.assertEqual(doc["usage"]["prompt_tokens"], 1 + 2 + 3 + 1)
        self.assertEqual(doc["id"], "embd-mock-2")

        # token ids: one input, or several; counted one per id; the text is the ids
        doc, _ = self.ok_json(c, "/v1/embeddings", {"input": [15, 0, 9000]})
        self.assertEqual(len(doc["data"]), 1)
        self.assertEqual(doc["data"][0]["embedding"], embedding("15 0 9000", 32))
        self.assertEqual(doc["usage"]["prompt_tokens"], 3)
        doc, _ = self.ok_json(c, "/v1/embeddings", {"input": [[1, 2], [3]], "dimensions": 5})
        self.assertEqual([d["embedding"] for d in doc["data"]],
                         [embedding("1 2", 5), embedding("3", 5)])
        self.assertEqual(doc["usage"]["prompt_tokens"], 3)

    def test_embeddings_base64_and_dimension(self):
        m = self.start("--embedding-dim", "7")
        c = m.conn()
        doc, _ = self.ok_json(c, "/v1/embeddings", {"input": ["a b", "c"],
                                                    "encoding_format": "base64"})
        for d, t in zip(doc["data"], ["a b", "c"]):
            raw = base64.b64decode(d["embedding"], validate=True)
            self.assertEqual(len(raw), 7 * 4)
            self.assertEqual(list(struct.unpack("<7f", raw)), embedding(t, 7))
        doc, _ = self.ok_json(c, "/v1/embeddings", {"input": "x", "dimensions": 1000})
        self.assertEqual(doc["data"][0]["embedding"], embedding("x", 1000))
        # dimensions of every size give a padded base64 of the right length
        for dim in (1, 2, 3):
            doc, _ = self.ok_json(c, "/v1/embeddings", {"input": "x", "dimensions": dim,
                                                        "encoding_format": "base64"})
            raw = base64.b64decode(doc["data"][0]["embedding"], validate=True)
            self.assertEqual(list(struct.unpack("<%df" % dim, raw)), embedding("x", dim))

    def test_embeddings_bad(self):
        m = self.start()
        c = m.conn()
        p = "/v1/embeddings"
        for body, field in (
                ({}, "'input'"),
                ({"input": 5}, "'input'"),
                ({"input": None}, "'input'"),
                ({"input": ""}, "'input'"),
                ({"input": []}, "'input'"),
                ({"input": [{}]}, "'input'"),
                ({"input": [1.5]}, "'input'"),
                ({"input": ["a", 1]}, "'input[1]'"),
                ({"input": ["a", ""]}, "'input[1]'"),
                ({"input": [1, "a"]}, "'input[1]'"),
                ({"input": [1, -2]}, "'input[1]'"),
                ({"input": [[1], "a"]}, "'input[1]'"),
                ({"input": [[1], []]}, "'input[1]'"),
                ({"input": [[1], [1, None]]}, "'input[1][1]'"),
                ({"input": ["a"] * 2049}, "'input'"),
                ({"input": ["a"] * 2048, "dimensions": 2048}, "'input'"),
                ({"input": "a", "dimensions": 0}, "'dimensions'"),
                ({"input": "a", "dimensions": 16385}, "'dimensions'"),
                ({"input": "a", "dimensions": "8"}, "'dimensions'"),
                ({"input": "a", "encoding_format": "int8"}, "'encoding_format'"),
                ({"input": "a", "encoding_format": 1}, "'encoding_format'"),
                ({"input": "a", "model": 1}, "'model'"),
                ({"input": "a", "user": []}, "'user'")):
            self.assert_400(c, p, body, field)
        for raw in (b"", b"{", b"[1]", b'"input"', b"\xff"):
            self.assert_400(c, p, raw, "")
        # the connection is still in step
        self.ok_json(c, p, {"input": "fine"})

    # ---- rankings ----

    def test_ranking_nim(self):
        m = self.start()
        c = m.conn()
        body = {"model": "nvidia/llama-3.2-nv-rerankqa-1b-v2", "query": {"text": QUERY},
                "passages": [{"text": d} for d in DOCS], "truncate": "END"}
        doc, _ = self.ok_json(c, "/v1/ranking", body)
        self.assertEqual(set(doc), {"rankings", "usage"})
        self.assertEqual([(r["index"], r["logit"]) for r in doc["rankings"]],
                         ranked(QUERY, DOCS))
        self.assertEqual([set(r) for r in doc["rankings"]], [{"index", "logit"}] * len(DOCS))
        tokens = sum(ntok(QUERY) + ntok(d) for d in DOCS)
        self.assertEqual(doc["usage"], {"prompt_tokens": tokens, "total_tokens": tokens})
        # the order the formula gives: all three query words, then two, ...
        self.assertEqual(doc["rankings"][0]["index"], 1)
        self.assertEqual(doc["rankings"][0]["logit"], 8.0 * 5 / 6 - 4)
        self.assertEqual(doc["rankings"][-1]["logit"], -4.0)
        doc, _ = self.ok_json(c, "/v1/ranking", {"query": {"text": ""},
                                                 "passages": [{"text": "a"}, {"text": ""}]})
        self.assertEqual(doc["rankings"], [{"index": 0, "logit": -4}, {"index": 1, "logit": -4}])

    def test_rerank_cohere(self):
        m = self.start()
        c = m.conn()
        docs = [DOCS[0], {"text": DOCS[1]}, DOCS[2], {"text": DOCS[3], "title": "t"}, DOCS[4]]
        want = ranked(QUERY, DOCS)
        for path, n in (("/v2/rerank", 1), ("/v1/rerank", 2)):
            doc, _ = self.ok_json(c, path, {"model": "rerank-v3.5", "query": QUERY,
                                            "documents": docs})
            self.assertEqual(set(doc), {"id", "results", "meta", "usage"})
            self.assertEqual(doc["id"], "rerank-mock-%d" % n)
            self.assertEqual([r["index"] for r in doc["results"]], [i for i, _ in want])
            for r, (_, lg) in zip(doc["results"], want):
                self.assertEqual(set(r), {"index", "relevance_score"})
                self.assertAlmostEqual(r["relevance_score"], sigmoid(lg), places=12)
            self.assertEqual(doc["meta"], {"api_version": {"version": "2"},
                                           "billed_units": {"search_units": 1}})
            self.assertEqual(doc["usage"],
                             {"total_tokens": sum(ntok(QUERY) + ntok(d) for d in DOCS)})
        doc, _ = self.ok_json(c, "/v2/rerank", {"query": QUERY, "documents": docs, "top_n": 2,
                                                "return_documents": True})
        self.assertEqual([(r["index"], r["document"]) for r in doc["results"]],
                         [(i, {"text": DOCS[i]}) for i, _ in want[:2]])
        doc, _ = self.ok_json(c, "/v2/rerank", {"query": "x", "documents": ["x"] * 101,
                                                "top_n": 1000})
        self.assertEqual(len(doc["results"]), 101)
        self.assertEqual(doc["meta"]["billed_units"]["search_units"], 2)
        # texts that need escaping come back intact
        odd = 'quote " backslash \\ tab \t newline \n bell \x07 unicode \u00e9\u4e2d'
        doc, _ = self.ok_json(c, "/v2/rerank", {"query": "unicode", "documents": [odd],
                                                "return_documents": True})
        self.assertEqual(doc["results"][0]["document"]["text"], odd)

    def test_rerank_tei(self):
        m = self.start()
        c = m.conn()
        want = ranked(QUERY, DOCS)
        status, headers, raw = self.post(c, "/rerank", {"query": QUERY, "texts": DOCS})
        self.assertEqual(status, 200)
        doc = json.loads(raw)
        self.assertIsInstance(doc, list)
        self.assertEqual([r["index"] for r in doc], [i for i, _ in want])
        for r, (_, lg) in zip(doc, want):
            self.assertEqual(set(r), {"index", "score"})
            self.assertAlmostEqual(r["score"], sigmoid(lg), places=12)
        doc, _ = self.ok_json(c, "/rerank", {"query": QUERY, "texts": DOCS, "raw_scores": True,
                                             "return_text": True, "truncate": True,
                                             "truncation_direction": "Left"})
        self.assertEqual([(r["index"], r["score"], r["text"]) for r in doc],
                         [(i, lg, DOCS[i]) for i, lg in want])

    def test_rankings_bad(self):
        m = self.start()
        c = m.conn()
        for path, body, field in (
                ("/v1/ranking", {"passages": [{"text": "a"}]}, "'query'"),
                ("/v1/ranking", {"query": "a", "passages": [{"text": "a"}]}, "'query'"),
                ("/v1/ranking", {"query": {"text": 1}, "passages": [{"text": "a"}]},
                 "'query.text'"),
                ("/v1/ranking", {"query": {"text": "a"}}, "'passages'"),
                ("/v1/ranking", {"query": {"text": "a"}, "passages": []}, "'passages'"),
                ("/v1/ranking", {"query": {"text": "a"}, "passages": ["a"]}, "'passages[0]'"),
                ("/v1/ranking", {"query": {"text": "a"}, "passages": [{"text": "a"}, {}]},
                 "'passages[1]'"),
                ("/v1/ranking", {"query": {"text": "a"}, "passages": [{"text": "a"}],
                                 "truncate": "START"}, "'truncate'"),
                ("/v1/ranking", {"query": {"text": "a"}, "passages": [{"text": "a"}],
                                 "model": False}, "'model'"),
                ("/v2/rerank", {"documents": ["a"]}, "'query'"),
                ("/v2/rerank", {"query": {"text": "a"}, "documents": ["a"]}, "'query'"),
                ("/v2/rerank", {"query": "a", "documents": "a"}, "'documents'"),
                ("/v2/rerank", {"query": "a", "documents": []}, "'documents'"),
                ("/v2/rerank", {"query": "a", "documents": ["a", 2]}, "'documents[1]'"),
                ("/v2/rerank", {"query": "a", "documents": ["a", {"txt": "b"}]},
                 "'documents[1]'"),
                ("/v2/rerank", {"query": "a", "documents": ["a"], "top_n": 0}, "'top_n'"),
                ("/v2/rerank", {"query": "a", "documents": ["a"], "top_n": "1"}, "'top_n'"),
                ("/v2/rerank", {"query": "a", "documents": ["a"], "return_documents": 1},
                 "'return_documents'"),
                ("/v2/rerank", {"query": "a", "documents": ["a"], "max_tokens_per_doc": 0},
                 "'max_tokens_per_doc'"),
                ("/rerank", {"texts": ["a"]}, "'query'"),
                ("/rerank", {"query": "a"}, "'texts'"),
                ("/rerank", {"query": "a", "texts": []}, "'texts'"),
                ("/rerank", {"query": "a", "texts": [{"text": "a"}]}, "'texts[0]'"),
                ("/rerank", {"query": "a", "texts": ["a"], "raw_scores": "true"},
                 "'raw_scores'"),
                ("/rerank", {"query": "a", "texts": ["a"], "return_text": 0}, "'return_text'"),
                ("/rerank", {"query": "a", "texts": ["a"], "truncate": "yes"}, "'truncate'"),
                ("/rerank", {"query": "a", "texts": ["a"], "truncation_direction": "up"},
                 "'truncation_direction'")):
            self.assert_400(c, path, body, field)
        for path in ("/v1/ranking", "/v2/rerank", "/v1/rerank", "/rerank"):
            self.assert_400(c, path, b"[]", "JSON object")
            self.assert_400(c, path, b"{\"query\":", "invalid JSON")
        # a huge query times many passages: refused, not overflowed
        big = {"query": "w " * 200000, "texts": ["x"] * 100000}
        self.assert_400(c, "/rerank", body=big, field="prompt tokens")
        self.assertEqual(tm.do(c, "GET", "/health")[0], 200)

    # ---- TGI ----

    def test_tgi_generate(self):
        m = self.start()
        c = m.conn()
        doc, headers = self.ok_json(c, "/generate", {"inputs": "What is deep learning?",
                                                     "parameters": {"max_new_tokens": 5}})
        self.assertEqual(doc, {"generated_text": "".join(w + " " for w in mock_words(4, 0, 5))})
        self.assertEqual((headers["x-prompt-tokens"], headers["x-generated-tokens"]), ("4", "5"))
        # the default is 100 new tokens, as TGI's
        doc, _ = self.ok_json(c, "/generate", {"inputs": "hi"})
        self.assertEqual(len(doc["generated_text"].split()), 100)
        doc, _ = self.ok_json(c, "/generate", {"inputs": "hi", "parameters": None})
        self.assertEqual(len(doc["generated_text"].split()), 100)
        # details and the full text
        doc, headers = self.ok_json(c, "/generate", {
            "inputs": "a b c", "parameters": {"max_new_tokens": 3, "details": True,
                                              "return_full_text": True, "seed": 42,
                                              "do_sample": True, "temperature": 0.5,
                                              "stop": ["x"]}})
        text = "".join(w + " " for w in mock_words(3, 0, 3))
        self.assertEqual(doc["generated_text"], "a b c" + text)
        self.assertEqual(doc["details"], {
            "finish_reason": "length", "generated_tokens": 3, "seed": 42, "prefill": [],
            "tokens": [tgi_token(3, i) for i in range(3)]})
        doc, _ = self.ok_json(c, "/generate", {"inputs": "x\ny\u00e9",
                                               "parameters": {"max_new_tokens": 1,
                                                              "decoder_input_details": True,
                                                              "return_full_text": True}})
        self.assertEqual(doc["generated_text"], "x\ny\u00e9" + mock_words(2, 0, 1)[0] + " ")
        self.assertEqual(doc["details"]["seed"], None)
        self.assertEqual(len(doc["details"]["tokens"]), 1)

    def stream(self, sock):
        f = sock.makefile("rb")
        status, headers, body = tm.read_response(f)
        f.close()
        return status, headers, body

    def test_tgi_stream(self):
        m = self.start("--tokens-per-chunk", "2")
        s = m.sock()
        post_raw(s, "/generate_stream", {"inputs": "one two", "parameters": {
            "max_new_tokens": 5, "details": True, "seed": 7, "return_full_text": True}})
        status, headers, body = self.stream(s)
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/event-stream; charset=utf-8")
        self.assertEqual(headers["transfer-encoding"], "chunked")
        events = [json.loads(e) for e in tgi_events(body)]
        self.assertEqual([e["index"] for e in events], [1, 2, 3, 4, 5])
        self.assertEqual([e["token"] for e in events], [tgi_token(2, i) for i in range(5)])
        for e in events[:-1]:
            self.assertEqual(e, {"index": e["index"], "token": e["token"],
                                 "generated_text": None, "details": None})
        last = events[-1]
        self.assertEqual(last["generated_text"],
                         "one two" + "".join(e["token"]["text"] for e in events))
        self.assertEqual(last["details"], {"finish_reason": "length", "generated_tokens": 5,
                                           "seed": 7, "input_length": 2})
        # without details the last event has none; keep-alive goes on
        post_raw(s, "/generate_stream", {"inputs": "x", "parameters": {"max_new_tokens": 1}})
        status, _, body = self.stream(s)
        events = [json.loads(e) for e in tgi_events(body)]
        self.assertEqual(events, [{"index": 1, "token": tgi_token(1, 0),
                                   "generated_text": WORDS[1] + " ", "details": None}])
        # HTTP/1.0: raw events, then the connection closes
        h = m.sock()
        data = json.dumps({"inputs": "x", "parameters": {"max_new_tokens": 3}}).encode()
        h.sendall(b"POST /generate_stream HTTP/1.0\r\nContent-Length: %d\r\n\r\n%s"
                  % (len(data), data))
        raw = b""
        while True:
            part = h.recv(65536)
            if not part:
                break
            raw += part
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertIn(b"Connection: close", head)
        self.assertEqual(len(tgi_events(body)), 3)

    def test_tgi_bad(self):
        m = self.start()
        c = m.conn()
        for path in ("/generate", "/generate_stream"):
            for body, field in (
                    ({}, "'inputs'"),
                    ({"inputs": 5}, "'inputs'"),
                    ({"inputs": ""}, "'inputs'"),
                    ({"inputs": "x", "parameters": []}, "'parameters'"),
                    ({"inputs": "x", "parameters": {"max_new_tokens": 0}},
                     "'parameters.max_new_tokens'"),
                    ({"inputs": "x", "parameters": {"max_new_tokens": "5"}},
                     "'parameters.max_new_tokens'"),
                    ({"inputs": "x", "parameters": {"max_new_tokens": 1000001}},
                     "'parameters.max_new_tokens'"),
                    ({"inputs": "x", "parameters": {"details": "yes"}}, "'parameters.details'"),
                    ({"inputs": "x", "parameters": {"return_full_text": 1}},
                     "'parameters.return_full_text'"),
                    ({"inputs": "x", "parameters": {"seed": -1}}, "'parameters.seed'"),
                    ({"inputs": "x", "parameters": {"seed": 1.5}}, "'parameters.seed'"),
                    ({"inputs": "x", "parameters": {"stop": "x"}}, "'parameters.stop'"),
                    ({"inputs": "x", "parameters": {"stop": ["x", 1]}}, "'parameters.stop[1]'"),
                    ({"inputs": "x", "parameters": {"best_of": 0}}, "'parameters.best_of'"),
                    ({"inputs": "x", "parameters": {"do_sample": "no"}},
                     "'parameters.do_sample'"),
                    ({"inputs": "x", "stream": 1}, "'stream'")):
                self.assert_400(c, path, body, field)
        self.assert_400(c, "/generate_stream", {"inputs": "x", "parameters": {
            "decoder_input_details": True}}, "'parameters.decoder_input_details'")
        self.assert_400(c, "/generate_stream", {"inputs": "x", "parameters": {"best_of": 2}},
                        "'parameters.best_of'")
        self.assert_400(c, "/generate", {"inputs": "x", "parameters": {
            "details": True, "max_new_tokens": 500001}}, "'parameters.max_new_tokens'")
        self.ok_json(c, "/generate", {"inputs": "x", "parameters": {"best_of": 2,
                                                                    "max_new_tokens": 1}})

    # ---- timing ----

    def test_tgi_timing(self):
        m = self.start("--ttft-ms", "150", "--itl-ms", "60")
        s = m.sock()
        t0 = time.monotonic()
        post_raw(s, "/generate_stream", {"inputs": "x", "parameters": {"max_new_tokens": 5}})
        f = s.makefile("rb")
        times = []
        for line in f:
            if line.startswith(b"data:"):
                times.append(time.monotonic() - t0)
                if len(times) == 5:
                    break
        f.close()
        # Token i is due ttft + i * itl after the mock took the request, so
        # no sooner after we sent it: a bound on each token from the start
        # (a late read shrinks the gap after it; it cannot make a token early).
        for i, t in enumerate(times):
            self.assertGreaterEqual(t, 0.15 + i * 0.06 - 0.002, times)
        self.assertLess(times[0], 1.0 * tm.SCALE)
        self.assertLess(times[-1], 2.0 * tm.SCALE)
        # /generate: the body once its last token is due
        c = m.conn()
        t0 = time.monotonic()
        self.ok_json(c, "/generate", {"inputs": "x", "parameters": {"max_new_tokens": 3}})
        self.assertGreaterEqual(time.monotonic() - t0, 0.15 + 2 * 0.06 - 0.02)

    def test_pool_timing(self):
        """Embeddings and rankings answer after the TTFT delay, or the load
        model's prefill and queue."""
        m = self.start("--ttft-ms", "200")
        c = m.conn()
        for path, body in (("/v1/embeddings", {"input": "x"}),
                           ("/v1/ranking", {"query": {"text": "x"}, "passages": [{"text": "x"}]}),
                           ("/v2/rerank", {"query": "x", "documents": ["x"]}),
                           ("/rerank", {"query": "x", "texts": ["x"]})):
            t0 = time.monotonic()
            self.ok_json(c, path, body)
            took = time.monotonic() - t0
            self.assertGreaterEqual(took, 0.19, path)
            self.assertLess(took, 2.0 * tm.SCALE, path)
        # the load model: prefill grows with the prompt; one batch slot is shared
        m = self.start("--prefill-ms-per-1k", "100", "--max-batch", "1", "--decode-ms", "40")
        c = m.conn()
        t0 = time.monotonic()
        self.ok_json(c, "/v1/embeddings", {"input": "w " * 3000})
        self.assertGreaterEqual(time.monotonic() - t0, 0.3 + 0.04 - 0.02)
        s = m.sock()
        t0 = time.monotonic()
        post_raw(s, "/v1/chat/completions", tm.chat_body(10, stream=True))
        self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 200"))
        self.ok_json(c, "/rerank", {"query": "x", "texts": ["x"]})
        # behind the chat's 10 steps of 40 ms in the only slot: from when the
        # chat was sent (alone the rerank would take a step of 40 ms)
        self.assertGreaterEqual(time.monotonic() - t0, 10 * 0.04)

    def test_pool_metrics(self):
        """An embeddings or rankings request counts its prompt and completes,
        but generates no token; the KV gauge returns to 0."""
        for args in ((), ("--decode-ms", "5")):
            m = self.start(*args)
            c = m.conn()
            self.ok_json(c, "/v1/embeddings", {"input": ["a b c", "d"]})
            self.ok_json(c, "/rerank", {"query": "q", "texts": ["x y", "z"]})
            page = tm.do(c, "GET", "/metrics")[2].decode()
            lab = '{model_name="mock-model"}'
            self.assertIn("vllm:prompt_tokens_total%s 9.0" % lab, page)
            self.assertIn("vllm:generation_tokens_total%s 0.0" % lab, page)
            self.assertIn("vllm:num_requests_running%s 0.0" % lab, page)
            self.assertIn("vllm:gpu_cache_usage_perc%s 0.0" % lab, page)
            self.assertIn('vllm:request_success_total{model_name="mock-model",'
                          'finished_reason="length"} 2.0', page)

    # ---- reasoning ----

    def chat(self, c, max_tokens, stream=False, **extra):
        return self.post(c, "/v1/chat/completions",
                         tm.chat_body(max_tokens, stream=stream, usage=True if stream else None,
                                      content="one two", **extra))

    def test_reasoning_not_streamed(self):
        m = self.start("--reasoning-tokens", "4")
        c = m.conn()
        status, _, raw = self.chat(c, 10)
        doc = json.loads(raw)
        msg = doc["choices"][0]["message"]
        self.assertEqual(msg, {"role": "assistant",
                               "reasoning_content": "".join(w + " " for w in
                                                            mock_words(2, 0, 4)),
                               "content": "".join(w + " " for w in mock_words(2, 4, 6))})
        self.assertEqual(doc["usage"], {"prompt_tokens": 2, "completion_tokens": 10,
                                        "total_tokens": 12,
                                        "completion_tokens_details": {"reasoning_tokens": 4}})
        # max_tokens bounds the total: all of it reasoning, no content
        doc = json.loads(self.chat(c, 3)[2])
        msg = doc["choices"][0]["message"]
        self.assertEqual((len(msg["reasoning_content"].split()), msg["content"]), (3, None))
        self.assertEqual(doc["usage"]["completion_tokens_details"], {"reasoning_tokens": 3})
        self.assertEqual(doc["usage"]["completion_tokens"], 3)
        doc = json.loads(self.chat(c, 0)[2])
        self.assertEqual(doc["choices"][0]["message"],
                         {"role": "assistant", "reasoning_content": None, "content": None})
        # text completions have no reasoning
        doc = json.loads(self.post(c, "/v1/completions", {"prompt": "x", "max_tokens": 5})[2])
        self.assertEqual(doc["usage"], {"prompt_tokens": 1, "completion_tokens": 5,
                                        "total_tokens": 6})
        # --reasoning-tokens 0: the fields, no reasoning
        m0 = self.start("--reasoning-tokens", "0")
        doc = json.loads(self.chat(m0.conn(), 2)[2])
        self.assertEqual(doc["choices"][0]["message"]["reasoning_content"], None)
        self.assertEqual(len(doc["choices"][0]["message"]["content"].split()), 2)
        self.assertEqual(doc["usage"]["completion_tokens_details"], {"reasoning_tokens": 0})
        # without the flag, no reasoning fields at all
        mn = self.start()
        doc = json.loads(self.chat(mn.conn(), 2)[2])
        self.assertNotIn("reasoning_content", doc["choices"][0]["message"])
        self.assertNotIn("completion_tokens_details", doc["usage"])

    def test_reasoning_streamed(self):
        m = self.start("--reasoning-tokens", "3", "--tokens-per-chunk", "2")
        c = m.conn()
        status, headers, raw = self.chat(c, 8, stream=True)
        events = tm.sse_events(raw.decode())
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertEqual(chunks[0]["choices"][0]["delta"], {"role": "assistant", "content": ""})
        deltas = [ch["choices"][0]["delta"] for ch in chunks[1:-2]]
        w = [x + " " for x in mock_words(2, 0, 8)]
        self.assertEqual(deltas, [{"reasoning_content": w[0] + w[1]},
                                  {"reasoning_content": w[2], "content": w[3]},
                                  {"content": w[4] + w[5]},
                                  {"content": w[6] + w[7]}])
        self.assertEqual(chunks[-2]["choices"][0]["finish_reason"], "length")
        self.assertEqual(chunks[-1]["usage"], {
            "prompt_tokens": 2, "completion_tokens": 8, "total_tokens": 10,
            "completion_tokens_details": {"reasoning_tokens": 3}})

    def test_reasoning_timing(self):
        """Reasoning tokens come first, on the same schedule: the first
        content token is due after TTFT plus the reasoning tokens' gaps."""
        m = self.start("--reasoning-tokens", "3", "--ttft-ms", "100", "--itl-ms", "50")
        events = tm.timed_events(m.conn(), "/v1/chat/completions",
                                 tm.chat_body(5, stream=True))
        firsts = {}
        for t, data in events:
            if data == "[DONE]":
                continue
            delta = json.loads(data)["choices"][0]["delta"]
            for k in ("reasoning_content", "content"):
                if delta.get(k) and k not in firsts:
                    firsts[k] = t
        self.assertGreaterEqual(firsts["reasoning_content"], 0.09)
        self.assertGreaterEqual(firsts["content"], 0.1 + 3 * 0.05 - 0.02)
        self.assertLess(firsts["content"], 2.0 * tm.SCALE)

    # ---- injected failures ----

    def test_fail_429_500_everywhere(self):
        bodies = [("/v1/embeddings", {"input": "x"}),
                  ("/v1/ranking", {"query": {"text": "x"}, "passages": [{"text": "x"}]}),
                  ("/v2/rerank", {"query": "x", "documents": ["x"]}),
                  ("/v1/rerank", {"query": "x", "documents": ["x"]}),
                  ("/rerank", {"query": "x", "texts": ["x"]}),
                  ("/generate", {"inputs": "x"}),
                  ("/generate_stream", {"inputs": "x"})]
        for flag, code in (("--fail-429", 429), ("--fail-500", 500)):
            m = self.start(flag, "1")
            c = m.conn()
            for path, body in bodies:
                status, headers, raw = self.post(c, path, body)
                self.assertEqual(status, code, path)
                self.assertEqual(json.loads(raw)["error"]["code"], code)
                if code == 429:
                    self.assertEqual(headers["retry-after"], "1")
            # a bad body is still a 400, and draws nothing
            self.assert_400(c, "/rerank", {"query": "x"}, "'texts'")
            self.assertEqual(tm.do(c, "GET", "/health")[0], 200)

    def test_fail_tgi_stream(self):
        body = {"inputs": "x", "parameters": {"max_new_tokens": 6}}
        # reset: the first half of the tokens, then an RST
        m = self.start("--fail-reset", "1")
        s = m.sock()
        post_raw(s, "/generate_stream", body)
        data = b""
        with self.assertRaises(ConnectionResetError):
            while True:
                part = s.recv(65536)
                if not part:
                    break
                data += part
        self.assertEqual(data.count(b"data:{\"index\""), 3)
        # malformed: one cut event after half, then the stream goes on to its end
        m = self.start("--fail-malformed", "1")
        s = m.sock()
        post_raw(s, "/generate_stream", body)
        _, _, raw = self.stream(s)
        events = tgi_events(raw)
        self.assertEqual(len(events), 7)
        with self.assertRaises(ValueError):
            json.loads(events[3])
        self.assertTrue(events[3].startswith('{"index":4,"token":{"id":'))
        self.assertEqual([json.loads(e)["index"] for e in events[:3] + events[4:]],
                         [1, 2, 3, 4, 5, 6])
        # stall: a gap of --stall-ms after half
        stall = 0.3 * tm.SCALE
        m = self.start("--fail-stall", "1", "--stall-ms", "%g" % (stall * 1000))
        s = m.sock()
        t0 = time.monotonic()
        post_raw(s, "/generate_stream", body)
        f = s.makefile("rb")
        times = []
        for line in f:
            if line.startswith(b"data:"):
                times.append(time.monotonic() - t0)
                if len(times) == 6:
                    break
        f.close()
        # from before the request was sent: the first half before the stall
        # ends, the rest no sooner than its end
        self.assertLess(times[2], stall, times)
        self.assertGreaterEqual(times[3], stall - 0.001, times)

    def test_fail_bodies(self):
        """Reset and malformed on bodies: embeddings, rankings, /generate."""
        m = self.start("--fail-malformed", "1")
        c = m.conn()
        for path, body in (("/v1/embeddings", {"input": "x"}),
                           ("/v1/ranking", {"query": {"text": "x"}, "passages": [{"text": "x"}]}),
                           ("/generate", {"inputs": "x"})):
            status, headers, raw = self.post(c, path, body)
            self.assertEqual(status, 200)
            self.assertEqual(int(headers["content-length"]), len(raw))
            with self.assertRaises(ValueError):
                json.loads(raw)
        m = self.start("--fail-reset", "1")
        for path, body in (("/rerank", {"query": "x", "texts": ["x"]}),
                           ("/generate", {"inputs": "x"})):
            c = m.conn()
            with self.assertRaises((ConnectionResetError, http.client.IncompleteRead)):
                self.post(c, path, body)
            c.close()

    def test_fault_draw_across_endpoints(self):
        """Every POST endpoint uses up a request number: the draw of request n
        is the formula's, whichever endpoint it is."""
        probs = {"429": 0.3, "500": 0.3}
        seed = 9
        m = self.start("--fail-429", "0.3", "--fail-500", "0.3", "--fail-seed", str(seed))
        c = m.conn()
        cycle = [("/v1/embeddings", {"input": "x"}), ("/generate", {"inputs": "x"}),
                 ("/rerank", {"query": "x", "texts": ["x"]}),
                 ("/v1/chat/completions", tm.chat_body(1))]
        got, want = [], []
        for n in range(1, 25):
            path, body = cycle[n % len(cycle)]
            status, _, raw = self.post(c, path, body)
            got.append(str(status) if status != 200 else None)
            want.append(fault_draw(seed, n, probs))
            if path == "/v1/embeddings" and status == 200:
                self.assertEqual(json.loads(raw)["id"], "embd-mock-%d" % n)
        self.assertEqual(got, want)
        self.assertEqual(len(set(want)), 3)

    # ---- HTTP ----

    def test_methods_and_pipelining(self):
        m = self.start()
        c = m.conn()
        for path in ("/v1/embeddings", "/v1/ranking", "/v2/rerank", "/v1/rerank", "/rerank",
                     "/generate", "/generate_stream"):
            status, headers, _ = tm.do(c, "GET", path)
            self.assertEqual((status, headers["allow"]), (405, "POST"), path)
        self.assertEqual(tm.do(c, "POST", "/v3/rerank", {})[0], 404)
        # several endpoints pipelined on one connection: answered in order
        s = m.sock()
        reqs = [("/v1/embeddings", {"input": "a"}), ("/generate_stream", {"inputs": "b"}),
                ("/rerank", {"query": "a", "texts": ["a", "b"]}),
                ("/generate", {"inputs": "c", "parameters": {"max_new_tokens": 2}})]
        for path, body in reqs:
            post_raw(s, path, body)
        f = s.makefile("rb")
        answers = [tm.read_response(f) for _ in reqs]
        f.close()
        self.assertEqual([a[0] for a in answers], [200] * 4)
        self.assertEqual(json.loads(answers[0][2])["data"][0]["embedding"], embedding("a", 32))
        self.assertEqual(len(tgi_events(answers[1][2])), 100)
        self.assertEqual([r["index"] for r in json.loads(answers[2][2])], [0, 1])
        self.assertEqual(len(json.loads(answers[3][2])["generated_text"].split()), 2)

    def test_hostile_bodies(self):
        """Valid bodies with members deleted, retyped or replaced at random
        (seeded): every answer is a 200 or a 400, and the mock stays up."""
        import random
        rnd = random.Random(1234)
        odd = [None, True, 0, -1, 1.5, 2 ** 63 - 1, -2 ** 63, "", "x", [], [None], {}, {"text": 1},
               [[]], [[-1]], ["\u0000"], "\ud7ff\ue000", [1, "a"], {"text": "a"}, [{"text": "a"}]]
        bases = [("/v1/embeddings", {"input": ["a b", "c"], "dimensions": 4,
                                     "encoding_format": "base64"}),
                 ("/v1/ranking", {"query": {"text": "a"}, "passages": [{"text": "a"}],
                                  "truncate": "END"}),
                 ("/v2/rerank", {"query": "a", "documents": ["a", {"text": "b"}], "top_n": 1,
                                 "return_documents": True}),
                 ("/rerank", {"query": "a", "texts": ["a", "b"], "raw_scores": True,
                              "return_text": True}),
                 ("/generate", {"inputs": "a", "parameters": {"max_new_tokens": 2,
                                                              "details": True, "seed": 1,
                                                              "return_full_text": True}}),
                 ("/generate_stream", {"inputs": "a", "parameters": {"max_new_tokens": 2}}),
                 ("/v1/chat/completions", tm.chat_body(2, stream=True, usage=True))]

        def mutate(v, depth=0):
            if isinstance(v, dict) and v and rnd.random() < 0.8:
                v = dict(v)
                k = rnd.choice(sorted(v))
                r = rnd.random()
                if r < 0.3:
                    del v[k]
                elif r < 0.7:
                    v[k] = rnd.choice(odd)
                else:
                    v[k] = mutate(v[k], depth + 1)
                return v
            if isinstance(v, list) and v and rnd.random() < 0.8:
                v = list(v)
                i = rnd.randrange(len(v))
                v[i] = mutate(v[i], depth + 1) if rnd.random() < 0.5 else rnd.choice(odd)
                return v
            return rnd.choice(odd)

        m = self.start("--reasoning-tokens", "1")
        c = m.conn()
        for _ in range(400):
            path, base = rnd.choice(bases)
            body = mutate(base)
            status, _, raw = self.post(c, path, body)
            self.assertIn(status, (200, 400), (path, body, raw[:200]))
        deep = b"[" * 5000 + b"]" * 5000
        for path, _ in bases:
            self.assert_400(c, path, deep, "")
        self.assertEqual(tm.do(c, "GET", "/health")[0], 200)

    def test_disconnects_free(self):
        """Responses dropped while they wait (a disconnect, a stall until the
        client leaves, SIGTERM with requests in flight) leave nothing behind
        (LeakSanitizer checks at exit)."""
        m = self.start("--ttft-ms", "5000")
        for path, body in (("/v2/rerank", {"query": "a", "documents": ["a"],
                                           "return_documents": True}),
                           ("/v1/embeddings", {"input": ["a", "b"]}),
                           ("/generate", {"inputs": "a", "parameters": {
                               "return_full_text": True}})):
            s = m.sock()
            post_raw(s, path, body)
            s.close()
        for path, body in (("/rerank", {"query": "a", "texts": ["a"], "return_text": True}),
                           ("/generate_stream", {"inputs": "a", "parameters": {
                               "return_full_text": True}})):
            post_raw(m.sock(), path, body)  # still waiting at SIGTERM
        time.sleep(0.2)
        m2 = self.start("--fail-stall", "1")
        s = m2.sock(timeout=0.5)
        post_raw(s, "/v2/rerank", {"query": "a", "documents": ["a"], "return_documents": True})
        with self.assertRaises(socket.timeout):
            s.recv(100)
        s.close()
        time.sleep(0.2)
        self.assertEqual(tm.do(m2.conn(), "GET", "/health")[0], 200)

    def test_bad_flags(self):
        for args in (["--embedding-dim", "0"], ["--embedding-dim", "16385"],
                     ["--embedding-dim", "x"], ["--reasoning-tokens", "-1"],
                     ["--reasoning-tokens", "1000001"], ["--reasoning-tokens", ""]):
            p = subprocess.run([tm.MOCK, "--listen", "127.0.0.1:0", *args], capture_output=True,
                               timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stdout, b"")
            self.assertIn(args[0].encode(), p.stderr)
        p = subprocess.run([tm.MOCK, "--help"], capture_output=True, timeout=30)
        for flag in (b"--reasoning-tokens", b"--embedding-dim", b"/v1/embeddings",
                     b"/generate_stream", b"/v2/rerank"):
            self.assertIn(flag, p.stdout)


if __name__ == "__main__":
    unittest.main()
