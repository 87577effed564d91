# SPDX-License-Identifier: Apache-2.0
"""py_engine.py — the PyTorch example server (examples/python-engine) as a
child process of a test: started on a free port, driven with servprof-load,
stopped with SIGTERM; and NEEDS, the skip when python3-torch or
python3-aiohttp is missing. Used by python/test_py_engine.py and by
metrics/test_metrics_python.py (the same engine behind the metrics
endpoint)."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import unittest
import urllib.request

from support import sp_testlib as T

ENGINE = os.path.join(T.SOURCE, "examples", "python-engine", "engine.py")
LOAD = os.path.join(os.path.dirname(os.environ.get("SERVPROF_BIN", "")), "servprof-load")

try:
    import torch  # noqa: F401
    import aiohttp  # noqa: F401
    MISSING = None
except ImportError as e:
    MISSING = str(e)
NEEDS = unittest.skipIf(MISSING, "python3-torch and python3-aiohttp are needed for the example "
                        "(scripts/install-deps.sh installs them): %s" % MISSING)


class Server:
    """The example as a child process; .port once it listens."""

    def __init__(self, test, cfg, *extra):
        env = dict(os.environ, SERVICE_PROF_CONFIG_PATH=cfg)
        self.p = subprocess.Popen([sys.executable, "-B", ENGINE, "--port", "0", *extra], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.kill)
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        end = time.monotonic() + 60 * T.SLACK
        line = ""
        while time.monotonic() < end and not line:
            if sel.select(timeout=1.0):
                line = self.p.stdout.readline()
                if not line:
                    break
        sel.close()
        if not line.startswith("listening on "):
            self.kill()
            raise AssertionError("the engine did not start: %r\n%s" % (line, self.p.stderr.read()))
        self.port = int(line.rsplit(":", 1)[1])

    def load(self, *args):
        p = T.run([LOAD, "--port", str(self.port), "--vocab", "256", "--prompt-len", "8:24",
                   "--output-len", "4:12", "--shared-prefix", "0", "--quiet",
                   "--summary-json", "-", *args], timeout=120)
        return json.loads(p.stdout.strip().splitlines()[-1])

    def steps(self):
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        with direct.open("http://127.0.0.1:%d/health" % self.port, timeout=30) as r:
            return json.load(r)["steps"]

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=120 * T.SLACK)
        return self.p.returncode, out, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate(timeout=30)
