"""test_agents.py - remote worker agents (docs/agents.md) on several
network hosts made on this machine.

The test moves itself into a network namespace of its own (loopback up, a
bridge with 10.77.0.1/24) and gives each headroom-agent its own namespace
joined to that bridge by a veth pair (10.77.0.1x/24), and its own time
namespace (unshare --time --monotonic=N) so that its clock is off the
daemon's by a known N seconds. Every address is inside namespaces the test
made. The daemon listens for agents with CURVE on 10.77.0.1; a third
agent reaches it through a delaying TCP relay of the test's own (1 ms +-
0.2 ms each way; the kernel here has no netem).

Checked: a key that is not enrolled is refused, and an agent of another
release; enrolment from the API and from `headroomd agent` (enroll, list,
revoke); an enrolled agent is listed with its labels; a Poisson run over the daemon and two agents has
exactly the intended schedule of a one-host run of the same spec and seed
and the same achieved rate within 1%; each remote worker's measured clock
offset holds the truth within its bound (within 100 us through the
delaying relay); an agent killed mid-run fails the run (policy fail) or is
recorded as lost while the run finishes (policy degrade), the records
received kept and none counted twice, the agent back on a new connection
while the run goes on; a link down for half a second mid-run loses
nothing; a link that stalls mid-run slows
the agent's relay (back-pressure) and loses no record; a cut link (its veth deleted) is
detected within seconds.

Namespaces need CAP_SYS_ADMIN (the suite runs as root). Where they cannot
be made the test fails and says so: it never skips in silence.

Run: HEADROOM_BIN=build/bin python3 tests/integration/test_agents.py (as
root; it is RUN_SERIAL in ctest).
"""

import ctypes
import json
import os
import random
import select
import signal
import socket
import subprocess
import threading
import time
import unittest

import hrtest

NS = 1_000_000_000
CLONE_NEWNET = 0x40000000
PORT = 17717            # the daemon's agent socket, inside the test's namespace
RELAY_PORT = 17718
SHIFT = {1: 7, 2: 11, 3: 3, 4: 5}  # each agent's monotonic clock offset, s
TAG = "hrt%d" % os.getpid()
# the release the programs under test say they are (an agent must be the daemon's)
VERSION = subprocess.run([os.path.join(hrtest.BIN, "headroomd"), "--version"],
                         capture_output=True, text=True).stdout.split()[1]


def sh(cmd, check=True):
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("%s: %s" % (cmd, p.stderr.strip()))
    return p


def namespaces_work():
    p = subprocess.run(["unshare", "--net", "--time", "--monotonic=1", "true"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return False, p.stderr.strip()
    p = subprocess.run(["ip", "-V"], capture_output=True, text=True)
    return p.returncode == 0, "no ip(8)" if p.returncode else ""


def ns_name(k):
    return "%s-%d" % (TAG, k)


def make_agent_ns(k):
    """Agent k's network namespace, joined to the bridge (made anew)."""
    sh("ip netns del %s" % ns_name(k), check=False)
    sh("ip link del hv%d" % k, check=False)
    sh("ip netns add %s" % ns_name(k))
    sh("ip link add hv%d type veth peer name eth0 netns %s" % (k, ns_name(k)))
    sh("ip link set hv%d master hrbr up" % k)
    sh("ip netns exec %s ip addr add 10.77.0.1%d/24 dev eth0" % (ns_name(k), k))
    sh("ip netns exec %s ip link set eth0 up" % ns_name(k))
    sh("ip netns exec %s ip link set lo up" % ns_name(k))


class Relay:
    """A TCP relay that holds every chunk 1 ms +- 0.2 ms (uniform) before
    passing it on, keeping the order, in both directions; one thread, one
    select loop."""

    def __init__(self, listen, target, delay=0.001, jitter=0.0002, rcvbuf=None):
        self.target, self.delay, self.jitter = target, delay, jitter
        self.hold_up_until = 0.0  # until then nothing goes from an agent to the daemon
        self.up = set()           # the agents' ends (accepted)
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:  # inherited by the accepted sockets: a stall fills it soon
            self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.ls.bind(listen)
        self.ls.listen(8)
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        peer, queue = {}, {}  # socket -> its partner; socket -> [(due, bytes)] to send
        rng = random.Random(7)
        while not self.stop:
            now = time.monotonic()
            due = [q[0][0] for q in queue.values() if q]
            timeout = max(0.0, min(due) - now) if due else 0.05
            held = now < self.hold_up_until
            readable = [x for x in peer if not (held and x in self.up)]
            r, _, _ = select.select([self.ls] + readable, [], [], min(timeout, 0.05))
            for s in r:
                if s is self.ls:
                    a, _ = self.ls.accept()
                    b = socket.create_connection(self.target)
                    for x in (a, b):
                        x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    peer[a], peer[b] = b, a
                    queue[a], queue[b] = [], []
                    self.up.add(a)
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for x in (s, peer[s]):
                        peer.pop(x, None)
                        queue.pop(x, None)
                        self.up.discard(x)
                        x.close()
                    continue
                out = queue[peer[s]]
                t = time.monotonic() + self.delay + rng.uniform(-self.jitter, self.jitter)
                if out and out[-1][0] > t:
                    t = out[-1][0]  # in order
                out.append((t, data))
            now = time.monotonic()
            held = now < self.hold_up_until
            for s, q in list(queue.items()):
                if held and peer.get(s) in self.up:
                    continue  # the daemon's end waits too
                while q and q[0][0] <= now:
                    try:
                        s.sendall(q.pop(0)[1])
                    except OSError:
                        q.clear()

    def stall_up(self, seconds):
        """Nothing from the agents reaches the daemon for that long (the
        agents' bytes stay in their sockets' buffers)."""
        self.hold_up_until = time.monotonic() + seconds

    def close(self):
        self.stop = True
        self.t.join(5)
        self.ls.close()


class Env:
    pass


E = Env()


def start_agent(k, name, key, labels, via=None, extra=()):
    log = open(os.path.join(E.tmp.name, "agent%d.log" % k), "a")
    p = subprocess.Popen(
        ["ip", "netns", "exec", ns_name(k), "unshare", "--time",
         "--monotonic=%d" % SHIFT[k], "--kill-child",
         os.path.join(hrtest.BIN, "headroom-agent"), "--connect",
         "tcp://%s" % (via or "10.77.0.1:%d" % PORT), "--key", key, "--server-key",
         E.dkey + ".pub", "--name", name, "--labels", labels, "--cache",
         os.path.join(E.tmp.name, "cache%d" % k)] + list(extra), stdout=log, stderr=log)
    log.close()
    return p


def connected():
    st, body, _ = E.api.call("GET", "/agents")
    assert st == 200, body
    return {c["name"]: c for a in body["agents"] for c in a["connections"]}


def wait_connected(names, timeout=20):
    deadline = time.time() + timeout * hrtest.time_scale()
    while time.time() < deadline:
        if set(names) <= set(connected()):
            return
        time.sleep(0.1)
    logs = ""
    for k in range(1, 5):
        path = os.path.join(E.tmp.name, "agent%d.log" % k)
        if os.path.exists(path) and any(n == "ag%d" % k for n in names):
            with open(path) as f:
                logs += "\nagent%d.log:\n%s" % (k, f.read()[-1500:])
    raise AssertionError("agents %s not connected: %s%s" % (names, connected(), logs))


def ensure_agent(k):
    """Agent k (ag1, ag2: role=load) running and connected."""
    p = E.agents.get(k)
    if p is None or p.poll() is not None:
        E.agents[k] = start_agent(k, "ag%d" % k, E.akey, "role=load")
    wait_connected(["ag%d" % k])


def kill_agent(k):
    p = E.agents.pop(k, None)
    if p and p.poll() is None:
        p.kill()
        p.wait(10)


def setUpModule():
    ok, why = namespaces_work()
    if not ok:
        raise AssertionError("cannot create network and time namespaces here (unshare --net "
                             "--time, ip netns): %s" % why)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise AssertionError("cannot enter a network namespace of the test's own: %s"
                             % os.strerror(ctypes.get_errno()))
    sh("ip link set lo up")
    sh("ip link add hrbr type bridge")
    sh("ip addr add 10.77.0.1/24 dev hrbr")
    sh("ip link set hrbr up")
    E.tmp = hrtest.tempdir()
    for k in (1, 2, 3, 4):
        make_agent_ns(k)
    d = E.tmp.name
    E.dkey = os.path.join(d, "daemon")
    E.akey = os.path.join(d, "agents")
    E.bkey = os.path.join(d, "stranger")
    for prefix, prog in ((E.dkey, "headroomd"), (E.akey, "headroom-agent"),
                         (E.bkey, "headroom-agent")):
        sh("%s keygen %s" % (os.path.join(hrtest.BIN, prog), prefix))
        assert oct(os.stat(prefix + ".key").st_mode & 0o777) == "0o600"
    E.mock = hrtest.Proc([os.path.join(hrtest.BIN, "headroom-mock"), "--listen",
                          "10.77.0.1:0", "--quiet", "--ttft-ms", "1", "--itl-ms", "1"],
                         "listening on")
    E.daemon = hrtest.start_daemon(os.path.join(d, "data"), "--agent-listen",
                                   "tcp://10.77.0.1:%d" % PORT, "--agent-key", E.dkey)
    E.api = hrtest.Api(E.daemon.addr)
    E.agents = {}
    E.relay = None


def stop_agent(k):
    """Agent k stopped with SIGTERM (not its unshare): its exit status."""
    p = E.agents.pop(k, None)
    if not p or p.poll() is not None:
        return p.returncode if p else 0
    try:
        with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
            child = int(f.read().split()[0])
        os.kill(child, signal.SIGTERM)
        return p.wait(30)
    except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
        p.kill()
        p.wait(10)
        return -1


def tearDownModule():
    bad = []
    for k in list(getattr(E, "agents", {})):
        rc = stop_agent(k)
        if rc != 0:
            bad.append("agent %d exited %s" % (k, rc))
    if getattr(E, "relay", None):
        E.relay.close()
    for name in ("daemon", "mock"):
        p = getattr(E, name, None)
        if p:
            rc = p.stop()
            if rc != 0:
                bad.append("%s exited %s" % (name, rc))
    for k in (1, 2, 3, 4):
        sh("ip netns del %s" % ns_name(k), check=False)
    if getattr(E, "tmp", None):
        E.tmp.cleanup()
    # a sanitizer's report makes a program exit non-zero: that fails the test
    if bad:
        raise AssertionError("; ".join(bad))


def enroll():
    with open(E.akey + ".pub") as f:
        key = f.read().strip()
    st, body, _ = E.api.call("POST", "/agents", {"name": "loadpool", "public_key": key,
                                                 "labels": {"pool": "a"}})
    assert st in (201, 409), body


def spec(duration=4.0, rate=60, **extra):
    s = {"name": "agents", "target": {"url": "http://" + E.mock.addr, "model": "m",
                                      "endpoint": "chat"},
         "workload": {"isl": {"mean": 8, "stddev": 0}, "osl": {"mean": 4, "stddev": 0},
                      "seed": 11},
         "load": {"mode": "rate", "rate": rate, "arrival": "poisson", "duration_s": duration},
         "client": {"allow_client_bound": True}, "validity": {"percentile": "none"}}
    s.update(extra)
    return s


def check_schema(name, instance):
    """instance against api/openapi.yaml's components.schemas[name]."""
    import yaml
    from jsonschema import Draft202012Validator, RefResolver
    with open(os.path.join(hrtest.SRC, "api", "openapi.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    v = Draft202012Validator(doc["components"]["schemas"][name],
                             resolver=RefResolver.from_schema(doc))
    errors = ["%s: %s" % ("/".join(map(str, e.path)), e.message[:200])
              for e in v.iter_errors(instance)]
    if errors:
        raise AssertionError("%s: %s\n%s" % (name, errors[:5], json.dumps(instance)[:1500]))


def records(run_id):
    st, text, _ = E.api.call("GET", "/runs/%d/records?format=jsonl" % run_id)
    assert st == 200, text
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class Agents(unittest.TestCase):
    def test_1_wrong_key_refused(self):
        enroll()
        p = start_agent(1, "stranger", E.bkey, "role=load")
        try:
            time.sleep(3)
            self.assertNotIn("stranger", connected())
        finally:
            p.kill()
            p.wait(10)
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            self.assertIn("refused this agent's key", f.read())

    def curve_dealer(self):
        import zmq
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.DEALER)
        with open(E.akey + ".key") as f:
            sec = f.read().strip().encode()
        with open(E.dkey + ".pub") as f:
            s.curve_serverkey = f.read().strip().encode()
        s.curve_secretkey = sec
        s.curve_publickey = zmq.curve_public(sec)
        s.linger = 0
        s.connect("tcp://10.77.0.1:%d" % PORT)
        self.addCleanup(s.close)
        return s

    def test_1b_version_mismatch_and_hostile_frames(self):
        import zmq
        enroll()
        s = self.curve_dealer()
        # malformed and out-of-place messages from an enrolled key: dropped
        for frames in ([b"x"], [b"c", b"not json"], [b"c", b"[]"], [b"c", b'{"type":7}'],
                       [b"w", b"1:999999", b"\x02\x01", b"{}"], [b"w"] * 5,
                       [b"b", b"{}", b"zz"],
                       [b"c", b'{"type":"exited","run":1,"worker":5,"status":0}'],
                       [b"c", b'{"type":"fetch","sha256":"../../etc/passwd"}'],
                       [b"c", json.dumps({"type": "hello", "protocol": 1,
                                          "worker_protocol": 2, "version": VERSION,
                                          "name": "bad name!", "host": "h", "cores": 1,
                                          "labels": {}}).encode()]):
            s.send_multipart(frames)
        hello = {"type": "hello", "protocol": 99, "worker_protocol": 2, "version": "9.9.9",
                 "name": "old", "host": "h", "cores": 1, "labels": {}, "pid": 1}
        s.send_multipart([b"c", json.dumps(hello).encode()])
        refusals = []
        deadline = time.time() + 10 * hrtest.time_scale()
        while time.time() < deadline and not any("9.9.9" in r["reason"] for r in refusals):
            if s.poll(200):
                m = s.recv_multipart()
                if m[0] == b"c":
                    o = json.loads(m[1])
                    if o["type"] == "refuse":
                        refusals.append(o)
        mismatch = [r for r in refusals if "9.9.9" in r["reason"]]
        self.assertTrue(mismatch, refusals)
        self.assertIn("protocol mismatch", mismatch[0]["reason"])
        self.assertTrue(mismatch[0]["fatal"])
        # the same protocols from another release: refused too, saying both
        hello.update(protocol=1, version="0.0.1-other", name="other")
        s.send_multipart([b"c", json.dumps(hello).encode()])
        other = None
        deadline = time.time() + 10 * hrtest.time_scale()
        while time.time() < deadline and other is None:
            if s.poll(200):
                m = s.recv_multipart()
                o = json.loads(m[1]) if m[0] == b"c" else {}
                if o.get("type") == "refuse" and "0.0.1-other" in o["reason"]:
                    other = o
        self.assertIsNotNone(other, "no refusal of another release")
        self.assertIn("version mismatch: this daemon is headroom %s" % VERSION, other["reason"])
        self.assertTrue(other["fatal"])
        self.assertNotIn("other", connected())
        self.assertTrue(any("malformed hello" in r["reason"] for r in refusals), refusals)
        self.assertNotIn("old", connected())  # and the daemon still answers

    def test_1c_agent_told_of_a_mismatch_exits(self):
        """The agent's side of a refusal: a stand-in daemon (CURVE, no ZAP)
        refuses its hello as a daemon of another version would."""
        import zmq
        ctx = zmq.Context.instance()
        srv = ctx.socket(zmq.ROUTER)
        with open(E.dkey + ".key") as f:
            srv.curve_secretkey = f.read().strip().encode()
        srv.curve_server = True
        srv.linger = 0
        srv.bind("tcp://10.77.0.1:%d" % (PORT + 2))
        self.addCleanup(srv.close)
        p = start_agent(1, "lonely", E.akey, "role=load", via="10.77.0.1:%d" % (PORT + 2))
        try:
            self.assertTrue(srv.poll(10000 * hrtest.time_scale()), "no hello")
            rid, kind, body = srv.recv_multipart()
            self.assertEqual((kind, json.loads(body)["type"]), (b"c", "hello"))
            self.assertEqual(json.loads(body)["protocol"], 1)
            srv.send_multipart([rid, b"c", json.dumps({
                "type": "refuse", "fatal": True,
                "reason": "protocol mismatch: this daemon speaks agent protocol 2"}).encode()])
            self.assertEqual(p.wait(10), 2)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            self.assertIn("refused this agent: protocol mismatch", f.read())

    def test_2_enrolled_agent_listed(self):
        enroll()
        ensure_agent(1)
        st, body, _ = E.api.call("GET", "/agents")
        self.assertEqual(st, 200)
        for x in body["agents"]:
            check_schema("Agent", x)
        a = [x for x in body["agents"] if x["name"] == "loadpool"][0]
        self.assertEqual(a["state"], "connected")
        self.assertEqual(a["labels"], {"pool": "a"})
        c = [x for x in a["connections"] if x["name"] == "ag1"][0]
        self.assertEqual(c["labels"], {"pool": "a", "role": "load"})
        # the workers' socket: a file in a 0700 directory, not abstract
        unix = sh("ip netns exec %s cat /proc/net/unix" % ns_name(1)).stdout
        self.assertNotIn("@headroom-agent", unix)
        paths = [ln.split()[-1] for ln in unix.splitlines()
                 if "/headroom-agent-" in ln.split()[-1]]
        self.assertTrue(paths, unix)
        for path in paths:
            self.assertEqual(os.stat(os.path.dirname(path)).st_mode & 0o777, 0o700)
        self.assertEqual(c["address"], "10.77.0.11")
        self.assertGreaterEqual(c["cores"], 1)
        self.assertTrue(c["last_heartbeat"])
        # a second connection with the same name is refused, the first kept
        p = start_agent(2, "ag1", E.akey, "role=load")
        try:
            time.sleep(2)
            self.assertEqual(connected()["ag1"]["address"], "10.77.0.11")
        finally:
            p.kill()
            p.wait(10)
        with open(os.path.join(E.tmp.name, "agent2.log")) as f:
            self.assertIn("is connected already", f.read())
        # enrolment errors name their field
        st, body, _ = E.api.call("POST", "/agents", {"name": "x", "public_key": "short"})
        self.assertEqual((st, body["error"]["field"]), (400, "public_key"))
        st, body, _ = E.api.call("DELETE", "/agents/nobody")
        self.assertEqual((st, body["error"]["field"]), (404, "name"))

    def test_3_schedule_split_over_hosts(self):
        enroll()
        ensure_agent(1)
        ensure_agent(2)
        placed = E.api.wait(E.api.submit(spec(placement={
            "local": 1, "agents": [{"selector": {"role": "load"}, "workers": 1}]})), 120)
        self.assertEqual(placed["state"], "succeeded", placed.get("reason"))
        one = E.api.wait(E.api.submit(spec(workers=3)), 120)
        self.assertEqual(one["state"], "succeeded", one.get("reason"))
        pl = placed["summary"]["placement"]
        check_schema("PlacementSummary", pl)
        check_schema("RunSpec", placed["spec"])
        self.assertEqual(pl["workers"], 3)
        self.assertEqual([a["name"] for a in pl["agents"]], ["ag1", "ag2"])
        for a in pl["agents"]:  # who ran them, as they announced themselves
            self.assertEqual((a["host"], a["version"]), (socket.gethostname(), VERSION), a)
            self.assertEqual(a["cores"], os.cpu_count(), a)
        self.assertEqual(pl["lost"], [])
        # the merged intended schedule is the one-host run's, request by request
        a = sorted((r["req_id"], r["intended_ns"]) for r in records(placed["id"]))
        b = sorted((r["req_id"], r["intended_ns"]) for r in records(one["id"]))
        self.assertGreater(len(a), 100)
        self.assertEqual(a, b)
        ra = placed["summary"]["load"]["achieved_rate"]
        rb = one["summary"]["load"]["achieved_rate"]
        self.assertLess(abs(ra - rb) / rb, 0.01, (ra, rb))
        # every worker sent its share: workers 1 and 2 ran on the agents
        by_worker = {}
        for r in records(placed["id"]):
            by_worker[r["worker"]] = by_worker.get(r["worker"], 0) + 1
        self.assertEqual(sorted(by_worker), [0, 1, 2])
        # the agents' clocks: the truth within each stated bound
        clock = placed["summary"]["clock"]
        self.assertEqual(clock["measured"], 3)
        truth = {0: 0, 1: SHIFT[1] * NS, 2: SHIFT[2] * NS}
        for w in clock["workers"]:
            self.assertLessEqual(abs(w["offset_ns"] - truth[w["worker"]]), w["bound_ns"], w)
            self.assertLess(w["bound_ns"], 5_000_000, w)
        self.assertTrue(placed["summary"]["validity"]["valid"], placed["summary"]["validity"])
        lag = placed["summary"]["metrics"]["schedule_lag"]
        self.assertLess(lag["p99"], 500, lag)
        out = subprocess.run([os.path.join(hrtest.BIN, "headroom"), "--url",
                              E.api.base.rsplit("/api/v1", 1)[0], "show", str(placed["id"])],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("placement 1 here, 1 on ag1, 1 on ag2", out.stdout)
        # a row per worker: where it ran, and its offset (ms) near the agent's shift
        rows = [line.split() for line in out.stdout.splitlines()
                if line.startswith(" " * 12) and line.split()[:1] in (["0"], ["1"], ["2"])]
        self.assertEqual([(r[0], r[1]) for r in rows], [("0", "local"), ("1", "ag1"), ("2", "ag2")],
                         out.stdout)
        for r in rows:
            w = clock["workers"][int(r[0])]
            self.assertLessEqual(abs(float(r[2]) - truth[w["worker"]] / 1e6),
                                 float(r[3]) + 0.001, r)

    def test_4_offset_through_a_delaying_relay(self):
        enroll()
        if E.relay is None:
            E.relay = Relay(("10.77.0.1", RELAY_PORT), ("10.77.0.1", PORT))
        p = start_agent(3, "ag3", E.akey, "role=relay", via="10.77.0.1:%d" % RELAY_PORT)
        try:
            wait_connected(["ag3"])
            seen = []
            for attempt in range(4):
                run = E.api.wait(E.api.submit(spec(duration=3, rate=20, placement={
                    "agents": [{"selector": {"role": "relay"}, "workers": 1}]})), 120)
                self.assertEqual(run["state"], "succeeded", run.get("reason"))
                w = run["summary"]["clock"]["workers"][0]
                self.assertTrue(w["measured"], w)
                # the added 2 ms round trip is in the delay, not in the offset
                self.assertGreater(w["delay_ns"], 1_600_000, w)
                self.assertLessEqual(abs(w["offset_ns"] - SHIFT[3] * NS), w["bound_ns"], w)
                seen.append((w["delay_ns"], w["offset_ns"] - SHIFT[3] * NS))
                # the stated claim: within 200 us of the truth, for an
                # estimate whose best exchange had the relay's delay (0.8 to
                # 1.2 ms each way) plus the daemon's and agent's own relaying
                # (about 1 ms here) and no more; a run whose 16 exchanges were
                # all slowed further by a busy machine is made again, and
                # four such fail the test. (Measured here: 8-115 us; the
                # relaying's own asymmetry, not the relay's jitter, is most
                # of it: docs/agents.md "Clocks".) A sanitizer build's
                # relaying is several times slower, and so more lopsided: it
                # is held to the bound only.
                if hrtest.sanitized():
                    break
                if w["delay_ns"] < 4_000_000:
                    self.assertLess(abs(w["offset_ns"] - SHIFT[3] * NS), 200_000, w)
                    break
            else:
                self.fail("no run's best clock exchange came within 4 ms through the relay "
                          "(delay, error: %s): the machine was too busy to judge the claim"
                          % seen)
        finally:
            p.kill()
            p.wait(10)

    def test_4b_dataset_by_content_hash(self):
        enroll()
        ensure_agent(1)
        rows = [{"id": str(i), "conversations": [
            {"from": "human", "value": " ".join("w%d" % j for j in range(3 + i))},
            {"from": "gpt", "value": "r1 r2 r3"}]} for i in range(20)]
        st, ds, _ = E.api.call("POST", "/datasets?format=sharegpt&name=agents",
                               raw=json.dumps(rows).encode())
        self.assertEqual(st, 201, ds)
        sp = spec(duration=2, rate=20, placement={
            "agents": [{"selector": {"role": "load"}, "workers": 1}]})
        sp["workload"] = {"kind": "dataset", "dataset": {"id": ds["id"]}}
        cached = os.path.join(E.tmp.name, "cache1", "files", ds["sha256"])
        for k in range(2):  # asked for once, then taken from the cache
            rid = E.api.submit(sp)
            if k == 0:  # a connection with no worker in the run is not served
                deadline = time.time() + 10 * hrtest.time_scale()
                while (E.api.call("GET", "/runs/%d" % rid)[1]["state"] != "running"
                       and time.time() < deadline):
                    time.sleep(0.05)
                self.assertEqual(self.nosy_fetch(ds["sha256"]), "missing")
            run = E.api.wait(rid, 120)
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            self.assertTrue(os.path.exists(cached))
            isl = {r["isl"] for r in records(run["id"]) if r["worker"] == 0}
            self.assertTrue(isl <= {3 + i for i in range(20)}, isl)
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            log = f.read()
        self.assertEqual(log.count("fetching file %s" % ds["sha256"][:12]), 1, log)
        # a cached copy damaged on disk: an agent (a new process) hashes it
        # before its first use, removes it and fetches it anew
        with open(cached, "r+b") as f:
            f.write(b"#")
        self.assertEqual(stop_agent(1), 0)
        # a stopped agent says bye: the daemon forgets it without waiting out
        # the 3 s of silence that declare a lost one
        deadline = time.time() + 10 * hrtest.time_scale()
        while time.time() < deadline and "ag1" in connected():
            time.sleep(0.05)
        self.assertNotIn("ag1", connected())
        ensure_agent(1)
        run = E.api.wait(E.api.submit(sp), 120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        import hashlib
        with open(cached, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), ds["sha256"])
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            log = f.read()
        self.assertIn("the cached file %s... does not have its SHA-256" % ds["sha256"][:12], log)
        self.assertEqual(log.count("fetching file %s" % ds["sha256"][:12]), 2, log)

    def nosy_fetch(self, sha):
        """An enrolled connection without workers asks for a file: the type
        of the daemon's answer."""
        s = self.curve_dealer()
        hello = {"type": "hello", "protocol": 1, "worker_protocol": 2, "version": VERSION,
                 "name": "nosy", "host": "h", "cores": 1, "labels": {}, "pid": 1}
        s.send_multipart([b"c", json.dumps(hello).encode()])
        deadline = time.time() + 10 * hrtest.time_scale()
        asked = False
        while time.time() < deadline:
            if not s.poll(200):
                continue
            m = s.recv_multipart()
            if m[0] == b"b":
                return "chunk"
            o = json.loads(m[1])
            if o["type"] == "welcome" and not asked:
                s.send_multipart([b"c", json.dumps({"type": "fetch",
                                                    "sha256": sha}).encode()])
                asked = True
            elif o["type"] in ("missing", "refuse"):
                return o["type"]
        return "no answer"

    def test_4c_tokenizer_by_content_hash(self):
        enroll()
        ensure_agent(1)
        from test_profile import byte_tokenizer
        path = os.path.join(E.tmp.name, "tokenizer.json")
        with open(path, "w") as f:
            json.dump(byte_tokenizer(), f)
        sp = spec(duration=2, rate=20, placement={
            "agents": [{"selector": {"role": "load"}, "workers": 1}]})
        sp["workload"]["tokenizer"] = path
        sp["workload"]["token_count"] = {"isl": "tokenizer"}
        run = E.api.wait(E.api.submit(sp), 120)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        import hashlib
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        self.assertTrue(os.path.exists(os.path.join(E.tmp.name, "cache1", "files", sha)))
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            self.assertIn("fetching file %s" % sha[:12], f.read())
        # exact token lengths by the tokenizer, on the agent too
        self.assertEqual({r["isl"] for r in records(run["id"])}, {8})

    def test_4d_back_pressure_over_a_stalling_link(self):
        """A link that stops taking the agent's bytes for 1.5 s mid-run: the
        agent (its queue cut to 2 messages, its send buffer to 8 KiB) stops reading its worker rather
        than dropping anything, and every record arrives afterwards."""
        enroll()
        relay = Relay(("10.77.0.1", RELAY_PORT + 1), ("10.77.0.1", PORT), delay=0,
                      jitter=0, rcvbuf=16384)
        log = os.path.join(E.tmp.name, "agent4.log")
        p = start_agent(4, "ag4", E.akey, "role=stall", via="10.77.0.1:%d" % (RELAY_PORT + 1),
                        extra=("--queue", "2", "--send-buffer", "8192"))
        try:
            wait_connected(["ag4"])
            sp = spec(duration=5, rate=800, placement={
                "agents": [{"selector": {"role": "stall"}, "workers": 1}]})
            sp["workload"]["osl"] = {"mean": 48, "stddev": 0}
            sp["workload"]["isl"] = {"mean": 32, "stddev": 0}
            rid = E.api.submit(sp)
            deadline = time.time() + 60 * hrtest.time_scale()
            while time.time() < deadline:
                st, run, _ = E.api.call("GET", "/runs/%d" % rid)
                if run["state"] != "queued" and (run.get("progress") or {}).get("sent", 0) > 400:
                    break
                time.sleep(0.05)
            relay.stall_up(1.5)
            run = E.api.wait(rid, 120)
            self.assertEqual(run["state"], "succeeded", run.get("reason"))
            with open(log) as f:
                text = f.read()
            # the stall reached the agent: its link stopped taking messages
            self.assertRegex(text, r"the link to the daemon took no messages for \d+ ms")
            self.assertNotIn("cannot relay", text)
            # nothing lost: every request of the schedule is there, once,
            # to its end (the runner also checks each worker's DONE count)
            recs = records(rid)
            self.assertEqual(sorted(r["req_id"] for r in recs), list(range(len(recs))))
            self.assertGreater(len(recs), 3000)
            self.assertGreater(max(r["intended_ns"] for r in recs), 4.9 * NS)
        finally:
            p.kill()
            p.wait(10)
            relay.close()

    def lose_agent_mid_run(self, policy, how):
        enroll()
        ensure_agent(1)
        ensure_agent(2)
        pl = {"local": 1, "agents": [{"selector": {"role": "load"}, "workers": 1}]}
        if policy:
            pl["on_agent_loss"] = policy
        rid = E.api.submit(spec(duration=12, rate=40, placement=pl))
        E.api.wait(rid, 60, states=("running",))
        time.sleep(3)
        t_lost = time.monotonic()
        how()
        return rid, t_lost

    def test_5_agent_killed_fails_the_run(self):
        rid, t_lost = self.lose_agent_mid_run(None, lambda: kill_agent(2))
        run = E.api.wait(rid, 60)
        ended = time.monotonic()
        self.assertEqual(run["state"], "failed")
        self.assertIn("agent 'ag2'", run["reason"])
        self.assertIn("lost", run["reason"])
        # detected within seconds, long before the run's 12 s were up
        self.assertLess(ended - t_lost, 8 * hrtest.time_scale())
        recs = records(rid)
        self.assertTrue(any(r["worker"] == 2 for r in recs), "ag2's records were kept")
        self.assertEqual(len(recs), len({(r["worker"], r["req_id"]) for r in recs}))

    def test_6_agent_killed_run_degrades(self):
        enroll()
        ensure_agent(2)
        old = connected()["ag2"]["connected_at"]
        rid, t_lost = self.lose_agent_mid_run("degrade", lambda: kill_agent(2))
        # the agent comes back during the run (a new connection, once the
        # lost one is dropped): nothing of it is counted twice
        deadline = time.time() + 20 * hrtest.time_scale()
        while time.time() < deadline and "ag2" in connected():
            time.sleep(0.1)
        ensure_agent(2)
        self.assertNotEqual(connected()["ag2"]["connected_at"], old)
        self.assertEqual(E.api.call("GET", "/runs/%d" % rid)[1]["state"], "running",
                         "the agent came back while the run went on")
        run = E.api.wait(rid, 90)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        check_schema("PlacementSummary", run["summary"]["placement"])
        lost = run["summary"]["placement"]["lost"]
        self.assertEqual([x["worker"] for x in lost], [2])
        self.assertEqual(lost[0]["agent"], "ag2")
        self.assertFalse(run["summary"]["validity"]["valid"])
        reasons = [x["code"] for x in run["summary"]["validity"]["reasons"]]
        self.assertIn("agent_lost", reasons)
        recs = records(rid)
        self.assertEqual(len(recs), len({(r["worker"], r["req_id"]) for r in recs}))
        w2 = [r for r in recs if r["worker"] == 2]
        self.assertTrue(w2, "the lost worker's records received are kept")
        # the others went on to the end of the schedule
        last = max(r["intended_ns"] for r in recs if r["worker"] == 1)
        self.assertGreater(last, 10 * NS)
        self.assertLess(max(r["intended_ns"] for r in w2), 8 * NS)

    def test_6b_link_flap_rides_through(self):
        """A link down for half a second mid-run (TCP retransmits; no
        connection is lost): the run finishes with every record, once."""
        rid, _ = self.lose_agent_mid_run(None, lambda: (
            sh("ip link set hv2 down"), time.sleep(0.5), sh("ip link set hv2 up")))
        run = E.api.wait(rid, 90)
        self.assertEqual(run["state"], "succeeded", run.get("reason"))
        recs = records(rid)
        self.assertEqual(sorted(r["req_id"] for r in recs), list(range(len(recs))))
        self.assertGreater(max(r["intended_ns"] for r in recs if r["worker"] == 2), 11 * NS)
        # through a 12 s run the agent's clock was measured again (a burst
        # every 5 s): the drift is known, the timeline's bound holds the truth
        w = [x for x in run["summary"]["clock"]["workers"] if x["worker"] == 2][0]
        self.assertGreaterEqual(w["bursts"], 2, w)
        self.assertIsNotNone(w["drift_ppm"], w)
        self.assertLessEqual(abs(w["offset_ns"] - SHIFT[2] * NS), w["bound_ns"], w)

    def test_7_cut_link_detected(self):
        rid, t_lost = self.lose_agent_mid_run(None, lambda: sh("ip link del hv2"))
        try:
            run = E.api.wait(rid, 60)
            ended = time.monotonic()
            self.assertEqual(run["state"], "failed")
            self.assertIn("no heartbeat", run["reason"])
            self.assertLess(ended - t_lost, 8 * hrtest.time_scale())
        finally:
            kill_agent(2)
            make_agent_ns(2)

    def test_9_enrolment_from_the_command_line(self):
        """headroomd agent enroll / list / revoke on the running daemon's
        data directory: an agent enrolled so connects, is listed, and a
        revoked one is dropped; bad input is refused naming the option."""
        d = os.path.join(E.tmp.name, "data")
        prog = os.path.join(hrtest.BIN, "headroomd")
        prefix = os.path.join(E.tmp.name, "cli")
        sh("%s keygen %s" % (os.path.join(hrtest.BIN, "headroom-agent"), prefix))
        with open(prefix + ".pub") as f:
            pub = f.read().strip()

        def cli(*args):
            return subprocess.run([prog, "agent"] + list(args), capture_output=True,
                                  text=True, timeout=60)
        r = cli("enroll", "--data", d, "--name", "clipool", "--key", pub, "--labels",
                "role=cli,zone=z1")
        self.assertEqual(r.returncode, 0, r.stderr)
        for bad, word in ((["--name", "clipool2", "--key", "short"], "key"),
                          (["--name", "bad name!", "--key", pub], "name"),
                          (["--name", "clipool", "--key", pub], "clipool"),
                          (["--name", "clipool3", "--key", pub, "--labels", "nokey"],
                           "labels")):
            r = cli("enroll", "--data", d, *bad)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn(word, r.stderr, (bad, r.stderr))
        r = cli("list", "--data", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("clipool", r.stdout)
        self.assertIn(pub, r.stdout)
        p = start_agent(1, "agcli", prefix, "role=cli")
        try:
            wait_connected(["agcli"])
            st, body, _ = E.api.call("GET", "/agents")
            pool = [a for a in body["agents"] if a["name"] == "clipool"]
            self.assertEqual(len(pool), 1, body)
            self.assertEqual(pool[0]["labels"], {"role": "cli", "zone": "z1"})
            r = cli("revoke", "--data", d, "clipool")
            self.assertEqual(r.returncode, 0, r.stderr)
            r = cli("revoke", "--data", d, "clipool")
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("clipool", r.stderr)
            self.assertNotIn("clipool", cli("list", "--data", d).stdout)
            # the running daemon drops the revoked key's connection
            deadline = time.time() + 15 * hrtest.time_scale()
            while time.time() < deadline and "agcli" in connected():
                time.sleep(0.2)
            self.assertNotIn("agcli", connected())
        finally:
            p.kill()
            p.wait(10)

    def test_8_revoked_agent_dropped(self):
        enroll()
        ensure_agent(1)
        st, _, _ = E.api.call("DELETE", "/agents/loadpool")
        self.assertEqual(st, 204)
        deadline = time.time() + 10 * hrtest.time_scale()
        while time.time() < deadline and "ag1" in connected():
            time.sleep(0.2)
        self.assertNotIn("ag1", connected())
        st, body, _ = E.api.call("GET", "/agents")
        self.assertEqual([a["name"] for a in body["agents"]], [])
        # and its key is refused from then on
        time.sleep(3)
        self.assertNotIn("ag1", connected())
        with open(os.path.join(E.tmp.name, "agent1.log")) as f:
            self.assertIn("enrolment was revoked", f.read())
        # a run that needs it cannot start, and says why
        run = E.api.wait(E.api.submit(spec(duration=1, placement={
            "agents": [{"selector": {"role": "load"}, "workers": 1}]})), 60)
        self.assertEqual(run["state"], "failed")
        self.assertIn("no connected agent matches", run["reason"])

if __name__ == "__main__":
    unittest.main()
