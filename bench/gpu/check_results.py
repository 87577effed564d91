#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_results.py — compares what gpu_work says it did with what servprof
recorded (raw store, activity store) and what `servprof parse` made of it.

usage: check_results.py SESSION_DIR DID_FILE PARSE_OUT HOST_HZ GPU_HZ
Prints one line per check: what, the program's figure, servprof's figure,
ok/FAIL. Exit status 1 when any check fails. Python 3 standard library only.
"""
import csv
import glob
import json
import os
import sqlite3
import statistics
import sys

session, did_file, parse_out, host_hz, gpu_hz = sys.argv[1:6]
host_hz, gpu_hz = int(host_hz), int(gpu_hz)

did = {}
for line in open(did_file):
    if line.startswith("did "):
        for kv in line.split()[1:]:
            k, _, v = kv.partition("=")
            did[k] = int(v) if v.lstrip("-").isdigit() else v

failures = 0


def check(what, expected, got, ok=None):
    global failures
    if ok is None:
        ok = expected == got
    failures += 0 if ok else 1
    print(f"  {what:<58} program: {str(expected):<14} servprof: {str(got):<14} "
          f"{'ok' if ok else 'FAIL'}")


stores = glob.glob(os.path.join(session, "Trace_Service", "ms_service_*.db"))
acts = glob.glob(os.path.join(session, "Trace_Service", "ascend_service_profiler_*.db"))
print(f"session {session}: raw stores {len(stores)}, activity stores {len(acts)}")
check("one raw store and one activity store", "1 + 1", f"{len(stores)} + {len(acts)}",
      len(stores) == 1 and len(acts) == 1)
if not stores or not acts:
    sys.exit(1)
raw = sqlite3.connect(f"file:{stores[0]}?mode=ro", uri=True)
act = sqlite3.connect(f"file:{acts[0]}?mode=ro", uri=True)
t0, t1 = did["t0"], did["t1"]

print("device activity (CUPTI -> activity store):")
def kcount(where):
    return act.execute(f"SELECT COUNT(*) FROM Kernel WHERE {where}").fetchone()[0]
for name in act.execute("SELECT type, name, COUNT(*), SUM(end-start) FROM Kernel "
                        "GROUP BY type, name ORDER BY 3 DESC"):
    print(f"    {name[0]:<12} {name[1][:60]:<60} n={name[2]:<5} total={name[3] / 1e3:.1f} us")
check("matmul kernels", did["matmul"], kcount("type='KERNEL' AND name LIKE '%matmul%'"))
check("scale kernels", did["scale"], kcount("type='KERNEL' AND name LIKE '%scale%'"))
check("host-to-device copies", did["htod"], kcount("type='MEMCPY_HtoD'"))
check("device-to-host copies", did["dtoh"], kcount("type='MEMCPY_DtoH'"))
check("memsets", did["memset"], kcount("type='MEMSET'"))
check("streams used by matmul", did["streams"],
      act.execute("SELECT COUNT(DISTINCT streamId) FROM Kernel WHERE name LIKE '%matmul%'")
      .fetchone()[0])
kdevs = act.execute("SELECT group_concat(DISTINCT deviceId) FROM Kernel WHERE type='KERNEL'"
                    ).fetchone()[0]
check("device id of the kernels (CUDA ordinal)", str(did["device"]), str(kdevs))
launches = act.execute("SELECT COUNT(*) FROM Api WHERE name LIKE 'cudaLaunchKernel%'").fetchone()[0]
check("cudaLaunchKernel calls (L1)", did["matmul"] + did["scale"], launches)
check("cudaMemcpyAsync calls (L1)", did["htod"] + did["dtoh"],
      act.execute("SELECT COUNT(*) FROM Api WHERE name='cudaMemcpyAsync'").fetchone()[0])
joined = act.execute("SELECT COUNT(*) FROM Kernel k WHERE type='KERNEL' AND EXISTS "
                     "(SELECT 1 FROM Api a WHERE a.correlationId=k.correlationId)").fetchone()[0]
check("kernels joined to their launch by correlationId", did["matmul"] + did["scale"], joined)
outside = act.execute("SELECT COUNT(*) FROM (SELECT start, end FROM Kernel UNION ALL "
                      "SELECT start, end FROM Api) WHERE start < ? OR end > ? OR end < start",
                      (t0 - 2_000_000_000, t1 + 1_000_000_000)).fetchone()[0]
check("activity times inside the run (epoch ns conversion)", 0, outside)
before = act.execute("SELECT COUNT(*) FROM Kernel k JOIN Api a USING (correlationId) "
                     "WHERE k.type='KERNEL' AND k.start < a.start").fetchone()[0]
check("kernels starting before their launch call", 0, before, before <= joined // 100)

print("GPU memory (NVML -> raw store, domain npu):")
rows = raw.execute("SELECT timestamp, json_extract(args, '$.\"scope#device\"'), "
                   "json_extract(args, '$.\"usage=\"'), json_extract(args, '$.\"total=\"'), "
                   "json_extract(args, '$.\"util=\"') FROM slice WHERE cat='npu' AND "
                   "name='DeviceMemory' ORDER BY timestamp").fetchall()
devices = sorted({r[1] for r in rows})
span_s = (t1 - t0) / 1e9
check(f"DeviceMemory rows per device (~{gpu_hz} Hz x {span_s:.1f} s)", f">= {int(gpu_hz * span_s * 0.7)}",
      {d: sum(1 for r in rows if r[1] == d) for d in devices},
      bool(devices) and all(sum(1 for r in rows if r[1] == d) >= gpu_hz * span_s * 0.7
                            for d in devices))
best = None
for d in devices:
    held = [r[2] for r in rows if r[1] == d and did["held_from"] <= r[0] <= did["held_to"]]
    after = [r[2] for r in rows if r[1] == d and r[0] > did["held_to"] + 100_000_000]
    if held and after:
        swing = statistics.median(held) - statistics.median(after)
        if best is None or swing > best[1]:
            best = (d, swing, len(held))
check("MiB more while the program held its buffer", did["big_mib"],
      f"{best[1]:.0f} (dev {best[0]}, {best[2]} rows)" if best else "no rows",
      bool(best) and abs(best[1] - did["big_mib"]) <= 0.15 * did["big_mib"])
bad = [r for r in rows if not (0 <= r[2] <= r[3]) or (r[4] is not None and not 0 <= r[4] <= 100)]
check("DeviceMemory rows with insane values", 0, len(bad))

print("host (/proc -> raw store, domain host):")
mem = raw.execute("SELECT COUNT(*) FROM slice WHERE cat='host' AND name='MemUsage'").fetchone()[0]
check(f"MemUsage rows (~{host_hz} Hz x {span_s:.1f} s)", f"~{int(host_hz * span_s)}", mem,
      abs(mem - host_hz * span_s) <= 0.1 * host_hz * span_s + 3)
cpu_bad = raw.execute("SELECT COUNT(*) FROM slice WHERE cat='host' AND name='CpuUsage' AND NOT "
                      "json_extract(args, '$.\"usage=\"') BETWEEN 0 AND 100").fetchone()[0]
check("CpuUsage rows outside 0..100 %", 0, cpu_bad)

print(f"servprof parse output ({parse_out}):")
trace = os.path.join(parse_out, "chrome_tracing.json")
if os.path.exists(trace):
    with open(trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    counters = {e.get("name") for e in events if e.get("ph") == "C"}
    print(f"    counter tracks: {sorted(str(c) for c in counters)[:12]}")
    kern = sum(1 for e in events if e.get("ph") == "X" and "matmul" in str(e.get("name")))
    check("matmul slices in chrome_tracing.json", did["matmul"], kern)
    check("a GPU memory counter in the timeline", "present",
          "present" if any("DeviceMemory" in str(c) or "npu" in str(c).lower() or
                           ("GPU" in str(c) and "memory" in str(c)) for c in counters)
          else "absent")
else:
    check("chrome_tracing.json written", "yes", "no")
stat = os.path.join(parse_out, "op_statistic.csv")
if os.path.exists(stat):
    with open(stat) as f:
        rows = list(csv.DictReader(f))
    n = sum(int(r["Count"]) for r in rows if "matmul" in r["Op Name"])
    check("matmul count in op_statistic.csv", did["matmul"], n)
else:
    check("op_statistic.csv written", "yes", "no")
print("result:", "all checks passed" if failures == 0 else f"{failures} check(s) FAILED")
sys.exit(1 if failures else 0)
