# SPDX-License-Identifier: Apache-2.0
"""test_metrics_prometheus.py — live metrics end to end, as a user sets them
up: tiny-llm-server runs with "metric_enable": 1 and tracing off;
`servprof metrics serve` is the one scrape target; a real Prometheus
(Debian's package) scrapes it every second into a temporary folder;
servprof-load sends Poisson load. Through Prometheus's HTTP query API:

  - the request count equals what the load generator sent (and the ok
    count its successes);
  - TTFT P50/P90/P99 from the histogram (histogram_quantile) are within
    10 % of the quantiles the clients measured;
  - the KV cache and queue gauges moved during the run;
  - every PromQL query of dashboards/grafana-live-metrics.json runs and
    returns data;
and: the exposition passes `promtool check metrics`, and no trace file was
written. Everything started here is stopped here; waits are bounded polls.
Skips (with the reason) only where Prometheus is not installed."""
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from support.demo_util import CLI, LOAD, SANITIZE, SLACK, SMALL_MODEL, Server  # noqa: E402
from support import ports  # noqa: E402

SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(SOURCE, "dashboards", "grafana-live-metrics.json")


def free_port():
    """Reserved for this test (support/ports.py): Prometheus binds it later,
    and no other test of this tree is handed it in between."""
    return ports.reserve()


def wait_until(pred, seconds, what):
    deadline = time.time() + seconds * SLACK
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.1)


class Proc:
    """A background process with its output in a file; stopped by stop()."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30 * SLACK)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        return self.p.returncode


class LiveMetrics(unittest.TestCase):
    def setUp(self):
        if not shutil.which("prometheus"):
            self.skipTest("prometheus is not installed (Debian package 'prometheus'; "
                          "scripts/install-deps.sh installs it)")
        self.work = tempfile.mkdtemp(prefix="sp-prom-")
        self.started = []

    def tearDown(self):
        for p in reversed(self.started):
            p.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def query(self, expr):
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=30 * SLACK) as r:
            body = json.load(r)
        self.assertEqual(body["status"], "success", (expr, body))
        return body["data"]["result"]

    def scalar(self, expr):
        res = self.query(expr)
        return float(res[0]["value"][1]) if res else None

    def start_prometheus(self, target_port):
        self.prom_port = free_port()
        yml = os.path.join(self.work, "prometheus.yml")
        with open(yml, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: servprof\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target_port}']\n")
        prom = Proc(["prometheus", "--config.file", yml,
                     "--storage.tsdb.path", os.path.join(self.work, "tsdb"),
                     "--web.listen-address", f"127.0.0.1:{self.prom_port}", "--log.level", "warn"],
                    os.path.join(self.work, "prometheus.log"))
        self.started.append(prom)

        def ready():
            if prom.p.poll() is not None:
                raise AssertionError("prometheus exited:\n" + prom.output())
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.prom_port}/-/ready", timeout=5) as r:
                    return r.status == 200
            except OSError:
                return False
        wait_until(ready, 60, "prometheus to be ready")
        wait_until(lambda: self.scalar('up{job="servprof"}') == 1, 30, "the first scrape")

    def test_prometheus_sees_the_demo(self):
        cfg = os.path.join(self.work, "prof.json")
        prof = os.path.join(self.work, "prof")
        with open(cfg, "w") as f:
            json.dump({"enable": 0, "metric_enable": 1, "prof_dir": prof}, f)
        # A burst the server cannot absorb at once (both builds): queueing makes
        # most TTFTs hundreds of ms, so the clients' own share (connect, a busy
        # machine's thread wake-ups: up to ~100 ms in the tail) stays a small
        # part of even the P99, and the WAITING queue is long at some scrape.
        if SANITIZE:
            model = SMALL_MODEL
            load = ["--rate", "100", "--requests", "60", "--concurrency", "32",
                    "--prompt-len", "200:400", "--output-len", "8:24", "--vocab", "1024"]
        else:
            model = []
            load = ["--rate", "100", "--requests", "150", "--concurrency", "48",
                    "--prompt-len", "300:600", "--output-len", "16:48"]
        srv = Server(model, env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=self.work)
        self.started.append(srv)
        port_file = os.path.join(self.work, "serve.port")
        serve = Proc([CLI, "metrics", "serve", "--listen", "127.0.0.1:0", "-c", cfg,
                      "--port-file", port_file], os.path.join(self.work, "serve.log"))
        self.started.append(serve)
        wait_until(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0, 20,
                   "servprof metrics serve to listen")
        with open(port_file) as f:
            serve_port = int(f.read())
        self.start_prometheus(serve_port)

        summary_path = os.path.join(self.work, "summary.json")
        lg = subprocess.run([LOAD, "--port", str(srv.port), *load, "--summary-json", summary_path,
                             "--quiet"], capture_output=True, text=True, timeout=300 * SLACK)
        self.assertEqual(lg.returncode, 0, lg.stdout + lg.stderr)
        with open(summary_path) as f:
            s = json.load(f)
        sent = s["requests"]  # "unsent": arrivals that found no client slot, never sent
        print("load:", json.dumps(s))
        self.assertGreater(s["ok"], 20)

        # Counts: every request the clients sent ended in one httpRes.
        wait_until(lambda: self.scalar("sum(servprof_requests_total)") == sent, 30,
                   f"Prometheus to see {sent} requests")
        self.assertEqual(self.scalar('sum(servprof_requests_total{outcome="ok"})'), s["ok"])
        self.assertEqual(self.scalar("sum(servprof_generation_tokens_total)"), s["output_tokens"])
        wait_until(lambda: self.scalar("sum(servprof_time_to_first_token_seconds_count)") == s["ok"],
                   30, "every TTFT observation")

        # TTFT quantiles: histogram vs clients.
        for q, key in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")]:
            got = self.scalar("histogram_quantile(%g, sum by (le) "
                              "(servprof_time_to_first_token_seconds_bucket))" % q)
            want = s["ttft_ms"][key] / 1000.0
            print(f"TTFT {key}: histogram {got * 1000:.2f} ms, clients {want * 1000:.2f} ms")
            self.assertLess(abs(got - want), 0.10 * want, f"TTFT {key}: {got} vs {want}")

        # The gauges moved while the load ran.
        for g in ["servprof_kv_cache_usage_ratio", "servprof_requests_running",
                  "servprof_requests_waiting"]:
            hi = self.scalar(f"max(max_over_time({g}[10m]))")
            lo = self.scalar(f"min(min_over_time({g}[10m]))")
            print(f"{g}: {lo} .. {hi}")
            self.assertIsNotNone(hi, g)
            self.assertGreater(hi, lo, g)

        # Every dashboard query runs and has data.
        with open(DASHBOARD) as f:
            dash = json.load(f)
        n = 0
        for panel in dash["panels"]:
            for t in panel["targets"]:
                expr = (t["expr"].replace("$__rate_interval", "1m").replace("$role", ".*")
                        .replace("$model_name", ".*"))
                with self.subTest(panel=panel["title"], ref=t["refId"]):
                    res = self.query(expr)
                    self.assertTrue(res, f"no data for {expr}")
                    vals = [float(r["value"][1]) for r in res]
                    self.assertTrue(any(math.isfinite(v) for v in vals), (expr, vals))
                    n += 1
        self.assertGreaterEqual(n, 20)

        # The exposition is valid; tracing wrote nothing.
        if shutil.which("promtool"):
            with urllib.request.urlopen(f"http://127.0.0.1:{serve_port}/metrics", timeout=30) as r:
                text = r.read()
            p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                               timeout=60)
            self.assertEqual((p.returncode, p.stdout + p.stderr), (0, b""))
        self.assertEqual(sorted(os.listdir(prof)), ["metrics"])
        self.assertEqual(srv.stop(), 0, srv.output())


if __name__ == "__main__":
    unittest.main()
