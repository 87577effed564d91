# SPDX-License-Identifier: Apache-2.0
"""test_report_cli.py — `servprof report` on hand-made raw stores (the parse
tests' scenario, tests/support/scenario.py), without a browser:

  - the CLI conventions: -h, --opt=value, one stderr line and exit 2 for every
    bad option or value, exit 2 for a missing input;
  - raw stores and their parse output folder give the same page data, and the
    temporary parse folder is removed;
  - the page data holds the values worked out by hand from the scenario
    (slowest requests, step batch sizes, every counter with its processes,
    CDF counts, times from the run's start);
  - the page is self-contained (uPlot inlined, no URL to fetch, a CSP that
    forbids fetching) and a request id holding "</script><!--" cannot break
    out of the data;
  - long runs are reduced to min/max per bucket with the spike kept;
  - a row so late that the parse starts over changes neither the page nor
    analyze's document (the abandoned run's rows are dropped, not doubled);
  - analyze's document given with --analyze-json lands in the page, its
    per-request breakdown merged into the slowest rows and not copied whole;
  - a bad --analyze-json, an unwritable output: exit 1, one message, no file
    and no .partial left.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import fixture  # noqa: E402
from support import scenario  # noqa: E402
from support.fixtures import Store  # noqa: E402

CLI = os.environ.get("SERVPROF_BIN", "build/bin/servprof")


def report(*args, env=None, check=True):
    r = subprocess.run([CLI, "report", *args], capture_output=True, text=True, timeout=300, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"servprof report {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def page_data(path):
    with open(path, encoding="utf-8") as f:
        html = f.read()
    m = re.search(r'<script type="application/json" id="servprof-data">(.*?)</script>', html, re.S)
    assert m, "no data element in the page"
    return json.loads(m.group(1)), html


class ReportCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="sp-report-cli-")
        cls.raw = os.path.join(cls.work, "raw")
        scenario.build(cls.raw)
        cls.parsed = os.path.join(cls.work, "parsed")
        subprocess.run([CLI, "parse", "--input-path", cls.raw, "--output-path", cls.parsed, "--quiet"],
                       check=True, capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def assertClose(self, got, want, path="$"):
        """Equal, numbers to 9 significant digits (the page's precision)."""
        if isinstance(want, dict):
            self.assertEqual(set(got), set(want), path)
            for k in want:
                self.assertClose(got[k], want[k], f"{path}.{k}")
        elif isinstance(want, float):
            self.assertAlmostEqual(got, want, delta=abs(want) * 1e-8, msg=path)
        else:
            self.assertEqual(got, want, path)

    def out(self, name):
        return os.path.join(self.work, name)

    # ------------------------------------------------------- conventions
    def test_help(self):
        r = report("-h")
        self.assertIn("usage: servprof report", r.stdout)
        self.assertEqual(r.stderr, "")
        self.assertIn("--compare OTHER", report("--help").stdout)

    def test_usage_errors_are_one_line_exit_2(self):
        cases = [
            (["--bogus"], "--bogus"),
            (["-i", self.raw, "--buckets", "5"], "--buckets"),
            (["-i", self.raw, "--buckets=lots"], "--buckets"),
            (["-i", self.raw, "--output"], "--output"),
            (["-i", self.raw, "--quiet=1"], "--quiet"),
            (["-o", self.out("x.html")], "--input-path"),
            (["-i", self.raw, "--compare-json", "c.json"], "--compare"),
        ]
        for args, named in cases:
            r = report(*args, check=False)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))
            self.assertIn(named, r.stderr, args)
        self.assertIn("10 to 100000", report("-i", self.raw, "--buckets", "5", check=False).stderr)
        r = report("-i", self.out("nope"), "-o", self.out("nope.html"), check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nope", r.stderr)
        self.assertFalse(os.path.exists(self.out("nope.html")))

    # ------------------------------------------------------------ inputs
    def test_links_the_timeline_beside_it(self):
        """A parse output's trace.pftrace and chrome_tracing.json are linked
        from the page: by bare name when the page sits beside them, else by a
        file:// URL; raw input has none."""
        parsed = self.out("with-pftrace")
        subprocess.run([CLI, "parse", "-i", self.raw, "-o", parsed, "--quiet", "--format", "db", "--format",
                        "json", "--format", "perfetto"], check=True, capture_output=True, timeout=300)
        report("-i", parsed, "-o", os.path.join(parsed, "report.html"))
        d, html = page_data(os.path.join(parsed, "report.html"))
        tl = d["runs"][0]["timeline"]
        self.assertEqual([t["file"] for t in tl], ["trace.pftrace", "chrome_tracing.json"])
        self.assertEqual(tl[0]["href"], "trace.pftrace")
        self.assertEqual(tl[0]["bytes"], os.path.getsize(os.path.join(parsed, "trace.pftrace")))
        self.assertIn("timeline-links", html)
        report("-i", parsed, "-o", self.out("elsewhere.html"))
        tl = page_data(self.out("elsewhere.html"))[0]["runs"][0]["timeline"]
        self.assertEqual(tl[0]["href"], "file://" + os.path.realpath(os.path.join(parsed, "trace.pftrace")))
        report("-i", self.raw, "-o", self.out("raw-links.html"))
        self.assertIsNone(page_data(self.out("raw-links.html"))[0]["runs"][0].get("timeline"))

    def test_raw_and_parsed_inputs_agree(self):
        tmp = self.out("tmpdir")
        os.makedirs(tmp, exist_ok=True)
        env = dict(os.environ, TMPDIR=tmp)
        report("--input-path=" + self.raw, "--output=" + self.out("raw.html"), env=env)
        report("-i", self.parsed, "-o", self.out("parsed.html"), env=env)
        report("-i", os.path.join(self.parsed, "profiler.db"), "-o", self.out("db.html"), env=env)
        self.assertEqual(os.listdir(tmp), [], "the temporary parse folder was left behind")
        docs = [page_data(self.out(n))[0] for n in ("raw.html", "parsed.html", "db.html")]
        for d in docs:
            for r in d["runs"]:
                r.pop("input")
        self.maxDiff = 2000
        self.assertEqual(docs[0]["runs"][0]["db"], docs[1]["runs"][0]["db"])
        self.assertEqual(docs[0]["runs"][0]["db"], docs[2]["runs"][0]["db"])
        self.assertEqual(docs[0]["runs"][0]["analyze"]["findings"], docs[1]["runs"][0]["analyze"]["findings"])

    def test_a_late_row_changes_nothing(self):
        """A span over the whole run inserted last (a lifetime span written at shutdown),
        after more rows than the parse's one pass sizes its window from, makes that pass
        start again in exact mode; what the abandoned run handed analyze and the report's
        rows is dropped. The page (analyze's figures and the charts), the one made with
        --analyze-json (the report's own parse) and analyze's document are those of the
        same rows with that span inserted first (one pass, no restart)."""
        pages, docs = {}, {}
        for where in ("first", "last"):
            root = self.out("late-" + where)
            scenario.build(root)
            s = Store(os.path.join(root, "hostA", "Trace_Service", "ms_service_hostA-400.db"), "hostA", 400)
            s.db.execute("BEGIN")
            if where == "first":
                s.span("serverLifetime", -1, 17001, "Service")
            for i in range(17000):
                s.event("tick", i, "Misc")
            if where == "last":
                s.span("serverLifetime", -1, 17001, "Service")
            s.close()
            log = subprocess.run([CLI, "parse", "-i", root, "-o", self.out("late-parse-" + where), "--quiet",
                                  "--log-level", "info"], capture_output=True, text=True, timeout=300).stderr
            self.assertEqual("parsing again" in log, where == "last", log)
            report("-i", root, "-o", self.out(f"late-{where}.html"))
            with open(self.out(f"late-{where}.json"), "w") as f:
                json.dump(fixture.analyze_like(os.path.join(self.parsed, "profiler.db"), "x"), f)
            report("-i", root, "-o", self.out(f"late-{where}-own.html"),
                   "--analyze-json", self.out(f"late-{where}.json"))
            pages[where] = [page_data(self.out(f"late-{where}{k}.html"))[0]["runs"][0] for k in ("", "-own")]
            r = subprocess.run([CLI, "analyze", "-i", root, "--format", "json"], capture_output=True, text=True,
                               timeout=300, check=True)
            docs[where] = json.loads(r.stdout)
            for d in [docs[where], pages[where][0]["analyze"]] + pages[where]:
                d.pop("input")
        import sqlite3
        rows = 0  # every row has a valid timestamp: each is one record, read once
        for path in glob.glob(os.path.join(self.out("late-last"), "**", "ms_service_*.db"), recursive=True):
            with sqlite3.connect(path) as db:
                rows += db.execute("SELECT count(*) FROM slice").fetchone()[0]
        self.assertEqual(docs["last"]["run"]["records"], rows)
        self.maxDiff = 4000
        self.assertEqual(docs["last"], docs["first"])
        self.assertEqual(pages["last"], pages["first"])
        # the report's own parse and the one analyze ran gave the same charts (the slowest rows
        # differ only by the TTFT parts merged in from the analyze document each page holds)
        own, rode = (dict(p["db"], slowest=None) for p in pages["last"])
        self.assertEqual(own, rode)

    def test_page_values(self):
        r = report("-i", self.parsed, "-o", self.out("v.html"))
        self.assertIn(self.out("v.html"), r.stdout)
        d, html = page_data(self.out("v.html"))
        self.assertEqual(len(d["runs"]), 1)
        db = d["runs"][0]["db"]
        # t0 is the first httpReq (0 ms); the last request ends at 80 ms.
        self.assertAlmostEqual(db["duration_s"], 0.080, places=6)
        slow = db["slowest"]
        self.assertEqual([q["rid"] for q in slow], ["http-2", "http-3", "http-1"])
        self.assertEqual([q["e2e_ms"] for q in slow], [79.0, 58.0, 50.0])
        self.assertEqual(slow[0]["start_s"], 0.001)
        self.assertEqual(db["requests"], 3)
        self.assertEqual(db["cdf"]["e2e"]["n"], 3)
        self.assertEqual(db["cdf"]["e2e"]["x"], [50, 58, 79])
        self.assertEqual(db["cdf"]["e2e"]["p"][-1], 1)
        # Schedule steps in time order: C at 4 ms (1 request), B at 5 (1), 12 (2), 26 (2).
        steps = db["steps"]
        self.assertEqual(steps["source"], "schedule steps")
        self.assertEqual(steps["t"], [0.004, 0.005, 0.012, 0.026])
        self.assertEqual(steps["batch_size"], [1, 1, 2, 2])
        self.assertEqual(steps["prefill_tokens"], [10, 100, 20, 20])
        counters = {c["name"]: c for c in db["counters"]}
        self.assertIn("GPU 0 memory", counters)
        self.assertEqual(counters["GPU 1 memory"]["data"]["used MiB"], [2048])
        self.assertEqual(counters["host CPU"]["data"]["busy %"], [12.5])
        self.assertEqual(counters["host CPU"]["data"]["t"], [0.009])
        # KV usage comes from two engine processes: one column each.
        kv = counters["KV cache usage"]
        self.assertEqual(len(kv["cols"]), 2)
        self.assertTrue(all("· pid" in c for c in kv["cols"]), kv["cols"])
        # analyze's document for the same profile: one computation, the same requests.
        a = d["runs"][0]["analyze"]
        self.assertEqual(a["schema"], "servprof-analyze/1")
        self.assertEqual(a["input"], self.parsed)
        self.assertEqual(a["headline"]["requests"], 3)
        self.assertEqual(a["headline"]["e2e_ms"]["max"], slow[0]["e2e_ms"])
        self.assertIn("ttft_breakdown", a)
        for q in slow:  # analyze's TTFT parts, merged into the slowest rows
            self.assertEqual(q["parts_from"], "analyze")
            parts = q["queue_ms"] + q["schedule_ms"] + (q["prefill_ms"] or 0) + (q["first_decode_wait_ms"] or 0)
            self.assertAlmostEqual(parts, q["ttft_ms"], delta=0.01)

    def test_self_contained(self):
        report("-i", self.parsed, "-o", self.out("s.html"))
        _, html = page_data(self.out("s.html"))
        self.assertNotIn("{{", html.split('id="servprof-data"')[0].split("<script>")[0])
        self.assertIn("uPlot", html)
        self.assertIn("default-src 'none'", html)
        self.assertIsNone(re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html, re.I))
        self.assertNotIn("<link", html)

    def test_ids_cannot_break_out_of_the_data(self):
        root = self.out("evil")
        rid = "</script><!--<script>alert(1)</script>"
        s = Store(os.path.join(root, "Trace_Service", "ms_service_h-1.db"), "h", 1)
        s.event("httpReq", 0, "Request", rid=rid)
        s.event("httpRes", 5, "Request", rid=rid, **{"replyTokenSize=": 2})
        s.close()
        report("-i", root, "-o", self.out("evil.html"))
        d, html = page_data(self.out("evil.html"))
        self.assertEqual(d["runs"][0]["db"]["slowest"][0]["rid"], rid)
        self.assertNotIn("alert(1)</script>", html)
        self.assertEqual(html.count("</script>"), 3)  # uPlot, the data, the page script

    def test_long_runs_are_reduced(self):
        root = self.out("long")
        s = Store(os.path.join(root, "Trace_Service", "ms_service_h-1.db"), "h", 1)
        s.db.execute("BEGIN")
        for i in range(20000):
            size = 64 if i == 12345 else 1 + i % 4
            entries = [dict(rid=f"r{i}", iter=1, type=1, num_scheduled_tokens=1)] * size
            s.span("BatchSchedule", i * 1.0, i * 1.0 + 0.5, "BatchSchedule", rid=entries)
        s.commit()
        s.close()
        report("-i", root, "-o", self.out("long.html"), "--buckets", "100")
        d, _ = page_data(self.out("long.html"))
        steps = d["runs"][0]["db"]["steps"]
        self.assertLessEqual(len(steps["t"]), 200)
        self.assertGreaterEqual(len(steps["t"]), 190)
        self.assertEqual(max(steps["batch_size"]), 64)
        self.assertEqual(min(steps["batch_size"]), 1)
        self.assertEqual(steps["t"], sorted(steps["t"]))
        self.assertEqual(d["buckets"], 100)

    # ----------------------------------------------------------- analyze
    def test_analyze_json_lands_in_the_page(self):
        doc = fixture.analyze_like(os.path.join(self.parsed, "profiler.db"), self.parsed)
        path = self.out("a.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        report("-i", self.parsed, "-o", self.out("a.html"), "--analyze-json", path)
        d, _ = page_data(self.out("a.html"))
        a = d["runs"][0]["analyze"]
        self.assertEqual(a["findings"][0]["title"], doc["findings"][0]["title"])
        self.assertClose(a["headline"], doc["headline"])
        self.assertNotIn("requests", a["ttft_breakdown"])  # not copied whole ...
        slow = {q["rid"]: q for q in d["runs"][0]["db"]["slowest"]}
        bd = {q["rid"]: q for q in doc["ttft_breakdown"]["requests"]}
        for rid, q in slow.items():  # ... but merged into the slowest rows
            self.assertEqual(q["parts_from"], "analyze")
            self.assertEqual(q["schedule_ms"], bd[rid]["schedule_ms"])

    def test_bad_analyze_json_writes_nothing(self):
        bad = self.out("bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        r = report("-i", self.parsed, "-o", self.out("bad.html"), "--analyze-json", bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad.json", r.stderr)
        self.assertFalse(os.path.exists(self.out("bad.html")))

    def test_cdfs_count_complete_requests_only(self):
        # Two complete requests and one the collection window cut (a first token,
        # no end): the CDFs, like analyze's latency figures, count the two.
        raw = self.out("cut")
        st = Store(os.path.join(raw, "ms_service_cut-1.db"), "cut", 1)
        for i, rid in enumerate(("c1", "c2")):
            st.event("httpReq", 10 * i, "Request", rid=rid)
            st.event("sendResponse", 10 * i + 2, "Request", rid=rid)
            st.event("httpRes", 10 * i + 5, "Request", rid=rid, **{"replyTokenSize=": 3})
        st.event("httpReq", 30, "Request", rid="cut")
        st.event("detokenize", 33, "Request", rid="cut")
        st.close()
        page = self.out("cut.html")
        report(raw, "-o", page, "--quiet")
        data, _ = page_data(page)
        run = data["runs"][0]["db"]
        self.assertEqual(run["requests"], 3)
        self.assertEqual(run["cdf"]["ttft"]["n"], 2, run["cdf"]["ttft"])
        self.assertEqual(run["cdf"]["e2e"]["n"], 2)

    def test_unwritable_output(self):
        # A missing folder is created (as parse creates its output folder); one
        # that cannot be, because a file stands in its way, is the failure.
        blocker = os.path.join(self.work, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        target = os.path.join(blocker, "r.html")
        r = report("-i", self.parsed, "-o", target, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a-file", r.stderr)
        own = [l for l in r.stderr.splitlines() if "analyze" not in l]
        self.assertEqual(len(own), 1, r.stderr)
        self.assertEqual(glob.glob(os.path.join(self.work, "a-file?*")), [])

    def test_not_a_profiler_db(self):
        other = self.out("other")
        os.makedirs(other, exist_ok=True)
        import sqlite3
        sqlite3.connect(os.path.join(other, "profiler.db")).execute("CREATE TABLE x(a)").connection.commit()
        r = report("-i", other, "-o", self.out("o.html"), check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a profiler.db", r.stderr)
        self.assertFalse(os.path.exists(self.out("o.html")))
        # Not SQLite at all; a folder with nothing to read: one line each, no page.
        with open(os.path.join(other, "profiler.db"), "wb") as f:
            f.write(os.urandom(4096))
        empty = self.out("empty")
        os.makedirs(empty, exist_ok=True)
        for path, says in ((other, "file is not a database"), (empty, "no raw store")):
            r = report("-i", path, "-o", self.out("o.html"), check=False)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(says, r.stderr)
            self.assertFalse(os.path.exists(self.out("o.html")))


if __name__ == "__main__":
    unittest.main()
