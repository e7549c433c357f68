#!/usr/bin/python3
# max_rate.py - the highest sustained request rate of one worker process, and
# how it scales with output length.
#
#   bench/build.sh && /usr/bin/python3 bench/max_rate.py [--osl 16,64,256,1024]
#       [--start 2000] [--step 1.25] [--max 40000] [--duration 5] [--json FILE]
#
# Two measurements per output length (chat, streamed, ISL 128 words, one
# worker, headroom-mock with zero simulated delay):
#
# 1. Open loop, stepping the rate. Poisson arrivals (seed 1) for --duration
#    seconds at --start requests/s, then x --step, until the rate is no
#    longer delivered or --max is passed. Two verdicts per step:
#    "delivered": the run succeeds without errors and the achieved rate
#    (sends over the span of actual starts) is within 1% of the schedule's
#    own rate (its arrivals / the duration: a Poisson sample deviates from
#    the nominal rate by about 1/sqrt(arrivals), which is not the worker's
#    doing); "punctual": also the schedule lag p99 (start - intended, from
#    the run's summary) is under 1 ms. Reported: the highest punctual rate
#    below the first step that was not (the target of the brief: >= 20,000/s
#    at 64 tokens, on one core), and the highest delivered rate.
#    --fifo runs the worker under SCHED_FIFO (chrt 10, all its threads),
#    which keeps other processes of a shared machine from delaying it: the
#    worker's own precision rather than the neighbours'.
# 2. Closed loop, the upper bound: concurrency 64 for --closed-requests
#    requests; the worker's CPU time per request gives what one core could
#    sustain (1 / CPU per request) if nothing else limited it.
#
# Layout: the worker alone on CPU 0 (re-pinned, all its threads, as soon as
# it appears), headroomd and the mock on CPU 1; --shared puts the daemon
# with the worker instead. The mock's own CPU share ("busy") says when it,
# not the worker, was the limit: a core serves ~11,000 streamed requests/s
# of 8 tokens, fewer as streams get longer, so on a two-core machine the
# mock caps the open-loop figure long before 20,000/s at 64 tokens. Worker
# CPU per request is from the daemon's reaped-children time (/proc).
# Other processes' CPU share is printed with every step: on a shared
# machine, wall-clock figures (lag, achieved rate) suffer first.

import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as hb  # noqa: E402


def pin_worker(daemon_pid, cpu, fifo, timeout=10.0):
    """Moves the run's worker (a child of the daemon) to cpu once it exists
    (all its threads; with fifo also to SCHED_FIFO priority 10)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = hb.children(daemon_pid)
        if kids:
            time.sleep(0.02)  # let ZeroMQ start its threads
            for k in kids:
                if cpu is not None:
                    hb.pin_all_threads(k, {cpu})
                if fifo:
                    for t in os.listdir("/proc/%d/task" % k):
                        try:
                            os.sched_setscheduler(int(t), os.SCHED_FIFO, os.sched_param(10))
                        except OSError as e:
                            hb.log("max_rate: SCHED_FIFO refused: %s" % e)
            return kids[0]
        time.sleep(0.002)
    hb.log("max_rate: no worker appeared to pin")
    return None


def spec_rate(port, osl, rate, duration, isl):
    return {"name": "max_rate osl %d %g/s" % (osl, rate),
            "target": {"url": "http://127.0.0.1:%d" % port, "model": "mock-model",
                       "stream": True},
            "workload": {"isl": {"mean": isl}, "osl": {"mean": osl}, "seed": 1},
            "load": {"mode": "rate", "rate": rate, "arrival": "poisson",
                     "duration_s": duration, "grace_s": 10},
            "telemetry": {"nvml": False, "dcgm_urls": [], "server_metrics": False},
            "workers": 1}


def settle(d, limit=10.0):
    """Waits until the daemon has finished with the last run (its CPU time
    stops growing): a run's worker starts with the daemon's affinity, and
    would share its core with the previous run's summary."""
    end = time.monotonic() + limit
    last = hb.proc_cpu(d.pid)[0]
    quiet = 0
    while time.monotonic() < end and quiet < 3:
        time.sleep(0.1)
        now = hb.proc_cpu(d.pid)[0]
        quiet = quiet + 1 if now - last < 0.005 else 0
        last = now


def restart(d, dcpus, e):
    """The daemon stopped answering: says so, with its last output, and
    starts another one."""
    hb.log("max_rate: the daemon stopped answering (%s, exit status %s); its last output:\n%s"
           % (e, d.p.poll(), "\n".join(x[2] for x in d.lines[-15:])))
    hb.stop_daemon(d)
    d = hb.start_daemon(dcpus, extra=("--default-workers", "1"))
    return d, hb.Api(d.port)


def measure(api, d, mock, spec, worker_cpu, fifo):
    """Submits spec, pins the worker, waits; returns the run and CPU figures.
    A run that failed because its worker went silent (a shared machine can
    stall a process for seconds) is run once more, and that is noted."""
    run, m = measure_once(api, d, mock, spec, worker_cpu, fifo)
    if run["state"] == "failed" and "silent" in (run.get("reason") or ""):
        hb.log("max_rate: %s: %s; once more" % (spec["name"], run["reason"]))
        run, m = measure_once(api, d, mock, spec, worker_cpu, fifo)
        m["retried"] = True
    return run, m


def measure_once(api, d, mock, spec, worker_cpu, fifo):
    settle(d)
    s0, oth = hb.sys_cpu(), hb.Others([d.pid, mock.pid])
    c0, m0, t0 = hb.proc_cpu(d.pid), hb.proc_cpu(mock.pid), time.monotonic()
    rid = api.submit(spec)
    if worker_cpu is not None or fifo:
        pin_worker(d.pid, worker_cpu, fifo)
    run = api.wait(rid, poll=0.05)
    c1, m1, t1 = hb.proc_cpu(d.pid), hb.proc_cpu(mock.pid), time.monotonic()
    s = run.get("summary") or {}
    n = (s.get("counts") or {}).get("requests") or 0
    # the worker's event-loop wake-ups (its SAMPLE messages), per request
    st, samples = api.call("GET", "/runs/%d/client" % rid)
    wakeups = None
    if st == 200 and isinstance(samples, dict):
        w = [x.get("wakeups") or 0 for x in samples.get("samples", [])
             if x.get("source", "").startswith("w")]
        wakeups = sum(w) if w else None
    window = s.get("window_s") or (t1 - t0)
    return run, {
        "requests": n, "wall_s": t1 - t0,
        "worker_us": (c1[1] - c0[1]) / n * 1e6 if n else None,
        "daemon_us": (c1[0] - c0[0]) / n * 1e6 if n else None,
        "mock_us": (m1[0] - m0[0]) / n * 1e6 if n else None,
        "wakeups_per_req": wakeups / n if wakeups is not None and n else None,
        "in_flight_max": ((s.get("load") or {}).get("achieved_concurrency") or {}).get("max"),
        # busy over the run's benchmark window (the requests' span)
        "worker_busy": (c1[1] - c0[1]) / window if window else None,
        "mock_busy": (m1[0] - m0[0]) / window if window else None,
        "others": oth.share(), "steal": hb.steal_frac(s0, hb.sys_cpu())}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--osl", default="16,64,256,1024")
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--start", type=float, default=2000)
    ap.add_argument("--step", type=float, default=1.25)
    ap.add_argument("--max", type=float, default=40000)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--closed-requests", type=int, default=20000,
                    help="closed-loop requests at OSL <= 64 (scaled down above, >= 2000)")
    ap.add_argument("--shared", action="store_true",
                    help="daemon and worker on CPU 0, the mock alone on CPU 1")
    ap.add_argument("--fifo", action="store_true",
                    help="the worker under SCHED_FIFO (needs root or CAP_SYS_NICE)")
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    osls = [int(x) for x in a.osl.split(",")]
    os.sched_setaffinity(0, {1})
    load = hb.warn_if_busy()
    mock = hb.start_mock([1])
    dcpus = [0] if a.shared else [1]
    d = hb.start_daemon(dcpus, extra=("--default-workers", "1"))
    worker_cpu = None if a.shared else 0
    api = hb.Api(d.port)
    res = {"machine": hb.machine(), "git": hb.git_rev(), "args": vars(a), "load_before": load,
           "open": [], "closed": []}
    try:
        for osl in osls:
            # closed loop first: the upper bound, and a warm-up
            n = a.closed_requests if osl <= 64 else max(2000, a.closed_requests * 64 // osl)
            try:
                run, m = measure(api, d, mock, hb.chat_spec(mock.port, osl, n, 64, a.isl,
                                                            name="max_rate closed %d" % osl),
                                 worker_cpu, a.fifo)
            except (ConnectionError, OSError) as e:
                d, api = restart(d, dcpus, e)
                run, m = measure(api, d, mock, hb.chat_spec(mock.port, osl, n, 64, a.isl,
                                                            name="max_rate closed %d" % osl),
                                 worker_cpu, a.fifo)
            s = run.get("summary") or {}
            m.update(osl=osl, state=run["state"],
                     throughput=(s.get("metrics") or {}).get("request_throughput", {}).get("avg"),
                     errors=(s.get("counts") or {}).get("errors"))
            res["closed"].append(m)
            hb.log("osl %d closed loop: %s req/s, worker %.1f us/req (busy %.2f), %s wake-ups/"
                   "req, mock busy %.2f, others %.0f%%" % (
                       osl, fmt(m["throughput"]), m["worker_us"] or 0, m["worker_busy"] or 0,
                       fmt(m["wakeups_per_req"], "%.1f"), m["mock_busy"] or 0,
                       100 * m["others"]))
            rate = a.start
            while rate <= a.max:
                try:
                    run, m = measure(api, d, mock, spec_rate(mock.port, osl, rate, a.duration,
                                                             a.isl), worker_cpu, a.fifo)
                except (ConnectionError, OSError) as e:
                    # the daemon is gone: noted, and a new one goes on with the
                    # next output length
                    d, api = restart(d, dcpus, e)
                    res["open"].append({"osl": osl, "rate": rate, "state": "daemon died",
                                        "reason": str(e), "delivered": False, "pass": False,
                                        "errors": None, "achieved": None,
                                        "schedule_rate": None, "lag_p99_us": None,
                                        "worker_us": None, "worker_busy": None,
                                        "mock_busy": None, "wakeups_per_req": None,
                                        "in_flight_max": None, "others": 0.0})
                    break
                s = run.get("summary") or {}
                lag = (s.get("metrics") or {}).get("schedule_lag") or {}
                ld = s.get("load") or {}
                sent = ld.get("sent") or 0
                sched = sent / a.duration if sent else None
                ach = ld.get("achieved_rate")
                cl = (s.get("client") or {})
                m.update(osl=osl, rate=rate, state=run["state"], reason=run.get("reason"),
                         errors=(s.get("counts") or {}).get("errors"), sent=sent,
                         schedule_rate=sched, achieved=ach,
                         lag_p50_us=lag["p50"] * 1e3 if "p50" in lag else None,
                         lag_p99_us=lag["p99"] * 1e3 if "p99" in lag else None,
                         lag_max_ms=lag.get("max"), verdict=cl.get("verdict"))
                delivered = bool(run["state"] == "succeeded" and not m["errors"] and ach and
                                 sched and ach >= 0.99 * sched)
                ok = delivered and m["lag_p99_us"] is not None and m["lag_p99_us"] < 1000
                m["pass"] = bool(ok)
                m["delivered"] = delivered
                res["open"].append(m)
                hb.log("osl %d rate %g: %s, achieved %s of %s scheduled, lag p99 %s us max %s "
                       "ms, worker %s us/req busy %.2f, %s wake-ups/req, in flight max %s, "
                       "mock busy %.2f, verdict %s, others %.0f%%" % (
                           osl, rate, "punctual" if ok else "delivered" if delivered else
                           "NOT DELIVERED (%s)" % (run.get("reason") or run["state"]),
                           "%.0f" % ach if ach else "-", "%.0f" % sched if sched else "-",
                           "%.0f" % m["lag_p99_us"] if m["lag_p99_us"] is not None else "-",
                           "%.1f" % m["lag_max_ms"] if m["lag_max_ms"] is not None else "-",
                           fmt(m["worker_us"], "%.1f"), m["worker_busy"] or 0,
                           fmt(m["wakeups_per_req"], "%.1f"), m["in_flight_max"],
                           m["mock_busy"] or 0, m["verdict"], 100 * m["others"]))
                if not delivered:
                    break
                rate = round(rate * a.step)
    finally:
        hb.stop_daemon(d)
        mock.stop()
    report(res, osls, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


def fmt(x, f="%.0f"):
    return f % x if x is not None else "-"


def report(res, osls, a):
    mach = res["machine"]
    print("max_rate: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                  res["git"]))
    print("layout: %s%s; chat, streamed, ISL %d, Poisson, %g s per step" % (
        "daemon and worker on CPU 0, mock on CPU 1" if a.shared
        else "worker alone on CPU 0, daemon and mock on CPU 1",
        ", worker under SCHED_FIFO" if a.fifo else "", a.isl, a.duration))
    print("| OSL | highest punctual rate (lag p99 < 1 ms) | next step | highest delivered rate "
          "(achieved >= 99%) | first not delivered | worker CPU µs/req, busy, mock busy at "
          "the highest delivered | closed loop: req/s, worker µs/req ⇒ 1-core capacity | "
          "others |")
    print("|---:|---:|---|---:|---|---|---|---|")
    for osl in osls:
        steps = [m for m in res["open"] if m["osl"] == osl]
        first_late = next((i for i, m in enumerate(steps) if not m["pass"]), len(steps))
        punct = steps[first_late - 1] if first_late else None
        nxt = steps[first_late] if first_late < len(steps) else None
        dl = [m for m in steps if m["delivered"]]
        nd = [m for m in steps if not m["delivered"]]
        g = dl[-1] if dl else None
        b = nd[0] if nd else None
        c = [m for m in res["closed"] if m["osl"] == osl]
        c = c[0] if c else {}
        cap = 1e6 / c["worker_us"] if c.get("worker_us") else None
        print("| %d | %s | %s | %s | %s | %s | %s req/s, %s µs ⇒ %s/s | %s |" % (
            osl, fmt(punct["rate"]) if punct else "none",
            "%s: lag p99 %s µs" % (fmt(nxt["rate"]), fmt(nxt["lag_p99_us"])) if nxt else "-",
            fmt(g["rate"]) if g else "none", why(b) if b else "not reached",
            "%s, %s, %s" % (fmt(g["worker_us"], "%.1f"), fmt(g["worker_busy"], "%.2f"),
                            fmt(g["mock_busy"], "%.2f")) if g else "-",
            fmt(c.get("throughput")), fmt(c.get("worker_us"), "%.1f"), fmt(cap),
            ", ".join("%.0f%%" % (100 * m["others"]) for m in steps)))
    print("steps: rate: achieved/scheduled, lag p99 µs, worker µs/req, worker busy, loop "
          "wake-ups per request, in flight max, mock busy")
    for osl in osls:
        print("  osl %d: %s" % (osl, "; ".join(
            "%g: %s/%s, %s, %s, %.2f, %s, %s, %.2f%s" % (
                m["rate"], fmt(m["achieved"]), fmt(m["schedule_rate"]), fmt(m["lag_p99_us"]),
                fmt(m["worker_us"], "%.1f"), m["worker_busy"] or 0,
                fmt(m["wakeups_per_req"], "%.1f"), fmt(m["in_flight_max"]),
                m["mock_busy"] or 0, ("" if m["delivered"] else " NOT DELIVERED") +
                (" (run twice: the first time its worker went silent)" if m.get("retried")
                 else ""))
            for m in res["open"] if m["osl"] == osl)))
        c = [m for m in res["closed"] if m["osl"] == osl]
        if c:
            print("  osl %d closed loop: %s wake-ups per request" % (
                osl, fmt(c[0]["wakeups_per_req"], "%.1f")))


def why(b):
    if b["state"] != "succeeded":
        w = "%g: run %s: %s" % (b["rate"], b["state"], (b["reason"] or "")[:60])
    elif b["errors"]:
        w = "%g: %d errors" % (b["rate"], b["errors"])
    else:
        w = "%g: achieved %s < 99%% of %s" % (b["rate"], fmt(b["achieved"]),
                                             fmt(b["schedule_rate"]))
    return w + "; worker busy %.2f, mock busy %.2f" % (b["worker_busy"] or 0, b["mock_busy"] or 0)


if __name__ == "__main__":
    main()
