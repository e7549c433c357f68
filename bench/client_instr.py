#!/usr/bin/python3
# client_instr.py - user-space instructions per streamed request of
# headroom-worker (and of wrk, for context), counted with callgrind: numbers
# that repeat across runs on a noisy shared machine, for catching regressions.
#
# Run:   /usr/bin/python3 bench/client_instr.py [--osl 16,64,256] [--small 500 --large 1500]
# Needs: valgrind, wrk, a Release build in build-bench/ (or $HEADROOM_BIN). ~1.5 min.
#
# How: headroomd is started with --worker-bin pointing to a wrapper that runs
# headroom-worker under `valgrind --tool=callgrind`; each OSL is run with
# --small and --large requests (chat, stream, ISL 128, concurrency 64, mock
# with zero delay) and instructions per request = (Ir_large - Ir_small) /
# (large - small), which removes start-up and shutdown. wrk runs under
# callgrind for two durations and is fitted the same way against the requests
# it reports. Only user-space instructions are counted: system calls and the
# kernel's TCP work (most of wrk's cost) are not, so the headroom/wrk ratio
# of this table is NOT the CPU ratio of client_cpu.sh; use it to track the
# worker's own code over time. The slope against OSL is instructions per token.

import argparse
import glob
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
import client_cpu  # noqa: E402


def total_ir(path):
    with open(path) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in " + path)


def wait_totals(tmp, timeout=30):
    """Total Ir of the callgrind file(s) in tmp, once written completely."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        files = glob.glob(os.path.join(tmp, "cg.*"))
        try:
            if files:
                return sum(total_ir(p) for p in files)
        except (RuntimeError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError("callgrind output did not appear in " + tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--osl", default="16,64,256")
    ap.add_argument("--small", type=int, default=500)
    ap.add_argument("--large", type=int, default=1500)
    ap.add_argument("--wrk-seconds", default="2,5")
    a = ap.parse_args()
    for tool in ("valgrind", "wrk"):
        if not shutil.which(tool):
            sys.exit("bench: %s is not installed" % tool)
    osls = [int(x) for x in a.osl.split(",")]
    tmp = tempfile.mkdtemp(prefix="hr-bench-cg-")
    wrapper = os.path.join(tmp, "worker-under-callgrind")
    with open(wrapper, "w") as f:
        # not exec: headroomd SIGKILLs a worker as soon as it has said DONE, which
        # would lose callgrind's output; this shell takes the SIGKILL, and the
        # worker under callgrind then ends normally (PDEATHSIG = SIGTERM) and
        # writes its counts
        f.write('#!/bin/sh\nvalgrind -q --tool=callgrind --callgrind-out-file="%s/cg.$$" '
                '"%s/headroom-worker" "$@"\n' % (tmp, h.bindir()))
    os.chmod(wrapper, 0o755)
    mock = h.start_mock([1])
    d = h.start_daemon([0], extra=["--worker-bin", wrapper])
    api = h.Api(d.port)
    res = {}
    try:
        for osl in osls:
            irs = []
            for n in (a.small, a.large):
                for old in glob.glob(os.path.join(tmp, "cg.*")):
                    os.unlink(old)
                rid = api.submit(h.chat_spec(mock.port, osl, n))
                run = api.wait(rid, poll=0.2)
                if run["state"] != "succeeded" or run["summary"]["counts"]["errors"]:
                    raise RuntimeError("run %d: %s %s" % (rid, run["state"], run.get("reason")))
                irs.append(wait_totals(tmp))
            per = (irs[1] - irs[0]) / (a.large - a.small)
            # wrk
            lua = os.path.join(tmp, "chat%d.lua" % osl)
            client_cpu.wrk_lua(osl, 128, lua)
            pts = []
            for secs in a.wrk_seconds.split(","):
                out = os.path.join(tmp, "wrk.cg")
                p = subprocess.run(["taskset", "-c", "0", "valgrind", "-q", "--tool=callgrind",
                                    "--callgrind-out-file=" + out, shutil.which("wrk"), "-t1",
                                    "-c64", "-d%ss" % secs, "-s", lua,
                                    "http://127.0.0.1:%d/v1/chat/completions" % mock.port],
                                   capture_output=True, text=True)
                m = re.search(r"(\d+) requests in", p.stdout)
                if p.returncode or not m or "Non-2xx" in p.stdout:
                    raise RuntimeError("wrk under callgrind failed:\n" + p.stdout + p.stderr)
                pts.append((int(m.group(1)), total_ir(out)))
            wper = (pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0])
            res[osl] = (per, wper)
            h.log("osl %d: worker %.0f instructions/request, wrk %.0f" % (osl, per, wper))
    finally:
        h.stop_daemon(d)
        mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    mach = h.machine()
    print("client_instr: %s, %s, build: %s (callgrind, user-space instructions only)" %
          (mach["cpu"], mach["date"], h.git_rev()))
    print("| OSL | worker instr/request | wrk instr/request |")
    print("|---:|---:|---:|")
    for osl in osls:
        print("| %d | %.0f | %.0f |" % (osl, res[osl][0], res[osl][1]))
    if len(osls) >= 2:
        s, i = client_cpu.fit(osls, [res[o][0] for o in osls])
        ws, wi = client_cpu.fit(osls, [res[o][1] for o in osls])
        print("slope: worker %.0f instructions per streamed token (intercept %.0f); "
              "wrk %.0f (intercept %.0f)" % (s, i, ws, wi))


if __name__ == "__main__":
    main()
