#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_seeds.py — writes the seed corpora of the fuzz targets (checked in;
rerun only to change them): small stores with 512-byte pages for fuzz_store
(many pages, interior pages and overflow chains in a few kilobytes), and the
text seeds of the other targets, including the inputs that crashed or misread the parser
once (absurd durations, numbers beyond every integer type).

    /usr/bin/python3 tests/fuzz/make_seeds.py
"""
import json
import os
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_700_000_000_000_000_000
SLICE = ("CREATE TABLE slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER, "
         "name TEXT, depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER, "
         "flag_id TEXT, pid INTEGER, tid INTEGER);"
         "CREATE TABLE Meta(name TEXT, value TEXT, slice TEXT);"
         "INSERT INTO Meta VALUES ('hostname', 'h', NULL);")
INS = "INSERT INTO slice(timestamp, duration, name, cat, args, pid, tid) VALUES (?, ?, ?, ?, ?, 1, 1)"


def store(name, rows, legacy=False, journal=None):
    d = os.path.join(HERE, "corpus", "store")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")
    if journal:
        db.execute("PRAGMA journal_mode=%s" % journal)
    if legacy:
        db.executescript("CREATE TABLE Mstx(markId INTEGER PRIMARY KEY, message TEXT, pid INTEGER, tid INTEGER, "
                         "timestamp INTEGER, endTimestamp INTEGER);")
        db.executemany("INSERT INTO Mstx(message, pid, tid, timestamp, endTimestamp) VALUES (?, 1, 1, ?, ?)", rows)
    else:
        db.executescript(SLICE)
        db.executemany(INS, rows)
    db.commit()
    if journal == "WAL":
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def rid_list(k, n):
    return [{"rid": "r%d" % (k * n + i), "iter": i, "type": i % 2, "num_scheduled_tokens": 1} for i in range(n)]


def main():
    rows = []
    for i in range(40):
        rows.append((T0 + i * 1000, 500, "forward", "ModelExecute",
                     json.dumps({"type": 2, "rid": rid_list(i, 3), "batch_size": 3})))
    rows.append((T0 + 5, 10, "httpReq", "Request", json.dumps({"type": 0, "rid": "x" * 1500})))  # overflow chain
    rows.append((T0 + 7, 0, "Enqueue", "Schedule", '{"type":0,"rid":"a","QueueSize=":1,"scope#QueueName":"WAITING"}'))
    store("slice-512.db", rows)
    # late rows: the reorder window; a NULL and a negative timestamp
    late = [(T0 + (i * 7919) % 50 * 1000, 100, "forward", "ModelExecute", '{"type":2,"rid":"r%d"}' % i)
            for i in range(60)]
    late += [(None, 1, "x", "y", "{}"), (-5, 1, "x", "y", "{}")]
    store("late-512.db", late)
    # absurd durations: INT64_MAX, REAL 1e30, 2^62; a REAL timestamp (the raw scan hands over)
    store("absurd-dur.db", [
        (T0, 2**63 - 1, "forward", "ModelExecute", '{"type":2,"rid":[{"rid":"r1","iter":0}]}'),
        (T0 + 1, 1e30, "modelExec", "Execute", '{"type":2,"rid":[{"rid":"r1","iter":0}]}'),
        (T0 + 2, 2**62, "BatchSchedule", "BatchSchedule", '{"type":2}'),
        (float(T0 + 3), 5, "forward", "ModelExecute", '{"type":2}'),
        (2**63 - 10, 100, "forward", "ModelExecute", '{"type":2}'),
    ])
    # numbers beyond every integer type
    store("huge-numbers.db", [
        (T0, 10, "BatchSchedule", "BatchSchedule",
         '{"type":2,"rid":[{"rid":"r1","iter":5000000000,"type":1e300}],"scope#device":99999999999,'
         '"scope#cpu":-1e30,"recvTokenSize=":1e400}'),
    ])
    store("wal-512.db", rows[:20], journal="WAL")
    store("mstx-512.db", [
        ("^name^:^httpReq^,^domain^:^Request^,^rid^:^%d^," % i, T0 + i * 100, T0 + i * 100 + 50) for i in range(30)
    ] + [("{^name^:^forward^,^domain^:^ModelExecute^,^rid^:[{^rid^:^1^,^iter^:7}]}", T0 + 9999, T0 + 1)],
        legacy=True)

    texts = {
        "args": {
            "basic.json": '{"type":0,"rid":"r-1","QueueSize=":3,"scope#QueueName":"WAITING"}',
            "list.json": json.dumps({"rid": rid_list(0, 4), "batch_type": "Prefill,Decode", "batch_size": 4}),
            "huge-iter.json": '{"rid":[{"rid":"r1","iter":5000000000,"type":1e300}],"scope#device":2147483648,'
                              '"scope#cpu":"1e400","type":-3000000000}',
            "escapes.json": '{"rid":"a\\ud83d\\ude00\\u0000\\ud83d\\u00e9\\n\\"\\/","from":"\\ude00","to":"x"}',
            "link.json": '{"type":3,"from":"w-1","to":"http-1"}',
            "spec.json": '{"spec_decode_accepted_by_req":{"r1":2,"r\\u00e9":1e999},"rid":[{"rid":"r1"}]}',
            "kv.json": '{"TotalBlocks=":100,"UsedBlocks=":50.5,"FreeBlocks=":-1,"deviceBlock=":"7"}',
            "deep.json": "{\"x\":" + "[" * 80 + "]" * 80 + "}",
            "bad-escape.json": '{"rid":"\\q\\u12"}',
        },
        "config": {
            "default.json": '{"enable":0,"prof_dir":"~/prof","profiler_level":"INFO"}',
            "full.json": json.dumps({"enable": 1, "prof_dir": "${HOME}/p", "profiler_level": "L2",
                                     "host_system_usage_freq": 50, "npu_memory_usage_freq": 5,
                                     "acl_task_time": 2, "acl_prof_task_time_level": "L1;10",
                                     "aclDataTypeConfig": "ACL_PROF_TASK_TIME,ACL_PROF_X",
                                     "api_filter": "a;b", "kernel_filter": "k", "timelimit": 30,
                                     "domain": "Request; Schedule;;ModelExecute", "buffer_size_kb": 64,
                                     "profiler_step_num": 1e30}),
            "dup-enable.json": '{"enable":1,"enable":0}',
            "bom.json": "\ufeff{\"enable\":1}",
            "nul.json": '{"enable":1,"prof_dir":"a\\u0000b"}',
            "huge.json": '{"enable":1e400,"timelimit":99999999999999999999,"buffer_size_kb":-1}',
        },
        "config_edit": {
            "on.json": "\x01{\n  \"prof_dir\": \"/tmp/p\",\n  \"enable\": 0\n}\n",
            "off.json": "\x00{\"enable\": 1}",
            "insert.json": "\x01{ \"prof_dir\": \"x\" }",
            "empty.json": "\x01{}",
            "dup-enable.json": "\x00{\"enable\":1,\"enable\":1}",
            "nested.json": "\x01{\"a\":{\"enable\":1},\"enable\":\"1\"}",
        },
        "mstx": {
            "plain.txt": "^name^:^httpReq^,^domain^:^Request^,^rid^:^1^,",
            "braced.txt": "{^name^:^forward^,^domain^:^ModelExecute^,^rid^:[{^rid^:^1^,^iter^:5000000000}]}",
            "empty.txt": "",
            "escaped.txt": "^name^:^a\\u00e9\\ud83d^,^domain^:^",
            "long-name.txt": "^name^:^" + "n" * 400 + "^,^domain^:^" + "d" * 300 + "^",
        },
    }
    for target, files in texts.items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(text.encode("utf-8", "surrogatepass"))


if __name__ == "__main__":
    main()
