#!/usr/bin/env python3
"""test_multimodal.py - the media endpoints end to end: REST submit -> worker
-> headroom-mock -> records in SQLite -> exports. Multimodal chat with
workload.images and workload.audio (docs/spec.md, "Multimodal chat"), and
audio_transcription (a multipart upload of one clip; streamed as
transcript.text.delta events, or a whole answer timed as one piece).

The mock runs with --media-dir, so the test sees every picture and clip it
received: each must decode as a PNG, JPEG or WAV of the size the spec
asked for, at most `pool` distinct ones per run, and the records'
images_in, audio_in and media_bytes_in must be exactly what the requests
carried (media_bytes_in: the files' bytes before base64). The mock's ISL
counts text only, so every record keeps the text prompt's length. The
summary's percentiles are reproduced exactly (numpy, linear) from the
exported records. Both transports: the native client (the default) and
libcurl (target.transport "curl").

Transcription: every upload the mock received is a WAV of the asked
length and rate; ISL and OSL are the mock's usage (50 audio tokens a
second, 3 words a second), a streamed record has one chunk per word, a
whole one is one piece (OSL 0); injected 500s and malformed events are
counted exactly as the mock draws them. image_retrieval (NIM's /v1/infer):
the pictures it sends, and injected 500s and malformed bodies counted
exactly as the mock draws them, on both transports.

Specs: workload.images and workload.audio are stored only when given, with
every member filled; wrong fields are 400s naming the field; the fields are
refused on endpoints that take no media. The mock refuses malformed media
parts with a 400.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_multimodal.py
"""
import base64
import collections
import glob
import json
import os
import struct
import subprocess
import unittest
import urllib.error
import urllib.request
import wave
import zlib

import hrtest
from test_faults import fault_draw

try:  # api/openapi.yaml's RunSpec, checked against every spec here
    import yaml
    from jsonschema import Draft202012Validator, RefResolver
except ImportError:  # test_openapi.py reports what is missing
    yaml = None

ISL, OSL = 16, 8
N = 12


def png_size(data):
    """(width, height) of an 8-bit RGB PNG, after checking its pixel data
    inflates to exactly height rows of 1 + 3 x width bytes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + body) == crc, kind
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert (depth, ctype) == (8, 2), (depth, ctype)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    assert len(zlib.decompress(idat)) == h * (1 + 3 * w)
    return w, h


def jpeg_size(data):
    """(width, height) from a JPEG's start-of-frame marker."""
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
    pos = 2
    while pos < len(data):
        assert data[pos] == 0xFF, pos
        marker = data[pos + 1]
        n = struct.unpack(">H", data[pos + 2:pos + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", data[pos + 5:pos + 9])
            return w, h
        pos += 2 + n
    raise AssertionError("no start-of-frame marker")


class Multimodal(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.media = os.path.join(cls.tmp.name, "media")
        os.mkdir(cls.media)
        cls.mock = hrtest.start_mock("--ttft-ms", "20", "--itl-ms", "4", "--quiet",
                                     "--media-dir", cls.media)
        cls.daemon = hrtest.start_daemon(os.path.join(cls.tmp.name, "data"))
        cls.api = hrtest.Api(cls.daemon.addr)
        cls.runspec = None
        if yaml:
            with open(os.path.join(hrtest.SRC, "api", "openapi.yaml")) as f:
                doc = yaml.safe_load(f)
            cls.runspec = Draft202012Validator({"$ref": "#/components/schemas/RunSpec"},
                                               resolver=RefResolver.from_schema(doc))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.mock.stop()
        cls.tmp.cleanup()

    def spec(self, stream=True, endpoint="chat", **media):
        sp = hrtest.spec(self.mock.addr, concurrency=4, requests=N)
        sp["name"] = "multimodal"
        sp["target"]["endpoint"] = endpoint
        sp["target"]["stream"] = stream
        sp["workload"] = {"isl": {"mean": ISL, "stddev": 0}, "osl": {"mean": OSL, "stddev": 0},
                          "seed": 11}
        sp["workload"].update(media)
        return sp

    def check_schema(self, sp):
        if self.runspec:
            errors = [e.message[:200] for e in self.runspec.iter_errors(sp)]
            self.assertEqual(errors, [], json.dumps(sp)[:500])

    def clear(self):
        for path in glob.glob(os.path.join(self.media, "*")):
            os.unlink(path)

    def received(self):
        """The mock's media files since the last call: (images, clips), raw bytes."""
        images, clips = [], []
        for path in sorted(glob.glob(os.path.join(self.media, "*"))):
            with open(path, "rb") as f:
                text = f.read().decode()
            os.unlink(path)
            if path.endswith(".image"):
                head, _, b64 = text.partition(",")
                images.append((head, base64.b64decode(b64, validate=True)))
            else:
                self.assertTrue(path.endswith(".audio.wav"), path)
                clips.append(base64.b64decode(text, validate=True))
        return images, clips

    def run_spec(self, sp, isl=ISL, osl=OSL, isl_source="server_usage"):
        self.clear()
        self.check_schema(sp)
        run = self.api.wait(self.api.submit(sp), timeout=120)
        self.check_schema(run["spec"])
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        rows = [json.loads(line) for line in text.splitlines()]
        self.assertEqual(len(rows), N)
        s = run["summary"]
        self.assertEqual((s["counts"]["valid"], s["counts"]["errors"]), (N, 0), s["errors"])
        for r in rows:
            self.assertEqual((r["status"], r["error"]), (200, ""), r)
            # the mock counts the text parts only
            self.assertEqual((r["isl"], r["isl_source"]), (isl, isl_source), r)
            self.assertEqual(r["osl"], osl, r)
        m = s["metrics"]
        tags = ("time_to_first_token", "inter_token_latency", "request_latency")
        streamed = sp["target"]["stream"]
        one_piece = not streamed and sp["target"]["endpoint"] in (
            "image_generation", "image_edit", "image_retrieval")
        for tag in tags if streamed else tags[::2] if one_piece else tags[2:]:
            self.assertEqual(m[tag]["count"], N, tag)
        hrtest.check_exact(self, run, rows)
        self.check_media_totals(s, rows)
        return run, rows

    def check_media_totals(self, s, rows):
        """summary.media: each count summed over the (all valid) records
        having it, null when none has; absent when no record has any."""
        keys = ("images_in", "audio_in", "media_bytes_in", "images_out", "bytes_out")
        have = [r for r in rows if any(r[k] is not None for k in keys)]
        if not have:
            self.assertNotIn("media", s)
            return
        want = {"requests": len(have)}
        for k in keys:
            vals = [r[k] for r in rows if r[k] is not None]
            want[k] = sum(vals) if vals else None
        self.assertEqual(s["media"], want)

    def check_counts(self, rows, images, clips, n_img, n_aud, pool_img, pool_aud,
                     rec_aud=0):
        self.assertEqual(len(images), N * n_img)
        self.assertEqual(len(clips), N * n_aud)
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"]), (n_img, n_aud or rec_aud), r)
        # every byte the requests carried, and nothing else
        total = sum(len(d) for _, d in images) + sum(len(d) for d in clips)
        self.assertEqual(sum(r["media_bytes_in"] for r in rows), total)
        sizes = {len(d) for _, d in images} | {len(d) for d in clips}
        for r in rows:
            self.assertGreaterEqual(r["media_bytes_in"], n_img * min(sizes) if n_img else 0)
        distinct_img = {d for _, d in images}
        distinct_aud = set(clips)
        if n_img:
            self.assertLessEqual(len(distinct_img), pool_img)
            self.assertGreater(len(distinct_img), 1)  # drawn from the seed, not one
        if n_aud:
            self.assertLessEqual(len(distinct_aud), pool_aud)
        return distinct_img, distinct_aud

    def test_png_and_wav_streamed(self):
        sp = self.spec(images={"count": 2, "width": 64, "height": 48, "pool": 3},
                       audio={"count": 1, "duration_s": 0.25, "sample_rate": 8000,
                              "pool": 2})
        run, rows = self.run_spec(sp)
        wl = run["spec"]["workload"]
        self.assertEqual(wl["images"], {"count": 2, "width": 64, "height": 48, "pool": 3,
                                        "format": "png"})
        self.assertEqual(wl["audio"], {"count": 1, "duration_s": 0.25, "sample_rate": 8000,
                                       "pool": 2, "format": "wav"})
        images, clips = self.received()
        imgs, auds = self.check_counts(rows, images, clips, 2, 1, 3, 2)
        for head, data in images:
            self.assertEqual(head, "data:image/png;base64")
            self.assertEqual(png_size(data), (64, 48))
        for data in auds:
            with wave.open(__import__("io").BytesIO(data)) as w:
                self.assertEqual((w.getnchannels(), w.getsampwidth(), w.getframerate(),
                                  w.getnframes()), (1, 2, 8000, 2000))
        # the same seed sends the same pictures again
        run2, rows2 = self.run_spec(sp)
        images2, clips2 = self.received()
        self.assertEqual(sorted(d for _, d in images2), sorted(d for _, d in images))
        self.assertEqual(sorted((r["req_id"], r["media_bytes_in"]) for r in rows2),
                         sorted((r["req_id"], r["media_bytes_in"]) for r in rows))

    def test_jpeg_curl_not_streamed(self):
        sp = self.spec(stream=False, images={"count": 3, "width": 40, "height": 30,
                                             "format": "jpeg", "quality": 50})
        sp["target"]["transport"] = "curl"
        run, rows = self.run_spec(sp)
        self.assertEqual(run["spec"]["workload"]["images"]["pool"], 8)
        self.assertNotIn("audio", run["spec"]["workload"])
        images, clips = self.received()
        self.check_counts(rows, images, clips, 3, 0, 8, 0)
        for head, data in images:
            self.assertEqual(head, "data:image/jpeg;base64")
            self.assertEqual(jpeg_size(data), (40, 30))

    def test_audio_only(self):
        run, rows = self.run_spec(self.spec(audio={"count": 2, "duration_s": 0.1}))
        self.assertEqual(run["spec"]["workload"]["audio"]["sample_rate"], 16000)
        images, clips = self.received()
        self.check_counts(rows, images, clips, 0, 2, 0, 8)
        for data in clips:
            with wave.open(__import__("io").BytesIO(data)) as w:
                self.assertEqual((w.getframerate(), w.getnframes()), (16000, 1600))

    def test_plain_chat_unchanged(self):
        """Without media the spec stores no media fields and the records
        say not applicable (null)."""
        run, rows = self.run_spec(self.spec())
        self.assertNotIn("images", run["spec"]["workload"])
        self.assertNotIn("audio", run["spec"]["workload"])
        self.assertEqual(self.received(), ([], []))
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"], r["media_bytes_in"]),
                             (None, None, None), r)

    def test_spec_errors(self):
        cases = [
            (self.spec(endpoint="completions", images={}), "workload.images", "invalid_value"),
            (self.spec(endpoint="embeddings", stream=False, audio={}), "workload.audio",
             "invalid_value"),
            (self.spec(images=3), "workload.images", "wrong_type"),
            (self.spec(images={"count": 17}), "workload.images.count", "out_of_range"),
            (self.spec(images={"count": -1}), "workload.images.count", "out_of_range"),
            (self.spec(images={"width": 0}), "workload.images.width", "out_of_range"),
            (self.spec(images={"height": 5000}), "workload.images.height", "out_of_range"),
            (self.spec(images={"format": "gif"}), "workload.images.format", "invalid_value"),
            (self.spec(images={"quality": 50}), "workload.images.quality", "invalid_value"),
            (self.spec(images={"format": "jpeg", "quality": 101}), "workload.images.quality",
             "out_of_range"),
            (self.spec(images={"pool": 0}), "workload.images.pool", "out_of_range"),
            (self.spec(images={"colour": 1}), "workload.images.colour", "unknown_field"),
            (self.spec(images={"count": 16, "width": 4096, "height": 4096}), "workload.images",
             "out_of_range"),
            (self.spec(images={"count": 1, "width": 4096, "height": 4096, "pool": 64}),
             "workload.images.pool", "out_of_range"),
            (self.spec(audio={"format": "mp3"}), "workload.audio.format", "invalid_value"),
            (self.spec(audio={"duration_s": 0}), "workload.audio.duration_s", "out_of_range"),
            (self.spec(audio={"sample_rate": 4000}), "workload.audio.sample_rate",
             "out_of_range"),
            (self.spec(audio={"count": 16, "duration_s": 600, "sample_rate": 48000}),
             "workload.audio", "out_of_range"),
        ]
        for sp, field, code in cases:
            st, body, _ = self.api.call("POST", "/runs", sp)
            self.assertEqual(st, 400, (field, body))
            self.assertEqual((body["error"]["field"], body["error"]["code"]), (field, code),
                             body)

    def test_dataset_media(self):
        """A single_turn dataset's image, images and audio fields go into the
        user message as given; the records count them (a URL carries 0
        bytes, a data URL its decoded bytes); an entry without media is a
        plain chat request."""
        pic = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
        clip = b"RIFF" + bytes(range(60))
        png_url = "data:image/png;base64," + base64.b64encode(pic).decode()
        lines = [
            {"text": "describe this", "image": png_url},
            {"text": "two pictures", "images": ["https://example.invalid/a.png",
                                                "data:image/jpeg;base64,/9j/AA=="]},
            {"text": "listen", "audio": "wav," + base64.b64encode(clip).decode()},
            {"text": "plain words only"},
        ]
        data = "\n".join(json.dumps(x) for x in lines).encode()
        st, ds, _ = self.api.call("POST", "/datasets?format=single_turn&name=media", raw=data)
        self.assertEqual(st, 201, ds)
        sp = self.spec()
        sp["workload"] = {"kind": "dataset", "dataset": {"id": ds["id"],
                                                         "sampling": "sequential"},
                          "osl": {"mean": OSL, "stddev": 0}}
        sp["load"] = {"mode": "concurrency", "concurrency": 1, "requests": 4}
        self.clear()
        run = self.api.wait(self.api.submit(sp), timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        rows = sorted((json.loads(x) for x in text.splitlines()), key=lambda r: r["req_id"])
        got = [(r["images_in"], r["audio_in"], r["media_bytes_in"], r["isl"]) for r in rows]
        self.assertEqual(got, [(1, 0, len(pic), 2), (2, 0, 4, 2), (0, 1, len(clip), 1),
                               (None, None, None, 3)])
        files = sorted(glob.glob(os.path.join(self.media, "*")),
                       key=lambda f: int(os.path.basename(f).split(".")[0]))
        sent = []
        for f in files:
            with open(f) as fh:
                sent.append((os.path.basename(f).split(".", 1)[1], fh.read()))
        self.clear()
        self.assertEqual(sent, [("image", png_url), ("image", "https://example.invalid/a.png"),
                                ("image", "data:image/jpeg;base64,/9j/AA=="),
                                ("audio.wav", base64.b64encode(clip).decode())])
        # malformed media fields are refused at upload, naming the field
        for bad, field in (({"text": "x", "image": 3}, "image"),
                           ({"text": "x", "images": ["u", ""]}, "images"),
                           ({"text": "x", "images": ["u"] * 17}, "images"),
                           ({"text": "x", "audio": "WAV!,AAAA"}, "audio")):
            st, body, _ = self.api.call("POST", "/datasets?format=single_turn&name=bad",
                                        raw=json.dumps(bad).encode())
            self.assertEqual(st, 400, (bad, body))
            self.assertIn(field, body["error"]["message"], body)

    def test_dataset_media_files(self):
        """A dataset naming local pictures and clips: `headroom dataset
        upload` inlines them (data: URLs, "wav,BASE64"), relative paths from
        the dataset file's directory, so the server gets the files' bytes; the
        daemon itself refuses a path, naming the field; a file that is not a
        picture is refused by the CLI, naming the line and field."""
        d = hrtest.tempdir()
        self.addCleanup(d.cleanup)
        os.makedirs(os.path.join(d.name, "pics"))
        pic = b"\x89PNG\r\n\x1a\n" + bytes(range(50))
        jpg = b"\xff\xd8\xff\xe0" + bytes(range(30))
        clip = b"RIFF\x00\x00\x00\x00WAVE" + bytes(range(20))
        for name, data in (("pics/a.png", pic), ("pics/b.jpg", jpg), ("c.wav", clip),
                           ("notes.txt", b"just words")):
            with open(os.path.join(d.name, name), "wb") as f:
                f.write(data)
        lines = [{"text": "describe this", "image": "pics/a.png"},
                 {"text": "two", "images": ["https://example.invalid/x.png",
                                            os.path.join(d.name, "pics/b.jpg")]},
                 {"text": "listen", "audio": "c.wav"},
                 {"text": "plain words only"}]
        path = os.path.join(d.name, "media.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        cli = [os.path.join(hrtest.BIN, "headroom"), "--url",
               self.api.base.rsplit("/api/v1", 1)[0], "dataset", "upload"]
        r = subprocess.run(cli + [path, "--format", "single_turn", "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = json.loads(r.stdout)
        sp = self.spec()
        sp["workload"] = {"kind": "dataset", "dataset": {"id": ds["id"],
                                                         "sampling": "sequential"},
                          "osl": {"mean": OSL, "stddev": 0}}
        sp["load"] = {"mode": "concurrency", "concurrency": 1, "requests": 4}
        self.clear()
        run = self.api.wait(self.api.submit(sp), timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        rows = sorted((json.loads(x) for x in text.splitlines()), key=lambda r: r["req_id"])
        self.assertEqual([(r["images_in"], r["audio_in"], r["media_bytes_in"]) for r in rows],
                         [(1, 0, len(pic)), (2, 0, len(jpg)), (0, 1, len(clip)),
                          (None, None, None)])
        images, clips = self.received()
        self.assertEqual(images, [("data:image/png;base64", pic),
                                  ("https://example.invalid/x.png", b""),
                                  ("data:image/jpeg;base64", jpg)])
        self.assertEqual(clips, [clip])
        # headroom profile --input-file inlines them the same way
        r = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "profile", "--print-spec",
                            "-m", "m", "--url", self.mock.addr, "--input-file", path,
                            "--custom-dataset-type", "single_turn", "--daemon",
                            self.api.base.rsplit("/api/v1", 1)[0]],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # (the same inlined bytes: the daemon finds the dataset already stored)
        self.assertEqual(json.loads(r.stdout)["workload"]["dataset"]["id"], ds["id"])
        # the daemon never reads a path of the client's machine
        for bad, field in (({"text": "x", "image": "pics/a.png"}, "image"),
                           ({"text": "x", "images": ["https://a.invalid/x", "/etc/x.png"]},
                            "images"),
                           ({"text": "x", "audio": "c.wav"}, "audio")):
            st, body, _ = self.api.call("POST", "/datasets?format=single_turn&name=bad",
                                        raw=json.dumps(bad).encode())
            self.assertEqual(st, 400, (bad, body))
            self.assertIn(field, body["error"]["message"], body)
            self.assertIn("headroom dataset upload", body["error"]["message"], body)
        # a file that is not a picture, or not there, is refused by the CLI
        for bad, word in (({"text": "x", "image": "notes.txt"}, "not a PNG, JPEG, GIF or WebP"),
                          ({"text": "x", "audio": "missing.wav"}, "cannot read the file")):
            with open(path, "w") as f:
                f.write(json.dumps({"text": "fine"}) + "\n" + json.dumps(bad) + "\n")
            r = subprocess.run(cli + [path, "--format", "single_turn"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("line 2: '%s'" % list(bad)[1], r.stderr)
            self.assertIn(word, r.stderr)

    # --- audio_transcription ------------------------------------------------------------

    def check_uploads(self, rows, seconds, rate, pool):
        clips = []
        for path in sorted(glob.glob(os.path.join(self.media, "*"))):
            self.assertTrue(path.endswith(".upload.wav"), path)
            with open(path, "rb") as f:
                clips.append(f.read())
        self.clear()
        self.assertEqual(len(clips), N)
        for data in set(clips):
            with wave.open(__import__("io").BytesIO(data)) as w:
                self.assertEqual((w.getnchannels(), w.getsampwidth(), w.getframerate(),
                                  w.getnframes()), (1, 2, rate, int(seconds * rate)))
        self.assertLessEqual(len(set(clips)), pool)
        self.assertEqual(sum(r["media_bytes_in"] for r in rows), sum(len(c) for c in clips))
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"]), (None, 1), r)

    def test_transcription_streamed(self):
        sp = self.spec(endpoint="audio_transcription",
                       audio={"duration_s": 2, "sample_rate": 16000, "pool": 3})
        sp["target"]["extra_body"] = {"language": "en", "temperature": 0}
        run, rows = self.run_spec(sp, isl=100, osl=6)
        self.check_uploads(rows, 2, 16000, 3)
        for r in rows:
            self.assertEqual((r["osl_source"], r["n_chunks"]), ("server_usage", 6), r)
            self.assertIsNone(r["requested_osl"], r)
        m = run["summary"]["metrics"]
        self.assertGreaterEqual(m["time_to_first_token"]["min"], 20 * 0.9)
        self.assertGreater(m["request_latency"]["min"], 20 + 4 * 4 * 0.9)

    def test_transcription_whole_curl(self):
        """Not streamed: a whole answer, as chat's (no first token), its
        transcript the output; the clip described by defaults when the spec
        gives none."""
        sp = self.spec(stream=False, endpoint="audio_transcription")
        sp["workload"]["seed"] = 3
        sp["target"]["transport"] = "curl"
        run, rows = self.run_spec(sp, isl=250, osl=15)
        self.assertEqual(run["spec"]["workload"]["audio"], {
            "count": 1, "duration_s": 5, "sample_rate": 16000, "format": "wav", "pool": 8})
        self.check_uploads(rows, 5, 16000, 8)
        for r in rows:
            # the transcript is the output: its length from the answer's
            # usage (the mock writes 3 words a second of audio)
            self.assertEqual((r["osl_source"], r["osl"], r["n_chunks"]),
                             ("server_usage", 15, 0), r)
            self.assertIsNone(r["time_to_first_token"], r)
        m = run["summary"]["metrics"]
        self.assertEqual(m["inter_token_latency"]["count"], 0)
        self.assertEqual(m["time_to_first_token"]["count"], 0)
        self.assertGreaterEqual(m["request_latency"]["min"], 20 * 0.9)

    def test_transcription_faults(self):
        """Injected 500s and malformed events (streamed) or bodies (whole):
        http_5xx and malformed_stream, exactly as the mock draws them."""
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        self.assertTrue(expected["500"] and expected["malformed"] and expected[None])
        for stream in (True, False):
            with self.subTest(stream=stream):
                mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                         "--fail-seed", str(seed), "--quiet")
                try:
                    sp = self.spec(stream=stream, endpoint="audio_transcription",
                                   audio={"duration_s": 1})
                    sp["target"]["url"] = "http://" + mock.addr
                    sp["load"]["concurrency"] = 1  # the mock numbers requests in order
                    run = self.api.wait(self.api.submit(sp), timeout=120)
                    st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl"
                                                % run["id"])
                    rows = [json.loads(line) for line in text.splitlines()]
                finally:
                    self.assertEqual(mock.stop(), 0)
                s = run["summary"]
                self.assertEqual(s["counts"]["valid"], expected[None])
                self.assertEqual(s["errors"], {"http_5xx": expected["500"],
                                               "malformed_stream": expected["malformed"]})
                for r in rows:
                    if r["error"] == "malformed_stream":
                        self.assertEqual(r["status"], 200)
                        self.assertIn("not JSON", r["error_message"])

    def test_transcription_spec_errors(self):
        ep = "audio_transcription"
        cases = [
            (self.spec(endpoint=ep, audio={"count": 2}), "workload.audio.count",
             "invalid_value"),
            (self.spec(endpoint=ep, images={}), "workload.images", "invalid_value"),
            (dict(self.spec(endpoint=ep), target=dict(self.spec(endpoint=ep)["target"],
                                                      extra_body={"language": ["en"]})),
             "target.extra_body.language", "invalid_value"),
            (dict(self.spec(endpoint=ep), target=dict(self.spec(endpoint=ep)["target"],
                                                      extra_body={"file": "x"})),
             "target.extra_body.file", "invalid_value"),
            (dict(self.spec(endpoint=ep), workload=dict(self.spec(endpoint=ep)["workload"],
                                                        sessions={"turns": {"mean": 2}})),
             "workload.sessions", "invalid_value"),
        ]
        for sp, field, code in cases:
            st, body, _ = self.api.call("POST", "/runs", sp)
            self.assertEqual(st, 400, (field, body))
            self.assertEqual((body["error"]["field"], body["error"]["code"]), (field, code),
                             body)

    # --- image_generation, image_edit ---------------------------------------------------

    def check_images(self, run, rows, n_out):
        window_s = (max(r["end_ns"] for r in rows) - min(r["start_ns"] for r in rows)) / 1e9
        m = run["summary"]["metrics"]
        self.assertEqual(m["image_throughput"], {"unit": "images/sec",
                                                 "avg": n_out * N / window_s})
        self.assertEqual(m["inter_token_latency"]["count"], 0)
        for r in rows:
            self.assertEqual((r["images_out"], r["n_chunks"], r["osl_source"]),
                             (n_out, 1, "requested"), r)
            self.assertGreater(r["bytes_out"], 100 * n_out, r)
            self.assertEqual(r["end_ns"], r["done_ns"], r)

    def test_image_generation(self):
        sp = self.spec(stream=False, endpoint="image_generation")
        sp["target"]["extra_body"] = {"n": 2, "size": "48x32", "quality": "low"}
        run, rows = self.run_spec(sp, isl=ISL, osl=0)
        self.assertNotIn("images", run["spec"]["workload"])
        self.check_images(run, rows, 2)
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"], r["media_bytes_in"]),
                             (None, None, None), r)
        # 2 pictures of 16 steps each: the TTFT and 31 steps at the ITL
        m = run["summary"]["metrics"]
        self.assertGreaterEqual(m["time_to_first_token"]["min"], (20 + 31 * 4) * 0.9)
        self.assertEqual(self.received(), ([], []))
        # image_throughput is a figure of the comparison catalogue: a gate
        # on it, and a comparison with a run of one picture per request
        # (half the pictures in about half the time per request)
        one = self.spec(stream=False, endpoint="image_generation")
        one["target"]["extra_body"] = {"n": 1, "size": "48x32", "quality": "low"}
        one["gates"] = [{"metric": "image_throughput", "op": ">", "value": 0},
                        {"metric": "image_throughput", "op": ">", "value": 1e9}]
        run1, _ = self.run_spec(one, isl=ISL, osl=0)
        g = run1["summary"]["gates"]
        self.assertEqual([(r["name"], r["passed"]) for r in g["results"]],
                         [("image_throughput.value > 0", True),
                          ("image_throughput.value > 1000000000", False)], g)
        self.assertEqual(run1["gates"], "failed")
        st, c, _ = self.api.call("GET", "/compare?base=%d&head=%d&metric=image_throughput"
                                 % (run["id"], run1["id"]))
        self.assertEqual(st, 200, c)
        [e] = [e for e in c["metrics"] if e["metric"] == "image_throughput"]
        self.assertEqual((e["stat"], e["unit"]), ("value", "images/sec"), e)
        self.assertEqual((e["base"], e["head"]),
                         (m["image_throughput"]["avg"],
                          run1["summary"]["metrics"]["image_throughput"]["avg"]), e)
        self.assertEqual(e["method"], "batch_means", e)

    def test_image_generation_streamed(self):
        """Streamed: two partial pictures and the completed one are the
        chunks; OSL is the usage's steps, images_out the completed one."""
        sp = self.spec(stream=True, endpoint="image_generation")
        sp["target"]["extra_body"] = {"size": "16x16", "partial_images": 2}
        run, rows = self.run_spec(sp, isl=ISL, osl=16)
        for r in rows:
            self.assertEqual((r["n_chunks"], r["images_out"], r["osl_source"]),
                             (3, 1, "server_usage"), r)
            # partial pictures after steps 5 and 10, the last after step 16.
            # The mock sends step s at ttft + (s - 1) x itl after the request
            # arrived and never early, but a late step shortens the gap to the
            # next one (its times are absolute), so judge each chunk's offset
            # from start_ns against its step's time, not the gaps between them.
            steps = [5, 10, 16]
            for off, step in zip(r["chunk_offsets_ns"], steps):
                self.assertGreaterEqual(off / 1e6, 20 + (step - 1) * 4 - 0.5, (step, r))
        # bytes_out: the stream's body bytes; the same stream asked for
        # directly (another prompt of the same length: only the digits of
        # its numbers may differ)
        body = dict(sp["target"]["extra_body"], model="m", stream=True, n=1,
                    response_format="b64_json", prompt=" ".join(["word"] * ISL))
        req = urllib.request.Request("http://%s/v1/images/generations" % self.mock.addr,
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            direct = len(resp.read())
        self.assertGreater(direct, 3 * 100)  # three pictures' base64 and their events
        for r in rows:
            self.assertLessEqual(abs(r["bytes_out"] - direct), 32, (direct, r))
        m = run["summary"]["metrics"]
        self.assertEqual(m["image_throughput"]["avg"],
                         N / ((max(r["end_ns"] for r in rows) -
                               min(r["start_ns"] for r in rows)) / 1e9))
        self.assertGreaterEqual(m["time_to_first_token"]["min"], (20 + 4 * 4) * 0.9)
        # and a malformed partial picture is malformed_stream
        mock = hrtest.start_mock("--fail-malformed", "1", "--quiet")
        try:
            sp["target"]["url"] = "http://" + mock.addr
            run = self.api.wait(self.api.submit(sp), timeout=120)
        finally:
            self.assertEqual(mock.stop(), 0)
        self.assertEqual(run["summary"]["errors"], {"malformed_stream": N})

    def test_image_edit_curl(self):
        sp = self.spec(stream=False, endpoint="image_edit",
                       images={"width": 40, "height": 30, "pool": 2})
        sp["target"]["transport"] = "curl"
        run, rows = self.run_spec(sp, isl=ISL + 256, osl=0)
        self.assertEqual(run["spec"]["workload"]["images"], {
            "count": 1, "width": 40, "height": 30, "format": "png", "pool": 2})
        self.check_images(run, rows, 1)
        ups = []
        for path in sorted(glob.glob(os.path.join(self.media, "*"))):
            self.assertTrue(path.endswith(".edit.png"), path)
            with open(path, "rb") as f:
                ups.append(f.read())
        self.clear()
        self.assertEqual(len(ups), N)
        self.assertLessEqual(len(set(ups)), 2)
        for data in set(ups):
            self.assertEqual(png_size(data), (40, 30))
        self.assertEqual(sum(r["media_bytes_in"] for r in rows), sum(len(u) for u in ups))
        for r in rows:
            self.assertEqual((r["images_in"], r["audio_in"]), (1, None), r)

    def test_image_edit_streamed(self):
        """A streamed edit: image_edit.partial_image events and the
        completed one are the chunks (as a streamed generation), the upload
        counted as for a whole edit, bytes_out the stream's bytes; a
        malformed partial picture is malformed_stream."""
        sp = self.spec(stream=True, endpoint="image_edit",
                       images={"width": 24, "height": 24, "pool": 1})
        sp["target"]["extra_body"] = {"size": "16x16", "partial_images": 1}
        run, rows = self.run_spec(sp, isl=ISL + 256, osl=16)
        ups = glob.glob(os.path.join(self.media, "*.edit.png"))
        self.clear()
        self.assertEqual(len(ups), N)
        for r in rows:
            self.assertEqual((r["n_chunks"], r["images_out"], r["osl_source"], r["images_in"]),
                             (2, 1, "server_usage", 1), r)
            self.assertGreater(r["bytes_out"], 2 * 100, r)
            # the partial picture after step 8, the completed one after 16
            for off, step in zip(r["chunk_offsets_ns"], [8, 16]):
                self.assertGreaterEqual(off / 1e6, 20 + (step - 1) * 4 - 0.5, (step, r))
        mock = hrtest.start_mock("--fail-malformed", "1", "--quiet")
        try:
            sp["target"]["url"] = "http://" + mock.addr
            run = self.api.wait(self.api.submit(sp), timeout=120)
        finally:
            self.assertEqual(mock.stop(), 0)
        self.assertEqual(run["summary"]["errors"], {"malformed_stream": N})

    def test_image_faults(self):
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        for ep in ("image_generation", "image_edit"):
            with self.subTest(endpoint=ep):
                mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                         "--fail-seed", str(seed), "--quiet")
                try:
                    sp = self.spec(stream=False, endpoint=ep)
                    if ep == "image_edit":
                        sp["workload"]["images"] = {"width": 16, "height": 16}
                    sp["target"]["url"] = "http://" + mock.addr
                    sp["target"]["extra_body"] = {"size": "16x16"}
                    sp["load"]["concurrency"] = 1
                    run = self.api.wait(self.api.submit(sp), timeout=120)
                finally:
                    self.assertEqual(mock.stop(), 0)
                s = run["summary"]
                self.assertEqual(s["counts"]["valid"], expected[None])
                self.assertEqual(s["errors"], {"http_5xx": expected["500"],
                                               "malformed_stream": expected["malformed"]})

    def test_image_spec_errors(self):
        cases = [
            (self.spec(endpoint="image_edit", stream=False, images={"count": 2}),
             "workload.images.count", "invalid_value"),
            (self.spec(endpoint="image_generation", stream=False, images={}),
             "workload.images", "invalid_value"),
            (self.spec(endpoint="image_retrieval", stream=True), "target.stream",
             "invalid_value"),
        ]
        sp = self.spec(endpoint="image_edit", stream=False)
        sp["target"]["extra_body"] = {"prompt": "x"}
        cases.append((sp, "target.extra_body.prompt", "invalid_value"))
        for sp, field, code in cases:
            st, body, _ = self.api.call("POST", "/runs", sp)
            self.assertEqual(st, 400, (field, body))
            self.assertEqual((body["error"]["field"], body["error"]["code"]), (field, code),
                             body)

    # --- image_retrieval ----------------------------------------------------------------

    def test_image_retrieval(self):
        sp = self.spec(stream=False, endpoint="image_retrieval",
                       images={"count": 2, "width": 24, "height": 24, "format": "jpeg",
                               "pool": 4})
        run, rows = self.run_spec(sp, isl=None, osl=0, isl_source="none")
        images, clips = self.received()
        self.check_counts(rows, images, clips, 2, 0, 4, 0, rec_aud=None)
        for head, data in images:
            self.assertEqual(head, "data:image/jpeg;base64")
            self.assertEqual(jpeg_size(data), (24, 24))
        for r in rows:
            self.assertEqual((r["n_chunks"], r["images_out"], r["audio_in"]), (1, None, None))
        # the default: one 512 x 512 PNG, described in the stored spec
        st, body, _ = self.api.call("POST", "/runs", dict(self.spec(
            stream=False, endpoint="image_retrieval"), name="default images"))
        self.assertEqual(st, 201, body)
        run = self.api.wait(body["id"], timeout=120)
        self.assertEqual(run["spec"]["workload"]["images"], {
            "count": 1, "width": 512, "height": 512, "format": "png", "pool": 8})
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        self.clear()
        st, body, _ = self.api.call("POST", "/runs", self.spec(
            stream=False, endpoint="image_retrieval", images={"count": 0}))
        self.assertEqual((st, body["error"]["field"]), (400, "workload.images.count"), body)

    def test_image_retrieval_faults(self):
        """Injected 500s and malformed bodies on image_retrieval: http_5xx and
        malformed_stream, exactly as the mock draws them; every request
        still carried its pictures; the valid rest's statistics are its
        records', exactly."""
        probs = {"500": 0.25, "malformed": 0.25}
        seed = 11
        expected = collections.Counter(fault_draw(seed, n, probs) for n in range(1, N + 1))
        self.assertTrue(expected["500"] and expected["malformed"] and expected[None])
        for tr in ("native", "curl"):
            with self.subTest(transport=tr):
                mock = hrtest.start_mock("--fail-500", "0.25", "--fail-malformed", "0.25",
                                         "--fail-seed", str(seed), "--quiet")
                try:
                    sp = self.spec(stream=False, endpoint="image_retrieval",
                                   images={"count": 2, "width": 16, "height": 16,
                                           "format": "png", "pool": 2})
                    sp["target"]["url"] = "http://" + mock.addr
                    sp["target"]["transport"] = tr
                    sp["load"]["concurrency"] = 1  # the mock numbers requests in order
                    self.check_schema(sp)
                    run = self.api.wait(self.api.submit(sp), timeout=120)
                    st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl"
                                                % run["id"])
                    self.assertEqual(st, 200)
                    rows = [json.loads(line) for line in text.splitlines()]
                finally:
                    self.assertEqual(mock.stop(), 0)
                self.assertEqual(run["state"], "succeeded", run.get("reason"))
                s = run["summary"]
                self.assertEqual((s["counts"]["requests"], s["counts"]["valid"]),
                                 (N, expected[None]))
                self.assertEqual(s["errors"], {"http_5xx": expected["500"],
                                               "malformed_stream": expected["malformed"]})
                self.assertEqual(len(rows), N)
                for r in rows:
                    self.assertEqual(r["images_in"], 2, r)  # sent whatever came back
                    if r["error"] == "http_5xx":
                        self.assertEqual(r["status"], 500, r)
                        self.assertFalse(r["valid"], r)
                    elif r["error"] == "malformed_stream":
                        self.assertEqual(r["status"], 200, r)
                        self.assertIn("not JSON", r["error_message"])
                    else:
                        self.assertEqual((r["status"], r["error"], r["valid"]), (200, "", True),
                                         r)
                        self.assertEqual((r["n_chunks"], r["osl"]), (1, 0), r)
                hrtest.check_exact(self, run, rows)

    def test_mock_refuses_malformed_parts(self):
        def post(content):
            body = json.dumps({"model": "mock-model", "max_tokens": 2, "messages": [
                {"role": "user", "content": content}]}).encode()
            req = urllib.request.Request("http://%s/v1/chat/completions" % self.mock.addr,
                                         data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as f:
                    return f.status, json.loads(f.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())
        text = {"type": "text", "text": "a b c"}
        for bad in ({"type": "image_url"}, {"type": "image_url", "image_url": {"url": 3}},
                    {"type": "image_url", "image_url": {"url": ""}},
                    {"type": "input_audio", "input_audio": {"data": "AAAA"}},
                    {"type": "input_audio", "input_audio": "AAAA"}):
            st, body = post([text, bad])
            self.assertEqual(st, 400, bad)
            self.assertIn("content part", body["error"]["message"])
        st, body = post([text, {"type": "image_url", "image_url": "data:image/png;base64,AA"},
                         {"type": "input_audio", "input_audio": {"data": "AA",
                                                                 "format": "wav"}}])
        self.assertEqual(st, 200, body)
        self.assertEqual(body["usage"]["prompt_tokens"], 3)  # the text part only
        self.clear()


if __name__ == "__main__":
    unittest.main()
