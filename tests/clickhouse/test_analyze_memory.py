# SPDX-License-Identifier: Apache-2.0
"""test_analyze_memory.py — `analyze --from` and `report --from` hold a
bounded memory per query, so a server with a small per-query limit
(max_memory_usage) still answers them, with the same document and page as
local analyze and report (issue #30, and the pages of tool/export/chpage.c).

The input is bench_fleet.py's --big shape (16 hosts, 11 decode steps)
at 50,000 requests: 1,050,288 records. The export runs under chlib's usual
limit (2 GB); then the node restarts with max_memory_usage = 40 MB.
Measured in system.query_log on this input: the one ORDER BY export_id, seq
per table took 142 MB for the batch rows (spilling, it still fails 40 MB
every time: main 4c4d524 was refused, code 241, 3 runs of 3 for analyze and
for report); read in pages of the key, every query stays near 13 MB, and the
span percentiles take 13 MB. A page that fails mid-way fails the whole run
with one line naming the page (a proxy that turns the third page of the batch
rows into ClickHouse's late exception). A limit the queries cannot fit must
give one message naming max_memory_usage.
"""
import http.client
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import chlib  # noqa: E402
from test_analyze_from import DIFFERENT, diff, from_analyze, local_analyze  # noqa: E402
from test_export import BIN, env, export  # noqa: E402
from test_report_from import page_data  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench_fleet import build  # noqa: E402

SMALL = 40_000_000


def restart_with(node, **settings):
    node.stop()
    node.settings.update(settings)
    node.write_config(node.clusters)
    node.start()


class AnalyzeMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        chlib.require(cls)
        cls.tmp = tempfile.TemporaryDirectory(prefix="sp-chmem-")
        cls.inp, cls.nrec = build(cls.tmp.name, 16, 50_000 // 16, tokens=11)
        cls.cluster = chlib.single(os.path.join(cls.tmp.name, "ch")).start()
        cls.node = cls.cluster.nodes[0]
        export(cls.inp, cls.node.url("mem"), "--create")
        cls.want = local_analyze(cls.inp)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        cls.tmp.cleanup()

    def test_small_limit_same_document(self):
        restart_with(self.node, max_memory_usage=SMALL)
        self.assertEqual(self.node.scalar("SELECT value FROM system.settings WHERE name = 'max_memory_usage'"),
                         str(SMALL))
        got = json.loads(from_analyze(self.node.url("mem")).stdout)
        self.assertEqual(got["run"]["records"], self.nrec)
        self.assertEqual(diff(got, self.want), [], "keys that differ: %s" % sorted(DIFFERENT))

    def test_small_limit_report(self):
        """report --from streams every report row back, sorted: its reader
        (tool/export/chread.c) reads in pages too; the page's data equals
        the local report's."""
        restart_with(self.node, max_memory_usage=SMALL)
        out, local = os.path.join(self.tmp.name, "report.html"), os.path.join(self.tmp.name, "local.html")
        for args in (["--from", self.node.url("mem"), "-o", out], [self.inp, "-o", local]):
            p = subprocess.run([BIN, "report", *args, "--quiet"], env=env(), capture_output=True, text=True,
                               timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
        got, want = page_data(out)["runs"][0], page_data(local)["runs"][0]
        self.assertEqual(got["db"]["requests"], 50_000)
        self.assertEqual(got["db"], want["db"])
        self.assertEqual(diff(got["analyze"], want["analyze"]), [])

    def test_page_failing_midway_fails_the_run(self):
        """The third page of the batch rows ends in ClickHouse's late
        exception (a 200 answer, then the error text): analyze --from
        prints no document and one line naming the page."""
        restart_with(self.node, max_memory_usage=2_000_000_000)
        pages = []
        node = self.node

        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def forward(self, method, body=None):
                c = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=120)
                try:
                    c.request(method, self.path, body=body, headers={"Authorization": self.headers["Authorization"]}
                              if self.headers["Authorization"] else {})
                    r = c.getresponse()
                    return r.status, r.read()
                finally:
                    c.close()

            def do_GET(self):
                self.answer(*self.forward("GET"))

            def do_POST(self):
                sql = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, body = self.forward("POST", sql)
                if b".batch WHERE" in sql and b"AND seq >= " in sql:
                    pages.append(sql)
                    if len(pages) == 3:
                        body = b"".join(body.splitlines(True)[:10]) + (
                            b"Code: 241, e.displayText() = DB::Exception: Memory limit (for query) exceeded: "
                            b"would use 40.01 MiB (attempt to allocate chunk of 1048576 bytes), maximum: 38.15 MiB, "
                            b"e.what() = DB::Exception\n")
                self.answer(status, body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            p = from_analyze("clickhouse://127.0.0.1:%d/mem" % srv.server_address[1], check=False)
        finally:
            srv.shutdown()
            srv.server_close()
        self.assertEqual(len(pages), 3, "no page is asked for after the one that failed")
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("code 241", p.stderr)
        self.assertIn("table batch read in pages", p.stderr)
        self.assertIn("seq ", p.stderr)

    def test_too_small_names_the_setting(self):
        restart_with(self.node, max_memory_usage=8_000_000)
        p = from_analyze(self.node.url("mem"), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("code 241", p.stderr)
        self.assertIn("max_memory_usage", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    chlib.main()
