"""chaos.py - freezes a random headroom process for a few milliseconds, again
and again, until stopped: a busy CI machine descheduling the daemon, a
worker or the mock at the worst moment, on demand.

Run it beside any test, e.g.

    /usr/bin/python3 tests/tools/chaos.py 7 &
    HEADROOM_BIN=build/bin python3 tests/integration/test_e2e.py
    kill %1

The argument seeds the choice of process and pauses (default 1). Every
0.01-0.08 s it SIGSTOPs one running headroomd, headroom-worker or
headroom-mock for 2-40 ms. A test must pass under it unless it judges
timing at that scale (the pacing tests) or stops processes itself
(test_lifecycle's frozen worker, which this resumes). Not part of
`make check`.
"""
import os
import random
import signal
import sys
import time

NAMES = ("headroomd", "headroom-worker", "headroom-mock")


def headroom_pids():
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                if f.read().strip() in NAMES:
                    pids.append(int(p))
        except OSError:
            pass
    return pids


def main():
    rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    while True:
        time.sleep(rng.uniform(0.01, 0.08))
        pids = headroom_pids()
        if not pids:
            continue
        pid = rng.choice(pids)
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(rng.uniform(0.002, 0.04))
        except ProcessLookupError:
            continue
        finally:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
