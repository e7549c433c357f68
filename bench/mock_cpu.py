# mock_cpu.py - headroom-mock's CPU per streamed chunk and per request, beside
# the worker's in the same runs: is the mock cheap enough that a benchmark or a
# calibration measures the client's limit rather than the mock's?
#
# Run:  /usr/bin/python3 bench/mock_cpu.py [--reps 5] [--osl 64] [--before OLD_MOCK]
#       [--scenarios zero,paced] [--json FILE]   (--osl 16,64,256: also the slope)
# Needs: a build with headroomd, headroom-worker and headroom-mock in build-bench/bin
#        (bench/build.sh) or $HEADROOM_BIN; taskset; 2 CPUs.
#
# Each run is an ordinary headroom run (chat, streamed, ISL 128 words, OSL
# --osl, seed 1) of one worker (headroomd on --client-cpu) against a mock on
# --server-cpu, in two scenarios:
#   zero   the mock with zero delay, concurrency 64, --requests requests: the
#          closed-loop case of client_cpu.sh and of `headroom calibrate`, where
#          a response's events are produced and written together;
#   paced  --ttft-ms 20 --itl-ms 2, concurrency 256, --paced-requests requests:
#          every chunk due on its own, the mock's timer path (one wake-up,
#          one write per due chunk and connection).
# mock CPU   = delta of /proc/MOCK/schedstat's run time (ns; the mock has one
#              thread) over the run;
# worker CPU = delta of the daemon's cutime+cstime (the daemon reaps its worker;
#              clock ticks, so runs are sized to many ticks);
# user       = the user-space part of each (utime, cutime): the program's own
#              work, apart from the kernel's TCP path (on loopback the sender's
#              system time includes the receiving side's protocol processing).
# Per chunk = per request / OSL (one token per chunk); with several --osl the
# least-squares slope of the medians over OSL is the marginal CPU per chunk
# (the intercept: per request). With --before OLD_MOCK
# each repetition runs the same scenario against the old binary right after
# the new one (same daemon, same machine state), and the script first checks
# that both mocks answer the same requests with the same bytes ("created"
# aside). CPU time per unit does not depend on who won the shared core, but
# it is inflated when the other core is busy: compare figures of the same
# repetition; medians and every repetition's values are printed.

import argparse
import json
import os
import re
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as h  # noqa: E402

SCENARIOS = {
    "zero": {"mock": [], "concurrency": 64},
    "paced": {"mock": ["--ttft-ms", "20", "--itl-ms", "2"], "concurrency": 256},
}


def sched_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def user_sys(pid):
    """(user s, system s, reaped children's user s, their system s) of a process."""
    f = h._stat_fields(pid)
    return tuple(int(x) / h.TICK for x in f[11:15])


def start_mock(binary, cpu, extra):
    m = h.Proc([binary, "--listen", "127.0.0.1:0", "--quiet", *extra], [cpu])
    line = m.wait_line(lambda s: s.startswith("listening on "))[2]
    m.port = int(line.rsplit(":", 1)[1])
    return m


def exchange(port, body, path):
    """One request on its own connection (closed by the mock); the answer's
    bytes with "created" blanked."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST %s HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (path.encode(), len(data))
              + data)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return re.sub(rb'"created":\d+', b'"created":0', out)


def same_bytes(new_port, old_port):
    msgs = [{"role": "user", "content": "how fast is the mock " * 5}]
    cases = [("/v1/chat/completions", {"messages": msgs, "max_tokens": 64, "stream": True,
                                       "stream_options": {"include_usage": True}}),
             ("/v1/chat/completions", {"messages": msgs, "max_tokens": 7, "stream": False}),
             ("/v1/completions", {"prompt": "one two three", "max_tokens": 130, "stream": True}),
             ("/generate_stream", {"inputs": "a b", "parameters": {"max_new_tokens": 5}})]
    for path, body in cases:
        a, b = exchange(new_port, body, path), exchange(old_port, body, path)
        if a != b:
            sys.exit("bench: the two mocks answer %s %s differently:\n%r\n%r" %
                     (path, json.dumps(body)[:80], a[:400], b[:400]))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--osl", default="64", help="output tokens per request, a list allowed")
    ap.add_argument("--scenarios", default="zero,paced")
    ap.add_argument("--requests", type=int, default=20000, help="per zero-delay run")
    ap.add_argument("--paced-requests", type=int, default=6000, help="per paced run")
    ap.add_argument("--before", help="an older headroom-mock binary to compare with")
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    scen = [s for s in a.scenarios.split(",") if s]
    osls = [int(x) for x in a.osl.split(",")]
    for s in scen:
        if s not in SCENARIOS:
            sys.exit("bench: unknown scenario %s (known: %s)" % (s, ", ".join(SCENARIOS)))
    mocks = {"new": os.path.join(h.bindir(), "headroom-mock")}
    if a.before:
        mocks["before"] = os.path.abspath(a.before)
    os.sched_setaffinity(0, {a.server_cpu})
    load = h.warn_if_busy()
    d = h.start_daemon([a.client_cpu])
    api = h.Api(d.port)
    procs = {}
    results = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "runs": [],
               "load_before": load}
    R = results["runs"]
    try:
        for sc in scen:
            for k, b in mocks.items():
                procs[sc, k] = start_mock(b, a.server_cpu, SCENARIOS[sc]["mock"])
        if a.before and "zero" in scen:
            same_bytes(procs["zero", "new"].port, procs["zero", "before"].port)
            h.log("bench: both mocks answer with the same bytes")
        for (sc, k), m in procs.items():  # warm-up: buffers, page cache, SQLite growth
            api.wait(api.submit(h.chat_spec(m.port, osls[0], 500, SCENARIOS[sc]["concurrency"])))
        for rep, sc, osl in [(r, s, o) for r in range(a.reps) for s in scen for o in osls]:
            n = a.requests if sc == "zero" else a.paced_requests
            n = n if osl <= 64 else max(n // 5, n * 64 // osl)
            line = []
            for k in mocks:
                m = procs[sc, k]
                s0, oth = h.sys_cpu(), h.Others([m.pid, d.pid])
                m0, c0, t0 = sched_ns(m.pid), h.proc_cpu(d.pid), time.monotonic()
                mu0, du0 = user_sys(m.pid), user_sys(d.pid)
                rid = api.submit(h.chat_spec(m.port, osl, n, SCENARIOS[sc]["concurrency"],
                                             name="mock_cpu %s %s" % (sc, k)))
                run = api.wait(rid, poll=0.05)
                m1, c1, t1 = sched_ns(m.pid), h.proc_cpu(d.pid), time.monotonic()
                mu1, du1 = user_sys(m.pid), user_sys(d.pid)
                cnt = run["summary"]["counts"]
                if run["state"] != "succeeded" or cnt["errors"]:
                    raise RuntimeError("run %d: %s %s" % (rid, run["state"], cnt))
                q = cnt["requests"]
                r = {"rep": rep, "scenario": sc, "osl": osl, "mock": k, "requests": q,
                     "wall_s": t1 - t0, "mock_us": (m1 - m0) / 1e3 / q,
                     "worker_us": (c1[1] - c0[1]) / q * 1e6,
                     "others": oth.share(), "steal": h.steal_frac(s0, h.sys_cpu())}
                # user-space share of each side (clock ticks): what the program
                # itself does, apart from the kernel's TCP work on its behalf
                r["mock_user_us"] = (mu1[0] - mu0[0]) / q * 1e6
                r["worker_user_us"] = (du1[2] - du0[2]) / q * 1e6
                r["mock_chunk_us"] = r["mock_us"] / osl
                r["worker_chunk_us"] = r["worker_us"] / osl
                r["ratio"] = r["worker_us"] / r["mock_us"] if r["mock_us"] else float("nan")
                R.append(r)
                line.append("%s mock %.1f us/req (%.3f/chunk) worker %.1f (%.3f) "
                            "worker/mock %.2f, others %.0f%%" % (
                                k, r["mock_us"], r["mock_chunk_us"], r["worker_us"],
                                r["worker_chunk_us"], r["ratio"], 100 * r["others"]))
            h.log("rep %d %s osl %d: %s" % (rep, sc, osl, " | ".join(line)))
    finally:
        for m in procs.values():
            m.stop()
        h.stop_daemon(d)
    report(results, scen, osls, list(mocks), a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def report(results, scen, osls, names, a):
    R = results["runs"]
    mach = results["machine"]
    print("mock_cpu: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                  results["git"]))
    print("medians of %d repetitions; CPU µs (user + system) per streamed chat request and "
          "per chunk (= per request / OSL, one token per chunk)" % a.reps)
    print("| scenario | OSL | mock | mock µs/req | mock µs/chunk | worker µs/req | "
          "worker µs/chunk | worker / mock | mock user µs/req | worker user µs/req | others |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def sel(sc, k, osl):
        return [r for r in R if r["scenario"] == sc and r["mock"] == k and r["osl"] == osl]

    def med(rs, key):
        return h.med([r[key] for r in rs])
    for sc in scen:
        for osl in osls:
            for k in names:
                rs = sel(sc, k, osl)
                print("| %s | %d | %s | %.1f | %.3f | %.1f | %.3f | %.2f | %.1f | %.1f | %.0f%% |"
                      % (sc, osl, k, med(rs, "mock_us"), med(rs, "mock_chunk_us"),
                         med(rs, "worker_us"), med(rs, "worker_chunk_us"), med(rs, "ratio"),
                         med(rs, "mock_user_us"), med(rs, "worker_user_us"),
                         100 * med(rs, "others")))
    if len(osls) >= 2:
        print("marginal CPU per chunk (least-squares slope of the medians over OSL) and per "
              "request (intercept):")
        for sc in scen:
            for k in names:
                parts = []
                for who in ("mock", "worker", "mock_user", "worker_user"):
                    sl, ic = fit(osls, [med(sel(sc, k, o), who + "_us") for o in osls])
                    parts.append("%s %.3f µs/chunk + %.1f µs/request" % (
                        who.replace("_", " "), sl, ic))
                print("  %s %s: %s" % (sc, k, "; ".join(parts)))
    for sc in scen:
        for osl in osls:
            for k in names:
                rs = sel(sc, k, osl)
                print("runs %s %d %s: mock µs/req %s; worker µs/req %s; worker/mock %s" % (
                    sc, osl, k, h.fmt_runs([r["mock_us"] for r in rs], "%.1f"),
                    h.fmt_runs([r["worker_us"] for r in rs], "%.1f"),
                    h.fmt_runs([r["ratio"] for r in rs])))
            if "before" in names:
                pairs = [(x["mock_us"], y["mock_us"]) for x in sel(sc, "before", osl)
                         for y in sel(sc, "new", osl) if x["rep"] == y["rep"]]
                print("runs %s %d: mock before / new per repetition %s" % (
                    sc, osl, h.fmt_runs([p[0] / p[1] for p in pairs])))
    print("steal: max %.1f%%" % (100 * max([r["steal"] for r in R] or [0])))


if __name__ == "__main__":
    main()
