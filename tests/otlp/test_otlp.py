# SPDX-License-Identifier: Apache-2.0
"""test_otlp.py — request tracing over OTLP, end to end on 127.0.0.1.

A real receiver (otlp_receiver.py) decodes every POST with the official
opentelemetry-proto definitions; otlp_emit (a program on libservprof's
public API) records requests in the vocabulary and exits cleanly. Each case
checks what came over the wire against what was recorded, and the
library's own counts (its "request tracing off (...)" log line at exit):
every span made is either received or counted as dropped, by cause.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    from otlp_receiver import Receiver, Unavailable  # noqa: F401
except Exception as e:  # protoc or python3-protobuf missing: skip (ctest 77)
    print("SKIP: %s" % e)
    sys.exit(77)

BUILD = os.environ.get("SERVPROF_BUILD", os.path.join(HERE, "..", "..", "build"))
EMIT = os.path.join(BUILD, "tests", "otlp_emit")
SPANS_PER_REQUEST = 4  # llm_request, queue, prefill, decode (otlp_emit's shape)

GEN_AI = {
    "gen_ai.request.id": "string_value",
    "gen_ai.response.model": "string_value",
    "gen_ai.request.temperature": "double_value",
    "gen_ai.request.top_p": "double_value",
    "gen_ai.request.max_tokens": "int_value",
    "gen_ai.request.n": "int_value",
    "gen_ai.usage.prompt_tokens": "int_value",
    "gen_ai.usage.completion_tokens": "int_value",
    "gen_ai.latency.time_in_queue": "double_value",
    "gen_ai.latency.time_to_first_token": "double_value",
    "gen_ai.latency.e2e": "double_value",
    "gen_ai.latency.time_in_scheduler": "double_value",
    "gen_ai.latency.time_in_model_forward": "double_value",
    "gen_ai.latency.time_in_model_execute": "double_value",
    "gen_ai.latency.time_in_model_prefill": "double_value",
    "gen_ai.latency.time_in_model_decode": "double_value",
}


def attrs(span):
    return {a.key: a.value for a in span.attributes}


def counts(stderr):
    """The counts of the exit line: {name: int}."""
    m = re.findall(r"request tracing off \(([^)]*)\)", stderr)
    if not m:
        raise AssertionError("no 'request tracing off' line in:\n" + stderr[-3000:])
    return {k: int(v) for k, v in (kv.split("=") for kv in m[-1].split())}


def drops(c):
    return sum(v for k, v in c.items() if k.startswith("dropped_"))


class OtlpCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="otlp-test-")
        self.rx = None

    def tearDown(self):
        if self.rx:
            self.rx.stop()

    def emit(self, n, *args, script=(), env=None, timeout=120):
        self.rx = Receiver(script).start()
        e = dict(os.environ)
        for k in list(e):
            if k.startswith(("OTEL_", "MS_PROFILER_", "MS_TRACE")):
                del e[k]
        e.update({
            "MS_TRACE_ENABLE": "1",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.rx.url,
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "PROF_LOG_LEVEL": "INFO",
            "SERVICE_PROF_CONFIG_PATH": os.path.join(self.tmp, "config.json"),
            "HOME": self.tmp,
        })
        e.update(env or {})
        p = subprocess.run([EMIT, str(n)] + list(args), env=e, capture_output=True, text=True,
                           timeout=timeout)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        sent = []
        for line in p.stdout.splitlines():
            rid, tp, failed, out, t0 = line.split()
            sent.append({"rid": rid, "tp": None if tp == "-" else tp, "failed": failed == "1",
                         "out": out, "t0": int(t0)})
        self.pid = p.pid if hasattr(p, "pid") else None
        return sent, counts(p.stderr), p.stderr

    def servers(self):
        return [s for _, _, s in self.rx.spans() if s.name == "llm_request"]

    def check_accounting(self, c, n_requests_traced):
        received = len(self.rx.spans())
        self.assertEqual(c["spans_sent"], received, c)
        self.assertEqual(n_requests_traced * SPANS_PER_REQUEST, received + drops(c), c)


class TestWire(OtlpCase):
    def test_spans_decode_with_every_field(self):
        sent, c, err = self.emit(12, "--parent", "sampled", "--fail-every", "4")
        by_rid = {s["rid"]: s for s in sent}
        spans = self.rx.spans()
        self.assertEqual(len(spans), 12 * SPANS_PER_REQUEST, err[-2000:])
        self.check_accounting(c, 12)
        self.assertEqual(self.rx.undecodable, 0)
        servers = {}
        for res, scope, s in spans:
            self.assertEqual(len(s.trace_id), 16)
            self.assertEqual(len(s.span_id), 8)
            self.assertEqual(scope.name, "servprof")
            self.assertEqual(res["service.name"].string_value, "otlp-emit")
            self.assertEqual(res["servprof.model_name"].string_value, "tiny-model")
            self.assertEqual(res["servprof.dp_rank"].string_value, "0")
            self.assertTrue(res["host.name"].string_value)
            self.assertEqual(res["process.pid"].WhichOneof("value"), "int_value")
            self.assertGreater(s.end_time_unix_nano, s.start_time_unix_nano - 1)
            if s.name == "llm_request":
                servers[s.span_id] = s
        self.assertEqual(len(servers), 12)
        for s in servers.values():
            a = attrs(s)
            rid = a["gen_ai.request.id"].string_value
            want = by_rid[rid]
            self.assertEqual(s.kind, 2)  # SPAN_KIND_SERVER
            tp = want["tp"].split("-")
            self.assertEqual(s.trace_id.hex(), tp[1])
            self.assertEqual(len(s.parent_span_id), 8)
            self.assertEqual(s.parent_span_id.hex(), tp[2])
            self.assertEqual(s.trace_state, "vendor=x")
            # the outgoing header the serving thread computed names this span
            self.assertEqual(want["out"].split("-")[2], s.span_id.hex())
            self.assertEqual(want["out"].split("-")[1], s.trace_id.hex())
            # ns since the epoch, starting at the httpReq the program timed
            self.assertLess(abs(s.start_time_unix_nano - want["t0"]), 10**9)
            for k, kind in GEN_AI.items():
                self.assertIn(k, a, "%s missing" % k)
                self.assertEqual(a[k].WhichOneof("value"), kind, k)
            self.assertEqual(a["gen_ai.request.max_tokens"].int_value, 16)
            self.assertAlmostEqual(a["gen_ai.request.temperature"].double_value, 0.7)
            self.assertEqual(a["gen_ai.usage.prompt_tokens"].int_value, 8)
            self.assertEqual(a["gen_ai.usage.completion_tokens"].int_value, 3)
            e2e = a["gen_ai.latency.e2e"].double_value
            self.assertAlmostEqual(e2e, (s.end_time_unix_nano - s.start_time_unix_nano) / 1e9, places=6)
            self.assertLessEqual(a["gen_ai.latency.time_to_first_token"].double_value, e2e)
            if want["failed"]:
                self.assertEqual(s.status.code, 2)  # STATUS_CODE_ERROR
                self.assertIn("error", [ev.name for ev in s.events])
            else:
                self.assertEqual(s.status.code, 0)
        kids = [s for _, _, s in spans if s.name != "llm_request"]
        self.assertEqual(sorted({k.name for k in kids}), ["decode", "prefill", "queue"])
        for k in kids:
            self.assertIn(k.parent_span_id, servers)
            self.assertEqual(k.trace_id, servers[k.parent_span_id].trace_id)
            self.assertEqual(k.kind, 1)  # INTERNAL
            p = servers[k.parent_span_id]
            self.assertGreaterEqual(k.start_time_unix_nano, p.start_time_unix_nano)
            self.assertLessEqual(k.end_time_unix_nano, p.end_time_unix_nano)

    def test_gzip_and_headers(self):
        sent, c, err = self.emit(3, "--parent", "sampled", env={
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=abc%20d,tenant=t1"})
        self.assertEqual(len(self.servers()), 3)
        hdrs = self.rx.posts[0][2]
        self.assertEqual(hdrs.get("Content-Encoding"), "gzip")
        self.assertEqual(hdrs.get("Content-Type"), "application/x-protobuf")
        self.assertEqual(hdrs.get("x-api-key"), "abc d")
        self.assertEqual(hdrs.get("tenant"), "t1")

    def test_b3_single_header(self):
        sent, c, err = self.emit(4, "--parent", "sampled", "--b3")
        got = {attrs(s)["gen_ai.request.id"].string_value: s for s in self.servers()}
        self.assertEqual(len(got), 4)
        for w in sent:
            tp = w["tp"].split("-")
            self.assertEqual(got[w["rid"]].trace_id.hex(), tp[1])
            self.assertEqual(got[w["rid"]].parent_span_id.hex(), tp[2])

    def test_one_connection(self):
        # many batches (batch size 4): all over one kept-alive connection
        sent, c, err = self.emit(20, "--parent", "sampled", "--gap-us", "2000",
                                 env={"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4"})
        self.assertGreater(len(self.rx.posts), 3)
        self.assertEqual(len({p[3] for p in self.rx.posts}), 1, [p[3] for p in self.rx.posts])
        self.check_accounting(c, 20)


class TestAnswers(OtlpCase):
    ONE_BATCH = {"OTEL_BSP_SCHEDULE_DELAY": "600000"}  # everything goes in the exit flush

    def test_400_not_retried(self):
        sent, c, err = self.emit(5, "--parent", "sampled", script=["400"], env=self.ONE_BATCH)
        self.assertEqual(len(self.rx.posts), 1)
        self.assertEqual(c["dropped_rejected"], 5 * SPANS_PER_REQUEST)
        self.assertEqual(c["retries"], 0)
        self.check_accounting(c, 5)
        self.assertIn("not retried", err)

    def test_429_retry_after(self):
        sent, c, err = self.emit(5, "--parent", "sampled", script=["429:1"], env=self.ONE_BATCH)
        self.assertEqual(len(self.rx.posts), 2)
        self.assertGreaterEqual(self.rx.posts[1][0] - self.rx.posts[0][0], 0.9)  # Retry-After: 1
        self.assertEqual(len(self.servers()), 5)
        self.assertEqual(c["retries"], 1)
        self.check_accounting(c, 5)
        self.assertEqual(drops(c), 0)

    def test_429_retry_after_http_date(self):
        # Retry-After as an IMF-fixdate 3 s ahead: the retry waits for it (2-3 s
        # with the date's whole seconds), not the first backoff (0.8-1.2 s)
        sent, c, err = self.emit(5, "--parent", "sampled", script=["429:date+3"], env=self.ONE_BATCH)
        self.assertEqual(len(self.rx.posts), 2)
        gap = self.rx.posts[1][0] - self.rx.posts[0][0]
        self.assertGreaterEqual(gap, 1.8, "the HTTP date was not obeyed")
        self.assertEqual(len(self.servers()), 5)
        self.assertEqual(c["retries"], 1)
        self.check_accounting(c, 5)

    def test_429_retry_after_past_date(self):
        # a date already past means retry now, not after the backoff (>= 0.8 s)
        sent, c, err = self.emit(5, "--parent", "sampled", script=["429:date-100"], env=self.ONE_BATCH)
        self.assertEqual(len(self.rx.posts), 2)
        self.assertLess(self.rx.posts[1][0] - self.rx.posts[0][0], 0.7, "the backoff was used")
        self.assertEqual(len(self.servers()), 5)
        self.check_accounting(c, 5)

    def test_503_backoff(self):
        sent, c, err = self.emit(5, "--parent", "sampled", script=["503", "503"], env=self.ONE_BATCH)
        self.assertEqual(len(self.rx.posts), 3)
        self.assertEqual(len(self.servers()), 5)
        self.assertEqual(c["retries"], 2)
        self.check_accounting(c, 5)

    def test_connection_reset(self):
        sent, c, err = self.emit(5, "--parent", "sampled", script=["reset"], env=self.ONE_BATCH)
        self.assertEqual(len(self.servers()), 5)
        self.assertGreaterEqual(c["retries"], 1)
        self.check_accounting(c, 5)

    def test_stall_then_answer(self):
        # the first POST gets no answer: the exporter times out (500 ms) and retries
        sent, c, err = self.emit(5, "--parent", "sampled", script=["stall:30"],
                                 env=dict(self.ONE_BATCH, OTEL_EXPORTER_OTLP_TIMEOUT="500"))
        self.assertEqual(len(self.servers()), 5)
        self.assertGreaterEqual(c["retries"], 1)
        self.check_accounting(c, 5)

    def test_stall_bounded_queue_and_exit(self):
        # a collector that never answers: the queue (8) bounds memory, the rest
        # is counted as queue-full, and the exit gives up within its bound
        t = time.monotonic()
        sent, c, err = self.emit(40, "--parent", "sampled", script=["stall:60"] * 50,
                                 env={"OTEL_BSP_MAX_QUEUE_SIZE": "8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4",
                                      "OTEL_EXPORTER_OTLP_TIMEOUT": "300", "OTEL_BSP_EXPORT_TIMEOUT": "1000"})
        self.assertLess(time.monotonic() - t, 60)  # not the stall's 60 s: the exit is bounded
        self.assertEqual(len(self.rx.spans()), 0)
        self.assertGreater(c["dropped_queue_full"], 0)
        self.assertEqual(c["spans_queued"] + c["dropped_queue_full"], 40 * SPANS_PER_REQUEST)
        self.check_accounting(c, 40)


class TestStoreMeta(OtlpCase):
    """With a store session open, Meta otlp_counts holds the counts after the
    exit flush: the spans made by the writer's last pass and their fate."""

    def meta_counts(self):
        import glob
        import sqlite3
        dbs = glob.glob(os.path.join(self.tmp, "prof", "**", "*.db"), recursive=True)
        self.assertEqual(len(dbs), 1, dbs)
        con = sqlite3.connect(dbs[0])
        rows = con.execute("SELECT value FROM Meta WHERE name='otlp_counts'").fetchall()
        con.close()
        self.assertEqual(len(rows), 1, rows)
        return {k: int(v) for k, v in (kv.split("=") for kv in rows[0][0].split())}

    def session(self):
        with open(os.path.join(self.tmp, "config.json"), "w") as f:
            f.write('{"enable": 1, "prof_dir": "%s"}' % os.path.join(self.tmp, "prof"))

    def test_meta_after_exit_flush(self):
        self.session()
        sent, c, err = self.emit(6, "--parent", "sampled", env=TestAnswers.ONE_BATCH)
        m = self.meta_counts()
        self.assertEqual(m, c)  # the log's last line: the same final counts
        self.assertEqual(m["spans_sent"], 6 * SPANS_PER_REQUEST, m)
        self.check_accounting(m, 6)

    def test_meta_counts_drops_of_the_flush(self):
        self.session()
        sent, c, err = self.emit(5, "--parent", "sampled", script=["400"], env=TestAnswers.ONE_BATCH)
        m = self.meta_counts()
        self.assertEqual(m["dropped_rejected"], 5 * SPANS_PER_REQUEST, m)
        self.assertEqual(m["spans_sent"], 0, m)
        self.assertEqual(m, c)


class TestSampling(OtlpCase):
    def rids(self):
        return sorted(attrs(s)["gen_ai.request.id"].string_value for s in self.servers())

    def test_one_in_n(self):
        n, rate = 800, 4
        sent, c, err = self.emit(n, env={"MS_PROFILER_AUTO_TRACE": "1", "MS_PROFILER_SAMPLE_RATE": str(rate)})
        got = len(self.servers())
        mean = n / rate
        sigma = (n * (1 / rate) * (1 - 1 / rate)) ** 0.5
        self.assertLess(abs(got - mean), 3 * sigma, "%d sampled of %d" % (got, n))
        self.assertEqual(c["unsampled"], n - got)
        # the outgoing header's flag is the same decision
        flagged = sorted(w["rid"] for w in sent if w["out"].endswith("-01"))
        self.assertEqual(flagged, self.rids())

    def test_no_auto_trace_no_spans(self):
        sent, c, err = self.emit(10)  # MS_TRACE_ENABLE alone: only requests with a context
        self.assertEqual(len(self.rx.spans()), 0)
        self.assertEqual(c["unsampled"], 10)

    def test_error_only_exact(self):
        sent, c, err = self.emit(30, "--fail-every", "3",
                                 env={"MS_PROFILER_AUTO_TRACE": "1", "MS_PROFILER_SAMPLE_ERROR": "1"})
        want = sorted(w["rid"] for w in sent if w["failed"])
        self.assertEqual(len(want), 10)
        self.assertEqual(self.rids(), want)
        for s in self.servers():
            self.assertEqual(s.status.code, 2)

    def test_parent_flag_obeyed(self):
        sent, c, err = self.emit(20, "--parent", "alternate")
        want = sorted(w["rid"] for w in sent if w["tp"].endswith("-01"))
        self.assertEqual(len(want), 10)
        self.assertEqual(self.rids(), want)

    def test_parentbased_traceidratio(self):
        sent, c, err = self.emit(600, env={"OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                                           "OTEL_TRACES_SAMPLER_ARG": "0.5"})
        got = len(self.servers())
        sigma = (600 * 0.25) ** 0.5
        self.assertLess(abs(got - 300), 3 * sigma, got)


class TestConfigKeys(OtlpCase):
    def test_trace_export_key_without_env(self):
        # the config's keys alone turn it on (no MS_TRACE_ENABLE): the endpoint from the file
        self.rx = Receiver().start()
        cfg = os.path.join(self.tmp, "config.json")
        with open(cfg, "w") as f:
            f.write('{"enable": 0, "trace_export": 1, "trace_endpoint": "%s"}' % self.rx.url)
        e = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_PROFILER_", "MS_TRACE"))}
        e.update({"SERVICE_PROF_CONFIG_PATH": cfg, "HOME": self.tmp, "PROF_LOG_LEVEL": "INFO",
                  "OTEL_BSP_SCHEDULE_DELAY": "50"})
        p = subprocess.run([EMIT, "3"], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(self.servers()), 3, p.stderr[-2000:])

    def test_bad_endpoint_key_is_named(self):
        cfg = os.path.join(self.tmp, "config.json")
        with open(cfg, "w") as f:
            f.write('{"enable": 0, "trace_export": 1, "trace_endpoint": "ftp://x"}')
        e = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_PROFILER_", "MS_TRACE"))}
        e.update({"SERVICE_PROF_CONFIG_PATH": cfg, "HOME": self.tmp, "PROF_LOG_LEVEL": "INFO",
                  "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
        p = subprocess.run([EMIT, "1"], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("'trace_endpoint'", p.stderr)
        self.assertIn("http://127.0.0.1:9/v1/traces", p.stderr)  # what was used instead


if __name__ == "__main__":
    unittest.main()
