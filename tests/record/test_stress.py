# SPDX-License-Identifier: Apache-2.0
"""test_stress.py — `servprof stress` end to end: with no config file it
starts a session itself (prof_dir under $HOME); with SERVICE_PROF_CONFIG_PATH
it follows the file; every record it reports written is a row in the store;
bad options are usage errors (exit 2). Where the accepted records went adds
up, in records (a span's begin and end are two): stored + lost + taken by
live metrics only = accepted, with tracing on, with only live metrics on
(no rows at all), and when the store fails mid-run (a file-size limit:
transactions roll back, and their records are counted, not their rows)."""
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import unittest

BIN = os.environ.get("SERVPROF_BIN", "servprof")
SLOW = 10 if os.environ.get("SERVPROF_SANITIZE") else 1


def run(args, env_extra, timeout=60):
    env = dict(os.environ)
    env.pop("SERVICE_PROF_CONFIG_PATH", None)
    env.update(env_extra)
    return subprocess.run([BIN, "stress"] + args, env=env, capture_output=True, text=True,
                          timeout=timeout * SLOW)


def field(out, name):
    m = re.search(r"^%s:\s+(\S+)" % re.escape(name), out, re.M)
    return m.group(1) if m else None


class StressTest(unittest.TestCase):
    def check_store(self, out, want_rows):
        store = field(out, "store")
        self.assertTrue(store and os.path.exists(store), out)
        db = sqlite3.connect(store)
        rows = db.execute("SELECT count(*) FROM slice WHERE name='BatchSchedule'").fetchone()[0]
        self.assertEqual(rows, want_rows)
        for (args,) in db.execute("SELECT args FROM slice LIMIT 50"):
            a = json.loads(args)
            self.assertEqual(a["type"], 2)
            self.assertEqual(len(a["rid"]), a["batch_size"])
            self.assertIn(a["batch_type"], ("Prefill", "Prefill,Decode"))
            self.assertEqual(set(a["rid"][0]), {"rid", "iter", "type", "num_scheduled_tokens"})
        names = {n for (n,) in db.execute("SELECT thread_name FROM thread")}
        self.assertEqual(names, {"stress-0", "stress-1"})
        self.assertEqual(db.execute("SELECT value FROM Meta WHERE name='dropped_records'")
                         .fetchone()[0], field(out, "records dropped"))
        db.close()

    def test_defaults_under_home(self):
        with tempfile.TemporaryDirectory() as home:
            p = run(["--threads", "2", "--rate", "4000", "--seconds", "1"], {"HOME": home})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            emitted = int(field(p.stdout, "records emitted"))
            self.assertGreater(emitted, 2000)
            self.assertEqual(int(field(p.stdout, "records dropped")), 0)
            self.assertEqual(int(field(p.stdout, "records accepted")), emitted)
            written = int(field(p.stdout, "rows written"))
            self.assertEqual(written, emitted // 2)
            self.assertTrue(field(p.stdout, "store").startswith(home + "/.ms_server_profiler/"))
            self.check_store(p.stdout, written)

    def test_config_file(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "c.json")
            with open(cfg, "w") as f:
                json.dump({"enable": 1, "prof_dir": os.path.join(d, "prof")}, f)
            p = run(["--threads", "2", "--rate", "2000", "--seconds", "0.5"],
                    {"HOME": d, "SERVICE_PROF_CONFIG_PATH": cfg})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertTrue(field(p.stdout, "store").startswith(os.path.join(d, "prof")))
            self.check_store(p.stdout, int(field(p.stdout, "rows written")))

    def test_config_file_off(self):
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "c.json")
            with open(cfg, "w") as f:
                json.dump({"enable": 0, "prof_dir": os.path.join(d, "prof")}, f)
            p = run(["--threads", "1", "--rate", "1000", "--seconds", "0.3"],
                    {"HOME": d, "SERVICE_PROF_CONFIG_PATH": cfg})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("collection is off", p.stderr)
            self.assertEqual(int(field(p.stdout, "records accepted")), 0)

    def accounting(self, out):
        acc = int(field(out, "records accepted"))
        parts = [int(field(out, k) or -1) for k in
                 ("records stored", "records lost", "live metrics only")]
        self.assertNotIn(-1, parts, out)
        self.assertEqual(sum(parts), acc, out)
        self.assertIsNone(field(out, "unaccounted"), out)
        return acc, parts

    def test_accounting_stored(self):
        with tempfile.TemporaryDirectory() as home:
            p = run(["--threads", "2", "--rate", "2000", "--seconds", "0.5"], {"HOME": home})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            acc, (stored, lost, monly) = self.accounting(p.stdout)
            self.assertEqual((stored, lost, monly), (acc, 0, 0))
            self.assertEqual(stored, 2 * int(field(p.stdout, "rows written")))

    def test_accounting_metrics_only(self):
        """metric_enable 1, tracing off: no rows, and stress says where the
        records went instead of "0 not recorded, 0 rows"."""
        with tempfile.TemporaryDirectory() as d:
            cfg = os.path.join(d, "c.json")
            with open(cfg, "w") as f:
                json.dump({"enable": 0, "metric_enable": 1, "prof_dir": os.path.join(d, "prof")}, f)
            p = run(["--threads", "1", "--rate", "2000", "--seconds", "0.5"],
                    {"HOME": d, "SERVICE_PROF_CONFIG_PATH": cfg})
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            acc, (stored, lost, monly) = self.accounting(p.stdout)
            self.assertGreater(acc, 0)
            self.assertEqual((stored, lost, monly), (0, 0, acc))

    def test_accounting_rollback(self):
        """The store hits a file-size limit (ulimit -f, SIGXFSZ ignored):
        rolled-back spans count two records each."""
        with tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, HOME=home)
            env.pop("SERVICE_PROF_CONFIG_PATH", None)
            p = subprocess.run(["bash", "-c", "trap '' XFSZ; ulimit -f 2048; exec \"$0\" stress "
                                "--threads 2 --rate 20000 --seconds 1", BIN], env=env,
                               capture_output=True, text=True, timeout=120 * SLOW)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # records were lost
            acc, (stored, lost, monly) = self.accounting(p.stdout)
            self.assertGreater(lost, 0, p.stdout)
            self.assertEqual(monly, 0)
            self.assertEqual(stored, 2 * int(field(p.stdout, "rows written")), p.stdout)

    def test_bad_options(self):
        for args in (["--threads", "0"], ["--rate", "abc"], ["--seconds"], ["--bogus", "1"],
                     ["--threads", "1e9"]):
            p = run(args, {"HOME": tempfile.gettempdir()})
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("servprof stress", p.stderr)


if __name__ == "__main__":
    unittest.main()
