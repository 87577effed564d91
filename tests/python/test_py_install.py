# SPDX-License-Identifier: Apache-2.0
"""test_py_install.py — `pip install ./python` works with no network.

pip runs with --no-index and with proxies pointing at a closed port, so any
attempt to reach a package index fails the install. The package is then
imported from the install target by a fresh interpreter, with the library
bundled next to it and SERVPROF_LIB unset.
"""

import os
import shutil
import sys
import unittest
import zipfile

from support import sp_testlib as T

OFFLINE = {
    "PIP_NO_INDEX": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
    "PYTHONDONTWRITEBYTECODE": "1",
}


def pip(*args):
    return T.run([sys.executable, "-m", "pip", *args], env=OFFLINE, timeout=180)


class Install(unittest.TestCase):

    def setUp(self):
        try:
            import pip  # noqa: F401
        except ImportError:
            self.skipTest("pip is not installed for %s" % sys.executable)

    def test_pure_install(self):
        target = os.path.join(T.tmpdir(self), "site")
        pip("install", "--no-index", "--no-cache-dir", "--target", target, T.PYDIR)
        self.assertTrue(os.path.exists(os.path.join(target, "servprof", "__init__.py")))
        self.assertTrue(os.path.exists(os.path.join(target, "servprof", "_span.py")))
        env = {"PYTHONPATH": target}
        p = T.run([sys.executable, "-B", "-c",
                   "import servprof, sys; print(servprof.__file__); print(servprof.library_path())"],
                  env=env)
        lines = p.stdout.split("\n")
        self.assertTrue(lines[0].startswith(target), "imported from %s, not the target" % lines[0])
        self.assertEqual(lines[1], os.environ["SERVPROF_LIB"])

    def test_bundled_library(self):
        lib = os.environ["SERVPROF_LIB"]
        d = T.tmpdir(self)
        wheels = os.path.join(d, "wheels")
        pip("wheel", "--no-index", "--no-cache-dir", "--no-deps", "-w", wheels,
            "--config-settings", "servprof-lib=%s" % lib, T.PYDIR)
        whl = [f for f in os.listdir(wheels) if f.endswith(".whl")]
        self.assertEqual(len(whl), 1, whl)
        self.assertNotIn("-any.whl", whl[0], "a wheel with a .so is tagged for the platform")
        with zipfile.ZipFile(os.path.join(wheels, whl[0])) as z:
            names = z.namelist()
        self.assertIn("servprof/libservprof.so.0", names)
        self.assertTrue(any(n.endswith("/RECORD") for n in names))

        target = os.path.join(d, "site")
        pip("install", "--no-index", "--no-cache-dir", "--target", target,
            os.path.join(wheels, whl[0]))
        env = dict(os.environ)
        env.pop("SERVPROF_LIB")
        env.update({"PYTHONPATH": target, "LD_LIBRARY_PATH": ""})
        import subprocess
        p = subprocess.run([sys.executable, "-B", "-c", "import servprof; "
                            "print(servprof.library_path()); print(servprof.is_enabled())"],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split("\n")[0],
                         os.path.join(target, "servprof", "libservprof.so.0"))

    def test_relative_bundle_path_from_where_pip_runs(self):
        # pip runs the backend from python/, so a path relative to the user's
        # folder was looked up there and not found; it is now tried against
        # $PWD (the shell's folder) too, and the error names both.
        d = T.tmpdir(self)
        os.makedirs(os.path.join(d, "lib"))
        rel = os.path.join("lib", "libservprof.so")
        shutil.copy(os.environ["SERVPROF_LIB"], os.path.join(d, rel))
        target = os.path.join(d, "site")
        args = [sys.executable, "-m", "pip", "install", "--no-index", "--no-cache-dir",
                "--target", target, "--config-settings", "servprof-lib=%s" % rel, T.PYDIR]
        T.run(args, env=dict(OFFLINE, PWD=d), timeout=180, cwd=d)
        self.assertTrue(os.path.exists(os.path.join(target, "servprof", "libservprof.so.0")))
        p = T.run(args[:-4] + [os.path.join(d, "site2")] + args[-3:], env=dict(OFFLINE, PWD="/"),
                  timeout=180, cwd=d, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("tried %s, %s" % (os.path.join(T.PYDIR, rel), "/" + rel), p.stdout + p.stderr)

    def test_missing_bundle_is_an_error(self):
        d = T.tmpdir(self)
        p = T.run([sys.executable, "-m", "pip", "wheel", "--no-index", "--no-deps", "-w", d,
                   "--config-settings", "servprof-lib=/no/such/libservprof.so", T.PYDIR], env=OFFLINE,
                  timeout=180, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("/no/such/libservprof.so", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
