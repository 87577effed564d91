# SPDX-License-Identifier: Apache-2.0
"""pd_stores.py — hand-built raw stores of disaggregated serving (a front
end and a decode instance, or a coordinator alone) for analyze's PD
findings (analyze/test_analyze_pd.py works every figure out by hand) and
for analyzing them from ClickHouse (clickhouse/test_analyze_from.py).

Each request: the front end's Communication events (receiveReq,
sendReqToD, sendReqToDSucc, decodeRes), and on the decode instance a Link
to its own id, one PullKVCache span (rank, bytes) and its first decode
token. Times are ms after the fixtures' T0."""
import os

from support.fixtures import Store


def request(fe, d, rid, req, send, succ, pull, rank, first, end, nbytes=1_000_000):
    fe.event("receiveReq", req, cat="Communication", rid=rid)
    fe.event("sendReqToD", send, cat="Communication", rid=rid)
    fe.event("sendReqToDSucc", succ, cat="Communication", rid=rid)
    fe.event("decodeRes", end, cat="Communication", rid=rid)
    did = "d-" + rid
    d.link(succ, rid, did)
    d.span("PullKVCache", pull[0], pull[1], cat="KVCache", rid=did, rank=rank, block_tables=[[1]],
           batch_seq_len=[8], bytes=nbytes)
    d.event("decode", first, cat="Request", rid=did)


def build_unbalanced(inp):
    """Three requests arrive together; P sends them at 10, 40, 70.
    Prefill side [req, send]: r1 [0,10], r2 [0,40], r3 [0,70].
    Decode side [succ, end]: r1 [11,22], r2 [41,62], r3 [71,82].
    With pd_queue_min 2: P >= 2 and D = 0 on [0,11] and [22,40] = 29 ms;
    D never holds 2. Time with any in flight: [0,70] + [71,82] = 81 ms.
    Hand-off shares (pull end - send) / (first token - receiveReq):
    r1 (20-10)/21, r2 (60-40)/61, r3 (80-70)/81; mean 0.3092.
    Pulls of 1 MB: rank 0 8 ms and 8 ms (8 ms/MB), rank 1 18 ms: 2.25x."""
    fe = Store(os.path.join(inp, "ms_service_fe.db"), hostname="node", pid=100)
    d = Store(os.path.join(inp, "ms_service_d.db"), hostname="node", pid=200)
    request(fe, d, "r1", 0, 10, 11, (12, 20), 0, 21, 22)
    request(fe, d, "r2", 0, 40, 41, (42, 60), 1, 61, 62)
    request(fe, d, "r3", 0, 70, 71, (72, 80), 0, 81, 82)
    fe.close()
    d.close()


def build_balanced(inp):
    """Four requests 100 ms apart, each alone on each side: at most one in
    flight per side (no imbalance). Share (12.5-10)/13 = 0.192 each.
    Ranks 0 and 1 both pull 1 MB in 1 ms (ratio 1)."""
    fe = Store(os.path.join(inp, "ms_service_fe.db"), hostname="node", pid=100)
    d = Store(os.path.join(inp, "ms_service_d.db"), hostname="node", pid=200)
    for k in range(4):
        t = 100 * k
        request(fe, d, "b%d" % k, t, t + 10, t + 11, (t + 11.5, t + 12.5), k % 2, t + 13, t + 20)
    fe.close()
    d.close()


def build_coordinator_only(inp):
    """No Communication records: the coordinator's moments. c1..c3 are
    dispatched at 0 (prefillStart), finish prefill at 10, 40, 70
    (prefillEnd = decodeStart) and end at 22, 62, 82 (decodeEnd): as the
    unbalanced run but with decode starting at the prefill's end, so P >= 2
    with D idle on [0,10] and [22,40] = 28 ms of 82 ms in flight."""
    coordinator_store(os.path.join(inp, "ms_service_co.db"), "node", 300)


def coordinator_store(path, host, pid):
    """The coordinator's moments for c1..c3 of build_coordinator_only, in
    one store at path (host, pid: where the fleet tests put it)."""
    co = Store(path, hostname=host, pid=pid)
    for rid, pend, end in (("c1", 10, 22), ("c2", 40, 62), ("c3", 70, 82)):
        co.event("RequestDispatch", 0, cat="Coordinator", rid=rid, PrefillAddress="10.0.0.1:1025",
                 DecodeAddress="10.0.0.2:1025")
        co.event("GenerateToken", pend, cat="Coordinator", rid=rid, Phase="prefill")
        co.event("ReqFinish", end, cat="Coordinator", rid=rid)
    co.close()
