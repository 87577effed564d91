# SPDX-License-Identifier: Apache-2.0
"""test_e2e.py — the demo end to end, shorter: tiny-llm-server starts with a
servprof config whose collection is off; servprof-load sends Poisson load;
`servprof enable` turns collection on while it runs, `servprof disable` off
again; a client leaves mid-stream while collection is on; the server stops;
`servprof parse` writes the reports. Then:
  - every report is non-empty (CSV rows, timeline events, profiler.db rows);
  - every panel of both Grafana dashboards (ours and the reference's, see
    tests/support/dashqueries.py) returns rows with times inside the run and
    numbers, on this profiler.db with the run's own time range;
  - the requests that ended while collection was on — as the server told
    each client in its last event ("profiled" >= 1) — are exactly the
    request.csv rows with a reply size (so the counts are equal);
  - the profile's TTFT of each request recorded from its start is within a
    few ms of the TTFT its client measured;
  - the client that left is in the profile as aborted, its KV blocks freed.
"""
import csv
import glob
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time
import unittest

from support.demo_util import CLI, LOAD, SANITIZE, SLACK, SMALL_MODEL, Server

from support.dashqueries import check_dashboards  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def leave_mid_stream(port):
    """Starts a long streamed request, reads its first token, hangs up.
    Returns the request id."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60 * SLACK)
    body = json.dumps({"prompt_tokens": list(range(3, 60)), "max_tokens": 400, "stream": True})
    s.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    got = b""
    while b"data: " not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()
    for line in got.decode(errors="replace").split("\r\n"):
        if line.lower().startswith("x-request-id:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("no X-Request-Id in: %r" % got[:300])


class EndToEnd(unittest.TestCase):
    def test_profile_matches_clients(self):
        work = tempfile.mkdtemp(prefix="tl-e2e-")
        cfg = os.path.join(work, "profiler.json")
        prof = os.path.join(work, "prof")
        with open(cfg, "w") as f:
            json.dump({"enable": 0, "prof_dir": prof, "profiler_level": "INFO"}, f)
        if SANITIZE:
            model = SMALL_MODEL
            load = ["--rate", "4", "--duration", "8", "--prompt-len", "24:96", "--output-len", "8:24",
                    "--shared-prefix", "32"]
        else:
            model = []
            load = ["--rate", "12", "--duration", "7", "--prompt-len", "64:256", "--output-len", "16:64"]
        srv = Server(model, env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=work)
        client_csv = os.path.join(work, "client.csv")
        with srv:
            lg = subprocess.Popen([LOAD, "--port", str(srv.port), *load, "--out", client_csv,
                                   "--vocab", "1024" if SANITIZE else "2048", "--quiet"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            # Collection starts mid-load: once some requests have ended
            # unprofiled while others are in flight.
            h = srv.wait_health(lambda h: h["completed"] >= 3 and h["running"] + h["waiting"] > 0, 20)
            self.assertGreaterEqual(h["completed"], 3, "the load did not start:\n" + srv.output())
            subprocess.run([CLI, "enable", cfg], check=True, capture_output=True)
            h = srv.wait_health(lambda h: h["profiling_level"] > 0, 5)
            self.assertEqual(h["profiling_level"], 20, "collection did not start:\n" + srv.output())
            on = h
            left_id = leave_mid_stream(srv.port)
            # It stops once the engine has ended the client that left (its
            # httpRes "aborted" is recorded then) and `whole` requests that
            # were submitted after `on` was read, hence recorded from their
            # start, have completed: at most on["submitted"] completions
            # are of earlier ones. About as many as 3 s of the load gave.
            whole = 10 if SANITIZE else 30
            h = srv.wait_health(lambda h: h["aborted"] > on["aborted"]
                                and h["completed"] - on["submitted"] >= whole, 20)
            self.assertGreater(h["aborted"], on["aborted"], "the client's leaving was not seen")
            self.assertGreaterEqual(h["completed"] - on["submitted"], whole,
                                    "too few requests while collection was on: %s" % h)
            subprocess.run([CLI, "disable", cfg], check=True, capture_output=True)
            h = srv.wait_health(lambda h: h["profiling_level"] == 0, 5)
            self.assertEqual(h["profiling_level"], 0, "collection did not stop:\n" + srv.output())
            out, _ = lg.communicate(timeout=120 * SLACK)
            self.assertEqual(lg.returncode, 0, out)
            self.assertEqual(srv.stop(), 0, srv.output())
        log = srv.output()
        self.assertIn("Profiler Enabled Successfully!", log)
        self.assertIn("Profiler Disabled Successfully!", log)

        outdir = os.path.join(work, "out")
        p = subprocess.run([CLI, "parse", "--input-path", prof, "--output-path", outdir],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        # Every report is non-empty.
        for name in ["request.csv", "batch.csv", "forward.csv", "kvcache.csv", "request_status.csv"]:
            with self.subTest(report=name):
                self.assertGreater(len(rows(os.path.join(outdir, name))), 0, name)
        with open(os.path.join(outdir, "chrome_tracing.json")) as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        self.assertGreater(len(events), 100)
        db = sqlite3.connect(os.path.join(outdir, "profiler.db"))
        for table in ["request", "batch", "forward", "kvcache"]:
            with self.subTest(table=table):
                self.assertGreater(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0], 0)
        # Every panel of our Grafana dashboard and of the reference's, with the run's own time range.
        check_dashboards(self, db, kv_in_utc=time.localtime().tm_gmtoff == 0)
        db.close()

        # The requests that ended while collection was on are request.csv's.
        clients = {r["id"]: r for r in rows(client_csv)}
        ok = {i: r for i, r in clients.items() if not r["error"]}
        self.assertGreater(len(ok), 10, "too few requests completed")
        ended_on = {i for i, r in ok.items() if int(r["profiled"]) >= 1}
        requests = {r["http_rid"]: r for r in rows(os.path.join(outdir, "request.csv"))}
        with_end = {i for i, r in requests.items() if r["reply_token_size"] != "" and i in clients}
        self.assertGreater(len(ended_on), 3)
        self.assertEqual(len(with_end), len(ended_on))
        self.assertEqual(with_end, ended_on)
        for i in ended_on:
            self.assertEqual(int(requests[i]["reply_token_size"]), int(ok[i]["output_tokens"]), i)
            self.assertEqual(int(requests[i]["recv_token_size"]), int(ok[i]["prompt_tokens"]), i)

        # TTFT: profile vs client, for requests recorded from their start.
        full = [i for i in ended_on if int(ok[i]["profiled"]) == 2]
        self.assertGreater(len(full), 3)
        diffs = sorted(abs(float(requests[i]["first_token_latency(ms)"]) - float(ok[i]["ttft_ms"]))
                       for i in full)
        print(f"TTFT profile vs client over {len(diffs)} requests: median {statistics.median(diffs):.3f} ms,"
              f" max {diffs[-1]:.3f} ms")
        # The profile starts at httpReq, the client before connect(): the gap
        # is connection set-up plus thread wake-ups, a few ms on a busy
        # 2-core machine. Its tail is the machine's scheduling latency (one
        # request in ~50 saw 115 ms under a parallel ctest), so only the
        # body of the distribution is bounded; a wrong unit or a wrong event
        # would move the median by far more.
        self.assertLess(statistics.median(diffs), 3.0 * SLACK, diffs)
        self.assertLess(diffs[int(0.75 * (len(diffs) - 1))], 10.0 * SLACK, diffs)
        self.assertLess(diffs[int(0.9 * (len(diffs) - 1))], 25.0 * SLACK, diffs)

        # Prefix caching is visible.
        self.assertTrue(any(r["cache_hit_rate"] not in ("", "0") and float(r["cache_hit_rate"]) > 0
                            for r in requests.values()))

        # The client that left: in the profile, ended as aborted, its blocks freed.
        self.assertIn(left_id, requests)
        stores = glob.glob(os.path.join(prof, "*", "Trace_Service", "ms_service_*.db"))
        self.assertEqual(len(stores), 1, stores)
        st = sqlite3.connect(stores[0])
        engine_id = "seq-" + left_id.split("-", 1)[1]
        res = [json.loads(a) for (a,) in st.execute("SELECT args FROM slice WHERE name = 'httpRes'")]
        mine = [a for a in res if a.get("rid") == left_id]
        self.assertEqual(len(mine), 1, mine)
        self.assertEqual(mine[0]["outcome"], "aborted")
        self.assertNotIn("status", mine[0])  # the reference would read it as a queue state
        self.assertLess(mine[0]["replyTokenSize="], 400)
        # The per-request Link runs front end -> engine.
        links = [json.loads(a) for (a,) in st.execute("SELECT args FROM slice WHERE name = 'Link'")]
        self.assertIn({"from": left_id, "to": engine_id}, [{"from": a["from"], "to": a["to"]} for a in links])
        meta = dict(st.execute("SELECT name, value FROM Meta").fetchall())
        self.assertEqual(meta.get("model_name"), "tiny-llm")
        names = {n for (n,) in st.execute("SELECT DISTINCT name FROM slice")}
        for n in ["httpReq", "tokenize", "Enqueue", "Dequeue", "BatchSchedule", "modelExec", "forward",
                  "KVCacheStatus", "CacheHitRate", "detokenize", "httpRes", "Link"]:
            self.assertIn(n, names)
        self.assertFalse(names & {"Allocate", "Free", "AppendSlot"})
        st.close()


if __name__ == "__main__":
    unittest.main()
