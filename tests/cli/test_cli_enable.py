# SPDX-License-Identifier: Apache-2.0
"""test_cli_enable.py — `servprof enable|disable` confirm what the processes did.

Real processes (tests/runtime's rt_probe, which runs the library and prints
ON/OFF as its collection changes) watch a real config file; the CLI edits
the file and reports the session folder and the pids that started or
stopped, read from the acknowledgements each process appends to its
session folder (.servprof-acks). And the editor refuses, with the library's
own parser, files every process would reject (a duplicate "enable" key:
`disable` used to report success on it).
"""

import re
import unittest

from support.rtlib import RuntimeCase, bound, cli, wait_until, write_config  # noqa: E402

WAIT = "--wait=%g" % bound(5)


class Enable(RuntimeCase):
    def acks(self, out, verb):
        m = re.search(r"^session (\S+): %s in pid ([\d ]+)$" % verb, out, re.M)
        self.assertTrue(m, out)
        return m.group(1), sorted(int(x) for x in m.group(2).split())

    def test_enable_and_disable_report_the_processes(self):
        write_config(self.cfg, self.base_config(enable=0))
        a = self.probe(name="a")
        b = self.probe(name="b")
        r = cli("enable", WAIT, self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"enable": 1', r.stdout)
        folder, pids = self.acks(r.stdout, "started")
        self.assertEqual(pids, sorted([a.pid, b.pid]))
        self.assertTrue(folder.startswith(self.prof + "/"), folder)
        a.wait_state(True)
        b.wait_state(True)
        self.assertEqual(a.session()[0], folder)
        r = cli("disable", WAIT, self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        folder2, pids = self.acks(r.stdout, "stopped")
        self.assertEqual((folder2, pids), (folder, sorted([a.pid, b.pid])))
        a.wait_state(False)
        self.assertEqual(a.quit(), 0)
        self.assertEqual(b.quit(), 0)

    def test_nobody_watching_is_said_plainly(self):
        write_config(self.cfg, self.base_config(enable=0))
        r = cli("enable", "--wait=0.3", self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no process picked the change up within 0.3 s", r.stdout)
        self.assertNotIn("session", r.stdout)
        r = cli("disable", "--no-wait", self.cfg)
        self.assertEqual((r.returncode, r.stdout), (0, '%s: "enable": 0\n' % self.cfg))
        # Unchanged: nothing to wait for.
        r = cli("disable", self.cfg)
        self.assertEqual(r.stdout, '%s: "enable": 0 (already)\n' % self.cfg)

    def test_a_file_the_library_rejects_is_left_alone(self):
        # A duplicate "enable" key. Every process rejects the
        # file (and keeps collecting); disable used to say it had succeeded.
        write_config(self.cfg, self.base_config(enable=1))
        p = self.probe()
        p.wait_state(True)
        text = '{"enable": 1, "prof_dir": "%s", "enable": 1}\n' % self.prof
        write_config(self.cfg, text=text)
        r = cli("disable", self.cfg)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("duplicate object key", r.stderr)
        self.assertIn("every process would reject this file, so it was left unchanged", r.stderr)
        with open(self.cfg) as f:
            self.assertEqual(f.read(), text)
        # The process saw the same file and refused it the same way.
        self.assertTrue(wait_until(lambda: "duplicate object key" in p.log(), bound(5)),
                        p.log())
        self.assertTrue(p.state.startswith("ON "))
        self.assertEqual(p.quit(), 0)

    def test_warnings_are_shown_and_the_edit_goes_on(self):
        write_config(self.cfg, self.base_config(enable=0, profiler_level="LOUD", bogus=1))
        r = cli("enable", "--no-wait", self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("servprof enable: %s: warning: unknown key 'bogus'" % self.cfg, r.stderr)
        self.assertIn('"LOUD"', r.stderr)
        self.assertEqual(r.stdout, '%s: "enable": 1\n' % self.cfg)


if __name__ == "__main__":
    unittest.main()
