# SPDX-License-Identifier: Apache-2.0
"""otlp_receiver.py — an OTLP/HTTP traces receiver on 127.0.0.1 for the tests.

Every request body is decoded with the official opentelemetry-proto
definitions pinned in tests/otlp/proto (compiled here with Debian's protoc
for python3-protobuf): decoding, not pattern matching. A script of answers
says what the collector does with each POST in turn — "200", "400",
"429:<retry-after>" (the header as given, or "date+N"/"date-N": an
IMF-fixdate N seconds from the moment of answering), "503", "reset" (close the connection with RST before
answering), "stall:<seconds>" (say nothing that long, then close) — and
"200" once the script is used up. What came in is kept: the decoded
requests, their headers, the time of each POST and the client's port (so a
test can count connections).

Importing it raises Unavailable when protoc or the protobuf module is
missing (the tests then skip with ctest's code 77).
"""
import email.utils
import gzip
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "proto")


class Unavailable(Exception):
    pass


def _compile():
    try:
        import google.protobuf  # noqa: F401
    except ImportError as e:
        raise Unavailable("python3-protobuf is not installed (%s)" % e)
    out = tempfile.mkdtemp(prefix="otlp-pb-")
    files = []
    for root, _, names in os.walk(os.path.join(PROTO, "opentelemetry")):
        files += [os.path.relpath(os.path.join(root, n), PROTO) for n in names if n.endswith(".proto")]
    try:
        subprocess.run(["protoc", "-I", PROTO, "--python_out", out] + sorted(files), check=True,
                       capture_output=True, text=True)
    except FileNotFoundError:
        raise Unavailable("protoc is not installed (Debian: protobuf-compiler)")
    except subprocess.CalledProcessError as e:
        raise Unavailable("protoc failed: %s" % e.stderr)
    sys.path.insert(0, out)
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2
    return trace_service_pb2, trace_pb2


trace_service_pb2, trace_pb2 = _compile()


class Receiver:
    """A collector: start(), .url, .requests (decoded), stop()."""

    def __init__(self, script=()):
        self.script = list(script)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.requests = []   # ExportTraceServiceRequest, one per POST answered 200
        self.posts = []      # (time, answer, headers dict, client port, decoded or None)
        self.undecodable = 0
        self.release = threading.Event()  # ends a stall early
        rx = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                with rx.lock:
                    answer = rx.script.pop(0) if rx.script else "200"
                if answer == "reset":
                    # RST instead of FIN: linger 0, then close, before reading
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    rx._note(answer, self, None)
                    self.close_connection = True
                    self.connection.close()
                    return
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    body = b""  # the JS exporter streams its body
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        body += self.rfile.read(size)
                        self.rfile.readline()
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if answer.startswith("stall:"):
                    rx._note(answer, self, None)
                    rx.release.wait(float(answer.split(":")[1]))
                    self.close_connection = True
                    return
                decoded = None
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                try:
                    decoded = trace_service_pb2.ExportTraceServiceRequest()
                    decoded.ParseFromString(body)
                except Exception:
                    decoded = None
                code = int(answer.split(":")[0])
                rx._note(answer, self, decoded)
                if code == 200 and decoded is None:
                    code = 400
                    with rx.lock:
                        rx.undecodable += 1
                self.send_response(code)
                if answer.startswith("429:"):
                    after = answer.split(":", 1)[1]
                    if after.startswith("date"):
                        after = email.utils.formatdate(time.time() + int(after[4:]), usegmt=True)
                    self.send_header("Retry-After", after)
                self.send_header("Content-Type", "application/x-protobuf")
                if code == 200:
                    resp = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                else:
                    resp = b""
                self.send_header("Content-Length", str(len(resp)))
                self.end_headers()
                self.wfile.write(resp)
                if code == 200:
                    with rx.cv:
                        rx.requests.append(decoded)
                        rx.cv.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d/v1/traces" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _note(self, answer, handler, decoded):
        with self.cv:
            self.posts.append((time.monotonic(), answer, dict(handler.headers.items()),
                               handler.client_address[1], decoded))
            self.cv.notify_all()

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def spans(self):
        """Every span received (answered 200), with its resource."""
        out = []
        with self.lock:
            for r in self.requests:
                for rs in r.resource_spans:
                    res = {kv.key: kv.value for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            out.append((res, ss.scope, s))
        return out
