# SPDX-License-Identifier: Apache-2.0
"""test_hooks_engine.py — the project's PyTorch engine with every servprof
call removed, profiled from a hook file, against the hand-instrumented
engine on the same requests.

The test copies examples/python-engine/engine.py as module engine_nosp
with `import servprof` replaced by a stub whose every call does nothing
(so the copy records nothing by itself — checked), and starts it through
a two-line launcher under `python -m servprof run --hooks
engine_hooks.yaml` (a script run as __main__ is not imported, so its own
functions cannot be hooked: servers are packages, the launcher stands for
their console script). Both engines get the same servprof-load requests,
one at a time (so request i is http-i in both), the two servers running
side by side. `servprof parse` must give
the same request.csv rows — ids, prompt and reply token counts — and a
TTFT for each request, within a wide band around the hand run's
(timings are not compared tightly: the machine is shared).
"""

import os
import re
import selectors
import signal
import statistics
import subprocess
import sys
import time
import unittest

import hooklib as H
from hooklib import T

H.need("yaml", "torch", "aiohttp")

ENGINE = os.path.join(T.SOURCE, "examples", "python-engine", "engine.py")
LOAD = os.path.join(os.path.dirname(os.environ.get("SERVPROF_BIN", "")), "servprof-load")
HOOKS = os.path.join(H.HERE, "engine_hooks.yaml")

STUB = '''
"""Stands in for servprof in the uninstrumented copy: every call does nothing."""
class _Off:
    def __getattr__(self, name):
        return self
    def __call__(self, *a, **kw):
        return self
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False
    def __int__(self):
        return 0
_off = _Off()
Level = _off
Profiler = _off
def __getattr__(name):
    return _off
'''

LAUNCH = "import sys, engine_nosp\nsys.exit(engine_nosp.main(sys.argv[1:]))\n"


def uninstrumented_copy(d):
    with open(ENGINE) as f:
        src = f.read()
    new, n = re.subn(r"try:\n    import servprof\n.*?\nfrom servprof import Level, Profiler\n",
                     "import _noprof as servprof\nfrom _noprof import Level, Profiler\n", src,
                     flags=re.S)
    assert n == 1, "engine.py's import of servprof is not where the test expects it"
    assert "import servprof" not in new
    H.write(d, "engine_nosp.py", new)
    H.write(d, "_noprof.py", STUB)
    return H.write(d, "launch.py", LAUNCH)


class Server:
    def __init__(self, test, argv, env, cwd):
        self.p = subprocess.Popen(argv + ["--port", "0"], env=dict(os.environ, **env), cwd=cwd,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.kill)
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        line, end = "", time.monotonic() + 90 * T.SLACK
        while not line and time.monotonic() < end and self.p.poll() is None:
            if sel.select(timeout=1.0):
                line = self.p.stdout.readline()
        sel.close()
        if not line.startswith("listening on "):
            self.kill()
            raise AssertionError("the engine did not start: %r\n%s" % (line, self.p.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def load(self):
        T.run([LOAD, "--port", str(self.port), "--vocab", "256", "--prompt-len", "8:24",
               "--output-len", "4:12", "--shared-prefix", "0", "--quiet", "--requests", "16",
               "--rate", "50", "--concurrency", "1", "--seed", "7"], timeout=180)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=120 * T.SLACK)
        return self.p.returncode, out, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate(timeout=30)


class HookedEngine(unittest.TestCase):

    def finish(self, s, d):
        rc, out, err = s.stop()
        self.assertEqual(rc, 0, err)
        self.assertIn("served 16 requests", out)
        prof = os.path.join(d, "prof")
        T.run([os.environ["SERVPROF_BIN"], "parse", "-i", prof, "-o", os.path.join(d, "out")],
              timeout=120)
        return T.read_csv(os.path.join(d, "out", "request.csv")), H.records(prof), err

    def test_same_requests_as_the_hand_instrumented_engine(self):
        # Both servers run at once and get their loads back to back, so
        # their timings come from the same minute of the machine's load
        # (run one after the other, a neighbour's build once made the
        # hooked forward spans look 3x the hand run's:
        # bench/bench_hooked_engine.py measures them side by side).
        hand_d, hook_d = T.tmpdir(self), T.tmpdir(self)
        hand_s = Server(self, [H.PY, "-B", ENGINE],
                        {"SERVICE_PROF_CONFIG_PATH": T.make_config(hand_d, enable=1)}, hand_d)
        launch = uninstrumented_copy(hook_d)
        hook_s = Server(self, H.run_cmd([HOOKS], H.PY, "-B", launch),
                        H.env(hook_d, T.make_config(hook_d, enable=1)), hook_d)
        hand_s.load()
        hook_s.load()
        hand, hand_rows, _ = self.finish(hand_s, hand_d)
        hooked, rows, err = self.finish(hook_s, hook_d)
        self.assertRegex(err, r"engine_hooks.yaml: 8 hooks: 0 bound, 8 waiting")
        self.assertNotIn("WARNING", err)

        names = {r["name"] for r in rows}
        self.assertEqual(names, {"httpReq", "Link", "tokenize", "Enqueue", "BatchSchedule",
                                 "forward", "modelExec", "KVCacheStatus", "httpRes"})
        self.assertEqual(len(T.stores(os.path.join(hook_d, "prof"))), 1)

        def key(rows):
            return sorted((r["http_rid"], r["recv_token_size"], r["reply_token_size"]) for r in rows)
        self.assertEqual(len(hooked), 16)
        self.assertEqual(key(hooked), key(hand))
        for r in hooked:
            ttft = float(r["first_token_latency(ms)"])
            self.assertTrue(0 < ttft <= float(r["execution_time(ms)"]), r)
        hand_ttft = [float(r["first_token_latency(ms)"]) for r in hand]
        med = statistics.median(float(r["first_token_latency(ms)"]) for r in hooked)
        sys.stderr.write("TTFT ms: hooked median %.2f; hand median %.2f, range %.2f..%.2f\n" % (
            med, statistics.median(hand_ttft), min(hand_ttft), max(hand_ttft)))
        self.assertTrue(min(hand_ttft) / 4 <= med <= max(hand_ttft) * 4,
                        (med, min(hand_ttft), max(hand_ttft)))
        batches = T.read_csv(os.path.join(hook_d, "out", "batch.csv"))
        types = " ".join(b["batch_type"] for b in batches)
        self.assertIn("Prefill", types)
        self.assertIn("Decode", types)


if __name__ == "__main__":
    H.main()
