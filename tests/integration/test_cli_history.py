"""test_cli_history.py - the headroom CLI's history and CI commands against a
real daemon, workers and two mocks (one with a 5x longer time to first
token): list filters (label selectors, name, since/until, fingerprint,
group, sort by a metric, the paging hint run again as printed), label
(set, remove, note, pin), delete, compare in table, markdown and json
(json byte for byte the daemon's answer), submit --wait exit codes 5, 6
and 7 and their precedence, --junit XML (well formed, one testsuite per
run, gate names escaped and read back), --markdown and $GITHUB_STEP_SUMMARY
(appended to), and a repeat group waited run by run.

Run: HEADROOM_BIN=build-check/bin /usr/bin/python3 tests/integration/test_cli_history.py -v
"""

import json
import os
import re
import shlex
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

import hrtest

CLI = os.path.join(hrtest.BIN, "headroom")
FAST_TTFT_MS, SLOW_TTFT_MS = 2, 10
HOSTILE = 'ttft <p99> & "co"'


class CliHistory(hrtest.ServiceCase):
    @classmethod
    def setUpClass(cls):
        cls.start_service(mock_args=("--quiet", "--ttft-ms", str(FAST_TTFT_MS)))
        cls.slow = hrtest.start_mock("--quiet", "--ttft-ms", str(SLOW_TTFT_MS))
        cls.url = "http://" + cls.daemon.addr

    @classmethod
    def tearDownClass(cls):
        cls.slow.stop()
        super().tearDownClass()

    # --- helpers ------------------------------------------------------------------

    def cli(self, *args, env=None):
        e = dict(os.environ)
        e["HEADROOM_URL"] = self.url
        e.pop("GITHUB_STEP_SUMMARY", None)
        e.update(env or {})
        return subprocess.run([CLI, *args], capture_output=True, text=True, env=e,
                              timeout=120 * hrtest.time_scale())

    def spec(self, name="cli-hist", labels=None, requests=60, slow=False, **extra):
        """A short run the daemon finds valid: p90 needs 29 requests."""
        addr = self.slow.addr if slow else self.mock.addr
        s = hrtest.spec(addr, concurrency=4, requests=requests)
        s["name"] = name
        s["labels"] = labels or {}
        s["validity"] = {"percentile": "p90"}
        s.update(extra)
        return s

    def spec_file(self, spec):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=self.tmp.name)
        json.dump(spec, f)
        f.close()
        return f.name

    def run_api(self, spec):
        rid = self.api.submit(spec)
        run = self.api.wait(rid)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        return run

    def ids(self, out):
        """The ID column of a `headroom list` table."""
        lines = out.splitlines()
        self.assertTrue(lines and lines[0].split()[:2] == ["ID", "STATE"], out)
        return [int(line.split()[0]) for line in lines[1:]]

    def list_ids(self, *args):
        r = self.cli("list", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return self.ids(r.stdout)

    def tmpfile(self, name):
        return os.path.join(self.tmp.name, name)

    # --- list ---------------------------------------------------------------------

    def test_list_filters_sort_and_paging(self):
        a = self.run_api(self.spec("Alpha one", {"suite": "lf", "branch": "main", "gpu": "H100"}))
        b = self.run_api(self.spec("beta", {"suite": "lf", "branch": "dev"}))
        c = self.run_api(self.spec("alpha two", {"suite": "lf", "branch": "main", "draft": "y"}))
        a, b, c = a["id"], b["id"], c["id"]

        self.assertEqual(self.list_ids("--label", "suite=lf"), [c, b, a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--label", "branch=main"), [c, a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--label", "branch=main",
                                       "--label", "!draft"), [a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--label", "branch!=main"), [b])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--label", "gpu"), [a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--name", "ALPHA"), [c, a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--since", "1h"), [c, b, a])
        self.assertEqual(self.list_ids("--label", "suite=lf", "--until", "2000-01-01"), [])
        fp = self.api.call("GET", "/runs/%d" % a)[1]["fingerprint"]
        self.assertIn(a, self.list_ids("--fingerprint", fp))

        # the columns of a finished run without gates, and the sort value
        r = self.cli("list", "--label", "suite=lf", "--sort", "-time_to_first_token.p99")
        self.assertEqual(r.returncode, 0, r.stderr)
        head, *rows = r.stdout.splitlines()
        self.assertEqual(head.split(), ["ID", "STATE", "NAME", "CREATED", "DURATION", "VERDICT",
                                        "VALID", "GATES", "TIME_TO_FIRST_TOKEN.P99"])
        self.assertEqual(len(rows), 3)
        for row in rows:
            self.assertRegex(row, r"\bok\s+yes\s+-\s+[\d.,]+$")
        values = [float(row.split()[-1].replace(",", "")) for row in rows]
        self.assertEqual(values, sorted(values, reverse=True))

        # paging: the hint on stderr, run again as printed, gives the next page
        seen = []
        args = ["--limit", "1", "--label", "suite=lf"]
        for _ in range(3):
            r = self.cli("list", *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            seen += self.ids(r.stdout)
            m = re.search(r"^\(more: headroom list (.*)\)$", r.stderr, re.M)
            if not m:
                break
            args = shlex.split(m.group(1))
            self.assertIn("--cursor", args)
            self.assertIn("suite=lf", args)
        self.assertEqual(seen, [c, b, a])

        for bad in (("--label", "=x"), ("--label", "!k=v"), ("--since", ""),
                    ("--fingerprint", "xyz"), ("--group", "g"), ("--before", "3",
                                                                 "--cursor", "i:2")):
            r = self.cli("list", *bad)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
        r = self.cli("list", "--since", "yesterday")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("field: since", r.stderr)

    # --- label and delete ---------------------------------------------------------

    def test_label_and_delete(self):
        rid = self.run_api(self.spec("to label", {"keep": "1", "gone": "x"}))["id"]
        r = self.cli("label", str(rid), "git_sha=b2", "eq=a=b", "gone-", "--note", "first",
                     "--pin")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("run %d: to label" % rid, r.stdout)
        self.assertRegex(r.stdout, r"labels\s+keep=1, git_sha=b2, eq=a=b|labels\s+.*eq=a=b")
        self.assertRegex(r.stdout, r"note\s+first")
        self.assertRegex(r.stdout, r"pinned\s+yes")
        run = self.api.call("GET", "/runs/%d" % rid)[1]
        self.assertEqual(run["labels"], {"keep": "1", "git_sha": "b2", "eq": "a=b"})
        self.assertEqual(run["note"], "first")
        self.assertTrue(run["pinned"])

        r = self.cli("label", str(rid), "--note", "", "--unpin")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("note", r.stdout)
        run = self.api.call("GET", "/runs/%d" % rid)[1]
        self.assertIsNone(run["note"])
        self.assertFalse(run["pinned"])
        # no change: only printed; show has the labels too
        r = self.cli("label", str(rid))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("git_sha=b2", r.stdout)
        self.assertIn("git_sha=b2", self.cli("show", str(rid)).stdout)

        self.assertEqual(self.cli("label", str(rid), "novalue").returncode, 2)
        self.assertEqual(self.cli("label", "x", "a=b").returncode, 2)
        self.assertEqual(self.cli("label", "999999", "a=b").returncode, 3)

        r = self.cli("delete", str(rid))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "run %d deleted\n" % rid)
        self.assertEqual(self.api.call("GET", "/runs/%d" % rid)[0], 404)
        r = self.cli("delete", str(rid))
        self.assertEqual(r.returncode, 3)
        self.assertIn("error:", r.stderr)

    # --- compare ------------------------------------------------------------------

    def test_compare_formats(self):
        base = self.run_api(self.spec("cmp base", {"git_sha": "a1"}, requests=120))["id"]
        head = self.run_api(self.spec("cmp head", {"git_sha": "b2"}, requests=120,
                                      slow=True))["id"]
        r = self.cli("compare", str(base), str(head), "--seed", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertRegex(out, r"(?m)^base  %d = run %d: cmp base, 120 records$" % (base, base))
        self.assertRegex(out, r"(?m)^head  %d = run %d: cmp head, 120 records$" % (head, head))
        self.assertRegex(out, r"(?m)^compared by requests at 95% confidence, noise 5%, "
                              r"\d+ resamples, seed 3$")
        self.assertRegex(out, r"(?m)^METRIC\s+STAT\s+BASE\s+HEAD\s+DIFF\s+DIFF%\s+CI\(%\)\s+"
                              r"VERDICT$")
        # 2 ms -> 10 ms to the first token: worse, with units on the numbers
        self.assertRegex(out, r"(?m)^time_to_first_token\s+p50\s+[\d.]+ ms\s+[\d.]+ ms\s+"
                              r"\+[\d.]+ ms\s+\+[\d,.]+%\s+\[\+[\d,.]+, \+[\d,.]+\]\s+worse$")
        self.assertRegex(out, r"(?m)^git_sha\s+a1\s+b2$")
        self.assertRegex(out, r"(?m)^target\.url\s")
        self.assertRegex(out, r"(?m)^\d+ worse, \d+ better, \d+ unchanged, \d+ inconclusive")

        md_path = self.tmpfile("cmp.md")
        r = self.cli("compare", str(base), str(head), "--format", "markdown", "-o", md_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        with open(md_path) as f:
            md = f.read()
        self.assertIn("### headroom compare: %d → %d" % (base, head), md)
        self.assertRegex(md, r"(?m)^\*\*[1-9]\d* worse\*\*, \d+ better, \d+ unchanged, "
                             r"\d+ inconclusive")
        self.assertIn("| metric | stat | base | head | diff | diff % | CI (%) | verdict |", md)
        self.assertRegex(md, r"(?m)^\| time_to_first_token \| p50 \| .* \| \*\*worse\*\* \|$")
        self.assertIn("| git_sha | a1 | b2 |", md)

        # json: the daemon's answer as it came (the same seed, the same intervals)
        r = self.cli("compare", str(base), str(head), "--format", "json", "--seed", "3",
                     "--confidence", "0.9", "--noise", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        st, ans, _ = self.api.call("GET", "/compare?base=%d&head=%d&seed=3&confidence=0.9"
                                          "&noise_pct=2" % (base, head))
        self.assertEqual(st, 200, ans)
        self.assertEqual(json.loads(r.stdout), ans)
        self.assertEqual(ans["confidence"], 0.9)

        # refs: a list of runs is encoded and accepted; bad ones are the daemon's
        r = self.cli("compare", "%d,%d" % (base, base), str(head))
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.cli("compare", "999999", str(head))
        self.assertEqual(r.returncode, 3)
        self.assertIn("field: base", r.stderr)
        r = self.cli("compare", str(base), "no such&ref")
        self.assertEqual(r.returncode, 3)
        self.assertIn("field: head", r.stderr)
        for bad in (("--format", "csv"), ("--confidence", "95"), ("--seed", "-1")):
            r = self.cli("compare", str(base), str(head), *bad)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
        self.assertEqual(self.cli("compare", str(base)).returncode, 2)

    # --- submit --wait: gates, validity, reports ----------------------------------

    def junit(self, path):
        """The parsed JUnit file: valid against the JUnit schema
        (data/junit.xsd), its counts checked against its testcases."""
        import xmlschema
        schema = xmlschema.XMLSchema(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "data", "junit.xsd"))
        schema.validate(path)
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, "testsuites")
        total = 0
        for suite in root:
            self.assertEqual(suite.tag, "testsuite")
            cases = suite.findall("testcase")
            fails = [c for c in cases if c.find("failure") is not None]
            skips = [c for c in cases if c.find("skipped") is not None]
            self.assertEqual(int(suite.get("tests")), len(cases))
            self.assertEqual(int(suite.get("failures")), len(fails))
            self.assertEqual(int(suite.get("skipped")), len(skips))
            self.assertEqual(suite.get("errors"), "0")
            float(suite.get("time"))
            for c in cases:
                self.assertIn(c.get("classname"), ("headroom.run", "headroom.gates"))
                float(c.get("time"))
            total += len(cases)
        self.assertEqual(int(root.get("tests")), total)
        return root

    def test_junit_schema_refuses_what_readers_would(self):
        # the schema the reports are checked against is not vacuous
        import xmlschema
        schema = xmlschema.XMLSchema(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "data", "junit.xsd"))
        good = ('<testsuites><testsuite name="s" tests="1" failures="1" errors="0" time="0.5">'
                '<testcase name="c" classname="k" time="0.1"><failure message="m" type="t">x'
                '</failure></testcase></testsuite></testsuites>')
        self.assertTrue(schema.is_valid(good))
        for bad in (good.replace(' tests="1"', ''), good.replace('failures="1"', 'failures="-1"'),
                    good.replace('time="0.5"', 'time="soon"'),
                    good.replace('<testcase name="c"', '<testcase'),
                    good.replace('<failure', '<oops').replace('</failure>', '</oops>')):
            self.assertFalse(schema.is_valid(bad), bad)

    def cases(self, suite):
        return {c.get("name"): c for c in suite.findall("testcase")}

    def test_gates_exit_codes_junit_and_markdown(self):
        gates = [{"name": HOSTILE, "metric": "time_to_first_token", "stat": "p99",
                  "op": "<", "value": 0.001},
                 {"metric": "error_rate", "op": "<", "value": 0.01}]
        # a threshold gate fails: 5
        junit, md = self.tmpfile("gate.xml"), self.tmpfile("gate.md")
        summary = self.tmpfile("step_summary.md")
        with open(summary, "w") as f:
            f.write("earlier step\n")
        r = self.cli("submit", self.spec_file(self.spec("gated", gates=gates)), "--wait",
                     "--junit", junit, "--markdown", md,
                     env={"GITHUB_STEP_SUMMARY": summary})
        self.assertEqual(r.returncode, 5, r.stderr)
        rid = int(r.stdout.split()[1])
        self.assertIn("headroom: run %d failed the threshold gate %s" % (rid, HOSTILE), r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Gates: FAILED \(1 of 2 failed\)$")
        root = self.junit(junit)
        self.assertEqual(root.get("failures"), "1")
        suite = root.find("testsuite")
        self.assertEqual(suite.get("name"), "headroom run %d" % rid)
        cases = self.cases(suite)
        self.assertEqual(set(cases), {"run state", "client verdict", "validity", HOSTILE,
                                      "error_rate.value < 0.01"})
        fail = cases[HOSTILE].find("failure")
        self.assertEqual(fail.get("type"), "threshold")
        self.assertIn("time_to_first_token.p99 < 0.001", fail.text)
        self.assertEqual(cases[HOSTILE].get("classname"), "headroom.gates")
        self.assertEqual(cases["run state"].get("classname"), "headroom.run")
        with open(md) as f:
            text = f.read()
        self.assertRegex(text, r"^### ❌ headroom run %d: gated — a threshold gate failed\n"
                               % rid)
        self.assertIn("| gates | 1 passed, **1 failed** |", text)
        self.assertIn("ttft &lt;p99&gt; &amp; \"co\"", text)
        self.assertIn("| metric | p50 | p99 | avg |", text)
        self.assertIn("Time to First Token (ms)", text)
        self.assertIn("Request Throughput (requests/sec)", text)
        with open(summary) as f:
            self.assertEqual(f.read(), "earlier step\n" + text)
        # the step summary is written for every waited-for run, --markdown or not
        r = self.cli("submit", self.spec_file(self.spec("plain")), "--wait",
                     env={"GITHUB_STEP_SUMMARY": summary})
        rid2 = int(r.stdout.split()[1])
        with open(summary) as f:
            appended = f.read()[len("earlier step\n" + text):]
        self.assertRegex(appended, r"^### .* headroom run %d: plain" % rid2)

        # invalid (too few requests for validity.min_requests) beats a failed gate: 7
        r = self.cli("submit", self.spec_file(self.spec(
            "invalid", gates=gates, validity={"percentile": "p90", "min_requests": 1000})),
            "--wait", "--junit", junit)
        self.assertEqual(r.returncode, 7, r.stderr)
        rid = int(r.stdout.split()[1])
        self.assertIn("headroom: run %d is invalid: " % rid, r.stderr)
        self.assertIn("failed the threshold gate", r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Validity: INVALID")
        cases = self.cases(self.junit(junit).find("testsuite"))
        self.assertEqual(cases["validity"].find("failure").get("type"), "invalid")
        self.assertIsNotNone(cases[HOSTILE].find("failure"))

        # a regression gate against a run on the fast mock, run on the slow one: 6
        base = self.run_api(self.spec("reg base", requests=120))["id"]
        reg = [{"metric": "time_to_first_token", "stat": "p50",
                "regression": {"baseline": base, "max_pct": 5}}]
        r = self.cli("submit", self.spec_file(self.spec("reg head", requests=120, slow=True,
                                                        gates=reg)),
                     "--wait", "--junit", junit, "--markdown", md)
        self.assertEqual(r.returncode, 6, r.stderr)
        rid = int(r.stdout.split()[1])
        self.assertIn("headroom: run %d failed the regression gate" % rid, r.stderr)
        self.assertIn("baseline run %d:" % base, r.stderr)
        cases = self.cases(self.junit(junit).find("testsuite"))
        fail = cases["time_to_first_token.p50 regression"].find("failure")
        self.assertEqual(fail.get("type"), "regression")
        self.assertIn("baseline run %d" % base, fail.text)
        with open(md) as f:
            self.assertIn("a regression gate failed", f.read())

        # the same gates met: 0, no failures
        ok = [{"metric": "time_to_first_token", "stat": "p99", "op": "<", "value": 60000}]
        r = self.cli("submit", self.spec_file(self.spec("passing", gates=ok)), "--wait",
                     "--junit", junit)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.junit(junit).get("failures"), "0")

        # --junit without --wait, and an unwritable file
        r = self.cli("submit", self.spec_file(self.spec()), "--junit", junit)
        self.assertEqual(r.returncode, 2)
        r = self.cli("submit", self.spec_file(self.spec("passing", gates=ok)), "--wait",
                     "--junit", self.tmpfile("no/such/dir/j.xml"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot create", r.stderr)

    def test_repeat_group(self):
        junit, md = self.tmpfile("group.xml"), self.tmpfile("group.md")
        spec = self.spec("repeated", {"suite": "rep"}, repeat={"count": 2})
        r = self.cli("submit", self.spec_file(spec), "--wait", "--junit", junit,
                     "--markdown", md)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.match(r"group (\d+) queued: runs (\d+) (\d+)\n", r.stdout)
        self.assertTrue(m, r.stdout)
        gid, runs = int(m.group(1)), [int(m.group(2)), int(m.group(3))]
        for rid in runs:
            self.assertRegex(r.stdout, r"(?m)^run %d succeeded \(client \w+, valid\)$" % rid)
        self.assertRegex(r.stdout, r"(?m)^group %d: 2 of 2 runs succeeded" % gid)
        self.assertRegex(r.stdout, r"(?m)^METRIC\s+STAT\s+MEAN\s+STD\s+CI$")
        self.assertRegex(r.stdout, r"(?m)^time_to_first_token \(ms\)\s+p99\s")
        root = self.junit(junit)
        self.assertEqual([s.get("name") for s in root],
                         ["headroom run %d" % rid for rid in runs])
        with open(md) as f:
            text = f.read()
        self.assertIn("headroom group %d: repeated — 2 runs, passed" % gid, text)
        self.assertEqual(text.count("<details>"), 2)
        self.assertEqual(self.list_ids("--group", str(gid)), sorted(runs, reverse=True))


if __name__ == "__main__":
    unittest.main()
