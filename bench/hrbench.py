# hrbench.py - shared helpers for the bench/ scripts (not a benchmark itself).
#
# Starts headroom-mock and headroomd pinned to chosen CPUs, talks to the REST
# API on 127.0.0.1 only, and reads CPU time from /proc (process ticks, and
# per-thread nanoseconds from /proc/PID/task/TID/schedstat).
# Imported by the benchmark scripts of bench/; Python 3 standard library only.

import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICK = os.sysconf("SC_CLK_TCK")


def bindir():
    """Where the programs are: $HEADROOM_BIN or build-bench/bin (a Release build)."""
    d = os.environ.get("HEADROOM_BIN", os.path.join(ROOT, "build-bench", "bin"))
    for p in ("headroomd", "headroom-worker", "headroom-mock"):
        if not os.access(os.path.join(d, p), os.X_OK):
            sys.exit(
                "bench: %s/%s is missing; build it first: bench/build.sh "
                "(or set HEADROOM_BIN)" % (d, p))
    return d


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def git_rev():
    """What the measured binaries were built from (BUILD_INFO of bench/build.sh),
    else the checkout's HEAD (marked: the binaries may be older than it)."""
    info = os.path.join(os.path.dirname(bindir()), "BUILD_INFO")
    try:
        with open(info) as f:
            return f.read().strip()
    except OSError:
        pass
    try:
        r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return "checkout %s%s (no BUILD_INFO: binaries of unknown revision)" % (
            r.stdout.strip(), "+dirty" if dirty else "")
    except Exception:
        return "?"


# --- /proc -------------------------------------------------------------------

def _stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    # the command name may hold spaces and parentheses: split after the last ')'
    return s[s.rindex(")") + 2:].split()


def proc_cpu(pid):
    """(own user+sys seconds, reaped children's user+sys seconds) of a process.
    Resolution: one clock tick (1/SC_CLK_TCK s)."""
    f = _stat_fields(pid)
    # after the name: [0]=state ... utime=[11] stime=[12] cutime=[13] cstime=[14]
    return ((int(f[11]) + int(f[12])) / TICK, (int(f[13]) + int(f[14])) / TICK)


def sys_cpu():
    """System-wide (busy, steal, total) ticks from /proc/stat: with steal_frac()
    it shows how much the hypervisor took away during a measurement."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice
    return (v[0] + v[1] + v[2] + v[5] + v[6], v[7], sum(v[:8]))


def steal_frac(a, b):
    tot = b[2] - a[2]
    return (b[1] - a[1]) / tot if tot > 0 else 0.0


class Others:
    """How much of the machine's CPU went to processes that are not ours while
    something was measured: system-wide busy time (/proc/stat) minus this
    harness, its reaped children (wrk, curl) and the live processes given
    (own + reaped children's time, e.g. the daemon and its workers, the mock).
    Returned as a share of all CPUs' time; other users of a shared machine
    (someone's build or test run) show up here."""

    def __init__(self, pids):
        self.pids = list(pids)
        self.t0 = self._ours()
        self.s0 = sys_cpu()

    def _ours(self):
        t = os.times()
        tot = t.user + t.system + t.children_user + t.children_system
        for p in self.pids:
            try:
                a, b = proc_cpu(p)
                tot += a + b
            except OSError:
                pass
        return tot

    def share(self):
        s1 = sys_cpu()
        busy = (s1[0] - self.s0[0]) / TICK
        total = (s1[2] - self.s0[2]) / TICK
        ours = self._ours() - self.t0
        return max(0.0, busy - ours) / total if total > 0 else 0.0


def machine_load(seconds=1.0):
    """Share of all CPUs busy (non-idle) over a short interval, before a benchmark."""
    a = sys_cpu()
    time.sleep(seconds)
    b = sys_cpu()
    return (b[0] - a[0]) / (b[2] - a[2]) if b[2] > a[2] else 0.0


def warn_if_busy():
    load = machine_load()
    if load > 0.1:
        log("bench: warning: %.0f%% of the CPUs were busy before starting (other users of "
            "this machine); results will be noisy -- see the 'others' figures" % (100 * load))
    return load


def proc_state(pid):
    try:
        return _stat_fields(pid)[0]
    except (OSError, ValueError):
        return None


def thread_cpu_ns(pid):
    """{tid: CPU nanoseconds} for every thread of pid (schedstat, ns resolution)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                out[int(t)] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def thread_sched_ns(pid):
    """{tid: (CPU ns, run-queue wait ns)} for every thread of pid (schedstat)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                v = f.read().split()
            out[int(t)] = (int(v[0]), int(v[1]))
        except (OSError, ValueError, IndexError):
            pass
    return out


def pin_all_threads(pid, cpus):
    """sched_setaffinity for every thread of pid (ZeroMQ's I/O threads too)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return
    for t in tids:
        try:
            os.sched_setaffinity(int(t), cpus)
        except OSError:
            pass


def children(pid):
    kids = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return kids


# --- processes ---------------------------------------------------------------

class Proc:
    """A child process whose stdout/stderr lines are kept with arrival times."""

    def __init__(self, argv, cpus=None, env=None):
        self.lines = []  # (time.monotonic(), stream, text)
        self.cv = threading.Condition()
        pre = ["taskset", "-c", ",".join(str(c) for c in cpus)] if cpus is not None else []
        self.p = subprocess.Popen(pre + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.pid = self.p.pid  # taskset execs the program: same pid
        for name, stream in (("out", self.p.stdout), ("err", self.p.stderr)):
            threading.Thread(target=self._pump, args=(name, stream), daemon=True).start()

    def _pump(self, name, stream):
        for line in stream:
            with self.cv:
                self.lines.append((time.monotonic(), name, line.rstrip("\n")))
                self.cv.notify_all()

    def wait_line(self, pred, timeout=10):
        """First line satisfying pred (searching all lines so far), waiting for it."""
        end = time.monotonic() + timeout
        i = 0
        with self.cv:
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i][2]):
                        return self.lines[i]
                    i += 1
                left = end - time.monotonic()
                if left <= 0 or self.p.poll() is not None:
                    tail = "\n".join(l[2] for l in self.lines[-20:])
                    raise RuntimeError("%s: expected line not seen; last output:\n%s" %
                                       (self.p.args, tail))
                self.cv.wait(left)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def start_mock(cpus, extra=()):
    m = Proc([os.path.join(bindir(), "headroom-mock"), "--listen", "127.0.0.1:0", "--quiet",
              *extra], cpus)
    line = m.wait_line(lambda s: s.startswith("listening on "))[2]
    m.port = int(line.rsplit(":", 1)[1])
    return m


def start_daemon(cpus, data=None, extra=(), prefix=()):
    """prefix: a command the daemon runs under (nice -n 10 ...), inside taskset."""
    own = data is None
    data = data or tempfile.mkdtemp(prefix="hr-bench-")
    d = Proc([*prefix, os.path.join(bindir(), "headroomd"), "--listen", "127.0.0.1:0",
              "--data", data, *extra], cpus)
    line = d.wait_line(lambda s: s.startswith("headroomd listening on http://"))[2]
    d.port = int(line.split("http://", 1)[1].split()[0].rsplit(":", 1)[1])
    d.data = data
    d.own_data = own
    return d


def stop_daemon(d):
    d.stop()
    if d.own_data:
        shutil.rmtree(d.data, ignore_errors=True)


# --- REST API ----------------------------------------------------------------

class Api:
    """One keep-alive connection to the daemon on 127.0.0.1."""

    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        hdr = {"Content-Type": "application/json"} if data else {}
        for attempt in (0, 1):
            try:
                self.c.request(method, "/api/v1" + path, body=data, headers=hdr)
                r = self.c.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                if attempt:
                    raise
                self.c.close()
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            j = json.loads(raw) if raw else None
        except ValueError:
            j = raw
        return r.status, j

    def submit(self, spec):
        st, j = self.call("POST", "/runs", spec)
        if st != 201:
            raise RuntimeError("submit failed: %s %s" % (st, j))
        return j["id"]

    def wait(self, run_id, poll=0.1, timeout=600):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st, j = self.call("GET", "/runs/%d" % run_id)
            if j["state"] not in ("queued", "running"):
                return j
            time.sleep(poll)
        raise RuntimeError("run %d did not finish" % run_id)


def chat_spec(port, osl, requests, concurrency=64, isl=128, workers=1, name="bench"):
    return {"name": name,
            "target": {"url": "http://127.0.0.1:%d" % port, "endpoint": "chat",
                       "model": "mock-model", "stream": True},
            "workload": {"isl": {"mean": isl}, "osl": {"mean": osl}, "seed": 1},
            "load": {"mode": "concurrency", "concurrency": concurrency, "requests": requests},
            "workers": workers}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt_runs(xs, f="%.2f"):
    return "[" + ", ".join(f % x for x in xs) + "]"
