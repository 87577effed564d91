# SPDX-License-Identifier: Apache-2.0
"""test_parse_sessions.py — `servprof parse` of a folder holding several sessions,
and a summary that names only what it wrote.

A prof_dir with two session folders an hour apart, each with one second of
requests: the summary lists both with their time ranges, and tokens/s is
computed over the two seconds collection was on (not over the hour between
them); --session NAME parses one; an unknown NAME is a usage error listing
the sessions. With --format json the summary claims no CSV rows and names
only chrome_tracing.json, even when an older request.csv lies in the folder.
"""

import os
import re
import shutil
import tempfile
import unittest

from support.fixtures import Store, read_csv, run_parse  # noqa: E402


def requests(s, rid, start_ms):
    """Two requests over one second from start_ms, 10 output tokens each."""
    for i, (a, b) in enumerate(((0, 500), (500, 1000))):
        r = "%s-%d" % (rid, i)
        s.event("httpReq", start_ms + a, "Request", rid=r)
        s.event("httpRes", start_ms + b, "Request", rid=r,
                **{"recvTokenSize=": 5, "replyTokenSize=": 10})


class Sessions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sp_sessions_")
        self.prof = os.path.join(self.tmp, "prof")
        for name, start in (("0101-1000", 0), ("0101-1100", 3600_000)):
            s = Store(os.path.join(self.prof, name, "Trace_Service", "ms_service_h-%d.db"
                                   % (1 + start // 1000)), "h", 1 + start // 1000)
            requests(s, name, start)
            s.close()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def tokens_per_s(self, out):
        m = re.search(r"output tokens: (\d+), ([\d.]+) tokens/s", out)
        self.assertTrue(m, out)
        return int(m.group(1)), float(m.group(2))

    def test_two_sessions_rates_over_collection_time(self):
        p = run_parse(self.prof, os.path.join(self.tmp, "out"))
        self.assertIn("2 sessions (rates below count the 2.000 s collection was on, "
                      "not the 3601.000 s spanned)", p.stdout)
        self.assertRegex(p.stdout, r"0101-1000\s+\d\d:\d\d:\d\d\.000 - \d\d:\d\d:\d\d\.000  "
                                   r"\(1\.000 s\)")
        self.assertIn("0101-1100", p.stdout)
        self.assertEqual(self.tokens_per_s(p.stdout), (40, 20.0))

    def test_one_session_picked(self):
        out = os.path.join(self.tmp, "one")
        p = run_parse(self.prof, out, "--session", "0101-1100")
        self.assertNotIn(" sessions (rates", p.stdout)
        self.assertEqual(self.tokens_per_s(p.stdout), (20, 20.0))
        rows = read_csv(os.path.join(out, "request.csv"))
        self.assertEqual(sorted(r["http_rid"] for r in rows), ["0101-1100-0", "0101-1100-1"])
        # The session folder itself gives the same figures.
        p2 = run_parse(os.path.join(self.prof, "0101-1100"), os.path.join(self.tmp, "two"))
        self.assertEqual(self.tokens_per_s(p2.stdout), (20, 20.0))

    def test_unknown_session(self):
        p = run_parse(self.prof, os.path.join(self.tmp, "x"), "--session=0202-0000", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--session '0202-0000': no such session", p.stderr)
        self.assertIn("0101-1000, 0101-1100", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x")))

    def test_json_only_summary(self):
        out = os.path.join(self.tmp, "out")
        run_parse(self.prof, out, "--format", "csv")
        self.assertTrue(os.path.exists(os.path.join(out, "request.csv")))
        p = run_parse(self.prof, out, "--format=json")
        wrote = [line for line in p.stdout.splitlines() if "wrote" in line]
        self.assertEqual(wrote, ["  wrote to %s: chrome_tracing.json" % out], p.stdout)
        self.assertNotIn("rows:", p.stdout)


if __name__ == "__main__":
    unittest.main()
