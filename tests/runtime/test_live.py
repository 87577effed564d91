# SPDX-License-Identifier: Apache-2.0
"""test_live.py — the runtime with a real process (rt_probe): the config
file created when absent, live start/stop by editing the file, sessions,
limits, two processes, fork, rapid toggling, logs."""
import fcntl
import json
import os
import re
import stat
import time
import unittest

from support.rtlib import ASAN_FORK_SKIP, RuntimeCase, bound, cli, sessions, wait_until, write_config


class Live(RuntimeCase):

    def test_absent_file_is_created_off(self):
        p = self.probe()
        self.assertTrue(wait_until(lambda: os.path.exists(self.cfg), bound(2)))
        mode = stat.S_IMODE(os.stat(self.cfg).st_mode)
        self.assertEqual(mode, 0o640)
        with open(self.cfg) as f:
            c = json.load(f)
        self.assertEqual(c["enable"], 0)
        self.assertEqual(c["prof_dir"], os.path.join(self.tmp, ".ms_server_profiler"))
        for key in ("profiler_level", "acl_task_time", "acl_prof_task_time_level", "timelimit",
                    "domain"):
            self.assertIn(key, c)
        p.wait_ticks(100)  # it ran a while: still off, nothing made
        self.assertEqual(p.state, "OFF")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, ".ms_server_profiler")))
        self.assertIn("created config file", p.log())
        self.assertEqual(p.quit(), 0)

    def test_not_created_when_refused(self):
        bad_name = os.path.join(self.tmp, "servprof.conf")
        p = self.probe(bad_name)
        self.assertTrue(wait_until(lambda: "does not end in .json" in p.log(), bound(5)), p.log())
        self.assertFalse(os.path.exists(bad_name))
        no_dir = os.path.join(self.tmp, "nodir", "c.json")
        q = self.probe(no_dir)
        self.assertTrue(wait_until(lambda: "not writable" in q.log(), bound(5)), q.log())
        self.assertFalse(os.path.exists(no_dir))
        self.assertEqual(p.quit(), 0)
        self.assertEqual(q.quit(), 0)

    def test_enable_disable_reenable(self):
        write_config(self.cfg, self.base_config())
        p = self.probe()
        p.wait_ticks(100)  # the library runs (its watch is set) and has made no session
        self.assertEqual(sessions(self.prof), [])
        write_config(self.cfg, self.base_config(enable=1))  # the edit: temp file + rename
        # The enable is seen: the bound only stops a hung test (the latency
        # is a figure: bench/bench_toggle.c, docs/benchmarks.md).
        first = wait_until(lambda: sessions(self.prof), bound(2), 0.002)
        self.assertTrue(first, "no session folder; log:\n" + p.log())
        p.wait_state(True)
        d, store = p.session()
        self.assertEqual(d, os.path.join(self.prof, first[0]))
        self.assertRegex(first[0], r"^\d{4}-\d{4}$")
        self.assertEqual(store, os.path.join(d, "Trace_Service", "ms_service_%s-%d.db"
                                             % (os.uname().nodename, p.pid)))
        for folder in (self.prof, d, os.path.join(d, "Trace_Service")):
            self.assertEqual(stat.S_IMODE(os.stat(folder).st_mode), 0o750, folder)
        self.assertIn("Profiler Enabled Successfully!", p.log())
        self.assertIn(d, p.log())
        self.assertEqual(cli("disable", self.cfg).returncode, 0)
        p.wait_state(False)
        self.assertIn("Profiler Disabled Successfully!", p.log())
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        p.wait_state(True)
        d2, _ = p.session()
        self.assertNotEqual(d, d2)
        self.assertEqual(len(sessions(self.prof)), 2)
        self.assertEqual(p.quit(), 0)
        self.assertEqual(p.log().count("Profiler Disabled Successfully!"), 2)

    def test_editor_rename_over_and_in_place(self):
        write_config(self.cfg, self.base_config())
        p = self.probe()
        p.wait_ticks(1)  # the first record started the library and its watch
        write_config(self.cfg, self.base_config(enable=1), atomic=True)  # rename over
        p.wait_state(True)
        write_config(self.cfg, self.base_config(enable=0), atomic=False)  # truncate + write
        p.wait_state(False)
        self.assertEqual(p.quit(), 0)

    def test_relative_config_path(self):
        write_config(self.cfg, self.base_config())
        p = self.probe(config_path=os.path.basename(self.cfg))  # the probe runs in self.tmp
        p.wait_ticks(1)  # the first record started the library and its watch
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        p.wait_state(True)
        self.assertEqual(p.quit(), 0)

    def test_stat_poll_without_inotify(self):
        write_config(self.cfg, self.base_config())
        p = self.probe(env={"SERVPROF_WATCH_POLL_ONLY": "1"})
        self.assertTrue(wait_until(lambda: "polling" in p.log(), bound(5)), p.log())
        p.wait_ticks(1)
        # Each change is seen by polling alone (wait_state's bound only stops
        # a hung test; the poll's latency: bench_toggle with
        # SERVPROF_WATCH_POLL_ONLY=1, docs/benchmarks.md).
        write_config(self.cfg, self.base_config(enable=1), atomic=False)
        p.wait_state(True)
        write_config(self.cfg, self.base_config(enable=0), atomic=True)  # new inode
        p.wait_state(False)
        # Same size, same inode, rewritten in place: mtime/ctime in ns tell.
        write_config(self.cfg, self.base_config(enable=1), atomic=False)
        p.wait_state(True)
        write_config(self.cfg, self.base_config(enable=0), atomic=False)
        p.wait_state(False)
        self.assertEqual(p.quit(), 0)

    def test_prof_log_level(self):
        write_config(self.cfg, self.base_config(enable=1, bogus_key=1))
        quiet = self.probe(env={"PROF_LOG_LEVEL": "ERROR"}, name="quiet")
        quiet.wait_state(True)
        self.assertEqual(quiet.quit(), 0)
        self.assertNotIn("[INFO]", quiet.log())
        self.assertNotIn("[WARNING]", quiet.log())
        loud = self.probe(env={"PROF_LOG_LEVEL": "INFO"}, name="loud")
        loud.wait_state(True)
        self.assertEqual(loud.quit(), 0)
        log = loud.log()
        self.assertNotIn("[DEBUG]", log)
        self.assertIn("[msservice_profiler] [PID:%d] [WARNING] config " % loud.pid, log)
        self.assertIn("unknown key 'bogus_key'", log)
        self.assertIn("[msservice_profiler] [PID:%d] [INFO] Profiler Enabled Successfully!"
                      % loud.pid, log)
        for line in log.splitlines():
            self.assertTrue(line.startswith("[msservice_profiler] [PID:") or "Sanitizer" in line
                            or line.startswith("=="), line)

    def test_half_written_file_keeps_state(self):
        # Each rejected file has its own message, so a test waits for the one
        # of the file it wrote (an editor's truncation may show the watcher an
        # empty file first), then asserts that the state did not change.
        empty = "syntax error at line 1, column 0: '[' or '{' expected"
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        with open(self.cfg, "w") as f:
            f.write('{\n    "enable": 0,\n    "prof_dir": "/x')
        self.assertTrue(wait_until(lambda: "syntax error at line 3, column 19" in p.log(), bound(5)),
                        p.log())
        self.assertTrue(p.now().startswith("ON "))
        self.assertIn("previous settings stay in force", p.log())
        seen = p.log().count(empty)
        with open(self.cfg, "w") as f:
            f.write("")  # an editor truncating before it writes
        self.assertTrue(wait_until(lambda: p.log().count(empty) > seen, bound(5)), p.log())
        self.assertTrue(p.now().startswith("ON "))
        write_config(self.cfg, self.base_config(enable=0), atomic=False)
        p.wait_state(False)
        with open(self.cfg, "w") as f:
            f.write('{"enable": 1, ')
        self.assertTrue(wait_until(lambda: "syntax error at line 1, column 14" in p.log(), bound(5)),
                        p.log())
        self.assertEqual(p.now(), "OFF")
        self.assertEqual(p.quit(), 0)

    def test_edit_leaving_enable_is_logged(self):
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        d, _ = p.session()
        write_config(self.cfg, self.base_config(enable=1, profiler_level="VERBOSE", bogus=1))
        self.assertTrue(wait_until(lambda: "stays 1" in p.log(), bound(2)), p.log())
        log = p.log()
        self.assertIn("profiler_level take effect at the next start", log)
        self.assertIn("unknown key 'bogus'", log)
        self.assertEqual(p.session()[0], d)
        self.assertEqual(p.quit(), 0)

    def test_timelimit_writes_enable_0_back(self):
        text = ('{\n  "timelimit": 1,   "prof_dir": "%s",\n\n'
                '  "enable": 1,\n  "extra_note": {"enable": 1}\n}\n' % self.prof)
        write_config(self.cfg, text=text)
        os.chmod(self.cfg, 0o600)
        p = self.probe()
        p.wait_state(True)
        p.wait_state(False, timeout=5)
        # It stopped after the limit, by the process's own clock (the reading
        # it compared with the deadline), not the test's.
        m = re.search(r"timelimit: 1 s reached after (\d+) ms of collection", p.log())
        self.assertTrue(m, p.log())
        self.assertGreaterEqual(int(m.group(1)), 1000)
        self.assertTrue(wait_until(lambda: '"enable": 0' in open(self.cfg).read(), bound(2)))
        with open(self.cfg) as f:
            self.assertEqual(f.read(), text.replace('"enable": 1,', '"enable": 0,', 1))
        self.assertEqual(stat.S_IMODE(os.stat(self.cfg).st_mode), 0o600)
        # The watcher reads the file it wrote itself: that must not start again.
        self.assertTrue(wait_until(lambda: '"enable" stays 0: collection stays off' in p.log(),
                                   bound(2)), p.log())
        self.assertEqual(p.now(), "OFF")
        self.assertEqual(p.quit(), 0)

    def test_profiler_step_num(self):
        write_config(self.cfg, self.base_config(enable=1, profiler_step_num=5))
        p = self.probe()
        p.wait_state(True)
        p.send("step 4")
        p.expect("stepped")
        p.wait_watched()  # its limit check ran after the 4th step
        self.assertTrue(p.now().startswith("ON "))
        p.send("step 1")
        p.wait_state(False)
        with open(self.cfg) as f:
            c = json.load(f)
        self.assertEqual(c["enable"], 0)
        self.assertEqual(c["profiler_step_num"], 5)
        self.assertIn("profiler_step_num: 5 steps reached", p.log())
        self.assertEqual(p.quit(), 0)

    def test_two_processes_share_one_folder(self):
        write_config(self.cfg, self.base_config())
        a = self.probe(name="a")
        b = self.probe(name="b")
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        a.wait_state(True)
        b.wait_state(True)
        self.assertEqual(a.session()[0], b.session()[0])
        self.assertNotEqual(a.session()[1], b.session()[1])
        self.assertEqual(len(sessions(self.prof)), 1)
        self.assertEqual(cli("disable", self.cfg).returncode, 0)
        a.wait_state(False)
        b.wait_state(False)
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        a.wait_state(True)
        b.wait_state(True)
        self.assertEqual(a.session()[0], b.session()[0])
        self.assertEqual(len(sessions(self.prof)), 2)
        # A process started while collection runs joins the same folder.
        c = self.probe(name="c")
        c.wait_state(True)
        self.assertEqual(c.session()[0], a.session()[0])
        for p in (a, b, c):
            self.assertEqual(p.quit(), 0)

    @ASAN_FORK_SKIP
    def test_fork_child_has_its_own_store(self):
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        d, store = p.session()
        p.send("fork")
        child = p.expect("child ", 10).split()
        done = p.expect("forked", 20).split()
        self.assertEqual(done[2], "0")
        cpid = int(child[1])
        self.assertNotEqual(cpid, p.pid)
        self.assertEqual(child[2], d)
        self.assertEqual(child[3], os.path.join(d, "Trace_Service", "ms_service_%s-%d.db"
                                                % (os.uname().nodename, cpid)))
        now = p.now().split(" ")  # the parent collects on, in the same folder
        self.assertEqual(now[0], "ON")
        self.assertEqual(now[1], d)
        self.assertEqual(p.quit(), 0)

    @ASAN_FORK_SKIP
    def test_fork_while_other_threads_start_and_stop(self):
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        p.send("forkstorm 20")
        line = p.expect("storm", 60).split()
        self.assertEqual(line[1], line[2], "children that did not finish cleanly")
        self.assertEqual(p.quit(), 0)

    def test_rapid_toggling(self):
        write_config(self.cfg, self.base_config())
        p = self.probe()
        p.wait_ticks(1)  # the first record started the library and its watch
        for i in range(100):
            write_config(self.cfg, self.base_config(enable=(i + 1) % 2))
            time.sleep(0.02)  # the pace of the edits (50 a second), not a synchronisation
        # The last write says 0: once the watcher has seen it, the process is
        # off and has left every session.
        p.wait_watched()
        self.assertEqual(p.now(), "OFF")
        names = sessions(self.prof)
        self.assertGreaterEqual(len(names), 1)
        for n in names:
            path = os.path.join(self.prof, n, ".servprof-members")
            with open(path, "r+") as f:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
        log = p.log()
        self.assertEqual(log.count("Profiler Enabled Successfully!"),
                         log.count("Profiler Disabled Successfully!"))
        self.assertEqual(p.quit(), 0)  # ASan: leaks fail the exit status

    def test_uncreatable_prof_dir_stays_off(self):
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        write_config(self.cfg, self.base_config(enable=1, prof_dir=blocker + "/prof"))
        p = self.probe()
        self.assertTrue(wait_until(lambda: "cannot create prof_dir" in p.log(), bound(2)), p.log())
        self.assertIn("collection stays off", p.log())
        p.send("step 1")
        p.expect("stepped")
        self.assertEqual(p.state, "OFF")
        # Fixing prof_dir (enable still 1) retries the start.
        write_config(self.cfg, self.base_config(enable=1))
        p.wait_state(True)
        self.assertEqual(p.quit(), 0)

    def test_api_start_stop_without_config(self):
        p = self.probe(config_path=None)
        p.wait_ticks(1)  # the first record started the library: without a config, off
        self.assertEqual(p.now(), "OFF")
        p.send("stop")
        self.assertEqual(p.expect("stop").split()[1], "-4")  # SERVPROF_ESTATE
        p.send("start")
        self.assertEqual(p.expect("start").split()[1], "0")
        p.wait_state(True)
        self.assertTrue(p.session()[0].startswith(os.path.join(self.tmp, ".ms_server_profiler")))
        p.send("start")
        self.assertEqual(p.expect("start").split()[1], "-4")
        p.send("stop")
        self.assertEqual(p.expect("stop").split()[1], "0")
        p.wait_state(False)
        self.assertEqual(p.quit(), 0)

    def test_exit_stops_cleanly(self):
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        d, _ = p.session()
        self.assertEqual(p.quit(), 0)
        self.assertIn("Profiler Disabled Successfully! (shutdown)", p.log())
        with open(os.path.join(d, ".servprof-members"), "r+") as f:
            fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


if __name__ == "__main__":
    unittest.main()
