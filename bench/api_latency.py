#!/usr/bin/python3
# api_latency.py - latency of GET /api/v1/runs/{id}/summary (and, for
# context, GET /runs/{id}, GET /runs?limit=50, GET /healthz) on a history of runs.
#
# Run:   /usr/bin/python3 bench/api_latency.py [--runs 300] [--pad 9700] [--gets 2000] [--reps 3]
#        (default: a 10,000-run history, ~1 min; --pad 0 for a quick 300-run one)
# --pad N adds N more runs through the API (queued behind a blocking run that
# waits on a mock with a one-hour TTFT, then cancelled while queued: they hold
# a spec but no summary), so the history reaches the brief's 10,000 runs.
# Needs: a Release build in build-bench/ (or $HEADROOM_BIN), 2 CPUs.
#
# Setup: headroomd pinned to CPU 1; this client and headroom-mock on CPU 0.
# History: --runs real runs created with POST /runs (chat stream, 1 request,
# OSL 16, each with a stored summary), then optionally --pad cancelled runs.
# Measurement: one keep-alive HTTP/1.1 connection (http.client), requests
# sent one after another; each latency is perf_counter from just before the
# request is written to the end of the body being read, so it includes this
# Python client's own cost (~tens of µs; the healthz row shows the floor).
# Summary ids are drawn uniformly from the runs that have a summary.
# Reports p50/p99/max per repetition and the medians across repetitions.

import argparse
import http.client
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as h  # noqa: E402


def pct(xs, p):
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def timed_gets(port, paths, expect=200):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.connect()
    lat = []
    for p in paths:
        t = time.perf_counter()
        c.request("GET", p)
        r = c.getresponse()
        body = r.read()
        lat.append((time.perf_counter() - t) * 1e3)
        if r.status != expect:
            raise RuntimeError("GET %s: %d %s" % (p, r.status, body[:200]))
    c.close()
    return lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300, help="real runs (with summaries)")
    ap.add_argument("--pad", type=int, default=9700, help="extra cancelled runs")
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--daemon-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.sched_setaffinity(0, {a.client_cpu})

    h.warn_if_busy()
    mock = h.start_mock([a.client_cpu])
    slow = None
    d = h.start_daemon([a.daemon_cpu])
    api = h.Api(d.port)
    res = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "reps": []}
    try:
        t = time.monotonic()
        ids = [api.submit(h.chat_spec(mock.port, 16, 1, 1, 16, 1, name="history %d" % i))
               for i in range(a.runs)]
        last = api.wait(ids[-1], poll=0.2, timeout=3600)
        for i in ids:
            st, j = api.call("GET", "/runs/%d" % i)
            if j["state"] != "succeeded":
                raise RuntimeError("history run %d: %s %s" % (i, j["state"], j.get("reason")))
        h.log("%d real runs in %.1f s (%.1f ms each)" %
              (a.runs, time.monotonic() - t, (time.monotonic() - t) / a.runs * 1e3))
        if a.pad:
            t = time.monotonic()
            slow = h.start_mock([a.client_cpu], ["--ttft-ms", "3600000"])
            blocker = api.submit({"name": "blocker",
                                  "target": {"url": "http://127.0.0.1:%d" % slow.port,
                                             "model": "m"},
                                  "load": {"concurrency": 1, "duration_s": 3600},
                                  "workers": 1})
            while api.call("GET", "/runs/%d" % blocker)[1]["state"] == "queued":
                time.sleep(0.05)
            pads = [api.submit({"name": "pad %d" % i, "labels": {"bench": "api_latency"},
                                "target": {"url": "http://127.0.0.1:9", "model": "m"},
                                "load": {"requests": 1}}) for i in range(a.pad)]
            for p in pads:
                st, j = api.call("POST", "/runs/%d/cancel" % p)
                if st != 202 or j["state"] != "cancelled":
                    raise RuntimeError("pad run %d: %s %s" % (p, st, j))
            api.call("POST", "/runs/%d/cancel" % blocker)
            api.wait(blocker)
            h.log("%d padding runs in %.1f s" % (a.pad, time.monotonic() - t))
        total = api.call("GET", "/healthz")[1]
        st, lst = api.call("GET", "/runs?limit=1")
        res["history_runs"] = lst["runs"][0]["id"]
        res["summary_bytes"] = len(json.dumps(api.call("GET", "/runs/%d/summary" % ids[0])[1]))
        rng = random.Random(1)
        for rep in range(a.reps):
            paths = ["/api/v1/runs/%d/summary" % rng.choice(ids) for _ in range(a.gets)]
            timed_gets(d.port, paths[:100])  # warm-up
            s0, oth = h.sys_cpu(), h.Others([d.pid, mock.pid])
            c0 = sum(h.thread_cpu_ns(d.pid).values())
            lat = timed_gets(d.port, paths)
            c1 = sum(h.thread_cpu_ns(d.pid).values())
            steal = 100 * h.steal_frac(s0, h.sys_cpu())
            others = 100 * oth.share()
            r = {"rep": rep, "steal_pct": steal, "others_pct": others,
                 "summary": lat, "summary_daemon_us": (c1 - c0) / a.gets / 1e3,
                 "run": timed_gets(d.port, ["/api/v1/runs/%d" % rng.choice(ids)
                                            for _ in range(a.gets // 4)]),
                 "list": timed_gets(d.port, ["/api/v1/runs?limit=50"] * (a.gets // 4)),
                 "healthz": timed_gets(d.port, ["/api/v1/healthz"] * (a.gets // 4))}
            res["reps"].append(r)
            h.log("rep %d: summary p50 %.3f p99 %.3f max %.3f ms" %
                  (rep, pct(lat, 50), pct(lat, 99), max(lat)))
    finally:
        h.stop_daemon(d)
        mock.stop()
        if slow:
            slow.stop()

    mach = res["machine"]
    print("api_latency: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                     res["git"]))
    print("history: %d runs (%d with a summary of ~%d bytes, %d cancelled pads); %d GETs per "
          "repetition, %d repetitions; ms, medians across repetitions [per repetition]" %
          (res["history_runs"], a.runs, res["summary_bytes"], a.pad, a.gets, a.reps))
    print("| request | n/rep | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for key, name in (("summary", "GET /runs/{id}/summary"), ("run", "GET /runs/{id}"),
                      ("list", "GET /runs?limit=50"), ("healthz", "GET /healthz")):
        p50 = [pct(r[key], 50) for r in res["reps"]]
        p99 = [pct(r[key], 99) for r in res["reps"]]
        mx = [max(r[key]) for r in res["reps"]]
        print("| %s | %d | %.3f %s | %.3f %s | %.3f %s |" %
              (name, len(res["reps"][0][key]), h.med(p50), h.fmt_runs(p50, "%.3f"), h.med(p99),
               h.fmt_runs(p99, "%.3f"), h.med(mx), h.fmt_runs(mx, "%.3f")))
    print("daemon CPU per summary GET: %.1f µs %s" %
          (h.med([r["summary_daemon_us"] for r in res["reps"]]),
           h.fmt_runs([r["summary_daemon_us"] for r in res["reps"]], "%.1f")))
    print("hypervisor steal during the summary GETs: %s %%; other processes: %s %% of both CPUs" %
          (h.fmt_runs([r["steal_pct"] for r in res["reps"]], "%.0f"),
           h.fmt_runs([r["others_pct"] for r in res["reps"]], "%.0f")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
