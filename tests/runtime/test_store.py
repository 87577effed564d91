# SPDX-License-Identifier: Apache-2.0
"""test_store.py — what the runtime's decisions mean for the raw store
(needs the recorder): nothing recorded while off, the level and domain
filter published at start, a fork child's own store, one store per process."""
import glob
import os
import sqlite3
import time
import unittest

from support.rtlib import ASAN_FORK_SKIP, RuntimeCase, bound, cli, sessions, wait_until, write_config


def rows(store, where="", args=()):
    con = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    try:
        return con.execute("SELECT name, cat, pid, timestamp FROM slice " + where, args).fetchall()
    finally:
        con.close()


def ticks_in(store):
    """The store's 'tick' rows so far (0 while it is not readable yet)."""
    try:
        return len(rows(store, "WHERE name = 'tick'"))
    except sqlite3.Error:
        return 0


def wait_ticks_in(test, store, n=11):
    """Waits (bounded) until the store holds n 'tick' rows."""
    test.assertTrue(wait_until(lambda: ticks_in(store) >= n, bound(10), step=0.02),
                    "fewer than %d ticks reached %s" % (n, store))


class Store(RuntimeCase):

    def test_nothing_recorded_while_off(self):
        write_config(self.cfg, self.base_config())
        p = self.probe()
        p.wait_ticks(100)  # records made while off: none may reach a store
        t_on = time.time_ns()
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        p.wait_state(True)
        d1, store1 = p.session()
        wait_ticks_in(self, store1)
        self.assertEqual(cli("disable", self.cfg).returncode, 0)
        p.wait_state(False)
        t_off = time.time_ns()
        p.wait_ticks(100)
        t_on2 = time.time_ns()
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        p.wait_state(True)
        d2, store2 = p.session()
        self.assertNotEqual(d1, d2)
        wait_ticks_in(self, store2)
        self.assertEqual(p.quit(), 0)
        first = rows(store1, "WHERE name = 'tick'")
        second = rows(store2, "WHERE name = 'tick'")
        self.assertGreater(len(first), 10)
        self.assertGreater(len(second), 10)
        self.assertTrue(all(t_on <= r[3] <= t_off for r in first))
        self.assertTrue(all(r[3] >= t_on2 for r in second))
        self.assertTrue(all(r[2] == p.pid for r in first + second))

    def test_absent_file_records_nothing(self):
        p = self.probe()
        # the library ran: it made the default config (collection off) and
        # the recorder went on recording
        self.assertTrue(wait_until(lambda: os.path.exists(self.cfg), bound(5)), p.log())
        p.wait_ticks(100)
        self.assertEqual(p.quit(), 0)
        self.assertEqual(glob.glob(os.path.join(self.tmp, "**", "*.db"), recursive=True), [])

    def test_level_and_domain_filter(self):
        write_config(self.cfg, self.base_config(enable=1, domain=" probe ; x"))
        p = self.probe()
        p.wait_state(True)
        _, store = p.session()
        wait_ticks_in(self, store)
        self.assertEqual(cli("disable", self.cfg).returncode, 0)
        p.wait_state(False)
        names = {r[0] for r in rows(store)}
        self.assertIn("tick", names)
        self.assertNotIn("other_tick", names)
        write_config(self.cfg, self.base_config(enable=1, profiler_level="ERROR"))
        p.wait_state(True)
        _, store = p.session()
        p.wait_ticks(100)  # INFO records made under the ERROR level: none may be kept
        self.assertEqual(p.quit(), 0)
        self.assertEqual([r for r in rows(store) if r[0] in ("tick", "other_tick")], [])

    @ASAN_FORK_SKIP
    def test_fork_child_store_has_its_rows(self):
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        p.send("fork")
        child = p.expect("child ", 10).split()
        self.assertEqual(p.expect("forked", 20).split()[2], "0")
        cpid, cstore = int(child[1]), child[3]
        self.assertTrue(os.path.exists(cstore))
        crows = rows(cstore, "WHERE name = 'tick'")
        self.assertGreater(len(crows), 10)
        self.assertTrue(all(r[2] == cpid for r in crows))
        self.assertEqual(p.quit(), 0)

    def test_two_processes_one_store_each(self):
        write_config(self.cfg, self.base_config(enable=1))
        a = self.probe(name="a")
        b = self.probe(name="b")
        a.wait_state(True)
        b.wait_state(True)
        stores = {a.pid: a.session()[1], b.pid: b.session()[1]}
        for store in stores.values():
            wait_ticks_in(self, store)
        self.assertEqual(a.quit(), 0)
        self.assertEqual(b.quit(), 0)
        self.assertEqual(len(sessions(self.prof)), 1)
        for pid, store in stores.items():
            r = rows(store, "WHERE name = 'tick'")
            self.assertGreater(len(r), 10)
            self.assertTrue(all(x[2] == pid for x in r))


if __name__ == "__main__":
    unittest.main()
