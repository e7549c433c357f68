#!/usr/bin/env python3
"""test_profile.py - `headroom profile`: AIPerf's flags become a run spec
(checked with --print-spec, flag by flag), flags for features headroom does
not have are refused naming the flag, and real runs go end to end through
headroomd, a worker and headroom-mock: synthetic streaming at a
concurrency, a Mooncake trace from --input-file, and --public-dataset
sharegpt from a local copy (--input-file or $HEADROOM_PUBLIC_DATASET_DIR),
uploaded as a dataset (whole, or cut down to first prompts and replies
when over the daemon's bound).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_profile.py
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

CLI = os.path.join(hrtest.BIN, "headroom")


def profile(*args, env=None):
    return subprocess.run([CLI, "profile", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def spec_of(*args):
    r = profile("--print-spec", *args)
    if r.returncode != 0:
        raise AssertionError("exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)


def byte_tokenizer():
    """A small Hugging Face tokenizer.json: byte-level BPE with one token
    per byte and one merge (" a": prompts of exact lengths need a piece of
    the corpus that is a single token)."""
    printable = (list(range(0x21, 0x7f)) + list(range(0xa1, 0xad)) +
                 list(range(0xae, 0x100)))
    chars, extra = {}, 0
    for b in range(256):  # the byte-to-unicode table of byte-level BPE
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    vocab = {chars[b]: b for b in range(256)}
    vocab[chars[0x20] + "a"] = 256
    return {"model": {"type": "BPE", "vocab": vocab, "merges": [chars[0x20] + " a"]},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False}}


class FlagsTest(unittest.TestCase):
    def test_concurrency_defaults(self):
        s = spec_of("-m", "llama", "--url", "localhost:8000/")
        self.assertEqual(s["target"], {"url": "http://localhost:8000", "model": "llama",
                                       "endpoint": "chat", "stream": False})
        self.assertEqual(s["load"], {"mode": "concurrency", "concurrency": 1, "requests": 10})
        self.assertEqual(s["labels"], {"from": "aiperf-flags"})
        # AIPerf judges no validity: neither does a profile run unless asked
        self.assertEqual(s["validity"], {"percentile": "none"})
        s = spec_of("-m", "llama", "--validity-percentile", "p95")
        self.assertEqual(s["validity"], {"percentile": "p95"})

    def test_rate_with_ceiling_and_inputs(self):
        s = spec_of("--model", "m", "--url", "https://srv:9000", "--endpoint-type",
                    "completions", "--streaming", "--request-rate", "12.5",
                    "--arrival-pattern", "gamma", "--arrival-smoothness", "0.5",
                    "--concurrency", "32", "--benchmark-duration", "30",
                    "--benchmark-grace-period", "5", "--isl", "512", "--isl-stddev", "10",
                    "--output-tokens-mean", "128", "--warmup-request-count", "4",
                    "--random-seed", "9", "--extra-inputs", "ignore_eos:true",
                    "--extra-inputs", "min_tokens:128", "--extra-inputs", '{"top_k": 5}',
                    "-H", "Authorization: Bearer x", "--request-timeout-seconds", "60",
                    "--workers-max", "3", "--name", "rate run")
        self.assertEqual(s["name"], "rate run")
        self.assertEqual(s["target"]["url"], "https://srv:9000")
        self.assertEqual(s["target"]["endpoint"], "completions")
        self.assertTrue(s["target"]["stream"])
        self.assertEqual(s["target"]["timeout_s"], 60)
        self.assertEqual(s["target"]["headers"], {"Authorization": "Bearer x"})
        self.assertEqual(s["target"]["extra_body"],
                         {"ignore_eos": True, "min_tokens": 128, "top_k": 5})
        self.assertEqual(s["load"], {"mode": "rate", "rate": 12.5, "arrival": "gamma",
                                     "smoothness": 0.5, "max_concurrency": 32,
                                     "duration_s": 30, "grace_s": 5})
        self.assertEqual(s["workload"], {"seed": 9, "isl": {"mean": 512, "stddev": 10},
                                         "osl": {"mean": 128, "stddev": 0}})
        self.assertEqual(s["warmup"], {"requests": 4})
        self.assertEqual(s["workers"], 3)

    def test_tokenizer_counts_as_aiperf_does(self):
        tok = os.path.abspath(__file__)  # any readable file: the spec is only printed
        s = spec_of("-m", "m", "--tokenizer", tok)
        self.assertEqual(s["workload"]["tokenizer"], tok)
        self.assertEqual(s["workload"]["token_count"], {"isl": "tokenizer", "osl": "tokenizer"})
        s = spec_of("-m", "m", "--tokenizer", tok, "--use-server-token-count")
        self.assertNotIn("token_count", s["workload"])
        self.assertNotIn("token_count", spec_of("-m", "m")["workload"])
        s = spec_of("-m", "m", "--prompt-input-tokens-block-size", "64")
        self.assertEqual(s["workload"]["block_size"], 64)
        self.assertEqual(spec_of("-m", "m", "--isl-block-size", "8")["workload"]["block_size"], 8)

    def test_refused_and_bad_flags_name_the_flag(self):
        cases = [
            (["-m", "x", "--goodput", "time_to_first_token"], "--goodput"),
            (["-m", "x", "--goodput", "time_to_first_token:-1"], "--goodput"),
            (["-m", "x", "--public-dataset", "sharegpt", "--input-file", "/nonexistent.json"],
             "--input-file"),
            (["-m", "x", "--endpoint-type", "dall_e"], "--endpoint-type"),
            (["-m", "x", "--endpoint-type", "embeddings", "--streaming"], "--streaming"),
            (["-m", "x", "--input-file", "f", "--custom-dataset-type", "openorca"],
             "--custom-dataset-type"),
            (["-m", "x", "--input-file", "/nonexistent.jsonl", "--custom-dataset-type",
              "multi_turn"], "--input-file"),
            (["-m", "x", "--custom-dataset-type", "single_turn"], "--input-file"),
            (["-m", "x", "--concurrency", "0"], "--concurrency"),
            (["-m", "x", "--request-rate", "abc"], "--request-rate"),
            (["-m", "x", "--arrival-pattern", "gamma"], "--arrival-pattern"),
            (["-m", "x", "--request-rate", "5", "--arrival-pattern", "zipf"],
             "--arrival-pattern"),
            (["-m", "x", "--extra-inputs", "novalue"], "--extra-inputs"),
            (["-m", "x", "-H", "NoColon"], "-H"),
            (["-m", "x", "--frobnicate"], "--frobnicate"),
            (["--url", "x"], "--model"),
            (["-m", "x", "-m", "y"], "--model"),
            (["-m", "x", "--concurrency"], "--concurrency"),
            (["-m", "x", "--input-file", "/nonexistent/trace.jsonl"], "--input-file"),
        ]
        for args, flag in cases:
            r = profile("--print-spec", *args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertTrue(r.stderr.startswith("headroom profile: %s:" % flag),
                            (args, r.stderr))
            self.assertEqual(r.stdout, "")

    def test_public_dataset_errors(self):
        env = {k: v for k, v in os.environ.items() if k != "HEADROOM_PUBLIC_DATASET_DIR"}
        r = profile("--print-spec", "-m", "x", "--public-dataset", "c4", env=env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertTrue(r.stderr.startswith("headroom profile: --public-dataset: 'c4' is not "
                                            "supported (supported: sharegpt)"), r.stderr)
        # no local copy: says how to give one
        r = profile("--print-spec", "-m", "x", "--public-dataset", "sharegpt", env=env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertTrue(r.stderr.startswith("headroom profile: --public-dataset: "), r.stderr)
        for what in ("--input-file", "HEADROOM_PUBLIC_DATASET_DIR",
                     "ShareGPT_V3_unfiltered_cleaned_split.json"):
            self.assertIn(what, r.stderr)
        with tempfile.TemporaryDirectory() as d:
            env["HEADROOM_PUBLIC_DATASET_DIR"] = d
            r = profile("--print-spec", "-m", "x", "--public-dataset", "sharegpt", env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(os.path.join(d, "ShareGPT_V3_unfiltered_cleaned_split.json"), r.stderr)
        r = profile("--print-spec", "-m", "x", "--public-dataset", "sharegpt", "--input-file",
                    __file__, "--custom-dataset-type", "mooncake_trace")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertTrue(r.stderr.startswith("headroom profile: --custom-dataset-type:"), r.stderr)
        # checked before the daemon is asked
        r = profile("--print-spec", "-m", "x", "--public-dataset", "sharegpt", "--input-file",
                    __file__, "--daemon", "http://127.0.0.1:%d" % hrtest.closed_port())
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("cannot upload", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_goodput(self):
        s = spec_of("-m", "m", "--goodput",
                    "time_to_first_token:100 inter_token_latency:3.40,request_latency:900")
        self.assertEqual(s["goodput"], {"time_to_first_token": 100, "inter_token_latency": 3.4,
                                        "request_latency": 900})

    def test_endpoint_types(self):
        for aiperf, ours in (("embeddings", "embeddings"), ("rankings", "rankings_nim"),
                             ("cohere_rankings", "rankings_cohere"),
                             ("hf_tei_rankings", "rankings_tei"),
                             ("huggingface_generate", "tgi"),
                             ("anthropic_messages", "messages"), ("messages", "messages"),
                             # headroom's own names are taken too
                             ("tei_embeddings", "tei_embeddings"),
                             ("rankings_nim", "rankings_nim")):
            s = spec_of("-m", "m", "--endpoint-type", aiperf)
            self.assertEqual(s["target"]["endpoint"], ours)
        # every type but the template (it needs a spec) is listed by --help
        r = profile("--help")
        listed = r.stdout.split("--endpoint-type TYPE", 1)[1].split("--endpoint PATH", 1)[0]
        for ours in ("chat", "completions", "embeddings", "responses", "messages", "raw",
                     "audio_transcription", "image_generation", "image_edit", "image_retrieval",
                     "chat_embeddings", "tei_embeddings", "rankings_nim", "nim_embeddings",
                     "cohere_embeddings", "vllm_generate", "sglang_generate"):
            self.assertIn(ours, listed)
        r = profile("--print-spec", "-m", "m", "--endpoint-type", "template")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("template endpoint needs a spec", r.stderr)

    def test_custom_endpoint_path(self):
        s = spec_of("-m", "m", "--endpoint", "/openai/deployments/d1/chat/completions?api-version=1")
        self.assertEqual(s["target"]["path"], "/openai/deployments/d1/chat/completions?api-version=1")
        self.assertEqual(s["target"]["endpoint"], "chat")

    def test_help(self):
        r = profile("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--request-rate", r.stdout)


class EndToEndTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "1"))

    def test_synthetic_streaming(self):
        r = profile("-m", "mock-model", "--url", self.mock.addr, "--streaming",
                    "--concurrency", "4", "--request-count", "24", "--isl", "16", "--osl", "8",
                    "--warmup-request-count", "4", "--daemon", "http://" + self.daemon.addr)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rid = int(r.stdout.split()[1])
        self.assertIn("Run %d:" % rid, r.stdout)
        st, run, _ = self.api.call("GET", "/runs/%d" % rid)
        self.assertEqual(run["state"], "succeeded")
        self.assertEqual(run["summary"]["counts"]["valid"], 24)
        self.assertEqual(run["summary"]["counts"]["warmup"], 4)
        self.assertEqual(run["summary"]["metrics"]["output_sequence_length"]["avg"], 8)
        self.assertEqual(run["labels"], {"from": "aiperf-flags"})

    def test_mooncake_trace(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for i in range(10):
                f.write(json.dumps({"timestamp": i * 20, "input_length": 12,
                                    "output_length": 4}) + "\n")
            path = f.name
        try:
            env = dict(os.environ, HEADROOM_URL="http://" + self.daemon.addr)
            r = profile("-m", "mock-model", "--url", "http://" + self.mock.addr,
                        "--streaming", "--input-file", path, "--custom-dataset-type",
                        "mooncake_trace", "--fixed-schedule", env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            rid = int(r.stdout.split()[1])
            st, run, _ = self.api.call("GET", "/runs/%d" % rid)
            self.assertEqual(run["spec"]["load"]["mode"], "trace")
            self.assertEqual(run["summary"]["counts"]["valid"], 10)
            r = profile("-m", "mock-model", "--url", "http://" + self.mock.addr, "--print-spec",
                        "--input-file", path, "--custom-dataset-type", "mooncake_trace",
                        "--request-rate", "5", env=env)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("--request-rate: a trace replays at its own timestamps", r.stderr)
        finally:
            os.unlink(path)

    def test_tokenizer_relative_path(self):
        """--tokenizer FILE relative to where profile runs reaches the daemon
        as a full path: prompts of exact lengths, counted as AIPerf does."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bytes.json"), "w") as f:
                json.dump(byte_tokenizer(), f)  # one token per byte
            mock = hrtest.start_mock("--quiet", "--tokenizer", os.path.join(d, "bytes.json"))
            try:
                r = subprocess.run(
                    [CLI, "profile", "-m", "mock-model", "--url", mock.addr, "--streaming",
                     "--tokenizer", "bytes.json", "--isl", "37", "--osl", "5",
                     "--request-count", "4", "--no-wait",
                     "--daemon", "http://" + self.daemon.addr],
                    capture_output=True, text=True, timeout=120, cwd=d)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                # (waited for here: the verdict of so short a run under the
                # sanitizers is not this test's business)
                rid = int(r.stdout.split()[1])
                run = self.api.wait(rid)
                self.assertEqual(run["state"], "succeeded", run.get("reason"))
                self.assertEqual(run["spec"]["workload"]["tokenizer"],
                                 os.path.realpath(os.path.join(d, "bytes.json")))
                st, text, _ = self.api.call("GET", "/runs/%d/records" % rid)
                recs = [json.loads(x) for x in text.splitlines()]
                self.assertEqual(len(recs), 4)
                for rec in recs:
                    self.assertEqual((rec["isl_source"], rec["isl"], rec["usage_isl"]),
                                     ("tokenizer", 37, 37), rec)
                    self.assertEqual(rec["osl_source"], "tokenizer")
            finally:
                self.assertEqual(mock.stop(), 0)

    def test_custom_datasets(self):
        """single_turn (with --fixed-schedule: its timestamps) and multi_turn
        files are uploaded as datasets and drive runs."""
        with tempfile.TemporaryDirectory() as d:
            single = os.path.join(d, "single.jsonl")
            with open(single, "w") as f:
                for i, words in enumerate(("a b c", "d e", "f g h i")):
                    f.write(json.dumps({"text": words, "timestamp": 30 * (2 - i),
                                        "output_length": 2}) + "\n")
            multi = os.path.join(d, "multi.jsonl")
            with open(multi, "w") as f:
                f.write(json.dumps({"session_id": "s", "turns": [
                    {"text": "hello there", "output_length": 3},
                    {"text": "and again", "output_length": 3}]}) + "\n")
            base = ["-m", "mock-model", "--url", self.mock.addr, "--streaming",
                    "--daemon", "http://" + self.daemon.addr]
            r = profile(*base, "--input-file", single, "--custom-dataset-type", "single_turn",
                        "--fixed-schedule")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("(single_turn, 3 entries)", r.stderr)
            r2 = profile(*base, "--input-file", single, "--custom-dataset-type", "single_turn",
                         "--fixed-schedule", "--request-rate", "5")
            self.assertEqual(r2.returncode, 2, r2.stdout + r2.stderr)
            self.assertIn("--request-rate: a fixed schedule replays at its own timestamps",
                          r2.stderr)
            st, run, _ = self.api.call("GET", "/runs/%d" % int(r.stdout.split()[1]))
            self.assertEqual(run["spec"]["load"]["mode"], "trace")
            self.assertEqual(run["spec"]["workload"]["dataset"]["format"], "single_turn")
            st, text, _ = self.api.call("GET", "/runs/%d/records" % run["id"])
            recs = sorted((json.loads(x) for x in text.splitlines()),
                          key=lambda x: x["req_id"])
            self.assertEqual([x["isl"] for x in recs], [4, 2, 3])  # by timestamp
            r = profile(*base, "--input-file", multi, "--custom-dataset-type", "multi_turn",
                        "--request-count", "4")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            st, run, _ = self.api.call("GET", "/runs/%d" % int(r.stdout.split()[1]))
            self.assertEqual(run["spec"]["load"]["mode"], "concurrency")
            self.assertEqual(run["summary"]["counts"]["valid"], 4)

    def sharegpt_file(self, directory, name="sharegpt.json"):
        """A small ShareGPT file: 5 usable pairs (the replies' word counts
        are their max_tokens), one element without a pair."""
        replies = ["one two three", "a b c d e", "x y", "p q r s t u v", "solo"]
        data = [{"id": "c%d" % i, "conversations": [
            {"from": "human", "value": "question number %d please" % i},
            {"from": "gpt", "value": r},
            {"from": "human", "value": "and a follow-up that is not used"}]}
            for i, r in enumerate(replies)]
        data[3]["conversations"].insert(0, {"from": "system", "value": "be brief"})
        data.append({"id": 99, "conversations": [{"from": "gpt", "value": "no prompt"}]})
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
        return path, [len(r.split()) for r in replies]

    def dataset_of(self, stderr):
        """The dataset id `profile` reported uploading."""
        line = [l for l in stderr.splitlines() if " is dataset " in l][0]
        return int(line.split(" is dataset ")[1].split()[0])

    def test_public_sharegpt(self):
        with tempfile.TemporaryDirectory() as d:
            path, lens = self.sharegpt_file(d)
            r = profile("-m", "mock-model", "--url", self.mock.addr, "--streaming",
                        "--public-dataset", "sharegpt", "--input-file", path,
                        "--concurrency", "2", "--request-count", "8",
                        "--daemon", "http://" + self.daemon.addr)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            ds_id = self.dataset_of(r.stderr)
            rid = int(r.stdout.split()[1])
            st, run, _ = self.api.call("GET", "/runs/%d" % rid)
            self.assertEqual(run["state"], "succeeded")
            wl = run["spec"]["workload"]
            self.assertEqual(wl["kind"], "dataset")
            self.assertEqual(wl["dataset"]["id"], ds_id)
            self.assertEqual(wl["dataset"]["format"], "sharegpt")
            with open(path, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            self.assertEqual(wl["dataset"]["sha256"], sha)
            st, ds, _ = self.api.call("GET", "/datasets/%d" % ds_id)
            self.assertEqual((ds["format"], ds["entries"], ds["sha256"], ds["name"]),
                             ("sharegpt", 5, sha, "sharegpt.json"))
            self.assertEqual(run["summary"]["counts"]["valid"], 8)
            # the replies' lengths are the requests' output lengths, in file order
            osl = run["summary"]["metrics"]["output_sequence_length"]
            self.assertAlmostEqual(osl["avg"], sum((lens * 2)[:8]) / 8)
            self.assertEqual(osl["max"], max(lens))

            # the same file from $HEADROOM_PUBLIC_DATASET_DIR: the same dataset,
            # uploaded by --print-spec too, so that the spec names it
            os.rename(path, os.path.join(d, "ShareGPT_V3_unfiltered_cleaned_split.json"))
            env = dict(os.environ, HEADROOM_PUBLIC_DATASET_DIR=d,
                       HEADROOM_URL="http://" + self.daemon.addr)
            r = profile("--print-spec", "-m", "mock-model", "--public-dataset", "sharegpt",
                        "--request-rate", "5", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            spec = json.loads(r.stdout)
            self.assertEqual(spec["workload"], {"kind": "dataset", "dataset": {"id": ds_id}})
            self.assertEqual(spec["load"]["mode"], "rate")
            self.assertEqual(spec["load"]["requests"], 10)

    def test_public_sharegpt_refused_by_daemon(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('[{"conversations": [{"from": "human", "value": "hi"},\n'
                    ' {"from": "gpt", "value": 3}]}]\n')
            path = f.name
        try:
            r = profile("--print-spec", "-m", "mock-model", "--public-dataset", "sharegpt",
                        "--input-file", path, "--daemon", "http://" + self.daemon.addr)
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertIn("the daemon refused %s as a sharegpt dataset" % path, r.stderr)
            self.assertIn("'conversations[1].value' must be a string", r.stderr)
            self.assertEqual(r.stdout, "")
        finally:
            os.unlink(path)

    def test_public_sharegpt_over_the_bound(self):
        # like the published file (about 640 MiB): more than the daemon takes
        # whole, so only each conversation's first prompt and reply go up
        bound = 256 << 20
        long_turn = "w" * (7 << 20)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "big.json")
            n = 0
            with open(path, "w") as f:
                f.write("[")
                while f.tell() <= bound:
                    conv = [{"from": "human", "value": "prompt %d" % n},
                            {"from": "gpt", "value": "reply of three"},
                            {"from": "human", "value": long_turn}]
                    if n % 10 == 9:
                        conv = conv[1:]  # no pair: left out
                    elem = json.dumps({"id": n, "conversations": conv})
                    f.write("%s\n%s" % ("," if n else "", elem))
                    n += 1
                f.write("]\n")
            self.assertGreater(os.path.getsize(path), bound)
            r = profile("--print-spec", "-m", "mock-model", "--public-dataset", "sharegpt",
                        "--input-file", path, "--daemon", "http://" + self.daemon.addr)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("cut down to each conversation's first prompt and reply", r.stderr)
            ds_id = json.loads(r.stdout)["workload"]["dataset"]["id"]
            st, ds, _ = self.api.call("GET", "/datasets/%d" % ds_id)
            self.assertEqual((ds["format"], ds["entries"]),
                             ("sharegpt", n - n // 10))
            self.assertLess(ds["bytes"], 1 << 20)
            st, ents, _ = self.api.call("GET", "/datasets/%d/entries?limit=2" % ds_id)
            self.assertEqual(ents["entries"][1]["text"], "prompt 1")


if __name__ == "__main__":
    unittest.main()
