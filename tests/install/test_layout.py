# SPDX-License-Identifier: Apache-2.0
"""test_layout.py — scripts/check-layout.py passes on the tree, and fails on
a copy of it with each kind of violation planted (so the rule can fail)."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("SERVPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(SOURCE, "scripts", "check-layout.py")
PARTS = ["include", "common", "lib", "dropin", "tool"]


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


class LayoutRules(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sp-layout-")
        for p in PARTS:
            shutil.copytree(os.path.join(SOURCE, p), os.path.join(self.tmp, p),
                            ignore=shutil.ignore_patterns("node_modules", "*.js", "*.json"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def plant(self, rel, text):
        path = os.path.join(self.tmp, rel)
        with open(path, "a") as f:
            f.write(text)

    def test_tree_keeps_the_rules(self):
        p = run(SOURCE)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("follow the rules", p.stdout)

    def test_tool_including_a_lib_internal_header_fails(self):
        self.plant("tool/parse/model/model.c", '\n#include "internal.h"\n')
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn('tool/parse/model/model.c: includes "internal.h"', p.stdout)

    def test_common_including_lib_fails(self):
        self.plant("common/log.c", '\n#include "tbuf.h"\n')
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("common/log.c", p.stdout)

    def test_parser_including_analyze_fails(self):
        self.plant("tool/parse/parse.c", '\n#include "analyze.h"\n')
        self.assertEqual(run(self.tmp).returncode, 1)

    def test_runtime_verb_may_include_lib(self):
        self.plant("tool/cli/cmd_stress.c", '\n#include "runtime.h"\n')
        self.assertEqual(run(self.tmp).returncode, 0)
        self.plant("tool/cli/cmd_parse.c", '\n#include "runtime.h"\n')
        self.assertEqual(run(self.tmp).returncode, 1)

    def test_cmake_naming_another_parts_folder_fails(self):
        self.plant("tool/parse/CMakeLists.txt",
                   "\ntarget_include_directories(servprof_parse PRIVATE ${CMAKE_SOURCE_DIR}/lib/core)\n")
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("link that part's target instead", p.stdout)

    def test_missing_part_is_an_error(self):
        shutil.rmtree(os.path.join(self.tmp, "dropin"))
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing part folder(s): dropin", p.stdout)


if __name__ == "__main__":
    unittest.main()
