#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-layout.py — keeps docs/architecture.md's "who may call whom" true.

The parts are folders: include/ (public header), common/ (code of both
sides), lib/ (libservprof), dropin/, and the tool's tool/parse, tool/analyze,
tool/report, tool/export, tool/cli. Each part may include the headers of the parts
listed for it in ALLOWED, and nothing else; a header is owned by the part
whose folder holds it. Two rules more:

  - only the CLI verbs that drive a runtime (RUNTIME_VERBS) may include a
    lib/ internal header, and the drop-in only lib/core/ext.h;
  - no CMakeLists.txt of a part names another part's source folder
    (${CMAKE_SOURCE_DIR}/<part>) except include/: a target gets another
    part's headers by linking that part's target.

Prints one line per violation and exits 1; exits 0 and prints a count when
the tree keeps the rules. Run by ctest (tests/install, layout_rules) and
by hand: scripts/check-layout.py [SOURCE_DIR].
"""
import os
import re
import sys

PARTS = ["include", "common", "lib", "dropin", "tool/parse", "tool/analyze", "tool/report",
         "tool/export", "tool/cli"]
ALLOWED = {
    "include": {"include"},
    "common": {"common", "include"},
    "lib": {"lib", "common", "include"},
    "dropin": {"dropin", "common", "include", "lib:ext.h"},
    "tool/parse": {"tool/parse", "common", "include"},
    "tool/analyze": {"tool/analyze", "tool/parse", "common", "include"},
    "tool/report": {"tool/report", "tool/analyze", "tool/parse", "common", "include"},
    "tool/export": {"tool/export", "tool/analyze", "tool/parse", "common", "include"},
    "tool/cli": {"tool/cli", "tool/export", "tool/report", "tool/analyze", "tool/parse", "common", "include"},
}
# The verbs that start or read a runtime of their own: they link libservprof.
RUNTIME_VERBS = {"tool/cli/cmd_stress.c", "tool/cli/cmd_metrics.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CMAKE_DIR = re.compile(r'\$\{CMAKE_SOURCE_DIR\}/([A-Za-z0-9_./-]+)')


def part_of(rel):
    for p in sorted(PARTS, key=len, reverse=True):
        if rel == p or rel.startswith(p + "/"):
            return p
    return None


def sources(root):
    for p in PARTS:
        for dirpath, dirs, files in os.walk(os.path.join(root, p)):
            dirs[:] = [d for d in dirs if d != "node_modules"]
            for f in files:
                yield os.path.relpath(os.path.join(dirpath, f), root)


def header_owners(root):
    owners = {}
    for rel in sources(root):
        if rel.endswith(".h"):
            owners.setdefault(os.path.basename(rel), set()).add(part_of(rel))
    return owners


def check_includes(root, owners, problems):
    checked = 0
    for rel in sources(root):
        if not rel.endswith((".c", ".h")):
            continue
        part = part_of(rel)
        allowed = set(ALLOWED[part])
        if rel in RUNTIME_VERBS:
            allowed.add("lib")
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            checked += 1
            base = os.path.basename(name)
            own = owners.get(base)
            if not own:
                continue  # generated (servprof_version.h) or a system header
            if own & allowed or ("lib:" + base) in allowed:
                continue
            problems.append(f"{rel}: includes \"{name}\" of {'/'.join(sorted(own))}, "
                            f"which {part} may not use (docs/architecture.md, Parts)")
    return checked


def check_cmake(root, problems):
    for rel in sources(root):
        if os.path.basename(rel) != "CMakeLists.txt":
            continue
        part = part_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        for m in CMAKE_DIR.finditer(text):
            target = part_of(m.group(1).rstrip("/"))
            if target and target not in (part, "include"):
                problems.append(f"{rel}: names ${{CMAKE_SOURCE_DIR}}/{m.group(1)} of {target}; "
                                "link that part's target instead")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    missing = [p for p in PARTS if not os.path.isdir(os.path.join(root, p))]
    if missing:
        print("check-layout: missing part folder(s): " + ", ".join(missing))
        return 1
    problems = []
    checked = check_includes(root, header_owners(root), problems)
    check_cmake(root, problems)
    for p in problems:
        print("check-layout: " + p)
    if problems:
        return 1
    print(f"check-layout: {checked} includes of {len(PARTS)} parts follow the rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
