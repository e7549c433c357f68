#!/usr/bin/python3
# ingest_summary.py - headroomd's record ingestion, run summary time, and the
# records export (CSV and JSONL) over the API.
#
# Run:   /usr/bin/python3 bench/ingest_summary.py [--reps 3] [--requests 200000] [--json out.json]
#        (--requests 1000000 for the brief's 1M-record summary/export figures: ~2 min per rep)
# Needs: a Release build in build-bench/ (or $HEADROOM_BIN), curl, 2 CPUs.
#
# Setup: headroomd pinned to CPU 1 (alone); its worker processes are moved to
# CPU 0 as soon as they appear, next to headroom-mock (zero delay). Workload:
# chat, streamed, ISL 16, OSL 4, concurrency 256, one worker: many small records.
# A sampler thread reads every daemon thread's CPU nanoseconds
# (/proc/PID/task/TID/schedstat) and the workers' states every ~2 ms.
#
# Figures (medians over --reps runs):
#   store CPU/record  CPU of the store writer thread during the run / records;
#                     1e6 / that = records/s one core of SQLite writing could
#                     absorb (a capacity estimate: the arrival rate itself is
#                     limited by the load generator sharing CPU 0 with the mock)
#   daemon CPU/record the whole daemon's utime+stime over the run (record batch
#                     decoding, SQLite writes, ZeroMQ I/O threads, the summary) / records
#   arrival rate      records / (last worker exit - first worker start): what
#                     the client produced and the daemon kept up with
#   backlog           store-thread CPU spent after the last worker had exited
#                     (records still queued when the load ended)
#   finish time       from the last worker's exit to the "run N succeeded" line
#                     on the daemon's stderr (timestamped as it arrives):
#                     store catch-up + summary_compute + storing the summary;
#                     also the runner thread's run-queue wait over that time
#                     (schedstat field 2): time it was ready but had no CPU
#   summary CPU       runner-thread CPU after the last worker exit (nearly all of
#                     it summary_compute reading every record back)
#   export            curl -o /dev/null of GET /runs/{id}/records?format=csv|jsonl
#                     (curl on CPU 0): rows/s = records / curl's time_total,
#                     plus the daemon's CPU per row and its inverse, the rows/s
#                     one core of the daemon could serve (the figure that does
#                     not depend on how busy the machine is)
# Thread identification: headroomd creates its threads in a fixed order
# (store writer, then runner, then the HTTP pool), so among the threads that
# exist at start-up the second-lowest TID is the store writer and the third is
# the runner; threads created later (ZeroMQ's I/O and reaper) are "other".

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as h  # noqa: E402


class Sampler(threading.Thread):
    """Samples daemon thread CPU and worker states; pins new workers to a CPU."""

    def __init__(self, dpid, worker_cpu, period=0.002):
        super().__init__(daemon=True)
        self.dpid, self.worker_cpu, self.period = dpid, worker_cpu, period
        self.samples = []  # (t, {tid: ns})
        self.workers = {}  # pid -> {"seen": t, "gone": t or None}
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop_ev.is_set():
            t = time.monotonic()
            cpu = h.thread_sched_ns(self.dpid)
            kids = set(h.children(self.dpid))
            with self.lock:
                self.samples.append((t, cpu))
                for k in kids:
                    if k not in self.workers:
                        self.workers[k] = {"seen": t, "gone": None}
                        h.pin_all_threads(k, {self.worker_cpu})
                for k, w in self.workers.items():
                    if w["gone"] is None:
                        st = h.proc_state(k)
                        if st is None or st == "Z" or k not in kids:
                            w["gone"] = t
            time.sleep(self.period)

    def cut(self):
        with self.lock:
            s, w = list(self.samples), dict(self.workers)
            self.samples.clear()
            self.workers.clear()
        return s, w


def cpu_between(samples, tid, t_from, t_to, field=0):
    """CPU ns (field 0) or run-queue wait ns (field 1) of thread tid between
    the samples nearest t_from and t_to."""
    def at(t):
        best = None
        for ts, cpu in samples:
            if ts <= t:
                best = cpu
            else:
                break
        return (best or samples[0][1]).get(tid, (0, 0))[field]
    return at(t_to) - at(t_from)


def curl_export(port, rid, fmt, cpu):
    argv = ["taskset", "-c", str(cpu), "curl", "-sS", "-o", "/dev/null", "-w",
            "%{http_code} %{time_total} %{size_download} %{time_starttransfer}",
            "http://127.0.0.1:%d/api/v1/runs/%d/records?format=%s" % (port, rid, fmt)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    if out[0] != "200":
        raise RuntimeError("export %s: HTTP %s" % (fmt, out[0]))
    return float(out[1]), int(out[2]), float(out[3])


def count_lines(port, rid, fmt):
    p = subprocess.run(["curl", "-sS", "http://127.0.0.1:%d/api/v1/runs/%d/records?format=%s" %
                        (port, rid, fmt)], capture_output=True, check=True)
    return p.stdout.count(b"\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--osl", type=int, default=4)
    ap.add_argument("--isl", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--daemon-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.sched_setaffinity(0, {a.client_cpu})  # this harness stays off the daemon's CPU

    mock = h.start_mock([a.client_cpu])
    d = h.start_daemon([a.daemon_cpu])
    api = h.Api(d.port)
    time.sleep(0.2)
    load_before = h.warn_if_busy()
    base_tids = sorted(h.thread_cpu_ns(d.pid))
    if len(base_tids) < 3:
        sys.exit("unexpected thread layout: %s" % base_tids)
    store_tid, runner_tid = base_tids[1], base_tids[2]
    smp = Sampler(d.pid, a.client_cpu)
    smp.start()
    res = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "runs": [],
           "load_before": load_before}
    try:
        # warm-up run (also creates the ZeroMQ threads)
        api.wait(api.submit(h.chat_spec(mock.port, a.osl, 5000, a.concurrency, a.isl,
                                        a.workers)))
        smp.cut()
        for rep in range(a.reps):
            smp.cut()  # samples from here to the run's end only
            c0, s0, oth = h.proc_cpu(d.pid), h.sys_cpu(), h.Others([d.pid, mock.pid])
            mark = len(d.lines)
            t_sub = time.monotonic()
            rid = api.submit(h.chat_spec(mock.port, a.osl, a.requests, a.concurrency, a.isl,
                                         a.workers, name="ingest %d" % rep))
            run = api.wait(rid, poll=0.2, timeout=1800)
            c1, s1, others_run = h.proc_cpu(d.pid), h.sys_cpu(), oth.share()
            time.sleep(0.05)
            samples, workers = smp.cut()
            done_line = d.wait_line(lambda s: s.startswith("headroomd: run %d " % rid) and
                                    "started" not in s)
            assert d.lines.index(done_line) >= mark
            t_fin = done_line[0]
            cnt = run["summary"]["counts"]
            if run["state"] != "succeeded" or cnt["requests"] != a.requests:
                raise RuntimeError("run %d: %s %s: %s; mock %s; mock output: %s" % (
                    rid, run["state"], cnt, run.get("reason"),
                    "alive" if mock.p.poll() is None else "exited %s" % mock.p.returncode,
                    [l[2] for l in mock.lines[-5:]]))
            n = cnt["requests"]
            t_first = min(w["seen"] for w in workers.values())
            t_last = max(w["gone"] for w in workers.values())
            tids = set()
            for _, cpu in samples:
                tids |= set(cpu)
            span = (samples[0][0], samples[-1][0])
            per_thread = {t: cpu_between(samples, t, *span) for t in tids}
            other = sum(v for t, v in per_thread.items() if t not in (store_tid, runner_tid))
            store_run = cpu_between(samples, store_tid, t_sub, t_last)
            runner_run = cpu_between(samples, runner_tid, t_sub, t_last)
            store_after = cpu_between(samples, store_tid, t_last, t_fin + 0.01)
            runner_after = cpu_between(samples, runner_tid, t_last, t_fin + 0.01)
            runner_wait = cpu_between(samples, runner_tid, t_last, t_fin + 0.01, field=1)
            r = {"rep": rep, "run": rid, "records": n,
                 "worker_cpu_s": c1[1] - c0[1], "daemon_cpu_s": c1[0] - c0[0],
                 "load_wall_s": t_last - t_first,
                 "arrival_rate": n / (t_last - t_first),
                 "store_us_per_rec": store_run / 1e3 / n,
                 "runner_us_per_rec": runner_run / 1e3 / n,
                 "daemon_us_per_rec": (c1[0] - c0[0]) / n * 1e6,
                 "worker_us_per_rec": (c1[1] - c0[1]) / n * 1e6,
                 "other_threads_ms": other / 1e6,
                 "backlog_store_ms": store_after / 1e6,
                 "summary_runner_cpu_ms": runner_after / 1e6,
                 "summary_runner_wait_ms": runner_wait / 1e6,
                 "finish_ms": (t_fin - t_last) * 1e3,
                 "api_started_at": run["started_at"], "api_finished_at": run["finished_at"],
                 "steal_pct": 100 * h.steal_frac(s0, s1), "others_pct": 100 * others_run}
            r["store_capacity"] = 1e6 / r["store_us_per_rec"]
            # exports
            for fmt in ("csv", "jsonl"):
                e0, oth = h.proc_cpu(d.pid), h.Others([d.pid, mock.pid])
                tt, size, ttfb = curl_export(d.port, rid, fmt, a.client_cpu)
                e1 = h.proc_cpu(d.pid)
                r[fmt + "_others_pct"] = 100 * oth.share()
                r[fmt + "_daemon_busy"] = (e1[0] - e0[0]) / tt
                r[fmt + "_s"] = tt
                r[fmt + "_bytes"] = size
                r[fmt + "_rows_per_s"] = n / tt
                r[fmt + "_daemon_us_per_row"] = (e1[0] - e0[0]) / n * 1e6
                # what the daemon's CPU allows, however busy the machine
                r[fmt + "_cpu_rows_per_s"] = n / max(e1[0] - e0[0], 0.01)
                r[fmt + "_ttfb_ms"] = ttfb * 1e3
            if rep == 0:
                lines_csv = count_lines(d.port, rid, "csv")
                lines_jsonl = count_lines(d.port, rid, "jsonl")
                if lines_csv != n + 1 or lines_jsonl != n:
                    raise RuntimeError("export row counts: csv %d jsonl %d, expected %d" %
                                       (lines_csv, lines_jsonl, n))
            res["runs"].append(r)
            h.log("rep %d: %d records, arrival %.0f/s, store %.2f us/rec (runner %.2f), "
                  "backlog %.0f ms, finish %.0f ms (summary CPU %.0f ms), csv %.0f rows/s, "
                  "jsonl %.0f rows/s" %
                  (rep, n, r["arrival_rate"], r["store_us_per_rec"], r["runner_us_per_rec"],
                   r["backlog_store_ms"], r["finish_ms"], r["summary_runner_cpu_ms"],
                   r["csv_rows_per_s"], r["jsonl_rows_per_s"]))
    finally:
        smp.stop_ev.set()
        h.stop_daemon(d)
        mock.stop()

    R = res["runs"]

    def m(k):
        return h.med([r[k] for r in R])

    def runs(k, f="%.2f"):
        return h.fmt_runs([r[k] for r in R], f)

    mach = res["machine"]
    print("ingest_summary: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                        res["git"]))
    print("%d records per run (chat stream, ISL %d, OSL %d, concurrency %d, %d worker(s)); "
          "medians of %d runs" % (a.requests, a.isl, a.osl, a.concurrency, a.workers, a.reps))
    rows = [
        ("store writer CPU per record (µs)", "store_us_per_rec", "%.2f"),
        ("=> store capacity, records/s per core", "store_capacity", "%.0f"),
        ("runner thread CPU per record (µs, batch decode)", "runner_us_per_rec", "%.2f"),
        ("whole daemon CPU per record (µs, incl. summary)", "daemon_us_per_rec", "%.2f"),
        ("worker CPU per request (µs, OSL %d; context)" % a.osl, "worker_us_per_rec", "%.2f"),
        ("arrival rate (records/s, client-limited)", "arrival_rate", "%.0f"),
        ("store backlog after last worker exit (ms of CPU)", "backlog_store_ms", "%.1f"),
        ("finish time: last worker exit -> 'succeeded' (ms)", "finish_ms", "%.1f"),
        ("  of which summary (runner CPU, ms)", "summary_runner_cpu_ms", "%.1f"),
        ("  runner waiting for a CPU meanwhile (run queue, ms)", "summary_runner_wait_ms", "%.1f"),
        ("CSV export rows/s", "csv_rows_per_s", "%.0f"),
        ("CSV daemon CPU per row (µs)", "csv_daemon_us_per_row", "%.2f"),
        ("=> CSV rows/s one core of the daemon could serve", "csv_cpu_rows_per_s", "%.0f"),
        ("CSV bytes", "csv_bytes", "%d"),
        ("JSONL export rows/s", "jsonl_rows_per_s", "%.0f"),
        ("JSONL daemon CPU per row (µs)", "jsonl_daemon_us_per_row", "%.2f"),
        ("=> JSONL rows/s one core of the daemon could serve", "jsonl_cpu_rows_per_s", "%.0f"),
        ("JSONL bytes", "jsonl_bytes", "%d"),
        ("CSV: daemon busy during the export (CPU s / wall s)", "csv_daemon_busy", "%.2f"),
        ("JSONL: daemon busy during the export (CPU s / wall s)", "jsonl_daemon_busy", "%.2f"),
        ("hypervisor steal during the run (% of CPU time)", "steal_pct", "%.1f"),
        ("other processes during the run (% of both CPUs)", "others_pct", "%.1f"),
        ("other processes during the CSV export (%)", "csv_others_pct", "%.1f"),
    ]
    print("| figure | median | runs |")
    print("|---|---:|---|")
    for name, k, f in rows:
        print("| %s | %s | %s |" % (name, f % m(k), runs(k, f)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
