# SPDX-License-Identifier: Apache-2.0
"""test_export.py — `servprof export --to clickhouse://` against real
ClickHouse servers started by chlib.py (one node, or a 2-shard cluster).

What is proved, each against what the local parse of the same stores says:
every record is one span row and every report row one row of its table,
spread over both shards; a second export sends nothing; an export cut by a
shard going down fails with a message naming it and, resumed, ends with
exactly the right rows (no row twice); hostile bytes (quotes, backslashes,
NUL, invalid UTF-8) are stored verbatim; a wrong password, a server that is
not ClickHouse and a closed port each give one clear line and exit 1.
"""
import http.server
import os
import sqlite3
import subprocess
import tempfile
import threading
import time
import unittest

import chlib  # noqa: E402
from support import servelike  # noqa: E402
from support.fixtures import Store, T0  # noqa: E402

BIN = os.environ.get("SERVPROF_BIN", os.path.join("build", "bin", "servprof"))


def env(password=chlib.PASSWORD):
    e = dict(os.environ)
    e["SERVPROF_CLICKHOUSE_PASSWORD"] = password
    e.pop("SERVPROF_CLICKHOUSE_USER", None)
    return e


def export(inp, url, *extra, password=chlib.PASSWORD, check=True):
    p = subprocess.run([BIN, "export", inp, "--to", url, "--no-progress", *extra], env=env(password),
                       capture_output=True, text=True, timeout=300 * chlib.SLACK)
    if check and p.returncode != 0:
        raise AssertionError("export failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    return p


def local_counts(inp):
    """Rows per profiler.db table of a local parse of inp, and the store's records."""
    out = tempfile.mkdtemp(prefix="sp-ch-parse-")
    subprocess.run([BIN, "parse", "--input-path", inp, "--output-path", out, "--no-progress", "--format", "db"],
                   check=True, capture_output=True, timeout=300)
    db = sqlite3.connect(os.path.join(out, "profiler.db"))
    counts = {}
    for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        counts[t] = db.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0]
    return counts


def store_records(inp):
    n = 0
    for root, _, files in os.walk(inp):
        for f in files:
            if f.startswith("ms_service_") and f.endswith(".db"):
                n += sqlite3.connect(os.path.join(root, f)).execute(
                    "SELECT count(*) FROM slice WHERE timestamp > 0").fetchone()[0]
    return n


def build_fleet(root, extra_hosts=3, per_host=400):
    """servelike's two stores plus a few hosts of simple requests, so both shards get stores."""
    servelike.build(root)
    for h in range(extra_hosts):
        s = Store(os.path.join(root, "Trace_Service", "ms_service_node%d-%d.db" % (h, 700 + h)), "node%d" % h,
                  700 + h)
        for i in range(per_host // 2):
            rid = "n%d-r%d" % (h, i)
            s.event("httpReq", 5000 + i * 3 + h * 0.1, "Request", rid=rid)
            s.event("httpRes", 5001.5 + i * 3 + h * 0.1, "Request", rid=rid,
                    **{"recvTokenSize=": 10 + i % 7, "replyTokenSize=": 1 + i % 5})
        s.close()


class ExportTwoShards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed (Debian packages clickhouse-server "
                                    "clickhouse-client; scripts/install-deps.sh installs them)")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-test-")
        cls.inp = os.path.join(cls.tmp, "in")
        build_fleet(cls.inp)
        cls.local = local_counts(cls.inp)
        cls.records = store_records(cls.inp)
        cls.cluster = chlib.Cluster(2, "two", os.path.join(cls.tmp, "ch")).start()

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def args(self, db):
        return (self.cluster.nodes[0].url(db), "--create", "--cluster", "two", "--nodes", self.cluster.node_urls(db))

    def count(self, db, table, node=0, local=False):
        t = table + ("_local" if local else "")
        return int(self.cluster.nodes[node].scalar("SELECT count() FROM %s.%s" % (db, t)))

    def assert_exact(self, db):
        """Every record once, every report row once, keys unique."""
        self.assertEqual(self.count(db, "span"), self.records)
        n0 = self.cluster.nodes[0]
        self.assertEqual(int(n0.scalar("SELECT uniqExact(store, seq) FROM %s.span" % db)), self.records)
        for t in ("request", "batch", "forward", "kvcache"):
            if t in self.local:
                self.assertEqual(self.count(db, t), self.local[t], t)
        self.assertEqual(self.count(db, "link"), 40)  # servelike links each front-end id to the engine's

    def test_two_shards_counts_then_nothing_twice(self):
        p = export(self.inp, *self.args("fleet"))
        self.assertIn("2 nodes", p.stderr)
        self.assert_exact("fleet")
        # both shards hold stores, and together exactly the whole
        a = self.count("fleet", "span", 0, local=True)
        b = self.count("fleet", "span", 1, local=True)
        self.assertGreater(a, 0)
        self.assertGreater(b, 0)
        self.assertEqual(a + b, self.records)
        # the report rows equal the local parse's, value for value (request TTFTs)
        got = self.cluster.nodes[0].query(
            "SELECT http_rid, `first_token_latency(ms)` FROM fleet.request ORDER BY http_rid FORMAT TabSeparated")
        out = tempfile.mkdtemp(prefix="sp-ch-parse-")
        subprocess.run([BIN, "parse", "--input-path", self.inp, "--output-path", out, "--no-progress",
                        "--format", "db"], check=True, capture_output=True)
        db = sqlite3.connect(os.path.join(out, "profiler.db"))
        want = sorted(db.execute('SELECT http_rid, "first_token_latency(ms)" FROM request').fetchall())
        rows = [line.split("\t") for line in got.decode().splitlines()]
        self.assertEqual(len(rows), len(want))
        for (rid, v), (wrid, wv) in zip(rows, want):
            self.assertEqual(rid, wrid)
            self.assertEqual(v == "\\N", wv is None)
            if wv is not None:
                self.assertEqual(float(v), wv)
        # again: nothing is sent, nothing stored twice
        p2 = export(self.inp, *self.args("fleet"))
        self.assertIn(" 0 rows sent", p2.stderr)
        self.assert_exact("fleet")

    def test_hosts_export_at_once(self):
        """Two hosts export their own stores into the cluster at the same time: nothing lost or doubled."""
        import shutil
        dirs = []
        for h in ("node0", "node1"):
            d = os.path.join(self.tmp, "host-" + h, "Trace_Service")
            os.makedirs(d)
            for f in os.listdir(os.path.join(self.inp, "Trace_Service")):
                if f.startswith("ms_service_%s-" % h):
                    shutil.copy(os.path.join(self.inp, "Trace_Service", f), d)
            dirs.append(os.path.dirname(d))
        procs = [subprocess.Popen([BIN, "export", d, "--to", *self.args("many"), "--block-rows", "50",
                                   "--no-progress"], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for d in dirs]
        for p in procs:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        want_spans = sum(store_records(d) for d in dirs)
        want_req = sum(local_counts(d)["request"] for d in dirs)
        self.assertEqual(self.count("many", "span"), want_spans)
        self.assertEqual(self.count("many", "request"), want_req)
        self.assertEqual(int(self.cluster.nodes[0].scalar("SELECT count() FROM many.exports")), 2)

    def test_gzip_bodies(self):
        p = export(self.inp, *self.args("gz"), "--compress")
        self.assertIn("2 nodes", p.stderr)
        self.assert_exact("gz")

    def test_shard_down_mid_export_then_resumed(self):
        db = "resume"
        victim = self.cluster.nodes[1]
        cmd = [BIN, "export", self.inp, "--to", *self.args(db), "--block-rows", "5", "--no-progress"]
        proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # wait (a condition, not a time) until shard 1 holds some span rows, then take it down
            deadline = time.time() + 120 * chlib.SLACK
            while True:
                try:
                    if int(victim.scalar("SELECT count() FROM %s.span_local" % db)) > 0:
                        break
                except RuntimeError:
                    pass  # the table is not there yet
                self.assertIsNone(proc.poll(), "export ended before shard 1 got a row")
                self.assertLess(time.time(), deadline, "shard 1 got no row")
                time.sleep(0.01)
            victim.kill()
            # a failed assertion below must not leave shard 1 down for the cases after this one
            self.addCleanup(lambda: victim.proc.poll() is None or victim.start())
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 1, "export should fail with shard 1 down:\n" + err)
        self.assertIn("127.0.0.1:%d" % victim.http_port, err)
        self.assertIn("run the same command again", err)
        victim.start()
        partial = self.count(db, "span")
        self.assertLess(partial, self.records)
        p = export(self.inp, *self.args(db), "--block-rows", "5")
        self.assertRegex(p.stderr, r"[1-9][0-9]* already there")
        self.assert_exact(db)

    def test_hostile_bytes_stored_verbatim(self):
        inp = os.path.join(self.tmp, "hostile")
        s = Store(os.path.join(inp, "ms_service_evil-1.db"), "ev'il\\host", 1)
        weird = "we'ird\"na\\me'); DROP TABLE span; --"
        rid = "r'1\\\"x"
        s.event("httpReq", 1, "Request", rid=rid)
        s.event(weird, 2, "Dom'ain\\", rid=rid)
        s.event("httpRes", 3, "Request", rid=rid, **{"recvTokenSize=": 1, "replyTokenSize=": 1})
        # args with a NUL byte and invalid UTF-8, as raw bytes of a TEXT value
        raw = b'{"type": 0, "rid": "' + rid.replace("\\", "\\\\").replace('"', '\\"').encode() + \
            b'", "note": "a\x00b\xff\xfe\xc3("}'
        s.db.execute("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid, tid)"
                     " VALUES (?, 0, 'nul', 0, 1, 'x', CAST(? AS TEXT), ?, 1, 1)",
                     (T0 + 2_500_000, raw, T0 + 2_500_000))
        s.close()
        export(inp, self.cluster.nodes[0].url("hostile"), "--create")
        n = self.cluster.nodes[0]

        def hexes(sql):
            return n.scalar(sql + " FORMAT TabSeparated")

        self.assertEqual(hexes("SELECT hex(args) FROM hostile.span WHERE name = 'nul'"), raw.hex().upper())
        self.assertEqual(hexes("SELECT hex(name) FROM hostile.span WHERE domain = 'Dom\\'ain\\\\'"),
                         weird.encode().hex().upper())
        self.assertEqual(hexes("SELECT hex(host) FROM hostile.span LIMIT 1"), "ev'il\\host".encode().hex().upper())
        self.assertEqual(hexes("SELECT DISTINCT hex(rid) FROM hostile.span WHERE rid != ''"),
                         rid.encode().hex().upper())
        self.assertEqual(hexes("SELECT hex(http_rid) FROM hostile.request"), rid.encode().hex().upper())
        self.assertEqual(int(hexes("SELECT count() FROM hostile.span")), 4)


class ExportErrors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not chlib.available():
            raise unittest.SkipTest("clickhouse-server is not installed (Debian packages clickhouse-server "
                                    "clickhouse-client; scripts/install-deps.sh installs them)")
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-err-")
        cls.inp = os.path.join(cls.tmp, "in")
        s = Store(os.path.join(cls.inp, "ms_service_h-1.db"), "h", 1)
        s.event("httpReq", 1, "Request", rid="a")
        s.event("httpRes", 2, "Request", rid="a", **{"recvTokenSize=": 1, "replyTokenSize=": 1})
        s.close()
        cls.node = chlib.Node(cls.tmp, "one")
        cls.node.write_config()
        cls.node.start()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def one_line_error(self, p, *needles):
        self.assertEqual(p.returncode, 1, p.stderr)
        for s in needles:
            self.assertIn(s, p.stderr)

    def test_wrong_password(self):
        p = export(self.inp, self.node.url("w"), "--create", password="nope", check=False)
        self.one_line_error(p, "Wrong password", "SERVPROF_CLICKHOUSE_PASSWORD")

    def test_password_file_and_url_warning(self):
        pf = os.path.join(self.tmp, "pw")
        with open(pf, "w") as f:
            f.write(chlib.PASSWORD + "\n")
        p = export(self.inp, self.node.url("pf"), "--create", "--password-file", pf, password="wrong")
        self.assertNotIn("warning", p.stderr)
        e = env()
        del e["SERVPROF_CLICKHOUSE_PASSWORD"]
        url = self.node.url("pu").replace("://", "://default:%s@" % chlib.PASSWORD)  # taken as written
        p = subprocess.run([BIN, "export", self.inp, "--to", url, "--create", "--no-progress"], env=e,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: the password is in the URL", p.stderr)

    def test_not_clickhouse(self):
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = b"<html>hello</html>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        try:
            p = export(self.inp, "clickhouse://127.0.0.1:%d/x" % srv.server_address[1], check=False)
        finally:
            srv.shutdown()
            srv.server_close()
        self.one_line_error(p, "not a ClickHouse server", "hello")

    def fake(self, on_post):
        """An HTTP server that answers /ping as ClickHouse does and every POST with on_post(handler, query)."""
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.answer(200, b"Ok.\n")

            def do_POST(self):
                import urllib.parse
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("query", [""])[0]
                on_post(self, q or body.decode(errors="replace"))

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv

    def run_fake(self, on_post):
        srv = self.fake(on_post)
        try:
            return export(self.inp, "clickhouse://127.0.0.1:%d/x" % srv.server_address[1], check=False)
        finally:
            srv.shutdown()
            srv.server_close()

    def test_full_disk(self):
        def on_post(h, q):
            if q.startswith("INSERT INTO") and "FORMAT RowBinary" in q:
                h.answer(500, b"Code: 243, e.displayText() = DB::Exception: Cannot reserve 1.00 MiB, not enough "
                              b"space, e.what() = DB::Exception\n")
            else:
                h.answer(200, b"0\t0\n")
        p = self.run_fake(on_post)
        self.one_line_error(p, "ClickHouse code 243", "disk is full", "run the same command again")

    def test_connection_reset(self):
        def on_post(h, q):
            if q.startswith("INSERT INTO") and "FORMAT RowBinary" in q:
                h.close_connection = True
                h.connection.shutdown(2)  # no answer: the connection ends under the client
            else:
                h.answer(200, b"0\t0\n")
        p = self.run_fake(on_post)
        self.one_line_error(p, "the connection was reset", "run the same command again")

    def test_nothing_listening(self):
        p = export(self.inp, "clickhouse://127.0.0.1:%d/x" % chlib.free_port(), check=False)
        self.one_line_error(p, "is the server running")

    def test_missing_tables_without_create(self):
        p = export(self.inp, self.node.url("nocreate"), check=False)
        self.one_line_error(p, "--create")

    def test_bad_url_and_scheme(self):
        p = export(self.inp, "clickhouse://127.0.0.1:notaport/x", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("port 'notaport'", p.stderr)
        p = export(self.inp, "kafka://x", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown scheme", p.stderr)
        self.assertIn("clickhouse://", p.stderr)


if __name__ == "__main__":
    chlib.main()
