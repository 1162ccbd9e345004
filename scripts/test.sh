#!/usr/bin/env bash
# Installs what is missing, builds trellis with its tests and runs the whole suite with ctest.
#   scripts/test.sh            Release in build/release (tests, examples, benchmarks)
#   scripts/test.sh asan       ASan + UBSan, RelWithDebInfo in build/asan
#   scripts/test.sh tsan       TSan, RelWithDebInfo in build/tsan
# The mode may also come from TRELLIS_TEST_MODE. Extra arguments after the mode go to ctest
# (e.g. `scripts/test.sh release -R pipeline`). Environment: JOBS (default 2), TRELLIS_SKIP_DEPS=1.
set -euo pipefail
# shellcheck source=SCRIPTDIR/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/build.sh"

mode="${TRELLIS_TEST_MODE:-release}"
if (( $# > 0 )) && [[ "$1" != -* ]]; then
  mode="$1"
  shift
fi
trellis_mode_settings "$mode"
start=$(date +%s)
trellis_log "trellis test: mode $mode, build dir ${TRELLIS_MODE_DIR#"$TRELLIS_ROOT"/}, $JOBS jobs"

ctest_args=(--test-dir "$TRELLIS_MODE_DIR" --output-on-failure --no-tests=error -j "$JOBS"
            --timeout 300)
runner=()
extra_cmake=(-DTRELLIS_BUILD_TESTS=ON -DTRELLIS_BUILD_EXAMPLES=ON)
if [[ "$mode" == release ]]; then
  extra_cmake+=("-DTRELLIS_BUILD_BENCHMARKS=${TRELLIS_BUILD_BENCHMARKS:-ON}")
else
  # Sanitizers: fail at the first report, with a stack. Caller-set options win.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$TRELLIS_ROOT/scripts/tsan.supp}"
  trellis_log "ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS TSAN_OPTIONS=$TSAN_OPTIONS"
  # Benchmarks are not built in sanitizer builds; skip anything labelled bench all the same.
  # The consumer tests check packaging (find_package, add_subdirectory, pkg-config) and build
  # trellis again: the Release run covers them.
  # The TLS audit (label audit) checks the server's TLS configuration with testssl.sh: the
  # Release run covers it.
  ctest_args+=(-LE "bench|consumer|audit")
  # Kernels with high mmap randomisation (vm.mmap_rnd_bits > 28) break the sanitizer runtimes of
  # gcc 12 / clang 14 ("unexpected memory mapping"); running without ASLR avoids that.
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    runner=(setarch "$(uname -m)" -R)
  fi
fi

trellis_install_deps
rm -f "$TRELLIS_MODE_DIR/ctest-counts"
trellis_configure "$TRELLIS_MODE_DIR" "${TRELLIS_MODE_ARGS[@]}" "${extra_cmake[@]}"
trellis_build "$TRELLIS_MODE_DIR"
ctest_log="$TRELLIS_MODE_DIR/ctest.log"
run_ctest() { "${runner[@]}" ctest "${ctest_args[@]}" "$@" 2>&1 | tee "$ctest_log"; }
ctest_rc=0
trellis_phase "ctest $mode" run_ctest "$@" || ctest_rc=$?

# ctest closes with "100% tests passed, 0 tests failed out of N": keep the counts (.ci/run adds
# them up) and end with a plain "N passed, N failed" line.
summary_line=$(grep -E 'tests failed out of [0-9]+' "$ctest_log" | tail -n 1 || true)
if [[ "$summary_line" =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
  failed="${BASH_REMATCH[1]}"
  passed=$(( BASH_REMATCH[2] - failed ))
  echo "$passed $failed" >"$TRELLIS_MODE_DIR/ctest-counts"
fi
if (( ctest_rc != 0 )); then
  trellis_log "trellis test: mode $mode FAILED after $(( $(date +%s) - start ))s"
  exit "$ctest_rc"
fi
trellis_log "trellis test: mode $mode passed in $(( $(date +%s) - start ))s"
if [[ -n "${passed:-}" ]]; then
  echo "$mode: $passed passed, $failed failed"
fi
