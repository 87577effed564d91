#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu_check.sh — the samplers on a real NVIDIA GPU, end to end.
#
# Builds servprof (build-gpu/), builds bench/gpu/gpu_work.cu with nvcc
# against libservprof.so, runs it under collection with every sampler on
# (host 50 Hz, GPU memory 50 Hz, CUPTI activity L1), parses the session with
# `servprof parse`, and prints what the program knows it did next to what
# servprof recorded (bench/gpu/check_results.py). Exit status 0 when every
# check passes.
#
#   bench/gpu_check.sh            (from anywhere; needs nvcc, a GPU, python3)
#   KEEP=1 bench/gpu_check.sh     keep the work folder
#   SERVPROF_GPU_PREBUILT=1 BUILD=build-gpu bench/gpu_check.sh
#                                 use a build made on another machine (cmake
#                                 and the -dev packages are then not needed)
#
# Where CUPTI lives varies: $SERVPROF_CUPTI_LIB if set, else the first
# libcupti.so* under $CUDA_HOME, /usr/local/cuda*, or a pip nvidia-cuda-cupti
# wheel. Takes about a minute (most of it the build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$(cd "$ROOT" && realpath -m "${BUILD:-build-gpu}")
WORK=$(mktemp -d /tmp/servprof-gpu-check-XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
HOST_HZ=50
GPU_HZ=50

say() { printf '\n== %s\n' "$*"; }

say "machine"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,pci.bus_id,memory.used,memory.total,driver_version --format=csv || echo "no nvidia-smi"
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[ -n "$NVCC" ] || { echo "gpu_check: nvcc not found (PATH, /usr/local/cuda/bin)"; exit 2; }
"$NVCC" --version | tail -1
command -v python3 >/dev/null || { echo "gpu_check: python3 is needed for the checks"; exit 2; }

if [ -z "${SERVPROF_CUPTI_LIB:-}" ]; then
  CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
  for cand in "${CUDA_HOME:-/nonexistent}" "$CUDA_ROOT" /usr/local/cuda /usr/local/cuda-*; do
    lib=$(ls "$cand"/extras/CUPTI/lib64/libcupti.so* "$cand"/lib64/libcupti.so* 2>/dev/null | head -1 || true)
    [ -n "$lib" ] && { export SERVPROF_CUPTI_LIB=$lib; break; }
  done
  if [ -z "${SERVPROF_CUPTI_LIB:-}" ]; then
    lib=$(python3 -c 'import nvidia.cuda_cupti, os, glob; d=os.path.dirname(nvidia.cuda_cupti.__file__); print((glob.glob(d+"/lib/libcupti.so*") or [""])[0])' 2>/dev/null || true)
    [ -n "$lib" ] && export SERVPROF_CUPTI_LIB=$lib
  fi
fi
echo "CUPTI: ${SERVPROF_CUPTI_LIB:-not found (device activity checks will fail)}"

if [ "${SERVPROF_GPU_PREBUILT:-0}" = 1 ]; then
  # A build made elsewhere and carried here (a GPU machine may lack cmake or
  # the -dev packages); its runtime libraries must still resolve.
  say "use the prebuilt servprof in $BUILD"
  [ -x "$BUILD/bin/servprof" ] || { echo "gpu_check: no $BUILD/bin/servprof"; exit 2; }
  ldd "$BUILD/bin/servprof" | grep "not found" && { echo "gpu_check: missing libraries"; exit 2; }
else
  say "build servprof ($BUILD)"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSERVPROF_BUILD_TESTS=OFF \
        -DSERVPROF_BUILD_BENCH=OFF -DSERVPROF_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$BUILD" -j "$(nproc)" --target servprof servprof_cli >"$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log"; exit 1; }
fi
SERVPROF_BIN=$BUILD/bin/servprof
LIBDIR=$(dirname "$(find "$BUILD/src" -name 'libservprof.so' | head -1)")

say "build bench/gpu/gpu_work.cu"
# The servprof calls are in C (gpu_prof.c): servprof.h is a C11 header.
cc -O2 -std=c11 -I include -c bench/gpu/gpu_prof.c -o "$WORK/gpu_prof.o"
"$NVCC" -O2 -I include -I bench/gpu -o "$WORK/gpu_work" bench/gpu/gpu_work.cu "$WORK/gpu_prof.o" \
  -L "$LIBDIR" -lservprof -Xlinker -rpath -Xlinker "$LIBDIR"

say "run under collection (host ${HOST_HZ} Hz, GPU memory ${GPU_HZ} Hz, CUPTI L1)"
cat >"$WORK/config.json" <<JSON
{
    "enable": 1,
    "prof_dir": "$WORK/prof",
    "profiler_level": "INFO",
    "host_system_usage_freq": $HOST_HZ,
    "npu_memory_usage_freq": $GPU_HZ,
    "acl_task_time": 1,
    "acl_prof_task_time_level": "L1"
}
JSON
SERVICE_PROF_CONFIG_PATH=$WORK/config.json PROF_LOG_LEVEL=INFO "$WORK/gpu_work" \
  >"$WORK/did.txt" 2>"$WORK/run.log" || { cat "$WORK/run.log" "$WORK/did.txt"; exit 1; }
cat "$WORK/run.log" "$WORK/did.txt"
SESSION=$(ls -d "$WORK"/prof/*/ | head -1)

say "parse $SESSION"
"$SERVPROF_BIN" parse --input-path "$SESSION" --output-path "$WORK/out" >"$WORK/parse.log" 2>&1 ||
  { echo "servprof parse failed:"; tail -20 "$WORK/parse.log"; }
ls "$WORK/out" 2>/dev/null || true

say "program vs servprof"
python3 bench/gpu/check_results.py "$SESSION" "$WORK/did.txt" "$WORK/out" "$HOST_HZ" "$GPU_HZ"
