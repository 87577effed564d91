# SPDX-License-Identifier: Apache-2.0
"""test_parse_moe.py — the MoE reports from hand-built stores, each number
known in advance:
  - service records with step/layer/rank attributes: ep_balance.csv sums the
    grouped GEMMs per layer and rank (two in one entry add up), moe_analysis
    has the reference's mean and t-interval (population std), moe_rank's
    combine_wait is the slowest rank's compute end minus the rank's own,
    expert_load and eplb_balance (the reference's balance ratio) as computed
    by hand;
  - records without `rank`: the process is the rank (columns = pids);
  - device kernels (an activity store's Kernel/Communication tables, the
    CUPTI path) found by --moe-names, placed by layers=N gemms=N, ranks =
    devices;
  - a run without MoE records writes none of these files;
  - a bad --moe-names is refused, naming the value.
"""
import csv
import math
import os
import sqlite3
import tempfile
import unittest

from support.fixtures import Store, ns, run_parse  # noqa: E402


def table(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def dicts(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def moe_step(s, step, layer, t, rank, d, c, k, experts, tokens, with_rank=True):
    """One rank's layer: dispatch d ms, compute c ms, combine k ms from t ms."""
    a = {"step": step, "layer": layer, "tokens": sum(tokens)}
    if with_rank:
        a["rank"] = rank
    s.span("MoeDistributeDispatch", t, t + d, "MoE", **a)
    s.span("GroupedMatmul", t + d, t + d + c, "MoE", expert_ids=experts, expert_tokens=tokens, **a)
    s.span("MoeDistributeCombine", t + d + c, t + d + c + k, "MoE", **a)


class Records(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        inp = os.path.join(cls.tmp.name, "in")
        cls.out = os.path.join(cls.tmp.name, "out")
        s = Store(os.path.join(inp, "h", "Trace_Service", "ms_service_h-100.db"), "h", 100)
        s.span("forward", 0, 30, "ModelExecute", rid=[{"rid": "a"}])
        # step 1: rank 0 (experts 0, 1) light, rank 1 (experts 2, 3) hot; 2 layers
        moe_step(s, 1, 0, 1, 0, 1, 2, 6, [0, 1], [1, 1])
        moe_step(s, 1, 0, 1, 1, 1, 6, 2, [2, 3], [8, 2])
        moe_step(s, 1, 1, 12, 0, 1, 2, 5, [0, 1], [2, 0])
        moe_step(s, 1, 1, 12, 1, 1, 5, 2, [2, 3], [6, 4])
        # step 2, layer 0: a second GEMM in the rank-1 entry adds up
        moe_step(s, 2, 0, 40, 0, 1, 3, 3, [0, 1], [3, 3])
        moe_step(s, 2, 0, 40, 1, 1, 3, 3, [2, 3], [3, 3])
        s.span("GroupedMatmul", 44, 45, "MoE", step=2, layer=0, rank=1)
        s.close()
        run_parse(inp, cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_ep_balance(self):
        t = table(os.path.join(self.out, "ep_balance.csv"))
        ms = 1_000_000
        self.assertEqual(t[0], ["0", "1"])
        self.assertEqual([[int(x) for x in r] for r in t[1:]], [[5 * ms, 10 * ms], [2 * ms, 5 * ms]])

    def test_moe_analysis(self):
        rows = {r["Dataset"]: r for r in dicts(os.path.join(self.out, "moe_analysis.csv"))}
        self.assertEqual(list(dicts(os.path.join(self.out, "moe_analysis.csv"))[0]), ["Dataset", "Mean", "CI_Lower", "CI_Upper"])
        samples = [1, 6, 1, 5, 1, 3]  # rank 0: dispatch, combine per entry (ms)
        mean = sum(samples) / 6 * 1e6
        std = math.sqrt(sum((x * 1e6 - mean) ** 2 for x in samples) / 6)  # ddof 0, as numpy
        t975 = 2.5705818366147395  # scipy.stats.t.ppf(0.975, 5)
        self.assertAlmostEqual(float(rows["0"]["Mean"]) / mean, 1, places=5)
        self.assertAlmostEqual((float(rows["0"]["CI_Upper"]) - mean) / (t975 * std / math.sqrt(6)), 1, places=3)
        self.assertAlmostEqual((mean - float(rows["0"]["CI_Lower"])) / (t975 * std / math.sqrt(6)), 1, places=3)

    def test_moe_rank_wait(self):
        r = {(x["step"], x["layer"], x["rank"]): x for x in dicts(os.path.join(self.out, "moe_rank.csv"))}
        # step 1 layer 0: rank 0's compute ends at 4 ms, rank 1's at 8: rank 0 waits 4 of its 6 ms combine
        self.assertAlmostEqual(float(r[("1", "0", "0")]["combine_wait(ms)"]), 4.0, places=3)
        self.assertAlmostEqual(float(r[("1", "0", "1")]["combine_wait(ms)"]), 0.0, places=3)
        self.assertEqual(r[("1", "0", "1")]["tokens"], "10")
        self.assertAlmostEqual(float(r[("2", "0", "1")]["expert_compute(ms)"]), 4.0, places=3)

    def test_eplb(self):
        load = dicts(os.path.join(self.out, "expert_load.csv"))
        self.assertIn({"step": "1", "layer": "0", "expert": "2", "rank": "1", "tokens": "8"}, load)
        bal = {x["step"]: x for x in dicts(os.path.join(self.out, "eplb_balance.csv"))}
        # step 1: rank loads (2, 10) and (2, 10): std 4 in each layer; max/mean 10/6
        self.assertAlmostEqual(float(bal["1"]["balance_ratio"]), 4.0, places=4)
        self.assertAlmostEqual(float(bal["1"]["max_mean_load"]), 10 / 6, places=4)
        self.assertEqual(bal["1"]["hot_expert"], "2")
        self.assertEqual(bal["1"]["slowest_rank"], "1")

    def test_timeline_and_db(self):
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        self.assertEqual(db.execute('SELECT "0", "1" FROM ep_balance').fetchall(),
                         [(5_000_000, 10_000_000), (2_000_000, 5_000_000)])
        self.assertEqual(db.execute("SELECT count(*) FROM moe_rank").fetchone()[0], 6)
        db.close()


class NoRankAttribute(unittest.TestCase):
    def test_processes_are_the_ranks(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            for pid, c in ((300, 2), (400, 7)):
                s = Store(os.path.join(inp, "h", "Trace_Service", f"ms_service_h-{pid}.db"), "h", pid)
                moe_step(s, 1, 0, 1, 0, 1, c, 1, [0], [c], with_rank=False)
                s.close()
            run_parse(inp, out)
            t = table(os.path.join(out, "ep_balance.csv"))
            self.assertEqual(t[0], ["300", "400"])
            self.assertEqual(t[1], ["2000000", "7000000"])


class DeviceKernels(unittest.TestCase):
    def test_kernels_by_name_and_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "h", "Trace_Service", "ms_service_h-100.db"), "h", 100)
            s.span("forward", 0, 100, "ModelExecute", rid=[{"rid": "a"}])
            s.close()
            db = sqlite3.connect(os.path.join(inp, "h", "Trace_Service", "ascend_service_profiler_h-100.db"))
            db.executescript("""
            CREATE TABLE Kernel(type TEXT, name TEXT, start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER);
            CREATE TABLE Communication(name TEXT, start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, dataCount INTEGER, dataType TEXT, commGroupName TEXT, correlationId INTEGER);
            """)
            # 2 steps x 2 layers x 2 GEMMs per layer on devices 0 and 1; device 1 twice as slow
            t = 1.0
            for step in range(2):
                for layer in range(2):
                    for g in range(2):
                        for dev in (0, 1):
                            db.execute("INSERT INTO Kernel VALUES ('KERNEL', 'void cutlass::grouped_gemm_kernel<T>', ?, ?, ?, 7, 0)",
                                       (ns(t), ns(t + 1 + dev + layer), dev))
                        t += 5
                    for dev in (0, 1):
                        db.execute("INSERT INTO Communication VALUES ('all2all_combine', ?, ?, ?, 7, 0, '', '', 0)",
                                   (ns(t), ns(t + 2), dev))
                    t += 5
            db.execute("INSERT INTO Kernel VALUES ('KERNEL', 'elementwise', ?, ?, 0, 7, 0)", (ns(1), ns(2)))
            db.commit()
            db.close()
            run_parse(inp, out, "--moe-names", "gemm=grouped_gemm", "--moe-names", "combine=all2all",
                      "--moe-names", "layers=2", "--moe-names", "gemms=2")
            t = table(os.path.join(out, "ep_balance.csv"))
            self.assertEqual(t[0], ["0", "1"])
            ms = 1_000_000
            # per layer: 2 steps x 2 GEMMs of (1 + dev + layer) ms
            self.assertEqual([[int(x) for x in r] for r in t[1:]], [[4 * ms, 8 * ms], [8 * ms, 12 * ms]])
            self.assertEqual(len(dicts(os.path.join(out, "moe_rank.csv"))), 8)
            mean = {r["Dataset"]: float(r["Mean"]) for r in dicts(os.path.join(out, "moe_analysis.csv"))}
            self.assertEqual(mean, {"0": 2e6, "1": 2e6})


class WildValues(unittest.TestCase):
    def test_bounded_and_said(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "h", "Trace_Service", "ms_service_h-100.db"), "h", 100)
            s.span("GroupedMatmul", 1, 2, "MoE", step=1, layer=10**9, rank=0, expert_ids=[1], expert_tokens=[3])
            s.span("GroupedMatmul", 3, 4, "MoE", step=1, layer=0, rank=1, expert_ids=[10**9], expert_tokens=[3])
            s.span("GroupedMatmul", 5, 6, "MoE", step=1, layer=0, rank=2, expert_ids=[1, 2], expert_tokens=[3])
            s.raw("MoeDistributeCombine", ns(7), ns(8) - ns(7), "MoE", "not json")
            s.close()
            p = run_parse(inp, out)
            self.assertIn("layer of 4096 or more", p.stderr)
            self.assertIn("not loads", p.stderr)
            t = table(os.path.join(out, "ep_balance.csv"))
            self.assertEqual(len(t), 2)  # layer 0 only: the wild layer was placed by order
            # only the first record's list is a load (placed by order: step 0); the wild id and the
            # lists of unequal length are left out
            self.assertEqual(dicts(os.path.join(out, "expert_load.csv")),
                             [{"step": "0", "layer": "0", "expert": "1", "rank": "0", "tokens": "3"}])


class NotMoE(unittest.TestCase):
    def test_no_files_and_bad_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            s = Store(os.path.join(inp, "h", "Trace_Service", "ms_service_h-100.db"), "h", 100)
            s.span("forward", 0, 10, "ModelExecute", rid=[{"rid": "a"}])
            s.close()
            run_parse(inp, out)
            for f in ("ep_balance.csv", "moe_analysis.csv", "moe_rank.csv", "expert_load.csv", "eplb_balance.csv"):
                self.assertFalse(os.path.exists(os.path.join(out, f)), f)
            for bad in ("gemm=", "layers=0", "what=x", "gemms=two"):
                p = run_parse(inp, out, "--moe-names", bad, check=False)
                self.assertEqual(p.returncode, 2, (bad, p.stderr))
                self.assertIn(bad, p.stderr)


if __name__ == "__main__":
    unittest.main()
