# SPDX-License-Identifier: Apache-2.0
"""test_otlp_demo.py — the demos with a traceparent on every client request.

tiny-llm-server: every trace id the client sent comes back, its llm_request
span the child of the client's span, with the demo's records in its
attributes. tiny-llm-pd: one request is one trace across router, prefill and
decode — the router's span the child of the client's, the prefill and
decode instances' spans children of the router's, the hand-off inside it.
Both run with a store session open (tracing rides on the writer) and the
server demo also without one (on the metrics drain thread).
"""
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import unittest

try:
    from otlp_receiver import Receiver
except Exception as e:
    print("SKIP: %s" % e)
    sys.exit(77)
from support.demo_util import BUILD, SLACK, SMALL_MODEL, Server  # noqa: E402

PD = os.path.join(BUILD, "bin", "tiny-llm-pd")


def tp_new():
    return "00-%032x-%016x-01" % (random.getrandbits(128) | 1, random.getrandbits(64) | 1)


def wait_spans(rx, pred, n, seconds):
    """Waits (bounded) until n spans satisfy pred."""
    deadline = time.time() + seconds * SLACK
    while time.time() < deadline:
        got = [s for _, _, s in rx.spans() if pred(s)]
        if len(got) >= n:
            return got
        with rx.cv:
            rx.cv.wait(0.2)
    return [s for _, _, s in rx.spans() if pred(s)]


def trace_env(rx, tmp, session):
    cfg = os.path.join(tmp, "cfg.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 1 if session else 0, "prof_dir": os.path.join(tmp, "prof")}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_PROFILER_", "MS_TRACE"))}
    env.update({"SERVICE_PROF_CONFIG_PATH": cfg, "MS_TRACE_ENABLE": "1",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": rx.url, "OTEL_BSP_SCHEDULE_DELAY": "100"})
    return env


class ServerDemo(unittest.TestCase):
    def run_demo(self, session):
        rx = Receiver().start()
        tmp = tempfile.mkdtemp(prefix="otlp-demo-")
        try:
            sent = {}
            with Server(SMALL_MODEL, env=trace_env(rx, tmp, session), workdir=tmp) as srv:
                for i in range(6):
                    tp = tp_new()
                    st, hdrs, body = srv.request("POST", "/v1/completions",
                                                 json.dumps({"prompt": "hello %d" % i, "max_tokens": 4}),
                                                 {"traceparent": tp, "Content-Type": "application/json"})
                    self.assertEqual(st, 200, body)
                    sent[hdrs.get("X-Request-Id")] = tp
                spans = wait_spans(rx, lambda s: s.name == "llm_request", len(sent), 30)
                self.assertEqual(srv.stop(), 0, srv.output()[-2000:])
            got = {}
            for s in spans:
                a = {kv.key: kv.value for kv in s.attributes}
                got[a["gen_ai.request.id"].string_value] = (s, a)
            self.assertEqual(sorted(got), sorted(sent))
            for rid, tp in sent.items():
                s, a = got[rid]
                self.assertEqual(s.trace_id.hex(), tp.split("-")[1])
                self.assertEqual(s.parent_span_id.hex(), tp.split("-")[2])
                self.assertEqual(s.kind, 2)
                self.assertEqual(a["gen_ai.request.max_tokens"].int_value, 4)
                self.assertEqual(a["gen_ai.usage.completion_tokens"].int_value, 4)
                self.assertIn("gen_ai.latency.time_to_first_token", a)
                self.assertIn("gen_ai.latency.time_in_queue", a)
            res = rx.spans()[0][0]
            self.assertEqual(res["service.name"].string_value, "tiny-llm-server")
        finally:
            rx.stop()

    def test_with_session(self):
        self.run_demo(True)

    def test_config_key_is_live(self):
        # trace_export off, then on by an edit of the running server's config file
        rx = Receiver().start()
        tmp = tempfile.mkdtemp(prefix="otlp-live-")
        cfg = os.path.join(tmp, "cfg.json")
        with open(cfg, "w") as f:
            json.dump({"enable": 0, "trace_export": 0}, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_PROFILER_", "MS_TRACE"))}
        env.update({"SERVICE_PROF_CONFIG_PATH": cfg, "OTEL_BSP_SCHEDULE_DELAY": "100",
                    "PROF_LOG_LEVEL": "INFO"})
        try:
            with Server(SMALL_MODEL, env=env, workdir=tmp) as srv:
                body = json.dumps({"prompt": "x", "max_tokens": 2})
                st, _, _ = srv.request("POST", "/v1/completions", body, {"traceparent": tp_new()})
                self.assertEqual(st, 200)
                tmpf = cfg + ".tmp"
                with open(tmpf, "w") as f:
                    json.dump({"enable": 0, "trace_export": 1, "trace_endpoint": rx.url}, f)
                os.rename(tmpf, cfg)
                deadline = time.time() + 30 * SLACK
                while "request tracing on" not in srv.output():
                    self.assertLess(time.time(), deadline, srv.output()[-2000:])
                    time.sleep(0.05)
                tp = tp_new()
                st, hdrs, _ = srv.request("POST", "/v1/completions", body, {"traceparent": tp})
                self.assertEqual(st, 200)
                spans = wait_spans(rx, lambda s: s.name == "llm_request", 1, 30)
                self.assertEqual(srv.stop(), 0)
            self.assertEqual([s.trace_id.hex() for s in spans], [tp.split("-")[1]])  # only the second
        finally:
            rx.stop()

    def test_without_session(self):
        self.run_demo(False)


class Proc:
    def __init__(self, tmp, role, env, *extra):
        self.port_file = os.path.join(tmp, role + ".port")
        self.log_path = os.path.join(tmp, role + ".log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([PD, "--role", role, "--port", "0", "--port-file", self.port_file, *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30 * SLACK
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("%s did not start" % role)
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def stop(self):
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30 * SLACK)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@unittest.skipUnless(os.path.exists(PD), "tiny-llm-pd not built")
class PdDemo(unittest.TestCase):
    def test_one_trace_across_three_processes(self):
        rx = Receiver().start()
        tmp = tempfile.mkdtemp(prefix="otlp-pd-")
        procs = []
        try:
            env = trace_env(rx, tmp, True)
            d = Proc(tmp, "decode", env)
            procs.append(d)
            p = Proc(tmp, "prefill", env)
            procs.append(p)
            r = Proc(tmp, "router", env, "--prefill-port", str(p.port), "--decode-port", str(d.port))
            procs.append(r)
            tps = []
            for i in range(3):
                tp = tp_new()
                tps.append(tp)
                prompt = [(5 * i + j) % 1000 for j in range(24)]
                with socket.create_connection(("127.0.0.1", r.port), timeout=60 * SLACK) as s, \
                        s.makefile("rb") as f:
                    s.sendall(("GEN 4 %d %s tp=%s\n" % (len(prompt), " ".join(map(str, prompt)), tp)).encode())
                    while True:
                        line = f.readline().decode().strip()
                        self.assertTrue(line.startswith(("TOK", "END")), line)
                        if line == "END":
                            break
            spans = wait_spans(rx, lambda s: s.name == "llm_request", 9, 30)
            for x in procs:
                self.assertEqual(x.stop(), 0)
            procs = []
            allspans = rx.spans()
            for tp in tps:
                tid, parent = tp.split("-")[1], tp.split("-")[2]
                mine = [(res, s) for res, _, s in allspans if s.trace_id.hex() == tid]
                servers = [(res, s) for res, s in mine if s.name == "llm_request"]
                self.assertEqual(len(servers), 3, [res["process.pid"] for res, s in servers])
                router = [s for res, s in servers if s.parent_span_id.hex() == parent]
                self.assertEqual(len(router), 1)
                router = router[0]
                others = [(res, s) for res, s in servers if s is not router]
                pids = {res["process.pid"].int_value for res, s in servers}
                self.assertEqual(len(pids), 3)  # three processes
                for res, s in others:
                    self.assertEqual(s.parent_span_id, router.span_id)
                    self.assertGreaterEqual(s.start_time_unix_nano, router.start_time_unix_nano)
                    self.assertLessEqual(s.end_time_unix_nano, router.end_time_unix_nano)
                handoff = [s for res, s in mine if s.name == "pd_handoff"]
                self.assertEqual(len(handoff), 1)
                self.assertEqual(handoff[0].parent_span_id, router.span_id)
                self.assertGreaterEqual(handoff[0].start_time_unix_nano, router.start_time_unix_nano)
                self.assertLessEqual(handoff[0].end_time_unix_nano, router.end_time_unix_nano)
        finally:
            for x in procs:
                x.stop()
            rx.stop()


if __name__ == "__main__":
    unittest.main()
