#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install-deps.sh — installs the Debian packages servprof needs to build, test
# and run its demo. Idempotent: installs only what is missing. Needs root (or
# sudo) only when something is missing.
set -euo pipefail
# Build and run: the first two lines. The rest serve the tests: clang + its sanitizer/fuzzer
# runtime (libFuzzer targets, float-cast checks), Chromium (the HTML report in a real browser),
# Prometheus + promtool (live metrics scraped for real), PyTorch and aiohttp (the Python
# engine and the torch profiler path), pandas, gcovr (coverage), venv/wheel (the Python wheel),
# PyYAML (hook files, servprof.hooks), python3-dev (servprof._hookcall, the hooks' C wrapper),
# protoc + python3-protobuf (trace.pftrace decoded with
# Perfetto's official .proto; the OTLP tests decode with opentelemetry-proto's the same way),
# protobuf-c (bench_pbenc: the pftrace encoder against it).
PKGS=(build-essential cmake pkg-config git libsqlite3-dev sqlite3 libjansson-dev
      libmicrohttpd-dev libcurl4-openssl-dev zlib1g-dev python3 python3-setuptools python3-pip
      clang libclang-rt-14-dev chromium chromium-driver fonts-dejavu-core prometheus
      python3-torch python3-aiohttp python3-pandas python3-numpy python3-venv python3-wheel
      python3-yaml python3-dev
      gcovr protobuf-compiler python3-protobuf protobuf-c-compiler libprotobuf-c-dev)
missing=()
# ClickHouse for the `servprof export` / `analyze --from` tests (tests/clickhouse start their own
# servers as plain processes; the system service is not used). libcurl + zlib above: the export.
PKGS+=(clickhouse-server clickhouse-client)
# valgrind: the benches that count instructions (callgrind), load-independent figures
# (bench_otlp_asm.py, bench_otlp_demo_ir.py and the callgrind rows of docs/benchmarks.md).
PKGS+=(valgrind)
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs the OpenTelemetry JS exporter of the OTLP differential test (below). Any node >= 18
# with npm will do (a NodeSource nodejs carries its own npm): Debian's only when there is no npm.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# uPlot (the report page's charting library, MIT) is vendored in tool/report/vendor/uplot:
# no npm at build time. scripts/refresh-uplot.sh moves its pin (that one needs npm).
# The official OpenTelemetry JS exporter, for the OTLP differential test (tests/otlp/test_otlp_js.py;
# versions pinned in tests/otlp/package-lock.json). Test-only; the test skips without it.
OTLP_DIR="$(cd "$(dirname "$0")/.." && pwd)/tests/otlp"
if [ ! -d "$OTLP_DIR/node_modules/@opentelemetry/exporter-trace-otlp-proto" ]; then
  echo "install-deps: npm ci in $OTLP_DIR (OpenTelemetry JS exporter, tests only)" >&2
  (cd "$OTLP_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi
