#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# parse-identical.sh — are two servprof builds' outputs byte for byte the same?
#
# For a change that must not change what the tool writes (a refactoring, a
# speed-up): runs `servprof parse` of both binaries on the same inputs and
# compares every output file with cmp, profiler.db also by its `.dump` (a
# dump-identical file that differs in bytes is said apart), and
# `servprof analyze --format json` (the parse's tap). Inputs:
#   bench500, bench2000   bench_parse --requests 500 / 2000 (bench/bench_parse.c)
#   parity, scenario, pd  the hand-made stores of tests/ (parse/parity_fixture.py,
#                         support/scenario.py, test_parse_pdsplit.py)
# each parsed twice: the default outputs, and with --span (span_info/).
#
# usage: scripts/parse-identical.sh OLD/servprof NEW/servprof BENCH_PARSE [WORKDIR]
#   BENCH_PARSE: a bench_parse binary (cmake -DSERVPROF_BUILD_BENCH=ON); the
#   inputs are made once under WORKDIR (default /tmp/parse-identical) and reused.
# Prints one line per input and output; exits 1 when anything differs.
set -uo pipefail
[ $# -ge 3 ] || { sed -n 3,18p "$0"; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); bench=$(realpath "$3")
work=${4:-/tmp/parse-identical}
root=$(cd "$(dirname "$0")/.." && pwd)
for b in "$old" "$new" "$bench"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
mkdir -p "$work"
export SERVPROF_PARSE_DIRECT_IO=0 TZ=UTC

make_inputs() {
  for n in 500 2000; do
    [ -d "$work/bench$n/in" ] || "$bench" --requests "$n" --dir "$work/bench$n" --bin "$old" >/dev/null
  done
  for f in parity scenario pd; do
    [ -d "$work/$f/in" ] && continue
    mkdir -p "$work/$f/in"
    PYTHONPATH="$root/tests/parse:$root/tests" python3 - "$f" "$work/$f/in" <<'EOF'
import sys
which, d = sys.argv[1], sys.argv[2]
if which == "parity":
    import parity_fixture; parity_fixture.build(d)
elif which == "scenario":
    from support import scenario; scenario.build(d)
else:
    import test_parse_pdsplit; test_parse_pdsplit.build(d)
EOF
  done
}

bad=0
compare_tree() { # what $1 $2
  local a=$1 b=$2 what=$3 f
  [ -d "$a" ] && [ -d "$b" ] || { echo "DIFFER $what: no output folder"; bad=1; return; }
  (cd "$a" && find . -type f | sort) >"$work/files.a"
  (cd "$b" && find . -type f | sort) >"$work/files.b"
  if ! cmp -s "$work/files.a" "$work/files.b"; then
    echo "DIFFER $what: not the same files"; diff "$work/files.a" "$work/files.b" | head; bad=1; return
  fi
  while read -r f; do
    case $f in
    *profiler.db)
      if cmp -s "$a/$f" "$b/$f"; then continue; fi
      if diff <(sqlite3 "$a/$f" .dump) <(sqlite3 "$b/$f" .dump) >/dev/null; then
        echo "note   $what: $f differs in bytes, its .dump is identical"
      else
        echo "DIFFER $what: $f (.dump)"; bad=1
      fi ;;
    *) cmp -s "$a/$f" "$b/$f" || { echo "DIFFER $what: $f"; bad=1; } ;;
    esac
  done <"$work/files.a"
  echo "same   $what: $(wc -l <"$work/files.a") files"
}

make_inputs
for inp in bench500 bench2000 parity scenario pd; do
  for variant in plain spans; do
    extra=()
    [ $variant = spans ] && extra=(--span forward --span httpReq --span Execute)
    for side in old new; do
      bin=$old; [ $side = new ] && bin=$new
      out="$work/out/$inp-$variant" # one path for both: messages name it
      rm -rf "$out" "$work/out-$side/$inp-$variant"
      "$bin" parse --input-path "$work/$inp/in" --output-path "$out" --quiet --no-progress "${extra[@]}" \
        2>"$work/err-$side" || echo "note   $inp-$variant: $side parse exited $?"
      mkdir -p "$work/out-$side" && mv "$out" "$work/out-$side/$inp-$variant"
    done
    compare_tree "$work/out-old/$inp-$variant" "$work/out-new/$inp-$variant" "$inp-$variant"
    cmp -s "$work/err-old" "$work/err-new" || { echo "DIFFER $inp-$variant: messages"; bad=1; }
  done
  "$old" analyze -i "$work/$inp/in" --format json >"$work/an-old.json" 2>/dev/null; ra=$?
  "$new" analyze -i "$work/$inp/in" --format json >"$work/an-new.json" 2>/dev/null; rb=$?
  if [ $ra != $rb ] || [ ! -s "$work/an-old.json" ]; then echo "DIFFER $inp: analyze exit $ra vs $rb"; bad=1
  elif cmp -s "$work/an-old.json" "$work/an-new.json"; then echo "same   $inp: analyze json"
  else echo "DIFFER $inp: analyze json"; bad=1; fi
done
[ $bad = 0 ] && echo "all identical" || echo "SOME OUTPUTS DIFFER"
exit $bad
