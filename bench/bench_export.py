#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_export.py — `servprof export` into ClickHouse against the engine's
own limit, and `analyze --from clickhouse` against local analyze.

Phases, each reported apart (wall and, for servprof, CPU of the child):
  1. export: `servprof export IN --to clickhouse://…/bench_a --create` into a
     fresh database of one local ClickHouse node (started by
     tests/clickhouse/chlib.py, data in a temporary folder): the whole
     in-process parse, RowBinary encoding and the INSERTs;
  2. raw curl: the same rows, read back as RowBinary files (SELECT … FORMAT
     RowBinary, not timed), sent by `curl --data-binary @file` into empty
     tables of the same schema (bench_b): what the server takes from a
     client that does no work at all. The ratio curl / export is the
     exporter's share of the engine's limit;
  3. verify: both databases hold the same number of rows per table;
  4. dedup choice: count() on the MergeTree vs count() … FINAL on a
     ReplacingMergeTree (store, seq) copy of the spans — what every query
     would pay if idempotence came from the engine instead of the resume;
  5. analyze: `servprof analyze --from` on bench_a vs local `servprof
     analyze IN` (both --format json to /dev/null);
  6. with --rounds N (N > 1): N-1 more pairs, each an export into a fresh
     database then the same raw curl into fresh twins, alternating, and
     the median ratio of the N pairs with its min and max. The server's
     own speed varies from run to run (single runs measured 68-131 %), so
     one pair is not a figure; the median of pairs run back to back is.

The input is bench_parse's generator (bench/bench_parse.c, --dir reuses
it): run `build/bench/bench_parse --requests N --dir D` first, then
  python3 bench/bench_export.py D/in [--bin build/bin/servprof] [--rounds N]
"""
import argparse
import os
import resource
import subprocess
import sys
import statistics
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "clickhouse"))
import chlib  # noqa: E402


def timed(cmd, env=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stderr


def curl_files(n, db, files):
    """Sends each RowBinary file into its table of db with curl; the wall time."""
    t0 = time.perf_counter()
    for t, path in files:
        q = "INSERT INTO %s.`%s` FORMAT RowBinary" % (db, t)
        r = subprocess.run(["curl", "-sS", "-w", "%{http_code}", "-u", "default:" + chlib.PASSWORD,
                            "--data-binary", "@" + path, "-H", "Expect:",
                            "http://127.0.0.1:%d/?query=%s" % (n.http_port, q.replace(" ", "%20").replace("`", "%60"))],
                           capture_output=True, text=True)
        if not r.stdout.endswith("200"):
            raise SystemExit("curl into %s: %s" % (t, r.stdout[:500]))
    return time.perf_counter() - t0


def more_rounds(a, env, n, tables, files, first, rounds):
    """Rounds 2..rounds: an export into a fresh database, then raw curl into fresh twins; each pair's
    ratio (curl wall / export wall). Each round's databases are dropped after it (disk)."""
    ratios = [first]
    for k in range(2, rounds + 1):
        da, db = "bench_a%d" % k, "bench_b%d" % k
        wall, _, _ = timed([a.bin, "export", a.input, "--to", n.url(da), "--create", "--no-progress",
                            "--block-rows", a.block_rows], env)
        n.query("CREATE DATABASE %s" % db)
        for t in tables:
            n.query("CREATE TABLE %s.`%s` AS bench_a.`%s`" % (db, t, t))
        cwall = curl_files(n, db, files)
        ratios.append(100 * cwall / wall)
        print("round %d: export %.2f s wall, raw curl %.2f s wall: %.0f %%" % (k, wall, cwall, ratios[-1]))
        n.query("DROP DATABASE %s" % da)
        n.query("DROP DATABASE %s" % db)
    print("rounds: %d pairs (export then raw curl), ratio median %.0f %% (min %.0f %%, max %.0f %%): %s"
          % (rounds, statistics.median(ratios), min(ratios), max(ratios),
             ", ".join("%.0f" % r for r in ratios)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("--bin", default=os.path.join("build", "bin", "servprof"))
    ap.add_argument("--block-rows", default="200000")
    ap.add_argument("--rounds", type=int, default=1, help="export / raw curl pairs; the median ratio")
    a = ap.parse_args()
    if a.rounds < 1:
        raise SystemExit("--rounds: at least 1")
    if not chlib.available():
        raise SystemExit("clickhouse-server is not installed (scripts/install-deps.sh)")
    env = dict(os.environ, SERVPROF_CLICKHOUSE_PASSWORD=chlib.PASSWORD)
    tmp = tempfile.mkdtemp(prefix="sp-bench-ch-")
    with chlib.Cluster(1, "one", tmp) as c:
        n = c.nodes[0]
        url = n.url("bench_a")
        wall, cpu, err = timed([a.bin, "export", a.input, "--to", url, "--create", "--no-progress",
                                "--block-rows", a.block_rows], env)
        print(err.strip())
        tables = [t for t in n.scalar("SELECT name FROM system.tables WHERE database = 'bench_a' "
                                      "AND name NOT IN ('exports', 'data_quality') ORDER BY name").split("\n") if t]
        rows = {t: int(n.scalar("SELECT count() FROM bench_a.`%s`" % t)) for t in tables}
        total = sum(rows.values())
        spans = rows.get("span", 0)
        print("export: %d rows (%d spans) in %.2f s wall, %.2f s CPU: %.0f rows/s wall, %.0f records/s wall, "
              "%.0f records/s CPU" % (total, spans, wall, cpu, total / wall, spans / wall, spans / cpu))
        # 2. the same rows as RowBinary files, then raw curl into empty twins
        n.query("CREATE DATABASE bench_b")
        files = []  # (table, path): in blocks of --block-rows, as the export sends them
        nbytes = 0
        blk = int(a.block_rows)
        for t in tables:
            n.query("CREATE TABLE bench_b.`%s` AS bench_a.`%s`" % (t, t))
            for k in range(0, max(rows[t], 1), blk):
                path = os.path.join(tmp, "%s.%d.rowbinary" % (t, k))
                with open(path, "wb") as f:
                    f.write(n.query("SELECT * FROM bench_a.`%s` ORDER BY %s, seq LIMIT %d, %d FORMAT RowBinary"
                                    % (t, "store" if t in ("span", "link") else "export_id", k, blk)))
                files.append((t, path))
                nbytes += os.path.getsize(path)
        cwall = curl_files(n, "bench_b", files)
        print("raw curl: %d rows, %.1f MB RowBinary in %d INSERTs, %.2f s wall: %.0f rows/s"
              % (total, nbytes / 1e6, len(files), cwall, total / cwall))
        print("ratio: export reaches %.0f %% of raw curl's rate (parse included)" % (100 * cwall / wall))
        # 3. verify
        for t in tables:
            got = int(n.scalar("SELECT count() FROM bench_b.`%s`" % t))
            if got != rows[t]:
                raise SystemExit("table %s: %d rows by curl, %d by export" % (t, got, rows[t]))
        # 4. engine dedup: FINAL on every read
        n.query("CREATE TABLE bench_b.span_rmt AS bench_a.span ENGINE = ReplacingMergeTree() ORDER BY (store, seq)")
        n.query("INSERT INTO bench_b.span_rmt SELECT * FROM bench_a.span")
        for label, sql in (("MergeTree count()", "SELECT count() FROM bench_a.span"),
                           ("ReplacingMergeTree count() FINAL", "SELECT count() FROM bench_b.span_rmt FINAL"),
                           ("MergeTree durations by name", "SELECT name, sum(dur) FROM bench_a.span GROUP BY name"),
                           ("ReplacingMergeTree by name FINAL",
                            "SELECT name, sum(dur) FROM bench_b.span_rmt FINAL GROUP BY name")):
            best = 1e9
            for _ in range(3):
                t0 = time.perf_counter()
                n.query(sql)
                best = min(best, time.perf_counter() - t0)
            print("query %-34s best of 3: %.3f s" % (label, best))
        # 5. analyze
        fw, _, _ = timed([a.bin, "analyze", "--from", url, "--format", "json"], env)
        lw, lc, _ = timed([a.bin, "analyze", a.input, "--format", "json"])
        print("analyze --from clickhouse: %.2f s wall; local analyze: %.2f s wall (%.2f s CPU)" % (fw, lw, lc))
        # 6. more export / raw curl pairs
        if a.rounds > 1:
            more_rounds(a, env, n, tables, files, 100 * cwall / wall, a.rounds)


if __name__ == "__main__":
    main()
