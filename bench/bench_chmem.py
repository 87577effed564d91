#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_chmem.py — the server memory of each query `analyze --from` and
`report --from` send (issue #30): system.query_log's memory_usage, not time.

Builds bench_fleet.py's --big shape (16 hosts, 11 decode steps) at
--requests requests under --dir (kept: a rerun reuses the stores and the
exported node), exports it into one chlib node with log_queries=1 (and
--limit as max_memory_usage), then runs `analyze --from` and `report --from`
once each with --bin and prints, per verb, its exit status, wall time, the
number of queries, the largest memory_usage and the top queries by it.
Run it with two binaries (before and after) on the same --dir to compare;
the analyze document is kept in DIR/analyze.json, the page in DIR/report.html.

  python3 bench/bench_chmem.py --requests 50000 --dir D [--bin build/bin/servprof] [--limit BYTES]
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "clickhouse"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import chlib  # noqa: E402
from bench_fleet import build  # noqa: E402

OURS = "type != 1 AND query NOT LIKE '%system.%' AND query NOT LIKE 'SYSTEM%'"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=50000)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin", "servprof"))
    ap.add_argument("--limit", type=int, default=2000000000, help="max_memory_usage of the node (bytes)")
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    inp, nrec = build(a.dir, 16, a.requests // 16, tokens=11)
    print("input %s: %d records" % (inp, nrec), flush=True)
    node = chlib.Node(os.path.join(a.dir, "ch"), settings={"log_queries": 1, "max_memory_usage": a.limit})
    node.write_config(None)
    node.start()
    env = dict(os.environ, SERVPROF_CLICKHOUSE_PASSWORD=chlib.PASSWORD)
    try:
        marker = os.path.join(a.dir, "exported")
        if not os.path.exists(marker):
            subprocess.run([a.bin, "export", inp, "--to", node.url("m"), "--create", "--no-progress"], env=env,
                           check=True)
            open(marker, "w").close()
        verbs = (("analyze", [a.bin, "analyze", "--from", node.url("m"), "--format", "json"]),
                 ("report", [a.bin, "report", "--from", node.url("m"), "-o", os.path.join(a.dir, "report.html"),
                             "--quiet"]))
        for verb, cmd in verbs:
            node.query("SYSTEM FLUSH LOGS")
            node.query("TRUNCATE TABLE system.query_log")
            t = time.time()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.time() - t
            if verb == "analyze" and p.returncode == 0:
                with open(os.path.join(a.dir, "analyze.json"), "w") as f:
                    f.write(p.stdout)
            time.sleep(1)
            node.query("SYSTEM FLUSH LOGS")
            n, mx = node.scalar("SELECT count(), round(max(memory_usage) / 1e6, 1) FROM system.query_log WHERE %s "
                                "FORMAT TabSeparated" % OURS).split("\t")
            print("%s: exit %d, %.1f s wall, %s queries, largest %s MB %s" % (verb, p.returncode, wall, n, mx,
                                                                             p.stderr.strip()[:300]), flush=True)
            print(node.query("SELECT round(memory_usage / 1e6, 1), read_rows, result_rows, substring(replaceRegexpAll("
                             "query, '[\\n\\t ]+', ' '), 1, 110) FROM system.query_log WHERE %s ORDER BY memory_usage "
                             "DESC LIMIT %d FORMAT TabSeparated" % (OURS, a.top)).decode(), flush=True)
    finally:
        node.stop()


if __name__ == "__main__":
    main()
