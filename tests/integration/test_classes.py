"""test_classes.py - traffic classes in one run: interactive users beside
batches of background agents (docs/classes.md), their per-class records
and summaries, the interference between them (docs/metrics.md,
"Interference between classes"), and batch arrivals.

The mock runs its continuous-batching load model: an engine step lasts
2 ms plus, for every sequence it admits, 1 ms + 20 ms per 1000 prompt
tokens. An agent batch of 6 requests with 2000-token prompts is admitted
in one step of about 2 + 6 x 41 = 248 ms, during which no sequence gets a
token and nothing new is admitted: an interactive request (short prompt,
Poisson) sent while a batch is in flight waits up to that long for its
first token, one sent while the agents are idle gets it within a few
steps. So on one shared mock the interactive TTFT tail with the agents in
flight is far above the idle tail; with the agents routed to a second
mock the two splits are alike.
"""

import csv
import io
import json
import os
import subprocess
import unittest

import numpy as np

import hrtest
import test_openapi  # noqa: E402  (api/openapi.yaml, to check every answer against)

DOC = test_openapi.Doc(test_openapi.load_doc())

MOCK_ARGS = ("--quiet", "--ttft-ms", "1", "--prefill-ms-per-1k", "20", "--decode-ms", "2",
             "--max-batch", "64")


def classes_spec(interactive_url, agents_url, duration=8, seed=11):
    return {
        "name": "chat-plus-agents",
        "labels": {"suite": "classes"},
        "target": {"url": "http://" + interactive_url, "model": "m", "endpoint": "chat",
                   "stream": True},
        "workload": {"seed": seed},
        "load": {"duration_s": duration, "grace_s": 10},
        "client": {"allow_client_bound": True},
        "classes": [
            {"name": "interactive",
             "workload": {"isl": {"mean": 48, "stddev": 0}, "osl": {"mean": 12, "stddev": 0}},
             "load": {"mode": "rate", "rate": 25, "arrival": "poisson"},
             "goodput": {"time_to_first_token": 100},
             "workers": 1},
            {"name": "agents",
             "target": {"url": "http://" + agents_url},
             "workload": {"isl": {"mean": 2000, "stddev": 0}, "osl": {"mean": 30, "stddev": 0}},
             "load": {"batch": {"size": 6, "interval_s": 1.5}, "max_concurrency": 64},
             "workers": 1},
        ],
    }


def records(api, run_id):
    st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
    assert st == 200, (st, text)
    return [json.loads(line) for line in text.splitlines() if line]


class Classes(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=MOCK_ARGS)
        cls.mock2 = hrtest.start_mock(*MOCK_ARGS)
        cls.shared_id = cls.api.submit(classes_spec(cls.mock.addr, cls.mock.addr))
        cls.shared = cls.api.wait(cls.shared_id, timeout=180)
        cls.apart_id = cls.api.submit(classes_spec(cls.mock.addr, cls.mock2.addr))
        cls.apart = cls.api.wait(cls.apart_id, timeout=180)

    @classmethod
    def tearDownClass(cls):
        rc = cls.mock2.stop()
        super().tearDownClass()
        if rc != 0:
            raise AssertionError("second mock exit status %s" % rc)

    def test_per_class_records_and_summaries(self):
        run = self.shared
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        summary = run["summary"]
        self.assertEqual(summary["load"]["mode"], "classes")
        self.assertEqual(sorted(summary["classes"]), ["agents", "interactive"])
        recs = [r for r in records(self.api, self.shared_id) if r["phase"] == "profiling"]
        by = {}
        for r in recs:
            self.assertIn(r["class"], ("interactive", "agents"))
            by.setdefault(r["class"], []).append(r)
        # the classes' workers: interactive is worker 0, agents worker 1
        self.assertEqual({r["worker"] for r in by["interactive"]}, {0})
        self.assertEqual({r["worker"] for r in by["agents"]}, {1})
        # request ids never collide across classes
        ids = [r["req_id"] for r in recs]
        self.assertEqual(len(ids), len(set(ids)))
        total = 0
        for name, cs in summary["classes"].items():
            rs = by[name]
            total += len(rs)
            self.assertEqual(cs["counts"]["requests"], len(rs), name)
            valid = [r for r in rs if r["valid"]]
            self.assertEqual(cs["counts"]["valid"], len(valid), name)
            for tag in ("time_to_first_token", "request_latency", "inter_token_latency"):
                vals = [r[tag] for r in valid if r[tag] is not None]
                m = cs["metrics"][tag]
                self.assertEqual(m["count"], len(vals), (name, tag))
                for p in (50, 90, 99):
                    self.assertEqual(m["p%d" % p], hrtest.numpy_percentile(vals, p),
                                     (name, tag, p))
                self.assertAlmostEqual(m["avg"], float(np.mean(vals)), delta=1e-9 * m["max"])
        self.assertEqual(summary["counts"]["requests"], total)
        # the overall sample is the union of the classes'
        allv = [r["time_to_first_token"] for r in recs
                if r["valid"] and r["time_to_first_token"] is not None]
        self.assertEqual(summary["metrics"]["time_to_first_token"]["p99"],
                         hrtest.numpy_percentile(allv, 99))
        # each class's own shape: the agents came in batches of 6
        agents = sorted(r["intended_ns"] for r in by["agents"])
        self.assertGreaterEqual(len(agents), 24)
        groups = [agents[i:i + 6] for i in range(0, len(agents) - len(agents) % 6, 6)]
        for g in groups:
            self.assertEqual(g[0], g[-1], "a batch's requests share one intended time")
        gaps = {round((b[0] - a[0]) / 1e9, 6) for a, b in zip(groups, groups[1:])}
        self.assertEqual(gaps, {1.5})
        # goodput is the interactive class's objective, counted on its requests
        good = sum(1 for r in by["interactive"]
                   if r["valid"] and r["time_to_first_token"] <= 100)
        self.assertEqual(summary["classes"]["interactive"]["counts"]["good"], good)
        self.assertEqual(summary["counts"]["good"], good)
        # the summary CSV has each class's metrics as classes.NAME.TAG rows
        st, text, _ = self.api.call("GET", "/runs/%d/summary?format=csv" % self.shared_id)
        self.assertEqual(st, 200)
        rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(text))}
        for name in ("interactive", "agents"):
            m = summary["classes"][name]["metrics"]["time_to_first_token"]
            row = rows["classes.%s.time_to_first_token" % name]
            self.assertEqual(float(row["p99"]), m["p99"])
            self.assertEqual(int(row["count"]), m["count"])
        # the CSV export names each record's class too
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=csv" % self.shared_id)
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertEqual(sorted({r["class"] for r in rows}), ["agents", "interactive"])

    def split(self, run_id, summary):
        """The interactive TTFTs split as the documented rule says: busy when
        an agent request was in flight at some moment of the request's own
        [start, done)."""
        recs = [r for r in records(self.api, run_id) if r["phase"] == "profiling"]
        agents = [(r["start_ns"], r["done_ns"] if r["done_ns"] is not None else r["start_ns"])
                  for r in recs if r["class"] == "agents" and r["start_ns"] is not None]
        busy, idle = [], []
        for r in recs:
            if r["class"] != "interactive" or r["start_ns"] is None:
                continue
            s = r["start_ns"]
            e = r["done_ns"] if r["done_ns"] is not None and r["done_ns"] > s else s + 1
            over = any(a < e and d > s for a, d in agents)
            if r["valid"] and r["time_to_first_token"] is not None:
                (busy if over else idle).append(r["time_to_first_token"])
        pair = summary["interference"]["classes"]["interactive"]["agents"]
        self.assertEqual(pair["busy"]["time_to_first_token"]["count"], len(busy))
        self.assertEqual(pair["idle"]["time_to_first_token"]["count"], len(idle))
        for p in (50, 99):
            self.assertEqual(pair["busy"]["time_to_first_token"]["p%d" % p],
                             hrtest.numpy_percentile(busy, p))
            self.assertEqual(pair["idle"]["time_to_first_token"]["p%d" % p],
                             hrtest.numpy_percentile(idle, p))
        diff = pair["difference"]["time_to_first_token"]["p99"]
        computed = hrtest.numpy_percentile(busy, 99) - hrtest.numpy_percentile(idle, 99)
        self.assertAlmostEqual(diff["est"], computed, delta=1e-9 * max(1.0, abs(computed)))
        self.assertLessEqual(diff["lo"], computed)
        self.assertGreaterEqual(diff["hi"], computed)
        return pair, busy, idle

    def test_interference_shared_server(self):
        pair, busy, idle = self.split(self.shared_id, self.shared["summary"])
        self.assertGreaterEqual(len(busy), 20)
        self.assertGreaterEqual(len(idle), 20)
        diff = pair["difference"]["time_to_first_token"]["p99"]
        # a batch's admission step is ~250 ms: the busy tail is far above
        # the idle one, and the interval says so
        self.assertEqual(diff["direction"], "higher", diff)
        self.assertGreater(diff["lo"], 40, diff)
        self.assertIn("interactive time_to_first_token p99", pair["headline"])

    def test_interference_separated_servers(self):
        self.assertEqual(self.apart["state"], "succeeded", self.apart.get("reason"))
        shared = self.shared["summary"]["interference"]["classes"]["interactive"]["agents"]
        pair, busy, idle = self.split(self.apart_id, self.apart["summary"])
        self.assertGreaterEqual(len(busy), 20)
        self.assertGreaterEqual(len(idle), 20)
        d_apart = pair["difference"]["time_to_first_token"]["p99"]["est"]
        d_shared = shared["difference"]["time_to_first_token"]["p99"]["est"]
        # routed elsewhere, the agents cost the interactive tail little:
        # a small fraction of what sharing the server cost it
        self.assertLess(abs(d_apart), d_shared / 3, (d_apart, d_shared))

    def test_seed_reproduces_schedules(self):
        """The same spec and seed give both classes the same intended times
        (relative to the phase start) and prompts' ids."""
        a = [r for r in records(self.api, self.shared_id) if r["phase"] == "profiling"]
        b = [r for r in records(self.api, self.apart_id) if r["phase"] == "profiling"]

        def sched(rs, cls):
            return sorted((r["req_id"], r["intended_ns"]) for r in rs if r["class"] == cls)

        for cls in ("interactive", "agents"):
            sa, sb = sched(a, cls), sched(b, cls)
            n = min(len(sa), len(sb)) - 8  # the ends may differ by what the window held
            self.assertGreater(n, 10)
            self.assertEqual(sa[:n], sb[:n], cls)

    def test_agent_sessions(self):
        """Agent sessions: each next turn waits a tool time drawn from the
        mixture (here 0 s three times in four, 0.5 s otherwise) after the
        previous answer, and some turns bring a 1500-token document into
        the context."""
        spec = classes_spec(self.mock.addr, self.mock.addr, duration=5)
        spec["classes"][1] = {
            "name": "agents",
            "workload": {"isl": {"mean": 40, "stddev": 0}, "osl": {"mean": 8, "stddev": 0},
                         "sessions": {"turns": {"mean": 6, "stddev": 0},
                                      "tool_time_s": [{"weight": 3, "mean": 0},
                                                      {"weight": 1, "mean": 0.5}],
                                      "documents": {"probability": 0.4,
                                                    "tokens": {"mean": 1500, "stddev": 0}}}},
            "load": {"mode": "concurrency", "concurrency": 4},
            "workers": 1}
        rid = self.api.submit(spec)
        run = self.api.wait(rid, timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, got, _ = self.api.call("GET", "/runs/%d" % rid)
        sess = got["spec"]["classes"][1]["workload"]["sessions"]
        self.assertNotIn("think_time_s", sess)
        self.assertEqual(len(sess["tool_time_s"]), 2)
        turns = {}
        for r in records(self.api, rid):
            if r["class"] == "agents" and r["phase"] == "profiling" and r["valid"]:
                turns.setdefault(r["session"], {})[r["turn"]] = r
        short = long_ = docs = plain = 0
        for ts in turns.values():
            for j in sorted(ts):
                if j == 0 or j - 1 not in ts:
                    continue
                prev, cur = ts[j - 1], ts[j]
                wait = (cur["intended_ns"] - prev["done_ns"]) / 1e9
                self.assertGreaterEqual(wait, 0)
                if wait < 0.2:
                    short += 1
                else:
                    self.assertTrue(0.5 <= wait < 0.8, wait)
                    long_ += 1
                # the server's prompt count grows by the answer and the new
                # text: 40 words, or 40 + 1500 with a document
                grew = cur["usage_isl"] - prev["usage_isl"] - prev["usage_osl"]
                if grew >= 1500:
                    docs += 1
                else:
                    self.assertLess(grew, 200, grew)
                    plain += 1
        self.assertGreaterEqual(short + long_, 20)
        self.assertGreater(short, long_)
        self.assertGreater(long_, 0)
        self.assertGreater(docs, 0)
        self.assertGreater(plain, 0)

    def test_workload_kinds(self):
        """Each class its own kind of workload: an uploaded dataset, a replayed
        trace, a length mixture; each class's records follow its own."""
        words = [3, 5, 7]
        data = "".join(json.dumps({"text": " ".join(["w"] * n), "output_length": 4}) + "\n"
                       for n in words).encode()
        st, ds, _ = self.api.call("POST", "/datasets?format=single_turn&name=classes", raw=data)
        self.assertEqual(st, 201, ds)
        trace = "".join(json.dumps({"timestamp": i * 100, "input_length": 10 + i,
                                    "output_length": 3}) + "\n" for i in range(8))
        spec = {"name": "kinds", "target": {"url": "http://" + self.mock.addr, "model": "m"},
                "load": {"requests": 9}, "client": {"allow_client_bound": True},
                "classes": [
                    {"name": "docs", "workload": {"kind": "dataset", "dataset": {"id": ds["id"]}},
                     "load": {"mode": "concurrency", "concurrency": 2}},
                    {"name": "replay", "workload": {"kind": "trace", "trace": trace},
                     "load": {"mode": "trace"}},
                    {"name": "mixed", "workload": {"mix": [{"isl": 11, "osl": 2},
                                                           {"isl": 17, "osl": 3}]},
                     "load": {"mode": "rate", "rate": 20, "arrival": "constant"}}]}
        rid = self.api.submit(spec)
        run = self.api.wait(rid, timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        by = {}
        for r in records(self.api, rid):
            by.setdefault(r["class"], []).append(r)
        self.assertEqual(len(by["docs"]), 9)
        # the dataset's prompts, in order: 3, 5, 7 words (the mock counts words)
        self.assertEqual(sorted(r["isl"] for r in by["docs"]), sorted(words * 3))
        self.assertEqual(len(by["replay"]), 8)
        starts = sorted(r["intended_ns"] for r in by["replay"])
        self.assertEqual([round((t - starts[0]) / 1e6) for t in starts],
                         [i * 100 for i in range(8)])
        self.assertEqual(sorted(r["isl"] for r in by["replay"]), [10 + i for i in range(8)])
        self.assertEqual(len(by["mixed"]), 9)
        self.assertTrue({(r["isl"], r["osl"]) for r in by["mixed"]} <= {(11, 2), (17, 3)})
        for name, rs in by.items():
            self.assertEqual(run["summary"]["classes"][name]["counts"]["requests"], len(rs))
        # three classes: every ordered pair is split
        itf = run["summary"]["interference"]["classes"]
        self.assertEqual(sorted(itf), ["docs", "mixed", "replay"])
        self.assertEqual(sorted(itf["docs"]), ["mixed", "replay"])

    def test_cli_show(self):
        out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "--url",
                              "http://" + self.daemon.addr, "show", str(self.shared_id)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout
        self.assertIn("\nClasses\n", text)
        self.assertRegex(text, r"\| interactive +\| rate 25(\.00)?/s poisson")
        self.assertRegex(text, r"\| agents +\| batches of 6 every 1\.50? s")
        head = self.shared["summary"]["interference"]["headlines"]
        # interactive's split always has both sides; agents' may have no
        # idle side (interactive requests are nearly always in flight)
        self.assertIn(1, (len(head), len(head) - 1))
        self.assertTrue(head[0].startswith("interactive time_to_first_token p99"), head)
        for h in head:
            self.assertIn(h, text)

    def test_card(self):
        """The credibility card lists each class's load and lengths."""
        st, card, _ = self.api.call("GET", "/runs/%d/card" % self.shared_id)
        self.assertEqual(st, 200, card)
        items = {i["key"]: i for i in card["items"]}
        self.assertIn("interactive: rate 25/s poisson arrivals", items["load"]["text"])
        self.assertIn("agents: rate batches of 6 every 1.5 s (constant)", items["load"]["text"])
        self.assertIn("; interactive avg 48, p99 48; agents avg 2000, p99 2000",
                      items["isl"]["text"])
        self.assertIn("; interactive avg 12, p99 12; agents avg 30, p99 30", items["osl"]["text"])

    def test_bad_classes(self):
        base = classes_spec(self.mock.addr, self.mock.addr)
        cases = [
            (lambda s: s["classes"][1].update(name="interactive"), "classes[1].name"),
            (lambda s: s["classes"][0].update(workload={}), "classes[0].workload"),
            (lambda s: s["classes"][1]["target"].update(bogus=1), "classes[1].target.bogus"),
            (lambda s: s["classes"][1]["target"].update(api_key_env="K"),
             "classes[1].target.api_key_env"),
            (lambda s: s["classes"][0]["load"].update(rate=-1), "classes[0].load.rate"),
            (lambda s: s["classes"][1]["load"]["batch"].update(size=0),
             "classes[0].load.batch.size".replace("0", "1")),
            (lambda s: s["classes"][0].update(colour="red"), "classes[0].colour"),
            (lambda s: s.update(classes=[]), "classes"),
            (lambda s: s.update(classes={}), "classes"),
            (lambda s: s.update(workers=3), "workers"),
            # a class's own target is stored too: no credential in it
            (lambda s: s["classes"][1]["target"].update(headers={"x-api-key": "k"}),
             "classes[1].target.headers.x-api-key"),
            (lambda s: s["classes"][1]["target"].update(path="/v1/chat/completions?sig=s3cr3t"),
             "classes[1].target.path"),
        ]
        for mutate, field in cases:
            s = json.loads(json.dumps(base))
            mutate(s)
            st, body, _ = self.api.call("POST", "/runs", s)
            self.assertEqual(st, 400, (field, body))
            self.assertEqual(body["error"]["field"], field, body)

    def test_documented_shapes(self):
        """The run (its normalised spec with classes, and its summary with
        classes and interference) and its records are as api/openapi.yaml
        says."""
        for rid in (self.shared_id, self.apart_id):
            st, run, _ = self.api.call("GET", "/runs/%d" % rid)
            self.assertEqual(st, 200)
            DOC.validate(DOC.schema("Summary"), run["summary"], "the summary")
            DOC.validate(DOC.schema("Run"), run, "GET /runs/%d" % rid)
            DOC.validate(DOC.schema("RunSpec"), run["spec"], "the normalised spec")
        order = DOC.record_columns(classes=True)
        for r in records(self.api, self.shared_id)[:50]:
            DOC.validate(DOC.schema("RecordRow"), r, "a record")
            self.assertEqual(list(r), order)
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=csv" % self.shared_id)
        self.assertEqual(next(csv.reader(io.StringIO(text))),
                         DOC.record_columns(csv_only=True, classes=True))
        spec = classes_spec(self.mock.addr, self.mock.addr)
        DOC.validate(DOC.schema("RunSpec"), spec, "the spec as written")

    def test_normalised_spec_round_trip(self):
        st, run, _ = self.api.call("GET", "/runs/%d" % self.shared_id)
        spec = run["spec"]
        self.assertEqual([c["name"] for c in spec["classes"]], ["interactive", "agents"])
        self.assertEqual(spec["workers"], 2)
        ag = spec["classes"][1]
        self.assertEqual(ag["load"]["mode"], "rate")
        self.assertEqual(ag["load"]["arrival"], "constant")
        self.assertEqual(ag["load"]["duration_s"], 8)
        self.assertEqual(ag["workload"]["seed"], 11 + 2)
        self.assertEqual(spec["classes"][0]["workload"]["seed"], 11 + 1)
        # the normalised spec is accepted as it is, and stays the same
        again = self.api.submit(dict(spec, name="again", load=dict(spec["load"], duration_s=0.5),
                                     classes=[dict(c, load=dict(c["load"], duration_s=0.5))
                                              for c in spec["classes"]]))
        self.api.call("POST", "/runs/%d/cancel" % again)
        self.api.wait(again, timeout=60)


if __name__ == "__main__":
    unittest.main()
