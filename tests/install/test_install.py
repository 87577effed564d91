# SPDX-License-Identifier: Apache-2.0
"""test_install.py — servprof installs like a library and others build against it.

`cmake --install` puts the build into a temporary prefix; then, out of tree:
  - a C program compiled with `pkg-config --cflags --libs servprof` (shared)
    and with docs/api.md's static recipe (servprof-static.pc, run through a
    shell as written) runs and records a row, the static one needing no .so;
  - a CMake project with find_package(servprof) links servprof::servprof and
    servprof::servprof_static (and, from C++, servprof::servprof), and each runs;
  - the same program with -DSERVPROF_DISABLE compiles and links with no
    library and references no servprof symbol; every function of servprof.h
    has its no-op twin (all_calls_off.c calls each, -Werror);
  - the installed headers do not need lib/ or common/ and the exported targets do not
    name the source tree.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["SERVPROF_SOURCE"]
BUILD = os.environ["SERVPROF_BUILD"]
CMAKE = os.environ.get("SERVPROF_CMAKE", "cmake")
CC = os.environ.get("SERVPROF_CC", "cc")
SANITIZE = os.environ.get("SERVPROF_SANITIZE", "")
HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer")
SAN_FLAGS = {"address": ["-fsanitize=address,undefined"],
             "thread": ["-fsanitize=thread"]}.get(SANITIZE, [])


def build_uses_coverage():
    """The build under test was made with --coverage (scripts/test.sh's
    coverage build): its static library then needs gcov's runtime."""
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            return any(l.startswith("CMAKE_C_FLAGS:") and "--coverage" in l for l in f)
    except OSError:
        return False


if build_uses_coverage():
    SAN_FLAGS = SAN_FLAGS + ["--coverage"]


def run(cmd, env=None, cwd=None, check=True):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, cwd=cwd, capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(cmd), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sp_install_")
        cls.prefix = os.path.join(cls.tmp, "prefix with space")
        run([CMAKE, "--install", BUILD, "--prefix", cls.prefix])
        libdirs = [d for d in ("lib", "lib64") if os.path.isdir(os.path.join(cls.prefix, d))]
        libdirs += [os.path.join("lib", d) for d in os.listdir(os.path.join(cls.prefix, "lib"))
                    if d.endswith("-linux-gnu")] if "lib" in libdirs else []
        cls.libdir = next(os.path.join(cls.prefix, d) for d in libdirs
                          if os.path.exists(os.path.join(cls.prefix, d, "libservprof.so")))
        cls.pc_env = {"PKG_CONFIG_PATH": os.path.join(cls.libdir, "pkgconfig")}
        # Runs get a config file of their own: collection into the temp dir.
        cls.prof = os.path.join(cls.tmp, "prof")
        cls.run_env = {"HOME": cls.tmp, "SERVICE_PROF_CONFIG_PATH": "",
                       "LD_LIBRARY_PATH": ""}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pkg_config(self, *args):
        out = run(["pkg-config", *args, "servprof"], env=self.pc_env).stdout
        return shlex.split(out)

    def pkg_config_static(self):
        out = run(["pkg-config", "--cflags", "--libs", "servprof-static"], env=self.pc_env).stdout
        return shlex.split(out)

    def compile(self, out, *flags, src="consumer.c"):
        exe = os.path.join(self.tmp, out)
        run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", *SAN_FLAGS,
             os.path.join(CONSUMER, src), "-o", exe, *flags])
        return exe

    def run_consumer(self, exe):
        p = run([exe], env=self.run_env)
        m = re.match(r"consumer ok (\S+) (\d+)", p.stdout)
        self.assertTrue(m, p.stdout + p.stderr)
        return m.group(1), int(m.group(2))

    def project_version(self):
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            return re.search(r"project\(servprof VERSION (\S+)", f.read()).group(1)

    def test_layout(self):
        for rel in ("include/servprof.h", "include/servprof_version.h", "bin/servprof"):
            self.assertTrue(os.path.exists(os.path.join(self.prefix, rel)), rel)
        for name in ("libservprof.so", "libservprof.so.0", "libservprof.a",
                     "pkgconfig/servprof.pc", "pkgconfig/servprof-static.pc", "cmake/servprof/servprofConfig.cmake",
                     "cmake/servprof/servprofConfigVersion.cmake"):
            self.assertTrue(os.path.exists(os.path.join(self.libdir, name)), name)
        self.assertTrue(os.path.exists(os.path.join(self.prefix, "share/doc/servprof/LICENSE")))
        # Consumers see include/ only: no source-tree path in the exports.
        cmake_dir = os.path.join(self.libdir, "cmake", "servprof")
        for fn in os.listdir(cmake_dir):
            with open(os.path.join(cmake_dir, fn)) as f:
                text = f.read()
            self.assertNotIn(SOURCE, text, fn)
        p = run([os.path.join(self.prefix, "bin", "servprof"), "--version"])
        self.assertEqual(p.stdout.strip(), "servprof " + self.project_version())

    def test_exports(self):
        # The installed library exports the public API (servprof_) and the drop-in's
        # few entry points (servprof__, lib/core/ext.h), nothing else: no
        # internal sp_ symbol, no test or fuzz hook.
        lib = os.path.join(self.libdir, "libservprof.so")
        out = run(["nm", "-D", "--defined-only", lib]).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
        self.assertIn("servprof_event", names)
        self.assertNotIn("servprof__msg_fuzz", names)
        # a sanitizer build adds its own (__odr_asan.NAME, __tsan_...): not ours
        sanitizer = ("__odr_asan", "__asan", "__tsan", "__ubsan", "__sanitizer")
        stray = [n for n in names if not n.startswith("servprof_") and not n.startswith(sanitizer)]
        self.assertEqual(stray, [], "exported beyond the API")

    def test_pkg_config_shared(self):
        self.assertEqual(self.pkg_config("--modversion"), [self.project_version()])
        libdir = self.pkg_config("--variable=libdir")[0]
        self.assertEqual(os.path.realpath(libdir), os.path.realpath(self.libdir))
        cflags = self.pkg_config("--cflags")
        self.assertFalse(any(f.endswith("/src") for f in cflags), cflags)
        libs = self.pkg_config("--libs")
        self.assertNotIn("-lsqlite3", libs, "SQLite is private to the shared library")
        self.assertNotIn("-ljansson", libs)
        exe = self.compile("pc_shared", *cflags, *libs, "-Wl,-rpath," + libdir)
        needed = run(["readelf", "-d", exe]).stdout
        self.assertIn("libservprof.so.0", needed)
        version, written = self.run_consumer(exe)
        self.assertEqual(version, self.project_version())
        self.assertGreaterEqual(written, 1)

    def test_pkg_config_static(self):
        """The static recipe exactly as docs/api.md writes it:
        cc app.c $(pkg-config --cflags --libs servprof-static) -o app
        gives a program that needs no libservprof.so (and runs with no
        LD_LIBRARY_PATH). `--static` on servprof.pc cannot do it: -lservprof
        picks the .so whenever it is installed."""
        with open(os.path.join(SOURCE, "docs", "api.md")) as f:
            doc = f.read()
        recipe = "cc app.c $(pkg-config --cflags --libs servprof-static) -o app"
        self.assertIn(recipe, doc)
        # Through a shell, as a user types it; the prefix is reached through a link
        # without the space (unquoted $(...) splits words on it, like any flag).
        link = os.path.join(self.tmp, "prefix_link")
        if not os.path.exists(link):
            os.symlink(self.prefix, link)
        pc_dir = os.path.join(link, os.path.relpath(self.libdir, self.prefix), "pkgconfig")
        exe = os.path.join(self.tmp, "pc_static")
        cmd = recipe.replace("app.c", shlex.quote(os.path.join(CONSUMER, "consumer.c")))
        cmd = cmd.replace("-o app", "-o " + shlex.quote(exe)).replace("cc ", CC + " -std=c11 ", 1)
        run(["bash", "-c", cmd + " " + " ".join(SAN_FLAGS)], env={"PKG_CONFIG_PATH": pc_dir})
        self.assertIn("-ljansson", self.pkg_config_static())
        self.assertNotIn("libservprof.so", run(["readelf", "-d", exe]).stdout)
        self.assertGreaterEqual(self.run_consumer(exe)[1], 1)

    def test_readme_install_lines(self):
        """README.md's install block, as written: every -D option it names is an
        option() of the build, and its two `cc app.c` lines, run through a shell
        against the installed prefix (its /opt/servprof standing for ours), give
        programs that run with no LD_LIBRARY_PATH."""
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        block = readme[readme.index("    cmake -S . -B build -DCMAKE_BUILD_TYPE"):]
        block = block[:block.index("scripts/build-wheel.sh")]
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            options = set(re.findall(r"option\((SERVPROF_\w+)", f.read()))
        named = set(re.findall(r"-D(SERVPROF_\w+)=", block))
        self.assertTrue({"SERVPROF_BUILD_TESTS", "SERVPROF_BUILD_BENCH",
                         "SERVPROF_BUILD_EXAMPLES"} <= named, named)
        self.assertTrue(named <= options, named - options)
        lines = [l.strip() for l in block.splitlines()
                 if l.strip().startswith(("export PKG_CONFIG_PATH", "cc app.c"))]
        self.assertEqual(len(lines), 3, lines)
        link = os.path.join(self.tmp, "opt_servprof")
        if not os.path.exists(link):
            os.symlink(self.prefix, link)
        libdir = os.path.relpath(self.libdir, self.prefix)
        for i, cc_line in enumerate(lines[1:]):
            exe = os.path.join(self.tmp, "readme_%d" % i)
            script = "\n".join(lines[:1] + [cc_line]).split("#")[0]
            script = script.replace("/opt/servprof/lib", os.path.join(link, libdir))
            script = script.replace("/opt/servprof", link)
            script = script.replace("app.c", shlex.quote(os.path.join(CONSUMER, "consumer.c")))
            script = script.replace("-o app", "-o " + shlex.quote(exe))
            script = script.replace("cc ", CC + " -std=c11 ", 1) + " " + " ".join(SAN_FLAGS)
            run(["bash", "-c", script])
            self.assertGreaterEqual(self.run_consumer(exe)[1], 1, cc_line)

    def test_find_package(self):
        build = os.path.join(self.tmp, "cmake-consumer")
        cflags = " ".join(SAN_FLAGS)
        run([CMAKE, "-S", CONSUMER, "-B", build, "-DCMAKE_PREFIX_PATH=" + self.prefix,
             "-DCMAKE_C_COMPILER=" + CC, "-DCMAKE_C_FLAGS=" + cflags,
             "-DCMAKE_CXX_FLAGS=" + cflags, "-DCMAKE_EXE_LINKER_FLAGS=" + cflags])
        run([CMAKE, "--build", build, "-j2"])
        shared = os.path.join(build, "consumer_shared")
        static = os.path.join(build, "consumer_static")
        self.assertIn("libservprof.so.0", run(["readelf", "-d", shared]).stdout)
        self.assertNotIn("libservprof.so", run(["readelf", "-d", static]).stdout)
        exes = [shared, static]
        cxx = os.path.join(build, "consumer_cxx")
        if shutil.which("c++") or shutil.which("g++"):
            self.assertTrue(os.path.exists(cxx), "a C++ compiler is here: consumer_cxx is built")
            exes.append(cxx)
        for exe in exes:
            version, written = self.run_consumer(exe)
            self.assertEqual(version, self.project_version())
            self.assertGreaterEqual(written, 1)

    def test_find_package_rejects_other_major(self):
        build = os.path.join(self.tmp, "cmake-too-new")
        src = os.path.join(self.tmp, "too-new")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.16)\nproject(x LANGUAGES C)\n"
                    "find_package(servprof 99 REQUIRED)\n")
        p = run([CMAKE, "-S", src, "-B", build, "-DCMAKE_PREFIX_PATH=" + self.prefix],
                check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('compatible with requested version "99"', p.stderr + p.stdout)

    def test_compiled_out(self):
        cflags = self.pkg_config("--cflags")
        # Optimized, the call sites are gone entirely: not a symbol left.
        exe = self.compile("off", "-O2", "-DSERVPROF_DISABLE", *cflags)
        syms = run(["nm", exe]).stdout
        self.assertNotIn("servprof_", syms, "a compiled-out program keeps servprof code")
        p = run([exe], env=self.run_env)
        self.assertEqual(p.stdout.strip(), "consumer off %s 0" % self.project_version())
        # Every function of the header has a no-op twin.
        # Unoptimized, the no-ops stay as local functions, never as imports.
        exe = self.compile("all_off", "-DSERVPROF_DISABLE", *cflags, src="all_calls_off.c")
        self.assertNotIn("servprof", run(["nm", "-u", exe]).stdout)
        self.assertNotIn("libservprof", run(["readelf", "-d", exe]).stdout)
        self.assertTrue(run([exe]).stdout.startswith("off "))
        with open(os.path.join(self.prefix, "include", "servprof.h")) as f:
            header = f.read()
        declared = set(re.findall(r"SERVPROF_API\s[^;(]*?\(?\b(servprof_\w+)\)?\s*\(", header))
        self.assertGreater(len(declared), 40)
        with open(os.path.join(CONSUMER, "all_calls_off.c")) as f:
            calls = f.read()
        missing = sorted(n for n in declared if n + "(" not in calls and n + ")(" not in calls)
        self.assertEqual(missing, [], "functions of servprof.h that all_calls_off.c does not call")


if __name__ == "__main__":
    unittest.main()
