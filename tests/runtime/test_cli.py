# SPDX-License-Identifier: Apache-2.0
"""test_cli.py — `servprof config init|check`, `servprof enable|disable`."""
import json
import os
import stat
import unittest

from support.rtlib import RuntimeCase, cli


class Cli(RuntimeCase):

    def test_init_writes_every_key(self):
        r = cli("config", "init", self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(stat.S_IMODE(os.stat(self.cfg).st_mode), 0o640)
        with open(self.cfg) as f:
            c = json.load(f)
        for key in ("enable", "metric_enable", "prof_dir", "profiler_level",
                    "host_system_usage_freq", "npu_memory_usage_freq", "acl_task_time",
                    "acl_prof_task_time_level", "aclDataTypeConfig", "aclprofAicoreMetrics",
                    "api_filter", "kernel_filter", "timelimit", "domain", "torch_prof_stack",
                    "torch_prof_modules", "torch_prof_step_num", "profiler_step_num",
                    "buffer_size_kb"):
            self.assertIn(key, c)
        self.assertEqual(c["enable"], 0)
        r = cli("config", "check", self.cfg)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("OK", r.stdout)
        # No silent overwrite.
        r = cli("config", "init", self.cfg)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--force", r.stderr)
        self.assertEqual(cli("config", "init", "--force", self.cfg).returncode, 0)
        self.assertEqual(cli("config", "init").returncode, 2)

    def test_check_five_mistakes(self):
        with open(self.cfg, "w") as f:
            f.write('{\n  "enable": 2,\n  "timelimit": 9000,\n  "profiler_level": "LOUD",\n'
                    '  "host_system_usage_freq": 100,\n  "domian": "Schedule"\n}\n')
        r = cli("config", "check", self.cfg)
        self.assertEqual(r.returncode, 1)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 5, r.stdout)
        for line in lines:
            self.assertTrue(line.startswith(self.cfg + ": "), line)
        text = r.stdout
        for needle in ("'enable': 2", "'timelimit': 9000", "using 7200", "\"LOUD\"",
                       "'host_system_usage_freq': 100", "did you mean 'domain'?"):
            self.assertIn(needle, text)

    def test_check_syntax_error_and_missing(self):
        with open(self.cfg, "w") as f:
            f.write('{\n  "enable": 1,\n  "prof_dir": \n}\n')
        r = cli("config", "check", self.cfg)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout, r"^%s: error: syntax error at line 4, column \d+" % self.cfg)
        r = cli("config", "check", os.path.join(self.tmp, "nope.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not exist", r.stdout)

    def test_enable_disable_keep_the_rest(self):
        text = ('{\n\t"prof_dir": "/data/p",   // no comments in JSON\n}')
        with open(self.cfg, "w") as f:
            f.write(text)
        r = cli("enable", self.cfg)
        self.assertEqual(r.returncode, 1)
        self.assertIn("syntax error at line", r.stderr)
        self.assertIn("every process would reject this file", r.stderr)
        with open(self.cfg) as f:
            self.assertEqual(f.read(), text)  # untouched
        text = ('{\n\t"prof_dir": "/data/p",\n\t"enable" : 0 ,\n'
                '\t"nested": {"enable": 0}, "list": [1,2,3]\n}\n')
        with open(self.cfg, "w") as f:
            f.write(text)
        os.chmod(self.cfg, 0o644)
        r = cli("enable", self.cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.cfg) as f:
            self.assertEqual(f.read(), text.replace('"enable" : 0', '"enable" : 1'))
        self.assertEqual(stat.S_IMODE(os.stat(self.cfg).st_mode), 0o644)
        r = cli("enable", self.cfg)
        self.assertIn("already", r.stdout)
        self.assertEqual(cli("disable", self.cfg).returncode, 0)
        with open(self.cfg) as f:
            self.assertEqual(f.read(), text)
        # A file without the key gets it, first, with the file's indentation.
        with open(self.cfg, "w") as f:
            f.write('{\n    "timelimit": 5\n}\n')
        self.assertEqual(cli("enable", self.cfg).returncode, 0)
        with open(self.cfg) as f:
            self.assertEqual(f.read(), '{\n    "enable": 1,\n    "timelimit": 5\n}\n')
        r = cli("disable", os.path.join(self.tmp, "missing.json"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(cli("enable").returncode, 2)
        # No temp files left behind.
        self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp." in n], [])


if __name__ == "__main__":
    unittest.main()
