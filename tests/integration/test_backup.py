"""test_backup.py - backups, restores and upgrades of the store
(docs/operations.md, "Backups" and "Upgrades").

- A backup taken while a run is writing (over the API, and by `headroomd
  backup` beside the running daemon) restores into a new data directory
  where a daemon serves every finished run with the same records and
  summary, the run that was in progress comes back `interrupted` with a
  summary of the records the snapshot held, and an uploaded dataset is
  there, byte for byte;
- a restore refuses a damaged dataset file, a damaged database and a
  target that already holds a store;
- a database made by the first schema (001) upgrades to today's: its run
  and records read back, and a copy of it as it was is kept beside it; a
  database from a newer headroom is refused, naming both versions.
"""

import hashlib
import json
import os
import sqlite3
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import hrtest

HEADROOMD = os.path.join(hrtest.BIN, "headroomd")
VLLM = os.path.join(hrtest.SRC, "tests", "integration", "data", "peers", "vllm_mock_200.json")
DATASET = (b'{"text": "What is the capital of France?", "output_length": 8}\n'
           b'{"text": "Write a haiku about the sea"}\n')


def records(api, rid):
    st, text, _ = api.call("GET", "/runs/%d/records?format=jsonl" % rid)
    assert st == 200, text
    return [json.loads(line) for line in text.splitlines()]


def upload(addr, data):
    req = urllib.request.Request(
        "http://%s/api/v1/datasets?%s" % (addr, urllib.parse.urlencode(
            {"format": "single_turn", "name": "prompts"})), data=data, method="POST",
        headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


class BackupRestore(unittest.TestCase):
    def test_backup_during_a_run_restores(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            mock = hrtest.start_mock("--quiet", "--ttft-ms", "5", "--itl-ms", "5")
            d = hrtest.start_daemon(data)
            restored = None
            try:
                api = hrtest.Api(d.addr)
                ds = upload(d.addr, DATASET)
                with open(VLLM, "rb") as f:
                    vllm = f.read()
                st, imported, _ = api.call("POST", "/imports?format=vllm", raw=vllm,
                                           headers={"Content-Type": "application/json"})
                self.assertEqual(st, 201, imported)
                done = api.submit(hrtest.spec(mock.addr, requests=30))
                self.assertEqual(api.wait(done)["state"], "succeeded")
                long_spec = hrtest.spec(mock.addr, concurrency=4)
                long_spec["load"] = {"mode": "concurrency", "concurrency": 4,
                                     "duration_s": 30}
                running = api.submit(long_spec)
                # a backup once the running run has records stored
                deadline = time.time() + 60 * hrtest.time_scale()
                while time.time() < deadline:
                    st, run, _ = api.call("GET", "/runs/%d" % running)
                    if run["state"] == "running" and (run.get("progress") or {}).get(
                            "records", 0) >= 20:
                        break
                    time.sleep(0.1)
                st, info, _ = api.call("POST", "/backups")
                self.assertEqual(st, 201, info)
                self.assertEqual(info["datasets"], 1)
                self.assertEqual(info["imports"], 1)
                self.assertEqual(info["missing"], 0)
                self.assertEqual(info["runs"], 3)
                self.assertTrue(info["path"].startswith(os.path.join(
                    os.path.realpath(data), "backups")))
                # the command beside the running daemon, too
                cli_dest = os.path.join(tmp, "cli-backup")
                p = subprocess.run([HEADROOMD, "backup", "--data", data, cli_dest],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("3 run(s), 1 dataset file(s), 1 imported file(s)", p.stdout)
                self.assertEqual(api.call("POST", "/backups", raw=b"[1]")[0], 400)
                api.call("POST", "/runs/%d/cancel" % running)
                api.wait(running)
                want = records(api, done)
                want_summary = api.call("GET", "/runs/%d" % done)[1]["summary"]
                # restore into a new directory and serve it
                for src in (info["path"], cli_dest):
                    new = os.path.join(tmp, "restored-" + os.path.basename(src))
                    p = subprocess.run([HEADROOMD, "restore", src, "--data", new],
                                       capture_output=True, text=True, timeout=120)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertIn("restored 3 run(s) and 2 dataset and import file(s)", p.stdout)
                    restored = hrtest.start_daemon(new)
                    rapi = hrtest.Api(restored.addr)
                    self.assertEqual(records(rapi, done), want)
                    st, run, _ = rapi.call("GET", "/runs/%d" % done)
                    self.assertEqual(run["summary"]["metrics"], want_summary["metrics"])
                    st, run, _ = rapi.call("GET", "/runs/%d" % running)
                    self.assertEqual(run["state"], "interrupted", run)
                    self.assertGreaterEqual(run["summary"]["counts"]["requests"], 20)
                    self.assertEqual(len(records(rapi, running)),
                                     run["summary"]["counts"]["requests"] +
                                     run["summary"]["counts"]["warmup"])
                    st, imp, _ = rapi.call("GET", "/runs/%d" % imported["id"])
                    self.assertEqual(imp["import"]["sha256"], hashlib.sha256(vllm).hexdigest())
                    with open(os.path.join(new, "imports", imp["import"]["sha256"]), "rb") as f:
                        self.assertEqual(f.read(), vllm)
                    st, got, _ = rapi.call("GET", "/datasets/%d" % ds["id"])
                    self.assertEqual(st, 200)
                    with open(os.path.join(new, "datasets", ds["sha256"]), "rb") as f:
                        self.assertEqual(f.read(), DATASET)
                    restored.stop()
                    restored = None
            finally:
                if restored:
                    restored.stop()
                d.stop()
                mock.stop()

    def test_restore_refusals(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            d = hrtest.start_daemon(data)
            try:
                ds = upload(d.addr, DATASET)
            finally:
                d.stop()
            bk = os.path.join(tmp, "bk")
            p = subprocess.run([HEADROOMD, "backup", "--data", data, bk], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            # the backup goes to a new directory only
            p = subprocess.run([HEADROOMD, "backup", "--data", data, bk], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("a backup goes to a new directory", p.stderr)
            # into a directory that holds a store
            p = subprocess.run([HEADROOMD, "restore", bk, "--data", data], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("already holds a store", p.stderr)
            # a damaged dataset file
            path = os.path.join(bk, "datasets", ds["sha256"])
            with open(path, "r+b") as f:
                f.write(b"X")
            p = subprocess.run([HEADROOMD, "restore", bk, "--data", os.path.join(tmp, "n1")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("missing or damaged", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "n1", "headroom.db")))
            # a damaged database
            with open(path, "r+b") as f:
                f.write(b"{")
            with open(path, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), ds["sha256"])
            db = os.path.join(bk, "headroom.db")
            with open(db, "r+b") as f:  # the header: no longer a database
                f.write(b"this is not a SQLite database file, not at all.")
            p = subprocess.run([HEADROOMD, "restore", bk, "--data", os.path.join(tmp, "n2")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, p.stdout)
            self.assertTrue("integrity" in p.stderr or "malformed" in p.stderr or
                            "cannot open" in p.stderr, p.stderr)


def zigzag_varint(values):
    out = bytearray()

    def varint(u):
        while True:
            b = u & 0x7F
            u >>= 7
            if u:
                out.append(b | 0x80)
            else:
                out.append(b)
                return
    varint(len(values))
    for v in values:
        varint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)
    return bytes(out)


class Upgrades(unittest.TestCase):
    def first_schema_db(self, path):
        """A store as the first schema made it: one finished run, three records."""
        with open(os.path.join(hrtest.SRC, "schema", "001_init.sql")) as f:
            sql = f.read()
        db = sqlite3.connect(path)
        db.executescript(sql)
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                   "name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_migrations VALUES (1, '001_init', 1)")
        spec = hrtest.spec("127.0.0.1:9", requests=3)
        db.execute("INSERT INTO runs (id, name, state, spec, created_at, started_at, "
                   "finished_at, t0_wall_ns) VALUES (1, 'old', 'succeeded', ?, 1700000000000, "
                   "1700000000001, 1700000001000, 1700000000001000000)", (json.dumps(spec),))
        for i in range(3):
            start = 1000000 * (i + 1)
            chunks = [start + 20000000, start + 30000000, start + 40000000]
            deltas = [chunks[0] - start] + [chunks[k] - chunks[k - 1] for k in (1, 2)]
            db.execute("INSERT INTO records (run_id, worker, seq, req_id, phase, http_status, "
                       "error, intended_ns, start_ns, headers_ns, first_output_ns, end_ns, "
                       "done_ns, isl, osl, reasoning_tokens, isl_src, osl_src, n_chunks, chunks, "
                       "flags) VALUES (1, 0, ?, ?, 1, 200, 0, ?, ?, ?, ?, ?, ?, 16, 3, -1, 1, 1, "
                       "3, ?, 1)",
                       (i, i, start, start, start + 1000000, chunks[0], chunks[2],
                        chunks[2] + 1000, zigzag_varint(deltas)))
        db.commit()
        db.close()

    def test_first_schema_upgrades_with_a_copy(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            os.mkdir(data)
            self.first_schema_db(os.path.join(data, "headroom.db"))
            d = hrtest.start_daemon(data)
            try:
                api = hrtest.Api(d.addr)
                st, run, _ = api.call("GET", "/runs/1")
                self.assertEqual(st, 200, run)
                self.assertEqual(run["name"], "old")
                self.assertEqual(run["state"], "succeeded")
                rows = records(api, 1)
                self.assertEqual(len(rows), 3)
                self.assertEqual([r["start_ns"] for r in rows], [1000000, 2000000, 3000000])
                for r in rows:
                    self.assertEqual(r["chunk_offsets_ns"], [20000000, 30000000, 40000000])
                    self.assertEqual(r["time_to_first_token"], 20.0)
                st, lst, _ = api.call("GET", "/runs")
                self.assertEqual([r["id"] for r in lst["runs"]], [1])
            finally:
                d.stop()
            copy = os.path.join(data, "headroom.db.before-002")
            self.assertTrue(os.path.exists(copy), os.listdir(data))
            old = sqlite3.connect(copy)
            self.assertEqual(old.execute("SELECT max(version) FROM schema_migrations").fetchone(),
                             (1,))
            self.assertEqual(old.execute("SELECT count(*) FROM records").fetchone(), (3,))
            old.close()
            # up to date: started again, no new copy
            d = hrtest.start_daemon(data)
            d.stop()
            self.assertEqual(sorted(f for f in os.listdir(data) if ".before-" in f),
                             ["headroom.db.before-002"])

    def test_no_copy_when_asked(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            os.mkdir(data)
            self.first_schema_db(os.path.join(data, "headroom.db"))
            d = hrtest.start_daemon(data, "--no-migration-copy")
            d.stop()
            self.assertEqual([f for f in os.listdir(data) if ".before-" in f], [])

    def test_newer_schema_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            hrtest.start_daemon(data).stop()
            db = sqlite3.connect(os.path.join(data, "headroom.db"))
            db.execute("INSERT INTO schema_migrations VALUES (999, '999_future', 1)")
            db.commit()
            db.close()
            p = subprocess.run([HEADROOMD, "--listen", "127.0.0.1:0", "--data", data],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("schema version 999, newer than this headroomd knows", p.stderr)


if __name__ == "__main__":
    unittest.main()
