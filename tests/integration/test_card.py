#!/usr/bin/env python3
"""test_card.py - every run's credibility card (docs/card.md), recorded
without being asked, against real processes (headroomd, its workers,
headroom-mock, and a small Python server standing in for a vLLM-like one):

- a run against headroom-mock: the card names the mock (its /v1/models ids,
  its Server header and the version in it), the client host as /proc and
  uname state it (CPU model, online cores, MemTotal, kernel) and headroom's
  version and build as `headroomd --version` prints them; its input and
  output lengths are the summary's, its load the spec's, its verdict the
  summary's client verdict; precision, GPU and hardware are unknown, each
  saying which label fills it; GET /runs/{id} carries the same card as GET
  /runs/{id}/card, and the AIPerf and vLLM exports carry it flat;
- labels fill the gaps: precision=fp8 makes the card say fp8 (source
  "label precision"), gpu and hardware likewise;
- an API key (a declared secret, sent to a headroom-mock started with
  --api-key) appears in no card, no run, no export, no `headroom show`
  and not in the stored card;
- a vLLM-like server: its model ids, its Server and *-Version headers,
  and its /metrics *_info series (build version, dtype) fill the card;
  its X-Api-Key, Set-Cookie and other response headers are not kept;
- `headroom show` prints the card, unknown items with their fill;
- GPUs NVML telemetry found (the fake NVML library) are named on it;
- its fetches obey the allow-list (--allow-target): a page it may not
  reach is never asked, and the item says why;
- a run's card holds a traffic class's load when the spec has classes
  (checked only where the spec accepts `classes`).

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_card.py
"""
import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

KEY = "hr-card-key-4b9d2e7a1c"
CLI = os.path.join(hrtest.BIN, "headroom")


def proc_field(path, key):
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name.strip() == key:
                return value.strip()
    return None


class Fake(http.server.ThreadingHTTPServer):
    """A vLLM-like server: a model list, identity headers, an info page;
    generation answers 404, so a run against it fails but keeps its card."""
    daemon_threads = True

    def __init__(self):
        self.seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def answer(self, body, ctype):
                srv.seen.append((self.command, self.path, dict(self.headers)))
                data = body.encode()
                self.send_response(200 if body else 404)
                self.send_header("Server", "uvicorn")
                self.send_header("X-Engine-Version", "0.6.3.post1")
                self.send_header("X-Api-Key", "leak-from-header")
                self.send_header("Set-Cookie", "session=leak-from-cookie")
                self.send_header("X-Other", "not-kept")
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    self.answer(json.dumps({"object": "list", "data": [
                        {"id": "org/model-a", "object": "model"},
                        {"id": "org/model-b", "object": "model"}]}), "application/json")
                elif self.path == "/metrics":
                    self.answer(
                        "# TYPE vllm:cache_config_info gauge\n"
                        'vllm:cache_config_info{block_size="16",cache_dtype="fp8"} 1\n'
                        "# TYPE python_info gauge\n"
                        'python_info{implementation="CPython",version="3.11.2"} 1\n'
                        "# TYPE vllm:model_info gauge\n"
                        'vllm:model_info{dtype="bfloat16",model="org/model-a"} 1\n'
                        "# TYPE vllm:num_requests_running gauge\n"
                        'vllm:num_requests_running{model_name="org/model-a"} 0\n',
                        "text/plain; version=0.0.4")
                else:
                    self.answer("", "application/json")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                self.answer("", "application/json")

        srv = self
        super().__init__(("127.0.0.1", 0), H)
        self.addr = "127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


class CardTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.kmock = hrtest.start_mock("--quiet", "--api-key", KEY)
        kport = cls.kmock.addr.rpartition(":")[2]
        cls.fake = Fake()
        os.environ["HR_CARD_KEY"] = KEY
        cls.start_service(daemon_args=(
            "--secret", "cardkey=env:HR_CARD_KEY@127.0.0.1:%s" % kport,))

    @classmethod
    def tearDownClass(cls):
        cls.fake.shutdown()
        rc = cls.kmock.stop()
        super().tearDownClass()
        if rc != 0:
            raise AssertionError("keyed mock exit status %s" % rc)

    def run_spec(self, spec, states=("succeeded",)):
        rid = self.api.submit(spec)
        run = self.api.wait(rid)
        self.assertIn(run["state"], states, run.get("reason"))
        return rid, run

    def card(self, rid):
        st, card, _ = self.api.call("GET", "/runs/%d/card" % rid)
        self.assertEqual(st, 200, card)
        self.assertEqual(card["run_id"], rid)
        return {it["key"]: it for it in card["items"]}, card

    def cli(self, *args):
        env = dict(os.environ, HEADROOM_URL="http://" + self.daemon.addr)
        return subprocess.run([CLI, *args], capture_output=True, text=True, env=env,
                              timeout=120)

    def test_mock_run_card(self):
        spec = hrtest.spec(self.mock.addr, concurrency=3, requests=24)
        spec["workload"]["isl"] = {"mean": 40, "stddev": 10}
        spec["warmup"] = {"requests": 3}
        rid, run = self.run_spec(spec)
        items, card = self.card(rid)
        self.assertTrue(card["recorded"])
        self.assertTrue(card["complete"])
        want_keys = ["client_cpu", "client_cores", "client_memory", "client_kernel",
                     "headroom", "server_url", "server", "server_version", "model",
                     "precision", "gpu", "hardware", "server_info", "isl", "osl", "load",
                     "warmup", "client_verdict"]
        self.assertEqual([it["key"] for it in card["items"]], want_keys)
        # the mock's identity
        ver = subprocess.run([os.path.join(hrtest.BIN, "headroom-mock"), "--version"],
                             capture_output=True, text=True).stdout.split()[1]
        self.assertEqual(items["server"]["value"], "headroom-mock/" + ver)
        self.assertEqual(items["server"]["source"], "Server header")
        self.assertEqual(items["server_version"]["value"], ver)
        self.assertEqual(items["model"]["value"], ["mock-model"])
        self.assertEqual(items["server_url"]["value"], "http://" + self.mock.addr)
        # the client host
        self.assertEqual(items["client_cpu"]["value"],
                         proc_field("/proc/cpuinfo", "model name"))
        self.assertEqual(items["client_cores"]["value"], os.sysconf("SC_NPROCESSORS_ONLN"))
        mem_kb = int(proc_field("/proc/meminfo", "MemTotal").split()[0])
        self.assertEqual(items["client_memory"]["value"], mem_kb * 1024)
        u = os.uname()
        self.assertEqual(items["client_kernel"]["value"],
                         "%s %s %s" % (u.sysname, u.release, u.machine))
        line = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "--version"],
                              capture_output=True, text=True).stdout.strip()
        hv = items["headroom"]["value"]
        self.assertEqual(line, "headroomd %s (%s)" % (hv["version"], hv["build"]))
        # what was sent: the summary's lengths, the spec's load, the verdict
        metrics = run["summary"]["metrics"]
        for key, tag in (("isl", "input_sequence_length"), ("osl", "output_sequence_length")):
            v = items[key]["value"]
            for stat in ("avg", "p50", "p90", "p99", "min", "max", "count"):
                self.assertEqual(v[stat], metrics[tag][stat], (key, stat))
            self.assertFalse(items[key]["unknown"])
        self.assertGreater(items["isl"]["value"]["max"], items["isl"]["value"]["min"])
        self.assertEqual(items["load"]["value"]["concurrency"], 3)
        self.assertIn("concurrency 3", items["load"]["text"])
        self.assertEqual(items["warmup"]["value"]["requests"], 3)
        self.assertEqual(items["client_verdict"]["value"]["verdict"],
                         run["summary"]["client"]["verdict"])
        # what it cannot establish, with the way to fill it
        for key in ("precision", "gpu", "hardware"):
            self.assertTrue(items[key]["unknown"], key)
            self.assertIsNone(items[key]["value"])
            self.assertEqual(items[key]["text"], "unknown")
            self.assertTrue(items[key]["fill"].startswith('set label "%s"' % key),
                            items[key]["fill"])
        self.assertIn("no *_info series", items["server_info"]["fill"])  # the mock has none
        # the run carries the same card
        card.pop("run_id")
        self.assertEqual(run["card"], card)
        # the exports carry it flat
        st, doc, _ = self.api.call("GET", "/runs/%d/export?format=aiperf-json" % rid)
        self.assertEqual(st, 200)
        if isinstance(doc, str):
            doc = json.loads(doc)
        flat = doc["input_config"]["headroom_card"]
        self.assertEqual(flat["model"], "mock-model")
        self.assertTrue(flat["precision"].startswith('unknown; set label "precision"'))
        st, doc, _ = self.api.call("GET", "/runs/%d/export?format=vllm" % rid)
        if isinstance(doc, str):
            doc = json.loads(doc)
        self.assertEqual(doc["headroom_card"]["server"], "headroom-mock/" + ver)

    def test_models_of_other_openai_style_endpoints(self):
        """The model list is asked of every endpoint whose servers answer
        GET /v1/models (the mock does, for all of them); a native one
        (TGI's /generate) says it has none."""
        for ep, stream in (("responses", True), ("messages", True),
                           ("image_generation", False), ("tgi", True)):
            spec = hrtest.spec(self.mock.addr, concurrency=1, requests=2)
            spec["target"].update({"endpoint": ep, "stream": stream})
            if ep == "image_generation":
                spec["workload"]["osl"] = {"mean": 0}
            rid, run = self.run_spec(spec)
            items, _ = self.card(rid)
            if ep == "tgi":
                self.assertIsNone(items["model"]["value"], items["model"])
                continue
            self.assertEqual(items["model"]["value"], ["mock-model"], (ep, items["model"]))

    def test_labels_fill_gaps(self):
        spec = hrtest.spec(self.mock.addr, requests=8)
        spec["labels"] = {"precision": "fp8", "gpu": "NVIDIA H100 80GB HBM3",
                          "hardware": "8x H100 SXM", "model": "not-used"}
        rid, _ = self.run_spec(spec)
        items, _ = self.card(rid)
        self.assertEqual(items["precision"]["value"], "fp8")
        self.assertEqual(items["precision"]["source"], "label precision")
        self.assertFalse(items["precision"]["unknown"])
        self.assertEqual(items["gpu"]["value"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(items["hardware"]["value"], "8x H100 SXM")
        # a label fills a gap, it does not override what the server said
        self.assertEqual(items["model"]["value"], ["mock-model"])
        # a label added later (PATCH) fills its item too; the server's own
        # version still wins over one
        st, body, _ = self.api.call("PATCH", "/runs/%d" % rid,
                                    {"labels": {"hardware": "2x L40S", "server_version": "9"}})
        self.assertEqual(st, 200, body)
        items, _ = self.card(rid)
        self.assertEqual(items["hardware"]["value"], "2x L40S")
        self.assertEqual(items["precision"]["value"], "fp8")
        self.assertEqual(items["server_version"]["source"], "Server header")

    def test_api_key_never_in_card(self):
        spec = hrtest.spec(self.kmock.addr, requests=8)
        spec["target"]["api_key_secret"] = "cardkey"
        rid, run = self.run_spec(spec)
        items, card = self.card(rid)
        self.assertEqual(items["model"]["value"], ["mock-model"])
        texts = [json.dumps(card), json.dumps(run)]
        for fmt in ("aiperf-json", "vllm"):
            texts.append(self.api.call("GET", "/runs/%d/export?format=%s" % (rid, fmt))[1])
        r = self.cli("show", str(rid))
        self.assertEqual(r.returncode, 0, r.stderr)
        texts.append(r.stdout)
        db = sqlite3.connect(os.path.join(self.tmp.name, "headroom.db"))
        texts += [row[0] for row in db.execute("SELECT card FROM run_cards")]
        db.close()
        for t in texts:
            self.assertNotIn(KEY, t if isinstance(t, str) else json.dumps(t))

    def test_vllm_like_server_identity(self):
        spec = hrtest.spec(self.fake.addr, requests=2)
        spec["target"]["model"] = "org/model-a"
        spec["telemetry"] = {"server_metrics": True}
        rid, run = self.run_spec(spec, states=("failed",))
        items, card = self.card(rid)
        self.assertEqual(items["model"]["value"], ["org/model-a", "org/model-b"])
        self.assertEqual(items["server"]["value"], "uvicorn")
        self.assertEqual(items["server_version"]["value"], "0.6.3.post1")
        self.assertEqual(items["precision"]["value"], "bfloat16")
        info = items["server_info"]["value"]
        self.assertEqual(info["vllm:cache_config_info"]["cache_dtype"], "fp8")
        self.assertIn("vllm:model_info", info)
        self.assertNotIn("vllm:num_requests_running", info)
        text = json.dumps(card)
        for leak in ("leak-from-header", "leak-from-cookie", "not-kept"):
            self.assertNotIn(leak, text)
        db = sqlite3.connect(os.path.join(self.tmp.name, "headroom.db"))
        stored = db.execute("SELECT card FROM run_cards WHERE run_id = ?", (rid,)).fetchone()[0]
        db.close()
        self.assertEqual(set(json.loads(stored)["server"]["headers"]),
                         {"server", "x-engine-version"})
        # the card's request asked for the model list with no credential
        asked = [h for m, p, h in self.fake.seen if p == "/v1/models"]
        self.assertTrue(asked)
        self.assertFalse(any(k.lower() == "authorization" for h in asked for k in h))

    def test_show_prints_the_card(self):
        spec = hrtest.spec(self.mock.addr, requests=8)
        spec["labels"] = {"precision": "int4"}
        rid, _ = self.run_spec(spec)
        r = self.cli("show", str(rid))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("\nCard\n", out)
        self.assertIn("headroom-mock/", out)
        self.assertIn("Precision", out)
        self.assertIn("int4 (label precision)", out)
        self.assertIn('unknown; set label "hardware"', out)
        self.assertIn(proc_field("/proc/cpuinfo", "model name") or "unknown", out)

    def test_classes_listed_when_the_spec_has_them(self):
        spec = hrtest.spec(self.mock.addr, requests=8)
        cls = [{"name": "chat", "workload": spec["workload"], "workers": 1,
                "load": {"mode": "concurrency", "concurrency": 2, "requests": 4}},
               {"name": "batch", "workload": spec["workload"], "workers": 1,
                "load": {"mode": "concurrency", "concurrency": 1, "requests": 4}}]
        spec["classes"] = cls
        spec["workers"] = 2
        st, body, _ = self.api.call("POST", "/runs", spec)
        if st != 201:
            self.skipTest("this build's spec has no classes: %s" % body)
        run = self.api.wait(body["id"])
        items, _ = self.card(body["id"])
        self.assertEqual([c["name"] for c in items["load"]["value"]], ["chat", "batch"],
                         run.get("reason"))
        self.assertIn("chat: concurrency 2", items["load"]["text"])

    def test_unknown_run_and_no_card(self):
        st, body, _ = self.api.call("GET", "/runs/999999/card")
        self.assertEqual(st, 404)
        self.assertIn("error", body)


class CardGpuTest(unittest.TestCase):
    """GPUs that NVML telemetry found (the fake NVML library, two GPUs) are
    named on the card, each name with how many carried it."""

    def test_gpus_from_telemetry(self):
        fake = os.path.join(hrtest.BIN, "..", "tests", "fake_nvml", "libnvidia-ml.so.1")
        if not os.path.exists(fake):
            self.skipTest("no fake NVML library in this build")
        tmp = hrtest.tempdir()
        mock = hrtest.start_mock("--quiet")
        script = os.path.join(tmp.name, "nvml-script")
        with open(script, "w") as f:
            f.write("* name NVIDIA H200\n")
        env = dict(os.environ, HEADROOM_NVML_LIB=fake, FAKE_NVML_GPUS="2",
                   FAKE_NVML_SCRIPT=script)
        d = hrtest.Proc([os.path.join(hrtest.BIN, "headroomd"), "--listen", "127.0.0.1:0",
                         "--data", tmp.name], "listening on", env=env)
        try:
            api = hrtest.Api(d.addr)
            spec = hrtest.spec(mock.addr, requests=8)
            spec["labels"] = {"gpu": "label loses to telemetry"}
            run = api.wait(api.submit(spec))
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            items = {it["key"]: it for it in run["card"]["items"]}
            gpu = items["gpu"]
            self.assertFalse(gpu["unknown"])
            self.assertEqual(gpu["source"], "telemetry")
            self.assertEqual(gpu["value"], [{"name": "NVIDIA H200", "count": 2}])
            self.assertEqual(gpu["text"], "2 x NVIDIA H200")
        finally:
            rcs = [d.stop(), mock.stop()]
            tmp.cleanup()
        self.assertEqual(rcs, [0, 0])


class CardAllowListTest(unittest.TestCase):
    """The card's fetches go only where the allow-list lets the telemetry
    scraper connect: a metrics page by a name that resolves to a port the
    list does not hold is never asked, and the card says why."""

    def test_refused_page_is_not_fetched(self):
        tmp = hrtest.tempdir()
        mock = hrtest.start_mock("--quiet")
        fake = Fake()
        port = mock.addr.rpartition(":")[2]
        d = hrtest.start_daemon(tmp.name, "--allow-target", "127.0.0.1:%s" % port)
        try:
            api = hrtest.Api(d.addr)
            spec = hrtest.spec(mock.addr, requests=4)
            fport = fake.addr.rpartition(":")[2]
            spec["telemetry"] = {"server_metrics": False,
                                 "metrics_urls": ["http://localhost:%s/metrics" % fport]}
            run = api.wait(api.submit(spec))
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            items = {it["key"]: it for it in run["card"]["items"]}
            self.assertTrue(items["server_info"]["unknown"])
            self.assertIn("address not allowed", items["server_info"]["fill"])
            self.assertEqual(items["model"]["value"], ["mock-model"])  # the target: allowed
            self.assertEqual([p for _, p, _ in fake.seen], [])
        finally:
            fake.shutdown()
            rcs = [d.stop(), mock.stop()]
            tmp.cleanup()
        self.assertEqual(rcs, [0, 0])


if __name__ == "__main__":
    unittest.main()
