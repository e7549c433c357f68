"""test_history.py - the run history over real processes: label selectors,
filters, sorting and keyset paging of GET /runs; PATCH and DELETE of runs;
repeat groups and their spread; GET /compare (identical runs unchanged, a
10% slower mock found worse on TTFT, intervals and the rank test checked
against scipy on the exported records, a client-bound side flagged); named
baselines; series with shifts; validity; threshold and regression gates;
and the 4xx answers of bad input.

Run: HEADROOM_BIN=build-check/bin /usr/bin/python3 tests/integration/test_history.py -v
"""

import json
import math
import unittest

import hrtest

# mock timing: TTFT 30 ms and 4 ms between tokens; the "slow" mock's TTFT
# is 10% longer. The comparison of identical runs uses its own, slower
# mock (TTFT 100 ms, ITL 10 ms) so that a busy machine's few milliseconds
# of client overhead stay inside the 5% noise band.
TTFT_MS, ITL_MS = 30, 4


def small_spec(addr, name="hist", labels=None, requests=60, **extra):
    spec = hrtest.spec(addr, concurrency=4, requests=requests)
    spec["name"] = name
    spec["labels"] = labels or {}
    spec["workload"] = {"isl": {"mean": 16, "stddev": 0}, "osl": {"mean": 8, "stddev": 0},
                        "seed": 3}
    spec["validity"] = {"percentile": "p90"}
    spec.update(extra)
    return spec


class History(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", str(TTFT_MS), "--itl-ms",
                                     str(ITL_MS)))
        cls.slow = hrtest.start_mock("--quiet", "--ttft-ms", str(TTFT_MS * 1.1), "--itl-ms",
                                     str(ITL_MS))

    @classmethod
    def tearDownClass(cls):
        cls.slow.stop()
        super().tearDownClass()

    def run_spec(self, spec, state="succeeded"):
        rid = self.api.submit(spec)
        run = self.api.wait(rid, timeout=120)
        self.assertEqual(run["state"], state, run.get("reason"))
        return run

    def get(self, path, want=200):
        st, body, _ = self.api.call("GET", path)
        self.assertEqual(st, want, body)
        return body

    def error_field(self, method, path, body, status, field):
        st, ans, _ = self.api.call(method, path, body)
        self.assertEqual(st, status, ans)
        self.assertEqual(ans["error"]["field"], field, ans)
        return ans

    # --- lists ----------------------------------------------------------------

    def test_list_filters_sorting_and_paging(self):
        a = self.run_spec(small_spec(self.mock.addr, "alpha run", {"model": "m1", "branch": "main"}))
        b = self.run_spec(small_spec(self.mock.addr, "beta run", {"model": "m2", "branch": "main"}))
        c = self.run_spec(small_spec(self.mock.addr, "gamma", {"model": "m1"}, requests=40))
        ids = lambda ans: [r["id"] for r in ans["runs"]]
        got = ids(self.get("/runs?label.model=m1&limit=1000"))
        self.assertIn(a["id"], got)
        self.assertIn(c["id"], got)
        self.assertNotIn(b["id"], got)
        got = ids(self.get("/runs?label.model!=m1&label.branch&limit=1000"))
        self.assertIn(b["id"], got)
        self.assertNotIn(a["id"], got)
        got = ids(self.get("/runs?label.branch!&label.model=m1&limit=1000"))
        self.assertEqual([c["id"]], [i for i in got if i in (a["id"], b["id"], c["id"])])
        got = ids(self.get("/runs?name=ALPHA&limit=1000"))
        self.assertIn(a["id"], got)
        self.assertNotIn(b["id"], got)
        # the same workload is one fingerprint; a different request count is another
        self.assertEqual(a["fingerprint"], b["fingerprint"])
        self.assertNotEqual(a["fingerprint"], c["fingerprint"])
        got = ids(self.get("/runs?fingerprint=%s&limit=1000" % a["fingerprint"]))
        self.assertIn(a["id"], got)
        self.assertNotIn(c["id"], got)
        got = ids(self.get("/runs?since=2000-01-01&until=2999-01-01T00:00:00Z&limit=1000"))
        self.assertIn(a["id"], got)
        self.assertEqual(ids(self.get("/runs?until=2000-01-01")), [])
        self.assertEqual(ids(self.get("/runs?until=0")), [])
        # sort by a metric, paged with the cursor: the concatenated pages
        # are the whole sorted list
        whole = self.get("/runs?sort=time_to_first_token.p50&limit=1000")
        vals = [r["sort_value"] for r in whole["runs"] if r["sort_value"] is not None]
        self.assertEqual(vals, sorted(vals))
        pages, cursor = [], None
        while True:
            q = "/runs?sort=time_to_first_token.p50&limit=2" + ("&cursor=" + cursor if cursor else "")
            ans = self.get(q)
            pages += ids(ans)
            cursor = ans["next_cursor"]
            if not cursor:
                break
        self.assertEqual(pages, ids(whole))
        # the client verdict and validity sort on the server too, paged
        # alike, unknown ones last in either direction
        rank = {"ok": 0, "inconclusive": 1, "client_bound": 2}
        for key, of in (("verdict", lambda r: rank.get(r["verdict"])),
                        ("valid", lambda r: None if r["valid"] is None else int(r["valid"]))):
            for sign in ("", "-"):
                whole = self.get("/runs?sort=%s%s&limit=1000" % (sign, key))
                for r in whole["runs"]:
                    self.assertEqual(r["sort_value"], of(r), (key, r["id"]))
                known = [of(r) for r in whole["runs"] if of(r) is not None]
                self.assertEqual(known, sorted(known, reverse=bool(sign)))
                self.assertEqual([of(r) for r in whole["runs"]][:len(known)], known)
                pages, cursor = [], None
                while True:
                    ans = self.get("/runs?sort=%s%s&limit=2" % (sign, key) +
                                   ("&cursor=" + cursor if cursor else ""))
                    pages += ids(ans)
                    cursor = ans["next_cursor"]
                    if not cursor:
                        break
                self.assertEqual(pages, ids(whole), (key, sign))
        by_name = [r["name"] for r in self.get("/runs?sort=name&limit=1000")["runs"]]
        self.assertEqual(by_name, sorted(by_name))
        # name order pages too, and a cursor belongs to its sort
        pages, cursor = [], None
        while True:
            ans = self.get("/runs?sort=-name&limit=2" + ("&cursor=" + cursor if cursor else ""))
            pages += [r["name"] for r in ans["runs"]]
            cursor = ans["next_cursor"]
            if not cursor:
                break
        self.assertEqual(pages, sorted(by_name, reverse=True))
        id_cursor = self.get("/runs?limit=1")["next_cursor"]
        self.error_field("GET", "/runs?sort=time_to_first_token.p50&cursor=" + id_cursor, None,
                         400, "cursor")
        row = [r for r in whole["runs"] if r["id"] == a["id"]][0]
        self.assertEqual(row["verdict"], a["summary"]["client"]["verdict"])
        self.assertTrue(row["valid"])

    def test_list_bad_queries(self):
        for q, field in (("label.=x", "label."), ("sort=nope", "sort"),
                         ("sort=time_to_first_token.p42", "sort"), ("since=yesterday", "since"),
                         ("fingerprint=XYZ", "fingerprint"), ("cursor=zz", "cursor"),
                         ("state=done", "state"), ("sort=name&before=3", "before"),
                         ("since=2026-02-31", "since"), ("until=2026-01-01T00:00:00.Z", "until")):
            st, ans, _ = self.api.call("GET", "/runs?" + q)
            self.assertEqual(st, 400, q)
            self.assertEqual(ans["error"]["field"], field, q)

    # --- edits ----------------------------------------------------------------

    def test_patch_and_delete(self):
        run = self.run_spec(small_spec(self.mock.addr, "to edit", {"a": "1", "b": "2"}))
        rid = run["id"]
        st, ans, _ = self.api.call("PATCH", "/runs/%d" % rid,
                                   {"labels": {"b": None, "c": "3"}, "note": "flaky host",
                                    "pinned": True})
        self.assertEqual(st, 200, ans)
        self.assertEqual(ans["labels"], {"a": "1", "c": "3"})
        self.assertEqual(ans["note"], "flaky host")
        self.assertTrue(ans["pinned"])
        self.assertIn(rid, [r["id"] for r in self.get("/runs?label.c=3")["runs"]])
        self.assertNotIn(rid, [r["id"] for r in self.get("/runs?label.b=2")["runs"]])
        self.error_field("PATCH", "/runs/%d" % rid, {"labels": {"x": 5}}, 400, "labels.x")
        self.error_field("PATCH", "/runs/%d" % rid, {"colour": "red"}, 400, "colour")
        self.error_field("PATCH", "/runs/%d" % rid, {"pinned": "yes"}, 400, "pinned")
        self.error_field("PATCH", "/runs/999999", {"note": "x"}, 404, "id")
        st, _, _ = self.api.call("DELETE", "/runs/%d" % rid)
        self.assertEqual(st, 204)
        self.get("/runs/%d" % rid, want=404)
        self.get("/runs/%d/records" % rid, want=404)
        st, _, _ = self.api.call("DELETE", "/runs/%d" % rid)
        self.assertEqual(st, 404)

    def test_delete_refuses_a_running_run(self):
        spec = small_spec(self.mock.addr, "long", requests=100000)
        rid = self.api.submit(spec)
        self.api.wait(rid, states=("running",))
        self.error_field("DELETE", "/runs/%d" % rid, None, 409, "id")
        self.api.call("POST", "/runs/%d/cancel" % rid)
        self.api.wait(rid)
        st, _, _ = self.api.call("DELETE", "/runs/%d" % rid)
        self.assertEqual(st, 204)

    # --- groups and comparisons -----------------------------------------------

    def test_repeats_form_a_group(self):
        spec = small_spec(self.mock.addr, "repeated", repeat={"count": 3, "cooldown_s": 0.1})
        st, ans, _ = self.api.call("POST", "/runs", spec)
        self.assertEqual(st, 201, ans)
        self.assertEqual(len(ans["run_ids"]), 3)
        for rid in ans["run_ids"]:
            self.assertEqual(self.api.wait(rid)["state"], "succeeded")
        g = self.get("/groups/%d" % ans["group_id"])
        self.assertEqual(g["state"], "finished")
        self.assertEqual(g["summary"]["repeats"], 3)
        p50 = g["summary"]["metrics"]["time_to_first_token"]["p50"]
        per_run = [self.get("/runs/%d" % rid)["summary"]["metrics"]["time_to_first_token"]["p50"]
                   for rid in ans["run_ids"]]
        self.assertAlmostEqual(p50["mean"], sum(per_run) / 3, places=9)
        self.assertEqual(p50["n"], 3)
        lo, hi = p50["ci"]
        self.assertLessEqual(lo, p50["mean"])
        self.assertGreaterEqual(hi, p50["mean"])
        # a group compared with itself: run level, every figure unchanged
        cmp = self.get("/compare?base=group:%d&head=group:%d" % (ans["group_id"], ans["group_id"]))
        self.assertEqual(cmp["level"], "runs")
        self.assertEqual(cmp["counts"]["worse"] + cmp["counts"]["better"], 0)
        self.get("/groups/999999", want=404)

    def test_cooldown_between_repeats_only(self):
        # the pause comes between the group's runs, not after its last one
        import datetime
        spec = small_spec(self.mock.addr, "cool", requests=10, repeat={"count": 2, "cooldown_s": 5})
        st, ans, _ = self.api.call("POST", "/runs", spec)
        self.assertEqual(st, 201, ans)
        after = self.api.submit(small_spec(self.mock.addr, "after", requests=10))
        runs = [self.api.wait(i, timeout=60) for i in ans["run_ids"] + [after]]
        t = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
        self.assertGreaterEqual(t(runs[1]["started_at"]) - t(runs[0]["finished_at"]), 5)
        self.assertLess(t(runs[2]["started_at"]) - t(runs[1]["finished_at"]), 5)

    def test_compare_identical_and_slower(self):
        calm = hrtest.start_mock("--quiet", "--ttft-ms", "100", "--itl-ms", "10")
        self.addCleanup(calm.stop)
        spec = small_spec(calm.addr, "cmp", requests=300, warmup={"requests": 10})
        spec["load"]["concurrency"] = 10
        same = [self.run_spec(spec) for _ in range(3)]
        spec = small_spec(self.mock.addr, "cmp", requests=400, warmup={"requests": 10})
        spec["load"]["concurrency"] = 8
        base = self.run_spec(spec)
        slow_spec = json.loads(json.dumps(spec))
        slow_spec["target"]["url"] = "http://" + self.slow.addr
        slow = self.run_spec(slow_spec)
        # identical runs: the false-alarm rate over every pair, on the
        # figures the mock fixes (latencies far above the client's own
        # overhead): at most one better/worse in 18 verdicts (the rate of
        # the method itself is measured by simulation in test_cmprule.c)
        verdicts = []
        for i, j in ((0, 1), (0, 2), (1, 2)):
            c = self.get("/compare?base=%d&head=%d" % (same[i]["id"], same[j]["id"]))
            self.assertEqual(c["level"], "requests")
            verdicts += [e for e in c["metrics"]
                         if e["metric"] in ("time_to_first_token", "request_latency")
                         and e["stat"] in ("avg", "p50", "p90")]
        self.assertEqual(len(verdicts), 18)
        alarms = [e for e in verdicts if e["verdict"] in ("better", "worse")]
        self.assertLessEqual(len(alarms), 1, alarms)
        # the 10% slower mock: worse on TTFT, by about 10%
        c = self.get("/compare?base=%d&head=%d" % (base["id"], slow["id"]))
        e = [e for e in c["metrics"] if e["metric"] == "time_to_first_token" and e["stat"] == "p50"][0]
        self.assertEqual(e["verdict"], "worse", e)
        self.assertGreater(e["diff_pct"], 7)
        self.assertLess(e["diff_pct"], 12)
        self.assertLess(e["ci_pct"][0], e["diff_pct"])
        self.assertGreater(e["ci_pct"][1], e["diff_pct"])
        self.assertIn({"field": "target.url", "base": base["spec"]["target"]["url"],
                       "head": slow["spec"]["target"]["url"]}, c["spec_differences"])
        # request-level statistics against scipy on the exported records
        self.check_against_scipy(base["id"], slow["id"], c)
        # the same seed gives the same intervals
        again = self.get("/compare?base=%d&head=%d" % (base["id"], slow["id"]))
        self.assertEqual(again["metrics"], c["metrics"])

    def ttfts(self, rid):
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % rid)
        self.assertEqual(st, 200)
        out = []
        for line in text.splitlines():
            r = json.loads(line)
            if r["phase"] == "profiling" and r["valid"] and r["time_to_first_token"] is not None:
                out.append(r["time_to_first_token"])
        return out

    def check_against_scipy(self, base_id, head_id, cmp):
        import numpy
        from scipy import stats
        a, b = self.ttfts(base_id), self.ttfts(head_id)
        u = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
        shift = [s for s in cmp["shifts"] if s["metric"] == "time_to_first_token"][0]
        self.assertAlmostEqual(shift["u"], float(u.statistic), places=6)
        if u.pvalue > 1e-300:
            self.assertLess(abs(shift["p_value"] - u.pvalue), 1e-9 + 1e-6 * u.pvalue)
        # Welch interval of the mean difference
        va, vb = numpy.var(a, ddof=1) / len(a), numpy.var(b, ddof=1) / len(b)
        df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
        half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
        d = numpy.mean(b) - numpy.mean(a)
        e = [e for e in cmp["metrics"] if e["metric"] == "time_to_first_token" and e["stat"] == "avg"][0]
        self.assertAlmostEqual(e["diff"], d, places=9)
        self.assertAlmostEqual(e["ci"][0], d - half, places=7)
        self.assertAlmostEqual(e["ci"][1], d + half, places=7)
        # percentiles are numpy's
        e = [e for e in cmp["metrics"] if e["metric"] == "time_to_first_token" and e["stat"] == "p90"][0]
        self.assertEqual(e["base"], hrtest.numpy_percentile(a, 90))
        self.assertEqual(e["head"], hrtest.numpy_percentile(b, 90))

    def test_compare_bad_input(self):
        run = self.run_spec(small_spec(self.mock.addr, "one"))
        rid = run["id"]
        self.error_field("GET", "/compare?base=%d" % rid, None, 400, "head")
        self.error_field("GET", "/compare?base=%d&head=abc" % rid, None, 400, "head")
        self.error_field("GET", "/compare?base=999999&head=%d" % rid, None, 404, "base")
        self.error_field("GET", "/compare?base=baseline:nope&head=%d" % rid, None, 404, "base")
        self.error_field("GET", "/compare?base=%d&head=%d&confidence=2" % (rid, rid), None, 400,
                         "confidence")
        long_run = self.api.submit(small_spec(self.mock.addr, "long", requests=100000))
        self.api.wait(long_run, states=("running",))
        self.error_field("GET", "/compare?base=%d&head=%d" % (rid, long_run), None, 409, "head")
        self.api.call("POST", "/runs/%d/cancel" % long_run)
        self.api.wait(long_run)

    def test_client_bound_side_is_flagged(self):
        # one worker asked for far more than it can send (test_client.py)
        spec = small_spec(self.mock.addr, "too much")
        spec["load"] = {"mode": "rate", "rate": 30000, "duration_s": 1.5}
        rid = self.api.submit(spec)
        bound = self.api.wait(rid)
        self.assertEqual(bound["summary"]["client"]["verdict"], "client_bound")
        ok = self.run_spec(small_spec(self.mock.addr, "fine"))
        c = self.get("/compare?base=%d&head=%d" % (ok["id"], rid))
        codes = [(w["side"], w["code"]) for w in c["warnings"]]
        self.assertIn(("head", "client_bound"), codes)
        self.assertIn(("head", "invalid"), codes)
        self.assertFalse(bound["valid"])
        self.assertIn("client_bound",
                      [r["code"] for r in bound["summary"]["validity"]["reasons"]])

    # --- baselines, series, validity and gates --------------------------------

    def test_baselines_series_validity_and_gates(self):
        labels = {"suite": "gates", "branch": "main"}
        spec = small_spec(self.mock.addr, "gated", labels, requests=400)
        spec["load"]["concurrency"] = 8
        # the baseline rule takes valid runs only, and a busy test machine can
        # make any run's client verdict client_bound (so invalid): this test
        # is about baselines and gates, test_client_bound_side_is_flagged
        # about the client
        spec["client"] = {"allow_client_bound": True}
        base = self.run_spec(spec)
        st, bl, _ = self.api.call("PUT", "/baselines/main-gates",
                                  {"rule": {"labels": {"suite": "gates", "branch": "main"}}})
        self.assertEqual(st, 201, bl)
        self.assertEqual(bl["resolves_to"], [base["id"]])
        st, bl2, _ = self.api.call("PUT", "/baselines/pinned", {"run": base["id"]})
        self.assertEqual(st, 201)
        self.assertIn("main-gates", [b["name"] for b in self.get("/baselines")["baselines"]])
        # a threshold that fails, one that passes, and a regression gate
        # against the rule baseline, on a 10% slower server
        gated = json.loads(json.dumps(spec))
        gated["target"]["url"] = "http://" + self.slow.addr
        gated["labels"] = {"suite": "gates", "branch": "feature"}
        gated["gates"] = [
            {"metric": "time_to_first_token", "stat": "p50", "op": "<", "value": TTFT_MS},
            {"metric": "error_rate", "op": "<", "value": 0.01},
            {"metric": "time_to_first_token", "stat": "p50",
             "regression": {"baseline": "main-gates", "max_pct": 3}},
            {"metric": "output_sequence_length", "stat": "avg",
             "regression": {"baseline": base["id"], "max_pct": 3}},
        ]
        run = self.run_spec(gated)
        g = run["summary"]["gates"]
        self.assertFalse(g["passed"])
        res = {r["name"]: r for r in g["results"]}
        self.assertEqual([r["passed"] for r in g["results"]], [False, True, False, True], res)
        reg = g["results"][2]
        self.assertEqual(reg["baseline"]["runs"], [base["id"]])
        self.assertGreater(reg["ci_pct"][0], 3)
        self.assertEqual(run["gates"], "failed")
        self.assertIn(run["id"], [r["id"] for r in self.get("/runs?label.suite=gates")["runs"]])
        # validity: 400 valid requests support p90 (needs 29)
        v = run["summary"]["validity"]
        self.assertTrue(v["valid"], v)
        self.assertEqual(v["checks"]["percentile_needs"], 29)
        claim = v["claims"][0]
        self.assertEqual((claim["metric"], claim["stat"]), ("time_to_first_token", "p50"))
        self.assertFalse(claim["holds"])
        # too few requests for p99: invalid, with the reason
        few = small_spec(self.mock.addr, "few", requests=50)
        few["validity"] = {"percentile": "p99"}
        run = self.run_spec(few)
        self.assertFalse(run["summary"]["validity"]["valid"])
        self.assertEqual(run["summary"]["validity"]["reasons"][0]["code"], "too_few_requests")
        self.assertIn("299", run["summary"]["validity"]["reasons"][0]["message"])
        self.assertFalse(run["valid"])
        # series: TTFT p50 of the suite, one point per branch
        s = self.get("/series?metric=time_to_first_token&stat=p50&label.suite=gates"
                     "&group_by=label.branch")
        self.assertEqual(s["group_by"], "label.branch")
        keys = [p["key"] for p in s["points"]]
        self.assertEqual(sorted(keys), ["feature", "main"])
        for p in s["points"]:
            self.assertGreaterEqual(p["n_runs"], 1)
        # deleting a baseline's run is refused; the baseline goes first
        self.error_field("DELETE", "/runs/%d" % base["id"], None, 409, "id")
        for name in ("pinned", "main-gates"):
            st, _, _ = self.api.call("DELETE", "/baselines/" + name)
            self.assertEqual(st, 204)
        self.get("/baselines/pinned", want=404)

    def test_bad_specs_and_baselines(self):
        base = small_spec(self.mock.addr)
        for gates, field in (
                ([{"metric": "nope", "op": "<", "value": 1}], "gates[0].metric"),
                ([{"metric": "time_to_first_token", "stat": "p42", "op": "<", "value": 1}],
                 "gates[0].stat"),
                ([{"metric": "time_to_first_token", "op": "~", "value": 1}], "gates[0].op"),
                ([{"metric": "time_to_first_token"}], "gates[0]"),
                ([{"metric": "request_throughput", "stat": "p99", "op": ">", "value": 1}],
                 "gates[0].stat"),
                ([{"metric": "time_to_first_token", "regression": {"baseline": 0}}],
                 "gates[0].regression.baseline"),
                ([{"name": "", "metric": "error_rate", "op": "<", "value": 1}], "gates[0].name"),
                ("x", "gates")):
            spec = dict(base, gates=gates)
            self.error_field("POST", "/runs", spec, 400, field)
        self.error_field("POST", "/runs", dict(base, repeat={"count": 1}), 400, "repeat.count")
        self.error_field("POST", "/runs", dict(base, validity={"percentile": "p42"}), 400,
                         "validity.percentile")
        self.error_field("PUT", "/baselines/x", {"run": 999999}, 404, "run")
        self.error_field("PUT", "/baselines/x", {"rule": {"labels": {"a": 1}}}, 400,
                         "rule.labels.a")
        self.error_field("PUT", "/baselines/x", {"run": 1, "group": 2}, 400, None)
        self.error_field("GET", "/series?metric=nope", None, 400, "metric")
        self.error_field("GET", "/series?metric=time_to_first_token&stat=value", None, 400,
                         "stat")


class Retention(unittest.TestCase):
    def test_keeps_the_newest_per_fingerprint_and_spares_pins_and_baselines(self):
        tmp = hrtest.tempdir()
        self.addCleanup(tmp.cleanup)
        mock = hrtest.start_mock("--quiet")
        self.addCleanup(lambda: self.assertEqual(mock.stop(), 0))
        d = hrtest.start_daemon(tmp.name, "--retain-per-fingerprint", "2")
        self.addCleanup(lambda: self.assertEqual(d.stop(), 0))
        api = hrtest.Api(d.addr)
        spec = small_spec(mock.addr, "kept", requests=10)
        # the first is pinned, the second a baseline: after three more runs
        # of the same fingerprint, only what is neither and not among the
        # newest two goes
        ids = [api.submit(spec)]
        api.wait(ids[0])
        st, _, _ = api.call("PATCH", "/runs/%d" % ids[0], {"pinned": True})
        self.assertEqual(st, 200)
        ids.append(api.submit(spec))
        api.wait(ids[1])
        st, _, _ = api.call("PUT", "/baselines/keep", {"run": ids[1]})
        self.assertEqual(st, 201)
        for i in range(3):
            ids.append(api.submit(spec))
            api.wait(ids[-1])
        other = api.submit(small_spec(mock.addr, "other", requests=11))
        api.wait(other)
        st, ans, _ = api.call("GET", "/runs?limit=100")
        left = sorted(r["id"] for r in ans["runs"])
        # ids[2] was beyond the newest two (ids[3], ids[4]): removed
        self.assertEqual(left, sorted([ids[0], ids[1], ids[3], ids[4], other]))
        # ids are never reused
        nxt = api.submit(spec)
        self.assertGreater(nxt, other)
        api.wait(nxt)


if __name__ == "__main__":
    unittest.main()
