# SPDX-License-Identifier: Apache-2.0
"""test_metrics_python.py — live metrics from a Python process.

The PyTorch example server (examples/python-engine/engine.py, recording
through the ctypes binding) runs on 127.0.0.1 (any free port) with
"metric_enable": 1 and tracing off, and servprof-load sends it requests.
While the engine still runs, `servprof metrics dump` must show every
request servprof-load counted (outcome "ok", the engine's httpRes
attribute), as many TTFT and queue-time observations, batch sizes and no
dropped record; after SIGTERM the file counts as one dead process with the
same totals, and prof_dir holds only the metrics folder (no trace).

Every wait is bounded and waits on a condition (the dump's values), never
on time. Skipped, saying why, when python3-torch or python3-aiohttp is
missing (the engine needs both).
"""

import os
import time
import unittest

from support import sp_testlib as T
# The engine as a child process, and the skip when torch/aiohttp is missing:
# the same as the engine's own test.
from support.py_engine import NEEDS, Server

CLI = os.environ["SERVPROF_BIN"]
# The labels the engine records: servprof.set_process_name("python-engine")
# and servprof.meta("model_name", "tiny-torch-decoder") in engine.py main().
LABELS = 'role="python-engine",model_name="tiny-torch-decoder"'
REQUESTS = 24


def series(text, name):
    """The value of the series named exactly name (with its labels) in a
    Prometheus text exposition, or None."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


@NEEDS
class PythonEngine(unittest.TestCase):

    def dump(self, cfg):
        return T.run([CLI, "metrics", "dump", "-c", cfg], timeout=60).stdout

    def dump_when(self, cfg, ready, what):
        """The first dump for which ready(text) holds; fails after a bound."""
        end = time.monotonic() + 60 * T.SLACK
        text = self.dump(cfg)
        while not ready(text) and time.monotonic() < end:
            time.sleep(0.1)  # polling a condition, bounded
            text = self.dump(cfg)
        self.assertTrue(ready(text), "%s never held; last dump:\n%s" % (what, text[:3000]))
        return text

    def check_totals(self, text, sent):
        def value(name):
            v = series(text, name)
            self.assertIsNotNone(v, "no %s in:\n%s" % (name, text[:3000]))
            return v
        self.assertEqual(value('servprof_requests_total{%s,outcome="ok"}' % LABELS), sent)
        self.assertIsNone(series(text, 'servprof_requests_total{%s,outcome="unknown"}' % LABELS))
        self.assertEqual(value("servprof_time_to_first_token_seconds_count{%s}" % LABELS), sent)
        self.assertEqual(value("servprof_request_queue_time_seconds_count{%s}" % LABELS), sent)
        self.assertGreater(value("servprof_iteration_batch_size_count{%s}" % LABELS), 0)
        self.assertEqual(value("servprof_records_dropped_total{%s}" % LABELS), 0)

    def test_engine_metrics(self):
        d = T.tmpdir(self)
        prof = os.path.join(d, "prof")
        cfg = T.make_config(d, enable=0, metric_enable=1)
        engine = Server(self, cfg)
        summary = engine.load("--requests", str(REQUESTS), "--rate", "40", "--seed", "7")
        sent = summary["ok"]
        self.assertEqual(sent, REQUESTS, summary)

        # Live: the process still runs; values appear within a publish or two.
        # Histograms are observed one consumer pass after the counters, so
        # wait for the last of them.
        ttft = "servprof_time_to_first_token_seconds_count{%s}" % LABELS
        queue = "servprof_request_queue_time_seconds_count{%s}" % LABELS
        text = self.dump_when(cfg, lambda t: series(t, ttft) == sent and series(t, queue) == sent,
                              "TTFT and queue-time counts == %d while the engine runs" % sent)
        self.check_totals(text, sent)
        self.assertEqual(series(text, 'servprof_metrics_processes{state="live"}'), 1)
        self.assertEqual(series(text, 'servprof_metrics_processes{state="dead"}'), 0)

        rc, out, err = engine.stop()
        self.assertEqual(rc, 0, err)
        self.assertIn("served %d requests" % sent, out)

        # Exited: its file holds the final values and counts as dead.
        text = self.dump(cfg)
        self.check_totals(text, sent)
        self.assertEqual(series(text, 'servprof_metrics_processes{state="live"}'), 0)
        self.assertEqual(series(text, 'servprof_metrics_processes{state="dead"}'), 1)
        # Tracing was off: no store, no trace file, only the metrics folder.
        self.assertEqual(sorted(os.listdir(prof)), ["metrics"])
        self.assertEqual(T.stores(prof), [])


if __name__ == "__main__":
    unittest.main()
