# SPDX-License-Identifier: Apache-2.0
"""test_pd.py — the disaggregated demo end to end: tiny-llm-pd's decode,
prefill and router processes on 127.0.0.1 with collection on; a client
sends requests to the router and times each one's first token; then
`servprof parse` must find every request's complete hand-off
(pd_split_communication.csv), one KV pull each with the real bytes moved
(pd_split_kvcache.csv), the coordinator's four moments, and parts (prefill
on P, the send, the KV transfer, D's first decode) that fit inside the
parsed TTFT, which fits inside the client's.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from support.demo_util import BUILD, CLI, SLACK  # noqa: E402

PD = os.path.join(BUILD, "bin", "tiny-llm-pd")
N_REQ = 6
BLOCK_BYTES = 2 * 2 * 16 * 64 * 4  # K and V x layers x block_size x d_model x float


def read_csv(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Proc:
    def __init__(self, tmp, role, env, *extra):
        self.port_file = os.path.join(tmp, role + ".port")
        self.log = open(os.path.join(tmp, role + ".log"), "wb")
        self.proc = subprocess.Popen([PD, "--role", role, "--port", "0", "--port-file", self.port_file, *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30 * SLACK
        while not os.path.exists(self.port_file):  # bounded wait on the condition
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("%s did not start" % role)
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.proc.wait(timeout=30 * SLACK)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return -9
            finally:
                self.log.close()
        return self.proc.returncode


def profiled_env(tmp):
    """A config with collection on, writing under tmp/prof: (prof dir, environment)."""
    prof, cfg = os.path.join(tmp, "prof"), os.path.join(tmp, "cfg.json")
    with open(cfg, "w") as f:
        json.dump({"enable": 1, "prof_dir": prof, "profiler_level": "INFO"}, f)
    return prof, dict(os.environ, SERVICE_PROF_CONFIG_PATH=cfg)


def generate(port, prompt, max_tokens):
    """Returns (tokens, ns from sending to the first token)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60 * SLACK) as s, s.makefile("rb") as f:
        t0 = time.time_ns()
        s.sendall(("GEN %d %d %s\n" % (max_tokens, len(prompt), " ".join(map(str, prompt)))).encode())
        toks, first = [], None
        for _ in range(max_tokens + 2):
            line = f.readline().decode().strip()
            if line.startswith("TOK "):
                if first is None:
                    first = time.time_ns() - t0
                toks.append(int(line[4:]))
            else:
                assert line == "END", line
                return toks, first
        raise AssertionError("no END")


class PdDemo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        prof, env = profiled_env(cls.tmp.name)
        d = Proc(cls.tmp.name, "decode", env)
        p = Proc(cls.tmp.name, "prefill", env)
        r = Proc(cls.tmp.name, "router", env, "--prefill-port", str(p.port), "--decode-port", str(d.port))
        try:
            cls.client = []
            for i in range(N_REQ):
                prompt = [(7 * i + j) % 1000 for j in range(20 + 9 * i)]  # 20..65 tokens: 2..5 blocks
                toks, ttft = generate(r.port, prompt, 4 + i)
                cls.client.append((prompt, toks, ttft))
            # the same prompt twice gives the same tokens: the KV moved intact
            cls.again = generate(r.port, cls.client[2][0], 4 + 2)[0]
        finally:
            cls.rcs = [x.stop() for x in (r, p, d)]
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.parse = subprocess.run([CLI, "parse", prof, "-o", cls.out, "--no-progress", "-q"],
                                   capture_output=True, text=True, timeout=300 * SLACK)
        cls.comm = read_csv(os.path.join(cls.out, "pd_split_communication.csv"))
        cls.kv = read_csv(os.path.join(cls.out, "pd_split_kvcache.csv"))
        cls.coord = read_csv(os.path.join(cls.out, "coordinator.csv"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_processes_and_parse_ok(self):
        self.assertEqual(self.rcs, [0, 0, 0])
        self.assertEqual(self.parse.returncode, 0, self.parse.stderr)

    def test_client_got_every_token(self):
        for i, (_, toks, ttft) in enumerate(self.client):
            self.assertEqual(len(toks), 4 + i)
            self.assertIsNotNone(ttft)
        self.assertEqual(self.again, self.client[2][1])

    def test_every_request_has_a_complete_handoff_row(self):
        self.assertEqual(len(self.comm), N_REQ + 1)
        for r in self.comm:
            for col in ("http_req_time(ms)", "send_request_time(ms)", "send_request_succ_time(ms)",
                        "prefill_res_time(ms)", "request_end_time(ms)", "prefill_time(ms)", "send_time(ms)",
                        "kv_transfer_time(ms)", "first_decode_time(ms)", "ttft(ms)", "handoff_share"):
                self.assertNotEqual(r[col], "", (r["rid"], col))
            self.assertTrue(r["rid"].startswith("req-"), r["rid"])  # named by the router's id

    def test_parts_add_up_within_ttft(self):
        for r, (_, _, client_ns) in zip(self.comm, self.client):
            parts = [float(r[c]) for c in ("prefill_time(ms)", "send_time(ms)", "kv_transfer_time(ms)",
                                           "first_decode_time(ms)")]
            for x in parts:
                self.assertGreaterEqual(x, 0.0, r)
            ttft = float(r["ttft(ms)"])
            # prefill on P (to the router's send), the KV pull (D starts it after the send
            # reached it), D's first decode (from the pull's end): disjoint stretches of the
            # first token's path, so they fit in the TTFT, the rest being the messages between
            # them; and the client, which sent before the router received and read after D
            # sent, saw a TTFT at least as long. (The router's sendReqToDSucc may be noted
            # after D has begun: send_time overlaps the pull.)
            prefill, _, pull, first = parts
            self.assertLessEqual(prefill + pull + first, ttft + 0.003, r)
            self.assertLessEqual(ttft, client_ns / 1e6 + 0.001, r)
            self.assertTrue(0.0 < float(r["handoff_share"]) < 1.0, r)

    def test_kv_pull_rows_carry_the_bytes(self):
        self.assertEqual(len(self.kv), N_REQ + 1)
        by_rid = {r["rid"]: r for r in self.kv}
        for r, (prompt, _, _) in zip(self.comm, self.client):
            k = by_rid[r["rid"]]
            blocks = (len(prompt) + 15) // 16
            self.assertEqual(int(k["kv_bytes"]), blocks * BLOCK_BYTES)
            self.assertEqual(len(json.loads(k["block_tables"])[0]), blocks)
            self.assertEqual(json.loads(k["batch_seq_len"]), [len(prompt)])
            self.assertGreater(float(k["transfer_rate(MB/s)"]), 0.0)

    def test_timeline_follows_each_request_across_instances(self):
        with open(os.path.join(self.out, "chrome_tracing.json")) as f:
            ev = json.load(f)
        ev = ev["traceEvents"] if isinstance(ev, dict) else ev
        names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
        self.assertEqual(len(set(names)), 3, names)  # one process group per instance
        pids = {}
        for e in ev:
            if e.get("ph") in ("s", "t", "f") and e.get("cat") == "request":
                pids.setdefault(e["id"], set()).add(e["pid"])
        across = [i for i, p in pids.items() if len(p) == 3]  # router -> P -> D, one flow
        self.assertEqual(len(across), N_REQ + 1, pids)

    def test_request_csv_joined_across_instances(self):
        rows = {r["http_rid"]: r for r in read_csv(os.path.join(self.out, "request.csv"))}
        self.assertEqual(len(rows), N_REQ + 1)  # router, P and D ids are one request each
        for r, (prompt, toks, _) in zip(self.comm, self.client):
            q = rows[r["rid"]]
            self.assertEqual(q["recv_token_size"], str(len(prompt)))
            self.assertEqual(q["reply_token_size"], str(len(toks)))
            # first token: D's first decode event, joined to the router's id by Link; request.csv
            # counts from httpReq, recorded just before receiveReq (and before the prefill)
            gap = float(q["first_token_latency(ms)"]) - float(r["ttft(ms)"])
            self.assertTrue(-0.0015 <= gap <= float(r["prefill_time(ms)"]), (gap, q, r))

    def analyze(self, *extra):
        p = subprocess.run([CLI, "analyze", "-i", self.out, "--format", "json", *extra], capture_output=True,
                           text=True, timeout=120 * SLACK)
        self.assertEqual(p.returncode, 0, p.stderr)
        return {f["id"]: f for f in json.loads(p.stdout)["findings"]}

    def test_analyze_pd_findings(self):
        # requests one at a time through one P and one D, one rank: no imbalance, no slow rank
        f = self.analyze()
        self.assertNotIn("pd_imbalance", f)
        self.assertNotIn("slow_kv_pull", f)
        # the hand-off figure is the mean of the report's shares (threshold 0: it always fires)
        h = self.analyze("--threshold", "handoff_share=0")["handoff"]
        shares = [float(r["handoff_share"]) for r in self.comm]
        self.assertAlmostEqual(h["figure"]["value"], sum(shares) / len(shares), places=5)
        self.assertIn(h["examples"][0]["rid"], {r["rid"] for r in self.comm})

    def test_coordinator_moments(self):
        per = {}
        for r in self.coord:
            per.setdefault(r["rid"], []).append(r)
        self.assertEqual(len(per), N_REQ + 1)
        for rows in per.values():
            flags = sorted(k for r in rows for k in ("prefillStart", "decodeStart", "prefillEnd", "decodeEnd")
                           if r[k] == "1")
            self.assertEqual(flags, ["decodeEnd", "decodeStart", "prefillEnd", "prefillStart"])
        running = read_csv(os.path.join(self.out, "coordinator_running.csv"))
        for side in ("prefill", "decode"):  # every request started and ended once on each side
            rows = [r for r in running if r["node_type"] == side]
            self.assertEqual(sum(int(r["add_count"]) for r in rows), N_REQ + 1)
            self.assertEqual(sum(int(r["end_count"]) for r in rows), N_REQ + 1)
            self.assertEqual(rows[-1]["running_count"], "0")


if __name__ == "__main__":
    unittest.main()
