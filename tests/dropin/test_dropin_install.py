# SPDX-License-Identifier: Apache-2.0
"""test_dropin_install.py — `cmake --install` puts libms_service_profiler.so
in the library folder under its exact name, with RUNPATH $ORIGIN (it finds
the libservprof installed beside it), and a program of the reference's ABI
loads it by name from there, without the build tree.
"""

import glob
import os
import subprocess
import unittest

import dropin_lib as D


class Install(unittest.TestCase):

    def test_install_rule(self):
        prefix = D.T.tmpdir(self, prefix="servprof-dropin-install-")
        p = subprocess.run(["cmake", "--install", D.T.BUILD, "--prefix", prefix],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        found = glob.glob(os.path.join(prefix, "lib*", "**", "libms_service_profiler.so"),
                          recursive=True)
        self.assertEqual(len(found), 1, "installed: %s" % found)
        lib = found[0]
        self.assertFalse(os.path.islink(lib), "the exact name is the file, not a link")
        dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
        runpath = [l for l in dyn.splitlines() if "RUNPATH" in l or "RPATH" in l]
        self.assertEqual(len(runpath), 1, dyn)
        self.assertIn("[$ORIGIN]", runpath[0])
        self.assertIn("libservprof.so.0", dyn)
        libdir = os.path.dirname(lib)
        if not os.path.exists(os.path.join(libdir, "libservprof.so.0")):
            self.skipTest("libservprof is not installed by this build's rules yet")
        if not (D.CLIENT and os.path.exists(D.CLIENT)):
            self.skipTest("no C++ compiler: dropin_client not built")
        env = {"LD_LIBRARY_PATH": libdir}
        out = D.T.run(["ldd", lib], env=env).stdout
        self.assertIn(os.path.join(libdir, "libservprof.so.0"), out)
        D.T.run([D.CLIENT, "symbols"], env=env)


if __name__ == "__main__":
    unittest.main()
