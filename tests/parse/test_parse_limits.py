# SPDX-License-Identifier: Apache-2.0
"""The per-record limits of docs/parse.md ("Limits"): a record's args are
cut to 1 MiB and its rid list to 16384 entries as the store is read. The
cut args are still a JSON object with the members that fit, in order, the
first entries of the rid list, and "servprof_cut" naming the original
size; parse warns once per store with the counts; the reports see only
what was kept (16384 requests, not 20000); records under the limits are
untouched. (Peak memory on the 100 MB / 1 M-entry inputs is a figure of
docs/benchmarks.md, measured with bench_parse, not asserted here.)"""
import json
import os
import sqlite3
import unittest

from support.fixtures import Store, TempCase, run_parse  # noqa: E402

ARGS_MAX = 1 << 20
RIDS_MAX = 16384


class Limits(TempCase):
    def build(self):
        s = Store(os.path.join(self.inp, "ms_service_big.db"), "hostL", 700)
        s.span("small", 0, 1, cat="Server", note="kept as is")
        # over 1 MiB: a blob that cannot fit, a short member after it that does
        s.span("bigArgs", 2, 3, cat="Server", blob="x" * (ARGS_MAX + 500_000), after="still here")
        # a rid list over the entry limit (well under 1 MiB of text)
        rids = [{"rid": "r%d" % i, "iter": 0, "type": 0} for i in range(20000)]
        s.span("batchFrameworkProcessing", 4, 5, cat="BatchSchedule", rid=rids, batch_type="Prefill")
        # a long one under both limits: untouched
        s.span("wide", 6, 7, cat="Server", blob="y" * 200_000)
        s.close()

    def test_cut_and_note(self):
        self.build()
        p = run_parse(self.inp, self.out, "--format", "db", "--format", "json")
        self.assertRegex(p.stderr, r"1 record\(s\) had args over 1048576 bytes \(the longest \d+\).*servprof_cut")
        self.assertRegex(p.stderr, r"1 record\(s\) had a rid list over 16384 entries \(the longest 20000\); "
                                   r"each kept its first 16384")
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        args = {n: json.loads(a) for n, a in db.execute("SELECT name, args FROM slice")}
        self.assertEqual(args["small"], {"type": 2, "note": "kept as is"})
        self.assertEqual(args["wide"]["blob"], "y" * 200_000)
        self.assertNotIn("servprof_cut", args["wide"])
        big = args["bigArgs"]
        self.assertNotIn("blob", big)
        self.assertEqual(big["after"], "still here")
        self.assertEqual(big["type"], 2)
        self.assertGreater(big["servprof_cut"]["bytes"], ARGS_MAX)
        step = args["batchFrameworkProcessing"]
        self.assertEqual(len(step["rid"]), RIDS_MAX)
        self.assertEqual(step["rid"][-1]["rid"], "r%d" % (RIDS_MAX - 1))
        self.assertEqual(step["batch_type"], "Prefill")
        self.assertEqual(step["servprof_cut"]["rid_entries"], 20000)
        # the reports saw the kept entries only
        n = db.execute("SELECT count(*) FROM request").fetchone()[0]
        self.assertEqual(n, RIDS_MAX)
        # the JSON timeline loads and carries the same cut args
        with open(os.path.join(self.out, "chrome_tracing.json")) as f:
            ev = json.load(f)  # a top-level array (the default form)
        (b,) = [e for e in ev if e.get("name") == "bigArgs"]
        self.assertEqual(b["args"], big)


if __name__ == "__main__":
    unittest.main()
