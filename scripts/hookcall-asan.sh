#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hookcall-asan.sh — the C hook wrapper (servprof._hookcall: _hookcall.c,
# _hookexpr.c) under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Why a script of its own: a sanitizer build (SERVPROF_SANITIZE=address)
# builds no extension and registers no hook test (a sanitized library
# cannot load into a plain python3), so `ctest -R hook` there runs
# nothing. Here only the extension is built with the sanitizers, put
# next to a copy of the plain build's libservprof.so, and
# tests/hooks/test_hooks_ccall.py and test_hooks_crare.py (the rarer
# record shapes) run against it with the sanitizer runtimes preloaded
# (their child processes inherit them). Leak detection
# is off: the interpreter itself "leaks" at exit.
#
#   scripts/hookcall-asan.sh [BUILD_DIR]     (default build/, built already)
# ctest runs it in the plain gcc build as hooks_ccall_asan (tests/hooks).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")  # relative to the repository root, or absolute
PY=${PYTHON:-/usr/bin/python3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SUFFIX=$("$PY" -c 'import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])')
gcc -std=c11 -fPIC -shared -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
    -Wall -Wextra -Wno-unused-parameter $("$PY"-config --includes) \
    python/servprof/_hookcall.c python/servprof/_hookexpr.c -o "$OUT/_hookcall$SUFFIX"
cp -a "$BUILD"/lib/libservprof.so* "$OUT"/
PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
for t in test_hooks_ccall.py test_hooks_crare.py; do
    env SERVPROF_BIN="$BUILD/bin/servprof" SERVPROF_BUILD="$BUILD" SERVPROF_SOURCE="$PWD" \
        SERVPROF_LIB="$OUT/libservprof.so" PROF_LOG_LEVEL=INFO \
        PYTHONPATH="$PWD/tests:$PWD/tests/hooks" \
        LD_PRELOAD="$PRELOAD" ASAN_OPTIONS=detect_leaks=0 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$PY" -B "tests/hooks/$t" -v
done
