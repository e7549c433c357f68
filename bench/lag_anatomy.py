#!/usr/bin/env python3
# lag_anatomy.py - where a paced run's schedule-lag tail comes from.
#
# One open-loop run (Poisson, streamed chat against headroom-mock with zero
# delay) while a sampler reads, every 2 ms, the worker's own scheduler
# accounting (/proc/PID/schedstat: time on a CPU, time runnable but waiting
# for one), the hypervisor's steal time of the worker's CPU (/proc/stat) and
# the daemon's and mock's CPU time. Afterwards every request's lag (start_ns
# - intended_ns, from the run's records) is placed in its 2 ms window, and
# the requests of the tail (lag over the run's p99, and over 1 ms) are
# attributed to what the windows their lag spans show (steal is
# accounted in 10 ms ticks, so it is found only in windows where a tick
# of it fell):
#
#   waiting    the worker was runnable but not running (another task had
#              its CPU: in this guest's scheduler)
#   steal      the hypervisor ran something else on the worker's vCPU
#   busy       the worker was on its CPU the whole window (its own work)
#   other      none of these (e.g. timer or wake-up latency)
#
# With --perf, `perf record -e cpu-clock -g` samples the worker during the
# run and the top of `perf report` is printed: where its own time goes.
#
# Usage: bench/lag_anatomy.py --rate 20000 [--osl 64] [--duration 5]
#        [--layout alone|shared|free] [--fifo] [--perf] [--runs N]
#        [--telemetry] [--daemon-policy idle|batch] [--daemon-slice-us N]
# alone: the worker on CPU 0, daemon and mock on CPU 1; shared: daemon and
# worker on CPU 0, the mock on CPU 1 (bench/pacing.py's default layout);
# free: nothing pinned, as a new user runs it. The run's own headline
# figures (host_cpu_wait, host_steal) and notes are printed beside the
# sampler's. Results: docs/performance.md, section 4b.
# Python 3 standard library (and perf for --perf).

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as hb  # noqa: E402
from max_rate import pin_worker, settle, spec_rate  # noqa: E402

def schedstat(pid):
    """(ns on a CPU, ns runnable and waiting) summed over pid's threads."""
    run = wait = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                a = f.read().split()
            run += int(a[0])
            wait += int(a[1])
        except OSError:
            pass
    return run, wait


def cpu_steal(cpu):
    """Steal time (ns) of one CPU, or of the average CPU when cpu is None."""
    name, div = ("cpu%d " % cpu, 1) if cpu is not None else ("cpu ", os.cpu_count())
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(name):
                v = line.split()
                return int(v[8]) * 1e9 / hb.TICK / div
    return 0.0


class Sampler(threading.Thread):
    def __init__(self, worker, cpu, others):
        super().__init__(daemon=True)
        self.worker, self.cpu, self.others = worker, cpu, others
        self.rows = []  # (wall_ns, run_ns, wait_ns, steal_ns, others_cpu_s)
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                r, w = schedstat(self.worker)
            except OSError:
                break
            o = sum(sum(hb.proc_cpu(p)) for p in self.others)
            self.rows.append((time.time_ns(), r, w, cpu_steal(self.cpu), o))
            time.sleep(0.002)


def records(api, rid):
    api.c.request("GET", "/api/v1/runs/%d/records?format=jsonl" % rid)
    r = api.c.getresponse()
    return [json.loads(x) for x in r.read().splitlines() if x.strip()]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def one(api, d, mock, a, wcpu):
    settle(d)
    spec = spec_rate(mock.port, a.osl, a.rate, a.duration, a.isl)
    spec["name"] = "lag_anatomy %g/s" % a.rate
    if a.telemetry:
        del spec["telemetry"]
    rid = api.submit(spec)
    wpid = pin_worker(d.pid, wcpu, a.fifo)
    if wpid is None:
        sys.exit("lag_anatomy: no worker")
    if a.daemon_slice_us:  # a short EEVDF slice for the daemon's threads (Linux 6.12+)
        import ctypes
        import platform
        import struct
        libc = ctypes.CDLL(None, use_errno=True)
        nr = {"x86_64": 314, "aarch64": 274}[platform.machine()]  # sched_setattr
        for t in os.listdir("/proc/%d/task" % d.pid):
            b = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, 0, 0, 0, 0,
                                                        a.daemon_slice_us * 1000, 0, 0))
            if libc.syscall(nr, int(t), b, 0) != 0:
                hb.log("lag_anatomy: sched_setattr: %s" % os.strerror(ctypes.get_errno()))
    if a.daemon_policy != "other":  # the daemon's threads only, not its worker
        pol = {"idle": os.SCHED_IDLE, "batch": os.SCHED_BATCH}[a.daemon_policy]
        for t in os.listdir("/proc/%d/task" % d.pid):
            os.sched_setscheduler(int(t), pol, os.sched_param(0))
    # records are relative to the run's t0; its wall time (t0_wall_ns of
    # /runs/{id}/client) maps them onto the sampler's wall-clock windows
    s = Sampler(wpid, wcpu if wcpu is not None else (0 if a.layout == "shared" else None),
                [d.pid, mock.pid])
    perf = None
    if a.perf:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g",
                                 "-o", "/tmp/lag_anatomy.perf", "-p", str(wpid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s.start()
    run = api.wait(rid, poll=0.05)
    s.stop_ev.set()
    s.join()
    if perf:
        perf.send_signal(2)
        perf.wait()
    rows = [r for r in records(api, rid) if r.get("phase") == "profiling"]
    st, cl = api.call("GET", "/runs/%d/client" % rid)
    t0 = cl.get("t0_wall_ns") if st == 200 and isinstance(cl, dict) else None
    return run, rows, s.rows, t0


def attribute(rows, samples, t0):
    """Per 2 ms sampler window: worker run/wait/steal deltas; then each tail
    request's cause from its own window and the one before."""
    lags = [r["start_ns"] - r["intended_ns"] for r in rows]
    p99 = pct(lags, 0.99)
    win = []
    for (a, b) in zip(samples, samples[1:]):
        dt = b[0] - a[0]
        win.append({"from": a[0], "to": b[0], "run": (b[1] - a[1]) / dt,
                    "wait": (b[2] - a[2]) / dt, "steal": (b[3] - a[3]) / dt})
    if t0 is None:
        return p99, None

    def cause(span):
        # the windows that overlap [intended, start]: what held the send up
        hit = [w for w in win if w["to"] >= span[0] and w["from"] <= span[1]]
        if not hit:
            return "unsampled"
        if max(w["wait"] for w in hit) > 0.2:
            return "waiting"
        if max(w["steal"] for w in hit) > 0.2:
            return "steal"
        if min(w["run"] for w in hit) > 0.9:
            return "busy"
        return "other"
    out = {}
    for thr_name, thr in (("over p99", p99), ("over 1 ms", 1_000_000)):
        c = {}
        for r, lag in zip(rows, lags):
            if lag > thr:
                k = cause((t0 + r["intended_ns"], t0 + r["start_ns"]))
                c[k] = c.get(k, 0) + 1
        out[thr_name] = c
    return p99, out


def fmt3(v):
    return "%.3f" % v if isinstance(v, (int, float)) else str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rate", type=float, default=20000)
    ap.add_argument("--osl", type=int, default=64)
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--layout", choices=("alone", "shared", "free"), default="alone")
    ap.add_argument("--telemetry", action="store_true",
                    help="the run's default telemetry (scraping the mock's /metrics) instead of none")
    ap.add_argument("--fifo", action="store_true")
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--daemon-args", default="")
    ap.add_argument("--daemon-slice-us", type=int, default=0,
                    help="a custom scheduler slice for the daemon's threads once the worker runs")
    ap.add_argument("--daemon-policy", choices=("other", "batch", "idle"), default="other",
                    help="the daemon's threads' scheduling policy once the worker runs")
    a = ap.parse_args()
    hb.warn_if_busy()
    if a.layout == "free":  # as a new user runs it: nothing pinned
        dcpus, wcpu, mcpus = None, None, None
    else:
        dcpus, wcpu, mcpus = ([1], 0, [1]) if a.layout == "alone" else ([0], None, [1])
        # this script (its sampler polls every 2 ms) stays off the worker's CPU
        os.sched_setaffinity(0, {1})
    mock = hb.start_mock(mcpus)
    d = hb.start_daemon(dcpus, extra=("--default-workers", "1", *a.daemon_args.split()))
    api = hb.Api(d.port)
    try:
        for i in range(a.runs):
            run, rows, samples, t0 = one(api, d, mock, a, wcpu)
            s = run.get("summary") or {}
            lags = sorted(r["start_ns"] - r["intended_ns"] for r in rows)
            cl = s.get("client") or {}
            verdict = "%s%s" % (cl.get("verdict"), "".join(
                " +" + n["code"] for n in cl.get("notes", [])))
            hd = cl.get("headline") or {}
            p99, causes = attribute(rows, samples, t0)
            tot = samples[-1][0] - samples[0][0] if len(samples) > 1 else 0
            print("run %d: %d requests, lag p50 %.1f µs p99 %.1f µs max %.2f ms, verdict %s; "
                  "worker on CPU %.2f, waiting %.3f, steal %.3f of the sampled %.1f s; "
                  "run's own evidence: host_cpu_wait %s, host_steal %s; "
                  "tail causes %s" % (
                      run["id"], len(rows), pct(lags, 0.5) / 1e3, p99 / 1e3,
                      (lags[-1] if lags else 0) / 1e6, verdict,
                      (samples[-1][1] - samples[0][1]) / tot if tot else 0,
                      (samples[-1][2] - samples[0][2]) / tot if tot else 0,
                      (samples[-1][3] - samples[0][3]) / tot if tot else 0, tot / 1e9,
                      fmt3(hd.get("host_cpu_wait")), fmt3(hd.get("host_steal")),
                      json.dumps(causes)), flush=True)
            if a.perf:
                rep = subprocess.run(["perf", "report", "-i", "/tmp/lag_anatomy.perf",
                                      "--no-children", "--stdio", "-g", "none",
                                      "--percent-limit", "1.5", "--sort", "dso,sym"],
                                     capture_output=True, text=True)
                print("\n".join(x for x in rep.stdout.splitlines()
                                if x.strip() and not x.startswith("#")))
    finally:
        hb.stop_daemon(d)
        mock.stop()


if __name__ == "__main__":
    main()
