#!/usr/bin/env python3
# agents_rate.py - one Poisson schedule split over three headroom-agents on
# network hosts made on this machine, against one local worker at the same
# rate (issue 15, "Benchmarks"; docs/performance.md section 11).
#
#   bench/build.sh && sudo HEADROOM_BIN=build-bench/bin bench/agents_rate.py
#       [--rates 2000,4000,6000,8000,10000,12000] [--factor 1.75] [--high R]
#       [--duration 5] [--repeat 2] [--json FILE]
#
# The hosts are those of tests/integration/test_agents.py, whose set-up this
# script imports and runs (it is not copied): the script moves into a network
# namespace of its own with a bridge 10.77.0.1/24, headroomd and headroom-mock
# (--ttft-ms 1 --itl-ms 1) listen on 10.77.0.1, and each agent runs in its
# own network namespace (10.77.0.1k, a veth pair to the bridge) and its own
# time namespace (monotonic clock shifted by 7, 11 and 3 s). Needs root.
#
# 1. The ceiling: one local worker (workers: 1) at each --rates value, 64
#    output tokens; the highest rate with schedule lag p99 < 1 ms, achieved
#    within 1% of the schedule's own rate, no errors and nothing unsent.
# 2. At --high (default --factor x the ceiling, rounded to 100/s): the same
#    spec with (a) one local worker, (b) placement {"local": 0, "agents":
#    [{"selector": {"role": "load"}, "workers": 1}]}, i.e. one worker on each
#    of the three agents; --repeat times each, alternating. Reported per run:
#    the merged schedule lag p50/p99/max, the achieved and the schedule's own
#    rate, unsent arrivals, each agent's share of the requests (from the
#    records), each worker's clock offset error against the known shift and
#    its bound, and the client verdict.
#
# Pinning: headroomd and its local workers on CPU 0 (--daemon-cpu),
# headroom-mock on CPU 1 (--mock-cpu); the agents and their workers are left
# to the scheduler (both CPUs). Before every measurement the script records
# `uptime`'s load averages (which include this script's own previous runs)
# and the share of both CPUs busy over one second while its own processes
# are idle (others' use of the machine).

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hrbench as hb  # noqa: E402

if "HEADROOM_BIN" not in os.environ:
    os.environ["HEADROOM_BIN"] = os.path.join(hb.ROOT, "build-bench", "bin")
sys.path.insert(0, os.path.join(hb.ROOT, "tests", "integration"))
import test_agents as ta  # noqa: E402

NS = 1_000_000_000
OSL = 64


def load1():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def spec(rate, duration, placed):
    s = {"name": "agents_rate %g/s %s" % (rate, "3 agents" if placed else "1 local"),
         "target": {"url": "http://" + ta.E.mock.addr, "model": "m", "endpoint": "chat",
                    "stream": True},
         "workload": {"isl": {"mean": 16, "stddev": 0}, "osl": {"mean": OSL, "stddev": 0},
                      "seed": 1},
         "load": {"mode": "rate", "rate": rate, "arrival": "poisson", "duration_s": duration,
                  "grace_s": 5},
         "telemetry": {"nvml": False, "dcgm_urls": [], "server_metrics": False},
         "client": {"allow_client_bound": True}}
    if placed:
        s["placement"] = {"local": 0, "agents": [{"selector": {"role": "load"}, "workers": 1}]}
    else:
        s["workers"] = 1
    return s


def measure(rate, duration, placed):
    la = load1()
    busy = hb.machine_load(1.0)  # ours idle: the share of both CPUs others used
    run = ta.E.api.wait(ta.E.api.submit(spec(rate, duration, placed)), 300)
    s = run.get("summary") or {}
    load = s.get("load") or {}
    lag = (s.get("metrics") or {}).get("schedule_lag") or {}
    sent, unsent = load.get("sent", 0), load.get("unsent", 0)
    r = {"rate": rate, "placed": placed, "run": run["id"], "state": run["state"],
         "reason": run.get("reason"), "uptime": la, "busy_before": busy, "sent": sent,
         "unsent": unsent,
         "own": (sent + unsent) / duration, "achieved": load.get("achieved_rate"),
         "errors": (s.get("counts") or {}).get("errors"),
         "lag_ms": {k: lag.get(k) for k in ("p50", "p99", "max")},
         "verdict": (s.get("client") or {}).get("verdict"),
         "valid": (s.get("validity") or {}).get("valid")}
    if placed and run["state"] == "succeeded":
        names = {w: a["name"] for a in (s.get("placement") or {}).get("agents", [])
                 for w in a["workers"]}
        st, text, _ = ta.E.api.call("GET", "/runs/%d/records?format=jsonl" % run["id"])
        by = {}
        if st == 200:
            for line in text.splitlines():
                if line.strip():
                    w = json.loads(line)["worker"]
                    by[w] = by.get(w, 0) + 1
        total = sum(by.values()) or 1
        r["share"] = {names.get(w, str(w)): round(n / total, 4) for w, n in sorted(by.items())}
        clock = []
        for w in (s.get("clock") or {}).get("workers", []):
            shift = ta.SHIFT[int(names[w["worker"]][2:])] * NS if w["worker"] in names else 0
            off = w.get("offset_ns")
            clock.append({"agent": names.get(w["worker"], "local"), "bound_us":
                          (w.get("bound_ns") or 0) / 1e3,
                          "error_us": None if off is None else abs(off - shift) / 1e3})
        r["clock"] = clock
    ok = (run["state"] == "succeeded" and r["achieved"] and lag.get("p99") is not None
          and lag["p99"] < 1.0 and unsent == 0 and not r["errors"]
          and abs(r["achieved"] - r["own"]) / r["own"] <= 0.01)
    r["sustained"] = bool(ok)
    hb.log("%s %g/s: run %d %s, load %s, lag p99 %s ms, achieved %s (own %.1f), unsent %d, "
           "verdict %s%s" % ("3 agents" if placed else "1 local", rate, run["id"], run["state"],
                             la, lag.get("p99"), r["achieved"], r["own"], unsent, r["verdict"],
                             (", share %s, clock %s" % (r.get("share"), r.get("clock")))
                             if placed else ""))
    return r


def row(r):
    lag = r["lag_ms"]

    def f(x, fmt):
        return "-" if x is None else fmt % x
    return "| %s | %d | %.2f | %.0f%% | %s | %.1f | %d | %s | %s | %s | %s | %s |" % (
        "3 agents" if r["placed"] else "1 local worker", r["run"], r["uptime"][0],
        100 * r["busy_before"],
        f(r["achieved"], "%.1f"), r["own"], r["unsent"], f(lag["p50"], "%.3f"),
        f(lag["p99"], "%.3f"), f(lag["max"], "%.2f"), r["verdict"],
        "yes" if r["sustained"] else "no")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rates", default="2000,4000,6000,8000,10000,12000")
    ap.add_argument("--factor", type=float, default=1.75)
    ap.add_argument("--high", type=float, help="the rate of step 2 (default: factor x ceiling)")
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--daemon-cpu", type=int, default=0)
    ap.add_argument("--mock-cpu", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    subprocess.run(["uptime"])
    hb.bindir()
    if os.geteuid() != 0:
        sys.exit("agents_rate: needs root (network and time namespaces)")
    hb.warn_if_busy()
    out = {"machine": hb.machine(), "build": hb.git_rev(), "ceiling_steps": [], "high": []}
    ta.setUpModule()
    try:
        hb.pin_all_threads(ta.E.daemon.p.pid, {a.daemon_cpu})
        hb.pin_all_threads(ta.E.mock.p.pid, {a.mock_cpu})
        ta.enroll()
        for k in (1, 2, 3):
            ta.ensure_agent(k)
        print("machine: %s; build: %s" % (out["machine"], out["build"]))
        print("layout: headroomd and its local worker on CPU %d, headroom-mock (--ttft-ms 1 "
              "--itl-ms 1) on CPU %d, the three agents and their workers on any CPU; "
              "%d CPUs in all" % (a.daemon_cpu, a.mock_cpu, os.cpu_count()))
        print("\n1. one local worker, %d output tokens, Poisson, %g s per rate\n" % (
            OSL, a.duration))
        head = ("| placement | run | load 1m | CPUs busy before | achieved/s | schedule/s "
                "| unsent | lag p50 ms | lag p99 ms | lag max ms | client verdict | sustained |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|")
        print(head)
        ceiling = None
        for rate in [float(x) for x in a.rates.split(",")]:
            r = measure(rate, a.duration, False)
            out["ceiling_steps"].append(r)
            print(row(r), flush=True)
            if r["sustained"]:
                ceiling = rate
        out["ceiling"] = ceiling
        print("\nceiling of one worker: %s" % ("none of the rates" if ceiling is None
                                               else "%g/s" % ceiling))
        high = a.high or round((ceiling or float(a.rates.split(",")[0])) * a.factor / 100) * 100
        out["high_rate"] = high
        print("\n2. %g/s: one local worker against three agents, %d times each\n" % (
            high, a.repeat))
        print(head)
        for _ in range(a.repeat):
            for placed in (False, True):
                r = measure(high, a.duration, placed)
                out["high"].append(r)
                print(row(r), flush=True)
        print("\nagents' shares and clocks (error: |measured offset - known shift|):")
        for r in out["high"]:
            if r["placed"]:
                print("run %d: share %s; clock %s" % (r["run"], r.get("share"), ", ".join(
                    "%s error %s us bound %.1f us" % (
                        c["agent"], "-" if c["error_us"] is None else "%.1f" % c["error_us"],
                        c["bound_us"]) for c in r.get("clock", []))))
    finally:
        ta.tearDownModule()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
