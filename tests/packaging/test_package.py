"""test_package.py - the Debian package, end to end without installing it:
packaging/build-deb.sh packs a build directory's programs; the test reads
the package's control data and file list, runs lintian (no errors), unpacks
it with dpkg -x into a throw-away root, runs every unpacked program's
--version, starts the unpacked headroomd (which must find the unpacked
headroom-worker beside itself) against the unpacked headroom-mock for one
small run, opens the dashboard, checks the manual pages and verifies the
systemd unit with systemd-analyze.

Run: /usr/bin/python3 tests/packaging/test_package.py BUILD_DIR [unittest args]
(`make check-packaging` does, with build-check). With
HEADROOM_TEST_DPKG_INSTALL=1, as root, it also installs the package on this
machine, checks the user and data directory, removes it (data kept) and
purges it (data gone): only where that is safe, such as a throw-away CI
container. Needs dpkg-dev, lintian, help2man and systemd (install-deps.sh)."""

import gzip
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(SRC, "tests/integration"))
import hrtest  # noqa: E402

BUILD = None
PROGRAMS = ("headroomd", "headroom-worker", "headroom-agent", "headroom-mock", "headroom")
# Runtime libraries the programs link (docs/operations.md, "Packages and services")
LIB_PACKAGES = ("libc6", "libmicrohttpd12", "libcurl4", "libsqlite3-0", "libjansson4",
                "libzmq5", "libpcre2-8-0", "libssl3", "libyaml-0-2")
UNIT = "lib/systemd/system/headroomd.service"


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=120 * hrtest.time_scale(), **kw)


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="headroom-pkg-")
        out = os.path.join(cls.tmp.name, "out")
        r = run([os.path.join(SRC, "packaging/build-deb.sh"), BUILD, out])
        if r.returncode != 0:
            raise AssertionError("build-deb.sh failed: %s%s" % (r.stdout, r.stderr))
        cls.deb = r.stdout.strip().splitlines()[-1]
        cls.root = os.path.join(cls.tmp.name, "root")
        r = run(["dpkg-deb", "-x", cls.deb, cls.root])
        if r.returncode != 0:
            raise AssertionError("dpkg -x failed: %s" % r.stderr)
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            cls.version = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(.+)$", f.read(),
                                    re.M).group(1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def field(self, name):
        r = run(["dpkg-deb", "-f", self.deb, name])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_control(self):
        self.assertEqual(self.field("Package"), "headroom")
        self.assertEqual(self.field("Version"), self.version + "-1")
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(self.field("Architecture"), arch)
        self.assertTrue(os.path.basename(self.deb).startswith("headroom_%s-1_" % self.version))
        depends = [d.strip().split()[0] for d in self.field("Depends").split(",")]
        for lib in LIB_PACKAGES + ("adduser",):
            self.assertIn(lib, depends)
        # nothing that only the build needs
        self.assertFalse([d for d in depends if d.endswith("-dev")], depends)

    def test_contents(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        entries = {}
        for line in r.stdout.splitlines():
            parts = line.split(None, 5)
            entries[parts[5].lstrip(".")] = (parts[0], parts[1])
        want = ["/usr/bin/" + p for p in PROGRAMS]
        want += ["/usr/share/man/man1/%s.1.gz" % p for p in PROGRAMS]
        want += ["/" + UNIT, "/etc/default/headroomd", "/etc/headroom/headroomd.conf",
                 "/usr/share/doc/headroom/copyright",
                 "/usr/share/doc/headroom/changelog.Debian.gz",
                 "/usr/share/doc/headroom/operations.md", "/usr/share/doc/headroom/api.md",
                 "/usr/share/doc/headroom/openapi.yaml", "/usr/share/doc/headroom/README.md",
                 "/usr/share/doc/headroom/examples/mock.json"]
        for path in want:
            self.assertIn(path, entries)
            self.assertEqual(entries[path][1], "root/root", path)
        for p in PROGRAMS:
            self.assertEqual(entries["/usr/bin/" + p][0], "-rwxr-xr-x", p)
        # nothing outside these folders (or their parents), no build tree paths
        allowed = ("/usr/bin/", "/usr/share/man/man1/", "/usr/share/doc/headroom/",
                   "/etc/default/", "/etc/headroom/", "/lib/systemd/system/")
        for path in entries:
            d = path.rstrip("/") + "/"
            self.assertTrue(any(path.startswith(a) or a.startswith(d) for a in allowed), path)
            self.assertNotIn("build", path)
        ctl = os.path.join(self.tmp.name, "control")
        self.assertEqual(run(["dpkg-deb", "-e", self.deb, ctl]).returncode, 0)
        with open(os.path.join(ctl, "conffiles")) as f:
            self.assertEqual(f.read().split(),
                             ["/etc/default/headroomd", "/etc/headroom/headroomd.conf"])
        for s in ("postinst", "prerm", "postrm"):
            self.assertTrue(os.access(os.path.join(ctl, s), os.X_OK), s)
        with open(os.path.join(ctl, "postinst")) as f:
            self.assertIn("adduser --quiet --system --group", f.read())
        with open(os.path.join(ctl, "postrm")) as f:
            self.assertRegex(f.read(), r'"purge" \]; then(.|\n)*rm -rf /var/lib/headroom')
        # md5sums name every file with its sum
        r = run(["md5sum", "-c", os.path.join(ctl, "md5sums")], cwd=self.root)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len(r.stdout.splitlines()),
                         sum(1 for p, (mode, _) in entries.items() if mode.startswith("-")))
        # the copyright file is machine-readable (DEP-5) and the changelog names the version
        with open(os.path.join(self.root, "usr/share/doc/headroom/copyright")) as f:
            self.assertTrue(f.readline().startswith(
                "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"))
        with gzip.open(os.path.join(self.root, "usr/share/doc/headroom/changelog.Debian.gz"),
                       "rt") as f:
            self.assertTrue(f.readline().startswith("headroom (%s-1) " % self.version))

    def test_lintian(self):
        r = run(["lintian", "--fail-on", "error", "--no-tag-display-limit", self.deb])
        tags = [ln for ln in r.stdout.splitlines() if re.match(r"^[EW]: ", ln)]
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse([t for t in tags if t.startswith("E: ")], tags)
        # the one warning left is explained in docs/operations.md
        self.assertEqual([t for t in tags if "initial-upload-closes-no-bugs" not in t], [])

    def test_versions(self):
        for p in PROGRAMS:
            r = run([os.path.join(self.root, "usr/bin", p), "--version"])
            self.assertEqual(r.returncode, 0, p + r.stderr)
            self.assertRegex(r.stdout, r"^%s %s\b" % (re.escape(p), re.escape(self.version)))

    def test_man_pages(self):
        for p in PROGRAMS:
            page = os.path.join(self.root, "usr/share/man/man1/%s.1.gz" % p)
            r = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="100"))
            self.assertEqual(r.returncode, 0, p + r.stderr)
            text = r.stdout
            for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
                self.assertIn("\n" + section + "\n", text, p)
            self.assertIn(self.version, text.splitlines()[-1], p)
            self.assertNotIn("usage:", text, p)  # the synopsis was recognised
        r = run(["man", "-l", os.path.join(self.root, "usr/share/man/man1/headroomd.1.gz")])
        for opt in ("--listen", "--data", "--worker-bin", "/etc/default/headroomd",
                    "/etc/headroom/headroomd.conf", "/var/lib/headroom"):
            self.assertIn(opt, r.stdout)

    def test_unit_verifies(self):
        """systemd-analyze verify, with ExecStart pointed at the unpacked daemon
        (it checks that the program exists); any message fails."""
        with open(os.path.join(self.root, UNIT)) as f:
            unit = f.read()
        for setting in ("Type=notify", "User=headroom", "StateDirectory=headroom",
                        "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                        "NoNewPrivileges=yes", "KillMode=mixed", "TimeoutStopSec=25",
                        "Restart=on-failure", "SystemCallFilter=@system-service",
                        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
                        "EnvironmentFile=-/etc/default/headroomd",
                        "ExecStart=/usr/bin/headroomd --config /etc/headroom/headroomd.conf "
                        "$HEADROOMD_OPTS"):
            self.assertRegex(unit, r"(?m)^%s$" % re.escape(setting))
        d = os.path.join(self.tmp.name, "unit")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "headroomd.service")
        with open(path, "w") as f:
            f.write(unit.replace("/usr/bin/headroomd",
                                 os.path.join(self.root, "usr/bin/headroomd")))
        r = run(["systemd-analyze", "verify", "--man=no", path])
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        # a mistake is caught (the check can fail)
        with open(path, "a") as f:
            f.write("ProtectSystm=strict\n")
        r = run(["systemd-analyze", "verify", "--man=no", path])
        self.assertIn("ProtectSystm", r.stderr)
        # the sandbox as systemd scores it: at most 2.0 of 10 ("OK")
        r = run(["systemd-analyze", "security", "--offline=true", "--root=" + self.root,
                 "headroomd.service"])
        m = re.search(r"Overall exposure level for headroomd.service: ([0-9.]+)", r.stdout)
        self.assertTrue(m, r.stdout + r.stderr)
        self.assertLessEqual(float(m.group(1)), 2.0, r.stdout)

    def test_packaged_config(self):
        """The packaged configuration file is valid as shipped (the unit's
        --config), and a mistake in it is caught with its line."""
        daemon = os.path.join(self.root, "usr/bin/headroomd")
        conf = os.path.join(self.root, "etc/headroom/headroomd.conf")
        r = run([daemon, "--config", conf, "--check-config"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(conf) as f:
            text = f.read()
        self.assertRegex(text, r"(?m)^listen = 127\.0\.0\.1:8080$")
        self.assertRegex(text, r"(?m)^data = /var/lib/headroom$")
        bad = os.path.join(self.tmp.name, "bad.conf")
        with open(bad, "w") as f:
            f.write(text + "allow-targt = 10.0.0.0/8\n")
        r = run([daemon, "--config", bad, "--check-config"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.conf:%d:" % (text.count("\n") + 1), r.stderr)

    def test_unpacked_service_runs(self):
        """The unpacked programs work together: headroomd (with the packaged
        configuration, its listen and data overridden on the command line)
        finds the headroom-worker beside it, measures the unpacked
        headroom-mock, and serves the dashboard embedded in it."""
        hrtest.BIN = os.path.join(self.root, "usr/bin")
        data = tempfile.TemporaryDirectory(prefix="headroom-pkg-data-")
        self.addCleanup(data.cleanup)
        mock = hrtest.start_mock("--ttft-ms", "2", "--itl-ms", "1")
        self.addCleanup(lambda: self.assertEqual(mock.stop(), 0, "headroom-mock exit status"))
        d = hrtest.start_daemon(data.name, "--config",
                                os.path.join(self.root, "etc/headroom/headroomd.conf"))
        self.assertTrue(os.path.exists(os.path.join(data.name, "headroom.db")))
        self.addCleanup(lambda: self.assertEqual(d.stop(), 0, "headroomd exit status"))
        self.assertTrue(os.path.samefile("/proc/%d/exe" % d.p.pid,
                                         os.path.join(self.root, "usr/bin/headroomd")))
        api = hrtest.Api(d.addr)
        rid = api.submit(hrtest.spec(mock.addr, concurrency=2, requests=10))
        run_ = api.wait(rid)
        self.assertEqual(run_["state"], "succeeded", run_)
        st, summ, _ = api.call("GET", "/runs/%d" % rid)
        self.assertEqual(st, 200)
        self.assertIn("summary", summ)
        st, health, _ = api.call("GET", "/healthz")
        self.assertEqual(st, 200, health)
        with urllib.request.urlopen("http://%s/" % d.addr, timeout=30) as r:
            self.assertEqual(r.status, 200)
            self.assertIn("text/html", r.headers.get("Content-Type", ""))
        # the CLI from the package talks to it
        cli = [os.path.join(self.root, "usr/bin/headroom"), "--url", "http://" + d.addr]
        r = run(cli + ["show", str(rid)])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("succeeded", r.stdout)
        # the first run of docs/operations.md: the packaged example, against a
        # headroom-mock the daemon starts from beside itself
        example = os.path.join(self.root, "usr/share/doc/headroom/examples/mock.json")
        r = run(cli + ["submit", example, "--wait"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        st, runs, _ = api.call("GET", "/runs")
        self.assertEqual(st, 200)
        mine = [x for x in runs["runs"] if x["id"] != rid]
        self.assertEqual([x["state"] for x in mine], ["succeeded"], runs)
        st, full, _ = api.call("GET", "/runs/%d" % mine[0]["id"])
        self.assertTrue(full["spec"]["target"]["mock"], full["spec"]["target"])
        self.assertEqual(full["summary"]["counts"]["valid"], 400, full["summary"]["counts"])

    def test_notify_readiness(self):
        """What Type=notify relies on: READY=1 once the API answers, STOPPING=1
        on SIGTERM, on the datagram socket named by $NOTIFY_SOCKET."""
        hrtest.BIN = os.path.join(self.root, "usr/bin")
        with open(os.path.join(hrtest.BIN, "headroomd"), "rb") as f:
            if b"NOTIFY_SOCKET" not in f.read():
                self.skipTest("this headroomd does not read NOTIFY_SOCKET: no readiness "
                              "notification yet, so Type=notify would time out")
        data = tempfile.TemporaryDirectory(prefix="headroom-pkg-data-")
        self.addCleanup(data.cleanup)
        sock_path = os.path.join(data.name, "notify.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        s.bind(sock_path)
        s.settimeout(15 * hrtest.time_scale())
        old = os.environ.get("NOTIFY_SOCKET")
        os.environ["NOTIFY_SOCKET"] = sock_path
        try:
            d = hrtest.start_daemon(os.path.join(data.name, "d"))
        finally:
            if old is None:
                del os.environ["NOTIFY_SOCKET"]
            else:
                os.environ["NOTIFY_SOCKET"] = old
        self.addCleanup(d.stop)
        msg = s.recv(4096).decode()
        self.assertIn("READY=1", msg.split("\n"))
        st, _, _ = hrtest.Api(d.addr).call("GET", "/healthz")
        self.assertEqual(st, 200)
        d.p.send_signal(signal.SIGTERM)
        msgs = []
        deadline = time.monotonic() + 15 * hrtest.time_scale()
        while "STOPPING=1" not in msgs and time.monotonic() < deadline:
            msgs += s.recv(4096).decode().split("\n")
        self.assertIn("STOPPING=1", msgs)
        self.assertEqual(d.p.wait(25), 0)

    @unittest.skipUnless(os.environ.get("HEADROOM_TEST_DPKG_INSTALL") == "1" and
                         os.geteuid() == 0,
                         "installs on this machine: HEADROOM_TEST_DPKG_INSTALL=1 as root only")
    def test_install_remove_purge(self):
        had_user = run(["getent", "passwd", "headroom"]).returncode == 0
        self.assertFalse(os.path.exists("/var/lib/headroom"), "a headroom is installed here")
        r = run(["dpkg", "-i", self.deb])
        self.addCleanup(lambda: run(["dpkg", "--purge", "headroom"]))
        if not had_user:
            self.addCleanup(lambda: run(["deluser", "--system", "--quiet", "headroom"]))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        pw = run(["getent", "passwd", "headroom"]).stdout.split(":")
        self.assertEqual(pw[5], "/var/lib/headroom")
        self.assertLess(int(pw[2]), 1000)  # a system user
        st = os.stat("/var/lib/headroom")
        self.assertEqual(st.st_uid, int(pw[2]))
        self.assertEqual(st.st_mode & 0o777, 0o750)
        self.assertEqual(run(["/usr/bin/headroomd", "--version"]).returncode, 0)
        with open("/var/lib/headroom/keep", "w") as f:
            f.write("run history\n")
        self.assertEqual(run(["dpkg", "--remove", "headroom"]).returncode, 0)
        self.assertFalse(os.path.exists("/usr/bin/headroomd"))
        self.assertTrue(os.path.exists("/var/lib/headroom/keep"))
        self.assertTrue(os.path.exists("/etc/default/headroomd"))  # conffiles until purge
        self.assertTrue(os.path.exists("/etc/headroom/headroomd.conf"))
        self.assertEqual(run(["dpkg", "--purge", "headroom"]).returncode, 0)
        self.assertFalse(os.path.exists("/var/lib/headroom"))
        self.assertFalse(os.path.exists("/etc/default/headroomd"))
        self.assertFalse(os.path.exists("/etc/headroom/headroomd.conf"))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: test_package.py BUILD_DIR [unittest args]")
    BUILD = os.path.abspath(sys.argv.pop(1))
    os.environ.setdefault("HEADROOM_SRC", SRC)
    unittest.main(verbosity=2)
