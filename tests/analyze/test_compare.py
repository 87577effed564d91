# SPDX-License-Identifier: Apache-2.0
"""test_compare.py — servprof compare on hand-made fixtures: a run against an
identical one flags nothing, the --fail-if gates and their exit status,
spans present in one run only, and the CLI's conventions."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from support import analyze_fixture as fixture  # noqa: E402

CLI = os.environ["SERVPROF_BIN"]


def compare(a, b, *extra):
    return subprocess.run([CLI, "compare", a, b, *extra], capture_output=True, text=True, timeout=120)


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sp-compare-")
        cls.a = fixture.build(os.path.join(cls.tmp, "a"))
        cls.same = fixture.build(os.path.join(cls.tmp, "same"))
        cls.slow = fixture.build(os.path.join(cls.tmp, "slow"), scale=1.5)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def doc(self, a, b, *extra, rc=0):
        p = compare(a, b, "--format", "json", *extra)
        self.assertEqual(p.returncode, rc, p.stderr)
        return json.loads(p.stdout)

    def test_identical_runs_flag_nothing(self):
        d = self.doc(self.a, self.same)
        self.assertEqual(d["test"]["method"], "bootstrap")
        self.assertFalse([r["metric"] for r in d["rows"] if r["significant"]])
        e2e = [r for r in d["rows"] if r["metric"] == "e2e.mean"][0]
        self.assertEqual((e2e["a"], e2e["b"], e2e["change_pct"]), (e2e["a"], e2e["a"], 0))
        self.assertEqual(d["verdict"], "pass")

    def test_rows_sorted_by_share_of_e2e_change(self):
        d = self.doc(self.a, self.slow)
        keys = [r["metric"] for r in d["rows"]]
        self.assertEqual(keys[:4], ["e2e.mean", "e2e.p50", "e2e.p90", "e2e.p99"])
        shares = [abs(r["share_of_e2e_change"]) for r in d["rows"][4:] if r["share_of_e2e_change"] is not None]
        self.assertEqual(shares, sorted(shares, reverse=True))
        # the slower engine: every exec step is 1.5x, so the decode step time rises 50%
        dec = [r for r in d["rows"] if r["metric"] == "step.decode.ms_mean"][0]
        self.assertAlmostEqual(dec["change_pct"], 50, places=3)
        # the P99 of 3 requests is not tested (5 values beyond it needed)
        p99 = [r for r in d["rows"] if r["metric"] == "ttft.p99"][0]
        self.assertIsNone(p99["significant"])

    def test_fail_if_gates(self):
        # a run-level figure (no test) trips on the change alone: throughput fell by a third
        p = compare(self.a, self.slow, "--fail-if", "throughput.rps<-10%")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("-> FAIL", p.stdout)
        p = compare(self.a, self.same, "--fail-if", "throughput.rps<-10%", "--fail-if=e2e.mean>+5%")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # a tested metric trips only when its bootstrap interval excludes 0: 3 requests cannot show it
        p = compare(self.a, self.slow, "--fail-if", "e2e.mean>+5%")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("(interval includes 0)", p.stdout)
        # absolute limits in the metric's unit
        p = compare(self.a, self.slow, "--fail-if", "step.decode.ms_mean>0.5ms")
        self.assertEqual(p.returncode, 3, p.stdout)

    def test_bad_gates_and_usage(self):
        for expr, word in (("ttft.p99", "expected"), ("ttft.p99>x%", "number"), ("nosuch.mean>1%", "nosuch")):
            p = compare(self.a, self.same, "--fail-if", expr)
            self.assertEqual(p.returncode, 2, expr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(word, p.stderr)
        p = subprocess.run([CLI, "compare", "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("Exit status", p.stdout)
        for args in (["--format", "xml"], ["--resamples", "3"], ["--bogus"], ["--min-abs-ms=-1"]):
            p = compare(self.a, self.same, *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        p = subprocess.run([CLI, "compare", self.a], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        p = compare(self.a, "/nonexistent/b")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/b", p.stderr)

    def test_spans_in_one_run_only(self):
        other = os.path.join(self.tmp, "other")
        s = fixture.Store(os.path.join(other, "Trace_Service", "ms_service_h-100.db"), "h", 100)
        s.event("httpReq", 0, "Request", rid="x")
        s.span("sampling", 1, 2, "Execute", rid="x")
        s.span("modelExec", 2, 4, "ModelExecute", rid=[{"rid": "x", "iter": 0, "type": 0}])
        s.event("httpRes", 5, "Request", rid="x", **{"recvTokenSize=": 5, "replyTokenSize=": 1})
        s.close()
        d = self.doc(self.a, other)
        self.assertIn("sampling", d["spans_only_in_b"])
        self.assertIn("tokenize", d["spans_only_in_a"])
        self.assertNotIn("modelExec", d["spans_only_in_a"])
        p = compare(self.a, other)
        self.assertIn("spans only in B: sampling", p.stdout)

    def test_output_folder_has_the_references_csv_and_the_json(self):
        out = os.path.join(self.tmp, "cmp", "out")  # parents made, as parse makes its folder
        p = compare(self.a, self.slow, "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("e2e", p.stdout)  # the text is still printed
        with open(os.path.join(out, "compare.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "servprof-compare/1")
        import csv
        with open(os.path.join(out, "span_comparation_result.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        cols = ["name", "Golden-AVG", "Golden-P50", "Golden-P90", "Input-AVG", "Input-P50", "Input-P90",
                "DIFF-AVG", "DIFF-P50", "DIFF-P90", "RDIFF-AVG(%)", "RDIFF-P50(%)", "RDIFF-P90(%)"]
        self.assertEqual(list(rows[0].keys()), cols)
        byname = {r["name"]: r for r in rows}
        fwd = byname["forward"]
        by = {r["metric"]: r for r in doc["rows"]}
        for stat, ref in (("mean", "AVG"), ("p50", "P50"), ("p90", "P90")):
            a, b = by["span.forward." + stat]["a"], by["span.forward." + stat]["b"]
            self.assertAlmostEqual(float(fwd["Golden-" + ref]), a, places=6)  # Golden = A
            self.assertAlmostEqual(float(fwd["Input-" + ref]), b, places=6)   # Input = B
            self.assertAlmostEqual(float(fwd["DIFF-" + ref]), b - a, places=6)
            self.assertAlmostEqual(float(fwd["RDIFF-%s(%%)" % ref]), (b - a) / a * 100, places=4)
        self.assertGreater(float(fwd["RDIFF-AVG(%)"]), 0)  # the slow run is slower
        # an output that cannot be made: exit 1, one line
        blocker = os.path.join(self.tmp, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        p = compare(self.a, self.same, "-o", os.path.join(blocker, "out"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("a-file", p.stderr)


if __name__ == "__main__":
    unittest.main()
