# SPDX-License-Identifier: Apache-2.0
"""test_py_wheel.py — a venv user gets recording and the `servprof` command.

scripts/build-wheel.sh builds the wheel (library and C tool inside) from
this build; a venv made with /usr/bin/python3 -m venv (Debian's python3
refuses pip outside one) installs it with pip --no-index. Then, with no
SERVPROF_LIB and no build tree in sight:
  - `servprof --version` and `python -m servprof --version` run the C tool;
  - `import servprof` loads the bundled library and records a span into a
    real store, which the installed `servprof parse` reads and its
    `servprof report` draws (uPlot embedded);
  - py.typed ships, __version__ is the project's version, Level is exported;
  - a library that cannot load is an error at import when the config asks
    for collection ("enable": 1), a warning otherwise.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["SERVPROF_SOURCE"]
BUILD = os.environ["SERVPROF_BUILD"]
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}


def run(cmd, env=None, check=True, cwd=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("SERVPROF_LIB", "SERVPROF_BIN", "PYTHONPATH", "SERVICE_PROF_CONFIG_PATH")}
    e.update(OFFLINE)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300, cwd=cwd)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\n%s\n%s" % (cmd, p.returncode, p.stdout[-3000:],
                                                       p.stderr[-3000:]))
    return p


class Wheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sp_wheel_")
        # PREBUILT: ctest runs after the build; rebuilding here would race other tests.
        p = run([os.path.join(SOURCE, "scripts", "build-wheel.sh"), BUILD,
                 os.path.join(cls.tmp, "dist")], env={"SERVPROF_WHEEL_PREBUILT": "1"})
        cls.wheel = p.stdout.strip().splitlines()[-1]
        cls.venv = os.path.join(cls.tmp, "venv")
        run([PY, "-m", "venv", cls.venv])
        cls.bin = os.path.join(cls.venv, "bin")
        run([os.path.join(cls.bin, "pip"), "install", "--no-index", "--no-cache-dir", cls.wheel])
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            cls.version = re.search(r"project\(servprof VERSION (\S+)", f.read()).group(1)
        cls.cwd = os.path.join(cls.tmp, "elsewhere")  # not the source tree
        os.makedirs(cls.cwd)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def vpy(self, code, env=None, check=True):
        return run([os.path.join(self.bin, "python"), "-B", "-c", code], env=env, check=check,
                   cwd=self.cwd)

    def test_wheel_contents(self):
        self.assertRegex(os.path.basename(self.wheel),
                         r"^servprof-%s-(py3-none|cp\d+-cp\d+)-linux_\w+\.whl$"
                         % re.escape(self.version))
        p = self.vpy("import servprof, os; d = os.path.dirname(servprof.__file__); "
                     "print(servprof.__version__); print(os.path.exists(os.path.join(d, 'py.typed')));"
                     "print(int(servprof.Level.DETAILED)); print(servprof.library_path())")
        version, typed, level, lib = p.stdout.split()
        self.assertEqual((version, typed, level), (self.version, "True", "30"))
        self.assertTrue(lib.startswith(self.venv), lib)
        if glob.glob(os.path.join(BUILD, "lib", "_hookcall.*.so")):  # the hooks' C wrapper
            p = self.vpy("import servprof._hookcall as h; print(h.__file__)")
            self.assertTrue(p.stdout.strip().startswith(self.venv), p.stdout)

    def test_console_command_and_module(self):
        for cmd in ([os.path.join(self.bin, "servprof")],
                    [os.path.join(self.bin, "python"), "-m", "servprof"]):
            with self.subTest(cmd=cmd[-1]):
                p = run(cmd + ["--version"], cwd=self.cwd)
                self.assertEqual(p.stdout, "servprof %s\n" % self.version)
                p = run(cmd + ["no-such-verb"], check=False, cwd=self.cwd)
                self.assertEqual(p.returncode, 2)
                self.assertIn("parse", run(cmd + ["help"], cwd=self.cwd).stdout)

    def test_records_and_parses(self):
        home = os.path.join(self.tmp, "home")
        os.makedirs(home, exist_ok=True)
        cfg = os.path.join(home, "prof.json")
        prof = os.path.join(home, "prof")
        with open(cfg, "w") as f:
            json.dump({"enable": 1, "prof_dir": prof}, f)
        env = {"HOME": home, "SERVICE_PROF_CONFIG_PATH": cfg}
        code = ("import servprof\n"
                "for i in range(3):\n"
                "    with servprof.span('forward', domain='Execute', level=servprof.Level.INFO):\n"
                "        pass\n"
                "servprof.shutdown()\n"
                "print(servprof.stats()['written'])\n")
        p = self.vpy(code, env=env)
        self.assertGreaterEqual(int(p.stdout.split()[-1]), 3, p.stderr)
        out = os.path.join(home, "out")
        p = run([os.path.join(self.bin, "servprof"), "parse", prof, "-o", out, "--span",
                 "forward"], env=env, cwd=self.cwd)
        self.assertIn("forward", p.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "chrome_tracing.json")))
        # The wheel's `servprof report` draws (uPlot is vendored, so no build lacks it).
        page = os.path.join(home, "page", "report.html")
        p = run([os.path.join(self.bin, "servprof"), "report", out, "-o", page, "--quiet"],
                env=env, cwd=self.cwd)
        with open(page) as f:
            self.assertIn("uPlot", f.read())

    def test_missing_library_is_an_error_when_collection_is_asked(self):
        home = os.path.join(self.tmp, "home2")
        os.makedirs(home, exist_ok=True)
        cfg = os.path.join(home, "prof.json")
        for enable in (1, 0):
            with open(cfg, "w") as f:
                json.dump({"enable": enable, "prof_dir": os.path.join(home, "p")}, f)
            env = {"HOME": home, "SERVICE_PROF_CONFIG_PATH": cfg,
                   "SERVPROF_LIB": os.path.join(home, "no-libservprof.so")}
            p = self.vpy("import servprof; print('imported')", env=env, check=False)
            if enable:
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("LibraryNotFoundError", p.stderr)
                self.assertIn('asks for collection ("enable": 1)', p.stderr)
                self.assertIn("no-libservprof.so", p.stderr)
            else:
                self.assertEqual(p.stdout, "imported\n", p.stderr)
                self.assertIn("RuntimeWarning: servprof: recording is off", p.stderr)


if __name__ == "__main__":
    unittest.main()
