#!/usr/bin/env python3
# vllm_side.py - headroom's TTFT beside vLLM's own benchmark client
# (benchmarks/benchmark_serving.py) against headroom-mock with a known truth:
# TTFT 20 ms, ITL 2 ms, 64 tokens, completions, streamed. The mock is pinned
# to one CPU, the client under test (headroomd + its worker, or vLLM's
# client) to another. For each concurrency it reports TTFT p50/p99 as each
# client measured them, headroom's client verdict with its read lag and
# 100 ms window figures, and the machine's load (uptime) before each
# measurement.
#
# vLLM's client runs offline with small stand-in modules for its Hugging
# Face imports (transformers, huggingface_hub, datasets); see
# --vllm-dir and --stubs. Get the client from a git copy of vLLM:
#   git --git-dir=VLLM.git show 41c5dd45:benchmarks/benchmark_serving.py > DIR/benchmark_serving.py
#   git --git-dir=VLLM.git show 41c5dd45:benchmarks/backend_request_func.py > DIR/backend_request_func.py
# It needs Debian's python3-aiohttp, -numpy, -pandas, -tqdm, -pil and
# wamerican; run this script with /usr/bin/python3.
#
# --before-worker OLD/headroom-worker measures an older worker binary too
# (through the same daemon: headroomd --worker-bin), in the same repetition.
#
# Usage:
#   /usr/bin/python3 bench/vllm_side.py --vllm-dir DIR --stubs STUBS \
#       [--conc 4,64,128,192,256] [--waves 4] [--client-cpu 0] [--server-cpu 1] \
#       [--prewarm] [--before-worker PATH] [--json FILE]
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench  # noqa: E402

TTFT_MS, ITL_MS, OSL, ISL = 20, 2, 64, 24


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def headroom_run(api, port, conc, n, prewarm):
    spec = {"name": "vllm-side c%d" % conc,
            "target": {"url": "http://127.0.0.1:%d" % port, "endpoint": "completions",
                       "model": "mock-model", "stream": True},
            "workload": {"isl": {"mean": ISL, "stddev": 0}, "osl": {"mean": OSL, "stddev": 0},
                         "seed": 1},
            "load": {"mode": "concurrency", "concurrency": conc, "requests": n},
            "workers": 1}
    if prewarm:
        spec["target"]["prewarm"] = True
    rid = api.submit(spec)
    run = api.wait(rid)
    s = run.get("summary") or {}
    t = s.get("metrics", {}).get("time_to_first_token", {})
    c = s.get("client", {})
    h = c.get("headline", {})
    return {"state": run["state"], "p50": t.get("p50"), "p99": t.get("p99"),
            "verdict": c.get("verdict"), "reasons": [r["code"] for r in c.get("reasons", [])],
            "read_lag_p99_ms": h.get("read_lag_p99_ms"), "read_lag_max_ms": h.get("read_lag_max_ms"),
            "kernel_lag_p99_ms": h.get("kernel_lag_p99_ms"),
            "schedule_lag_p99_ms": h.get("schedule_lag_p99_ms"),
            "schedule_lag_p50_ms": s.get("metrics", {}).get("schedule_lag", {}).get("p50"),
            "kernel_lag_max_ms": h.get("kernel_lag_max_ms"),
            "busy_windows_saturated": h.get("busy_windows_saturated"),
            "busy_windows": h.get("busy_windows"), "loop_busy_max": h.get("loop_busy_max")}


def vllm_run(args, port, conc, n, cpus):
    out = tempfile.mkdtemp(prefix="vllm-side-")
    env = dict(os.environ)
    env["PYTHONPATH"] = args.stubs
    argv = ["taskset", "-c", ",".join(map(str, cpus)), "/usr/bin/python3",
            "benchmark_serving.py", "--backend", "openai", "--base-url",
            "http://127.0.0.1:%d" % port, "--endpoint", "/v1/completions", "--model", "mock-model",
            "--tokenizer", "stub", "--dataset-name", "random", "--random-input-len", str(ISL),
            "--random-output-len", str(OSL), "--num-prompts", str(n), "--max-concurrency",
            str(conc), "--percentile-metrics", "ttft", "--metric-percentiles", "50,99",
            "--ignore-eos", "--save-result", "--result-dir", out, "--result-filename", "r.json"]
    p = subprocess.run(argv, cwd=args.vllm_dir, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("benchmark_serving.py failed:\n" + p.stdout[-2000:] + p.stderr[-2000:])
    with open(os.path.join(out, "r.json")) as f:
        r = json.load(f)
    ttfts = [x * 1000 for x in r.get("ttfts", []) if x and x > 0]
    return {"p50": pct(ttfts, 50), "p99": pct(ttfts, 99), "n": len(ttfts),
            "completed": r.get("completed")}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vllm-dir", required=True)
    ap.add_argument("--stubs", required=True)
    ap.add_argument("--conc", default="4,64,128,192,256")
    ap.add_argument("--waves", type=int, default=4, help="requests per slot")
    ap.add_argument("--min-requests", type=int, default=200)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--prewarm", action="store_true", help="headroom runs with target.prewarm")
    ap.add_argument("--before-worker", help="an older headroom-worker to measure beside")
    ap.add_argument("--no-vllm", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    concs = [int(x) for x in args.conc.split(",")]
    mock = hrbench.start_mock([args.server_cpu],
                              ["--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)])
    daemons = {"after": hrbench.start_daemon([args.client_cpu])}
    if args.before_worker:
        daemons["before"] = hrbench.start_daemon([args.client_cpu],
                                                 extra=["--worker-bin", args.before_worker])
    rows = []
    try:
        for conc in concs:
            n = max(args.min_requests, conc * args.waves)
            row = {"concurrency": conc, "requests": n}
            for name, d in sorted(daemons.items()):
                row["load_" + name] = uptime()
                row[name] = headroom_run(hrbench.Api(d.port), mock.port, conc, n, args.prewarm)
            if not args.no_vllm:
                row["load_vllm"] = uptime()
                row["vllm"] = vllm_run(args, mock.port, conc, n, [args.client_cpu])
            rows.append(row)
            hrbench.log(json.dumps(row))
    finally:
        for d in daemons.values():
            hrbench.stop_daemon(d)
        mock.stop()
    print("truth: TTFT %d ms (headroom-mock --ttft-ms %d --itl-ms %d, %d tokens, completions)" %
          (TTFT_MS, TTFT_MS, ITL_MS, OSL))
    print("%5s %6s | %-24s | %-24s | %-15s" % ("conc", "reqs", "headroom after p50/p99 (verdict)",
                                                 "headroom before p50/p99", "vLLM p50/p99"))
    for r in rows:
        def hv(k):
            x = r.get(k)
            if not x:
                return "-"
            return "%.2f/%.2f %s rl%s kl%s" % (x["p50"] or 0, x["p99"] or 0, x["verdict"],
                                               x["read_lag_p99_ms"], x["kernel_lag_p99_ms"])
        v = r.get("vllm")
        print("%5d %6d | %-32s | %-32s | %s" % (r["concurrency"], r["requests"], hv("after"),
                                                hv("before"),
                                                "%.2f/%.2f" % (v["p50"], v["p99"]) if v else "-"))
        print("      load: %s" % r.get("load_after", "").split("load average:")[-1].strip())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": hrbench.machine(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
