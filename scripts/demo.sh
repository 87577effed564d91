#!/usr/bin/env bash
# demo.sh — the main job: build, serve, load, profile, parse, report.
# (The instrumented example server arrives with issue 5; until then this builds
# the tool and runs the stress generator under a config with collection on.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
./build/bin/servprof --help
