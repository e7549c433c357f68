#!/usr/bin/env python3
"""test_dataset_runs.py - uploaded datasets drive runs end to end
(workload.kind "dataset"): a ShareGPT file, a multi-turn JSONL file and a
Mooncake trace, each uploaded to a real headroomd and replayed by real
workers against headroom-mock, which counts prompt words, so each record's
input length says which entry (and how much history) was sent.

Checked: sequential sampling walks the entries in file order across
workers; ShareGPT output lengths are the replies' lengths; shuffle sends
every entry once before any repeats; a multi-turn conversation keeps its
turns in order with its history and its system prompt, and waits its
'delay'; random sampling (a random_pool's default, or asked for) draws
entries with replacement from workload.seed, the same per request for the
same seed and another sequence for another seed; a trace replays at its
timestamps; the stored spec names the dataset by content (sha256,
format); a spec naming a missing dataset, or one that does not suit the
load mode, is refused naming the field.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_dataset_runs.py
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrtest  # noqa: E402

MS = 1000000

SHAREGPT = [
    {"id": "a", "conversations": [{"from": "human", "value": "one two three"},
                                  {"from": "gpt", "value": "r1 r2 r3 r4 r5"}]},
    {"id": "x", "conversations": [{"from": "gpt", "value": "no question first"}]},
    {"id": "b", "conversations": [{"from": "system", "value": "ignored"},
                                  {"from": "human", "value": "w1 w2 w3 w4 w5 w6 w7"},
                                  {"from": "gpt", "value": "s1 s2"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "just two"},
                                  {"from": "gpt", "value": "t1 t2 t3 t4 t5 t6 t7 t8 t9"}]},
]
# entry prompts (words) and reply lengths, in file order
SG_ISL = [3, 7, 2]
SG_OSL = [5, 2, 9]

MULTI = [
    {"session_id": "s1", "turns": [{"role": "system", "text": "sys prompt here"},
                                   {"text": "a b", "output_length": 3},
                                   {"text": "c d e", "output_length": 4, "delay": 80}]},
    {"session_id": "s2", "turns": [{"text": "only one turn here", "output_length": 2}]},
]


# a pool of prompts of distinct word counts: the mock's ISL names the entry
POOL_ISL = [2, 3, 5, 7, 10, 13, 17, 22]
POOL = [{"text": " ".join("p%d" % w for w in range(n))} for n in POOL_ISL]


def jsonl(rows):
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


class DatasetRunsTest(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", "2", "--itl-ms", "1"))
        cls.sg = cls.upload(json.dumps(SHAREGPT).encode(), "sharegpt")
        cls.mt = cls.upload(jsonl(MULTI), "multi_turn")
        cls.trace = cls.upload(jsonl([{"timestamp": i * 40, "input_length": 6 + i,
                                       "output_length": 3} for i in range(8)]),
                               "mooncake_trace")

    @classmethod
    def upload(cls, data, fmt):
        st, body, _ = cls.api.call("POST", "/datasets?format=%s&name=t" % fmt, raw=data)
        if st != 201:
            raise AssertionError("upload %s: %s %s" % (fmt, st, body))
        return body

    def spec(self, ds, load, **dataset):
        d = {"id": ds["id"]}
        d.update(dataset)
        return {"name": "dataset run",
                "target": {"url": "http://" + self.mock.addr, "model": "mock-model",
                           "endpoint": "chat", "stream": True},
                "workload": {"kind": "dataset", "dataset": d},
                "load": load, "workers": 2}

    def records(self, spec):
        rid = self.api.submit(spec)
        run = self.api.wait(rid)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records" % rid)
        self.assertEqual(st, 200)
        return run, [json.loads(line) for line in text.splitlines()]

    def test_sharegpt_sequential(self):
        run, recs = self.records(self.spec(self.sg, {"mode": "concurrency", "concurrency": 3,
                                                     "requests": 12}))
        w = run["spec"]["workload"]["dataset"]
        self.assertEqual(w["format"], "sharegpt")
        self.assertEqual(w["sha256"], self.sg["sha256"])
        self.assertEqual(w["sampling"], "sequential")  # the default, filled in
        self.assertEqual(len(recs), 12)
        for r in recs:
            k = r["req_id"] % 3
            self.assertEqual(r["isl"], SG_ISL[k], r)
            self.assertEqual(r["osl"], SG_OSL[k], r)
        self.assertEqual(sorted(r["req_id"] for r in recs), list(range(12)))

    def test_shuffle_sends_every_entry_once_per_pass(self):
        _, recs = self.records(self.spec(self.sg, {"mode": "rate", "rate": 200,
                                                   "requests": 9}, sampling="shuffle"))
        by_id = {r["req_id"]: r["isl"] for r in recs}
        for first in (0, 3, 6):
            self.assertEqual(sorted(by_id[first + i] for i in range(3)), sorted(SG_ISL))

    def test_multi_turn_conversations(self):
        _, recs = self.records(self.spec(self.mt, {"mode": "concurrency", "concurrency": 2,
                                                   "requests": 6}))
        sessions = {}
        for r in recs:
            sessions.setdefault(r["session"], []).append(r)
        self.assertTrue(sessions)
        for turns in sessions.values():
            turns.sort(key=lambda r: r["turn"])
            self.assertEqual([r["turn"] for r in turns], list(range(len(turns))))
            if len(turns) == 1 and turns[0]["isl"] == 4:
                self.assertEqual(turns[0]["osl"], 2)  # s2: "only one turn here"
                continue
            # s1: system (3 words) + "a b"; then + answer (3) + "c d e"
            self.assertEqual(turns[0]["isl"], 3 + 2)
            self.assertEqual(turns[0]["osl"], 3)
            if len(turns) > 1:
                self.assertEqual(turns[1]["isl"], 3 + 2 + 3 + 3)
                self.assertEqual(turns[1]["osl"], 4)
                # its 'delay' after the first answer
                self.assertGreaterEqual(turns[1]["intended_ns"] - turns[0]["done_ns"],
                                        80 * MS - MS)

    def draws(self, ds, seed, **dataset):
        """ISL (the entry's word count) per req_id of a 40-request run."""
        spec = self.spec(ds, {"mode": "concurrency", "concurrency": 4, "requests": 40},
                         **dataset)
        spec["workload"].update(seed=seed, osl={"mean": 2})
        run, recs = self.records(spec)
        self.assertEqual(run["spec"]["workload"]["seed"], seed)
        self.assertEqual(sorted(r["req_id"] for r in recs), list(range(40)))
        for r in recs:
            self.assertEqual(r["isl_source"], "server_usage", r)
            self.assertEqual(r["osl"], 2, r)
        return [r["isl"] for r in sorted(recs, key=lambda r: r["req_id"])]

    def check_random(self, ds, **dataset):
        """Draws from ds with random sampling: real entries, varied, with
        replacement, repeated exactly by the same seed, not by another."""
        first = self.draws(ds, 7, **dataset)
        self.assertLessEqual(set(first), set(POOL_ISL), first)  # each a real entry
        self.assertGreater(len(set(first)), 1, first)           # not one entry over and over
        # neither the file order (sequential) nor a permutation per pass
        # (shuffle): some pass of 8 requests draws an entry twice (with 40
        # independent draws from 8 entries, all five passes without a
        # repeat has probability (8!/8^8)^5, about 1e-13)
        self.assertNotEqual(first, [POOL_ISL[k % 8] for k in range(40)])
        self.assertTrue(any(len(set(first[i:i + 8])) < 8 for i in range(0, 40, 8)), first)
        self.assertEqual(self.draws(ds, 7, **dataset), first)   # same seed, same draw per req_id
        other = self.draws(ds, 8, **dataset)
        self.assertLessEqual(set(other), set(POOL_ISL), other)
        self.assertNotEqual(other, first)                       # another seed, another sequence
        return first

    def test_random_sampling(self):
        """A random_pool is drawn at random by default; a single_turn
        dataset of the same lines with "sampling": "random" likewise."""
        pool = self.upload(jsonl(POOL), "random_pool")
        single = self.upload(jsonl(POOL), "single_turn")
        self.assertEqual(pool["sha256"], single["sha256"])  # one stored file
        drawn = self.check_random(pool)
        self.assertEqual(self.check_random(single, sampling="random"), drawn)
        # the same file walked in order without "random"
        self.assertEqual(self.draws(single, 7), [POOL_ISL[k % 8] for k in range(40)])

    def test_trace_replays_at_its_timestamps(self):
        _, recs = self.records(self.spec(self.trace, {"mode": "trace"}))
        self.assertEqual(len(recs), 8)
        recs.sort(key=lambda r: r["intended_ns"])
        for i, r in enumerate(recs):
            self.assertEqual(r["isl"], 6 + i)
            self.assertEqual(r["osl"], 3)
            self.assertEqual(r["intended_ns"], i * 40 * MS)

    def test_fixed_schedule_single_turn(self):
        """single_turn entries with timestamps replay in trace mode, in
        timestamp order, each with its own text; sampled otherwise."""
        timed = self.upload(jsonl([{"text": "a b c", "timestamp": 80, "output_length": 2},
                                   {"text": "d e", "timestamp": 0, "output_length": 2},
                                   {"text": "f g h i", "timestamp": 40},
                                   {"text": "j", "timestamp": 40}]), "single_turn")
        spec = self.spec(timed, {"mode": "trace", "speedup": 2})
        spec["workload"]["osl"] = {"mean": 5}
        _, recs = self.records(spec)
        recs.sort(key=lambda r: r["req_id"])
        self.assertEqual([(r["isl"], r["osl"], r["intended_ns"]) for r in recs],
                         [(2, 2, 0), (4, 5, 20 * MS), (1, 5, 20 * MS), (3, 2, 40 * MS)])
        _, recs = self.records(self.spec(timed, {"mode": "concurrency", "concurrency": 2,
                                                 "requests": 4}))
        recs.sort(key=lambda r: r["req_id"])
        self.assertEqual([r["isl"] for r in recs], [3, 2, 4, 1])  # file order

    def test_refused_specs(self):
        cases = [
            (self.spec({"id": 999}, {"mode": "concurrency", "concurrency": 2, "requests": 2}),
             "workload.dataset.id"),
            (self.spec(self.trace, {"mode": "rate", "rate": 5, "requests": 2}), "load.mode"),
            (self.spec(self.sg, {"mode": "trace"}), "load.mode"),
            (self.spec(self.upload(jsonl([{"text": "no time"}]), "single_turn"),
                       {"mode": "trace"}), "load.mode"),
            (self.spec(self.sg, {"mode": "rate", "rate": 5, "requests": 2}, sampling="zigzag"),
             "workload.dataset.sampling"),
        ]
        no_ds = self.spec(self.sg, {"mode": "rate", "rate": 5, "requests": 2})
        del no_ds["workload"]["dataset"]
        cases.append((no_ds, "workload.dataset"))
        for spec, field in cases:
            st, err, _ = self.api.call("POST", "/runs", spec)
            self.assertEqual(st, 400, (spec, err))
            self.assertEqual(err["error"]["field"], field, err)


if __name__ == "__main__":
    unittest.main()
