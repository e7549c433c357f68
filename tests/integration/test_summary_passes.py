"""test_summary_passes.py - a run's summary is the same, bit for bit,
whether its values fit the summary's memory budget or not: `headroomd
summarize` recomputes a real run's summary from its stored records once
with the default budget (one pass, everything in memory) and once with
64 KiB (passes over the records, start and done times sorted in runs on
disk), and both equal the summary the daemon stored at the end of the
run. Also the command's refusals."""

import json
import os
import subprocess
import unittest

import hrtest

SUMMARY_KEYS = ("metrics", "counts", "errors", "tokens", "window_s")


class SummaryPasses(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=())

    def summarize(self, *args):
        p = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "summarize", "--data",
                            self.tmp.name, *args], capture_output=True, text=True,
                           timeout=120 * hrtest.time_scale())
        return p.returncode, p.stdout, p.stderr

    def test_passes_equal_memory(self):
        spec = hrtest.spec(self.mock.addr, concurrency=32, requests=2000)
        spec["workers"] = 2
        spec["workload"] = {"isl": {"mean": 40, "stddev": 10}, "osl": {"mean": 24, "stddev": 8},
                            "seed": 11}
        spec["warmup"] = {"requests": 20}
        spec["goodput"] = {"time_to_first_token": 50}
        run_id = self.api.submit(spec)
        run = self.api.wait(run_id, timeout=240)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        stored = run["summary"]
        gaps = stored["metrics"]["inter_chunk_latency"]["count"]
        self.assertGreater(gaps, 20000)  # far beyond 64 KiB of values

        rc, out_mem, err_mem = self.summarize("--stats", str(run_id))
        self.assertEqual(rc, 0, err_mem)
        self.assertIn(" 1 passes, 0 sorted runs on disk", err_mem)
        rc, out_pass, err_pass = self.summarize("--stats", "--memory-kb", "64", str(run_id))
        self.assertEqual(rc, 0, err_pass)
        passes = int(err_pass.split(" passes")[0].split()[-1])
        runs = int(err_pass.split(" sorted runs")[0].split()[-1])
        self.assertGreaterEqual(passes, 2, err_pass)
        self.assertGreaterEqual(runs, 4, err_pass)  # 2,000 starts and dones, 1,024 a run

        mem, bounded = json.loads(out_mem), json.loads(out_pass)
        self.assertEqual(bounded, mem)  # every figure, interval and count
        self.assertIn("ci", mem["metrics"]["time_to_first_token"])
        self.assertIn("p99", mem["metrics"]["inter_chunk_latency"]["ci"])
        for k in SUMMARY_KEYS:
            self.assertEqual(mem[k], stored[k], k)
        for k in ("sent", "achieved_rate", "achieved_concurrency"):
            self.assertEqual(mem["load"][k], stored["load"][k], k)

    def test_refusals(self):
        rc, _, err = self.summarize("99999")
        self.assertEqual(rc, 1)
        self.assertIn("no run 99999", err)
        rc, _, err = self.summarize("--memory-kb", "0", "1")
        self.assertEqual(rc, 2)
        self.assertIn("--memory-kb must be", err)
        rc, _, err = self.summarize("one")
        self.assertEqual(rc, 2)
        self.assertIn("give a run id", err)
        p = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "summarize", "--data",
                            os.path.join(self.tmp.name, "nothing-here"), "1"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no store in", p.stderr)


if __name__ == "__main__":
    unittest.main()
