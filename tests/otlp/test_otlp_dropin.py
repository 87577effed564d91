# SPDX-License-Identifier: Apache-2.0
"""test_otlp_dropin.py — requests recorded through the drop-in library
(libms_service_profiler.so, the reference's message API: MarkEventEx with
JSON text, SpanEndEx, the legacy MarkEvent ^key^ form, Link as a type-3
event) are traced over OTLP like native ones: one llm_request span per
request with the message's attributes, its queue and forward times, and the
phase children; the Link joins the engine's id onto the front end's.

The program is Python with ctypes loading the drop-in by path (what the
reference's package does by name); the receiver decodes with the official
.proto files. Labelled needs_plain: it loads the library into python3.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    from otlp_receiver import Receiver  # noqa: F401
except Exception as e:  # protoc or python3-protobuf missing: skip (ctest 77)
    print("SKIP: %s" % e)
    sys.exit(77)

BUILD = os.environ.get("SERVPROF_BUILD", os.path.join(HERE, "..", "..", "build"))
DROPIN = os.path.join(BUILD, "dropin", "libms_service_profiler.so")

PROGRAM = r'''
import ctypes, json, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.MarkEventEx.argtypes = (ctypes.c_char_p,) * 3
lib.MarkEvent.argtypes = (ctypes.c_char_p,)
lib.StartSpanWithName.argtypes = (ctypes.c_char_p,)
lib.StartSpanWithName.restype = ctypes.c_ulonglong
lib.SpanEndEx.argtypes = (ctypes.c_char_p,) * 3 + (ctypes.c_ulonglong,)
def ev(name, domain, **kw):
    lib.MarkEventEx(name.encode(), domain.encode(), json.dumps(kw).encode())
for i in range(3):
    d, e = "d-%d" % i, "e-%d" % i
    ev("httpReq", "Request", rid=d, type=0, max_tokens=16)
    ev("Link", "Request", type=3, **{"from": d, "to": e})
    ev("Enqueue", "Schedule", rid=e, type=0, **{"scope#QueueName": "WAITING", "QueueSize=": 1})
    time.sleep(0.002)
    ev("Dequeue", "Schedule", rid=e, type=0, **{"scope#QueueName": "WAITING", "QueueSize=": 0})
    s = lib.StartSpanWithName(b"forward")
    time.sleep(0.002)
    lib.SpanEndEx(b"forward", b"ModelExecute",
                  json.dumps({"type": 2, "rid": [{"rid": e, "iter": 0}]}).encode(), s)
    time.sleep(0.002)
    # the legacy form: name, domain and attributes inside the message
    lib.MarkEvent(("^name^:^httpRes^,^domain^:^Request^,^rid^:^%s^,^recvTokenSize=^:9,"
                   "^replyTokenSize=^:5,^outcome^:^ok^,^type^:0," % d).encode())
'''


class DropinTraced(unittest.TestCase):
    def test_message_records_make_spans(self):
        if not os.path.exists(DROPIN):
            self.skipTest("no %s" % DROPIN)
        tmp = tempfile.mkdtemp(prefix="otlp-dropin-")
        rx = Receiver([]).start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
            env.update({"MS_TRACE_ENABLE": "1", "MS_PROFILER_AUTO_TRACE": "1",
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rx.url, "PROF_LOG_LEVEL": "INFO",
                        "SERVICE_PROF_CONFIG_PATH": os.path.join(tmp, "config.json"), "HOME": tmp})
            p = subprocess.run([sys.executable, "-B", "-c", PROGRAM, DROPIN], env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr[-3000:])
            spans = [s for _, _, s in rx.spans()]
        finally:
            rx.stop()
        servers = {}
        for s in spans:
            if s.name == "llm_request":
                a = {kv.key: kv.value for kv in s.attributes}
                servers[a["gen_ai.request.id"].string_value] = (s, a)
        self.assertEqual(sorted(servers), ["d-0", "d-1", "d-2"], p.stderr[-2000:])
        for rid, (s, a) in servers.items():
            self.assertEqual(s.kind, 2)  # SERVER
            self.assertEqual(a["gen_ai.usage.prompt_tokens"].int_value, 9)
            self.assertEqual(a["gen_ai.usage.completion_tokens"].int_value, 5)
            self.assertEqual(a["gen_ai.request.max_tokens"].int_value, 16)
            self.assertGreater(a["gen_ai.latency.time_in_queue"].double_value, 0.001)  # via the Link
            self.assertGreater(a["gen_ai.latency.time_in_model_forward"].double_value, 0.001)
            self.assertIn("gen_ai.latency.e2e", a)
            self.assertEqual(s.status.code, 0)
            kids = sorted(k.name for k in spans if k.parent_span_id == s.span_id)
            self.assertEqual(kids, ["decode", "prefill", "queue"], rid)


if __name__ == "__main__":
    unittest.main()
