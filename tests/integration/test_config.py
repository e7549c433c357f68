"""test_config.py - headroomd's configuration file (docs/operations.md,
"Configuration"): options read from `--config FILE` start a real daemon
(the file's data directory and floor in force, the command line winning
over the file), `--check-config` says valid or names what is wrong, and
every bad line is refused naming the file, the line and the key."""

import os
import subprocess
import tempfile
import unittest

import hrtest

HEADROOMD = os.path.join(hrtest.BIN, "headroomd")


def run(*args):
    return subprocess.run([HEADROOMD, *args], capture_output=True, text=True,
                          timeout=60 * hrtest.time_scale())


class Config(unittest.TestCase):
    def test_file_starts_a_daemon_and_the_command_line_wins(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "from-config")
            conf = os.path.join(tmp, "headroomd.conf")
            with open(conf, "w") as f:
                f.write("# headroomd.conf\n\n"
                        "listen = 127.0.0.1:1\n"          # overridden below
                        "data = %s\n"
                        "min-free-mb = 1000000000\n"       # not met: not ready
                        "no-migration-copy = true\n"
                        "insecure-plaintext = false\n"
                        "allow-target = 127.0.0.0/8\n"
                        "allow-target = \"::1\"\n" % data)
            p = run("--config", conf, "--check-config")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("valid", p.stdout)
            self.assertFalse(os.path.exists(data))  # a check changes nothing
            d = hrtest.start_daemon(os.path.join(tmp, "ignored"), "--config", conf)
            try:
                self.assertIn("127.0.0.1:", d.addr)
                self.assertNotEqual(d.addr, "127.0.0.1:1")
                api = hrtest.Api(d.addr)
                st, body, _ = api.call("GET", "/readyz")
                self.assertEqual(st, 503, body)  # the file's floor is in force
                self.assertIn("free", body["checks"]["disk"])
            finally:
                d.stop()
            # the file's data directory was overridden by the command line's
            self.assertTrue(os.path.exists(os.path.join(tmp, "ignored", "headroom.db")))
            self.assertFalse(os.path.exists(data))

    def test_errors_name_file_line_and_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            cases = [
                ("listen 127.0.0.1:80\n", ":1: expected 'key = value'"),
                ("# ok\ncolour = red\n", ":2: unknown key 'colour'"),
                ("require-tokens = maybe\n", ":1: 'require-tokens' is true or false"),
                ("\n\nreaders =\n", ":3: 'readers' needs a value"),
                ("min-free-mb = -4\n", "(that option is set in"),
            ]
            for i, (text, want) in enumerate(cases):
                conf = os.path.join(tmp, "c%d.conf" % i)
                with open(conf, "w") as f:
                    f.write(text)
                p = run("--config", conf, "--check-config")
                self.assertEqual(p.returncode, 2, text)
                self.assertIn(want, p.stderr, text)
                self.assertIn(conf, p.stderr)
            p = run("--config", os.path.join(tmp, "none.conf"), "--check-config")
            self.assertEqual(p.returncode, 2)
            self.assertIn("cannot read the configuration", p.stderr)
            p = run("--check-config", "--min-free-mb", "x")
            self.assertEqual(p.returncode, 2)
            self.assertNotIn("set in", p.stderr)  # from the command line: no file named


if __name__ == "__main__":
    unittest.main()
