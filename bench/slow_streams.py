#!/usr/bin/python3
# slow_streams.py - how many concurrent slow streams one worker holds, and the
# memory each one costs.
#
#   bench/build.sh && /usr/bin/python3 bench/slow_streams.py [--streams 1000,5000,10000,20000]
#       [--itl-ms 1000] [--osl 20] [--json FILE]
#
# headroom-mock answers every request with a stream of --osl chunks, one
# every --itl-ms (so a stream stays open osl x itl, 20 s by default). For
# each count C, one run with one worker in concurrency mode, C slots and C
# requests, so all C streams are open at once; then a run with a single
# stream gives the baseline. While a run goes, the worker's resident memory
# (VmRSS of /proc/PID/status) and its open sockets (/proc/PID/fd) are
# sampled every 0.25 s; the plateau is the time all C sockets are open.
# Memory per stream = (RSS on the plateau - RSS of the one-stream run) /
# (C - 1). Kernel socket buffers are not in RSS: /proc/net/sockstat's TCP
# "mem" (pages) is shown beside it. "flat" means the RSS did not grow on the
# plateau (max - min within 2% of the growth over the baseline).
#
# A count fails when the run fails or has errors, or not all C streams were
# ever open at once; the script goes on to the next count unless
# --stop-at-failure. Limits met on the way, reported as such: descriptors
# (RLIMIT_NOFILE is raised for the daemon, the worker and the mock to
# --nofile when allowed), local ports (ip_local_port_range: ~28,000 per
# destination address and port by default), the mock's own capacity.
# Layout: the worker on CPU 0 (re-pinned as it appears), daemon and mock on
# CPU 1. Worker CPU per chunk = its CPU time over the run / chunks received.

import argparse
import json
import os
import resource
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as hb  # noqa: E402


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sockets(pid):
    n = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                    n += 1
            except OSError:
                pass
    except OSError:
        return None
    return n


def tcp_mem_pages():
    try:
        with open("/proc/net/sockstat") as f:
            for line in f:
                if line.startswith("TCP:"):
                    v = line.split()
                    return int(v[v.index("mem") + 1])
    except (OSError, ValueError):
        pass
    return None


def find_worker(daemon_pid, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = hb.children(daemon_pid)
        if kids:
            return kids[0]
        time.sleep(0.005)
    return None


def one_run(api, d, mock, c, a):
    spec = {"name": "slow streams %d" % c,
            "target": {"url": "http://127.0.0.1:%d" % mock.port, "model": "mock-model",
                       "stream": True, "timeout_s": 600},
            "workload": {"isl": {"mean": 16}, "osl": {"mean": a.osl}, "seed": 1},
            "load": {"mode": "concurrency", "concurrency": c, "requests": c, "grace_s": 60},
            "telemetry": {"nvml": False, "dcgm_urls": [], "server_metrics": False},
            "workers": 1}
    c0, t0 = hb.proc_cpu(d.pid), time.monotonic()
    mem0 = tcp_mem_pages()
    rid = api.submit(spec)
    w = find_worker(d.pid)
    if w is None:
        return {"streams": c, "state": "no worker"}
    hb.pin_all_threads(w, {0})
    samples = []  # (t, rss KiB, sockets, mock rss KiB, tcp mem pages)
    while True:
        st, run = api.call("GET", "/runs/%d" % rid)
        if run["state"] not in ("queued", "running"):
            break
        r, n = rss_kib(w), sockets(w)
        if r is not None:
            samples.append((time.monotonic() - t0, r, n or 0, rss_kib(mock.pid), tcp_mem_pages()))
        time.sleep(0.25)
    c1, t1 = hb.proc_cpu(d.pid), time.monotonic()
    s = run.get("summary") or {}
    cnt = s.get("counts") or {}
    # the plateau: every stream's socket open (the worker's other sockets:
    # ZeroMQ's few; so "at least c")
    plat = [x for x in samples if x[2] >= c]
    peak_open = max([x[2] for x in samples] or [0])
    res = {"streams": c, "state": run["state"], "reason": run.get("reason"),
           "errors": cnt.get("errors"), "requests": cnt.get("requests"),
           "errors_by": s.get("errors"), "peak_sockets": peak_open,
           "all_open": bool(plat), "wall_s": t1 - t0,
           "worker_cpu_s": c1[1] - c0[1], "tcp_mem_pages_before": mem0,
           "samples": len(samples)}
    if plat:
        res.update(t_all_open_s=plat[0][0], plateau_s=plat[-1][0] - plat[0][0],
                   rss_kib=hb.med([x[1] for x in plat]), rss_min_kib=min(x[1] for x in plat),
                   rss_max_kib=max(x[1] for x in plat),
                   mock_rss_kib=hb.med([x[3] for x in plat if x[3] is not None]),
                   tcp_mem_pages=hb.med([x[4] for x in plat if x[4] is not None]))
    elif samples:
        res.update(rss_max_kib=max(x[1] for x in samples))
    chunks = (cnt.get("requests") or 0) * a.osl
    res["worker_us_per_chunk"] = res["worker_cpu_s"] / chunks * 1e6 if chunks else None
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--streams", default="1000,5000,10000,20000")
    ap.add_argument("--itl-ms", type=float, default=1000)
    ap.add_argument("--osl", type=int, default=20)
    ap.add_argument("--nofile", type=int, default=200000,
                    help="descriptor limit asked for the processes started here")
    ap.add_argument("--stop-at-failure", action="store_true")
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    counts = [int(x) for x in a.streams.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (a.nofile, max(hard, a.nofile)))
    except (ValueError, OSError):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ports = [int(x) for x in f.read().split()]
    os.sched_setaffinity(0, {1})
    load = hb.warn_if_busy()
    mock = hb.start_mock([1], extra=("--itl-ms", "%g" % a.itl_ms))
    d = hb.start_daemon([1], extra=("--default-workers", "1"))
    api = hb.Api(d.port)
    res = {"machine": hb.machine(), "git": hb.git_rev(), "args": vars(a), "load_before": load,
           "nofile": nofile, "port_range": ports, "runs": []}
    try:
        base = one_run(api, d, mock, 1, a)
        res["baseline"] = base
        hb.log("baseline (1 stream): RSS %s KiB, %s" % (base.get("rss_kib"), base["state"]))
        for c in counts:
            r = one_run(api, d, mock, c, a)
            ok = r["state"] == "succeeded" and not r["errors"] and r["all_open"]
            r["ok"] = ok
            if r.get("rss_kib") and base.get("rss_kib"):
                grow = r["rss_kib"] - base["rss_kib"]
                r["kib_per_stream"] = grow / (c - 1) if c > 1 else None
                r["flat"] = (r["rss_max_kib"] - r["rss_min_kib"]) <= 0.02 * max(grow, 1)
            res["runs"].append(r)
            hb.log("%d streams: %s; peak sockets %d; RSS %s KiB (%s KiB/stream, flat %s); "
                   "worker %s us/chunk; %s" % (
                       c, "held" if ok else "FAILED", r["peak_sockets"], r.get("rss_kib"),
                       "%.1f" % r["kib_per_stream"] if r.get("kib_per_stream") else "-",
                       r.get("flat"), "%.1f" % r["worker_us_per_chunk"]
                       if r.get("worker_us_per_chunk") else "-",
                       r.get("reason") or r["state"]))
            if not ok and a.stop_at_failure:
                break
    finally:
        hb.stop_daemon(d)
        mock.stop()
    report(res, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


def report(res, a):
    mach = res["machine"]
    base = res["baseline"]
    print("slow_streams: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"],
                                                      mach["date"], res["git"]))
    print("mock --itl-ms %g, OSL %d (a stream lasts %.0f s); one worker on CPU 0, daemon and "
          "mock on CPU 1; descriptor limit %s; local ports %d-%d; baseline (one stream) RSS "
          "%s KiB" % (a.itl_ms, a.osl, a.itl_ms * a.osl / 1000, res["nofile"][0],
                      res["port_range"][0], res["port_range"][1], base.get("rss_kib")))
    print("| streams | held (all open at once) | peak sockets | time to open all (s) | "
          "worker RSS (MiB) | KiB per stream | flat | kernel TCP mem (MiB) | mock RSS (MiB) | "
          "worker µs per chunk | errors / reason |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for r in res["runs"]:
        print("| %d | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["streams"], "yes" if r["ok"] else "no", r["peak_sockets"],
            "%.1f" % r["t_all_open_s"] if r.get("t_all_open_s") is not None else "-",
            "%.1f" % (r["rss_kib"] / 1024) if r.get("rss_kib") else "-",
            "%.1f" % r["kib_per_stream"] if r.get("kib_per_stream") else "-",
            {True: "yes", False: "no"}.get(r.get("flat"), "-"),
            "%.0f" % (r["tcp_mem_pages"] * 4 / 1024) if r.get("tcp_mem_pages") else "-",
            "%.1f" % (r["mock_rss_kib"] / 1024) if r.get("mock_rss_kib") else "-",
            "%.1f" % r["worker_us_per_chunk"] if r.get("worker_us_per_chunk") else "-",
            "%s %s" % (r.get("errors_by") or r.get("errors") or 0,
                       (r.get("reason") or "")[:80])))


if __name__ == "__main__":
    main()
