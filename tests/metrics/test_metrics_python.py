# SPDX-License-Identifier: Apache-2.0
"""test_metrics_python.py — live metrics from a Python process: the asyncio
example engine (examples/python-engine, recording through the ctypes
binding) runs with "metric_enable": 1 and tracing off; `servprof metrics
dump` then shows every request, its TTFT and the batches, and no trace
was written."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ["SERVPROF_BIN"]
ENGINE = os.path.join(SOURCE, "examples", "python-engine", "engine.py")


class PythonEngine(unittest.TestCase):
    def test_engine_metrics(self):
        work = tempfile.mkdtemp(prefix="sp-mpy-")
        self.addCleanup(shutil.rmtree, work, True)
        cfg = os.path.join(work, "prof.json")
        prof = os.path.join(work, "prof")
        with open(cfg, "w") as f:
            json.dump({"enable": 0, "metric_enable": 1, "prof_dir": prof}, f)
        env = dict(os.environ, SERVICE_PROF_CONFIG_PATH=cfg,
                   PYTHONPATH=os.path.join(SOURCE, "python"))
        n = 24
        p = subprocess.run([sys.executable, "-B", ENGINE, "--requests", str(n), "--seed", "7"],
                           env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("served %d requests" % n, p.stdout)
        # The process has exited: its file holds the final values.
        text = subprocess.run([CLI, "metrics", "dump", "-c", cfg], capture_output=True,
                              text=True, timeout=60).stdout
        lab = '{role="python-engine",model_name="toy-sleep-model"'

        def value(series):
            for line in text.splitlines():
                if line.startswith(series + " "):
                    return float(line.split()[-1])
            self.fail("no %s in:\n%s" % (series, text[:2000]))
        # The engine's httpRes names no outcome: all of them count as "unknown".
        self.assertEqual(value("servprof_requests_total" + lab + ',outcome="unknown"}'), n)
        self.assertEqual(value("servprof_time_to_first_token_seconds_count" + lab + "}"), n)
        self.assertEqual(value("servprof_request_queue_time_seconds_count" + lab + "}"), n)
        self.assertGreater(value("servprof_iteration_batch_size_count" + lab + "}"), 0)
        self.assertEqual(value("servprof_records_dropped_total" + lab + "}"), 0)
        self.assertEqual(value('servprof_metrics_processes{state="dead"}'), 1)
        self.assertEqual(sorted(os.listdir(prof)), ["metrics"])


if __name__ == "__main__":
    unittest.main()
