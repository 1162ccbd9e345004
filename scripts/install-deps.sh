#!/usr/bin/env bash
# Installs the Debian 12 packages that building, testing and benchmarking trellis need — only the
# ones that are missing, so a second run does nothing (and needs no network).
#   scripts/install-deps.sh            install what is missing (as root)
#   scripts/install-deps.sh --check    only report what is missing; exit 1 if anything is
set -euo pipefail

# Needed to build and run the tests, examples and benchmarks.
required=(
  build-essential g++ clang cmake pkg-config
  libasio-dev libspdlog-dev doctest-dev libbenchmark-dev
  libssl-dev openssl zlib1g-dev libbrotli-dev libzstd-dev
  curl python3 wrk procps testssl.sh haproxy
)
# Nice to have: the scripts fall back to Makefiles without ninja; the clang fuzzers need
# libclang-rt-14-dev. A failure to install these is only a warning.
optional=(ninja-build libclang-rt-14-dev)

log() { printf '[%s] install-deps: %s\n' "$(date '+%H:%M:%S')" "$*"; }

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  log "no dpkg-query: not a Debian system, cannot check packages."
  log "install the equivalents of: ${required[*]} ${optional[*]}"
  if command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1; then
    log "cmake and a C++ compiler are present; going on and letting CMake report what is missing"
    exit 0
  fi
  exit 1
fi

is_installed() {
  # "install ok installed" or "hold ok installed"; anything else (absent, half-configured) is missing.
  local status
  status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ "$status" == *" ok installed" ]]
}

missing_required=()
missing_optional=()
for p in "${required[@]}"; do is_installed "$p" || missing_required+=("$p"); done
for p in "${optional[@]}"; do is_installed "$p" || missing_optional+=("$p"); done

if (( ${#missing_required[@]} == 0 && ${#missing_optional[@]} == 0 )); then
  log "all ${#required[@]} required and ${#optional[@]} optional packages are installed"
  exit 0
fi

all_missing=("${missing_required[@]}" "${missing_optional[@]}")
apt_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${all_missing[*]}"
log "missing: ${all_missing[*]}"
if (( check_only )); then
  log "to install them, run as root: $apt_cmd"
  exit 1
fi

if (( EUID != 0 )); then
  log "ERROR: packages are missing and this is not root. Run as root (or with sudo):"
  echo "  $apt_cmd"
  if (( ${#missing_required[@]} == 0 )); then
    log "only optional packages are missing; going on without them"
    exit 0
  fi
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
log "apt-get update"
apt-get update -q
if (( ${#missing_required[@]} > 0 )); then
  log "apt-get install ${missing_required[*]}"
  apt-get install "${apt_opts[@]}" "${missing_required[@]}"
fi
if (( ${#missing_optional[@]} > 0 )); then
  log "apt-get install (optional) ${missing_optional[*]}"
  apt-get install "${apt_opts[@]}" "${missing_optional[@]}" ||
    log "WARNING: could not install optional packages: ${missing_optional[*]}"
fi

still_missing=()
for p in "${required[@]}"; do is_installed "$p" || still_missing+=("$p"); done
if (( ${#still_missing[@]} > 0 )); then
  log "ERROR: still missing after apt-get install: ${still_missing[*]}"
  exit 1
fi
log "done"
