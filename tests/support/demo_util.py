# SPDX-License-Identifier: Apache-2.0
"""demo_util.py — helpers shared by the demo tests: start tiny-llm-server on a
free port of 127.0.0.1 and stop it, plain HTTP calls, time limits scaled for
sanitizer builds (10x slack, as the project's rules ask)."""
import http.client
import json
import os
import signal
import subprocess
import tempfile
import time

BUILD = os.environ.get("SERVPROF_BUILD", "build")
SANITIZE = os.environ.get("SERVPROF_SANITIZE", "")
SLACK = 10.0 if SANITIZE else 1.0
SERVER = os.path.join(BUILD, "bin", "tiny-llm-server")
LOAD = os.path.join(BUILD, "bin", "servprof-load")
CLI = os.environ.get("SERVPROF_BIN", os.path.join(BUILD, "bin", "servprof"))
# A model small enough for sanitizer builds, same shape as the default.
SMALL_MODEL = ["--vocab", "1024", "--d-model", "64", "--layers", "2", "--heads", "2", "--d-ff", "128"]


class Server:
    """A running tiny-llm-server; use as a context manager."""

    def __init__(self, args=(), env=None, workdir=None):
        self.dir = workdir or tempfile.mkdtemp(prefix="tl-server-")
        self.port_file = os.path.join(self.dir, "port")
        self.log_path = os.path.join(self.dir, "server.log")
        self.log = open(self.log_path, "wb")
        full_env = dict(os.environ)
        full_env.pop("SERVICE_PROF_CONFIG_PATH", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen([SERVER, "--port", "0", "--port-file", self.port_file, *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        deadline = time.time() + 30 * SLACK
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                raise RuntimeError("server exited at start:\n" + self.output())
            if time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("server did not start:\n" + self.output())
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGINT):
        """Stops the server; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30 * SLACK)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("server did not stop on signal:\n" + self.output())
        self.log.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.stop()

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout * SLACK)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def complete(self, payload, **kw):
        body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
        return self.request("POST", "/v1/completions", body=body,
                            headers={"Content-Type": "application/json"}, **kw)

    def health(self):
        status, _, body = self.request("GET", "/health")
        assert status == 200, (status, body)
        return json.loads(body)

    def wait_health(self, pred, seconds):
        """Polls /health until pred(health) holds; returns the last health."""
        deadline = time.time() + seconds * SLACK
        h = self.health()
        while not pred(h) and time.time() < deadline:
            time.sleep(0.05)
            h = self.health()
        return h
