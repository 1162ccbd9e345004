#!/usr/bin/env bash
# Configures and builds one flavour of trellis; also the shared helpers of serve.sh and test.sh
# (which source this file).
#   scripts/build.sh [release|asan|tsan] [extra cmake -D args...]
#     release  build/release  Release, tests + examples + benchmarks
#     asan     build/asan     RelWithDebInfo, TRELLIS_SANITIZE="address;undefined", no benchmarks
#     tsan     build/tsan     RelWithDebInfo, TRELLIS_SANITIZE=thread, no benchmarks
# Environment: JOBS (parallel jobs, default 2), TRELLIS_SKIP_DEPS=1 (do not run
# install-deps.sh), CXX (compiler, read when a build directory is first configured),
# TRELLIS_BUILD_DIR (overrides build/<mode>).

TRELLIS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-2}"

trellis_log() { printf '[%s] %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$*"; }

# trellis_phase NAME CMD...: runs CMD, logging start, end and elapsed seconds; fails with CMD.
trellis_phase() {
  local name="$1" start rc=0
  shift
  start=$(date +%s)
  trellis_log "==> $name"
  "$@" || rc=$?
  if (( rc != 0 )); then
    trellis_log "<== $name FAILED (exit $rc) after $(( $(date +%s) - start ))s"
    return "$rc"
  fi
  trellis_log "<== $name done in $(( $(date +%s) - start ))s"
}

trellis_install_deps() {
  if [[ "${TRELLIS_SKIP_DEPS:-0}" == 1 ]]; then
    trellis_log "TRELLIS_SKIP_DEPS=1: not checking system packages"
    return 0
  fi
  trellis_phase "install missing packages" "$TRELLIS_ROOT/scripts/install-deps.sh"
}

# trellis_mode_settings MODE: sets TRELLIS_MODE_DIR and the array TRELLIS_MODE_ARGS.
trellis_mode_settings() {
  case "$1" in
    release)
      TRELLIS_MODE_DIR="build/release"
      TRELLIS_MODE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DTRELLIS_SANITIZE=)
      ;;
    asan | tsan)
      local sanitize="address;undefined"
      [[ "$1" == tsan ]] && sanitize="thread"
      TRELLIS_MODE_DIR="build/$1"
      # -O1 -g1: sanitizer builds of Asio-heavy files take minutes at -O2 -g; line tables are
      # enough for the sanitizers' stack traces.
      TRELLIS_MODE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
                         "-DTRELLIS_SANITIZE=$sanitize"
                         -DTRELLIS_BUILD_BENCHMARKS=OFF -DTRELLIS_BUILD_EXAMPLES=ON)
      ;;
    *)
      echo "unknown build mode '$1' (expected release, asan or tsan)" >&2
      return 2
      ;;
  esac
  TRELLIS_MODE_DIR="$TRELLIS_ROOT/${TRELLIS_BUILD_DIR:-$TRELLIS_MODE_DIR}"
}

# trellis_configure BUILD_DIR CMAKE_ARGS...: Ninja when available, unless the directory was
# already configured with another generator (which CMake would refuse to switch).
trellis_configure() {
  local dir="$1"
  shift
  local gen=()
  if [[ ! -f "$dir/CMakeCache.txt" ]] && command -v ninja >/dev/null 2>&1; then
    gen=(-G Ninja)
  fi
  trellis_phase "configure $(basename "$dir")" \
    cmake -S "$TRELLIS_ROOT" -B "$dir" "${gen[@]}" "$@"
}

# trellis_build BUILD_DIR [TARGET...]
trellis_build() {
  local dir="$1"
  shift
  local targets=()
  (( $# > 0 )) && targets=(--target "$@")
  trellis_phase "build $(basename "$dir")${targets[*]:+ (${*})}" \
    cmake --build "$dir" --parallel "$JOBS" "${targets[@]}"
}

# trellis_has_target BUILD_DIR TARGET: true if the configured build system knows TARGET.
trellis_has_target() {
  local listing
  listing=$(cmake --build "$1" --target help 2>/dev/null) || return 1
  grep -Eq "(^|[ .:/])$2(:| |$)" <<<"$listing"
}

trellis_build_main() {
  set -euo pipefail
  local mode="${1:-release}"
  (( $# > 0 )) && shift
  trellis_mode_settings "$mode"
  trellis_install_deps
  trellis_configure "$TRELLIS_MODE_DIR" "${TRELLIS_MODE_ARGS[@]}" "$@"
  trellis_build "$TRELLIS_MODE_DIR"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  trellis_build_main "$@"
fi
