# SPDX-License-Identifier: Apache-2.0
"""Inputs that are not a clean, finished run: a store still being written
(WAL, a writer holding it open), a truncated store, a file that is not
SQLite, the reference's legacy Mstx table, missing domains, bad options."""
import json
import os
import shutil
import sqlite3
import subprocess
import unittest

from support.fixtures import Store, T0, TempCase, ns, read_csv, run_parse, simple_request  # noqa: E402


class Inputs(TempCase):
    def test_store_still_open_by_a_writer(self):
        path = os.path.join(self.inp, "ms_service_live-1.db")
        s = Store(path, "live", 1, wal=True)
        simple_request(s, "done-1", 0, 10)
        s.commit()
        # the writer goes on: an open transaction the parser must not see
        s.db.execute("BEGIN")
        simple_request(s, "uncommitted-2", 20, 30)
        try:
            p = run_parse(self.inp, self.out)
            rows = read_csv(os.path.join(self.out, "request.csv"))
            self.assertEqual([r["http_rid"] for r in rows], ["done-1"])
            self.assertAlmostEqual(float(rows[0]["execution_time(ms)"]), 10.0)
            self.assertNotIn("lock", p.stderr.lower())
        finally:
            s.db.rollback()
            s.close()

    def test_truncated_and_corrupt_stores_are_skipped_by_name(self):
        good = Store(os.path.join(self.inp, "ms_service_good-1.db"), "good", 1)
        simple_request(good, "g1", 0, 5)
        good.close()
        big = Store(os.path.join(self.inp, "src", "ms_service_big-2.db"), "big", 2)
        for i in range(3000):
            simple_request(big, "b%d" % i, i, i + 1)
        big.close()
        cut = os.path.join(self.inp, "ms_service_cut-2.db")
        with open(big.path, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        shutil.rmtree(os.path.join(self.inp, "src"))
        with open(os.path.join(self.inp, "ms_service_junk-3.db"), "wb") as f:
            f.write(b"this is not a database at all" * 10)
        p = run_parse(self.inp, self.out)
        self.assertIn("ms_service_cut-2.db", p.stderr)
        self.assertIn("truncated", p.stderr)
        self.assertIn("ms_service_junk-3.db", p.stderr)
        rows = read_csv(os.path.join(self.out, "request.csv"))
        self.assertEqual([r["http_rid"] for r in rows], ["g1"])
        self.assertIn("2 skipped", p.stdout)

    def test_legacy_mstx_store(self):
        path = os.path.join(self.inp, "ms_service_old-7.db")
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE Mstx(markId INTEGER, message TEXT, pid INTEGER, tid INTEGER, "
                   "timestamp INTEGER, endTimestamp INTEGER)")
        db.execute("CREATE TABLE Meta(name TEXT, value TEXT)")
        db.execute("INSERT INTO Meta VALUES ('hostname', 'oldhost')")
        rows = [
            # (markId, message, start ms, end ms)
            (1, "^name^:^httpReq^,^domain^:^Request^,^type^:0,^rid^:^m1^,", 0, 0),
            (2, "{^name^:^Enqueue^,^domain^:^Schedule^,^type^:0,^rid^:^m1^,^QueueSize=^:1,"
                "^scope#QueueName^:^WAITING^}", 1, 0),
            (7, "^type^:3,^from^:^m1^,^to^:7,", 0.5, 0),  # a Link as the collector writes it: no name
            (3, "^name^:^Dequeue^,^domain^:^Schedule^,^type^:0,^rid^:7,^QueueSize=^:0,"
                "^scope#QueueName^:^WAITING^,", 4, 0),
            (4, "^name^:^forward^,^domain^:^ModelExecute^,^type^:2,"
                "^rid^:[{^rid^:^m1^,^iter^:0,^type^:0}],", 5, 8),
            (5, "^name^:^detokenize^,^domain^:^Request^,^type^:0,^rid^:^m1^,", 9, 0),
            (6, "^name^:^httpRes^,^domain^:^Request^,^type^:0,^rid^:^m1^,^replyTokenSize=^:3,", 20, 0),
        ]
        for mark, msg, a, b in rows:
            db.execute("INSERT INTO Mstx VALUES (?, ?, 7, 7, ?, ?)", (mark, msg, ns(a), ns(b) if b else 0))
        db.commit()
        db.close()
        run_parse(self.inp, self.out)
        req = read_csv(os.path.join(self.out, "request.csv"))
        self.assertEqual(len(req), 1)
        r = req[0]
        self.assertEqual(r["http_rid"], "m1")
        self.assertAlmostEqual(float(r["execution_time(ms)"]), 20.0)
        self.assertAlmostEqual(float(r["queue_wait_time(ms)"]), 3.0)
        self.assertAlmostEqual(float(r["first_token_latency(ms)"]), 9.0)
        fwd = read_csv(os.path.join(self.out, "forward.csv"))
        self.assertEqual(len(fwd), 1)
        self.assertAlmostEqual(float(fwd[0]["during_time(ms)"]), 3.0)
        self.assertEqual(fwd[0]["hostname"], "oldhost")

    def test_missing_domains_skip_reports_with_one_line_each(self):
        s = Store(os.path.join(self.inp, "ms_service_fe-1.db"), "fe", 1)
        simple_request(s, "only", 0, 5)
        s.close()
        p = run_parse(self.inp, self.out)
        self.assertTrue(os.path.exists(os.path.join(self.out, "request.csv")))
        for report in ("batch.csv", "forward.csv", "kvcache.csv", "request_status.csv"):
            self.assertFalse(os.path.exists(os.path.join(self.out, report)), report)
            lines = [ln for ln in p.stderr.splitlines() if report in ln]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn("skipped", lines[0])
        self.assertIn("domain KVCache", p.stderr)
        self.assertIn("domain ModelExecute", p.stderr)
        # a stale report of an earlier run in the same folder does not survive
        with open(os.path.join(self.out, "forward.csv"), "w") as f:
            f.write("stale\n")
        run_parse(self.inp, self.out)
        self.assertFalse(os.path.exists(os.path.join(self.out, "forward.csv")))

    def test_formats_and_spans(self):
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        simple_request(s, "r", 0, 10)
        s.span("forward", 1, 3, "ModelExecute", rid=[{"rid": "r", "iter": 0}])
        s.span("forward", 4, 5, "ModelExecute", rid=[{"rid": "r", "iter": 1}])
        s.span("sample", 3, 3.5, "Execute")
        s.close()
        p = run_parse(self.inp, self.out, "--format", "csv", "--span", "sample")
        self.assertFalse(os.path.exists(os.path.join(self.out, "chrome_tracing.json")))
        self.assertFalse(os.path.exists(os.path.join(self.out, "profiler.db")))
        sample = read_csv(os.path.join(self.out, "span_info", "sample.csv"))
        self.assertEqual(len(sample), 1)
        self.assertAlmostEqual(float(sample[0]["during_time(ms)"]), 0.5)
        fw = read_csv(os.path.join(self.out, "span_info", "forward.csv"))
        self.assertEqual(len(fw), 2)
        self.assertRegex(p.stdout, r"forward\s+2\s+1\.000\s+1\.500")  # count, min, avg
        self.assertFalse(os.path.exists(os.path.join(self.out, "spec_decode.csv")))  # no specDecoding
        p = run_parse(self.inp, os.path.join(self.tmp.name, "o2"), "--format", "json")
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "o2", "chrome_tracing.json")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "o2", "request.csv")))

    def test_a_figure_whose_start_was_not_seen_is_empty_not_negative(self):
        # A request straddling `servprof enable`: its first token (5 ms) comes before the
        # first step the store holds (a decode step at 8 ms): prefill_time is unknown.
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        s.event("detokenize", 5, "Request", rid="eng-33")
        s.span("forward", 8, 9, "ModelExecute", rid=[{"rid": "eng-33", "iter": 3}])
        s.event("httpRes", 12, "Request", rid="eng-33", **{"replyTokenSize=": 4})
        simple_request(s, "ok", 0, 20)
        s.close()
        run_parse(self.inp, self.out, "--format", "csv")
        req = {r["http_rid"]: r for r in read_csv(os.path.join(self.out, "request.csv"))}
        self.assertEqual(req["eng-33"]["prefill_time(ms)"], "")
        for r in req.values():
            for k, v in r.items():
                if k.endswith("(ms)") and v not in ("", "N/A"):
                    self.assertGreaterEqual(float(v), 0, (r["http_rid"], k))

    def test_statistic_top_five_by_forward_plus_bubble(self):
        # The reference's statistic: under the span table, the five requests with the
        # longest (last forward end - first forward end) / (forwards - 1). r1..r6 take
        # 1..6 ms per step; r0 has one forward (no figure). Expected: r6 r5 r4 r3 r2.
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        for k in range(7):
            rid = "r%d" % k
            simple_request(s, rid, 0, 100)
            s.span("forward", 1, 1.5, "ModelExecute", rid=[{"rid": rid, "iter": 0}])
            if k:
                s.span("forward", 1 + k - 0.5, 1 + k, "ModelExecute", rid=[{"rid": rid, "iter": 1}])
        s.close()
        p = run_parse(self.inp, self.out, "--span", "forward")
        lines = p.stdout.splitlines()
        at = next(i for i, l in enumerate(lines) if "top 5 requests by forward + bubble" in l)
        rows = [l.split() for l in lines[at + 2:at + 7]]
        self.assertEqual([r[0] for r in rows], ["r6", "r5", "r4", "r3", "r2"], p.stdout)
        self.assertEqual([float(r[2]) for r in rows], [5.5, 4.5, 3.5, 2.5, 1.5])  # step mean (ms)
        self.assertEqual([int(r[1]) for r in rows], [1] * 5)                       # steps
        self.assertEqual(float(rows[0][4]), 0.5)                                   # forward mean (ms)

    def test_statistic_per_request_span_tables(self):
        # The reference's Request and Bubble Statistics under the top five: per span
        # (forward, BatchSchedule), a row ALL (a span counted once per request it names)
        # and one per top-five request; then the bubbles (a request's gap from one
        # forward's end to its next forward's start). r1..r6 as above; one BatchSchedule
        # of 2 ms names all seven, another of 4 ms names r6 only.
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        s.span("BatchSchedule", 0.2, 0.4, "BatchSchedule",
               rid=[{"rid": "r%d" % k, "iter": 0, "type": 0} for k in range(7)])
        s.span("BatchSchedule", 0.5, 0.9, "BatchSchedule", rid=[{"rid": "r6", "iter": 1, "type": 1}])
        for k in range(7):
            rid = "r%d" % k
            simple_request(s, rid, 0, 100)
            s.span("forward", 1, 1.5, "ModelExecute", rid=[{"rid": rid, "iter": 0}])
            if k:
                s.span("forward", 1 + k - 0.5, 1 + k, "ModelExecute", rid=[{"rid": rid, "iter": 1}])
        s.close()
        p = run_parse(self.inp, self.out, "--span", "forward")
        lines = p.stdout.splitlines()

        def table(title):
            at = next(i for i, l in enumerate(lines) if l.strip() == title)
            self.assertEqual(lines[at + 1].split()[:2], ["request", "count"], p.stdout)
            return {l.split()[0]: [float(x) for x in l.split()[1:]] for l in lines[at + 2:at + 8]}

        fw = table("span forward per request (ms):")
        self.assertEqual(list(fw), ["ALL", "r6", "r5", "r4", "r3", "r2"], p.stdout)
        self.assertEqual(fw["ALL"][0], 13)                      # 1 + 6 * 2 forwards
        self.assertEqual(fw["r6"][0], 2)
        self.assertAlmostEqual(fw["r6"][-1], 1.0)               # total: 2 x 0.5 ms
        sched = table("span BatchSchedule per request (ms):")
        self.assertEqual(sched["ALL"][0], 8)                    # 7 named by the first, 1 by the second
        self.assertEqual(sched["r6"][0], 2)
        self.assertAlmostEqual(sched["r6"][1], 0.2)             # min
        self.assertAlmostEqual(sched["r6"][-2], 0.4)            # max
        self.assertEqual(sched["r5"][0], 1)
        bub = table("bubble between forwards per request (ms):")
        self.assertEqual(bub["ALL"][0], 5)                      # r1 .. r6: one gap each, r1's is 0
        self.assertAlmostEqual(bub["r6"][-1], 5.0)              # 1.5 -> 6.5
        self.assertAlmostEqual(bub["r2"][-1], 1.0)              # 1.5 -> 2.5
        self.assertNotIn("span batchFrameworkProcessing per request (ms):", [l.strip() for l in lines])

    def test_spec_decoding_acceptance(self):
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        simple_request(s, "s1", 0, 50)
        simple_request(s, "s2", 0, 50)
        s.span("specDecoding", 10, 12, "Execute",
               rid=[{"rid": "s1", "iter": 1, "num_spec_output_tokens": 3},
                    {"rid": "s2", "iter": 1, "num_spec_output_tokens": 2}])
        s.span("modelRunnerExec", 12, 20, "Execute", rid=[{"rid": "s1", "iter": 1}, {"rid": "s2", "iter": 1}],
               spec_decode_accepted_by_req={"s1": 2, "s2": 0})
        # a last step no execution reports on: its acceptance is unknown
        s.span("specDecoding", 30, 31.5, "Execute", rid=[{"rid": "s1", "iter": 2, "num_spec_output_tokens": 1}])
        s.close()
        run_parse(self.inp, self.out)
        rows = read_csv(os.path.join(self.out, "batch.csv"))
        spec = [r for r in rows if r["name"] == "specDecoding"][0]
        self.assertAlmostEqual(float(spec["accepted_ratio"]), 0.4)          # (2 + 0) / (3 + 2)
        # position 1: s1 of {s1, s2}; 2: s1 of {s1, s2}; 3: none of {s1} -- keyed from "0",
        # as the reference writes it (changed from the array "[0.5,0.5,0]" deliberately)
        self.assertEqual(spec["accepted_ratio_per_pos"], '{"0": 0.5, "1": 0.5, "2": 0}')
        self.assertEqual(json.loads(spec["accepted_ratio_per_pos"]), {"0": 0.5, "1": 0.5, "2": 0})
        # spec_decode.csv: the reference's columns, one row per request per step
        sd = read_csv(os.path.join(self.out, "spec_decode.csv"))
        self.assertEqual(list(sd[0].keys()), ["rid", "iter", "prof_id", "start_datetime", "end_datetime",
                                              "during_time(ms)", "spec_tokens", "accepted_tokens",
                                              "accepted_ratio", "draft_model_time_ms"])
        got = [(r["rid"], r["iter"], r["spec_tokens"], r["accepted_tokens"], r["accepted_ratio"]) for r in sd]
        self.assertEqual(got, [("s1", "1", "3", "2", "0.6667"), ("s2", "1", "2", "0", "0"),
                               ("s1", "2", "1", "", "")])
        self.assertAlmostEqual(float(sd[0]["during_time(ms)"]), 2.0)
        self.assertAlmostEqual(float(sd[0]["draft_model_time_ms"]), 2.0)
        self.assertAlmostEqual(float(sd[2]["during_time(ms)"]), 1.5)
        self.assertEqual(sd[0]["prof_id"], spec["prof_id"])
        ex = [r for r in rows if r["name"] == "modelRunnerExec"][0]
        self.assertEqual(ex["accepted_ratio"], "")

    def test_long_rid_lists_repeated_and_many_db_rows(self):
        # The same long rid list (> 512 bytes: its decode is reused) on a step's schedule,
        # execution and forward spans, then another list, then the first again; and more
        # rows than one multi-row INSERT holds (32), with a remainder.
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        for i in range(40):
            simple_request(s, "r%d" % i, 0, 100)
        a = [{"rid": "r%d" % i, "iter": 0, "type": 0, "num_scheduled_tokens": 10} for i in range(30)]
        b = [{"rid": "r%d" % i, "iter": 1, "type": 1, "num_scheduled_tokens": 1} for i in range(25, 40)]
        self.assertGreater(len(__import__("json").dumps({"type": 2, "rid": b})), 512)
        t = 10.0
        for lst in (a, a, b, a):
            s.span("batchFrameworkProcessing", t, t + 1, "Schedule", rid=lst)
            s.span("modelExec", t + 1, t + 3, "Execute", rid=lst)
            s.span("forward", t + 1.5, t + 2.5, "ModelExecute", rid=lst)
            t += 5
        s.close()
        run_parse(self.inp, self.out)
        rows = read_csv(os.path.join(self.out, "batch.csv"))
        self.assertEqual(len(rows), 8)  # 4 steps x (schedule + execution)
        expect = [30, 30, 30, 30, 15, 15, 30, 30]
        self.assertEqual([int(r["batch_size"]) for r in rows], expect)
        self.assertEqual([r["prefill_batch_size"] for r in rows], ["30", "30", "30", "30", "0", "0", "30", "30"])
        self.assertEqual(rows[4]["res_list"], "[" + ",".join('"r%d"' % i for i in range(25, 40)) + "]")
        self.assertEqual(rows[7]["res_list"], "[" + ",".join('"r%d"' % i for i in range(30)) + "]")
        fw = read_csv(os.path.join(self.out, "forward.csv"))
        self.assertEqual([int(r["batch_size"]) for r in fw], [30, 30, 15, 30])
        db = sqlite3.connect(os.path.join(self.out, "profiler.db"))
        try:
            # 80 request events + 12 spans: two full INSERTs of 32 and a remainder of 28
            self.assertEqual(db.execute("SELECT count(*) FROM slice").fetchone()[0], 92)
            # insertion order: slice is a view (no rowid), slice_data its rows
            names = [r[0] for r in db.execute("SELECT name FROM slice_data WHERE name != 'httpReq' AND"
                                              " name != 'httpRes' ORDER BY rowid")]
            self.assertEqual(names, ["batchFrameworkProcessing", "modelExec", "forward"] * 4)
            ts = [r[0] for r in db.execute("SELECT timestamp FROM slice_data ORDER BY rowid")]
            self.assertEqual(ts, sorted(ts))
            self.assertEqual(db.execute("SELECT count(*) FROM batch").fetchone()[0], 8)
            self.assertEqual(db.execute("SELECT count(*) FROM request").fetchone()[0], 40)
            long_args = db.execute("SELECT args FROM slice WHERE name = 'forward' ORDER BY rowid").fetchall()
            self.assertEqual(long_args[0], long_args[1])
            self.assertNotEqual(long_args[1], long_args[2])
        finally:
            db.close()

    def test_progress_bar_only_when_asked_or_on_a_terminal(self):
        s = Store(os.path.join(self.inp, "ms_service_big-1.db"), "big", 1)
        rows = [(ns(i * 0.01), 0, "tick", 0, 1, "Other", '{"type":0}', ns(i * 0.01), 1, 1) for i in range(70000)]
        s.db.executemany("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid, tid)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        s.close()
        bin_ = os.environ["SERVPROF_BIN"]
        p = subprocess.run([bin_, "parse", "--input-path", self.inp, "--output-path", self.out, "--progress"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"\[#+\.*\]\s+\d+%\s+\d+ records")
        self.assertIn("70000 records", p.stdout)
        # stderr is a pipe here: no bar unless asked
        p = subprocess.run([bin_, "parse", "--input-path", self.inp, "--output-path", self.out],
                           capture_output=True, text=True)
        self.assertNotRegex(p.stderr, r"\[#+")

    def test_odd_rows(self):
        s = Store(os.path.join(self.inp, "ms_service_odd-1.db"), "odd", 1)
        s.db.execute("INSERT INTO slice(timestamp, name) VALUES (NULL, 'httpReq')")  # no time: skipped
        s.raw("httpReq", ns(1), 0, "Request", '{"type":0,"rid":"\u00e9:1,2"}')      # ':' and ',' in an id
        s.raw("httpRes", ns(3), 0, "Request", '{"type":0,"rid":"\u00e9:1,2","replyTokenSize=":2}')
        s.raw('we"ird', ns(2), -5, None, None)                                       # no domain, no args
        s.raw("deep", ns(2), 0, "x", '{"a":' + "[" * 100 + "]" * 100 + "}")       # deeper than we check
        s.close()
        p = run_parse(self.inp, self.out)
        self.assertIn("1 record(s) without a valid timestamp were skipped", p.stderr)
        self.assertIn("ms_service_odd-1.db", p.stderr)
        req = read_csv(os.path.join(self.out, "request.csv"))
        self.assertEqual([r["http_rid"] for r in req], ["\u00e9:1,2"])
        self.assertAlmostEqual(float(req[0]["execution_time(ms)"]), 2.0)
        import json
        with open(os.path.join(self.out, "chrome_tracing.json")) as f:
            ev = json.load(f)  # a top-level array (the reference's shape)
        names = {e.get("name") for e in ev}
        self.assertIn('we"ird', names)
        deep = [e for e in ev if e.get("name") == "deep"][0]
        self.assertIn("raw", deep["args"])

    def test_bad_invocations(self):
        bin_ = os.environ["SERVPROF_BIN"]
        p = subprocess.run([bin_, "parse", "--input-path", os.path.join(self.inp, "nope")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("nope", p.stderr)
        p = subprocess.run([bin_, "parse", "--input-path", self.inp, "--output-path", self.out],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no raw store", p.stderr)
        p = subprocess.run([bin_, "parse", "--input-path", self.inp, "--format", "xml"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("xml", p.stderr)
        p = subprocess.run([bin_, "parse"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--input-path", p.stderr)
        # an output folder that cannot be created
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        simple_request(s, "r", 0, 1)
        s.close()
        blocker = os.path.join(self.tmp.name, "file")
        open(blocker, "w").close()
        p = subprocess.run([bin_, "parse", "--input-path", self.inp, "--output-path",
                            os.path.join(blocker, "sub")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot create output folder", p.stderr)

    def test_datetimes_follow_tz(self):
        s = Store(os.path.join(self.inp, "ms_service_x-1.db"), "x", 1)
        simple_request(s, "r", 0.001, 1)
        s.close()
        env = dict(os.environ, TZ="UTC")
        cmd = [os.environ["SERVPROF_BIN"], "parse", "--input-path", self.inp, "--output-path", self.out]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        self.assertEqual(read_csv(os.path.join(self.out, "request.csv"))[0]["start_datetime"],
                         "2023-11-14 22:13:20.000001")
        env["TZ"] = "Asia/Shanghai"
        if os.path.exists("/usr/share/zoneinfo/Asia/Shanghai"):
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            self.assertEqual(read_csv(os.path.join(self.out, "request.csv"))[0]["start_datetime"],
                             "2023-11-15 06:13:20.000001")


if __name__ == "__main__":
    unittest.main()
