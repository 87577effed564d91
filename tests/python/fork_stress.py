# SPDX-License-Identifier: Apache-2.0
"""fork_stress.py — fork repeatedly while another thread records.

Run by test_py_mp.py as its own program, so that the order of imports is
the program's: with --sqlite-first, Python's sqlite3 module (which
initializes SQLite) is imported before servprof, as in a server that uses
SQLite itself. Each child records N events, shuts servprof down and leaves
with os._exit (no atexit). Exits 0 when every child finished in time;
otherwise prints the stuck child's native stack (gdb) and exits 1.

Usage: fork_stress.py [--sqlite-first] FORKS N   (config from the environment)
"""

import os
import sys
import threading
import time

if "--sqlite-first" in sys.argv:
    sys.argv.remove("--sqlite-first")
    import sqlite3  # noqa: F401  (initializes SQLite before libservprof does)

sys.path.insert(0, os.path.join(os.environ["SERVPROF_SOURCE"], "python"))
import servprof  # noqa: E402
from servprof import Level, Profiler  # noqa: E402


def main():
    forks, n = int(sys.argv[1]), int(sys.argv[2])
    slack = 10 if os.environ.get("SERVPROF_SANITIZE") else 1
    Profiler(Level.INFO).domain("Parent").event("parent_event")
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            with servprof.span("spin", domain="Parent"):
                pass

    t = threading.Thread(target=spin)
    t.start()
    children = []
    try:
        for k in range(forks):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    me = os.getpid()
                    for i in range(n):
                        Profiler(Level.INFO).domain("Worker").res("osfork%d-%d" % (k, i)) \
                            .attr("pid", me).event("task")
                    servprof.shutdown()
                    code = 0
                finally:
                    os._exit(code)
            children.append(pid)
            time.sleep(0.005)
    finally:
        stop.set()
        t.join()
    deadline = time.time() + 30 * slack
    bad = 0
    for pid in children:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status) != 0:
                    print("child %d exited %d" % (pid, os.waitstatus_to_exitcode(status)))
                    bad += 1
                break
            if time.time() > deadline:
                print("child %d deadlocked; its stack:" % pid)
                sys.stdout.flush()
                os.system("gdb -p %d -batch -ex 'thread apply all bt 25' 2>/dev/null "
                          "| grep -E '^(#|Thread)'" % pid)
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                bad += 1
                break
            time.sleep(0.01)
    print("children: %s" % " ".join(map(str, children)))
    servprof.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
