# SPDX-License-Identifier: Apache-2.0
"""test_analyze_from.py — `servprof analyze --from clickhouse://` gives the
SAME document as local `servprof analyze` on the same stores: every key
(run, headline, data_quality, summaries, thresholds, findings and verdict,
windows, TTFT breakdown, slowest, spans, PD and MoE blocks where present),
compared whole, on a 2-shard cluster started by chlib.py.

Inputs: a real demo run (tiny-llm-server under Poisson load from
servprof-load, collection on from the start), the parse tests' serving
run plus hosts of plain requests, analyze's hand-made fixture, and a
disaggregated (PD) run whose extent comes from the PD reports. A session
of a folder holding two is analyzed alone with --session, a host with
--host.

The keys that honestly differ (DIFFERENT below) are left out of the
comparison, each with its reason; the text form is compared too.
"""
import json
import os
import subprocess
import tempfile
import unittest

import chlib  # noqa: E402
from support import analyze_fixture as fixture  # noqa: E402
from support import servelike  # noqa: E402
from support.pd_stores import build_unbalanced, coordinator_store  # noqa: E402
from test_export import BIN, build_fleet, env, export  # noqa: E402

# Keys of the document that honestly differ between a local analyze and
# --from, and why (the parse's data-quality counts are compared: the
# exporter stores them, table data_quality):
DIFFERENT = {
    "input": "the local path vs the clickhouse:// URL",
    "source": "'raw' (the parse) vs 'clickhouse'",
}
QUALITY = ("duplicate_ids", "duplicate_example", "figures_left_empty")


def diff(got, want, path=""):
    """Paths where got and want differ (dicts key by key, lists item by item)."""
    if path.lstrip(".") in DIFFERENT:
        return []
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(got) | set(want)):
            p = path + "." + k if path else k
            if k not in got or k not in want:
                if p not in DIFFERENT:
                    out.append("%s: only in %s" % (p, "local" if k in want else "--from"))
                continue
            out += diff(got[k], want[k], p)
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return ["%s: %d items from --from, %d locally" % (path, len(got), len(want))]
        out = []
        for i, (a, b) in enumerate(zip(got, want)):
            out += diff(a, b, "%s[%d]" % (path, i))
        return out
    return [] if got == want else ["%s: --from %r, local %r" % (path, got, want)]


def build_faulty(root):
    """Two hosts whose processes both link engine id "0" (one duplicate id) and a forward naming r1
    11.6 days after its end (one figure left empty): every data-quality count non-zero."""
    from support.fixtures import Store, simple_request
    for host, pid, rid in (("a", 1, "A"), ("b", 2, "B")):
        s = Store(os.path.join(root, "ms_service_%s-%d.db" % (host, pid)), host, pid)
        simple_request(s, rid, 0 + pid, 10 + pid)
        s.link(1 + pid, "0", rid)
        if host == "a":
            simple_request(s, "r1", 0, 10)
            s.span("forward", 1_000_000_000, 1_000_000_001, "ModelExecute", rid=[{"rid": "r1", "iter": 0}])
        s.close()


def moe_store(path, host, pid):
    """Expert-parallel ranks 0 and 1 in one process of host, rank 1 hot (expert_imbalance)."""
    from support.fixtures import Store
    st = Store(path, host, pid)

    def layer(step, lay, t, rank, d, c, k, experts, tokens):
        a = {"step": step, "layer": lay, "tokens": sum(tokens), "rank": rank}
        st.span("MoeDistributeDispatch", t, t + d, "MoE", **a)
        st.span("GroupedMatmul", t + d, t + d + c, "MoE", expert_ids=experts, expert_tokens=tokens, **a)
        st.span("MoeDistributeCombine", t + d + c, t + d + c + k, "MoE", **a)
    for step in range(1, 6):
        t0 = step * 40
        st.span("forward", t0, t0 + 30, "ModelExecute", rid=[{"rid": "a"}])
        layer(step, 0, t0 + 1, 0, 1, 2, 6, [0, 1], [1, 1])
        layer(step, 0, t0 + 1, 1, 1, 6, 2, [2, 3], [8, 2])
    st.close()


def local_analyze(inp):
    p = subprocess.run([BIN, "analyze", inp, "--format", "json"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("local analyze failed:\n" + p.stderr)
    return json.loads(p.stdout)


def from_analyze(url, *extra, check=True):
    p = subprocess.run([BIN, "analyze", "--from", url, "--format", "json", *extra], env=env(),
                       capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("analyze --from failed:\n" + p.stderr)
    return p


def demo_run(root, sampler_hz=0):
    """A real tiny-llm-server run under load, profiled from its start; None when not built."""
    from support.demo_util import LOAD, SMALL_MODEL, Server
    if not (os.path.exists(LOAD) and os.path.exists(os.path.join(os.path.dirname(LOAD), "tiny-llm-server"))):
        return None
    os.makedirs(root, exist_ok=True)
    cfg = os.path.join(root, "profiler.json")
    prof = os.path.join(root, "prof")
    with open(cfg, "w") as f:
        cfg_doc = {"enable": 1, "prof_dir": prof, "profiler_level": "INFO"}
        if sampler_hz:
            cfg_doc["host_system_usage_freq"] = sampler_hz
        json.dump(cfg_doc, f)
    with Server(SMALL_MODEL, env={"SERVICE_PROF_CONFIG_PATH": cfg}, workdir=root) as srv:
        p = subprocess.run([LOAD, "--port", str(srv.port), "--rate", "20", "--duration", "3",
                            "--prompt-len", "16:64", "--output-len", "4:16", "--vocab", "1024", "--quiet",
                            "--out", os.path.join(root, "client.csv")], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            raise AssertionError("servprof-load failed:\n" + p.stdout + p.stderr)
        if srv.stop() != 0:
            raise AssertionError("server did not stop cleanly:\n" + srv.output())
    return prof


class AnalyzeFrom(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-an-")
        cls.cluster = chlib.Cluster(2, "two", os.path.join(cls.tmp, "ch")).start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def url(self, db):
        return self.cluster.nodes[0].url(db)

    def put(self, inp, db, *extra):
        export(inp, self.url(db), "--create", "--cluster", "two", "--nodes", self.cluster.node_urls(db), *extra)

    def assert_equal_docs(self, got, want):
        self.assertEqual(got["source"], "clickhouse")
        self.assertNotIn("not_covered", got)
        d = diff(got, want)
        self.assertEqual(d, [], "analyze --from differs from local analyze:\n" + "\n".join(d[:40]))

    def check(self, inp, db):
        self.put(inp, db)
        want = local_analyze(inp)
        got = json.loads(from_analyze(self.url(db)).stdout)
        self.assert_equal_docs(got, want)
        return got

    def test_demo_run(self):
        prof = demo_run(os.path.join(self.tmp, "demo"))
        if prof is None:
            self.skipTest("tiny-llm-server / servprof-load not built (SERVPROF_BUILD_EXAMPLES)")
        got = self.check(prof, "demo")
        self.assertGreater(got["headline"]["complete"], 10)

    def test_serving_fleet(self):
        inp = os.path.join(self.tmp, "fleet")
        build_fleet(inp)
        got = self.check(inp, "fleet")
        self.assertEqual(got["headline"]["requests"], 40 + 3 * 200)
        # the text form is local analyze's, and -o writes the same files
        url = self.url("fleet")
        p = subprocess.run([BIN, "analyze", "--from", url], env=env(), capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        q = subprocess.run([BIN, "analyze", inp], capture_output=True, text=True)
        self.assertEqual(p.stdout.replace(url + " (ClickHouse", "INPUT ("),
                         q.stdout.replace(inp + " (raw stores", "INPUT ("))
        self.assertIn("640 requests", p.stdout)
        out = os.path.join(self.tmp, "fleet-out")
        p = subprocess.run([BIN, "analyze", "--from", url, "-o", out, "--findings-only"], env=env(),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "analyze.json")) as f:
            self.assertEqual(diff(json.load(f), local_analyze(inp)), [])
        for name in ("request_summary.csv", "windows.csv", "ttft_breakdown.csv", "findings.csv"):
            self.assertTrue(os.path.getsize(os.path.join(out, name)) > 0, name)

    def test_host(self):
        """--host H equals local analyze of H's stores alone (requests that stay on one host)."""
        import shutil
        inp = os.path.join(self.tmp, "hosts")
        build_fleet(inp)
        self.put(inp, "hosts")
        stores = os.path.join(inp, "Trace_Service")
        for host, prefix in (("node1", "ms_service_node1-"), ("hostS", "ms_service_hostS-")):
            alone = os.path.join(self.tmp, "alone-" + host, "Trace_Service")
            os.makedirs(alone)
            for f in os.listdir(stores):
                if f.startswith(prefix):
                    shutil.copy(os.path.join(stores, f), alone)
            got = json.loads(from_analyze(self.url("hosts"), "--host", host).stdout)
            self.assert_equal_docs(got, local_analyze(os.path.dirname(alone)))
        got = json.loads(from_analyze(self.url("hosts"), "--host", "no-such-host").stdout)
        self.assertEqual(got["headline"]["requests"], 0)

    def test_host_pd_moe_fleet(self):
        """--host on a fleet whose PD coordinator and MoE ranks live on hosts of their own: every
        section (coordinator and MoE rows too) is that host's, as local analyze of its stores alone."""
        inp = os.path.join(self.tmp, "pdmoe")
        build_unbalanced(os.path.join(inp, "node"))
        coordinator_store(os.path.join(inp, "coord", "ms_service_co-300.db"), "coord", 300)
        moe_store(os.path.join(inp, "moe", "ms_service_moe-400.db"), "moe", 400)
        self.put(inp, "pdmoe")
        docs = {}
        for host in ("node", "coord", "moe"):
            got = json.loads(from_analyze(self.url("pdmoe"), "--host", host).stdout)
            self.assert_equal_docs(got, local_analyze(os.path.join(inp, host)))
            docs[host] = got
        ids = {h: [f["id"] for f in d["findings"]] for h, d in docs.items()}
        self.assertIn("expert_imbalance", ids["moe"])
        self.assertNotIn("expert_imbalance", ids["node"])  # the MoE rows stay on their host
        self.assertNotIn("expert_imbalance", ids["coord"])
        self.assertNotEqual(docs["coord"]["run"], docs["node"]["run"])  # the coordinator's moments: its own

    def test_data_quality_counts(self):
        """The parse's data-quality counts travel with the export (table data_quality, one row per
        export) and come back in the document and its text; a repeated export stores them once; an
        export without the table (an older servprof) analyzes with the counts null and a note."""
        inp = os.path.join(self.tmp, "faulty")
        build_faulty(inp)
        want = local_analyze(inp)
        self.assertEqual(want["data_quality"]["duplicate_ids"], 1)
        self.assertEqual(want["data_quality"]["figures_left_empty"], 1)
        self.put(inp, "dq")
        p = export(inp, self.url("dq"), "--cluster", "two", "--nodes", self.cluster.node_urls("dq"))
        self.assertIn(" 0 rows sent", p.stderr)
        n0 = self.cluster.nodes[0]
        self.assertEqual(n0.query("SELECT count() FROM dq.data_quality").strip(), b"1")
        url = self.url("dq")
        got = json.loads(from_analyze(url).stdout)
        self.assert_equal_docs(got, want)
        self.assertIn('"0" in ms_service_a-1', got["data_quality"]["duplicate_example"])
        text = subprocess.run([BIN, "analyze", "--from", url], env=env(), capture_output=True, text=True)
        self.assertIn("data quality: 1 id(s) linked from two process stores", text.stdout)
        self.assertIn("data quality: 1 figure(s) left empty", text.stdout)
        # --host: the export's counts are not the host's (non-zero here): null, with a note
        p = from_analyze(url, "--host", "b")
        self.assertIn("are not the host's", p.stderr)
        self.assertIsNone(json.loads(p.stdout)["data_quality"]["duplicate_ids"])
        # an export by an older servprof: no data_quality table
        for n in self.cluster.nodes:
            n.query("DROP TABLE dq.data_quality")
            n.query("DROP TABLE dq.data_quality_local")
        p = from_analyze(url)
        self.assertIn("no data_quality table", p.stderr)
        got = json.loads(p.stdout)
        for k in QUALITY:
            self.assertIsNone(got["data_quality"][k], k)
        d = [x for x in diff(got, want) if not x.startswith(tuple("data_quality." + k for k in QUALITY))]
        self.assertEqual(d, [], "\n".join(d))
        # exporting into it again without --create: the counts are not stored, the export still succeeds
        p = export(inp, url, "--cluster", "two", "--nodes", self.cluster.node_urls("dq"))
        self.assertIn("no data_quality table", p.stderr)

    def test_hand_made_fixture(self):
        inp = os.path.join(self.tmp, "fixture")
        fixture.build(inp)
        got = self.check(inp, "fx")
        self.assertEqual(got["headline"]["requests"], 3)

    def test_pd_run(self):
        inp = os.path.join(self.tmp, "pd")
        build_unbalanced(inp)
        self.check(inp, "pd")

    def test_moe_run(self):
        """Expert-parallel ranks, one hot: the moe_rank and expert_load rows make the same finding."""
        inp = os.path.join(self.tmp, "moe")
        moe_store(os.path.join(inp, "h", "Trace_Service", "ms_service_h-100.db"), "h", 100)
        got = self.check(inp, "moe")
        self.assertIn("expert_imbalance", [f["id"] for f in got["findings"]])

    def test_session(self):
        root = os.path.join(self.tmp, "sessions")
        servelike.build(os.path.join(root, "1201-1000"))
        fixture.build(os.path.join(root, "1201-1100"))
        for s in ("1201-1000", "1201-1100"):
            self.put(root, "ses", "--session", s)
        for s in ("1201-1000", "1201-1100"):
            got = json.loads(from_analyze(self.url("ses"), "--session", s).stdout)
            self.assert_equal_docs(got, local_analyze(os.path.join(root, s)))
        got = json.loads(from_analyze(self.url("ses"), "--session", "1201-1000", "--host", "hostS").stdout)
        self.assert_equal_docs(got, local_analyze(os.path.join(root, "1201-1000")))
        p = from_analyze(self.url("ses"), "--session", "0000-0000", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no export of session '0000-0000'", p.stderr)

    def test_older_export_and_foreign_table(self):
        """An export without the later `complete` column reads as profiler.db reads an older file
        (with a note); a request table without the request id is refused, naming the column."""
        inp = os.path.join(self.tmp, "older")
        build_fleet(inp)
        self.put(inp, "older")
        for n in self.cluster.nodes:
            n.query("ALTER TABLE older.request_local DROP COLUMN complete")
        self.cluster.nodes[0].query("ALTER TABLE older.request DROP COLUMN complete")
        p = from_analyze(self.url("older"))
        self.assertIn("no column `complete`", p.stderr)
        self.assertEqual(diff(json.loads(p.stdout), local_analyze(inp)), [])  # every request is complete there
        n0 = self.cluster.nodes[0]
        n0.query("CREATE DATABASE IF NOT EXISTS foreign_db")
        n0.query("CREATE TABLE foreign_db.request (export_id String, seq UInt64, `start_time(ms)` Float64) "
                 "ENGINE = MergeTree() ORDER BY seq")
        p = from_analyze(self.url("foreign_db"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("has no column `http_rid`", p.stderr)

    def test_unreachable_server(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        p = from_analyze("clickhouse://127.0.0.1:%d/db" % port, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("127.0.0.1:%d" % port, p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertEqual(p.stdout, "")

    def test_empty_database_and_usage(self):
        p = from_analyze(self.url("nothing"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("export a run into it first", p.stderr)
        p = subprocess.run([BIN, "analyze", "--from", self.url("x"), self.tmp], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not both", p.stderr)


if __name__ == "__main__":
    chlib.main()
