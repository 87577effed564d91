# SPDX-License-Identifier: Apache-2.0
"""test_moe.py — mixture-of-experts serving, end to end: tiny-llm-server with
--moe 8,2,4 (8 experts, top-2, 4 expert-parallel rank threads), collection on
from the start, a few requests one after the other, `servprof parse`,
`servprof analyze`, `servprof report`. Then:
  - planted skew (--moe-skew 3,5@6: two hot experts): expert_imbalance is the
    first finding and names experts 3 and 5 as the hottest two;
  - a balanced router: no expert_imbalance finding;
  - ep_balance.csv's per-rank, per-layer times equal the sums of what the
    ranks' own clock measured (--moe-clock) for the steps in the profile, and
    moe_analysis.csv's means the means of their dispatch + combine times;
  - the column sets are those of docs/compat.md ("Mixture of experts");
  - the timeline has a lane per rank; the report's page has the heat map data;
  - bad --moe / --moe-skew values are refused with a message naming them.
"""
import csv
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import unittest

from support.demo_util import CLI, SANITIZE, SLACK, SMALL_MODEL, Server

try:
    from support import cdp  # noqa: E402  (needs aiohttp; the browser check is skipped without it)
except ImportError:
    cdp = None

RANKS = 4
# docs/compat.md, "Mixture of experts"
COLUMNS = {
    "moe_analysis.csv": ["Dataset", "Mean", "CI_Lower", "CI_Upper"],
    "moe_rank.csv": ["step", "layer", "rank", "start_time(ms)", "dispatch(ms)", "expert_compute(ms)",
                     "combine(ms)", "combine_wait(ms)", "tokens"],
    "expert_load.csv": ["step", "layer", "expert", "rank", "tokens"],
    "eplb_balance.csv": ["step", "start_time(ms)", "layers", "balance_ratio", "max_mean_load", "hot_expert",
                         "hot_expert_share", "slowest_rank", "max_rank_compute(ms)", "mean_rank_compute(ms)",
                         "mean_combine_wait(ms)"],
}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_moe(extra):
    """Serves 10 requests one at a time with --moe 8,2,4 plus extra, parses,
    analyzes. Returns (work dir, output dir, analyze document)."""
    work = tempfile.mkdtemp(prefix="tl-moe-")
    cfg = os.path.join(work, "profiler.json")
    prof = os.path.join(work, "prof")
    with open(cfg, "w") as f:
        json.dump({"enable": 1, "prof_dir": prof, "profiler_level": "INFO"}, f)
    clock = os.path.join(work, "moe-clock.txt")
    # Experts 4x as wide as the dense default: the MoE is most of a step, as in a real MoE model, so
    # host time between steps (long on a loaded CI machine) does not outweigh it
    model = SMALL_MODEL if SANITIZE else ["--d-ff", "2048"]
    args = [*model, "--moe", "8,2,4", "--moe-clock", clock, *extra]
    with Server(args, env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=work) as srv:
        for i in range(10):
            body = json.dumps({"prompt_tokens": [(7 * i + k) % 1000 + 3 for k in range(96)], "max_tokens": 24})
            st, _, out = srv.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            assert st == 200, out
        assert srv.stop() == 0, srv.output()
    out = os.path.join(work, "output")
    subprocess.run([CLI, "parse", "-q", "-i", prof, "-o", out], check=True, timeout=300 * SLACK)
    an = os.path.join(work, "analysis")
    subprocess.run([CLI, "analyze", "-i", out, "-o", an, "--format", "json"], check=True,
                   stdout=subprocess.DEVNULL, timeout=300 * SLACK)
    with open(os.path.join(an, "analyze.json")) as f:
        doc = json.load(f)
    return work, out, doc


def read_clock(path):
    """{(step, layer, rank): (dispatch_ns, compute_ns, combine_ns, rows)} from the ranks' own clock."""
    got = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            s, l, r, d, c, k, n = (int(x) for x in line.split())
            got[(s, l, r)] = (d, c, k, n)
    return got


class Skewed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work, cls.out, cls.doc = run_moe(["--moe-skew", "3,5@6"])  # @6: nearly every row, for margin

    def test_first_finding_names_the_hot_experts(self):
        f = self.doc["findings"]
        self.assertTrue(f, "no findings")
        self.assertEqual(f[0]["id"], "expert_imbalance", [x["id"] for x in f])
        m = re.search(r"hottest experts (\d+) \(\d+%\), (\d+) \(\d+%\)", f[0]["evidence"])
        self.assertIsNotNone(m, f[0]["evidence"])
        self.assertEqual({int(m.group(1)), int(m.group(2))}, {3, 5}, f[0]["evidence"])
        self.assertGreaterEqual(f[0]["figure"]["value"], 1.5)
        self.assertIn("EPLB", f[0]["knob"])
        # the same from the raw stores (the parse's tap, no files)
        an = os.path.join(self.work, "analysis-raw")
        subprocess.run([CLI, "analyze", "-i", os.path.join(self.work, "prof"), "-o", an, "--format", "json"],
                       check=True, stdout=subprocess.DEVNULL, timeout=300 * SLACK)
        with open(os.path.join(an, "analyze.json")) as fh:
            raw = json.load(fh)["findings"]
        self.assertEqual(raw[0]["id"], "expert_imbalance")
        self.assertAlmostEqual(raw[0]["figure"]["value"], f[0]["figure"]["value"], places=3)

    def test_columns_as_in_compat(self):
        for name, cols in COLUMNS.items():
            with open(os.path.join(self.out, name), newline="") as f:
                self.assertEqual(next(csv.reader(f)), cols, name)
        with open(os.path.join(self.out, "ep_balance.csv"), newline="") as f:
            r = list(csv.reader(f))
        self.assertEqual(r[0], [str(i) for i in range(RANKS)])  # one column per rank, no index
        self.assertEqual(len(r) - 1, 2)                          # one row per layer (--layers 2)
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        for t in ("ep_balance", "moe_analysis", "moe_rank", "expert_load", "eplb_balance"):
            self.assertGreater(db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0], 0, t)
        db.close()

    def test_per_rank_times_match_the_ranks_clock(self):
        clock = read_clock(os.path.join(self.work, "moe-clock.txt"))
        prof_steps = {int(r["step"]) for r in rows(os.path.join(self.out, "moe_rank.csv"))}
        self.assertGreater(len(prof_steps), 50)
        want = [[0] * RANKS for _ in range(2)]
        samples = [[] for _ in range(RANKS)]
        for (s, l, r), (d, c, k, _) in clock.items():
            if s in prof_steps:
                want[l][r] += c
                samples[r] += [d, k]
        with open(os.path.join(self.out, "ep_balance.csv"), newline="") as f:
            got = [[int(x) for x in row] for row in list(csv.reader(f))[1:]]
        self.assertEqual(got, want)
        for row in rows(os.path.join(self.out, "moe_analysis.csv")):
            s = samples[int(row["Dataset"])]
            self.assertAlmostEqual(float(row["Mean"]) / (sum(s) / len(s)), 1.0, places=5)
        # every (step, layer, rank) of the profile is one the ranks measured, tokens too
        for r in rows(os.path.join(self.out, "moe_rank.csv")):
            d, c, k, n = clock[(int(r["step"]), int(r["layer"]), int(r["rank"]))]
            self.assertEqual(int(r["tokens"]), n)
            self.assertAlmostEqual(float(r["expert_compute(ms)"]), c / 1e6, delta=0.0015)

    def test_expert_load_and_lanes(self):
        load = {}
        for r in rows(os.path.join(self.out, "expert_load.csv")):
            load[int(r["expert"])] = load.get(int(r["expert"]), 0) + int(r["tokens"])
            self.assertEqual(int(r["rank"]), int(r["expert"]) // 2)  # expert e on rank e / (E/R)
        hot = sorted(load, key=load.get, reverse=True)[:2]
        self.assertEqual(set(hot), {3, 5}, load)
        with open(os.path.join(self.out, "chrome_tracing.json")) as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
        for r in range(RANKS):
            self.assertTrue(any(f"ep rank {r}" in n for n in names), names)

    def test_report_has_the_heat_map(self):
        page = os.path.join(self.work, "report.html")
        subprocess.run([CLI, "report", "-q", "-i", self.out, "-o", page], check=True, timeout=300 * SLACK)
        with open(page) as f:
            html = f.read()
        m = re.search(r'<script type="application/json" id="servprof-data">(.*?)</script>', html, re.S)
        data = json.loads(m.group(1))
        moe = data["runs"][0]["db"]["moe"]
        self.assertEqual(moe["ranks"], [str(i) for i in range(RANKS)])
        self.assertEqual(len(moe["heat"]["ms"]), RANKS)
        self.assertTrue(moe["balance"]["t"])
        # the hot experts' ranks (1: experts 2, 3; 2: experts 4, 5) are the bright rows
        total = [sum(r) for r in moe["heat"]["ms"]]
        self.assertEqual(set(sorted(range(RANKS), key=total.__getitem__)[2:]), {1, 2}, total)
        if cdp is None or not cdp.find_chromium():
            self.skipTest("no Chromium (or aiohttp): the page was checked as data only")
        with cdp.Browser() as b:
            b.open(page)
            b.wait_for("window.__servprof && window.__servprof.ready", timeout=60)
            self.assertEqual(b.evaluate("window.__servprof.errors"), [])
            self.assertFalse(b.evaluate("document.getElementById('moe-sec').hidden"))
            self.assertEqual(b.evaluate("window.__servprof.moeHeat.ranks"), RANKS)
            # the heat map drew: some cells are bright (red channel high)
            bright = b.evaluate("""(() => { const c = document.getElementById('moe-heat');
                const d = c.getContext('2d').getImageData(70, 0, c.width - 70, c.height - 20).data;
                let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 200) n++; return n; })()""")
            self.assertGreater(bright, 50)
            self.assertIn("moe-balance", b.evaluate("window.__servprof.charts.map(c => c.id)"))


class Balanced(unittest.TestCase):
    def test_silent(self):
        _, out, doc = run_moe([])
        ids = [f["id"] for f in doc["findings"]]
        self.assertNotIn("expert_imbalance", ids)
        load = {}
        for r in rows(os.path.join(out, "expert_load.csv")):
            load[int(r["expert"])] = load.get(int(r["expert"]), 0) + int(r["tokens"])
        total = sum(load.values())
        self.assertTrue(all(0.06 < v / total < 0.2 for v in load.values()), load)


class BadOptions(unittest.TestCase):
    def test_refused(self):
        from support.demo_util import SERVER
        for args, word in ((["--moe", "8,2"], "--moe"), (["--moe", "6,2,4"], "multiple"),
                           (["--moe", "8,9,4"], "K <= E"), (["--moe", "8,2,4", "--moe-skew", "9"], "expert 9"),
                           (["--moe-skew", "1"], "need --moe"), (["--moe", "8,2,4", "--moe-skew", "1@x"], "bias")):
            p = subprocess.run([SERVER, "--port", "0", *args], capture_output=True, text=True, timeout=60 * SLACK)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(word, p.stderr, (args, p.stderr))


if __name__ == "__main__":
    unittest.main()
