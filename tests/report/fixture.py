# SPDX-License-Identifier: Apache-2.0
"""fixture.py — a document of the shape of `servprof analyze`'s JSON
(docs/analyze.md, "The JSON document") made from a profiler.db with plain SQL.

It is NOT analyze: its figures are simple (windows from request.csv rows,
busy = forward time / window, the rest idle) and its one finding is made up.
The report tests use it to check that the page shows whatever an analyze
document holds (`servprof report --analyze-json FILE`), independently of
analyze's own code, and to exercise the --compare-json path.
"""
import json
import sqlite3


def pct(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None, "min": None, "max": None}

    def q(p):
        k = (len(v) - 1) * p
        lo = int(k)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (k - lo)
    return {"n": len(v), "mean": sum(v) / len(v), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99),
            "min": v[0], "max": v[-1]}


def analyze_like(db_path, input_name, windows=10, finding_rid=None):
    db = sqlite3.connect(db_path)
    req = db.execute('SELECT http_rid, "start_time(ms)", "execution_time(ms)", "first_token_latency(ms)",'
                     ' "tpot(ms)", "queue_wait_time(ms)", "prefill_time(ms)", reply_token_size FROM request'
                     ' WHERE "execution_time(ms)" IS NOT NULL').fetchall()
    fwd = db.execute('SELECT "start_time(ms)", "end_time(ms)" FROM forward').fetchall()
    t0 = min([r[1] for r in req] + [f[0] for f in fwd])
    t1 = max([r[1] + r[2] for r in req] + [f[1] for f in fwd])
    width = (t1 - t0) / windows
    ms = lambda i: [r[i] if r[i] != "" else None for r in req]
    rows = []
    for w in range(windows):
        a, b = t0 + w * width, t0 + (w + 1) * width
        ending = [r for r in req if a <= r[1] + r[2] < b or (w == windows - 1 and r[1] + r[2] == b)]
        busy = sum(max(0.0, min(f[1], b) - max(f[0], a)) for f in fwd) / width
        rows.append({"scope": "all", "prof_id": None, "dp_rank": None, "index": w,
                     "start_ns": int(a * 1e6), "end_ns": int(b * 1e6), "finished": len(ending),
                     "throughput_rps": len(ending) / (width / 1e3),
                     "output_tokens_per_s": sum(r[7] or 0 for r in ending) / (width / 1e3),
                     "ttft_ms": pct(r[3] for r in ending), "tpot_ms": pct(r[4] or None for r in ending),
                     "e2e_ms": pct(r[2] for r in ending), "queue_ms": pct(r[5] or None for r in ending),
                     "steps": {}, "kv_usage_mean": None, "kv_usage_max": None, "preemptions": 0,
                     "busy_frac": min(busy, 1.0), "stalled_frac": 0.0, "idle_frac": 1.0 - min(busy, 1.0)})
    busy_all = sum(r["busy_frac"] for r in rows) / windows
    breakdown = []
    for r in req:
        if r[3] is None or r[3] == "":
            continue
        queue = r[5] or 0.0
        prefill = r[6] or 0.0
        breakdown.append({"rid": r[0], "start_ns": int(r[1] * 1e6), "ttft_ms": r[3], "queue_ms": queue,
                          "schedule_ms": max(0.0, r[3] - queue - prefill), "prefill_ms": prefill,
                          "first_decode_wait_ms": 0.0})
    slow_rid = finding_rid or max(req, key=lambda r: r[2])[0]
    slow = next(r for r in req if r[0] == slow_rid)
    headline = {"requests": len(req), "complete": len(req), "incomplete": 0,
                "throughput_rps": len(req) / ((t1 - t0) / 1e3), "input_tokens_per_s": None,
                "output_tokens_per_s": sum(r[7] or 0 for r in req) / ((t1 - t0) / 1e3),
                "ttft_ms": pct(ms(3)), "tpot_ms": pct(ms(4)), "e2e_ms": pct(ms(2)), "queue_ms": pct(ms(5)),
                "batch_size_mean": None, "kv_usage_peak": None, "kv_usage_mean": None, "preemptions": 0,
                "busy_frac": busy_all, "stalled_frac": 0.0, "idle_frac": 1 - busy_all,
                "verdict": "under_loaded", "top_finding": None}
    finding = {"id": "under_loaded", "rank": 1, "bottleneck": False, "score": 1 - busy_all,
               "title": "FIXTURE finding: the engine is mostly idle",
               "figure": {"name": "idle_frac", "value": 1 - busy_all, "unit": "frac"},
               "threshold": {"name": "UNDER_LOADED_IDLE_FRAC", "value": 0.5, "op": ">="},
               "evidence": "made by tests/report/fixture.py, not by analyze",
               "windows": list(range(windows)),
               "examples": [{"rid": slow_rid, "ts_ns": int(slow[1] * 1e6), "what": "slowest request"}],
               "knob": "send more load (fixture)"}
    return {"schema": "servprof-analyze/1", "input": input_name, "source": "profiler.db",
            "run": {"start_ns": int(t0 * 1e6), "end_ns": int(t1 * 1e6), "duration_s": (t1 - t0) / 1e3,
                    "records": None, "processes": []},
            "headline": headline, "summaries": {"request": [], "batch": [], "service": []}, "thresholds": {},
            "findings": [finding],
            "windows": {"count": windows, "width_s": width / 1e3, "start_ns": int(t0 * 1e6), "rows": rows},
            "ttft_breakdown": {"percentiles": {k: pct(b[k] for b in breakdown) for k in
                                               ("ttft_ms", "queue_ms", "schedule_ms", "prefill_ms",
                                                "first_decode_wait_ms")},
                               "truncated": False, "requests": breakdown},
            "slowest": [], "spans": []}


def compare_like(a, b):
    """A compare-shaped document of two analyze-like documents (fixture)."""
    rows = []
    for name, path in (("ttft.p50", "ttft_ms.p50"), ("ttft.p99", "ttft_ms.p99"), ("e2e.p50", "e2e_ms.p50"),
                       ("throughput", "throughput_rps")):
        def get(d):
            v = d["headline"]
            for k in path.split("."):
                v = v[k]
            return v
        va, vb = get(a), get(b)
        rows.append({"metric": name, "a": va, "b": vb, "diff_pct": (vb - va) / va * 100 if va else None,
                     "significant": False})
    return {"schema": "fixture-compare", "method": "fixture: no test", "metrics": rows,
            "only_in_a": [], "only_in_b": []}


if __name__ == "__main__":
    import sys
    json.dump(analyze_like(sys.argv[1], sys.argv[1]), sys.stdout)
