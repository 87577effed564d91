#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo-pd.sh — the disaggregated demo: tiny-llm-pd's decode, prefill and
# router instances on 127.0.0.1 with collection on, a client sending
# requests to the router, then `servprof parse` and its hand-off summary
# (pd_split_communication.csv, pd_split_kvcache.csv, coordinator.csv).
#
# Environment: SERVPROF_DEMO_DIR (outputs; default ./demo-pd-out, replaced on
# each run), SERVPROF_DEMO_BUILD (build folder; default build-demo),
# DEMO_REQUESTS (default 40), DEMO_CONCURRENCY (client threads, default 4).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${SERVPROF_DEMO_BUILD:-build-demo}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
WORK=${SERVPROF_DEMO_DIR:-$ROOT/demo-pd-out}
NREQ=${DEMO_REQUESTS:-40}
CONC=${DEMO_CONCURRENCY:-4}
say() { printf '== %s\n' "$*"; }

say "building servprof and tiny-llm-pd in $BUILD/"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD/demo-configure.log" 2>&1 ||
  { cat "$BUILD/demo-configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target servprof_cli tiny-llm-pd >"$BUILD/demo-build.log" 2>&1 ||
  { tail -40 "$BUILD/demo-build.log"; exit 1; }
BIN=$BUILD/bin

if [ -e "$WORK" ]; then
  if [ -f "$WORK/.servprof-demo" ]; then rm -rf "$WORK"; else
    echo "demo-pd.sh: $WORK exists and was not made by demo-pd.sh; set SERVPROF_DEMO_DIR" >&2; exit 1; fi
fi
mkdir -p "$WORK"
touch "$WORK/.servprof-demo"
printf '{"enable": 1, "prof_dir": "%s/prof", "profiler_level": "INFO"}\n' "$WORK" >"$WORK/profiler.json"
export SERVICE_PROF_CONFIG_PATH=$WORK/profiler.json

PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
             for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT
start() { # role, extra args...
  local role=$1; shift
  "$BIN/tiny-llm-pd" --role "$role" --port 0 --port-file "$WORK/$role.port" "$@" >"$WORK/$role.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 1500); do [ -s "$WORK/$role.port" ] && return 0; sleep 0.02; done
  echo "demo-pd.sh: the $role instance did not start; see $WORK/$role.log" >&2; exit 1
}
say "starting the decode, prefill and router instances"
start decode
start prefill
start router --prefill-port "$(cat "$WORK/prefill.port")" --decode-port "$(cat "$WORK/decode.port")"

say "sending $NREQ requests ($CONC at a time) to the router"
/usr/bin/python3 - "$(cat "$WORK/router.port")" "$NREQ" "$CONC" <<'PY'
import random, socket, statistics, sys, threading, time
port, n, conc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ttft, lock, errors = [], threading.Lock(), []
def one(i):
    rnd = random.Random(i)
    prompt = [rnd.randrange(1000) for _ in range(rnd.randint(16, 256))]
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s, s.makefile("rb") as f:
        t0 = time.time()
        s.sendall(("GEN %d %d %s\n" % (rnd.randint(8, 32), len(prompt), " ".join(map(str, prompt)))).encode())
        first = None
        for _ in range(40):
            line = f.readline().decode().strip()
            if line.startswith("TOK ") and first is None:
                first = time.time() - t0
            elif not line.startswith("TOK "):
                break
        with lock:
            (ttft.append(first * 1e3) if line == "END" and first else errors.append(line))
def worker(k):
    for i in range(k, n, conc):
        one(i)
ts = [threading.Thread(target=worker, args=(k,)) for k in range(conc)]
[t.start() for t in ts]
[t.join() for t in ts]
print("client: %d ok, %d failed; TTFT median %.3f ms" % (len(ttft), len(errors), statistics.median(ttft) if ttft else 0))
PY
stop_all

say "servprof parse"
"$BIN/servprof" parse "$WORK/prof" -o "$WORK/out" --no-progress
say "reports in $WORK/out: pd_split_communication.csv pd_split_kvcache.csv coordinator.csv chrome_tracing.json"
