# client_cpu.py - client CPU per streamed request and per streamed token:
# headroom-worker vs wrk, both against headroom-mock with zero simulated delay.
#
# Run:  bench/client_cpu.sh [--reps 3] [--osl 16,64,256,1024] [--requests 20000]
#       (or /usr/bin/python3 bench/client_cpu.py ...; --json FILE writes raw results)
# Needs: a Release build in build-bench/ (or $HEADROOM_BIN), wrk, taskset, 2+ CPUs.
#
# What it measures, per output length (chat, stream, ISL 128, concurrency 64,
# one worker), repeated --reps times, medians reported:
#   headroom  daemon + its worker pinned to CPU 0, mock pinned to CPU 1.
#             worker CPU  = delta of the daemon's cutime+cstime (/proc/PID/stat:
#                           the daemon reaps its workers, so their whole user+sys
#                           time lands there) / completed requests
#             daemon CPU  = delta of the daemon's own utime+stime (record decode,
#                           ingestion into SQLite, the summary) / requests
#             mock CPU    = delta of the mock's utime+stime / requests
#   wrk       wrk -t1 -c64 pinned to CPU 0, same mock on CPU 1, a Lua script
#             POSTing the same kind of body (chat messages with 128 words,
#             max_tokens OSL, stream true, stream_options.include_usage);
#             wrk CPU = its rusage user+sys (os.wait4) / requests it completed.
# CPU time per unit of work does not depend on who won the shared core;
# the "busy" columns (CPU seconds / wall seconds per pinned core) say which
# side was the bottleneck. Slope of CPU/request against OSL (least squares)
# estimates the CPU per streamed token.

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as h  # noqa: E402

WORDS = ("time year people way day man thing woman life child world school state family "
         "student group country problem hand part place case week company system program "
         "question work number night point home water room mother area money story fact "
         "month lot right study book eye job word business issue side kind head house "
         "service friend father power hour game line end member law car").split()


def wrk_lua(osl, isl, path):
    prompt = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(isl))
    # the member order headroom-worker uses: messages, max_tokens, then the fixed tail
    body = ('{"messages":[{"role":"user","content":"%s"}],"max_tokens":%d,'
            '"model":"mock-model","stream":true,"stream_options":{"include_usage":true}}'
            % (prompt, osl))
    with open(path, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write('wrk.headers["Content-Type"] = "application/json"\n')
        f.write('wrk.headers["Accept"] = "text/event-stream"\n')
        f.write("wrk.body = [==[%s]==]\n" % body)
        # count non-2xx answers so a broken setup cannot pass as fast
        f.write("bad = 0\nfunction response(status, headers, body)\n"
                "  if status ~= 200 then bad = bad + 1 end\nend\n"
                "done = function(summary, latency, requests)\n"
                "  io.write(string.format('lua-bad %d\\n', bad))\nend\n")


def run_wrk(wrk, lua, port, seconds, cpu):
    argv = ["taskset", "-c", str(cpu), wrk, "-t1", "-c64", "-d%ds" % seconds, "-s", lua,
            "http://127.0.0.1:%d/v1/chat/completions" % port]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t = time.monotonic()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if p.returncode != 0 or not m:
        raise RuntimeError("wrk failed:\n" + out)
    n = int(m.group(1))
    if re.search(r"Non-2xx|Socket errors", out):
        raise RuntimeError("wrk saw errors:\n" + out)
    return {"requests": n, "cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": wall,
            "out": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--osl", default="16,64,256,1024")
    ap.add_argument("--requests", type=int, default=20000,
                    help="requests per headroom run at OSL <= 64; scaled down above "
                         "(64/OSL, at least 2000) to keep runs short")
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--wrk-seconds", type=int, default=2)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    wrk = shutil.which("wrk")
    if not wrk:
        sys.exit("bench: wrk is not installed (apt-get install -y wrk)")
    osls = [int(x) for x in a.osl.split(",")]
    os.sched_setaffinity(0, {a.server_cpu})  # this harness mostly sleeps; keep it off CPU 0
    results_load = h.warn_if_busy()
    tmp = tempfile.mkdtemp(prefix="hr-bench-wrk-")
    mock = h.start_mock([a.server_cpu])
    d = h.start_daemon([a.client_cpu])
    api = h.Api(d.port)
    results = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "runs": [],
               "load_before": results_load}
    try:
        # warm-up: page cache, the mock's buffers, SQLite file growth
        api.wait(api.submit(h.chat_spec(mock.port, 64, 2000, a.concurrency, a.isl)))
        for rep in range(a.reps):
            for osl in osls:
                n = a.requests if osl <= 64 else max(2000, a.requests * 64 // osl)
                s0, oth = h.sys_cpu(), h.Others([d.pid, mock.pid])
                c0, m0, t0 = h.proc_cpu(d.pid), h.proc_cpu(mock.pid), time.monotonic()
                rid = api.submit(h.chat_spec(mock.port, osl, n, a.concurrency, a.isl,
                                             name="client_cpu osl %d" % osl))
                run = api.wait(rid, poll=0.05)
                c1, m1, t1 = h.proc_cpu(d.pid), h.proc_cpu(mock.pid), time.monotonic()
                s1 = h.sys_cpu()
                cnt = run["summary"]["counts"]
                if run["state"] != "succeeded" or cnt["errors"]:
                    raise RuntimeError("run %d: %s %s" % (rid, run["state"], cnt))
                done = cnt["requests"]
                wall = t1 - t0
                hr = {"tool": "headroom", "rep": rep, "osl": osl, "requests": done,
                      "wall_s": wall, "worker_cpu_s": c1[1] - c0[1],
                      "daemon_cpu_s": c1[0] - c0[0], "mock_cpu_s": m1[0] - m0[0],
                      "rate": run["summary"]["metrics"]["request_throughput"]["avg"],
                      "steal": h.steal_frac(s0, s1)}
                hr["others"] = oth.share()
                hr["worker_us"] = hr["worker_cpu_s"] / done * 1e6
                hr["daemon_us"] = hr["daemon_cpu_s"] / done * 1e6
                hr["mock_us"] = hr["mock_cpu_s"] / done * 1e6
                hr["client_busy"] = (hr["worker_cpu_s"] + hr["daemon_cpu_s"]) / wall
                hr["mock_busy"] = hr["mock_cpu_s"] / wall
                results["runs"].append(hr)

                lua = os.path.join(tmp, "chat%d.lua" % osl)
                wrk_lua(osl, a.isl, lua)
                m0, s0, oth = h.proc_cpu(mock.pid), h.sys_cpu(), h.Others([mock.pid])
                w = run_wrk(wrk, lua, mock.port, a.wrk_seconds, a.client_cpu)
                m1, s1 = h.proc_cpu(mock.pid), h.sys_cpu()
                wr = {"tool": "wrk", "rep": rep, "osl": osl, "requests": w["requests"],
                      "wall_s": w["wall_s"], "wrk_cpu_s": w["cpu_s"],
                      "mock_cpu_s": m1[0] - m0[0], "rate": w["requests"] / a.wrk_seconds,
                      "steal": h.steal_frac(s0, s1)}
                wr["others"] = oth.share()
                wr["wrk_us"] = wr["wrk_cpu_s"] / wr["requests"] * 1e6
                wr["mock_us"] = wr["mock_cpu_s"] / wr["requests"] * 1e6
                wr["client_busy"] = wr["wrk_cpu_s"] / w["wall_s"]
                wr["mock_busy"] = wr["mock_cpu_s"] / w["wall_s"]
                results["runs"].append(wr)
                h.log("rep %d osl %4d: headroom worker %.1f us/req daemon %.1f mock %.1f "
                      "(%.0f req/s, steal %.0f%%) | wrk %.1f us/req mock %.1f (%.0f req/s, "
                      "steal %.0f%%)" %
                      (rep, osl, hr["worker_us"], hr["daemon_us"], hr["mock_us"], hr["rate"],
                       hr["steal"] * 100, wr["wrk_us"], wr["mock_us"], wr["rate"],
                       wr["steal"] * 100))
    finally:
        h.stop_daemon(d)
        mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    R = results["runs"]

    def col(tool, osl, key):
        return [r[key] for r in R if r["tool"] == tool and r["osl"] == osl]

    mach = results["machine"]
    print("client_cpu: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                    results["git"]))
    print("medians of %d runs; CPU microseconds per completed request; busy = CPU s / wall s "
          "on that side's core" % a.reps)
    print("| OSL | requests/run | worker µs/req | daemon µs/req | wrk µs/req | worker/wrk | "
          "(worker+daemon)/wrk | mock µs/req (headroom, wrk) | req/s (headroom, wrk) | "
          "busy client/mock (headroom; wrk) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    summary = {}
    for osl in osls:
        wu, du, ku = med(col("headroom", osl, "worker_us")), med(col("headroom", osl, "daemon_us")), \
            med(col("wrk", osl, "wrk_us"))
        summary[osl] = (wu, du, ku)
        print("| %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f, %.1f | %.0f, %.0f | "
              "%.2f/%.2f; %.2f/%.2f |" %
              (osl, med(col("headroom", osl, "requests")), wu, du, ku, wu / ku, (wu + du) / ku,
               med(col("headroom", osl, "mock_us")), med(col("wrk", osl, "mock_us")),
               med(col("headroom", osl, "rate")), med(col("wrk", osl, "rate")),
               med(col("headroom", osl, "client_busy")), med(col("headroom", osl, "mock_busy")),
               med(col("wrk", osl, "client_busy")), med(col("wrk", osl, "mock_busy"))))
    if len(osls) >= 2:
        for name, idx in (("worker", 0), ("worker+daemon", None), ("wrk", 2)):
            ys = [(summary[o][0] + summary[o][1]) if idx is None else summary[o][idx]
                  for o in osls]
            slope, icpt = fit(osls, ys)
            print("slope %-14s %.3f µs per streamed token (intercept %.1f µs/request)" %
                  (name, slope, icpt))
        # the slope per repetition, to show its spread
        for name, key, tool in (("worker", "worker_us", "headroom"), ("wrk", "wrk_us", "wrk")):
            per = []
            for rep in range(a.reps):
                pts = [(r["osl"], r[key]) for r in R if r["tool"] == tool and r["rep"] == rep]
                per.append(fit([p[0] for p in pts], [p[1] for p in pts])[0])
            print("slope %-6s per repetition: %s µs/token" % (name, h.fmt_runs(per, "%.3f")))
    for osl in osls:
        ratios = [x / y for x, y in zip(col("headroom", osl, "worker_us"),
                                        col("wrk", osl, "wrk_us"))]
        print("runs osl %d: worker µs/req %s, wrk µs/req %s, worker/wrk per repetition %s "
              "(median %.2f), steal %% %s" %
              (osl, h.fmt_runs(col("headroom", osl, "worker_us"), "%.1f"),
               h.fmt_runs(col("wrk", osl, "wrk_us"), "%.1f"), h.fmt_runs(ratios),
               med(ratios), h.fmt_runs([100 * x for x in col("headroom", osl, "steal") +
                                        col("wrk", osl, "steal")], "%.0f")))
    print("CPU used by other processes on this machine during the runs (share of both cores, "
          "headroom runs then wrk runs): %s; %s" %
          (h.fmt_runs([100 * r["others"] for r in R if r["tool"] == "headroom"], "%.0f%%"),
           h.fmt_runs([100 * r["others"] for r in R if r["tool"] == "wrk"], "%.0f%%")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


def med(xs):
    return h.med(xs)


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


if __name__ == "__main__":
    main()
