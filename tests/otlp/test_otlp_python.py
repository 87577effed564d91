# SPDX-License-Identifier: Apache-2.0
"""test_otlp_python.py — the Python binding's trace context: a child process
imports servprof (this checkout's package, the build's libservprof.so), gives
a request a traceparent with servprof.trace_context, records it, asks for the
next hop's header with servprof.trace_outgoing and shuts down; the receiver
must get the llm_request span in the caller's trace, under the caller's span,
with the id the outgoing header named. A B3 header and an invalid header too.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    from otlp_receiver import Receiver
except Exception as e:
    print("SKIP: %s" % e)
    sys.exit(77)

CHILD = r'''
import sys
import servprof
tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
assert servprof.trace_context("py-1", tp, "k=v")
assert servprof.trace_context("py-2", None, b3="80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1")
assert not servprof.trace_context("py-3", "not a header")
for rid in ("py-1", "py-2", "py-3"):
    servprof.event("httpReq", domain="Request", rid=rid)
    servprof.event("httpRes", domain="Request", rid=rid, outcome="ok")
print(servprof.trace_outgoing("py-1", tp))
servprof.shutdown()
'''


@unittest.skipIf(os.environ.get("SERVPROF_SANITIZE"), "loads libservprof.so into Python")
class PythonBinding(unittest.TestCase):
    def test_trace_context_from_python(self):
        rx = Receiver().start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
            env.update(MS_TRACE_ENABLE="1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=rx.url,
                       OTEL_BSP_SCHEDULE_DELAY="50", PYTHONPATH=os.path.join(HERE, "..", "..", "python"),
                       SERVICE_PROF_CONFIG_PATH=os.path.join(tempfile.mkdtemp(), "c.json"))
            p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = p.stdout.strip().splitlines()[-1]
        finally:
            rx.stop()
        got = {}
        for _, _, s in rx.spans():
            if s.name == "llm_request":
                a = {kv.key: kv.value for kv in s.attributes}
                got[a["gen_ai.request.id"].string_value] = s
        self.assertEqual(sorted(got), ["py-1", "py-2"])  # py-3: no valid context, no auto trace
        s = got["py-1"]
        self.assertEqual(s.trace_id.hex(), "0af7651916cd43dd8448eb211c80319c")
        self.assertEqual(s.parent_span_id.hex(), "b7ad6b7169203331")
        self.assertEqual(s.trace_state, "k=v")
        self.assertEqual(out, "00-0af7651916cd43dd8448eb211c80319c-%s-01" % s.span_id.hex())
        self.assertEqual(got["py-2"].trace_id.hex(), "80f198ee56343ba864fe8b2a57d3eff7")
        self.assertEqual(got["py-2"].parent_span_id.hex(), "e457b5a2e4d86bd1")


if __name__ == "__main__":
    unittest.main()
