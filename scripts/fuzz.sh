#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (fuzzer + ASan + UBSan) and runs each for
# FUZZ_SECONDS (default 60; 10 when CI=true) from its seed corpus in codec/fuzz/corpus/NAME.
#   scripts/fuzz.sh [TARGET...]     default: every codec/fuzz/*_fuzzer.cpp
set -euo pipefail
# shellcheck source=scripts/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/build.sh"

default_seconds=60
[[ "${CI:-}" == true ]] && default_seconds=10  # CI: a smoke run
seconds="${FUZZ_SECONDS:-$default_seconds}"
dir="$TRELLIS_ROOT/build/fuzz"
trellis_install_deps
# The whole tree is built with the same sanitizers and with coverage instrumentation
# (fuzzer-no-link), so the fuzzers see and check the library code they drive.
trellis_configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DCMAKE_CXX_COMPILER=clang++ "-DTRELLIS_SANITIZE=address;undefined" -DTRELLIS_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
  -DTRELLIS_BUILD_TESTS=OFF -DTRELLIS_BUILD_BENCHMARKS=OFF -DTRELLIS_BUILD_EXAMPLES=OFF
targets=("$@")
if (( ${#targets[@]} == 0 )); then
  for f in "$TRELLIS_ROOT"/codec/fuzz/*_fuzzer.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
trellis_build "$dir" "${targets[@]}"
for t in "${targets[@]}"; do
  name="${t%_fuzzer}"
  corpus="$dir/corpus/$name"
  mkdir -p "$corpus"
  cp -n "$TRELLIS_ROOT/codec/fuzz/corpus/$name/"* "$corpus/" 2>/dev/null || true
  trellis_phase "fuzz $t for ${seconds}s" \
    "$dir/codec/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    "$corpus"
done
