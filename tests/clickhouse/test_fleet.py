# SPDX-License-Identifier: Apache-2.0
"""test_fleet.py — many hosts into one 2-shard cluster (chlib.py), on one clock.

Inputs: the parse tests' three-host clock fixture (front end "fe", prefill
"p" 3 ms ahead, decode "d" 7 s behind: tests/parse/test_parse_clock.py), and
a fleet of five hosts of plain requests.

  - export of the three hosts in one process: the parser's clock offsets are
    applied to every span, so every prefill->decode hand-off (p's
    sendReqToD before d's sendReqToDSucc) is in causal order in ClickHouse,
    d's rows are moved by the offset parse reports in clock_offsets.csv,
    and the clock_offsets table is exported with the rest;
  - three exporters at once, one per host, each with --prefer its nearest
    shard and the fleet's offsets as --clock-offset: every row lands on
    the preferred node, the spans equal the one-process export's row for
    row (same timestamps), the totals are exact; run again (with other
    --prefer values, or none) they store nothing;
  - a fleet of five hosts exported by five processes at once: totals equal
    the local parse's, a second round stores nothing;
  - --prefer and --clock-offset usage errors are one line, exit 2.
"""
import csv
import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

import chlib  # noqa: E402
from test_export import BIN, build_fleet, env, local_counts, store_records  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def clock_fixture(inp):
    spec = importlib.util.spec_from_file_location("test_parse_clock",
                                                  os.path.join(HERE, "..", "parse", "test_parse_clock.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.build(inp)
    return mod


def start_export(inp, url, *extra):
    return subprocess.Popen([BIN, "export", inp, "--to", url, "--no-progress", *extra], env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_all(procs):
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300 * chlib.SLACK)
        if p.returncode != 0:
            raise AssertionError("export failed (%d):\n%s%s" % (p.returncode, out, err))
        outs.append(out + err)
    return outs


def tsv(node, sql):
    return [line.split("\t") for line in node.query(sql + " FORMAT TabSeparated").decode().splitlines()]


class Fleet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-fleet-")
        cls.cluster = chlib.Cluster(2, "two", os.path.join(cls.tmp, "ch")).start()
        cls.n0 = cls.cluster.nodes[0]
        cls.clock = os.path.join(cls.tmp, "clock")
        cls.fx = clock_fixture(cls.clock)
        out = os.path.join(cls.tmp, "parsed")
        subprocess.run([BIN, "parse", "--input-path", cls.clock, "--output-path", out, "--no-progress"],
                       check=True, capture_output=True, timeout=300)
        with open(os.path.join(out, "clock_offsets.csv")) as f:
            cls.offsets = {r["hostname"]: round(float(r["offset(ms)"]) * 1e6) for r in csv.DictReader(f)}

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def cl(self, db):
        return ["--cluster", "two", "--nodes", self.cluster.node_urls(db)]

    def export(self, inp, db, *extra):
        return wait_all([start_export(inp, self.n0.url(db), "--create", *self.cl(db), *extra)])[0]

    def spans(self, db):
        return sorted(tuple(r) for r in tsv(self.n0, "SELECT host, name, ts, dur FROM %s.span" % db))

    def assert_handoffs_causal(self, db):
        """Per request (Link from -> to), p's sendReqToD is before d's sendReqToDSucc."""
        owner = {to: frm for frm, to in tsv(self.n0, "SELECT from_rid, to_rid FROM %s.link" % db)}
        first = {}
        for rid, name, ts in tsv(self.n0, "SELECT rid, name, ts FROM %s.span WHERE name IN "
                                 "('sendReqToD', 'sendReqToDSucc')" % db):
            k = (owner.get(rid, rid), name)
            first[k] = min(first.get(k, int(ts)), int(ts))
        sent = {r: t for (r, n), t in first.items() if n == "sendReqToD"}
        got = {r: t for (r, n), t in first.items() if n == "sendReqToDSucc"}
        self.assertEqual(len(sent), self.fx.N)
        self.assertEqual(set(sent), set(got))
        for rid in sent:
            self.assertLessEqual(sent[rid], got[rid], "hand-off of %s runs backwards" % rid)

    def test_1_skewed_clocks_in_one_export(self):
        self.export(self.clock, "one")
        self.assertIn("d", self.offsets)
        self.assertAlmostEqual(self.offsets["d"] / 1e6, self.fx.D_SHIFT_MS, delta=5)
        self.assert_handoffs_causal("one")
        # every span of host H is at its store's time minus H's offset, as parse aligns it
        import sqlite3
        want = []
        for h in ("fe", "p", "d"):
            db = sqlite3.connect(os.path.join(self.clock, h, "ms_service_%s.db" % h))
            for name, ts, dur in db.execute("SELECT name, timestamp, duration FROM slice"):
                want.append((h, name, str(ts - self.offsets.get(h, 0)), str(dur)))
        self.assertEqual(self.spans("one"), sorted(want))
        # the offsets themselves are a table like every report
        got = {r[0]: float(r[1]) for r in tsv(self.n0, "SELECT hostname, `offset(ms)` FROM one.clock_offsets")}
        self.assertEqual(set(got), set(self.offsets))
        # unaligned on purpose, as proof that the check can fail: host d's own clock puts it 7 s early
        raw = sqlite3.connect(os.path.join(self.clock, "d", "ms_service_d.db")).execute(
            "SELECT min(timestamp) FROM slice WHERE name = 'sendReqToDSucc'").fetchone()[0]
        first_sent = int(tsv(self.n0, "SELECT min(ts) FROM one.span WHERE name = 'sendReqToD'")[0][0])
        self.assertLess(raw, first_sent)

    def test_2_three_exporters_each_to_its_shard(self):
        offs = ["--clock-offset=%s=%d" % (h, o) for h, o in sorted(self.offsets.items())]
        prefer = {"fe": "1", "p": "2", "d": self.cluster.nodes[0].url().rsplit("/", 1)[0]}
        procs = [start_export(os.path.join(self.clock, h), self.n0.url("three"), "--create", *self.cl("three"),
                              "--prefer", prefer[h], *offs) for h in ("fe", "p", "d")]
        wait_all(procs)
        # each host's rows on its preferred node, none elsewhere
        for h, node in (("fe", 0), ("p", 1), ("d", 0)):
            other = 1 - node
            n_here = int(self.cluster.nodes[node].scalar("SELECT count() FROM three.span_local WHERE host = '%s'" % h))
            n_else = int(self.cluster.nodes[other].scalar("SELECT count() FROM three.span_local WHERE host = '%s'" % h))
            self.assertGreater(n_here, 0, h)
            self.assertEqual(n_else, 0, h)
        # same rows, same times as one process that saw all three hosts
        self.export(self.clock, "one")  # (idempotent: test_1 may have made it already)
        self.assertEqual(self.spans("three"), self.spans("one"))
        self.assert_handoffs_causal("three")
        self.assertEqual(int(self.n0.scalar("SELECT count() FROM three.span")), store_records(self.clock))
        # again, with the nodes swapped or none preferred: nothing is stored twice
        swap = {"fe": "2", "p": "1", "d": None}
        procs = [start_export(os.path.join(self.clock, h), self.n0.url("three"), *self.cl("three"),
                              *(["--prefer", swap[h]] if swap[h] else []), *offs) for h in ("fe", "p", "d")]
        for out in wait_all(procs):
            self.assertIn(" 0 rows sent", out)
        self.assertEqual(self.spans("three"), self.spans("one"))

    def test_3_five_hosts_at_once(self):
        root = os.path.join(self.tmp, "five")
        build_fleet(root, extra_hosts=5, per_host=300)
        stores = os.path.join(root, "Trace_Service")
        dirs = []
        for f in sorted(os.listdir(stores)):
            if f.startswith("ms_service_node"):
                d = os.path.join(self.tmp, "five-" + f[:-3], "Trace_Service")
                os.makedirs(d)
                shutil.copy(os.path.join(stores, f), d)
                dirs.append(os.path.dirname(d))
        self.assertEqual(len(dirs), 5)
        want = sum(store_records(d) for d in dirs)
        want_req = sum(local_counts(d)["request"] for d in dirs)
        for rnd in range(2):
            procs = [start_export(d, self.n0.url("five"), "--create", *self.cl("five"), "--prefer", str(1 + i % 2))
                     for i, d in enumerate(dirs)]
            outs = wait_all(procs)
            if rnd == 1:
                for out in outs:
                    self.assertIn(" 0 rows sent", out)
            self.assertEqual(int(self.n0.scalar("SELECT count() FROM five.span")), want)
            self.assertEqual(int(self.n0.scalar("SELECT count() FROM five.request")), want_req)
            self.assertEqual(int(self.n0.scalar("SELECT uniqExact(store, seq) FROM five.span")), want)

    def test_4_usage(self):
        url = self.n0.url("u")
        for extra, msg in ((["--prefer", "1"], "--prefer needs --cluster"),
                           (["--clock-offset", "d"], "expected HOST=NS"),
                           (["--clock-offset", "d=1x"], "expected HOST=NS")):
            p = subprocess.run([BIN, "export", self.clock, "--to", url, *extra], env=env(), capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 2, extra)
            self.assertIn(msg, p.stderr)
        p = subprocess.run([BIN, "export", self.clock, "--to", url, "--create", *self.cl("u"), "--prefer", "3"],
                           env=env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--prefer 3: not a node of cluster 'two'", p.stderr)


if __name__ == "__main__":
    chlib.main()
