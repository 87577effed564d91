#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh — the main job: build, serve, load, profile, parse, report.
#
#   1. installs what is missing (scripts/install-deps.sh) and builds the
#      servprof tool, tiny-llm-server and servprof-load (in build-demo/);
#   2. writes a servprof config with collection OFF and starts the server on
#      a free port of 127.0.0.1 with SERVICE_PROF_CONFIG_PATH pointing at it;
#   3. starts Poisson load; after a few seconds turns collection ON by editing
#      the file (`servprof enable`), later OFF again (`servprof disable`),
#      while the server keeps serving;
#   4. stops the server, runs `servprof parse`, prints the summary, compares
#      the profile with what the clients measured, prints what `servprof
#      analyze` finds (ranked findings), writes the one-page HTML report
#      (`servprof report`), and says where each output is.
#
# Environment: SERVPROF_DEMO_DIR (outputs; default ./demo-out, replaced on each
# run), SERVPROF_DEMO_BUILD (build folder; default build-demo),
# DEMO_RATE (requests/s, default 12), DEMO_SECONDS (load duration, default 14).
# --moe: the server's feed-forward is a mixture of experts on expert-parallel
# rank threads (DEMO_MOE=E,K,R, default 8,2,4) with a planted router skew
# (DEMO_MOE_SKEW, default 3,5: two hot experts; "" for a balanced router);
# the MoE reports and analyze's expert_imbalance come out of it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${SERVPROF_DEMO_BUILD:-build-demo}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
WORK=${SERVPROF_DEMO_DIR:-$ROOT/demo-out}
RATE=${DEMO_RATE:-12}
SECONDS_LOAD=${DEMO_SECONDS:-14}
MOE=0
for arg in "$@"; do
  case $arg in
    --moe) MOE=1 ;;
    *) echo "demo.sh: unknown option '$arg' (known: --moe)" >&2; exit 2 ;;
  esac
done
t_start=$(date +%s.%N)
if [ -t 1 ]; then say() { printf '\033[1m== %s\033[0m\n' "$*"; }; else say() { printf '== %s\n' "$*"; }; fi

say "installing dependencies (if missing)"
./scripts/install-deps.sh

say "building servprof, tiny-llm-server and servprof-load in $BUILD/"
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD/demo-configure.log" 2>&1 ||
  { cat "$BUILD/demo-configure.log"; exit 1; }
if ! grep -q "^MHD_FOUND:INTERNAL=1" "$BUILD/CMakeCache.txt"; then
  echo "demo.sh: libmicrohttpd was not found; install libmicrohttpd-dev" >&2; exit 1
fi
cmake --build "$BUILD" -j "$(nproc)" --target servprof_cli tiny-llm-server servprof-load \
  >"$BUILD/demo-build.log" 2>&1 || { tail -40 "$BUILD/demo-build.log"; exit 1; }
BIN=$BUILD/bin

# A fresh output folder (only ever one this script made).
if [ -e "$WORK" ]; then
  if [ -f "$WORK/.servprof-demo" ]; then rm -rf "$WORK"; else
    echo "demo.sh: $WORK exists and was not made by demo.sh; set SERVPROF_DEMO_DIR" >&2; exit 1; fi
fi
mkdir -p "$WORK"
touch "$WORK/.servprof-demo"
CFG=$WORK/profiler.json
cat >"$CFG" <<JSON
{
    "enable": 0,
    "prof_dir": "$WORK/prof",
    "profiler_level": "INFO",
    "timelimit": 0,
    "domain": "",
    "host_system_usage_freq": 10
}
JSON

SERVER_PID=""; LOAD_PID=""
cleanup() {
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null || true
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
}
trap cleanup EXIT

say "starting tiny-llm-server with collection off ($CFG)"
SERVER_ARGS=()
if [ "$MOE" = 1 ]; then
  SERVER_ARGS=(--moe "${DEMO_MOE:-8,2,4}" --moe-clock "$WORK/moe-clock.txt")
  SKEW=${DEMO_MOE_SKEW-3,5}
  [ -n "$SKEW" ] && SERVER_ARGS+=(--moe-skew "$SKEW")
  say "MoE: ${SERVER_ARGS[*]}"
fi
SERVICE_PROF_CONFIG_PATH=$CFG "$BIN/tiny-llm-server" --port 0 --port-file "$WORK/port" "${SERVER_ARGS[@]}" \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
[ -s "$WORK/port" ] || { cat "$WORK/server.log"; echo "demo.sh: the server did not start" >&2; exit 1; }
PORT=$(cat "$WORK/port")
head -1 "$WORK/server.log"

say "load: $RATE requests/s (Poisson) for $SECONDS_LOAD s, streamed"
"$BIN/servprof-load" --port "$PORT" --rate "$RATE" --duration "$SECONDS_LOAD" \
  --out "$WORK/client.csv" --summary-json "$WORK/client-summary.json" >"$WORK/load.txt" 2>&1 &
LOAD_PID=$!
sleep 3
say "turning collection ON: servprof enable $CFG"
"$BIN/servprof" enable "$CFG"
sleep 7
say "turning collection OFF: servprof disable $CFG"
"$BIN/servprof" disable "$CFG"
wait "$LOAD_PID"; LOAD_PID=""
say "stopping the server"
kill -INT "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=""
grep -E "Profiler (Enabled|Disabled)|stopped:" "$WORK/server.log" || true

say "what the clients saw (servprof-load)"
cat "$WORK/load.txt"

say "servprof parse --input-path $WORK/prof --output-path $WORK/output"
"$BIN/servprof" parse --input-path "$WORK/prof" --output-path "$WORK/output"

say "profile vs clients, for the requests that ended while collection was on"
python3 - "$WORK" <<'PY'
import csv, statistics, sys
w = sys.argv[1]
clients = {r["id"]: r for r in csv.DictReader(open(f"{w}/client.csv")) if not r["error"]}
reqs = {r["http_rid"]: r for r in csv.DictReader(open(f"{w}/output/request.csv"))}
ended = [i for i, r in clients.items() if int(r["profiled"]) >= 1]
in_csv = [i for i in reqs if reqs[i]["reply_token_size"] != "" and i in clients]
print(f"requests completed while collection was on: {len(ended)} (clients) / {len(in_csv)} (request.csv)")
full = [i for i in ended if int(clients[i]["profiled"]) == 2 and reqs.get(i, {}).get("first_token_latency(ms)")]
if full:
    p = [float(reqs[i]["first_token_latency(ms)"]) for i in full]
    c = [float(clients[i]["ttft_ms"]) for i in full]
    d = sorted(abs(a - b) for a, b in zip(p, c))
    print(f"TTFT P50: profile {statistics.median(p):.2f} ms, clients {statistics.median(c):.2f} ms; "
          f"per-request difference median {statistics.median(d):.2f} ms, max {d[-1]:.2f} ms "
          f"({len(full)} requests)")
PY

if [ "$MOE" = 1 ]; then
  say "MoE: ep_balance.csv (expert-compute ns per layer (row) and EP rank (column))"
  cat "$WORK/output/ep_balance.csv"
  say "MoE: moe_analysis.csv (dispatch + combine ns per rank: mean, 95 % interval)"
  cat "$WORK/output/moe_analysis.csv"
fi

say "what limits this run: servprof analyze -i $WORK/output -o $WORK/analysis"
"$BIN/servprof" analyze -i "$WORK/output" -o "$WORK/analysis" --findings-only

say "servprof report -i $WORK/output -o $WORK/report.html"
"$BIN/servprof" report -i "$WORK/output" -o "$WORK/report.html"

t_end=$(date +%s.%N)
say "done in $(python3 -c "print(round($t_end - $t_start, 1))") s; outputs:"
cat <<TXT
  the run at a glance (HTML, offline)    $WORK/report.html
  config file (edit "enable" to switch)  $CFG
  raw store (SQLite, one per process)    $(ls "$WORK"/prof/*/Trace_Service/*.db | head -1)
  timeline (open in ui.perfetto.dev)     $WORK/output/chrome_tracing.json
  per-request report                     $WORK/output/request.csv
  per-step reports                       $WORK/output/batch.csv, forward.csv
  KV cache and queues                    $WORK/output/kvcache.csv, request_status.csv
  everything for SQL / Grafana           $WORK/output/profiler.db
  summaries, windows, findings           $WORK/analysis/ (servprof analyze; analyze.json)
  what the clients measured              $WORK/client.csv, $WORK/load.txt
  server log                             $WORK/server.log
TXT
if [ "$MOE" = 1 ]; then
cat <<TXT
  MoE (reference's names)                $WORK/output/ep_balance.csv, moe_analysis.csv
  MoE per rank, step, layer; EPLB view   $WORK/output/moe_rank.csv, expert_load.csv, eplb_balance.csv
  the ranks' own clock (demo only)       $WORK/moe-clock.txt
TXT
fi
