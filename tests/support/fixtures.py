# SPDX-License-Identifier: Apache-2.0
"""fixtures.py — builds raw stores (the raw-store schema of docs/api.md) for the parse tests.

Each test describes its scenario as rows with times in milliseconds after T0;
values expected in the reports are computed by hand in the tests themselves.
"""
import json
import os
import sqlite3
import subprocess
import tempfile
import unittest

T0 = 1_700_000_000_000_000_000  # ns since the epoch (2023-11-14 22:13:20 UTC)

SCHEMA = """
CREATE TABLE slice(id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER, duration INTEGER, name TEXT,
      depth INTEGER, track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER,
      flag_id TEXT, pid INTEGER, tid INTEGER);
CREATE TABLE Meta(name TEXT, value TEXT, slice TEXT);
CREATE TABLE process(pid TEXT PRIMARY KEY, process_name TEXT, label TEXT, process_sort_index INTEGER, parentPid TEXT);
CREATE TABLE thread(track_id INTEGER PRIMARY KEY, tid TEXT, pid TEXT, thread_name TEXT, thread_sort_index INTEGER);
CREATE TABLE counter(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, pid TEXT, timestamp INTEGER, cat TEXT, args TEXT);
CREATE TABLE flow(id INTEGER PRIMARY KEY AUTOINCREMENT, flow_id TEXT, name TEXT, cat TEXT, track_id INTEGER, timestamp INTEGER, type TEXT);
"""


def ns(ms):
    return T0 + int(round(ms * 1_000_000))


class Store:
    """One raw store; rows are inserted in the order given (not time order)."""

    def __init__(self, path, hostname="host", pid=100, meta=None, wal=False):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.exists(path):
            os.unlink(path)
        self.path = path
        self.pid = pid
        self.db = sqlite3.connect(path)
        if wal:
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)
        self.db.execute("INSERT INTO Meta(name, value) VALUES ('hostname', ?)", (hostname,))
        self.db.execute("INSERT INTO Meta(name, value) VALUES ('ppid', '1')")
        for k, v in (meta or {}).items():
            self.db.execute("INSERT INTO Meta(name, value) VALUES (?, ?)", (k, str(v)))
        self.db.commit()

    def span(self, name, start_ms, end_ms, cat="", tid=None, **args):
        a = {"type": 2}
        a.update(args)
        self._row(name, ns(start_ms), ns(end_ms) - ns(start_ms), cat, tid, a)

    def event(self, name, at_ms, cat="", tid=None, **args):
        a = {"type": 0}
        a.update(args)
        self._row(name, ns(at_ms), 0, cat, tid, a)

    def link(self, at_ms, frm, to, cat="Request"):
        self._row("Link", ns(at_ms), 0, cat, None, {"type": 3, "from": frm, "to": to})

    def raw(self, name, ts, dur, cat, args_text, tid=None):
        tid = self.pid if tid is None else tid
        self.db.execute("INSERT INTO slice(timestamp, duration, name, depth, track_id, cat, args, end_time, pid, tid)"
                        " VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
                        (ts, dur, name, tid, cat, args_text, ts + dur, self.pid, tid))

    def _row(self, name, ts, dur, cat, tid, args):
        self.raw(name, ts, dur, cat, json.dumps(args), tid)

    def commit(self):
        self.db.commit()

    def close(self):
        self.db.commit()
        self.db.close()


def ev(**kw):
    """Merges keys that are not Python identifiers (QueueSize=, scope#QueueName)."""
    return kw


def run_parse(input_dir, output_dir, *extra, check=True):
    cmd = [os.environ["SERVPROF_BIN"], "parse", "--input-path", input_dir, "--output-path", output_dir,
           "--no-progress", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError("parse failed (%d):\nstdout:\n%s\nstderr:\n%s" % (p.returncode, p.stdout, p.stderr))
    return p


def read_csv(path):
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def simple_request(s, rid, start, end, reply=4):
    """A request seen by the front end only: httpReq at start, httpRes at end (ms)."""
    s.event("httpReq", start, "Request", rid=rid)
    s.event("httpRes", end, "Request", rid=rid, **{"recvTokenSize=": 10, "replyTokenSize=": reply})


class TempCase(unittest.TestCase):
    """A test with a fresh folder: self.inp (created) for stores, self.out for the parse."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.inp = os.path.join(self.tmp.name, "in")
        self.out = os.path.join(self.tmp.name, "out")
        os.makedirs(self.inp)

    def tearDown(self):
        self.tmp.cleanup()
