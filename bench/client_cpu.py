# client_cpu.py - client CPU per streamed request and per streamed token,
# side by side: headroom (its worker, and worker + daemon ingestion), wrk,
# h2load, a Python asyncio/aiohttp client, and libcurl alone driven the way
# the worker drives it, all against the same headroom-mock endpoint with
# zero simulated delay.
#
# Run:  bench/client_cpu.sh [--reps 3] [--osl 16,64,256,1024] [--tools headroom,wrk,h2load,aiohttp]
#       (or /usr/bin/python3 bench/client_cpu.py ...; --json FILE writes raw results;
#       tools: headroom, wrk, h2load, aiohttp, libcurl)
# Needs: a Release build in build-bench/ (or $HEADROOM_BIN), taskset, 2+ CPUs; wrk,
#        h2load (nghttp2-client) and python3-aiohttp for their columns
#        (packaging/install-bench-deps.sh), cc and libcurl's headers for the
#        libcurl column (the build's own dependencies); a missing tool is left
#        out, and said so.
#
# What it measures, per output length (chat, stream, ISL 128 words, concurrency
# 64, one connection per concurrent stream, keep-alive), repeated --reps
# times, medians reported. The client runs on CPU 0, the mock on CPU 1:
#   headroom  headroomd and its one worker on CPU 0.
#             worker CPU  = delta of the daemon's cutime+cstime (/proc/PID/stat:
#                           the daemon reaps its workers, so their whole user+sys
#                           time lands there) / completed requests
#             daemon CPU  = delta of the daemon's own utime+stime (record decode,
#                           ingestion into SQLite, the summary) / requests
#   wrk       wrk -t1 -c64 for --wrk-seconds, a Lua script POSTing the same body
#             (raw HTTP: reads the chunked body, parses no SSE); CPU = its rusage.
#   h2load    h2load --h1 -t1 -c64 -n N -d BODY (HTTP/1.1, same body; reads the
#             body, parses no SSE); CPU = its rusage.
#   aiohttp   bench/aiohttp_client.py: one asyncio process written the way
#             vLLM's benchmark sends and times requests (SSE lines, json.loads,
#             time.perf_counter per chunk); CPU = time.process_time() over the
#             benchmark, interpreter start-up and imports excluded.
#   libcurl   bench/curl_floor.c (compiled here with cc): the worker's libcurl
#             set-up (multi socket API, epoll, reused easy handles, the same
#             options, headers and body) with a write callback that only
#             counts bytes: the part of the worker's cost that is libcurl's.
#             CPU = getrusage over its transfer loop.
#   mock CPU = delta of the mock's utime+stime / requests, for each tool.
# CPU time per unit of work does not depend on who won the shared core;
# the "busy" columns (CPU seconds / wall seconds per pinned core) say which
# side was the bottleneck. The slope of CPU/request against OSL (least
# squares) is the CPU per streamed token; the intercept the per-request part.

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

TOOLS = ("headroom", "wrk", "h2load", "aiohttp", "libcurl")
INSTALL = "packaging/install-bench-deps.sh"


def body(osl, isl):
    prompt = " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(isl))
    # the member order headroom-worker uses: messages, max_tokens, then the fixed tail
    return ('{"messages":[{"role":"user","content":"%s"}],"max_tokens":%d,'
            '"model":"mock-model","stream":true,"stream_options":{"include_usage":true}}'
            % (prompt, osl))


def wrk_lua(osl, isl, path):
    # no response() hook: with one, wrk keeps every body for Lua, which is
    # not raw HTTP any more (its CPU per byte doubles); non-2xx answers are
    # counted by wrk itself ("Non-2xx or 3xx responses", checked below)
    with open(path, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write('wrk.headers["Content-Type"] = "application/json"\n')
        f.write('wrk.headers["Accept"] = "text/event-stream"\n')
        f.write("wrk.body = [==[%s]==]\n" % body(osl, isl))


def run_rusage(argv):
    """Runs argv; returns (stdout+stderr text, rusage user+sys, wall s, exit code)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t = time.monotonic()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    return out, ru.ru_utime + ru.ru_stime, wall, os.waitstatus_to_exitcode(status)


def run_wrk(wrk, lua, port, seconds, cpu, conc):
    out, cpu_s, wall, rc = run_rusage(
        ["taskset", "-c", str(cpu), wrk, "-t1", "-c%d" % conc, "-d%ds" % seconds, "-s", lua,
         "http://127.0.0.1:%d/v1/chat/completions" % port])
    m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    if rc != 0 or not m:
        raise RuntimeError("wrk failed:\n" + out)
    if re.search(r"Non-2xx|Socket errors", out):
        raise RuntimeError("wrk saw errors:\n" + out)
    return {"requests": int(m.group(1)), "cpu_s": cpu_s, "wall_s": wall}


def run_h2load(h2load, body_file, port, n, cpu, conc):
    out, cpu_s, wall, rc = run_rusage(
        ["taskset", "-c", str(cpu), h2load, "--h1", "-t1", "-c%d" % conc, "-n%d" % n,
         "-d", body_file, "-H", "content-type: application/json",
         "-H", "accept: text/event-stream",
         "http://127.0.0.1:%d/v1/chat/completions" % port])
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored", out)
    s = re.search(r"status codes: (\d+) 2xx", out)
    if rc != 0 or not m or not s:
        raise RuntimeError("h2load failed:\n" + out[-2000:])
    ok, failed, errored, c2xx = int(m.group(4)), int(m.group(5)), int(m.group(6)), int(s.group(1))
    if failed or errored or c2xx != ok:
        raise RuntimeError("h2load saw errors:\n" + out[-2000:])
    return {"requests": ok, "cpu_s": cpu_s, "wall_s": wall}


def run_aiohttp(port, n, osl, isl, cpu, conc):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aiohttp_client.py")
    out, cpu_all, wall, rc = run_rusage(
        ["taskset", "-c", str(cpu), "/usr/bin/python3", script,
         "--url", "http://127.0.0.1:%d/v1/chat/completions" % port, "--requests", str(n),
         "--concurrency", str(conc), "--osl", str(osl), "--isl", str(isl)])
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError("aiohttp client failed:\n" + out[-2000:])
    if rc != 0 or r["failed"] or r["requests"] != n or r["output_tokens"] != n * osl:
        raise RuntimeError("aiohttp client saw errors:\n" + out[-2000:])
    return {"requests": r["requests"], "cpu_s": r["cpu_s"], "wall_s": r["wall_s"],
            "cpu_process_s": cpu_all}


def run_floor(exe, body_file, port, n, cpu, conc):
    out, cpu_all, wall, rc = run_rusage(
        ["taskset", "-c", str(cpu), exe, "http://127.0.0.1:%d/v1/chat/completions" % port,
         body_file, str(conc), str(n)])
    m = re.search(r"requests (\d+) errors (\d+) bytes (\d+) cpu_s ([\d.]+) wall_s ([\d.]+)", out)
    if rc != 0 or not m or int(m.group(2)) or int(m.group(1)) != n:
        raise RuntimeError("curl_floor failed:\n" + out[-2000:])
    return {"requests": n, "cpu_s": float(m.group(4)), "wall_s": float(m.group(5)),
            "cpu_process_s": cpu_all}


def build_floor(tmp):
    """Compiles bench/curl_floor.c; returns the program, or None (said why)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "curl_floor.c")
    exe = os.path.join(tmp, "curl_floor")
    if not cc:
        h.log("bench: no C compiler: the libcurl column is left out")
        return None
    p = subprocess.run([cc, "-O2", "-std=c11", "-o", exe, src, "-lcurl"], capture_output=True,
                       text=True)
    if p.returncode:
        h.log("bench: cannot build curl_floor (libcurl4-openssl-dev?): the libcurl column is "
              "left out\n" + p.stderr[-1000:])
        return None
    return exe


def have_aiohttp():
    return subprocess.run(["/usr/bin/python3", "-c", "import aiohttp"],
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--osl", default="16,64,256,1024")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--requests", type=int, default=20000,
                    help="requests per headroom and h2load run at OSL <= 64; scaled "
                         "down above (64/OSL, at least 2000)")
    ap.add_argument("--aiohttp-requests", type=int, default=2000,
                    help="requests per aiohttp run at OSL <= 64; scaled down above "
                         "(at least 300)")
    ap.add_argument("--isl", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--wrk-seconds", type=int, default=2)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    osls = [int(x) for x in a.osl.split(",")]
    tools = [t for t in a.tools.split(",") if t]
    for t in tools:
        if t not in TOOLS:
            sys.exit("bench: unknown tool %s (known: %s)" % (t, ", ".join(TOOLS)))
    wrk, h2load = shutil.which("wrk"), shutil.which("h2load")
    tmp = tempfile.mkdtemp(prefix="hr-bench-clients-")
    floor = build_floor(tmp) if "libcurl" in tools else None
    missing = {"wrk": not wrk, "h2load": not h2load, "aiohttp": not have_aiohttp(),
               "headroom": False, "libcurl": not floor}
    for t in [t for t in tools if missing[t] and t != "libcurl"]:
        h.log("bench: %s is not installed: its column is left out (%s, or apt-get install -y "
              "%s)" % (t, INSTALL, {"wrk": "wrk", "h2load": "nghttp2-client",
                                    "aiohttp": "python3-aiohttp"}[t]))
    tools = [t for t in tools if not missing[t]]
    if "wrk" not in tools:
        h.log("bench: without wrk there is no reference for the ratios")
    os.sched_setaffinity(0, {a.server_cpu})  # this harness mostly sleeps; keep it off CPU 0
    results_load = h.warn_if_busy()
    mock = h.start_mock([a.server_cpu])
    d = h.start_daemon([a.client_cpu]) if "headroom" in tools else None
    api = h.Api(d.port) if d else None
    results = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "runs": [],
               "load_before": results_load, "tools": tools}
    R = results["runs"]
    try:
        if api:  # warm-up: page cache, the mock's buffers, SQLite file growth
            api.wait(api.submit(h.chat_spec(mock.port, 64, 2000, a.concurrency, a.isl)))
        for rep in range(a.reps):
            for osl in osls:
                n = a.requests if osl <= 64 else max(2000, a.requests * 64 // osl)
                na = a.aiohttp_requests if osl <= 64 else max(300, a.aiohttp_requests * 64 // osl)
                bfile = os.path.join(tmp, "body%d.json" % osl)
                with open(bfile, "w") as f:
                    f.write(body(osl, a.isl))
                lua = os.path.join(tmp, "chat%d.lua" % osl)
                wrk_lua(osl, a.isl, lua)
                line = []
                for tool in tools:
                    pids = [mock.pid] + ([d.pid] if tool == "headroom" else [])
                    s0, oth = h.sys_cpu(), h.Others(pids)
                    m0 = h.proc_cpu(mock.pid)
                    r = {"tool": tool, "rep": rep, "osl": osl}
                    if tool == "headroom":
                        c0, t0 = h.proc_cpu(d.pid), time.monotonic()
                        rid = api.submit(h.chat_spec(mock.port, osl, n, a.concurrency, a.isl,
                                                     name="client_cpu osl %d" % osl))
                        run = api.wait(rid, poll=0.05)
                        c1, t1 = h.proc_cpu(d.pid), time.monotonic()
                        cnt = run["summary"]["counts"]
                        if run["state"] != "succeeded" or cnt["errors"]:
                            raise RuntimeError("run %d: %s %s" % (rid, run["state"], cnt))
                        r.update(requests=cnt["requests"], wall_s=t1 - t0,
                                 cpu_s=c1[1] - c0[1], daemon_cpu_s=c1[0] - c0[0])
                    elif tool == "wrk":
                        r.update(run_wrk(wrk, lua, mock.port, a.wrk_seconds, a.client_cpu,
                                         a.concurrency))
                    elif tool == "h2load":
                        r.update(run_h2load(h2load, bfile, mock.port, n, a.client_cpu,
                                            a.concurrency))
                    elif tool == "libcurl":
                        r.update(run_floor(floor, bfile, mock.port, n, a.client_cpu,
                                           a.concurrency))
                    else:
                        r.update(run_aiohttp(mock.port, na, osl, a.isl, a.client_cpu,
                                             a.concurrency))
                    m1, s1 = h.proc_cpu(mock.pid), h.sys_cpu()
                    r["mock_cpu_s"] = m1[0] - m0[0]
                    r["steal"] = h.steal_frac(s0, s1)
                    r["others"] = oth.share()
                    k = r["requests"]
                    r["us"] = r["cpu_s"] / k * 1e6
                    if tool == "headroom":
                        r["daemon_us"] = r["daemon_cpu_s"] / k * 1e6
                        r["total_us"] = r["us"] + r["daemon_us"]
                    else:
                        r["total_us"] = r["us"]
                    r["mock_us"] = r["mock_cpu_s"] / k * 1e6
                    r["rate"] = k / r["wall_s"]
                    r["client_busy"] = (r["cpu_s"] + r.get("daemon_cpu_s", 0)) / r["wall_s"]
                    r["mock_busy"] = r["mock_cpu_s"] / r["wall_s"]
                    R.append(r)
                    line.append("%s %.1f us/req%s (mock %.1f, %.0f req/s, others %.0f%%)" % (
                        tool, r["us"], " + daemon %.1f" % r["daemon_us"] if tool == "headroom"
                        else "", r["mock_us"], r["rate"], 100 * r["others"]))
                h.log("rep %d osl %4d: %s" % (rep, osl, " | ".join(line)))
    finally:
        if d:
            h.stop_daemon(d)
        mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, osls, tools, a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


def col(R, tool, osl, key):
    return [r[key] for r in R if r["tool"] == tool and r["osl"] == osl]


def report(results, osls, tools, a):
    R = results["runs"]
    med = h.med
    mach = results["machine"]
    print("client_cpu: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                    results["git"]))
    print("medians of %d runs; client CPU microseconds (user + system) per completed streamed "
          "request; chat, ISL %d, concurrency %d, headroom-mock with zero delay" %
          (a.reps, a.isl, a.concurrency))
    names = {"headroom": "headroom worker", "wrk": "wrk", "h2load": "h2load",
             "aiohttp": "aiohttp (Python)", "libcurl": "libcurl alone"}
    hdr = ["OSL"]
    for t in tools:
        hdr.append(names[t])
        if t == "headroom":
            hdr.append("headroom worker+daemon")
    ref = "wrk" in tools
    if ref:
        hdr += ["%s / wrk" % names[t] for t in tools if t != "wrk"]
        if "headroom" in tools:
            hdr.append("headroom worker+daemon / wrk")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---:|" * len(hdr))
    for osl in osls:
        row = [str(osl)]
        for t in tools:
            row.append("%.1f" % med(col(R, t, osl, "us")))
            if t == "headroom":
                row.append("%.1f" % med(col(R, t, osl, "total_us")))
        if ref:
            w = med(col(R, "wrk", osl, "us"))
            row += ["%.2f" % (med(col(R, t, osl, "us")) / w) for t in tools if t != "wrk"]
            if "headroom" in tools:
                row.append("%.2f" % (med(col(R, "headroom", osl, "total_us")) / w))
        print("| " + " | ".join(row) + " |")
    if len(osls) >= 2:
        print("CPU per streamed token (least-squares slope of the medians over OSL) and per "
              "request (intercept):")
        series = [(names[t], t, "us") for t in tools]
        if "headroom" in tools:
            series.insert(1, ("headroom worker+daemon", "headroom", "total_us"))
        for name, t, key in series:
            slope, icpt = fit(osls, [med(col(R, t, o, key)) for o in osls])
            per = []
            for rep in range(a.reps):
                pts = [(r["osl"], r[key]) for r in R if r["tool"] == t and r["rep"] == rep]
                if len(pts) >= 2:
                    per.append(fit([p[0] for p in pts], [p[1] for p in pts])[0])
            print("  %-24s %.3f µs/token (intercept %.1f µs/request); per repetition %s" %
                  (name, slope, icpt, h.fmt_runs(per, "%.3f")))
    print("context: mock CPU µs per request, requests/s, busy client/mock (CPU s per wall s "
          "on each side's core):")
    print("| OSL | tool | mock µs/req | req/s | busy client/mock |")
    print("|---:|---|---:|---:|---|")
    for osl in osls:
        for t in tools:
            print("| %d | %s | %.1f | %.0f | %.2f/%.2f |" % (
                osl, names[t], med(col(R, t, osl, "mock_us")), med(col(R, t, osl, "rate")),
                med(col(R, t, osl, "client_busy")), med(col(R, t, osl, "mock_busy"))))
    for osl in osls:
        parts = []
        for t in tools:
            parts.append("%s %s" % (t, h.fmt_runs(col(R, t, osl, "us"), "%.1f")))
        if "headroom" in tools and ref:
            ratios = [x / y for x, y in zip(col(R, "headroom", osl, "us"),
                                            col(R, "wrk", osl, "us"))]
            parts.append("worker/wrk per repetition %s" % h.fmt_runs(ratios))
        print("runs osl %d: %s" % (osl, "; ".join(parts)))
    print("CPU used by other processes on this machine during the runs (share of both cores): "
          + "; ".join("%s %s" % (t, h.fmt_runs([100 * r["others"] for r in R if r["tool"] == t],
                                                "%.0f%%")) for t in tools))
    print("steal: max %.1f%%" % (100 * max([r["steal"] for r in R] or [0])))


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


if __name__ == "__main__":
    main()
