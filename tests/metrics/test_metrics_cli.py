# SPDX-License-Identifier: Apache-2.0
"""test_metrics_cli.py — `servprof metrics` as a user meets it: options and
their errors, `dump` of a real process's metrics folder validated by
`promtool check metrics`, and `serve` over real HTTP on 127.0.0.1 (port 0,
--port-file), stopped by SIGTERM."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from support.demo_util import CLI, SLACK, SMALL_MODEL, Server  # noqa: E402
from support import ports  # noqa: E402


def run(*args, **kw):
    return subprocess.run([CLI, "metrics", *args], capture_output=True, text=True,
                          timeout=60 * SLACK, **kw)


def wait_file(path, proc, seconds):
    deadline = time.time() + seconds * SLACK
    while not (os.path.exists(path) and os.path.getsize(path) > 0):
        if proc.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def get(port, path, method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30 * SLACK)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        c.close()


class Options(unittest.TestCase):
    def test_help_and_errors(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("servprof metrics serve", p.stdout)
        p = run("serve", "-h")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn("--listen", p.stdout)
        for args, word in [(["serve", "--bogus"], "--bogus"), (["dump", "-i"], "-i"),
                           (["frob"], "frob"), (["dump", "-i", "/tmp", "extra"], "extra"),
                           (["serve", "-i", "/tmp", "--listen=localhost:99999"], "--listen")]:
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(word, p.stderr)
        p = run()
        self.assertEqual(p.returncode, 2)

    def test_dump_unreadable_folder(self):
        p = run("dump", "--input-path=/nonexistent/servprof")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read the folder /nonexistent/servprof", p.stderr)
        self.assertIn("servprof_metrics_processes", p.stdout)


class WithServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="sp-mcli-")
        cls.cfg = os.path.join(cls.work, "prof.json")
        with open(cls.cfg, "w") as f:
            json.dump({"enable": 0, "metric_enable": 1, "prof_dir": os.path.join(cls.work, "prof")}, f)
        cls.mdir = os.path.join(cls.work, "prof", "metrics")
        cls.srv = Server(SMALL_MODEL, env={"SERVICE_PROF_CONFIG_PATH": cls.cfg}, workdir=cls.work)
        for i in range(5):
            status, _, _ = cls.srv.complete({"prompt_tokens": list(range(3, 40)), "max_tokens": 6})
            assert status == 200, status

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def wait_requests(self, n):
        deadline = time.time() + 20 * SLACK
        while True:
            text = run("dump", "-i", self.mdir).stdout
            if f'outcome="ok"}} {n}\n' in text or time.time() > deadline:
                return text
            time.sleep(0.05)

    def test_dump_is_valid_exposition(self):
        text = self.wait_requests(5)
        self.assertIn('servprof_requests_total{role="tiny-llm-server",model_name="tiny-llm",'
                      'outcome="ok"} 5\n', text)
        # -c reads the folder from the config, -o writes a file.
        out = os.path.join(self.work, "dump.txt")
        p = run("dump", "-c", self.cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertIn("servprof_time_to_first_token_seconds_bucket", f.read())
        if not shutil.which("promtool"):
            self.skipTest("promtool is not installed (Debian package prometheus)")
        with open(out) as f:
            p = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True,
                               text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    def test_serve(self):
        self.wait_requests(5)
        port_file = os.path.join(self.work, "serve.port")
        log = open(os.path.join(self.work, "serve.log"), "w+")
        p = subprocess.Popen([CLI, "metrics", "serve", "--listen", "127.0.0.1:0", "-i", self.mdir,
                              "--port-file", port_file], stdout=log, stderr=subprocess.STDOUT)
        try:
            self.assertTrue(wait_file(port_file, p, 20), "serve did not start")
            port = int(open(port_file).read())
            status, ctype, body = get(port, "/metrics")
            self.assertEqual(status, 200)
            self.assertIn("version=0.0.4", ctype)
            self.assertIn('outcome="ok"} 5\n', body)
            self.assertIn('servprof_metrics_processes{state="live"} 1\n', body)
            self.assertEqual(get(port, "/")[0], 200)
            self.assertEqual(get(port, "/nope")[0], 404)
            self.assertEqual(get(port, "/metrics", "POST")[0], 405)
            # A scrape reads the files anew: a new request shows at once.
            self.srv.complete({"prompt_tokens": [5, 6, 7], "max_tokens": 2})
            deadline = time.time() + 20 * SLACK
            while 'outcome="ok"} 6\n' not in get(port, "/metrics")[2] and time.time() < deadline:
                time.sleep(0.05)
            self.assertIn('outcome="ok"} 6\n', get(port, "/metrics")[2])
        finally:
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=30 * SLACK)
        self.assertEqual(rc, 0)
        log.seek(0)
        self.assertIn("serving " + self.mdir, log.read())


class MetricPort(unittest.TestCase):
    """metric_port: two server processes share one config; one serves the
    folder's sum, and when it is killed the other takes the port over."""

    def test_takeover(self):
        work = tempfile.mkdtemp(prefix="sp-mport-")
        port = ports.reserve()  # the servers bind it later: no other test gets it meanwhile
        cfg = os.path.join(work, "prof.json")
        with open(cfg, "w") as f:
            json.dump({"enable": 0, "metric_enable": 1, "metric_port": port,
                       "prof_dir": os.path.join(work, "prof")}, f)
        env = {"SERVICE_PROF_CONFIG_PATH": cfg}
        os.makedirs(os.path.join(work, "a"))
        os.makedirs(os.path.join(work, "b"))
        a = Server(SMALL_MODEL, env=env, workdir=os.path.join(work, "a"))
        b = Server(SMALL_MODEL, env=env, workdir=os.path.join(work, "b"))
        try:
            for srv in (a, b):
                status, _, _ = srv.complete({"prompt_tokens": [5, 6, 7], "max_tokens": 2})
                self.assertEqual(status, 200)

            def scrape():
                try:
                    return get(port, "/metrics")[2]
                except OSError:
                    return ""
            deadline = time.time() + 20 * SLACK
            while 'outcome="ok"} 2\n' not in scrape() and time.time() < deadline:
                time.sleep(0.05)
            body = scrape()
            self.assertIn('outcome="ok"} 2\n', body)  # both processes, one endpoint
            self.assertIn('servprof_metrics_processes{state="live"} 2\n', body)
            serving = a if "metric_port: serving" in a.output() else b
            other = b if serving is a else a
            self.assertNotIn("metric_port: serving", other.output())
            serving.stop(signal.SIGKILL)
            deadline = time.time() + 30 * SLACK  # the other retries every 5 s
            while 'state="dead"} 1\n' not in scrape() and time.time() < deadline:
                time.sleep(0.1)
            body = scrape()
            self.assertIn('servprof_metrics_processes{state="dead"} 1\n', body, other.output())
            self.assertIn('outcome="ok"} 2\n', body)  # the dead one's counters stay
            self.assertIn("metric_port: serving", other.output())
        finally:
            a.stop()
            b.stop()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
