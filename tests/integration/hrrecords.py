"""hrrecords.py - decoder of headroom record batches, for tests.

An independent implementation of the record batch format written down in
api/protocol.md (it does not share code with lib/record.c, so a test that
decodes what a C program encoded checks the two against each other):

    batch   = "HRB" 0x03 count:uvarint record*count
    record  = seq req_id worker session turn phase error isl_src osl_src flags
              http_status intended_ns start_ns headers_ns first_output_ns
              end_ns done_ns isl osl reasoning_tokens
              req_osl usage_isl usage_osl tok_isl tok_osl
              images_in audio_in media_bytes_in images_out bytes_out
              chunks msg_len:uvarint msg_bytes
    chunks  = n:uvarint delta*n   ; zigzag; first delta from start_ns

A version 0x02 batch lacks the five media counts (read as -1). Every count
is checked against the remaining bytes and the bounds of
lib/hrlimits.h; malformed input raises ValueError.
"""

MAX_RECORDS_PER_BATCH = 4096
MAX_CHUNKS_PER_REQUEST = 1000000
MAX_ERROR_MSG = 512
NO_TIME = -1

ERROR_NAMES = ["", "connect", "timeout", "reset", "http_4xx", "http_5xx",
               "http_other", "malformed_stream", "no_content", "cancelled",
               "transport", "rate_limited"]
TOKSRC_NAMES = ["none", "server_usage", "chunks", "requested", "tokenizer"]
PHASE_NAMES = ["warmup", "profiling"]
FLAG_STREAMED = 0x01

UNSIGNED = ["seq", "req_id", "worker", "session", "turn", "phase", "error",
            "isl_src", "osl_src", "flags"]
SIGNED = ["http_status", "intended_ns", "start_ns", "headers_ns",
          "first_output_ns", "end_ns", "done_ns", "isl", "osl",
          "reasoning_tokens", "req_osl", "usage_isl", "usage_osl", "tok_isl", "tok_osl"]
MEDIA = ["images_in", "audio_in", "media_bytes_in", "images_out", "bytes_out"]


class _Reader:
    def __init__(self, buf):
        self.buf = bytes(buf)
        self.pos = 0

    def left(self):
        return len(self.buf) - self.pos

    def uvarint(self):
        value = 0
        shift = 0
        while True:
            if self.pos >= len(self.buf):
                raise ValueError("truncated varint at byte %d" % self.pos)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise ValueError("varint longer than 64 bits")
        if value >= 1 << 64:
            raise ValueError("varint over 64 bits")
        return value

    def svarint(self):
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def take(self, n):
        if n > self.left():
            raise ValueError("need %d bytes, %d left" % (n, self.left()))
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out


def _record(rd, version):
    r = {}
    for name in UNSIGNED:
        r[name] = rd.uvarint()
    for name in SIGNED:
        r[name] = rd.svarint()
    for name in MEDIA:
        r[name] = rd.svarint() if version >= 3 else -1
    if r["error"] >= len(ERROR_NAMES):
        raise ValueError("error category %d out of range" % r["error"])
    if r["phase"] >= len(PHASE_NAMES):
        raise ValueError("phase %d out of range" % r["phase"])
    for k in ("isl_src", "osl_src"):
        if r[k] >= len(TOKSRC_NAMES):
            raise ValueError("%s %d out of range" % (k, r[k]))
    for k in ("isl", "osl", "reasoning_tokens", "req_osl", "usage_isl", "usage_osl",
              "tok_isl", "tok_osl") + tuple(MEDIA):
        if not -1 <= r[k] <= 2**31 - 1:
            raise ValueError("%s %d out of range" % (k, r[k]))
    if not 0 <= r["http_status"] <= 999:
        raise ValueError("http_status %d out of range" % r["http_status"])
    n = rd.uvarint()
    if n > MAX_CHUNKS_PER_REQUEST or n > rd.left():
        raise ValueError("chunk count %d too large" % n)
    chunks = []
    t = r["start_ns"]
    for _ in range(n):
        t += rd.svarint()
        chunks.append(t)
    r["chunks"] = chunks
    ml = rd.uvarint()
    if ml > MAX_ERROR_MSG:
        raise ValueError("message length %d over %d" % (ml, MAX_ERROR_MSG))
    r["error_msg"] = rd.take(ml).decode("utf-8", "replace")
    r["error_name"] = ERROR_NAMES[r["error"]]
    r["isl_src_name"] = TOKSRC_NAMES[r["isl_src"]]
    r["osl_src_name"] = TOKSRC_NAMES[r["osl_src"]]
    return r


def decode_batch(buf):
    """Returns the list of records (dicts) of one batch."""
    if len(buf) < 4 or bytes(buf[:3]) != b"HRB":
        raise ValueError("bad magic")
    if buf[3] not in (2, 3):
        raise ValueError("unsupported batch version %d" % buf[3])
    rd = _Reader(buf)
    rd.pos = 4
    count = rd.uvarint()
    if count > MAX_RECORDS_PER_BATCH:
        raise ValueError("batch of %d records" % count)
    out = [_record(rd, buf[3]) for _ in range(count)]
    if rd.left():
        raise ValueError("%d trailing bytes" % rd.left())
    return out


def _put_u(out, v):
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return


def encode_batch(records):
    """The inverse, for tests of decoders: records are dicts as returned
    by decode_batch (error_name and the *_name keys are ignored)."""
    out = bytearray(b"HRB\x03")
    _put_u(out, len(records))
    for r in records:
        for name in UNSIGNED:
            _put_u(out, r[name])
        for name in SIGNED + MEDIA:
            v = r.get(name, -1)  # the counts behind isl/osl may be left out: unknown
            _put_u(out, ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1))
        chunks = r.get("chunks", [])
        _put_u(out, len(chunks))
        prev = r["start_ns"]
        for c in chunks:
            d = c - prev
            _put_u(out, ((d << 1) ^ (d >> 63)) & ((1 << 64) - 1))
            prev = c
        msg = r.get("error_msg", "").encode()[:MAX_ERROR_MSG]
        _put_u(out, len(msg))
        out += msg
    return bytes(out)
