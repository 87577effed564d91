#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test.sh — builds servprof four ways and runs the tests in each:
#   build/        plain RelWithDebInfo (all tests, Python included)
#   build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer
#   build-tsan/   ThreadSanitizer
#   build-clang/  clang-14: ASan + UBSan with float-cast-overflow and
#                 signed-integer-overflow; the C tests and each libFuzzer
#                 target (tests/fuzz) for SERVPROF_FUZZ_SECONDS (60) each
# The last line is "N passed, N failed" over all the runs. While ctest
# runs, each test prints its line as it finishes ("12/58 Test #12: name ...
# Passed 3.1 sec"), so a long run shows progress; the whole output is also
# kept in <dir>/ctest.log. See README.md for how long it takes.
# SERVPROF_TEST_BUILDS="plain asan tsan clang" picks the builds (default all four).
# Opt-in: "coverage" (build-cov/, --coverage at -O0) runs the suite once
# more and prints the line coverage of common/ lib/ dropin/ tool/ (gcovr) after the totals.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
JOBS=$(nproc 2>/dev/null || echo 2)
BUILDS=${SERVPROF_TEST_BUILDS:-plain asan tsan clang}
passed=0; failed=0; status=0

# --- coverage build (opt-in): flags here, report after the totals -------
COVERAGE_OPTS=(-DSERVPROF_BUILD_BENCH=OFF "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O0 -g"
               "-DCMAKE_C_FLAGS=--coverage -fprofile-update=atomic" -DCMAKE_EXE_LINKER_FLAGS=--coverage
               -DCMAKE_SHARED_LINKER_FLAGS=--coverage)
coverage_report() {
  case " $BUILDS " in *" coverage "*) ;; *) return 0 ;; esac
  [ -d build-cov ] || return 0
  if ! command -v gcovr >/dev/null; then
    echo "test.sh: gcovr not found; no coverage figure" >&2; return 0
  fi
  echo "=== coverage of common/ lib/ dropin/ tool/ (lowest files first) ==="
  local g=(gcovr -r . --object-directory build-cov --filter '(common|lib|dropin|tool)/' --gcov-ignore-parse-errors)
  "${g[@]}" 2>/dev/null | awk '/^(common|lib|dropin|tool)\// && NF >= 4' | sort -k4,4n | head -10
  "${g[@]}" --print-summary -o /dev/null 2>/dev/null | sed -n 's/^lines: /line coverage of the C sources: /p'
}
# -------------------------------------------------------------------------
for b in $BUILDS; do
  case $b in
    plain) dir=build;      opts=() ;;
    asan)  dir=build-asan; opts=(-DSERVPROF_SANITIZE=address -DSERVPROF_BUILD_BENCH=OFF) ;;
    tsan)  dir=build-tsan; opts=(-DSERVPROF_SANITIZE=thread -DSERVPROF_BUILD_BENCH=OFF) ;;
    clang) continue ;; # its own block below
    coverage) dir=build-cov; opts=("${COVERAGE_OPTS[@]}"); find build-cov -name "*.gcda" -delete 2>/dev/null ;;
    *) echo "test.sh: unknown build '$b'" >&2; exit 2 ;;
  esac
  echo "=== $b build ($dir) ==="
  if ! { cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${opts[@]}" >/dev/null &&
         cmake --build "$dir" -j "$JOBS" >"$dir/build.log" 2>&1; }; then
    tail -50 "$dir/build.log" 2>/dev/null
    echo "test.sh: $b build failed" >&2
    failed=$((failed + 1)); status=1; continue
  fi
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
  # Shared by every build block: progress on the terminal, the log kept.
  started=$SECONDS
  (cd "$dir" && ctest --output-on-failure -j "$JOBS" 2>&1) | tee "$dir/ctest.log"
  rc=${PIPESTATUS[0]}
  out=$(cat "$dir/ctest.log")
  echo "=== $b build: ctest took $((SECONDS - started)) s ==="
  line=$(echo "$out" | grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" | tail -1)
  total=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
  nfail=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
  if [ -z "$line" ]; then
    echo "test.sh: no ctest summary for the $b build" >&2; failed=$((failed + 1)); status=1; continue
  fi
  passed=$((passed + total - nfail)); failed=$((failed + nfail))
  [ $rc -eq 0 ] || status=1
done

# ---- clang build ---------------------------------------------------------------
# gcc's UBSan does not check float-to-integer casts, and libFuzzer needs
# clang: build-clang/ runs every C test (ctest label "c") and every fuzz
# target (label "fuzz", each for SERVPROF_FUZZ_SECONDS over its corpus in
# tests/fuzz/corpus) with every sanitizer report fatal. Python tests are not
# run here (they load the library into an uninstrumented interpreter).
if [[ " $BUILDS " == *" clang "* ]]; then
  dir=build-clang
  echo "=== clang build ($dir) ==="
  if ! command -v clang-14 >/dev/null; then
    echo "test.sh: clang-14 is not installed (scripts/install-deps.sh installs it)" >&2
    failed=$((failed + 1)); status=1
  elif ! { CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSERVPROF_SANITIZE=clang \
             -DSERVPROF_FUZZ=ON -DSERVPROF_FUZZ_SECONDS="${SERVPROF_FUZZ_SECONDS:-60}" \
             -DSERVPROF_BUILD_BENCH=OFF >/dev/null &&
           cmake --build "$dir" -j "$JOBS" >"$dir/build.log" 2>&1; }; then
    tail -50 "$dir/build.log" 2>/dev/null
    echo "test.sh: clang build failed" >&2
    failed=$((failed + 1)); status=1
  else
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    out=$(cd "$dir" && ctest --output-on-failure -j "$JOBS" -L '^(c|fuzz)$' 2>&1); rc=$?
    echo "$out"
    line=$(echo "$out" | grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" | tail -1)
    if [ -z "$line" ]; then
      echo "test.sh: no ctest summary for the clang build" >&2; failed=$((failed + 1)); status=1
    else
      total=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
      nfail=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
      passed=$((passed + total - nfail)); failed=$((failed + nfail))
      [ $rc -eq 0 ] || status=1
    fi
  fi
fi

coverage_report
echo "$passed passed, $failed failed"
exit $status
