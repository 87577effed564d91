# SPDX-License-Identifier: Apache-2.0
"""The whole parse with the raw b-tree scan of `slice` (tool/parse/read/rawscan.c,
the default) and with SQLite reading every row (SERVPROF_RAWSCAN=0): every
output identical, on the shared scenario plus a store whose odd values hand
the scan over to SQLite half-way and a store with WAL frames (SQLite path).
The DEBUG log says which path each store took."""
import os
import sqlite3
import tempfile
import unittest

from support import scenario  # noqa: E402
from support.fixtures import Store, run_parse  # noqa: E402


def outputs(out):
    files = {}
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, out)
            if n == "profiler.db":
                db = sqlite3.connect(p)
                tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                                                   "ORDER BY name")]
                for t in tables:
                    files["db:" + t] = db.execute('SELECT * FROM "%s"' % t).fetchall()
                db.close()
            else:
                with open(p, "rb") as f:
                    files[rel] = f.read()
    return files


class RawScan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "in")
        scenario.build(cls.inp)
        # odd values from row 40 on: the raw scan hands the rest to SQLite
        odd = Store(os.path.join(cls.inp, "ms_service_odd-400.db"), "hostC", 400)
        for i in range(120):
            odd.event("httpReq", 5 + i, "Request", rid="odd-%d" % i)
        odd.commit()
        odd.db.execute("UPDATE slice SET timestamp = timestamp || 'x' WHERE id = 40")  # TEXT
        odd.db.execute("UPDATE slice SET args = CAST(args AS BLOB) WHERE id = 60")
        odd.commit()
        odd.close()
        # a writer holding frames in its WAL: SQLite reads this one
        cls.live = Store(os.path.join(cls.inp, "ms_service_live-500.db"), "hostC", 500, wal=True)
        cls.live.db.execute("PRAGMA wal_autocheckpoint=0")
        for i in range(50):
            cls.live.event("httpReq", 7 + i, "Request", rid="live-%d" % i)
        cls.live.commit()

    @classmethod
    def tearDownClass(cls):
        cls.live.close()
        cls.tmp.cleanup()

    def parse(self, raw):
        out = os.path.join(self.tmp.name, "out-%d" % raw)
        old = os.environ.get("SERVPROF_RAWSCAN")
        os.environ["SERVPROF_RAWSCAN"] = str(raw)
        try:
            p = run_parse(self.inp, out, "--log-level", "debug")
        finally:
            if old is None:
                del os.environ["SERVPROF_RAWSCAN"]
            else:
                os.environ["SERVPROF_RAWSCAN"] = old
        return p, outputs(out)

    def test_same_outputs_and_paths(self):
        p0, sqlite_out = self.parse(0)
        p1, raw_out = self.parse(1)
        self.assertEqual(sorted(sqlite_out), sorted(raw_out))
        self.assertIn("chrome_tracing.json", raw_out)
        self.assertIn("db:slice", raw_out)
        for k in sqlite_out:
            self.assertEqual(sqlite_out[k], raw_out[k], k)
        # which path each store took
        log = p1.stderr
        for stem in ("hostA-100", "hostA-200", "hostB-300", "odd-400"):
            self.assertRegex(log, r"ms_service_%s\.db: slice read from its b-tree pages" % stem)
        self.assertRegex(log, r"ms_service_odd-400\.db: row 40: timestamp is not an integer; SQLite reads the rest")
        self.assertRegex(log, r"ms_service_live-500\.db: slice read through SQLite: its WAL file holds frames")
        self.assertNotRegex(p0.stderr, r"b-tree pages")
        self.assertRegex(p0.stderr, r"slice read through SQLite: the raw scan is off")
        # the odd store's rows are all there (120 requests), read by both
        self.assertEqual(sum(1 for r in raw_out["db:slice"] if r[3] == "httpReq"), sum(
            1 for r in sqlite_out["db:slice"] if r[3] == "httpReq"))


if __name__ == "__main__":
    unittest.main()
