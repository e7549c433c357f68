"""test_shapes.py - traffic shapes through the whole service: rate runs
submitted over REST, their records exported, and the schedule, arrival
laws, warm-up, grace, cancellation, sessions and trace replay checked from
what was stored."""

import json
import math
import statistics
import unittest

import hrtest


# Under ASan/UBSan schedules, counts and accounting are checked exactly as
# always; the statistics of *actual* send times are judged in the optimised
# build of the same `make check`.
SANITIZED = hrtest.sanitized()


def rate_spec(mock, rate, law="poisson", workers=1, **extra):
    s = hrtest.spec(mock)
    s["load"] = {"mode": "rate", "rate": rate, "arrival": law}
    s["load"].update(extra)
    if "requests" not in s["load"] and "duration_s" not in s["load"]:
        s["load"]["requests"] = 400
    s["workers"] = workers
    return s


def cv(xs):
    m = statistics.fmean(xs)
    return statistics.pstdev(xs) / m


def ks_exponential(xs, rate):
    """Kolmogorov-Smirnov statistic of xs against Exp(rate)."""
    xs = sorted(xs)
    n = len(xs)
    d = 0.0
    for i, x in enumerate(xs):
        f = 1.0 - math.exp(-rate * x)
        d = max(d, (i + 1) / n - f, f - i / n)
    return d


def gamma_cdf(x, k, theta):
    """Regularised lower incomplete gamma P(k, x/theta), by series."""
    z = x / theta
    if z <= 0:
        return 0.0
    term = 1.0 / k
    total = term
    n = 1
    while term > 1e-15 * total and n < 100000:
        term *= z / (k + n)
        total += term
        n += 1
    return min(1.0, math.exp(k * math.log(z) - z - math.lgamma(k)) * total)


def ks_gamma(xs, k, mean):
    xs = sorted(xs)
    n = len(xs)
    d = 0.0
    for i, x in enumerate(xs):
        f = gamma_cdf(x, k, mean / k)
        d = max(d, (i + 1) / n - f, f - i / n)
    return d


class Shapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = hrtest.tempdir()
        cls.mock = hrtest.start_mock()
        cls.daemon = hrtest.start_daemon(cls.tmp.name)
        cls.api = hrtest.Api(cls.daemon.addr)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        cls.mock.stop()
        cls.tmp.cleanup()

    def run_spec(self, spec, state="succeeded"):
        run = self.api.wait(self.api.submit(spec), timeout=120)
        self.assertEqual(run["state"], state, run.get("reason"))
        st, text, _ = self.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        self.assertEqual(st, 200)
        return run, [json.loads(x) for x in text.splitlines()]

    @staticmethod
    def gaps(rows, key, phase="profiling"):
        ts = sorted(r[key] for r in rows if r["phase"] == phase)
        return [(b - a) / 1e9 for a, b in zip(ts, ts[1:])]

    def test_constant_rate_is_exact_and_split_across_workers(self):
        run, rows = self.run_spec(rate_spec(self.mock.addr, 400, "constant", workers=2,
                                            requests=400))
        self.assertEqual(len(rows), 400)
        self.assertEqual({r["worker"] for r in rows}, {0, 1})
        # the merged intended schedule is exactly one arrival every 2.5 ms
        intended = sorted(r["intended_ns"] for r in rows)
        self.assertEqual(intended[0], 0)
        diffs = {b - a for a, b in zip(intended, intended[1:])}
        self.assertTrue(all(abs(d - 2500000) <= 1 for d in diffs), diffs)
        load = run["summary"]["load"]
        self.assertEqual(load["requested_rate"], 400)
        self.assertIn("schedule_lag", run["summary"]["metrics"])
        if SANITIZED:
            return
        # The actual sends are as regular as the schedule unless the client
        # was late, and then the run's own schedule lag says so: a spread of
        # the actual gaps that the lag does not account for fails at once; a
        # late client (another process on these cores) is run again, and a
        # run whose every try was late passes on that evidence.
        for attempt in range(3):
            actual = self.gaps(rows, "start_ns")
            lag_p99 = run["summary"]["metrics"]["schedule_lag"]["p99"]
            if cv(actual) < 0.35:
                self.assertLess(abs(run["summary"]["load"]["achieved_rate"] - 400) / 400, 0.03)
                break
            self.assertGreater(lag_p99, 0.5, "actual gaps CV %.2f with a schedule lag p99 of "
                               "only %.3f ms" % (cv(actual), lag_p99))
            if attempt < 2:
                run, rows = self.run_spec(rate_spec(self.mock.addr, 400, "constant", workers=2,
                                                    requests=400))

    def test_poisson_actual_sends_follow_exponential(self):
        rate = 300
        # the intended schedule is exact; the actual sends carry the client's
        # jitter, so on a shared machine a run may be retried (at most 3)
        # seed 9's schedule is a typical Poisson sample (its own KS distance is
        # 0.015, against 0.054 at the 1% level), leaving room for client jitter
        spec = rate_spec(self.mock.addr, rate, "poisson", requests=900)
        spec["workload"]["seed"] = 9
        # The intended gaps are judged at the 1% level; the actual ones at
        # 0.1% (0.065 here), which a busy machine's jitter of a few small
        # gaps stays under while a wrong process does not (constant spacing
        # is at ~0.37, checked below).
        for attempt in range(3):
            run, rows = self.run_spec(spec)
            actual = self.gaps(rows, "start_ns")
            n = len(actual)
            crit = 1.63 / math.sqrt(n)  # 1% level
            crit_actual = 1.95 / math.sqrt(n)  # 0.1% level
            d = ks_exponential(actual, rate)
            if SANITIZED or (d < crit_actual and abs(cv(actual) - 1.0) < 0.15):
                break  # (under ASan the actual sends are not judged: no retry)
        self.assertLess(ks_exponential(self.gaps(rows, "intended_ns"), rate), crit)
        if not SANITIZED:
            self.assertLess(d, crit_actual)
            self.assertLess(abs(cv(actual) - 1.0), 0.15)
        # the same test rejects a constant-rate run: it can fail
        _, crow = self.run_spec(rate_spec(self.mock.addr, rate, "constant", requests=600))
        self.assertGreater(ks_exponential(self.gaps(crow, "start_ns"), rate), crit_actual)

    def test_gamma_burstiness(self):
        rate, k = 500, 0.25
        run, rows = self.run_spec(self._gamma_spec(rate, k))
        intended = self.gaps(rows, "intended_ns")
        self.assertLess(abs(cv(intended) - 2.0), 0.25)
        actual = self.gaps(rows, "start_ns")
        if not SANITIZED:
            self.assertLess(abs(cv(actual) - 2.0), 0.35)
        n = len(intended)
        self.assertLess(ks_gamma(intended, k, 1.0 / rate), 1.63 / math.sqrt(n))
        # and an exponential law is rejected for the same sample
        self.assertGreater(ks_exponential(intended, rate), 1.63 / math.sqrt(n))

    def _gamma_spec(self, rate, k):
        s = rate_spec(self.mock.addr, rate, "gamma", requests=2000)
        s["load"]["smoothness"] = k
        return s

    def test_same_seed_same_schedule(self):
        def sched(seed):
            s = rate_spec(self.mock.addr, 1000, "poisson", workers=2, requests=300)
            s["workload"]["seed"] = seed
            s["workload"]["isl"] = {"mean": 20, "stddev": 5}
            _, rows = self.run_spec(s)
            return sorted((r["req_id"], r["intended_ns"], r["isl"]) for r in rows)
        a, b, c = sched(11), sched(11), sched(12)
        self.assertEqual(a, b)
        self.assertNotEqual([x[1] for x in a], [x[1] for x in c])

    def test_independent_random_streams(self):
        """Each concern draws from its own stream: changing one setting
        leaves the others' draws (send times, input and output lengths)
        request by request as they were."""
        def draws(**change):
            s = rate_spec(self.mock.addr, 1000, "poisson", workers=2, requests=300)
            s["workload"].update(seed=7, isl={"mean": 20, "stddev": 5},
                                 osl={"mean": 8, "stddev": 2})
            for key, value in change.items():
                if key == "warmup":
                    s["warmup"] = value
                elif key == "cancel":
                    s["load"]["cancel"] = value
                else:
                    s["workload"][key] = value
            _, rows = self.run_spec(s)
            prof = [r for r in rows if r["phase"] == "profiling"]
            self.assertEqual(len(prof), 300)
            # (with a warm-up the profiling schedule starts after it)
            t0 = min(r["intended_ns"] for r in prof)
            return {r["req_id"]: (r["intended_ns"] - t0, r["isl"], r["osl"]) for r in prof}

        base = draws()
        self.assertGreater(len({v[1] for v in base.values()}), 5, "lengths vary")
        for change, same in (({"osl": {"mean": 12, "stddev": 3}}, (0, 1)),
                             ({"isl": {"mean": 30, "stddev": 4}}, (0, 2)),
                             ({"warmup": {"requests": 10}}, (0, 1, 2)),
                             ({"cancel": {"fraction": 0.3, "after_s": 30}}, (0, 1, 2))):
            other = draws(**change)
            self.assertEqual(set(other), set(base))
            for i in same:
                self.assertEqual([other[k][i] for k in sorted(base)],
                                 [base[k][i] for k in sorted(base)], (change, i))
            changed = {0, 1, 2} - set(same)
            for i in changed:  # and the changed setting did change its draws
                self.assertNotEqual([other[k][i] for k in sorted(base)],
                                    [base[k][i] for k in sorted(base)], (change, i))

    def test_ramp(self):
        s = rate_spec(self.mock.addr, 1000, "constant", duration_s=3.0, ramp_s=2.0)
        _, rows = self.run_spec(s)
        t = [r["intended_ns"] / 1e9 for r in rows]
        first = sum(1 for x in t if x < 1.0)
        ramp = sum(1 for x in t if x < 2.0)
        after = sum(1 for x in t if 2.0 <= x < 3.0)
        self.assertAlmostEqual(first / ramp, 0.25, delta=0.03)
        self.assertAlmostEqual(ramp, 1000, delta=20)  # area under the ramp
        self.assertAlmostEqual(after, 1000, delta=20)

    def test_warmup_is_stored_and_excluded(self):
        s = hrtest.spec(self.mock.addr, concurrency=4, requests=60)
        s["warmup"] = {"requests": 20, "load": {"concurrency": 2}}
        run, rows = self.run_spec(s)
        warm = [r for r in rows if r["phase"] == "warmup"]
        prof = [r for r in rows if r["phase"] == "profiling"]
        self.assertEqual((len(warm), len(prof)), (20, 60))
        self.assertGreater(min(r["start_ns"] for r in prof), max(r["done_ns"] for r in warm))
        summ = run["summary"]
        self.assertEqual(summ["counts"]["warmup"], 20)
        self.assertEqual(summ["counts"]["requests"], 60)
        self.assertEqual(summ["metrics"]["request_latency"]["count"], 60)

    def test_cancellation_and_grace_accounting(self):
        mock = hrtest.start_mock("--ttft-ms", "300", "--itl-ms", "10")
        try:
            s = rate_spec(mock.addr, 40, "constant", duration_s=1.0, grace_s=0.2)
            s["load"]["cancel"] = {"fraction": 0.5, "after_s": 0.1}
            run, rows = self.run_spec(s)
        finally:
            mock.stop()
        policy = [r for r in rows if "policy" in r["error_message"]]
        grace = [r for r in rows if "grace" in r["error_message"]]
        ok = [r for r in rows if r["valid"]]
        self.assertEqual(len(rows), 40)
        self.assertGreater(len(policy), 8)
        self.assertLess(len(policy), 32)
        for r in policy:
            self.assertEqual(r["error"], "cancelled")
            took = (r["done_ns"] - r["start_ns"]) / 1e9
            self.assertGreaterEqual(took, 0.05)
            if not SANITIZED:  # cancelled on time: judged in the optimised build
                # (never early; late only by what a stalled host adds,
                # far from the grace period's 1.2 s)
                self.assertGreaterEqual(took, 0.1 - 0.002)
                self.assertLess(took, 0.3)
        self.assertGreater(len(grace), 0)  # sends after 0.5 s cannot finish by 1.2 s
        self.assertEqual(len(policy) + len(grace) + len(ok), 40)
        self.assertEqual(run["summary"]["errors"].get("cancelled"), len(policy) + len(grace))

    def test_sessions(self):
        s = hrtest.spec(self.mock.addr, concurrency=2, requests=18)
        s["workload"]["sessions"] = {"turns": {"mean": 3}, "think_time_s": {"mean": 0.05}}
        run, rows = self.run_spec(s)
        self.assertEqual(len(rows), 18)  # the limit counts turns
        by = {}
        for r in rows:
            by.setdefault(r["session"], []).append(r)
        # the limit may cut the sessions in progress short (one per slot at most)
        complete = [t for t in by.values() if len(t) == 3]
        self.assertGreaterEqual(len(complete), 18 // 3 - 2)
        self.assertLessEqual(len(by) - len(complete), 2)
        for turns in by.values():
            turns.sort(key=lambda r: r["turn"])
            self.assertEqual([r["turn"] for r in turns], list(range(len(turns))))
            self.assertEqual(len({r["worker"] for r in turns}), 1)
            for a, b in zip(turns, turns[1:]):
                self.assertGreaterEqual(b["start_ns"] - a["done_ns"], 0.045e9)
                self.assertGreater(b["isl"], a["isl"])  # history accumulates

    def test_session_think_times_and_turns_follow_their_draws(self):
        s = hrtest.spec(self.mock.addr, concurrency=8, requests=240)
        s["workload"]["seed"] = 3
        s["workload"]["sessions"] = {"turns": {"mean": 4, "stddev": 1.5},
                                     "think_time_s": {"mean": 0.04, "stddev": 0.02}}
        _, rows = self.run_spec(s)
        by = {}
        for r in rows:
            by.setdefault(r["session"], []).append(r)
        thinks = []
        for turns in by.values():
            turns.sort(key=lambda r: r["turn"])
            for a, b in zip(turns, turns[1:]):
                # a later turn is intended at the previous answer's end plus
                # its think time: the difference is the drawn think time
                thinks.append((b["intended_ns"] - a["done_ns"]) / 1e9)
                self.assertGreaterEqual(b["start_ns"], b["intended_ns"])
        n = len(thinks)
        self.assertGreater(n, 100)
        mean = sum(thinks) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in thinks) / n)
        self.assertGreaterEqual(min(thinks), 0)
        self.assertLess(abs(mean - 0.04), 4 * 0.02 / math.sqrt(n) + 0.001, mean)
        self.assertTrue(0.014 < sd < 0.026, sd)
        # turns per conversation: those that began in the first half of the
        # run cannot have been cut short by the request limit
        starts = sorted(t[0]["start_ns"] for t in by.values())
        half = starts[len(starts) // 2]
        lengths = [len(t) for t in by.values() if t[0]["start_ns"] < half]
        m = sum(lengths) / len(lengths)
        spread = math.sqrt(sum((x - m) ** 2 for x in lengths) / len(lengths))
        self.assertLess(abs(m - 4), 4 * 1.5 / math.sqrt(len(lengths)), lengths)
        self.assertGreater(spread, 0.7, lengths)
        self.assertGreater(len(set(lengths)), 2, lengths)

    def test_trace_replay_with_speedup(self):
        lines = [json.dumps({"timestamp": 20 * i, "input_length": 10, "output_length": 4})
                 for i in range(50)]
        s = hrtest.spec(self.mock.addr)
        s["load"] = {"mode": "trace", "speedup": 2.0, "start_s": 0.1, "end_s": 0.9}
        s["workload"] = {"kind": "trace", "trace": "\n".join(lines)}
        s["workers"] = 2
        _, rows = self.run_spec(s)
        # entries at 100..880 ms, i.e. 40 of them, replayed 10 ms apart
        self.assertEqual(len(rows), 40)
        intended = sorted(r["intended_ns"] for r in rows)
        self.assertTrue(all(abs((b - a) - 10e6) < 1000 for a, b in zip(intended,
                                                                       intended[1:])))
        self.assertTrue(all(r["osl"] == 4 for r in rows))
        # and the actual sends follow: never early, the spacing kept (the
        # median of the gaps between starts is the replayed 10 ms)
        self.assertTrue(all(r["start_ns"] >= r["intended_ns"] for r in rows))
        starts = sorted(r["start_ns"] for r in rows)
        gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
        if not SANITIZED:  # actual send times: judged in the optimised build
            self.assertLess(abs(gaps[len(gaps) // 2] - 10e6), 1e6, gaps)
            self.assertLess(starts[-1] - starts[0], (39 * 10 + 30) * 1e6)

    def test_bad_trace_line_is_named(self):
        lines = [json.dumps({"timestamp": 0, "input_length": 10, "output_length": 4}),
                 '{"timestamp": 5, "input_length": "ten", "output_length": 4}']
        s = hrtest.spec(self.mock.addr)
        s["load"] = {"mode": "trace"}
        s["workload"] = {"kind": "trace", "trace": "\n".join(lines)}
        st, body, _ = self.api.call("POST", "/runs", s)
        self.assertEqual(st, 400)
        self.assertEqual(body["error"]["field"], "workload.trace")
        self.assertIn("line 2", body["error"]["message"])
        self.assertIn("input_length", body["error"]["message"])


class UnderLoad(unittest.TestCase):
    """Against the mock's continuous-batching model: burstiness widens the
    TTFT tail, and a client that falls behind shows it in scheduled latency."""

    def setUp(self):
        self.tmp = hrtest.tempdir()
        self.mock = hrtest.start_mock("--max-batch", "8", "--decode-ms", "2",
                                      "--decode-ms-per-seq", "0.2")
        self.daemon = hrtest.start_daemon(self.tmp.name)
        self.api = hrtest.Api(self.daemon.addr)

    def tearDown(self):
        self.daemon.stop()
        self.mock.stop()
        self.tmp.cleanup()

    def ttft_p99(self, law, k=None):
        s = rate_spec(self.mock.addr, 150, law, requests=450)
        if k:
            s["load"]["smoothness"] = k
        run = self.api.wait(self.api.submit(s), timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        return run["summary"]["metrics"]["time_to_first_token"]["p99"]

    def test_bursty_widens_ttft_tail(self):
        smooth = self.ttft_p99("constant")
        bursty = self.ttft_p99("gamma", 0.1)
        self.assertGreater(bursty, 1.5 * smooth)

    def test_scheduled_latency_exceeds_latency_when_client_is_capped(self):
        # a ceiling of 2 in flight cannot carry 150 req/s of ~20 ms requests
        s = rate_spec(self.mock.addr, 150, "constant", requests=300, max_concurrency=2)
        run = self.api.wait(self.api.submit(s), timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        m = run["summary"]["metrics"]
        self.assertGreater(m["schedule_lag"]["p50"], 50)
        self.assertGreater(m["scheduled_request_latency"]["p50"],
                           2 * m["request_latency"]["p50"])
        self.assertLess(run["summary"]["load"]["achieved_rate"], 140)
        self.assertEqual(run["summary"]["load"]["unsent"], 0)  # a count limit sends them all

    def test_arrivals_held_past_the_duration_are_counted_unsent(self):
        # 150 arrivals in 1 s, at most 2 in flight of ~20 ms requests: about
        # 100 go out, the rest are still waiting when the second ends
        s = rate_spec(self.mock.addr, 150, "constant", duration_s=1.0, max_concurrency=2)
        s["workers"] = 2
        run = self.api.wait(self.api.submit(s), timeout=120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        load = run["summary"]["load"]
        self.assertGreater(load["unsent"], 10)
        self.assertEqual(load["sent"] + load["unsent"], 150)
        self.assertEqual(run["summary"]["counts"]["requests"], load["sent"])


if __name__ == "__main__":
    unittest.main()
