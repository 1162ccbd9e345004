#!/usr/bin/env bash
# Echo ping-pong over loopback against three servers, each pinned to CPU 0 with the load client
# on CPU 1: trellis (examples/echo_server, 1 loop), raw Asio (peers/asio_echo.cpp) and Netty 4.1
# (peers/EchoServer.java, Debian libnetty-java). For 1 and 16 connections, 64-byte messages, it
# prints round trips/s, p50/p99 latency and the server's CPU time per round trip (utime+stime
# from /proc/PID/stat before and after the run).
#
#   benchmarks/run_echo_bench.sh                 # BUILD=build-tr SECS=10 PINGPONG=... to override
#
# The load client is the pingpong client of the shared peers (PINGPONG=path to its binary):
#   pingpong HOST PORT CONNS SECONDS [WARMUP_S] [MSG_BYTES] -> "RESULT conns=.. rtps=.. p50_us=.."
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-tr}
SECS=${SECS:-10}
OUT=${OUT:-$BUILD/echo-bench}
mkdir -p "$OUT"
PINGPONG=${PINGPONG:-/work/shared/peers/build/pingpong}
if [ ! -x "$PINGPONG" ] && [ -f /work/shared/peers/client/pingpong.cpp ]; then
  g++ -O2 -std=c++20 /work/shared/peers/client/pingpong.cpp -o "$OUT/pingpong" -pthread
  PINGPONG=$OUT/pingpong
fi

[ -x "$BUILD/examples/echo_server" ] || { echo "build echo_server first (ninja -C $BUILD echo_server)" >&2; exit 1; }
[ -x "$PINGPONG" ] || { echo "pingpong client not found at $PINGPONG" >&2; exit 1; }
g++ -O2 -std=c++20 -DASIO_STANDALONE benchmarks/peers/asio_echo.cpp -o "$OUT/asio_echo" -pthread
NETTY_CP=""
if command -v javac >/dev/null && ls /usr/share/java/netty-transport.jar >/dev/null 2>&1; then
  NETTY_CP=$(ls /usr/share/java/netty-{common,buffer,transport,resolver}.jar | paste -sd:)
  javac -cp "$NETTY_CP" -d "$OUT" benchmarks/peers/EchoServer.java
else
  echo "Netty (libnetty-java) not installed: skipping the Netty peer" >&2
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_peer() {  # name port command...
  local name=$1 port=$2; shift 2
  taskset -c 0 "$@" > "$OUT/server-$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  for conns in 1 16; do
    local before; before=$(cpu_ticks $pid)
    local result; result=$(taskset -c 1 "$PINGPONG" 127.0.0.1 "$port" "$conns" "$SECS" 1 64 | grep '^RESULT')
    local after; after=$(cpu_ticks $pid)
    local trips; trips=$(sed -E 's/.*roundtrips=([0-9]+).*/\1/' <<<"$result")
    local hz; hz=$(getconf CLK_TCK)
    local ns; ns=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$trips" 'BEGIN{printf "%.0f", t * 1e9 / hz / n}')
    echo "$name $result server_cpu_ns_per_rt=$ns" | tee -a "$OUT/results.txt"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

: > "$OUT/results.txt"
run_peer trellis 18093 "$BUILD/examples/echo_server" --port 18093 --threads 1
run_peer asio 18092 "$OUT/asio_echo" 18092
if [ -n "$NETTY_CP" ]; then run_peer netty 18091 java -cp "$OUT:$NETTY_CP" EchoServer 18091; fi
echo "results in $OUT/results.txt"
