# SPDX-License-Identifier: Apache-2.0
"""test_dropin_py.py — a Python program using only what the reference's
Python package uses (ctypes, the library by bare name, JSON messages;
dropin_py_scenario.py) records through servprof what dropin_native.c
records through the C API: the same rows, the same reports. And the
package's callback registration works from Python.

Labelled needs_plain: it loads the library into python3.
"""

import ctypes
import json
import os
import sys
import threading
import time
import unittest

import dropin_lib as D

HERE = os.path.dirname(os.path.abspath(__file__))


class PythonPackageWay(unittest.TestCase):

    def test_same_store_and_reports_as_native(self):
        native = D.record(self, [D.NATIVE], "native")
        native2 = D.record(self, [D.NATIVE], "native again")
        py = D.record(self, [sys.executable, "-B", os.path.join(HERE, "dropin_py_scenario.py")],
                      "Python")
        D.assert_same_rows(self, py, native, "Python")
        self.assertEqual(D.T.meta(py).get("model"), "toy-7b")
        self.assertEqual(D.T.meta(py).get("bad_input"), "0")
        by_name = {r["name"]: r["args"] for r in D.T.rows(native)}
        for r in D.T.rows(py):
            self.assertEqual(r["args"], by_name[r["name"]], r["name"])
        want = D.parse(self, native)
        moving = D.moving_columns(want, D.parse(self, native2))
        compared = D.assert_same_reports(self, D.parse(self, py), want, moving, "Python")
        self.assertGreater(compared, 20)

    def test_callbacks_from_python(self):
        """The package registers ctypes callbacks; they run on live
        enable/disable and may call back into the library."""
        code = r'''
import ctypes, json, os, sys, threading, time
lib = ctypes.cdll.LoadLibrary("libms_service_profiler.so")
lib.IsEnable.argtypes = (ctypes.c_ulong,); lib.IsEnable.restype = ctypes.c_bool
lib.GetProfPath.restype = ctypes.c_char_p
seen = []
cond = threading.Condition()
def on(kind):
    def f():
        with cond:
            seen.append((kind, threading.current_thread().ident != MAIN,
                         bool(lib.IsEnable(20)), lib.GetProfPath().decode()))
            cond.notify_all()
    return f
MAIN = threading.current_thread().ident
CB = ctypes.CFUNCTYPE(None)
keep = [CB(on("start")), CB(on("stop"))]
lib.RegisterProfilerStartCallback.argtypes = (CB,)
lib.RegisterProfilerStopCallback.argtypes = (CB,)
lib.RegisterProfilerStartCallback(keep[0])
lib.RegisterProfilerStopCallback(keep[1])
cfg = os.environ["SERVICE_PROF_CONFIG_PATH"]
def write(enable):
    with open(cfg + ".tmp", "w") as f:
        json.dump({"enable": enable, "prof_dir": os.environ["PROF"]}, f)
    os.replace(cfg + ".tmp", cfg)
def wait(n):
    with cond:
        assert cond.wait_for(lambda: len(seen) >= n, timeout=30), seen
write(1); wait(1)
write(0); wait(2)
print(json.dumps(seen))
'''
        d = D.T.tmpdir(self, prefix="servprof-dropin-")
        cfg = D.T.make_config(d, enable=0)
        prof = os.path.join(d, "prof")
        out = D.T.run([sys.executable, "-B", "-c", code],
                      env={"SERVICE_PROF_CONFIG_PATH": cfg, "PROF": prof})
        seen = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertEqual([s[0] for s in seen], ["start", "stop"])
        self.assertTrue(all(s[1] for s in seen), "a callback ran on the main thread: %s" % seen)
        self.assertEqual([s[2] for s in seen], [True, False])
        self.assertTrue(seen[0][3].startswith(prof + os.sep), seen)  # the session folder
        self.assertEqual(seen[1][3], prof)

    def test_one_runtime_with_servprofs_own_api(self):
        """A process using servprof's Python binding and the reference ABI at
        once has one runtime: one session, one store holding both."""
        code = r'''
import ctypes, json, os, sys
sys.path.insert(0, os.path.join(os.environ["SERVPROF_SOURCE"], "python"))
import servprof
from servprof import Level, Profiler
lib = ctypes.cdll.LoadLibrary("libms_service_profiler.so")
lib.MarkEventEx.argtypes = (ctypes.c_char_p,) * 3
lib.IsEnable.argtypes = (ctypes.c_ulong,); lib.IsEnable.restype = ctypes.c_bool
lib.StopServerProfiler.restype = None
assert servprof.start() is True
assert lib.IsEnable(20), "the ABI does not see the session the binding started"
Profiler(Level.INFO).domain("Request").res("r1").event("native")
lib.MarkEventEx(b"dropin", b"Request", json.dumps({"rid": "r1", "type": 0}).encode())
path = servprof.store_path()
lib.StopServerProfiler()  # the ABI stops the binding's session
assert servprof.store_path() is None, "still collecting after StopServerProfiler"
print(path)
'''
        d = D.T.tmpdir(self, prefix="servprof-dropin-")
        cfg = D.T.make_config(d, enable=0)
        out = D.T.run([sys.executable, "-B", "-c", code], env={"SERVICE_PROF_CONFIG_PATH": cfg})
        stores = D.T.stores(d)
        self.assertEqual(len(stores), 1, stores)
        self.assertEqual(stores[0], out.stdout.strip().splitlines()[-1])
        rows = D.T.rows(stores[0])
        self.assertEqual([(r["name"], r["args"]) for r in rows],
                         [("native", '{"type":0,"rid":"r1"}'), ("dropin", '{"type":0,"rid":"r1"}')])


if __name__ == "__main__":
    unittest.main()
