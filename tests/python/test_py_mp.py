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
import threading
import time
import unittest

import sp_testlib as T

# Set up at import, so that spawn children (which import this file as
# __mp_main__) find the same config and the package under test.
if "SP_MP_TMP" not in os.environ:
    os.environ["SP_MP_TMP"] = tempfile.mkdtemp(prefix="servprof-py-mp-")
    T.write_config(os.environ["SP_MP_TMP"], enable=1)
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
        finally:
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
            self.assertFalse(p.is_alive(), "%s child did not finish" % method)
            self.assertEqual(p.exitcode, 0)
            rows = worker_rows()
            self.assertIn(p.pid, rows, method)
            self.assertEqual(len([r for r in rows[p.pid] if r["name"] == "task"]), N)

    def test_os_fork_while_recording(self):
        """Fork repeatedly while another thread records without pause."""
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                with servprof.span("spin", domain="Parent"):
                    pass

        t = threading.Thread(target=spin)
        t.start()
        children = []
        try:
            for k in range(6):
                pid = os.fork()
                if pid == 0:  # child: record, flush, leave without atexit
                    code = 1
                    try:
                        work("osfork%d" % k)
                        servprof.shutdown()
                        code = 0
                    finally:
                        os._exit(code)
                children.append(pid)
        finally:
            stop.set()
            t.join()
        deadline = time.time() + 60 * T.SLACK
        for pid in children:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    self.assertEqual(os.waitstatus_to_exitcode(status), 0)
                    break
                if time.time() > deadline:
                    os.kill(pid, 9)
                    self.fail("fork child %d deadlocked" % pid)
                time.sleep(0.01)
        rows = worker_rows()
        for pid in children:
            self.assertIn(pid, rows)
            names = [r["name"] for r in rows[pid]]
            self.assertEqual(names.count("task"), N)
            self.assertNotIn("spin", names, "the child has the parent's spinning records")


if __name__ == "__main__":
    unittest.main()
