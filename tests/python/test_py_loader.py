# SPDX-License-Identifier: Apache-2.0
"""test_py_loader.py — finding libservprof, and what happens when it is missing.

Each case runs a fresh interpreter, since the library is found once per
process. These cases never load the built library, so they run in the
sanitizer builds too (test_py_install.py covers loading a bundled copy).
"""

import os
import sys
import unittest

from support import sp_testlib as T

PROBE = r"""
import warnings, servprof
warnings.simplefilter("ignore")
# recording is a no-op without the library; nothing raises
with servprof.span("x", domain="d"):
    pass
servprof.Profiler(servprof.Level.ERROR).domain("d").res("r").event("e")
servprof.event("e")
servprof.link("a", "b")
servprof.step()
@servprof.traced
def f():
    return 5
assert f() == 5
assert servprof.is_enabled(servprof.Level.ERROR) is False
try:
    servprof.start()
except servprof.LibraryNotFoundError as e:
    print(e)
else:
    raise SystemExit("start() should raise LibraryNotFoundError")
"""


def probe(env):
    e = {"PYTHONPATH": T.PYDIR, "LD_LIBRARY_PATH": "", "SERVICE_PROF_CONFIG_PATH": ""}
    e.update(env)
    return T.run([sys.executable, "-B", "-c", PROBE], env=e)


class Loader(unittest.TestCase):

    def test_bad_env_names_the_path(self):
        p = probe({"SERVPROF_LIB": "/no/such/dir/libservprof.so"})
        self.assertIn("$SERVPROF_LIB=/no/such/dir/libservprof.so: no such file", p.stdout)
        self.assertIn("not tried, because SERVPROF_LIB is set", p.stdout)
        # and one warning on import
        self.assertIn("RuntimeWarning: servprof: recording is off", p.stderr)

    def test_not_a_library(self):
        d = T.tmpdir(self)
        bogus = os.path.join(d, "libservprof.so")
        with open(bogus, "w") as f:
            f.write("not an ELF file\n")
        p = probe({"SERVPROF_LIB": bogus})
        self.assertIn("$SERVPROF_LIB=%s:" % bogus, p.stdout)
        self.assertNotIn("no such file", p.stdout.split("$SERVPROF_LIB")[1].split("\n")[0])

    def test_every_place_named_when_unset(self):
        env = dict(os.environ)
        env.pop("SERVPROF_LIB", None)
        e = {"PYTHONPATH": T.PYDIR, "LD_LIBRARY_PATH": "", "SERVICE_PROF_CONFIG_PATH": ""}
        env.update(e)
        import subprocess
        p = subprocess.run([sys.executable, "-B", "-c", PROBE], env=env, capture_output=True,
                           text=True, timeout=60 * T.SLACK)
        if p.returncode != 0 and "should raise" in (p.stdout + p.stderr):
            self.skipTest("libservprof is installed on this system's loader path")
        self.assertEqual(p.returncode, 0, p.stderr)
        pkg = os.path.join(T.PYDIR, "servprof")
        self.assertIn("next to the package: %s" % os.path.join(pkg, "libservprof.so.0"), p.stdout)
        self.assertIn("next to the package: %s" % os.path.join(pkg, "libservprof.so"), p.stdout)
        self.assertIn("system loader path: libservprof.so.0", p.stdout)
        self.assertIn("ctypes.util.find_library('servprof')", p.stdout)
        self.assertIn("SERVPROF_LIB=/path/to/libservprof.so", p.stdout)

    def test_cli_verb_loads_no_library(self):
        """`python -m servprof parse ...` only runs the C tool: with SERVPROF_LIB
        naming no file, and a config that asks for collection (which makes an
        import that loads the library raise), the verb still runs, silently."""
        tool = os.environ.get("SERVPROF_BIN")
        if not tool or not os.access(tool, os.X_OK):
            self.skipTest("SERVPROF_BIN (the built C tool) is not set")
        d = T.tmpdir(self)
        cfg = os.path.join(d, "prof.json")
        with open(cfg, "w") as f:
            f.write('{"enable": 1, "prof_dir": "%s"}\n' % d)
        e = {"PYTHONPATH": T.PYDIR, "LD_LIBRARY_PATH": "", "SERVICE_PROF_CONFIG_PATH": cfg,
             "SERVPROF_LIB": "/no/such/dir/libservprof.so", "SERVPROF_BIN": tool}
        for verb in (["parse", "--help"], ["--version"]):
            p = T.run([sys.executable, "-B", "-m", "servprof"] + verb, env=e)
            self.assertNotIn("libservprof", p.stderr, verb)
            self.assertNotIn("RuntimeWarning", p.stderr, verb)
            self.assertTrue(p.stdout.strip(), verb)
        # the same import as a library still looks for it (and raises: enable 1)
        p = T.run([sys.executable, "-B", "-c", "import servprof"], env=e, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("/no/such/dir/libservprof.so", p.stderr)


if __name__ == "__main__":
    unittest.main()
