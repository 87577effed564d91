# SPDX-License-Identifier: Apache-2.0
"""test_py_mp.py — fork and multiprocessing: one store per worker, no deadlock.

Collection is on from the config file (enable 1), so every process that
records joins the session and writes its own ms_service_<host>-<pid>.db.
Workers must see none of the parent's records, and a fork taken while
another thread of the parent records must not deadlock the child.
"""

import multiprocessing as mp
import os
import sys
import tempfile
import time
import unittest

from support import sp_testlib as T

# Set up at import, so that spawn children (which import this file as
# __mp_main__) find the same config and the package under test.
if "SP_MP_TMP" not in os.environ:
    os.environ["SP_MP_TMP"] = tempfile.mkdtemp(prefix="servprof-py-mp-")
    T.make_config(os.environ["SP_MP_TMP"], enable=1)
TMP = os.environ["SP_MP_TMP"]
os.environ["SERVICE_PROF_CONFIG_PATH"] = os.path.join(TMP, "config.json")

import servprof  # noqa: E402
from servprof import Level, Profiler  # noqa: E402

N = 25  # records per task


def work(tag):
    """A worker's task: N events and a span naming this process."""
    pid = os.getpid()
    for i in range(N):
        Profiler(Level.INFO).domain("Worker").res("%s-%d" % (tag, i)).attr("pid", pid) \
            .event("task")
    with servprof.span("task_span", domain="Worker", pid=pid, tag=tag):
        time.sleep(0.001)
    return pid


def worker_rows():
    """{pid: rows} for every store under TMP, checking each store holds
    only rows of its own process."""
    out = {}
    for st in T.stores(TMP):
        pid = T.store_pid(st)
        rows = T.rows(st)
        for r in rows:
            if r["cat"] == "Worker":
                assert r["a"]["pid"] == pid, "store %s holds a row of pid %s: %s" % (
                    st, r["a"]["pid"], r)
            assert r["pid"] == pid, "store %s: row with pid %s" % (st, r["pid"])
        out.setdefault(pid, []).extend(rows)
    return out


def tearDownModule():
    import shutil
    servprof.shutdown()  # the config watcher stops before its file goes
    if not os.environ.get("KEEP_TMP"):
        shutil.rmtree(TMP, True)


class Workers(unittest.TestCase):

    def setUp(self):
        # The parent records first: children must not inherit these.
        Profiler(Level.INFO).domain("Parent").res("before-fork").event("parent_event")
        self.assertTrue(servprof.is_enabled(Level.INFO), "config enable=1 should collect")

    def pool_run(self, method, tags):
        ctx = mp.get_context(method)
        pool = ctx.Pool(2)
        try:
            pids = pool.map_async(work, tags).get(timeout=60 * T.SLACK)
        except BaseException:
            pool.terminate()  # a stuck worker would make join() wait forever
            raise
        pool.close()
        pool.join()
        return set(pids)

    def check_workers(self, pids, tags):
        rows = worker_rows()
        got = {}
        for pid in pids:
            self.assertIn(pid, rows, "no store for worker %d (stores: %s)" % (pid, T.stores(TMP)))
            names = [r["name"] for r in rows[pid]]
            self.assertNotIn("parent_event", names, "worker %d inherited parent records" % pid)
            for r in rows[pid]:
                if r["name"] == "task":
                    got[r["a"]["rid"]] = pid
        want = {"%s-%d" % (t, i) for t in tags for i in range(N)}
        self.assertEqual(set(got), want, "every task's events are in its worker's store")

    def test_pool_fork(self):
        tags = ["fork%d" % i for i in range(4)]
        pids = self.pool_run("fork", tags)
        self.assertNotIn(os.getpid(), pids)
        self.check_workers(pids, tags)

    def test_pool_spawn(self):
        tags = ["spawn%d" % i for i in range(3)]
        pids = self.pool_run("spawn", tags)
        self.check_workers(pids, tags)

    def test_process_fork_and_spawn(self):
        for method in ("fork", "spawn"):
            ctx = mp.get_context(method)
            p = ctx.Process(target=work, args=("proc-" + method,))
            p.start()
            p.join(60 * T.SLACK)
            if p.is_alive():
                p.kill()
                self.fail("%s child did not finish in time" % method)
            self.assertEqual(p.exitcode, 0)
            rows = worker_rows()
            self.assertIn(p.pid, rows, method)
            self.assertEqual(len([r for r in rows[p.pid] if r["name"] == "task"]), N)

    def fork_stress(self, *flags):
        """fork_stress.py in its own process and prof_dir; checks every
        child's store."""
        d = T.tmpdir(self)
        cfg = T.make_config(d, enable=1)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_stress.py")
        p = T.run([sys.executable, "-B", script, *flags, "10", str(N)],
                  env={"SERVICE_PROF_CONFIG_PATH": cfg}, timeout=120, check=False)
        self.assertEqual(p.returncode, 0, "fork_stress %s failed:\n%s\n%s"
                         % (" ".join(flags), p.stdout, p.stderr[-3000:]))
        children = [int(x) for x in p.stdout.split("children:")[1].split()]
        by_pid = {T.store_pid(s): s for s in T.stores(d)}
        for pid in children:
            self.assertIn(pid, by_pid, "no store for fork child %d" % pid)
            rows = T.rows(by_pid[pid])
            names = [r["name"] for r in rows]
            self.assertEqual(names.count("task"), N)
            self.assertNotIn("spin", names, "the child has the parent's records")
            self.assertNotIn("parent_event", names, "the child has the parent's records")
            self.assertTrue(all(r["pid"] == pid for r in rows))

    def test_os_fork_while_recording(self):
        """Fork while another thread records without pause."""
        self.fork_stress()

    def test_os_fork_while_recording_sqlite_first(self):
        """The same, in a program that imported sqlite3 before servprof.

        Python's sqlite3 module initializes SQLite, so the library can no
        longer turn SQLite's memory statistics (and their global mutex)
        off; a fork while the writer thread is inside SQLite then leaves
        that mutex locked in the child, whose first store open hangs in
        sqlite3Malloc. Only a fork handler that waits for the writer to be
        outside SQLite (pthread_atfork prepare) prevents it."""
        self.fork_stress("--sqlite-first")


if __name__ == "__main__":
    unittest.main()
