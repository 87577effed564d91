# SPDX-License-Identifier: Apache-2.0
"""rtlib.py — helpers for the runtime's integration tests: a driven
rt_probe process, config files, waits with sanitizer-aware bounds."""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from support.configfile import write_config  # noqa: F401  (re-exported for the runtime tests)

BUILD = os.environ.get("SERVPROF_BUILD", "")
BIN = os.environ.get("SERVPROF_BIN", os.path.join(BUILD, "bin", "servprof"))
PROBE = os.path.join(BUILD, "tests", "rt_probe")
SANITIZE = os.environ.get("SERVPROF_SANITIZE", "")
SLACK = 10.0 if SANITIZE else 1.0

# Forking a multi-threaded process and going on in the child is outside
# what the sanitizers support: gcc 12's ASan allocator locks are not taken
# around fork (a child forked while another thread is in malloc deadlocks in
# its first malloc) and TSan refuses to start threads after such a fork
# ("not supported. Dying"). The plain build runs the fork tests.
ASAN_FORK_SKIP = unittest.skipIf(SANITIZE != "",
                                 "fork of a threaded process: unsupported under sanitizers")


def bound(seconds):
    """A wall-clock bound, with 10x slack under sanitizers."""
    return seconds * SLACK


class Probe:
    """One rt_probe process: stdout lines in a queue, stderr in a file."""

    def __init__(self, tmp, config_path=None, env=None, name="probe"):
        e = dict(os.environ)
        e["HOME"] = tmp
        e["PROF_LOG_LEVEL"] = "DEBUG"
        e.pop("SERVICE_PROF_CONFIG_PATH", None)
        if config_path is not None:
            e["SERVICE_PROF_CONFIG_PATH"] = config_path
        if env:
            e.update(env)
        self.log_path = os.path.join(tmp, name + ".stderr")
        self._err = open(self.log_path, "wb")
        self.p = subprocess.Popen([PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self._err, env=e, cwd=tmp)
        self.lines = queue.Queue()
        self.state = "OFF"
        self.on_line = None
        threading.Thread(target=self._reader, daemon=True).start()
        first = self.expect("ready", 10)
        self.pid = int(first.split()[1])

    def _reader(self):
        for raw in self.p.stdout:
            self.lines.put(raw.decode(errors="replace").rstrip("\n"))
        self.lines.put(None)

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def expect(self, prefix, timeout=5.0, track=True):
        """Next line starting with prefix (ON/OFF lines update .state)."""
        deadline = time.monotonic() + bound(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no '%s' line from the probe within %.1fs; log:\n%s"
                                     % (prefix, bound(timeout), self.log()))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError("probe ended before '%s'; log:\n%s" % (prefix, self.log()))
            if line.startswith("ON ") or line == "OFF":
                self.state = line
            if line.startswith(prefix):
                return line

    def wait_state(self, on, timeout=2.0):
        """Waits until the probe reports ON (on=True) or OFF; returns the line."""
        if (self.state != "OFF") == on:
            return self.state
        return self.expect("ON " if on else "OFF", timeout)

    def ticks(self):
        """How many ticks the probe's recorder has made so far."""
        self.send("ticks")
        return int(self.expect("ticks ").split()[1])

    def wait_ticks(self, more, timeout=5.0):
        """Waits until the recorder has made `more` ticks after this call:
        proof that it ran (e.g. while collection is off)."""
        target = self.ticks() + more
        if not wait_until(lambda: self.ticks() >= target, bound(timeout), step=0.01):
            raise AssertionError("the probe made fewer than %d ticks in %.1fs" % (more, bound(timeout)))

    def passes(self):
        """How many passes the library's config watcher has finished."""
        self.send("passes")
        return int(self.expect("passes ").split()[1])

    def wait_watched(self, timeout=5.0):
        """Waits until the config watcher has finished two passes after this
        call. A pass looks at the file (reading it when it changed) and then
        checks the limits; the pass running at the call may have begun before
        the test's last action, the next one began after it. So on return the
        watcher has seen that action: what it did about it is now visible,
        and a "nothing changed" assertion means something."""
        target = self.passes() + 2
        if not wait_until(lambda: self.passes() >= target, bound(timeout), step=0.01):
            raise AssertionError("the config watcher made fewer than 2 passes in %.1fs; log:\n%s"
                                 % (bound(timeout), self.log()))

    def now(self):
        """The session as the probe sees it now: "ON <dir> <store>" or "OFF"
        (.state only follows the lines read so far)."""
        self.send("state")
        return self.expect("state ")[len("state "):]

    def session(self):
        parts = self.state.split(" ")
        return (parts[1], parts[2]) if len(parts) == 3 else (None, None)

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def quit(self, timeout=10.0):
        try:
            self.send("quit")
        except BrokenPipeError:
            pass
        rc = self.p.wait(timeout=bound(timeout))
        self._err.close()
        return rc

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self._err.close()




def cli(*args):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=60)


def sessions(prof_dir):
    """Session folder names (not hidden files) in prof_dir."""
    if not os.path.isdir(prof_dir):
        return []
    return sorted(n for n in os.listdir(prof_dir)
                  if not n.startswith(".") and os.path.isdir(os.path.join(prof_dir, n)))


def wait_until(cond, timeout, step=0.005):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


class RuntimeCase(unittest.TestCase):
    """A temp folder per test (HOME too), probes killed at the end."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sp_rt_")
        self.prof = os.path.join(self.tmp, "prof")
        self.cfg = os.path.join(self.tmp, "servprof.json")
        self.probes = []

    def tearDown(self):
        for p in self.probes:
            p.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def probe(self, config_path="default", **kw):
        p = Probe(self.tmp, self.cfg if config_path == "default" else config_path, **kw)
        self.probes.append(p)
        return p

    def base_config(self, **kw):
        c = {"enable": 0, "prof_dir": self.prof, "profiler_level": "INFO", "timelimit": 0,
             "domain": ""}
        c.update(kw)
        return c
