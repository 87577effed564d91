# SPDX-License-Identifier: Apache-2.0
"""test_demo_script.py — `./scripts/demo.sh --moe` from a fresh clone of the
committed tree: its own build folder (configure and build from nothing), the
server with the planted skew, load, collection on and off, parse, analyze,
report. Then: the script exits 0, prints ep_balance.csv with one column per
rank (4) and analyze's expert_imbalance finding, and every output it lists
exists.

Opt-in (SERVPROF_TEST_DEMO_SCRIPT=1): a build from nothing takes minutes on a
2-core machine, which every one of scripts/test.sh's four builds would pay;
otherwise it is skipped, saying so.
"""
import os
import subprocess
import tempfile
import unittest


class DemoScript(unittest.TestCase):
    def test_moe_demo_from_a_fresh_clone(self):
        if os.environ.get("SERVPROF_TEST_DEMO_SCRIPT") != "1":
            self.skipTest("set SERVPROF_TEST_DEMO_SCRIPT=1 to build and run the MoE demo from a fresh clone")
        src = os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
        tmp = tempfile.mkdtemp(prefix="tl-demo-moe-")
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "clone", "-q", src, clone], check=True, timeout=300)
        env = dict(os.environ, SERVPROF_DEMO_DIR=os.path.join(tmp, "out"),
                   SERVPROF_DEMO_BUILD=os.path.join(tmp, "build"), DEMO_SECONDS="6", DEMO_RATE="6")
        env.pop("SERVICE_PROF_CONFIG_PATH", None)
        p = subprocess.run([os.path.join(clone, "scripts", "demo.sh"), "--moe"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=3000)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:] + p.stderr[-4000:])
        out = p.stdout
        self.assertIn("MoE: --moe 8,2,4", out)
        head = out.split("ep_balance.csv (expert-compute ns", 1)[1].splitlines()[1]
        self.assertEqual(head, "0,1,2,3", out[-3000:])
        self.assertIn("[expert_imbalance]", out)
        for f in ("ep_balance.csv", "moe_analysis.csv", "moe_rank.csv", "expert_load.csv", "eplb_balance.csv",
                  "profiler.db", "chrome_tracing.json"):
            self.assertTrue(os.path.getsize(os.path.join(tmp, "out", "output", f)) > 0, f)
        self.assertTrue(os.path.getsize(os.path.join(tmp, "out", "report.html")) > 0)
        self.assertTrue(os.path.getsize(os.path.join(tmp, "out", "moe-clock.txt")) > 0)


if __name__ == "__main__":
    unittest.main()
