#!/usr/bin/env python3
# pacing.py - pacing precision of one worker: schedule lag p50/p99/max and
# achieved versus requested rate for Poisson arrivals at several rates,
# through the whole service (REST submit -> daemon -> one worker -> mock).
#
#   bench/build.sh && bench/pacing.py [--rates 1000,2000,5000,20000]
#                                     [--duration 10] [--repeat 3]
#
# By default the daemon and its worker are pinned to CPU 0 and headroom-mock
# to CPU 1. With --worker-alone the worker gets CPU 0 to itself (the daemon
# joins the mock on CPU 1; the worker is re-pinned as soon as it appears),
# which separates the worker's own pacing from competition with the
# daemon's threads.
# Figures come from the run's own summary: `schedule_lag` (start - intended)
# over every sent request, and summary.load.achieved_rate (sends over the
# span of actual starts). Medians over --repeat runs. Streams are short
# (8 output tokens, ISL 16) so the mock stays light. Loopback only.

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as hb  # noqa: E402


def pin_worker(daemon_pid, timeout=10.0):
    """Moves the run's worker (a child of the daemon) to CPU 0 once it exists."""
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = hb.children(daemon_pid)
        if kids:
            for k in kids:
                hb.pin_all_threads(k, {0})
            return
        time.sleep(0.005)
    hb.log("pacing: no worker appeared to pin")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rates", default="1000,2000,5000,20000")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--worker-alone", action="store_true")
    ap.add_argument("--daemon-nice", type=int, default=0,
                    help="run the daemon at this niceness and its worker at the normal 0 "
                    "(headroomd --worker-prefix 'nice -n -N'; needs root for N > 0)")
    ap.add_argument("--telemetry", action="store_true",
                    help="leave the run's telemetry at its defaults (scraping the mock's "
                    "/metrics every second) instead of turning it off")
    a = ap.parse_args()
    hb.warn_if_busy()
    mock = hb.start_mock("1")
    extra, prefix = ["--default-workers", "1"], []
    if a.daemon_nice:
        prefix = ["nice", "-n", str(a.daemon_nice)]
        extra += ["--worker-prefix", "nice -n %d" % -a.daemon_nice]
    d = hb.start_daemon("1" if a.worker_alone else "0", extra=extra, prefix=prefix)
    api = hb.Api(d.port)
    print("machine: %s" % hb.machine())
    print("layout: %s" % ("worker alone on CPU 0; daemon and mock on CPU 1" if a.worker_alone
                          else "daemon and worker on CPU 0; mock on CPU 1"))
    print("daemon niceness %d, worker 0; telemetry %s" % (
        a.daemon_nice, "defaults" if a.telemetry else "off"))
    print("| rate (req/s) | schedule's own rate | achieved (median) | within 1% of the schedule "
          "| lag p50 (us) | lag p99 (us) | lag max (ms) | runs |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for rate in [float(x) for x in a.rates.split(",")]:
            rows = []
            for _ in range(a.repeat):
                spec = {"name": "pacing %g/s" % rate,
                        "target": {"url": "http://127.0.0.1:%d" % mock.port,
                                   "model": "mock-model", "stream": True},
                        "workload": {"isl": {"mean": 16}, "osl": {"mean": 8}, "seed": 1},
                        "load": {"mode": "rate", "rate": rate, "arrival": "poisson",
                                 "duration_s": a.duration, "grace_s": 5},
                        "telemetry": {"nvml": False, "dcgm_urls": [],
                                      "server_metrics": False},
                        "workers": 1}
                if a.telemetry:
                    del spec["telemetry"]
                rid = api.submit(spec)
                if a.worker_alone:
                    pin_worker(d.p.pid)
                run = api.wait(rid)
                s = run.get("summary") or {}
                lag = s.get("metrics", {}).get("schedule_lag", {})
                load = s.get("load") or {}
                ach = load.get("achieved_rate")
                # the seeded sample's own rate: its arrivals within the
                # duration (sent, or held back and never sent) over it
                own = (load.get("sent", 0) + load.get("unsent", 0)) / a.duration
                if run["state"] != "succeeded" or ach is None or "p99" not in lag:
                    hb.log("rate %g: run %d %s: %s" % (rate, run["id"], run["state"],
                                                       run.get("reason")))
                    continue
                rows.append((ach, lag["p50"] * 1e3, lag["p99"] * 1e3, lag["max"], own))
                hb.log("rate %g: achieved %.1f, lag p50 %.1f us p99 %.1f us max %.2f ms "
                       "(schedule %.1f/s)" % ((rate,) + rows[-1]))
            if not rows:
                print("| %g | | failed | | | | | 0 |" % rate)
                continue
            ach, own = hb.med([r[0] for r in rows]), hb.med([r[4] for r in rows])
            print("| %g | %.1f | %.1f | %s | %.1f | %.1f | %.2f | %d |" % (
                rate, own, ach, "yes" if abs(ach - own) / own <= 0.01 else "no",
                hb.med([r[1] for r in rows]), hb.med([r[2] for r in rows]),
                hb.med([r[3] for r in rows]), len(rows)))
    finally:
        hb.stop_daemon(d)
        mock.stop()


if __name__ == "__main__":
    main()
