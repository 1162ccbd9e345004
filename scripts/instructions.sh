#!/usr/bin/env bash
# Server instructions and simulated L1i misses per HTTP request, counted by callgrind: numbers
# that a noisy machine does not move (wall-clock ratios move +-15% between runs here).
#
#   scripts/instructions.sh                          # trellis and the raw-Asio floor, plaintext
#   CASES="plaintext pipelined" scripts/instructions.sh
#   BASE_BUILD=/path/to/other/build scripts/instructions.sh   # also an earlier trellis build
#
# Each server runs alone under `valgrind --tool=callgrind --cache-sim=yes` (32 KiB 8-way L1i,
# 48 KiB L1d, 2 MiB LL) on 127.0.0.1, and wrk (-t1 -c$CONNS, benchmarks/peers/count.lua) sends
# exactly $REQUESTS requests (pipelined: $DEPTH per write), then the server is stopped with
# SIGTERM. The same is done with $WARM requests; the difference divided by the difference in
# requests is the cost of a request, without start-up and shutdown. Prints a table; raw
# callgrind outputs stay in $OUT.
# Knobs: REQUESTS=20000 WARM=2000 CONNS=50 DEPTH=16 CASES=plaintext BUILD=build/release
#   OUT=build/instructions PEER_CXXFLAGS="-O3 -DNDEBUG -flto=auto" BASE_BUILD= SKIP_APT=1
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
REQUESTS=${REQUESTS:-20000}
WARM=${WARM:-2000}
CONNS=${CONNS:-50}
DEPTH=${DEPTH:-16}
CASES=${CASES:-plaintext}
BUILD=${BUILD:-build/release}
OUT=${OUT:-build/instructions}
PEER_CXXFLAGS=${PEER_CXXFLAGS:--O3 -DNDEBUG -flto=auto}
BASE_BUILD=${BASE_BUILD:-}
SKIP_APT=${SKIP_APT:-}
PORT=18190
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

die() { echo "instructions.sh: $*" >&2; exit 1; }

if [ -z "$SKIP_APT" ]; then
  missing=()
  for pkg in valgrind wrk libasio-dev g++; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (run as root, or install them)"
    apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
[ -x "$BUILD/examples/http_echo_server" ] ||
  die "$BUILD/examples/http_echo_server missing: scripts/build.sh release (or set BUILD)"
if [ "$(cat "$OUT/peer-cxxflags" 2>/dev/null)" != "$PEER_CXXFLAGS" ] ||
   [ benchmarks/peers/asio_http.cpp -nt "$OUT/asio_http" ]; then
  # shellcheck disable=SC2086  # the flags are words
  g++ $PEER_CXXFLAGS -std=c++20 -DASIO_STANDALONE -o "$OUT/asio_http" benchmarks/peers/asio_http.cpp \
    -pthread || die "building the raw-Asio floor failed"
  echo "$PEER_CXXFLAGS" >"$OUT/peer-cxxflags"
fi

declare -A CMD=([trellis]="$BUILD/examples/http_echo_server --host 127.0.0.1 --port $PORT --threads 1"
                [asio]="$OUT/asio_http $PORT")
peers=(trellis)
if [ -n "$BASE_BUILD" ]; then
  [ -x "$BASE_BUILD/examples/http_echo_server" ] || die "$BASE_BUILD/examples/http_echo_server missing"
  CMD[base]="$BASE_BUILD/examples/http_echo_server --host 127.0.0.1 --port $PORT --threads 1"
  peers+=(base)
fi
peers+=(asio)

wait_port() {  # up to 60 s: valgrind starts slowly
  for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# measure PEER CASE N -> "Ir I1mr" of a server run that answered N requests
measure() {
  local peer=$1 case=$2 n=$3 depth=1 file="$OUT/callgrind.$1.$2.$3"
  [ "$case" = pipelined ] && depth=$DEPTH
  rm -f "$file"
  # shellcheck disable=SC2086  # the command is words
  valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 --LL=2097152,16,64 \
    --callgrind-out-file="$file" ${CMD[$peer]} >"$file.log" 2>&1 &
  local pid=$!
  wait_port || { kill "$pid" 2>/dev/null; die "$peer did not listen on $PORT (see $file.log)"; }
  wrk -t1 -c"$CONNS" -d300s -s benchmarks/peers/count.lua "http://127.0.0.1:$PORT/plaintext" \
    -- "$n" "$depth" >"$file.wrk" 2>&1 || die "wrk failed (see $file.wrk)"
  kill -TERM "$pid"  # (a background job of a script ignores SIGINT)
  wait "$pid" || true
  local requests
  requests=$(awk '/^responses / {print $2}' "$file.wrk")
  [ -n "$requests" ] || die "wrk did not finish its $n requests (see $file.wrk)"
  # The events line names the columns; the summary line holds the totals.
  awk -v req="$requests" '
    /^events:/ { for (i = 2; i <= NF; i++) col[$i] = i - 1 }
    /^summary:/ { print req, $(col["Ir"] + 1), $(col["I1mr"] + 1) }' "$file"
}

echo "date_utc: $(date -u '+%Y-%m-%d %H:%M:%S'); $(valgrind --version); gcc: $(g++ -dumpfullversion)"
echo "trellis: $BUILD (CMake Release, -O3 -DNDEBUG, LTO); floor: $PEER_CXXFLAGS"
echo "wrk -t1 -c$CONNS, $REQUESTS requests minus $WARM (pipelined: $DEPTH per write)"
echo
echo "| case | server | instructions / request | L1i misses / request (simulated) |"
echo "|---|---|---:|---:|"
for case in $CASES; do
  for peer in "${peers[@]}"; do
    read -r r1 ir1 m1 < <(measure "$peer" "$case" "$WARM")
    read -r r2 ir2 m2 < <(measure "$peer" "$case" "$REQUESTS")
    awk -v c="$case" -v p="$peer" -v r1="$r1" -v r2="$r2" -v i1="$ir1" -v i2="$ir2" \
        -v m1="$m1" -v m2="$m2" 'BEGIN {
      if (r2 <= r1) { printf "| %s | %s | n/a (requests %s, %s) | |\n", c, p, r1, r2; exit }
      printf "| %s | %s | %.0f | %.1f |\n", c, p, (i2 - i1) / (r2 - r1), (m2 - m1) / (r2 - r1) }'
  done
done
