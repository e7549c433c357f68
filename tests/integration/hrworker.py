"""hrworker.py - shared scaffolding of the worker tests (test_worker.py,
test_worker_shapes.py), which play headroomd's part of api/protocol.md:
where the binaries are, the protocol's message types, a ZeroMQ ROUTER on
an ipc path, headroom-mock on a free port, a threaded HTTP server for
scripted answers, and the check of what the workers wrote to stderr.

Environment: HEADROOM_BIN is the build's bin directory (default:
build/bin of this checkout). Needs Python 3 and python3-zmq.
"""

import http.server
import json
import os
import subprocess
import threading

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("HEADROOM_BIN") or os.path.join(HERE, "..", "..", "build", "bin")
WORKER = os.path.join(BIN, "headroom-worker")
MOCK = os.path.join(BIN, "headroom-mock")

# message types of api/protocol.md (version 2)
(HELLO, SCHEDULE, READY, START, HEARTBEAT, RECORDS, STOP, DONE, FAIL, PHASE_DONE,
 SAMPLE) = range(1, 12)
MS = 1000000


def router(ctx, path):
    """A ROUTER socket of ctx bound to ipc://path; returns (socket, endpoint)."""
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    endpoint = "ipc://" + path
    sock.bind(endpoint)
    return sock, endpoint


def read_stderr(err):
    """Reads and closes the workers' stderr file err; returns the text."""
    err.seek(0)
    text = err.read()
    err.close()
    return text


def assert_no_sanitizer(case, stderr):
    """Fails the test case when a sanitizer reported anything in stderr."""
    for bad in ("Sanitizer", "runtime error:"):
        case.assertNotIn(bad, stderr)


class Mock:
    """headroom-mock on a free port."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([MOCK, "--listen", "127.0.0.1:0", "--quiet"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError("headroom-mock did not start: %r" % line)
        self.url = "http://" + line.split()[-1]

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that keeps connections (HTTP/1.1) and logs nothing."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def json_body(self):
        """The request body, parsed as JSON."""
        n = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(n))


class HttpServer:
    """A threaded HTTP server with handler on a free loopback port, served
    from a daemon thread until close()."""

    def __init__(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ServersMixin:
    """For a test case that keeps the servers it starts in self.servers
    (its tearDown closes them); scripted_class is what scripted() starts."""

    scripted_class = None

    def mock(self, *args):
        m = Mock(*args)
        self.servers.append(m)
        return m

    def scripted(self):
        s = self.scripted_class()
        self.servers.append(s)
        return s
