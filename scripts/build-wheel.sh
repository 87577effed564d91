#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build-wheel.sh — the Python wheel of servprof, with the C library and the
# servprof tool inside, so that `pip install servprof-*.whl` in a venv gives
# recording (import servprof) and the `servprof` command with no other step.
#
#   scripts/build-wheel.sh [BUILD_DIR [OUT_DIR]]     (defaults: build, dist)
#
# Builds the library and the tool in BUILD_DIR (configuring it when needed;
# a sanitizer build is refused: its library cannot load into python3;
# SERVPROF_WHEEL_PREBUILT=1 uses what BUILD_DIR holds, as the tests do), then
# calls the package's own build backend (python/_backend, standard library
# only: no pip, setuptools or network needed to build). Prints the wheel's
# path. Install it with: python3 -m venv V && V/bin/pip install --no-index WHEEL
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-dist}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
san=$(sed -n 's/^SERVPROF_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt")
if [ -n "$san" ]; then
  echo "build-wheel.sh: $BUILD is a '$san' sanitizer build; a wheel needs a plain one" >&2
  exit 2
fi
# The hook engine's C wrapper (servprof._hookcall) goes in when the build has
# it (Python headers found); without it the wheel's hooks use the Python one.
hookcall_target=
if [ -d "$BUILD/python/CMakeFiles/servprof_hookcall.dir" ]; then
  hookcall_target=servprof_hookcall
fi
if [ "${SERVPROF_WHEEL_PREBUILT:-0}" != 1 ]; then
  cmake --build "$BUILD" -j2 --target servprof servprof_cli $hookcall_target >/dev/null
fi
lib=$(readlink -f "$BUILD/lib/libservprof.so.0")
cli=$(readlink -f "$BUILD/bin/servprof")
hookcall=$(ls "$BUILD"/lib/_hookcall.*.so 2>/dev/null | head -n 1 || true)
mkdir -p "$OUT"
"$PY" - "$OUT" "$lib" "$cli" "$hookcall" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join("python", "_backend"))
import servprof_backend
out, lib, cli, hookcall = sys.argv[1:5]
settings = {"servprof-lib": lib, "servprof-cli": cli}
if hookcall:
    settings["servprof-hookcall"] = hookcall
name = servprof_backend.build_wheel(out, settings)
print(os.path.join(os.path.abspath(out), name))
PYEOF
