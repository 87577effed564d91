# SPDX-License-Identifier: Apache-2.0
"""test_config_messages.py — the config-file messages say what is wrong, the
same way in `config check`, `enable` and a running process:

  - a FIFO or /dev/zero: "not a regular file", never "Invalid argument";
  - a file over the limit: names the 1 MiB limit, never "File too large";
  - a \\u0000 escape: no jansson flag name (JSON_ALLOW_NUL) shown;
  - a byte-order mark: "byte-order mark ... save it without BOM";
  - `config check` never says "the previous settings stay in force" (it has
    none); a running process does;
  - a process logs each new reason a read fails, not only the first, and
    says when the file is readable again with the count of failed reads.
"""

import os
import unittest

from support.rtlib import RuntimeCase, bound, cli, wait_until, write_config  # noqa: E402

NOT_REGULAR = "not a regular file (a FIFO, device or socket); a config must be a regular file"
TOO_BIG = "larger than the 1 MiB limit for a config file"
BOM = "byte-order mark (bytes EF BB BF) at the start of the file; save it without BOM"


class Messages(RuntimeCase):
    def check(self, path):
        r = cli("config", "check", path)
        self.assertEqual(r.returncode, 1)
        self.assertNotIn("previous settings", r.stdout + r.stderr)
        self.assertNotIn("Invalid argument", r.stdout + r.stderr)
        return r.stdout

    def enable_err(self, path):
        r = cli("enable", "--no-wait", path)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        return r.stderr

    def test_fifo_and_device(self):
        fifo = os.path.join(self.tmp, "fifo.json")
        os.mkfifo(fifo)
        for path in (fifo, "/dev/zero"):
            self.assertEqual(self.check(path), "%s: error: cannot read the file: %s\n"
                             % (path, NOT_REGULAR))
            self.assertIn("cannot read it: " + NOT_REGULAR, self.enable_err(path))

    def test_too_large(self):
        with open(self.cfg, "w") as f:
            f.write('{"enable": 0, "pad": "%s"}' % ("x" * (1 << 20)))
        self.assertIn(TOO_BIG, self.check(self.cfg))
        err = self.enable_err(self.cfg)
        self.assertIn(TOO_BIG, err)
        self.assertNotIn("File too large", err)

    def test_nul_escape(self):
        with open(self.cfg, "w") as f:
            f.write('{"enable": 0, "domain": "a\\u0000b"}')
        out = self.check(self.cfg)
        self.assertIn("a \\u0000 (NUL) escape in a string is not allowed", out)
        self.assertNotIn("JSON_ALLOW_NUL", out)
        self.assertNotIn("JSON_ALLOW_NUL", self.enable_err(self.cfg))

    def test_byte_order_mark(self):
        with open(self.cfg, "wb") as f:
            f.write(b'\xef\xbb\xbf{"enable": 0}\n')
        self.assertEqual(self.check(self.cfg), "%s: error: %s\n" % (self.cfg, BOM))
        err = self.enable_err(self.cfg)
        self.assertIn(BOM, err)
        with open(self.cfg, "rb") as f:
            self.assertEqual(f.read(), b'\xef\xbb\xbf{"enable": 0}\n')  # untouched

    def test_syntax_error_wording(self):
        with open(self.cfg, "w") as f:
            f.write('{"enable": 0,}')
        out = self.check(self.cfg)
        self.assertRegex(out, r"error: syntax error at line 1, column \d+: ")

    def test_process_logs_each_new_read_failure(self):
        write_config(self.cfg, self.base_config(enable=0))
        p = self.probe()
        # 1: the file becomes a FIFO.
        tmp = self.cfg + ".fifo"
        os.mkfifo(tmp)
        os.rename(tmp, self.cfg)
        self.assertTrue(wait_until(lambda: NOT_REGULAR in p.log(), bound(5)), p.log())
        # 2: then too large: a new reason, logged too.
        with open(self.cfg + ".big", "w") as f:
            f.write('{"enable": 0, "pad": "%s"}' % ("x" * (1 << 20)))
        os.rename(self.cfg + ".big", self.cfg)
        self.assertTrue(wait_until(lambda: TOO_BIG in p.log(), bound(5)), p.log())
        # 3: fixed: said, and collection follows the file again.
        write_config(self.cfg, self.base_config(enable=1))
        p.wait_state(True, timeout=5)
        self.assertIn("is readable again", p.log())
        log = p.log()
        self.assertNotIn("Invalid argument", log)
        self.assertNotIn("File too large", log)
        self.assertEqual(log.count(NOT_REGULAR), 1, log)
        # A process (unlike config check) says what it does instead.
        write_config(self.cfg, text='{"enable": 0,')
        self.assertTrue(wait_until(lambda: "previous settings stay in force" in p.log(),
                                   bound(5)), p.log())
        self.assertTrue(p.state.startswith("ON "))
        self.assertEqual(p.quit(), 0)


if __name__ == "__main__":
    unittest.main()
