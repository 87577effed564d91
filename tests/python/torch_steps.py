# SPDX-License-Identifier: Apache-2.0
"""torch_steps.py — a child process for test_py_torch.py: a tiny torch model
run step by step under servprof, as a serving loop would.

    torch_steps.py api STEPS       servprof.start(), STEPS steps, servprof.stop()
    torch_steps.py toggle CYCLES   collection switched on and off CYCLES times by
                                   editing the config file while a loop steps
    torch_steps.py until LIMIT_S   steps while the session the config file started
                                   runs (it has a timelimit), at most LIMIT_S seconds

Each step is one `forward` span (domain Execute) around the model, then
servprof.step(). Prints one JSON line: the session folders used.
"""

import json
import os
import sys
import threading
import time

from support import sp_testlib  # noqa: F401  (the checkout's python/ first on sys.path)
import servprof

try:
    import torch
except ImportError:
    torch = None


def make_model():
    if torch is None:
        return lambda: None
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(2, 16)
    return lambda: m(x)


def one_step(run):
    with servprof.span("forward", domain="Execute"):
        run()
    servprof.step()


def api(steps):
    run = make_model()
    servprof.start()
    d = servprof.session_dir()
    for _ in range(steps):
        one_step(run)
    servprof.stop()
    print(json.dumps({"sessions": [d]}))


def set_enable(cfg, value):
    with open(cfg) as f:
        c = json.load(f)
    c["enable"] = value
    with open(cfg + ".tmp", "w") as f:
        json.dump(c, f)
    os.replace(cfg + ".tmp", cfg)


def wait_for(cond, what, limit=20.0):
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            raise SystemExit("timed out waiting for " + what)
        time.sleep(0.005)  # polling a condition, bounded


def toggle(cycles):
    """The loop steps on the main thread; another thread edits the file and
    waits (bounded) for the profiler to follow each edit."""
    from servprof import _torch
    cfg = os.environ["SERVICE_PROF_CONFIG_PATH"]
    run = make_model()
    done = threading.Event()
    sessions = []
    errors = []

    def driver():
        try:
            for _ in range(cycles):
                set_enable(cfg, 1)
                wait_for(lambda: _torch.controller.prof is not None and
                         _torch.controller.steps >= 3, "the torch profiler to run 3 steps")
                sessions.append(servprof.session_dir())
                set_enable(cfg, 0)
                wait_for(lambda: _torch.controller.prof is None, "the torch profiler to stop")
        except BaseException as e:
            errors.append(repr(e))
        finally:
            done.set()

    servprof.init()
    t = threading.Thread(target=driver)
    t.start()
    end = time.monotonic() + 120
    while not done.is_set() and time.monotonic() < end:
        one_step(run)
        time.sleep(0.002)  # the loop's pace, not a synchronisation
    t.join(10)
    _torch.controller.wait_written()
    print(json.dumps({"sessions": sessions, "errors": errors}))


def until(limit_s):
    from servprof import _torch
    run = make_model()
    servprof.init()
    d = servprof.session_dir()
    end = time.monotonic() + limit_s
    n = 0
    while servprof.is_enabled() and time.monotonic() < end:
        one_step(run)
        n += 1
        time.sleep(0.01)  # the loop's pace
    one_step(run)  # the first step after the stop: the profiler follows
    _torch.controller.wait_written()
    print(json.dumps({"sessions": [d], "steps": n, "running": _torch.controller.prof is not None}))


if __name__ == "__main__":
    {"api": api, "toggle": toggle, "until": until}[sys.argv[1]](int(sys.argv[2]))
