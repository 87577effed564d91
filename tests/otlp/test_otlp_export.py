# SPDX-License-Identifier: Apache-2.0
"""test_otlp_export.py — `servprof export STORE --to otlp+http://HOST:PORT`:
a past run replayed as traces, checked against what the live exporter sent
for the same requests.

otlp_emit runs once with a store session open AND live tracing on (to a
first receiver); the store is then replayed to a second receiver. The two
must name the same requests, in the same traces, with the same parents (the
callers' spans from the stored traceparents), the same gen_ai attribute
types, and the same TTFT / e2e / queue wait (request.csv's rules on both
sides; the live side is in the library, the replay takes the parse's row),
the same scheduler / execute / forward times and the same children, queue
and decode at the same times (the replay sums the stored step records by
the live rule).
Skips (77) when the tool has no `export` verb yet.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    from otlp_receiver import Receiver
except Exception as e:
    print("SKIP: %s" % e)
    sys.exit(77)
from test_otlp import EMIT, BUILD  # noqa: E402

CLI = os.environ.get("SERVPROF_BIN", os.path.join(BUILD, "bin", "servprof"))
# an unknown scheme lists the known ones: is otlp+http:// among them?
p = subprocess.run([CLI, "export", tempfile.mkdtemp(prefix="otlp-probe-"), "--to", "nosuch://x"],
                   capture_output=True, text=True)
if "otlp+http://" not in p.stdout + p.stderr:
    print("SKIP: servprof has no export verb with otlp+http:// (tool/export)")
    sys.exit(77)


def by_rid(rx):
    out = {}
    for _, _, s in rx.spans():
        if s.name == "llm_request":
            a = {kv.key: kv.value for kv in s.attributes}
            out[a["gen_ai.request.id"].string_value] = (s, a)
    return out


def kids(rx, parent):
    """{child name: (start, end)} of a span's children."""
    return {s.name: (s.start_time_unix_nano, s.end_time_unix_nano)
            for _, _, s in rx.spans() if s.parent_span_id == parent.span_id}


class Replay(unittest.TestCase):
    def test_replay_matches_live(self):
        tmp = tempfile.mkdtemp(prefix="otlp-export-")
        prof = os.path.join(tmp, "prof")
        cfg = os.path.join(tmp, "cfg.json")
        with open(cfg, "w") as f:
            json.dump({"enable": 1, "prof_dir": prof}, f)
        live = Receiver().start()
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MS_"))}
            env.update(SERVICE_PROF_CONFIG_PATH=cfg, MS_TRACE_ENABLE="1", HOME=tmp,
                       OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=live.url, OTEL_BSP_SCHEDULE_DELAY="50")
            p = subprocess.run([EMIT, "8", "--parent", "sampled", "--fail-every", "4"], env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            live.stop()
        rx = Receiver(["503"]).start()  # one retry on the way
        try:
            port = rx.url.split(":")[2].split("/")[0]
            q = subprocess.run([CLI, "export", prof, "--to", "otlp+http://127.0.0.1:%s" % port],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
            self.assertIn("8 requests", q.stdout)
        finally:
            rx.stop()
        a, b = by_rid(live), by_rid(rx)
        self.assertEqual(sorted(a), sorted(b))
        self.assertEqual(len(a), 8)
        for rid in a:
            (ls, la), (rs, ra) = a[rid], b[rid]
            self.assertEqual(rs.trace_id, ls.trace_id)
            self.assertEqual(rs.parent_span_id, ls.parent_span_id)
            self.assertEqual(rs.kind, 2)
            self.assertEqual(rs.status.code, ls.status.code)
            self.assertEqual(rs.start_time_unix_nano, ls.start_time_unix_nano)
            for k, v in ra.items():
                if k in la:
                    self.assertEqual(v.WhichOneof("value"), la[k].WhichOneof("value"), k)
            for k in ("gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e",
                      "gen_ai.latency.time_in_queue"):
                self.assertAlmostEqual(ra[k].double_value, la[k].double_value, places=6, msg=k)
            # the engine's side from the step records, by the live rule (summed over
            # the steps naming the request's engine id, joined by its Link)
            for k in ("gen_ai.latency.time_in_scheduler", "gen_ai.latency.time_in_model_forward",
                      "gen_ai.latency.time_in_model_execute"):
                self.assertIn(k, la, k)
                self.assertIn(k, ra, "replay lacks %s" % k)
                self.assertGreater(ra[k].double_value, 0, k)
                self.assertAlmostEqual(ra[k].double_value, la[k].double_value, places=6, msg=k)
            rk, lk = kids(rx, rs), kids(live, ls)
            self.assertEqual(sorted(rk), sorted(lk), rid)
            self.assertIn("queue", rk)
            # the queue child from the same records; prefill's start is the row's
            # (first step) in replay, the Dequeue live: not compared
            self.assertEqual(rk["queue"], lk["queue"], rid)
            self.assertEqual(rk["decode"], lk["decode"], rid)
        # a second replay gives the same ids (a backend keeps one copy)
        rx2 = Receiver().start()
        try:
            port = rx2.url.split(":")[2].split("/")[0]
            subprocess.run([CLI, "export", prof, "--to", "otlp+http://127.0.0.1:%s" % port],
                           capture_output=True, text=True, timeout=300, check=True)
        finally:
            rx2.stop()
        c = by_rid(rx2)
        self.assertEqual({r: s.span_id for r, (s, _) in c.items()}, {r: s.span_id for r, (s, _) in b.items()})


if __name__ == "__main__":
    unittest.main()
