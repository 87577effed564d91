# SPDX-License-Identifier: Apache-2.0
"""test_chlib_ports.py — the ClickHouse test servers get ports of their own.

Under `ctest -j` two tests could be handed the same port between its probe
and the server's bind (clickhouse_export flaked so). Here the race is made
to happen on purpose: a node's chosen port is already held, by a plain
listener and by one with SO_REUSEPORT set (ClickHouse 18.16 fails with
"Address already in use" on both, and the old helper gave up); the node
must come up alone on other ports, in a Cluster too. And the reservations (tests/support/ports.py):
two live ones never share a number, and a number another process holds
is skipped.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

import chlib
from support import ports


def listener(reuseport=False):
    s = socket.socket()
    if reuseport:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


class Reserve(unittest.TestCase):

    def test_live_reservations_differ(self):
        got = [ports.reserve() for _ in range(50)]
        try:
            self.assertEqual(len(set(got)), 50)
        finally:
            for p in got:
                ports.release(p)

    def test_port_held_by_another_process_is_skipped(self):
        # Which port the kernel hands out next is unknowable: a child holds
        # 20 reservations, and none of 50 made here may be one of them.
        code = ("import sys, time; from support import ports\n"
                "got = [ports.reserve() for _ in range(20)]\n"
                "print(' '.join(map(str, got)), flush=True); sys.stdin.read()\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), ".."))
        child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env)
        try:
            held = set(int(x) for x in child.stdout.readline().split())
            self.assertEqual(len(held), 20)
            mine = [ports.reserve() for _ in range(50)]
            self.assertFalse(held & set(mine), held & set(mine))
            for p in mine:
                ports.release(p)
        finally:
            child.stdin.close()
            child.wait(timeout=30)
            child.stdout.close()


class TakenPort(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        chlib.require(cls)
        cls.tmp = tempfile.mkdtemp(prefix="sp-ch-ports-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_moves(self, reuseport):
        taken = listener(reuseport)
        port = taken.getsockname()[1]
        name = "reuse" if reuseport else "plain"
        node = chlib.Node(self.tmp, name)
        node.http_port = port  # as if another test's probe had been handed it too
        node.write_config()
        try:
            with node.start():
                self.assertNotEqual(node.http_port, port)
                self.assertIs(ports.owns_listeners(node.proc.pid, (node.http_port, node.tcp_port)), True)
                self.assertEqual(node.scalar("SELECT 40 + 2"), "42")
                # the taken port is still only the test's listener
                self.assertEqual(len(ports.listeners(port)), 1)
                # a restart keeps the ports it came up on (its URL is out)
                got = (node.http_port, node.tcp_port)
                node.stop()
                node.start()
                self.assertEqual((node.http_port, node.tcp_port), got)
        finally:
            taken.close()

    def test_plain_listener(self):
        self.check_moves(False)

    def test_reuseport_listener(self):
        self.check_moves(True)

    def test_cluster_member(self):
        taken = listener(True)
        port = taken.getsockname()[1]
        c = chlib.Cluster(2, "two", os.path.join(self.tmp, "cl"))
        c.nodes[1].tcp_port = port  # the one the other node's config names
        c.write_configs()
        try:
            with c:
                self.assertNotEqual(c.nodes[1].tcp_port, port)
                # node 0's config names node 1's new port: the cluster reads both
                self.assertEqual(c.nodes[0].scalar("SELECT count() FROM cluster('two', system.one)"), "2")
        finally:
            taken.close()


if __name__ == "__main__":
    chlib.main()
