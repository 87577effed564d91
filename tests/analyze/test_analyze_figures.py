# SPDX-License-Identifier: Apache-2.0
"""test_analyze_figures.py — servprof analyze's figures against values worked
out by hand on fixture.py, from raw stores and from a parse output folder,
the `complete` column, threshold overrides and the CLI's conventions."""
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import unittest

from support import analyze_fixture as fixture  # noqa: E402

CLI = os.environ["SERVPROF_BIN"]


def fixture_ns(ms):
    return fixture.T0 + int(round(ms * 1e6))


def analyze(path, *extra, rc=0):
    p = subprocess.run([CLI, "analyze", "-i", path, "--format", "json", *extra], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout) if rc == 0 else p


def rows(doc, part):
    return {r["metric"]: r for r in doc["summaries"][part]}


class Figures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sp-analyze-")
        cls.raw = fixture.build(os.path.join(cls.tmp, "raw"))
        cls.doc = analyze(cls.raw)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def close(self, a, b, msg=""):
        self.assertAlmostEqual(a, b, places=3, msg=msg)

    def test_request_summary(self):
        r = rows(self.doc, "request")
        self.assertEqual(list(r), ["first_token_latency (ms)", "subsequent_token_latency (ms)", "total_time (ms)",
                                   "exec_time (ms)", "waiting_time (ms)", "input_token_num", "generated_token_num"])
        # TTFT 10 (r1: 0 -> 10), 16 (r2: 5 -> 21), 4 (r3: 40 -> 44); P90 of [4, 10, 16]: 10 + 0.8 * 6
        t = r["first_token_latency (ms)"]
        for k, v in (("average", 10), ("min", 4), ("max", 16), ("p50", 10), ("p90", 14.8), ("p99", 15.88)):
            self.close(t[k], v, k)
        # TPOT (end - first token) / (out - 1): r1 (26-10)/2 = 8, r2 (34-21)/2 = 6.5, r3 none (1 token)
        self.close(r["subsequent_token_latency (ms)"]["average"], 7.25)
        self.close(r["total_time (ms)"]["average"], (26 + 29 + 4) / 3)
        # exec time: r1 6+8+2, r2 8+2+2, r3 2
        self.close(r["exec_time (ms)"]["average"], (16 + 12 + 2) / 3)
        self.close(r["exec_time (ms)"]["max"], 16)
        self.close(r["waiting_time (ms)"]["average"], (2 + 6 + 0.5) / 3)
        self.close(r["input_token_num"]["average"], 170 / 3)
        self.close(r["generated_token_num"]["max"], 3)

    def test_batch_and_service_summary(self):
        b = rows(self.doc, "batch")
        self.assertEqual(list(b), ["prefill_batch_num", "decode_batch_num", "mixed_batch_num",
                                   "prefill_exec_time (ms)", "decode_exec_time (ms)", "mixed_exec_time (ms)"])
        self.close(b["prefill_batch_num"]["average"], 1)
        self.close(b["decode_batch_num"]["average"], 1.5)  # steps 3 (2 requests) and 4 (1)
        self.close(b["mixed_batch_num"]["max"], 2)
        self.close(b["prefill_exec_time (ms)"]["average"], 4)  # 6 and 2
        self.close(b["decode_exec_time (ms)"]["average"], 2)
        self.close(b["mixed_exec_time (ms)"]["average"], 8)
        s = {r["metric"]: r["value"] for r in self.doc["summaries"]["service"]}
        self.close(s["total_input_token_num"], 170)
        self.close(s["total_generated_token_num"], 7)
        self.close(s["generate_token_speed (token/s)"], 7 / 0.044)  # first start 0, last end 44 ms
        self.close(s["generate_all_token_speed (token/s)"], 177 / 0.044)

    def test_headline_and_time_budget(self):
        h = self.doc["headline"]
        self.assertEqual((h["requests"], h["complete"], h["incomplete"]), (3, 3, 0))
        self.close(self.doc["run"]["duration_s"], 0.044)
        self.close(h["kv_usage_peak"], 0.6)
        self.close(h["batch_size_mean"], 7 / 5)
        # busy: forwards 6+8+2+2+2 = 20 ms; work: requests in flight 0-34 and 40-44 = 38 ms
        self.close(h["busy_frac"], 20 / 44)
        self.close(h["stalled_frac"], 18 / 44)
        self.close(h["idle_frac"], 6 / 44)
        self.close(h["ttft_ms"]["mean"], 10)
        self.close(h["queue_ms"]["max"], 6)

    def test_ttft_breakdown(self):
        by = {r["rid"]: r for r in self.doc["ttft_breakdown"]["requests"]}
        # r1: queue 2, prefill = exec 4-10, first token at its end, the rest (tokenize, scheduling) 2
        for rid, parts in (("r1", (2, 2, 6, 0)), ("r2", (6, 2, 8, 0)), ("r3", (0.5, 1.5, 2, 0))):
            r = by[rid]
            got = (r["queue_ms"], r["schedule_ms"], r["prefill_ms"], r["first_decode_wait_ms"])
            for g, want in zip(got, parts):
                self.close(g, want, rid)
            self.close(sum(got), r["ttft_ms"], rid)

    def test_findings_ranked_with_evidence(self):
        f = self.doc["findings"]
        # stalled 18/44 = 0.41 of the run; the mixed step takes 8 ms against 2 ms decode-only steps (4x) and
        # its one decoding request (r1) waited 6 ms for r2's prefill: 6 of 59 ms of e2e in all = 0.10;
        # queue 2.83 / 19.7 ms mean e2e = 0.14 (< 0.2); idle 6/44 = 0.14 (< 0.5)
        self.assertEqual([x["id"] for x in f], ["host_stalls", "prefill_interference"])
        self.assertEqual([x["rank"] for x in f], [1, 2])
        stall, interf = f
        self.close(stall["score"], 18 / 44)
        self.assertEqual(stall["threshold"], {"name": "stall_frac", "value": 0.2, "op": ">="})
        # the longest stretch with work in flight and no forward: 25 -> 31 ms
        self.assertEqual(stall["examples"][0]["what"], "device idle 6.00 ms with work in flight")
        self.assertEqual(stall["examples"][0]["ts_ns"], fixture_ns(25))
        self.assertTrue(stall["knob"])
        self.close(interf["figure"]["value"], 4)
        self.close(interf["score"], 6 / 59)
        self.assertEqual(interf["examples"][0]["ts_ns"], fixture_ns(13))
        self.assertEqual(self.doc["headline"]["verdict"], "bottleneck")
        self.assertEqual(self.doc["headline"]["top_finding"], "host_stalls")
        d = analyze(self.raw, "--threshold", "interference_share=0.11")
        self.assertEqual([x["id"] for x in d["findings"]], ["host_stalls"])

    def test_threshold_override(self):
        d = analyze(self.raw, "--threshold", "interference_ratio=5", "--threshold=stall_frac=0.5")
        self.assertEqual([x["id"] for x in d["findings"]], [])
        self.assertEqual(d["thresholds"]["interference_ratio"], 5)
        self.assertEqual(d["headline"]["verdict"], "no_bottleneck")

    def test_profiler_db_gives_the_same_document(self):
        out = os.path.join(self.tmp, "parsed")
        subprocess.run([CLI, "parse", "--input-path", self.raw, "--output-path", out, "--no-progress", "--quiet"],
                       check=True, capture_output=True, timeout=120)
        d = analyze(out)
        self.assertEqual(d["source"], "profiler.db")
        self.assertIsNone(d["run"]["records"])
        for k in ("headline", "summaries", "findings", "ttft_breakdown", "slowest"):
            self.assertEqual(json.dumps(d[k], sort_keys=True), json.dumps(self.doc[k], sort_keys=True), k)
        # a request the collection window cut (complete = 0) leaves the latency figures
        db = os.path.join(out, "profiler.db")
        con = sqlite3.connect(db)
        cols = [r[1] for r in con.execute("PRAGMA table_info(request)")]
        if "complete" not in cols:
            con.execute("ALTER TABLE request ADD COLUMN complete INTEGER DEFAULT 1")
        con.execute("UPDATE request SET complete = (http_rid != 'r2')")
        con.commit()
        con.close()
        d = analyze(out)
        h = d["headline"]
        self.assertEqual((h["complete"], h["incomplete"]), (2, 1))
        self.assertEqual(h["ttft_ms"]["n"], 2)
        self.close(h["ttft_ms"]["max"], 10)

    def test_output_files(self):
        out = os.path.join(self.tmp, "analysis")
        p = subprocess.run([CLI, "analyze", "-i", self.raw, "-o", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("[prefill_interference]", p.stdout)
        with open(os.path.join(out, "request_summary.csv")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "Metric,Average,Max,Min,P50,P90,P99")
        self.assertEqual(lines[1], "first_token_latency (ms),10.0000,16.0000,4.0000,10.0000,14.8000,15.8800")
        with open(os.path.join(out, "service_summary.csv")) as f:
            self.assertEqual(f.readline().strip(), "Metric,Value")
        for name in ("batch_summary.csv", "findings.csv", "windows.csv", "ttft_breakdown.csv"):
            self.assertTrue(os.path.getsize(os.path.join(out, name)) > 0, name)
        with open(os.path.join(out, "analyze.json")) as f:
            self.assertEqual(json.load(f)["findings"][0]["id"], "host_stalls")
        p = subprocess.run([CLI, "analyze", "-i", self.raw, "--format", "csv"], capture_output=True, text=True)
        self.assertIn("# batch_summary.csv\nMetric,Average,Max,Min,P50,P90,P99\n", p.stdout)

    def test_windows(self):
        d = analyze(self.raw, "--windows=4")
        w = [r for r in d["windows"]["rows"] if r["scope"] == "all"]
        self.assertEqual(len(w), 4)
        self.assertEqual(sum(r["finished"] for r in w), 3)
        for r in w:
            self.close(r["busy_frac"] + r["stalled_frac"] + r["idle_frac"], 1)
        # window 0 is 0-11 ms: forward 4-10 busy (6 of 11 ms), the rest stalled (r1 in flight)
        self.close(w[0]["busy_frac"], 6 / 11, "window 0")
        self.assertEqual(w[0]["steps"]["prefill"]["count"], 1)


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60)

    def test_help_and_usage_errors(self):
        p = self.run_cli("analyze", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: servprof analyze", p.stdout)
        for args, word in ((["--format", "xml"], "--format"), (["--windows", "0"], "--windows"),
                           (["--threshold", "nope=1"], "--threshold"), (["--bogus"], "--bogus"),
                           (["--window=-1"], "--window")):
            p = self.run_cli("analyze", "-i", ".", *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(word, p.stderr)

    def test_bad_inputs(self):
        p = self.run_cli("analyze", "-i", "/nonexistent/x")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/x", p.stderr)
        with tempfile.TemporaryDirectory() as d:
            p = self.run_cli("analyze", "-i", d)
            self.assertEqual(p.returncode, 1)
            self.assertIn("no raw store", p.stderr)
            with open(os.path.join(d, "profiler.db"), "w") as f:
                f.write("not a database")
            p = self.run_cli("analyze", "-i", d)
            self.assertEqual(p.returncode, 1)
            self.assertIn("profiler.db", p.stderr)


if __name__ == "__main__":
    unittest.main()
