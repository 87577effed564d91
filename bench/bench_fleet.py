#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_fleet.py — how export and `analyze --from` grow with the number of
hosts: 1, 4 and 16 simulated hosts of the same size, into a 2-shard
ClickHouse cluster (tests/clickhouse/chlib.py, two local servers).

Each simulated host is one raw store (its own Meta hostname) of a serving
engine's shape: per request httpReq / httpRes, a queue Enqueue / Dequeue,
and per 8-request step a BatchSchedule and a modelExec span with the rid
list, a forward span and a KVCacheStatus event. Stores are written once
per host count under --dir (reused). Per host count it reports: records,
export wall and CPU (the servprof child), records/s, `analyze --from`
wall, local `servprof analyze` wall and CPU.

  python3 bench/bench_fleet.py [--requests-per-host N] [--dir D] [--bin build/bin/servprof]

--per-request: the cost of `analyze --from` per request on one host of
~1 M records (222,000 requests): its wall time, client CPU, ClickHouse's
CPU (both servers, from /proc), the bytes of answers it received
(SERVPROF_CH_STATS) and the report rows, each per request, against local
analyze of the same stores; rounds alternate (--rounds, median taken).
Goal (issue 30): analyze --from within 2x of local analyze's wall time.

  python3 bench/bench_fleet.py --per-request [--rounds 3]

  python3 bench/bench_fleet.py --big 2000000 [--big-hosts 16] --dir D   (the 40 M-record figures)
"""
import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "clickhouse"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import chlib  # noqa: E402
from support.fixtures import SCHEMA, T0  # noqa: E402

MS = 1_000_000


def write_host(path, host, nreq, tokens=0):
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO Meta(name, value) VALUES ('hostname', ?)", (host,))
    rows = []
    pid = 1000

    def row(name, ts, dur, cat, args):
        rows.append((ts, dur, name, pid, cat, json.dumps(args), ts + dur, pid, pid))

    t = T0
    for s in range(0, nreq, 8):
        rids = ["%s-r%d" % (host, i) for i in range(s, min(s + 8, nreq))]
        for i, rid in enumerate(rids):
            row("httpReq", t + i * 10_000, 0, "Request", {"type": 0, "rid": rid})
            row("Enqueue", t + i * 10_000 + 5_000, 0, "Schedule", {"type": 0, "rid": rid, "QueueSize=": i + 1})
            row("Dequeue", t + 200_000, 0, "Schedule", {"type": 0, "rid": rid, "QueueSize=": 0})
        rl = [{"rid": r, "iter": 0, "type": 0, "num_scheduled_tokens": 64} for r in rids]
        row("BatchSchedule", t + 200_000, 300_000, "BatchSchedule", {"type": 2, "rid": rl})
        row("modelExec", t + 500_000, 2 * MS, "ModelExecute", {"type": 2, "rid": rl})
        row("forward", t + 500_000, 2 * MS, "ModelExecute", {"type": 2})
        row("KVCacheStatus", t + 2_500_000, 0, "KVCache", {"type": 0, "TotalBlocks=": 1000, "FreeBlocks=": 900})
        # --tokens T: T decode steps after the prefill one, each a step of the
        # batch and one detokenize per request (the shape of --big's input)
        for k in range(1, tokens + 1):
            b = t + 3 * MS * k
            rl = [{"rid": r, "iter": k, "type": 1, "num_scheduled_tokens": 1} for r in rids]
            row("BatchSchedule", b + 200_000, 300_000, "BatchSchedule", {"type": 2, "rid": rl})
            row("modelExec", b + 500_000, 2 * MS, "ModelExecute", {"type": 2, "rid": rl})
            row("forward", b + 500_000, 2 * MS, "ModelExecute", {"type": 2})
            row("KVCacheStatus", b + 2_500_000, 0, "KVCache", {"type": 0, "TotalBlocks=": 1000, "FreeBlocks=": 900})
            for i, rid in enumerate(rids):
                row("detokenize", b + 2_600_000 + i * 1000, 0, "Request", {"type": 0, "rid": rid})
        t += 3 * MS * tokens
        for i, rid in enumerate(rids):
            row("httpRes", t + 3 * MS + i * 1000, 0, "Request",
                {"type": 0, "rid": rid, "recvTokenSize=": 64, "replyTokenSize=": 1})
        t += 3 * MS
    db.executemany("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid, tid)"
                   " VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    return len(rows)


def build(root, nhosts, nreq, tokens=0):
    d = os.path.join(root, "hosts%d%s" % (nhosts, "-%dr-%dt" % (nreq, tokens) if tokens else ""), "Trace_Service")
    done = os.path.join(d, ".done")
    if not os.path.exists(done):
        os.makedirs(d, exist_ok=True)
        n = sum(write_host(os.path.join(d, "ms_service_host%02d-1000.db" % h), "host%02d" % h, nreq, tokens)
                for h in range(nhosts))
        with open(done, "w") as f:
            f.write(str(n))
    with open(done) as f:
        return os.path.dirname(d), int(f.read())


def timed(cmd, env=None):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    timed.last_stderr = p.stderr
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def server_cpu(c):
    """CPU seconds (user + system) the cluster's server processes have used so far."""
    tot = 0.0
    for n in c.nodes:
        with open("/proc/%d/stat" % n.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tot += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return tot


def per_request(a, env):
    """analyze --from's cost per request on ~1 M records, against local analyze."""
    import re
    import statistics
    nreq = 222000
    inp, nrec = build(os.path.join(a.dir, "perreq"), 1, nreq)
    tmp = tempfile.mkdtemp(prefix="sp-bench-fleet-ch-")
    with chlib.Cluster(2, "two", tmp) as c:
        url = c.nodes[0].url("perreq")
        timed([a.bin, "export", inp, "--to", url, "--create", "--cluster", "two", "--nodes",
               c.node_urls("perreq"), "--no-progress"], env)
        fw, fc, sc, lw, lc = [], [], [], [], []
        stats = ""
        for _ in range(a.rounds):
            s0 = server_cpu(c)
            w, cpu = timed([a.bin, "analyze", "--from", url, "--format", "json"], dict(env, SERVPROF_CH_STATS="1"))
            sc.append(server_cpu(c) - s0)
            fw.append(w)
            fc.append(cpu)
            stats = timed.last_stderr
            w, cpu = timed([a.bin, "analyze", inp, "--format", "json"])
            lw.append(w)
            lc.append(cpu)
    m = re.search(r"(\d+) report rows, (\d+) bytes", stats)
    rows, nbytes = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    med = statistics.median
    print("records %d, requests %d, rounds %d (medians)" % (nrec, nreq, a.rounds))
    print("analyze --from: wall %.2f s (%.2f us/request), client CPU %.2f s, server CPU %.2f s (%.2f us/request)"
          % (med(fw), med(fw) / nreq * 1e6, med(fc), med(sc), med(sc) / nreq * 1e6))
    print("  answers: %d bytes (%.1f B/request), %d report rows (%.2f/request)"
          % (nbytes, nbytes / nreq, rows, rows / nreq))
    print("local analyze:  wall %.2f s (%.2f us/request), CPU %.2f s" % (med(lw), med(lw) / nreq * 1e6, med(lc)))
    ratio = med(fw) / med(lw)
    print("ratio from/local wall %.2f (goal <= 2: %s)" % (ratio, "met" if ratio <= 2 else "NOT met"))

def long_query(node, sql):
    """node.query without its test-sized timeout: a copy of 40 M rows takes minutes."""
    import base64
    import http.client
    import urllib.parse
    c = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=3600)
    auth = base64.b64encode(("default:" + node.password).encode()).decode()
    c.request("POST", "/?" + urllib.parse.urlencode({"query": sql}), body=b"",
              headers={"Authorization": "Basic " + auth})
    r = c.getresponse()
    body = r.read()
    c.close()
    if r.status != 200:
        raise SystemExit("ClickHouse: HTTP %d: %s" % (r.status, body[:500]))


def best_of(cmd, env, n=3):
    return min(timed(cmd, env)[0] for _ in range(n))


def big(a, env):
    """--big R: R requests over --big-hosts stores (11 decode steps each:
    20.5 records a request, so 2,000,000 requests are 41 M records) exported
    once into the 2-shard cluster, copied server-side into one node's plain
    MergeTree tables (the same tables an export without --cluster makes),
    then `analyze --from` on one node and on two shards (best of 3) against
    local `servprof analyze` of the same stores (one run)."""
    nh = a.big_hosts
    inp, nrec = build(a.dir, nh, a.big // nh, tokens=11)
    print("input: %s, %d records, %d requests over %d stores" % (inp, nrec, a.big // nh * nh, nh))
    tmp = tempfile.mkdtemp(prefix="sp-bench-fleet-ch-")
    with chlib.Cluster(2, "two", tmp) as c:
        n0 = c.nodes[0]
        ew, ec = timed([a.bin, "export", inp, "--to", n0.url("big2"), "--create", "--cluster", "two",
                        "--nodes", c.node_urls("big2"), "--no-progress"], env)
        got = int(n0.scalar("SELECT count() FROM big2.span"))
        if got != nrec:
            raise SystemExit("%d spans stored, %d records" % (got, nrec))
        print("export into 2 shards: %.1f s wall, %.1f s CPU: %.0f records/s wall, %.0f records/s CPU"
              % (ew, ec, nrec / ew, nrec / ec))
        n0.query("CREATE DATABASE big1")
        for t in n0.scalar("SELECT name FROM system.tables WHERE database = 'big2' AND name LIKE '%_local'").split():
            base = t[:-len("_local")]
            n0.query("CREATE TABLE big1.`%s` AS big2.`%s`" % (base, t))
            long_query(n0, "INSERT INTO big1.`%s` SELECT * FROM big2.`%s`" % (base, base))
        one = best_of([a.bin, "analyze", "--from", n0.url("big1"), "--format", "json"], env)
        two = best_of([a.bin, "analyze", "--from", n0.url("big2"), "--format", "json"], env)
        rep = best_of([a.bin, "report", "--from", n0.url("big2"), "-o", os.path.join(tmp, "r.html"), "--quiet"],
                      env, 1)
    lw, lc = timed([a.bin, "analyze", inp, "--format", "json"])
    print("analyze --from, one node: %.2f s; two shards: %.2f s (goal: no worse than one node: %s)"
          % (one, two, "met" if two <= one * 1.1 else "NOT met"))
    print("local analyze: %.2f s wall, %.2f s CPU; --from one node / local = %.2f (goal <= 2: %s)"
          % (lw, lc, one / lw, "met" if one <= 2 * lw else "NOT met"))
    print("report --from two shards: %.2f s" % rep)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", type=int, default=0, metavar="REQUESTS",
                    help="instead: the large-input figures (2000000 for the issue's 40 M records)")
    ap.add_argument("--big-hosts", type=int, default=16)
    ap.add_argument("--requests-per-host", type=int, default=8000)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "sp-bench-fleet"))
    ap.add_argument("--bin", default=os.path.join("build", "bin", "servprof"))
    ap.add_argument("--hosts", default="1,4,16")
    ap.add_argument("--per-request", action="store_true", help="analyze --from's cost per request (1 M records)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not chlib.available():
        raise SystemExit("clickhouse-server is not installed (scripts/install-deps.sh)")
    env = dict(os.environ, SERVPROF_CLICKHOUSE_PASSWORD=chlib.PASSWORD)
    if a.per_request:
        return per_request(a, env)

    if a.big:
        return big(a, env)
    tmp = tempfile.mkdtemp(prefix="sp-bench-fleet-ch-")
    print("hosts  records   export_s  export_cpu_s  records/s  analyze_from_s  local_analyze_s  local_cpu_s")
    with chlib.Cluster(2, "two", tmp) as c:
        for nh in [int(x) for x in a.hosts.split(",")]:
            inp, nrec = build(a.dir, nh, a.requests_per_host)
            db = "fleet%d" % nh
            ew, ec = timed([a.bin, "export", inp, "--to", c.nodes[0].url(db), "--create", "--cluster", "two",
                            "--nodes", c.node_urls(db), "--no-progress"], env)
            got = int(c.nodes[0].scalar("SELECT count() FROM %s.span" % db))
            if got != nrec:
                raise SystemExit("%d hosts: %d spans stored, %d records" % (nh, got, nrec))
            fw, _ = timed([a.bin, "analyze", "--from", c.nodes[0].url(db), "--format", "json"], env)
            lw, lc = timed([a.bin, "analyze", inp, "--format", "json"])
            print("%5d  %8d  %8.2f  %12.2f  %9.0f  %14.2f  %15.2f  %11.2f" % (nh, nrec, ew, ec, nrec / ew, fw, lw, lc))


if __name__ == "__main__":
    main()
