#!/usr/bin/python3
# history.py - the run history's answers under load: GET /compare of two
# large runs (records read back, bootstrap and the other intervals), GET
# /series over a 10,000-run history, and filtered, sorted and paged GET
# /runs lists over a 100,000-run history.
#
# Run:   /usr/bin/python3 bench/history.py [--reps 3] [--json out.json]
#        (defaults: compare of two 1,000,000-record runs and of two
#        100,000-record runs, series over 10,000 runs, lists over 100,000
#        runs; ~7-9 min on 2 cores)
#        /usr/bin/python3 bench/history.py --quick   (under a minute: the
#        100,000-record runs only, 5,000/20,000-run histories, fewer requests)
#        --only compare | --only history runs one half.
# Needs: a Release build in build-bench/ (or $HEADROOM_BIN), 2 CPUs, ~2.5 GB
# of free disk in $TMPDIR (the 100,000-run database is ~1.6 GB; --tmpdir
# puts it elsewhere).
#
# Setup: headroomd pinned to CPU 1 (alone); headroom-mock (zero delay), its
# worker processes (moved to CPU 0 as soon as they appear) and this client
# on CPU 0. Everything on 127.0.0.1.
#
# 1. Compare. Two real runs of --records requests each (chat, streamed,
#    ISL 16, OSL 4, concurrency 256, one worker: the cheap small-record
#    workload of ingest_summary.py, the same spec twice), then GET
#    /api/v1/compare?base=A&head=B: request level, every figure of the
#    catalogue, 2,000 bootstrap replicates per percentile (the defaults).
#    Measured: the wall time of the HTTP call (Python http.client, from
#    writing the request to the end of the body) and the daemon's CPU for
#    it (all its threads, /proc/PID/task/TID/schedstat); the first call
#    after the runs, then --compare-reps calls, then --compare-reps calls
#    with &seed=7 (a different bootstrap seed). The same for two runs of
#    --small-records.
# 2. Series, 3. lists. The large histories are SYNTHESIZED, not run: making
#    100,000 runs through the daemon takes hours (each run starts a worker
#    process, stores its records and computes its summary), while these
#    routes only read the runs table, run_labels and run_metrics. So: five
#    real runs through the API (400 requests each, one per model label, so
#    every stored row is what the daemon itself writes), the daemon
#    stopped, and their rows in runs, run_labels and run_metrics (never
#    records) copied with Python's sqlite3 into DATA/headroom.db under new
#    ids: created_at spread evenly over the last 365 days in id order;
#    labels suite, model (5 values, one per template), git_sha (1,000
#    values in the first 10,000 runs, 10 consecutive runs each), branch,
#    and rare=yes on 0.1% of runs; 1% of names contain "nightly"; every
#    stored figure of a copy (statistics and intervals) multiplied by one
#    factor in [0.85, 1.15) per run; run_id_hwm updated. The daemon is
#    restarted on the same data folder and queried over HTTP.
#    Stage one: --series-runs runs (all succeeded, suite=bench), for
#    GET /series?metric=time_to_first_token&stat=p99&label.suite=bench&limit=10000
#    with and without &group_by=label.git_sha. Stage two: grown to
#    --list-runs runs (the added ones: 92% succeeded, 5% failed with their
#    figures, 3% cancelled without; suite bench or nightly or smoke), for
#    GET /runs with a common label and the state, a rare label, a name
#    substring (1% and none), sort=-time_to_first_token.p99, sort=name, and
#    200 consecutive pages followed by next_cursor (default order and sorted).
#    The series are asked again over the larger history (one repetition).
#    Each query: 10 warm-up requests, then --gets (lists) or --series-gets
#    requests one after another on one keep-alive connection; p50/p99/max
#    per repetition, and the daemon's CPU per request; medians over --reps
#    repetitions. Last, EXPLAIN QUERY PLAN of the SQL server/history.c
#    builds for some of them (which indexes it uses).

import argparse
import http.client
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hrbench as h  # noqa: E402

MODELS = ["llama-8b", "llama-70b", "qwen-32b", "mistral-7b", "gpt-oss-20b"]
DAY_MS = 86400000


def pct(xs, p):
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class Pinner(threading.Thread):
    """Moves the daemon's worker processes to a CPU as soon as they appear."""

    def __init__(self, dpid, cpu):
        super().__init__(daemon=True)
        self.dpid, self.cpu = dpid, cpu
        self.seen = set()
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            for k in h.children(self.dpid):
                if k not in self.seen:
                    self.seen.add(k)
                    h.pin_all_threads(k, {self.cpu})
            time.sleep(0.002)


def daemon_ns(pid):
    return sum(h.thread_cpu_ns(pid).values())


class Client:
    """One keep-alive HTTP/1.1 connection; get() returns (ms, status, body)."""

    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.c.connect()

    def get(self, path):
        t = time.perf_counter()
        self.c.request("GET", path)
        r = self.c.getresponse()
        body = r.read()
        ms = (time.perf_counter() - t) * 1e3
        if r.status != 200:
            raise RuntimeError("GET %s: %d %s" % (path, r.status, body[:300]))
        return ms, body

    def close(self):
        self.c.close()


# --- 1. compare ----------------------------------------------------------------

def make_run(api, mock_port, n, a, name):
    spec = h.chat_spec(mock_port, a.osl, n, a.concurrency, a.isl, 1, name=name)
    spec["labels"] = {"suite": "history-bench"}
    t = time.monotonic()
    rid = api.submit(spec)
    run = api.wait(rid, poll=0.2, timeout=3600)
    cnt = (run.get("summary") or {}).get("counts", {})
    if run["state"] != "succeeded" or cnt.get("requests") != n:
        raise RuntimeError("run %d: %s %s %s" % (rid, run["state"], cnt, run.get("reason")))
    h.log("  run %d: %d records in %.1f s" % (rid, n, time.monotonic() - t))
    return rid


def compare_part(a, res):
    mock = h.start_mock([a.client_cpu])
    d = h.start_daemon([a.daemon_cpu])
    pin = Pinner(d.pid, a.client_cpu)
    pin.start()
    api = h.Api(d.port)
    out = []
    try:
        for n in a.sizes:
            h.log("compare: two runs of %d records" % n)
            base = make_run(api, mock.port, n, a, "compare base %d" % n)
            head = make_run(api, mock.port, n, a, "compare head %d" % n)
            cl = Client(d.port)
            path = "/api/v1/compare?base=%d&head=%d" % (base, head)
            r = {"records": n, "base": base, "head": head, "default": [], "seed7": []}
            c0 = daemon_ns(d.pid)
            ms, body = cl.get(path)
            r["first"] = {"ms": ms, "daemon_ms": (daemon_ns(d.pid) - c0) / 1e6}
            ans = json.loads(body)
            if ans["level"] != "requests" or ans["base"]["records"] != n:
                raise RuntimeError("unexpected compare answer: level %s, records %s" %
                                   (ans["level"], ans["base"].get("records")))
            r["bytes"] = len(body)
            r["entries"] = len(ans["metrics"])
            r["bootstrapped"] = sum(1 for e in ans["metrics"] if e["method"] == "bootstrap")
            r["counts"] = ans["counts"]
            for key, p in (("default", path), ("seed7", path + "&seed=7")):
                for _ in range(a.compare_reps):
                    oth, s0 = h.Others([d.pid, mock.pid]), h.sys_cpu()
                    c0 = daemon_ns(d.pid)
                    ms, body = cl.get(p)
                    r[key].append({"ms": ms, "daemon_ms": (daemon_ns(d.pid) - c0) / 1e6,
                                   "others_pct": 100 * oth.share(),
                                   "steal_pct": 100 * h.steal_frac(s0, h.sys_cpu())})
            cl.close()
            h.log("  compare %d: first %.0f ms; wall %s ms; seed 7 %s ms" %
                  (n, r["first"]["ms"], h.fmt_runs([x["ms"] for x in r["default"]], "%.0f"),
                   h.fmt_runs([x["ms"] for x in r["seed7"]], "%.0f")))
            out.append(r)
            if a.perf_compare and n == max(a.sizes):
                r["perf"] = perf_compare(d, path)
    finally:
        pin.stop_ev.set()
        h.stop_daemon(d)
        mock.stop()
    res["compare"] = out


def perf_compare(d, path):
    """perf record of the daemon during one comparison; the top symbols."""
    if not shutil.which("perf"):
        return "perf is not installed (packaging/install-bench-deps.sh)"
    tmp = tempfile.mkdtemp(prefix="hr-perf-")
    data = os.path.join(tmp, "perf.data")
    p = h.Proc(["perf", "record", "-F", "999", "-g", "-o", data, "-p", str(d.pid)])
    time.sleep(1.0)
    cl = Client(d.port)
    cl.get(path)
    cl.close()
    p.p.send_signal(2)
    p.p.wait(30)
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio",
                            "--percent-limit", "1.5", "-g", "none", "--sort", "sym"],
                           capture_output=True, text=True).stdout
    shutil.rmtree(tmp, ignore_errors=True)
    lines = [l for l in rep.splitlines() if l.strip() and not l.startswith("#")]
    return "\n".join(lines[:30])


# --- 2./3. synthesized histories -----------------------------------------------

STATS = ["avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95",
         "p99", "avg_lo", "avg_hi", "p1_lo", "p1_hi", "p5_lo", "p5_hi", "p10_lo", "p10_hi",
         "p25_lo", "p25_hi", "p50_lo", "p50_hi", "p75_lo", "p75_hi", "p90_lo", "p90_hi",
         "p95_lo", "p95_hi", "p99_lo", "p99_hi"]


def template_runs(api, mock_port):
    """One real run per model label, through the API."""
    ids = []
    for k, m in enumerate(MODELS):
        spec = h.chat_spec(mock_port, 16, 400, 16, 64, 1, name="ci %s template" % m)
        spec["target"]["model"] = m
        spec["labels"] = {"suite": "bench", "model": m, "git_sha": "%040x" % k,
                          "branch": "main"}
        ids.append(api.submit(spec))
    for i in ids:
        run = api.wait(i, poll=0.1)
        if run["state"] != "succeeded":
            raise RuntimeError("template run %d: %s" % (i, run["state"]))
    return ids


def synth(db_path, templates, first_id, last_id, total, t_end_ms, stage, seed):
    """Copies the template runs' rows into ids first_id..last_id (inclusive).
    Ids 1..total are spread evenly over the 365 days before t_end_ms."""
    rng = random.Random(seed)
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode = MEMORY")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA foreign_keys = OFF")
    step = 365 * DAY_MS // total

    def created(i):
        return t_end_ms - (total - i) * step

    db.execute("BEGIN")
    # the templates take the first ids' places in time
    if stage == 1:
        for k, tid in enumerate(templates):
            db.execute("UPDATE runs SET created_at = ?1, started_at = ?1 + 1000, "
                       "finished_at = ?1 + 6000 WHERE id = ?2", (created(tid), tid))
    run_sql = ("INSERT INTO runs (id, name, state, spec, labels, created_at, started_at, "
               "finished_at, reason, cancel_requested, t0_wall_ns, progress, summary, "
               "fingerprint, note, pinned, group_id, verdict, valid, gates_passed) "
               "SELECT ?1, ?2, ?3, json_set(spec, '$.name', ?2, '$.labels', json(?4)), ?4, "
               "?5, ?5 + 1000, ?5 + 6000, CASE ?3 WHEN 'succeeded' THEN NULL ELSE "
               "'synthesized: ' || ?3 END, 0, (?5 + 1000) * 1000000, progress, "
               "CASE ?3 WHEN 'cancelled' THEN NULL ELSE summary END, fingerprint, NULL, 0, "
               "NULL, verdict, valid, gates_passed FROM runs WHERE id = ?6")
    lab_sql = "INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)"
    met_sql = ("INSERT INTO run_metrics (run_id, metric, unit, count, %s) SELECT ?1, metric, "
               "unit, count, %s FROM run_metrics WHERE run_id = ?2" %
               (", ".join(STATS), ", ".join("%s * ?3" % s for s in STATS)))
    runs, labs, mets = [], [], []
    for i in range(first_id, last_id + 1):
        k = i % len(MODELS)
        model = MODELS[k]
        if stage == 1:
            state, suite = "succeeded", "bench"
        else:
            u = rng.random()
            state = "succeeded" if u < 0.92 else "failed" if u < 0.97 else "cancelled"
            suite = ("bench", "bench", "nightly", "smoke")[i % 4]
        labels = {"suite": suite, "model": model, "git_sha": "%040x" % (0xa5a5 + i // 10),
                  "branch": "main" if i % 7 else "feature-%d" % (i % 50)}
        if i % 1000 == 0:
            labels["rare"] = "yes"
        name = ("nightly %s #%d" if i % 100 == 37 else "ci %s #%d") % (model, i)
        lj = json.dumps(labels, separators=(",", ":"))
        runs.append((i, name, state, lj, created(i), templates[k]))
        labs.extend((i, kk, v) for kk, v in labels.items())
        if state != "cancelled":
            mets.append((i, templates[k], 0.85 + 0.3 * rng.random()))
        if len(runs) == 5000 or i == last_id:
            db.executemany(run_sql, runs)
            db.executemany(lab_sql, labs)
            db.executemany(met_sql, mets)
            runs, labs, mets = [], [], []
    db.execute("UPDATE run_id_hwm SET last = max(last, ?)", (last_id,))
    db.execute("COMMIT")
    db.close()


def timed(cl, path, n, pid):
    cl_lat = []
    for _ in range(10):
        cl.get(path)
    c0 = daemon_ns(pid)
    body = b""
    for _ in range(n):
        ms, body = cl.get(path)
        cl_lat.append(ms)
    cpu = (daemon_ns(pid) - c0) / n / 1e6
    return {"lat": cl_lat, "daemon_ms": cpu, "bytes": len(body), "body": body}


def paged(cl, first, pages, pid):
    """Follows next_cursor from `first` for `pages` pages; latency of each."""
    lat = []
    path = first
    c0 = daemon_ns(pid)
    for _ in range(pages):
        ms, body = cl.get(path)
        lat.append(ms)
        cur = json.loads(body)["next_cursor"]
        if cur is None:
            break
        path = first + "&cursor=" + urllib.parse.quote(cur)
    cpu = (daemon_ns(pid) - c0) / len(lat) / 1e6
    return {"lat": lat, "daemon_ms": cpu, "bytes": 0}


def measure(d, queries, a, res_list, label):
    for rep in range(a.reps):
        cl = Client(d.port)
        for key, path, kind in queries:
            oth, s0 = h.Others([d.pid]), h.sys_cpu()
            if kind == "pages":
                r = paged(cl, path, a.pages, d.pid)
            else:
                n = a.series_gets if kind == "series" else a.gets
                r = timed(cl, path, n, d.pid)
                j = json.loads(r.pop("body"))
                r["items"] = len(j.get("points", j.get("runs", [])))
            r.update({"key": key, "path": path, "rep": rep, "others_pct": 100 * oth.share(),
                      "steal_pct": 100 * h.steal_frac(s0, h.sys_cpu())})
            res_list.append(r)
            h.log("  %s rep %d %-22s n %4d items %5s p50 %7.2f p99 %7.2f max %7.2f ms "
                  "(daemon %.2f ms/req)" %
                  (label, rep, key, len(r["lat"]), r.get("items", "-"), pct(r["lat"], 50),
                   pct(r["lat"], 99), max(r["lat"]), r["daemon_ms"]))
        cl.close()


def explain(db_path, queries):
    """EXPLAIN QUERY PLAN of the SQL the daemon runs for some of the queries
    (rebuilt here as server/history.c builds it)."""
    db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    out = {}
    for key, sql, params in queries:
        out[key] = [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, params)]
    db.close()
    return out


def history_part(a, res):
    data = tempfile.mkdtemp(prefix="hr-bench-history-", dir=a.tmpdir)
    db_path = os.path.join(data, "headroom.db")
    mock = h.start_mock([a.client_cpu])
    d = h.start_daemon([a.daemon_cpu], data=data)
    pin = Pinner(d.pid, a.client_cpu)
    pin.start()
    res["series"], res["lists"] = [], []
    try:
        api = h.Api(d.port)
        templates = template_runs(api, mock.port)
        res["template_summary_bytes"] = len(json.dumps(api.call(
            "GET", "/runs/%d/summary" % templates[0])[1]))
        d.stop()
        t_end = int(time.time() * 1000)
        t = time.monotonic()
        synth(db_path, templates, len(templates) + 1, a.series_runs, a.list_runs, t_end, 1, 1)
        res["synth1_s"] = time.monotonic() - t
        res["db1_mb"] = os.path.getsize(db_path) / 2**20
        h.log("history: %d runs synthesized in %.1f s (%.0f MB)" %
              (a.series_runs, res["synth1_s"], res["db1_mb"]))
        d = h.start_daemon([a.daemon_cpu], data=data)
        q = "/api/v1/series?metric=time_to_first_token&stat=p99&label.suite=bench&limit=10000"
        series_q = [("series", q, "series"),
                    ("series group_by", q + "&group_by=label.git_sha", "series")]
        measure(d, series_q, a, res["series"], "%d runs" % a.series_runs)
        d.stop()
        t = time.monotonic()
        synth(db_path, templates, a.series_runs + 1, a.list_runs, a.list_runs, t_end, 2, 2)
        res["synth2_s"] = time.monotonic() - t
        res["db2_mb"] = os.path.getsize(db_path) / 2**20
        h.log("history: grown to %d runs in %.1f s (%.0f MB)" %
              (a.list_runs, res["synth2_s"], res["db2_mb"]))
        d = h.start_daemon([a.daemon_cpu], data=data)
        m = MODELS[2]
        base = "/api/v1/runs?label.model=%s&state=succeeded&limit=50" % m
        list_q = [
            ("model+state", base, "list"),
            ("rare label", "/api/v1/runs?label.rare=yes&limit=50", "list"),
            ("rare label+state", "/api/v1/runs?label.rare=yes&state=succeeded&limit=50",
             "list"),
            ("name 1%", "/api/v1/runs?name=nightly&limit=50", "list"),
            ("name none", "/api/v1/runs?name=no-such-run&limit=50", "list"),
            ("sort p99", base + "&sort=-time_to_first_token.p99", "list"),
            ("sort name", "/api/v1/runs?sort=name&limit=50", "list"),
            ("no filter", "/api/v1/runs?limit=50", "list"),
            ("pages", base, "pages"),
            ("pages sort p99", base + "&sort=-time_to_first_token.p99", "pages"),
        ]
        measure(d, list_q, a, res["lists"], "%d runs" % a.list_runs)
        # the series again, over the larger history (context)
        big = "%dk runs" % (a.list_runs // 1000)
        measure(d, [("series (%s)" % big, q, "series"),
                    ("group_by (%s)" % big, q + "&group_by=label.git_sha", "series")],
                argparse.Namespace(**{**vars(a), "reps": 1}), res["series"],
                "%d runs" % a.list_runs)
        d.stop()
        res["plans"] = explain(db_path, plan_queries(m))
    finally:
        pin.stop_ev.set()
        d.stop()
        mock.stop()
        shutil.rmtree(data, ignore_errors=True)


def plan_queries(model):
    """The SQL server/history.c builds for some of the queries (history_list:
    the page's ids chosen in subquery k, then those rows read; series), with
    a short column list: EXPLAIN QUERY PLAN shows which indexes they use."""
    lc = "r.id, r.name, r.state, r.labels"
    sel = " AND r.id IN (SELECT run_id FROM run_labels WHERE key = ? AND value = ?)"
    page = "SELECT %s%s FROM (SELECT r.id AS id%s WHERE 1%s ORDER BY %s LIMIT 51) k " \
           "CROSS JOIN runs r ON r.id = k.id ORDER BY %s"
    plain = " FROM runs r"
    return [
        ("model+state", page % (lc, "", plain, " AND r.state = ?" + sel, "r.id DESC",
                                "r.id DESC"), ("succeeded", "model", model)),
        ("name", page % (lc, "", plain, " AND instr(lower(r.name), lower(?)) > 0",
                         "r.id DESC", "r.id DESC"), ("nightly",)),
        ("sort p99", page % (lc, ", k.v", ", m.p99 AS v FROM runs r LEFT JOIN run_metrics m "
                             "ON m.run_id = r.id AND m.metric = ?", " AND r.state = ?" + sel,
                             "m.p99 IS NULL, m.p99 DESC, r.id DESC",
                             "k.v IS NULL, k.v DESC, r.id DESC"),
         ("time_to_first_token", "succeeded", "model", model)),
        ("sort name", page % (lc, "", plain, "", "r.name ASC, r.id ASC",
                              "r.name ASC, r.id ASC"), ()),
        ("series", "SELECT r.id, r.created_at, m.p99, m.p99_lo, m.p99_hi FROM runs r JOIN "
         "run_metrics m ON m.run_id = r.id AND m.metric = ? WHERE r.state = 'succeeded'%s "
         "AND m.p99 IS NOT NULL ORDER BY r.id DESC LIMIT 10000" % sel,
         ("time_to_first_token", "suite", "bench")),
    ]


# --- report --------------------------------------------------------------------

def report(a, res):
    mach = res["machine"]
    print("history: %s, nproc %d, %s, build: %s" % (mach["cpu"], mach["nproc"], mach["date"],
                                                 res["git"]))
    if res.get("compare"):
        print()
        print("1. GET /compare?base=A&head=B, request level (chat stream, ISL %d, OSL %d, "
              "concurrency %d, one worker, mock with zero delay); wall ms of the HTTP call "
              "and daemon CPU ms, median [each call]" % (a.isl, a.osl, a.concurrency))
        print("| records per run | entries (bootstrapped) | answer bytes | first call ms | "
              "wall ms | daemon CPU ms | wall ms, seed=7 | daemon CPU ms, seed=7 | others % |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in res["compare"]:
            w = [x["ms"] for x in r["default"]]
            c = [x["daemon_ms"] for x in r["default"]]
            w7 = [x["ms"] for x in r["seed7"]]
            c7 = [x["daemon_ms"] for x in r["seed7"]]
            o = [x["others_pct"] for x in r["default"] + r["seed7"]]
            print("| %d | %d (%d) | %d | %.0f | %.0f %s | %.0f %s | %.0f %s | %.0f %s | %s |" %
                  (r["records"], r["entries"], r["bootstrapped"], r["bytes"], r["first"]["ms"],
                   h.med(w), h.fmt_runs(w, "%.0f"), h.med(c), h.fmt_runs(c, "%.0f"),
                   h.med(w7), h.fmt_runs(w7, "%.0f"), h.med(c7), h.fmt_runs(c7, "%.0f"),
                   h.fmt_runs(o, "%.0f")))
            print("  verdicts: %s" % json.dumps(r["counts"], sort_keys=True))
            if r.get("perf"):
                print("  perf (daemon, one comparison, self time):")
                for l in r["perf"].splitlines():
                    print("    " + l)
    for title, key in (("2. series", "series"), ("3. lists", "lists")):
        rows = res.get(key)
        if not rows:
            continue
        print()
        if key == "series":
            print("%s: %d-run synthesized history (template summary %d bytes, database %.0f "
                  "MB), %d requests per repetition, %d repetitions; ms, medians [each "
                  "repetition]" % (title, a.series_runs, res["template_summary_bytes"],
                                   res["db1_mb"], a.series_gets, a.reps))
        else:
            print("%s: %d-run synthesized history (database %.0f MB), %d requests per "
                  "repetition (paging: %d consecutive pages), %d repetitions; ms, medians "
                  "[each repetition]" % (title, a.list_runs, res["db2_mb"], a.gets, a.pages,
                                         a.reps))
        print("| query | items | p50 ms | p99 ms | max ms | daemon CPU ms/req | others % |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        keys = []
        for r in rows:
            if r["key"] not in keys:
                keys.append(r["key"])
        for k in keys:
            rs = [r for r in rows if r["key"] == k]
            p50 = [pct(r["lat"], 50) for r in rs]
            p99 = [pct(r["lat"], 99) for r in rs]
            mx = [max(r["lat"]) for r in rs]
            cpu = [r["daemon_ms"] for r in rs]
            print("| %s | %s | %.2f %s | %.2f %s | %.2f %s | %.2f | %s |" %
                  (k, rs[0].get("items", "%d pages" % len(rs[0]["lat"])), h.med(p50),
                   h.fmt_runs(p50), h.med(p99), h.fmt_runs(p99), h.med(mx), h.fmt_runs(mx),
                   h.med(cpu), h.fmt_runs([r["others_pct"] for r in rs], "%.0f")))
        if key == "lists":
            print("queries: " + "; ".join("%s = %s" % (r["key"], r["path"])
                                          for r in rows if r["rep"] == 0))
    if res.get("plans"):
        print()
        print("query plans (EXPLAIN QUERY PLAN of the SQL server/history.c builds, "
              "with fewer columns):")
        for k, p in res["plans"].items():
            print("  %s: %s" % (k, " / ".join(p)))


def main():
    ap = argparse.ArgumentParser(description="history routes: compare, series, lists "
                                 "(see the header)")
    ap.add_argument("--quick", action="store_true",
                    help="100k-record runs only, 5,000/20,000-run histories, fewer requests "
                    "(under a minute)")
    ap.add_argument("--only", choices=("compare", "history"))
    ap.add_argument("--records", type=int, default=1000000)
    ap.add_argument("--small-records", type=int, default=100000)
    ap.add_argument("--compare-reps", type=int, default=5)
    ap.add_argument("--perf-compare", action="store_true",
                    help="also perf record the daemon during one large comparison")
    ap.add_argument("--series-runs", type=int, default=10000)
    ap.add_argument("--list-runs", type=int, default=100000)
    ap.add_argument("--gets", type=int, default=200, help="requests per list query")
    ap.add_argument("--series-gets", type=int, default=100, help="requests per series query")
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--osl", type=int, default=4)
    ap.add_argument("--isl", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--daemon-cpu", type=int, default=1)
    ap.add_argument("--client-cpu", type=int, default=0)
    ap.add_argument("--tmpdir", default=None, help="where the history's data folder goes")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.records, a.compare_reps = 0, 3
        a.series_runs, a.list_runs = 5000, 20000
        a.gets, a.series_gets, a.pages, a.reps = 50, 20, 50, 2
    a.sizes = sorted(x for x in (a.small_records, a.records) if x > 0)
    if a.series_runs < 10 or a.list_runs < a.series_runs:
        sys.exit("--list-runs must be at least --series-runs (>= 10)")
    os.sched_setaffinity(0, {a.client_cpu})
    load = h.warn_if_busy()
    res = {"machine": h.machine(), "git": h.git_rev(), "args": vars(a), "load_before": load}
    t = time.monotonic()
    if a.only in (None, "compare"):
        compare_part(a, res)
    if a.only in (None, "history"):
        history_part(a, res)
    res["total_s"] = time.monotonic() - t
    report(a, res)
    print("\ntotal %.0f s" % res["total_s"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
