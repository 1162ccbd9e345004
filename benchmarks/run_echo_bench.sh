#!/usr/bin/env bash
# TCP echo over loopback: trellis (examples/echo_server, one loop) against a raw Asio echo
# (benchmarks/peers/asio_echo.cpp, one io_context) and Netty 4.1 (benchmarks/peers/EchoServer.java,
# Debian libnetty-java, one NIO loop). Servers are pinned to SERVER_CPU, the load client
# (benchmarks/peers/pingpong.cpp) to CLIENT_CPU. Three cases:
#
#   ping-pong  64-byte messages, one in flight per connection, 1 and 16 connections: round
#              trips/s, p50/p99 latency and the server's CPU ns per round trip (utime+stime of
#              /proc/PID/stat, read by the client at the start and end of its measured window).
#   stream     one connection writing STREAM_BYTES (1 GiB) in 64 KiB writes while reading the echo
#              back at the same time: MB/s (1e6 bytes) and server CPU ms per GiB.
#   idle       a fresh server, then IDLE_CONNS (10000) connections held open: VmRSS growth per
#              connection (/proc/PID/status), trellis and Asio.
#
# All servers of the ping-pong and stream cases run for the whole run, started at the beginning
# on their own ports and warmed up (WARM_JVM_SECS for Netty, WARM_SECS for the others; discarded);
# then RUNS rounds, each running every peer once per case (the peer order changes from round to round), so
# slow drift of the (shared) machine hits all peers alike. The summary holds medians over the rounds.
#
#   benchmarks/run_echo_bench.sh
#   RUNS=1 SECS=2 WARM_SECS=1 WARM_JVM_SECS=4 STREAM_BYTES=$((64<<20)) IDLE_CONNS=2000 \
#     benchmarks/run_echo_bench.sh                                     # a quick smoke run
#
# Knobs (environment): RUNS=3 SECS=10 WARM_SECS=3 WARM_JVM_SECS=15 PEERS="trellis asio netty"
#   CONNS_LIST="1 16" MSG_BYTES=64 PP_WARMUP=1 (client warm-up per run, discarded)
#   SERVER_CPU=0 CLIENT_CPU=1 STREAM_BYTES=1073741824 STREAM_CHUNK=65536
#   STREAM_WARM_BYTES=268435456 STREAM_PEERS=$PEERS IDLE_CONNS=10000 IDLE_HOLD=5
#   IDLE_PEERS="trellis asio" PORT_BASE=27090 JAVA_OPTS= BUILD=build/release OUT=build/echo-bench
#   INSTALL=1 (apt-get missing packages) BUILD_TRELLIS=1 (cmake --build $BUILD --target echo_server)
#   JOBS=2 SYSCALLS=0 (1: also count the server's system calls during every ping-pong run with
#   `perf stat -e raw_syscalls:sys_enter -p PID`, divided by the client's total_roundtrips, warm-up
#   included; a separate column, since perf's attachment costs the server a little CPU)
# An empty PEERS, STREAM_PEERS or IDLE_PEERS skips that case, e.g. only the idle case:
#   PEERS= STREAM_PEERS= benchmarks/run_echo_bench.sh
# Output: $OUT/summary.md (also printed), $OUT/raw.tsv (one row per run and metric), logs in
# $OUT/logs/. Exit status 1 if any run failed (the summary lists them).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build/release}
OUT=${OUT:-build/echo-bench}
RUNS=${RUNS:-3}
SECS=${SECS:-10}
WARM_SECS=${WARM_SECS:-3}
WARM_JVM_SECS=${WARM_JVM_SECS:-15}
PEERS=${PEERS-trellis asio netty}
CONNS_LIST=${CONNS_LIST:-1 16}
MSG_BYTES=${MSG_BYTES:-64}
PP_WARMUP=${PP_WARMUP:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
STREAM_BYTES=${STREAM_BYTES:-1073741824}
STREAM_CHUNK=${STREAM_CHUNK:-65536}
STREAM_WARM_BYTES=${STREAM_WARM_BYTES:-268435456}
STREAM_PEERS=${STREAM_PEERS-$PEERS}
IDLE_CONNS=${IDLE_CONNS:-10000}
IDLE_HOLD=${IDLE_HOLD:-5}
IDLE_PEERS=${IDLE_PEERS-trellis asio}
PORT_BASE=${PORT_BASE:-27090}
JAVA_OPTS=${JAVA_OPTS:-}
INSTALL=${INSTALL:-1}
BUILD_TRELLIS=${BUILD_TRELLIS:-1}
JOBS=${JOBS:-2}
SYSCALLS=${SYSCALLS:-0}
read -ra JOPTS <<<"$JAVA_OPTS"

log() { echo "[echo-bench] $*" >&2; }
die() { log "error: $*"; exit 1; }

for p in $PEERS $STREAM_PEERS $IDLE_PEERS; do
  case $p in trellis | asio | netty) ;; *) die "unknown peer '$p' (trellis, asio, netty)" ;; esac
done
has_peer() { [[ " $PEERS $STREAM_PEERS $IDLE_PEERS " == *" $1 "* ]]; }

# --- packages -----------------------------------------------------------------------------------
# Only those missing (dpkg -s); the JDK and Netty only when the Netty peer is wanted.
want_pkgs=(util-linux procps coreutils libasio-dev)
if has_peer netty; then want_pkgs+=(openjdk-17-jdk-headless libnetty-java); fi
missing=()
for p in "${want_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$INSTALL" = 1 ] && [ "$(id -u)" = 0 ]; then
    log "installing ${missing[*]}"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"${TMPDIR:-/tmp}/echo-bench-apt.log" 2>&1; then
      log "warning: apt-get failed (see ${TMPDIR:-/tmp}/echo-bench-apt.log); going on with what is there"
    fi
  else
    log "warning: missing packages ${missing[*]} (INSTALL=1 as root installs them)"
  fi
fi
command -v taskset >/dev/null || die "taskset (util-linux) is needed"

# --- builds -------------------------------------------------------------------------------------
mkdir -p "$OUT/logs"
: >"$OUT/logs/build.log"
if has_peer trellis && [ "$BUILD_TRELLIS" = 1 ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    log "configuring $BUILD (Release)"
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >>"$OUT/logs/build.log" 2>&1 ||
      die "cmake configure failed, see $OUT/logs/build.log"
  fi
  log "building echo_server in $BUILD"
  cmake --build "$BUILD" --target echo_server -j"$JOBS" >>"$OUT/logs/build.log" 2>&1 ||
    die "building echo_server failed, see $OUT/logs/build.log"
fi
if has_peer trellis; then
  [ -x "$BUILD/examples/echo_server" ] || die "$BUILD/examples/echo_server missing (BUILD_TRELLIS=1 builds it)"
fi
stale() { [ ! -e "$1" ] || [ "$2" -nt "$1" ]; }  # target source
# The C++ peers and the client get the flags of trellis's Release build (-O3 -DNDEBUG, LTO); a
# change of flags rebuilds them.
PEER_CXXFLAGS=${PEER_CXXFLAGS:--O3 -DNDEBUG -flto=auto}
if [ "$(cat "$OUT/peer-cxxflags" 2>/dev/null)" != "$PEER_CXXFLAGS" ]; then
  rm -f "$OUT/pingpong" "$OUT/asio_echo"
  echo "$PEER_CXXFLAGS" >"$OUT/peer-cxxflags"
fi
if stale "$OUT/pingpong" benchmarks/peers/pingpong.cpp; then
  log "building pingpong ($PEER_CXXFLAGS)"
  g++ $PEER_CXXFLAGS -std=c++20 -Wall -Wextra benchmarks/peers/pingpong.cpp -o "$OUT/pingpong" >>"$OUT/logs/build.log" 2>&1 ||
    die "building pingpong failed, see $OUT/logs/build.log"
fi
if has_peer asio && stale "$OUT/asio_echo" benchmarks/peers/asio_echo.cpp; then
  log "building asio_echo ($PEER_CXXFLAGS)"
  g++ $PEER_CXXFLAGS -std=c++20 -DASIO_STANDALONE benchmarks/peers/asio_echo.cpp -o "$OUT/asio_echo" -pthread \
    >>"$OUT/logs/build.log" 2>&1 || die "building asio_echo failed, see $OUT/logs/build.log"
fi
NETTY_CP=""
drop_peer() {  # name reason
  log "warning: skipping the $1 peer: $2"
  PEERS=$(tr ' ' '\n' <<<"$PEERS" | grep -vx "$1" | paste -sd' ' || true)
  STREAM_PEERS=$(tr ' ' '\n' <<<"$STREAM_PEERS" | grep -vx "$1" | paste -sd' ' || true)
  IDLE_PEERS=$(tr ' ' '\n' <<<"$IDLE_PEERS" | grep -vx "$1" | paste -sd' ' || true)
  NOTES+=("$1 skipped: $2")
}
NOTES=()
if has_peer netty; then
  jars=(/usr/share/java/netty-{common,buffer,transport,resolver}.jar)
  if ! command -v javac >/dev/null || ! ls "${jars[@]}" >/dev/null 2>&1; then
    drop_peer netty "javac or libnetty-java jars not found"
  else
    NETTY_CP=$(IFS=:; echo "${jars[*]}")
    if stale "$OUT/netty-classes/EchoServer.class" benchmarks/peers/EchoServer.java; then
      log "building EchoServer.java"
      mkdir -p "$OUT/netty-classes"
      javac -cp "$NETTY_CP" -d "$OUT/netty-classes" benchmarks/peers/EchoServer.java \
        >>"$OUT/logs/build.log" 2>&1 || die "javac EchoServer.java failed, see $OUT/logs/build.log"
    fi
  fi
fi
[ -n "$PEERS$STREAM_PEERS$IDLE_PEERS" ] || die "no peer left to run"

# --- file descriptors ---------------------------------------------------------------------------
# Raised here so the servers inherit it; the idle case needs IDLE_CONNS in each process.
hard=$(ulimit -Hn)
nofile=65536
if [ "$hard" != unlimited ] && [ "$hard" -lt "$nofile" ]; then nofile=$hard; fi
ulimit -n "$nofile"
if [ -n "$IDLE_PEERS" ] && [ "$nofile" -lt $((IDLE_CONNS + 256)) ]; then
  NOTES+=("idle case skipped: needs $((IDLE_CONNS + 256)) file descriptors, the hard limit is $hard")
  log "warning: ${NOTES[-1]}"
  IDLE_PEERS=""
fi

# --- processes ----------------------------------------------------------------------------------
PIDS=()
cleanup() {
  local pid
  for pid in ${PIDS[@]+"${PIDS[@]}"}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${PIDS[@]+"${PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget_pid() { local keep=() p; for p in ${PIDS[@]+"${PIDS[@]}"}; do [ "$p" = "$1" ] || keep+=("$p"); done; PIDS=(${keep[@]+"${keep[@]}"}); }
stop_pid() {
  kill "$1" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
peer_port() {  # peer offset
  case $1 in netty) echo $((PORT_BASE + $2 + 1)) ;; asio) echo $((PORT_BASE + $2 + 2)) ;; trellis) echo $((PORT_BASE + $2 + 3)) ;; esac
}

# Starts a server pinned to SERVER_CPU, waits until it accepts; sets LAUNCHED to its PID.
launch() {  # peer port log
  local peer=$1 port=$2 logf=$3
  port_open "$port" && { log "port $port is already taken by another process"; return 1; }
  case $peer in
    trellis) taskset -c "$SERVER_CPU" "$BUILD/examples/echo_server" --port "$port" --threads 1 >"$logf" 2>&1 & ;;
    asio) taskset -c "$SERVER_CPU" "$OUT/asio_echo" "$port" >"$logf" 2>&1 & ;;
    netty) taskset -c "$SERVER_CPU" java ${JOPTS[@]+"${JOPTS[@]}"} -cp "$OUT/netty-classes:$NETTY_CP" EchoServer "$port" >"$logf" 2>&1 & ;;
  esac
  LAUNCHED=$!
  PIDS+=("$LAUNCHED")
  for _ in $(seq 300); do
    kill -0 "$LAUNCHED" 2>/dev/null || { log "$peer server exited at start:"; tail -5 "$logf" >&2; return 1; }
    port_open "$port" && return 0
    sleep 0.1
  done
  log "$peer server does not accept on port $port after 30 s"
  return 1
}

# --- results ------------------------------------------------------------------------------------
RAW=$OUT/raw.tsv
printf 'case\tpeer\tround\tmetric\tvalue\n' >"$RAW"
FAILURES=()
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; }  # case peer round metric value
field() { sed -nE "s/.* $1=([^ ]+).*/\1/p" <<<"$2"; }
fail_run() {  # what logfile
  FAILURES+=("$1 (log: $2)")
  log "FAILED: $1"
  [ -f "$2" ] && tail -5 "$2" | sed 's/^/    /' >&2
  return 0
}

declare -A SPID
server_alive() { [ -n "${SPID[$1]:-}" ] && kill -0 "${SPID[$1]}" 2>/dev/null; }

# Runs the client pinned to CLIENT_CPU with the server's PID for the CPU readings.
client() {  # peer logfile timeout_s args...
  local peer=$1 logf=$2 limit=$3
  shift 3
  PINGPONG_SERVER_PID=${SPID[$peer]} timeout "$limit" taskset -c "$CLIENT_CPU" "$OUT/pingpong" "$@" >"$logf" 2>&1
}

pingpong_run() {  # round conns peer
  local round=$1 conns=$2 peer=$3 case="pingpong-c$2"
  local logf="$OUT/logs/$case-$peer-r$round.log" rc=0
  if ! server_alive "$peer"; then fail_run "$case $peer round $round: server not running" "$OUT/logs/server-$peer.log"; return; fi
  local perf_pid="" perf_out="$OUT/logs/$case-$peer-r$round.perf"
  if [ "$SYSCALLS" = 1 ]; then
    perf stat -x, -e raw_syscalls:sys_enter -o "$perf_out" -p "${SPID[$peer]}" 2>/dev/null &
    perf_pid=$!
    sleep 0.2  # attached before the first connect
  fi
  client "$peer" "$logf" $((SECS + PP_WARMUP + 60)) 127.0.0.1 "$(peer_port "$peer" 0)" "$conns" "$SECS" "$PP_WARMUP" "$MSG_BYTES" || rc=$?
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid" 2>/dev/null || true
    wait "$perf_pid" 2>/dev/null || true
  fi
  local line; line=$(grep '^RESULT' "$logf" || true)
  if [ "$rc" != 0 ] || [ -z "$line" ]; then fail_run "$case $peer round $round: pingpong exit $rc" "$logf"; return; fi
  local m
  for m in rtps p50_us p99_us p999_us max_us server_cpu_ns_per_rt; do record "$case" "$peer" "$round" "$m" "$(field "$m" "$line")"; done
  if [ -n "$perf_pid" ]; then
    local calls total; calls=$(awk -F, '/raw_syscalls:sys_enter/ {print $1}' "$perf_out" 2>/dev/null)
    total=$(field total_roundtrips "$line")
    if [[ "$calls" =~ ^[0-9]+$ ]] && [[ "$total" =~ ^[0-9]+$ ]] && [ "$total" -gt 0 ]; then
      record "$case" "$peer" "$round" syscalls_per_rt "$(awk -v a="$calls" -v b="$total" 'BEGIN { printf "%.3f", a / b }')"
    else
      NOTES+=("$case $peer round $round: no system call count (perf: $(head -c 200 "$perf_out" 2>/dev/null | tr '\n' ' '))")
    fi
  fi
  log "$(printf '%-12s %-8s round %s: %8s rt/s  p50 %7s us  p99 %7s us  server %6s ns/rt' "$case" "$peer" "$round" \
    "$(field rtps "$line")" "$(field p50_us "$line")" "$(field p99_us "$line")" "$(field server_cpu_ns_per_rt "$line")")"
}

stream_run() {  # round peer bytes [warm]
  local round=$1 peer=$2 bytes=$3 case=stream
  local logf="$OUT/logs/stream-$peer-r$round.log" rc=0
  if ! server_alive "$peer"; then fail_run "stream $peer round $round: server not running" "$OUT/logs/server-$peer.log"; return; fi
  client "$peer" "$logf" $((120 + bytes / 5000000)) --stream 127.0.0.1 "$(peer_port "$peer" 0)" "$bytes" "$STREAM_CHUNK" || rc=$?
  local line; line=$(grep '^RESULT' "$logf" || true)
  if [ "$rc" != 0 ] || [ -z "$line" ]; then fail_run "stream $peer round $round: pingpong --stream exit $rc" "$logf"; return; fi
  [ "$round" = warm ] && return
  local m
  for m in mb_per_s seconds server_cpu_ms_per_gib; do record "$case" "$peer" "$round" "$m" "$(field "$m" "$line")"; done
  log "$(printf '%-12s %-8s round %s: %8s MB/s  server %7s ms/GiB' stream "$peer" "$round" \
    "$(field mb_per_s "$line")" "$(field server_cpu_ms_per_gib "$line")")"
}

vmrss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# Rss of smaps_rollup walks the page tables: exact, a cross-check of VmRSS (kept in counters).
smaps_kb() { awk '/^Rss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || true; }

idle_run() {  # peer
  local peer=$1 port; port=$(peer_port "$1" 10)
  local slog="$OUT/logs/server-idle-$peer.log" clog="$OUT/logs/idle-$peer.log" rc=0
  if ! launch "$peer" "$port" "$slog"; then fail_run "idle $peer: server did not start" "$slog"; return; fi
  local spid=$LAUNCHED
  sleep 0.5
  local before; before=$(vmrss_kb "$spid")
  local smaps_before; smaps_before=$(smaps_kb "$spid")
  taskset -c "$CLIENT_CPU" "$OUT/pingpong" --idle 127.0.0.1 "$port" "$IDLE_CONNS" "$IDLE_HOLD" >"$clog" 2>&1 &
  local cpid=$!
  PIDS+=("$cpid")
  local ready=0
  for _ in $(seq 1500); do  # 150 s; the client gives up connecting after 120 s
    if grep -q '^IDLE_READY' "$clog"; then ready=1; break; fi
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
  done
  local during="" smaps_during=""
  if [ "$ready" = 1 ]; then
    sleep 1
    during=$(vmrss_kb "$spid" 2>/dev/null || true)
    smaps_during=$(smaps_kb "$spid")
  fi
  wait "$cpid" || rc=$?
  forget_pid "$cpid"
  sleep 1
  local after_close; after_close=$(vmrss_kb "$spid" 2>/dev/null || echo "")
  stop_pid "$spid"
  if [ "$ready" != 1 ] || [ "$rc" != 0 ] || [ -z "$during" ]; then
    fail_run "idle $peer ($IDLE_CONNS conns): pingpong --idle exit $rc, ready=$ready" "$clog"
    return
  fi
  local per_conn=$(( (during - before) * 1024 / IDLE_CONNS ))
  record idle "$peer" 1 rss_before_kb "$before"
  record idle "$peer" 1 rss_idle_kb "$during"
  record idle "$peer" 1 rss_after_close_kb "$after_close"
  record idle "$peer" 1 bytes_per_conn "$per_conn"
  local smaps_per_conn=""
  if [ -n "$smaps_before" ] && [ -n "$smaps_during" ]; then
    smaps_per_conn=$(( (smaps_during - smaps_before) * 1024 / IDLE_CONNS ))
    record idle "$peer" 1 smaps_bytes_per_conn "$smaps_per_conn"
  fi
  log "$(printf 'idle %-8s %s conns: VmRSS %s -> %s KiB = %s bytes/conn (smaps_rollup: %s; after close %s KiB)' \
    "$peer" "$IDLE_CONNS" "$before" "$during" "$per_conn" "${smaps_per_conn:--}" "$after_close")"
}

# --- run ----------------------------------------------------------------------------------------
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
SERVED=$(tr ' ' '\n' <<<"$PEERS $STREAM_PEERS" | grep . | sort -u | paste -sd' ' || true)
for peer in $SERVED; do
  launch "$peer" "$(peer_port "$peer" 0)" "$OUT/logs/server-$peer.log" || die "$peer server did not start"
  SPID[$peer]=$LAUNCHED
  log "$peer server: pid ${SPID[$peer]}, port $(peer_port "$peer" 0)"
done
max_conns=$(tr ' ' '\n' <<<"$CONNS_LIST" | sort -n | tail -1)
for peer in $SERVED; do
  secs=$WARM_SECS; [ "$peer" = netty ] && secs=$WARM_JVM_SECS
  log "warm-up $peer: ${secs} s of ping-pong on $max_conns connections"
  client "$peer" "$OUT/logs/warmup-$peer.log" $((secs + 60)) 127.0.0.1 "$(peer_port "$peer" 0)" "$max_conns" "$secs" 0 "$MSG_BYTES" ||
    fail_run "warm-up $peer" "$OUT/logs/warmup-$peer.log"
done

# The peer order changes from round to round (see peer_order.sh).
# shellcheck source=benchmarks/peer_order.sh
source benchmarks/peer_order.sh  # (the working directory is the repository root)

for round in $(seq "$RUNS"); do
  for conns in $CONNS_LIST; do
    for peer in $(rotated $((round - 1)) $PEERS); do pingpong_run "$round" "$conns" "$peer"; done
  done
done

if [ -n "$STREAM_PEERS" ]; then
  warm_bytes=$STREAM_WARM_BYTES; [ "$warm_bytes" -gt "$STREAM_BYTES" ] && warm_bytes=$STREAM_BYTES
  for peer in $STREAM_PEERS; do
    log "stream warm-up $peer: $warm_bytes bytes"
    stream_run warm "$peer" "$warm_bytes"
  done
  for round in $(seq "$RUNS"); do
    for peer in $(rotated $((round - 1)) $STREAM_PEERS); do
      stream_run "$round" "$peer" "$STREAM_BYTES"
    done
  done
fi

for peer in $SERVED; do stop_pid "${SPID[$peer]}"; done
for peer in $IDLE_PEERS; do idle_run "$peer"; done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- summary ------------------------------------------------------------------------------------
med() {  # case peer metric printf-format -> median over the rounds, or "-"
  awk -F'\t' -v c="$1" -v p="$2" -v m="$3" '$1 == c && $2 == p && $4 == m && $5 != "" {print $5}' "$RAW" |
    sort -g | awk -v f="$4" '{a[NR] = $1} END {
      if (NR == 0) { print "-"; exit }
      v = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf f "\n", v }'
}
nruns() { awk -F'\t' -v c="$1" -v p="$2" -v m="$3" '$1 == c && $2 == p && $4 == m' "$RAW" | wc -l; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }

SUMMARY=$OUT/summary.md
{
  echo "# TCP echo over loopback: trellis vs raw Asio vs Netty"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
    "Linux $(uname -r). Servers on CPU $SERVER_CPU, client on CPU $CLIENT_CPU; one event-loop thread per server." \
    "Load average at start $LOAD_START, at end $LOAD_END."
  if has_peer netty && [ -n "$NETTY_CP" ]; then
    echo "Netty: $(dpkg-query -W -f='libnetty-java ${Version}' libnetty-java 2>/dev/null), $(java -version 2>&1 | head -1)."
  fi
  echo
  if [ -n "$PEERS" ]; then
    echo "## Ping-pong: ${MSG_BYTES}-byte messages, one in flight per connection, ${SECS} s per run, median of $RUNS round(s)"
    echo
    echo "| conns | peer | round trips/s | p50 µs | p99 µs | p99.9 µs | server CPU ns/rt | runs |"
    echo "|---:|---|---:|---:|---:|---:|---:|---:|"
    for conns in $CONNS_LIST; do
      for peer in $PEERS; do
        c=pingpong-c$conns
        echo "| $conns | $peer | $(med "$c" "$peer" rtps %.0f) | $(med "$c" "$peer" p50_us %.1f) | $(med "$c" "$peer" p99_us %.1f) |" \
          "$(med "$c" "$peer" p999_us %.1f) | $(med "$c" "$peer" server_cpu_ns_per_rt %.0f) | $(nruns "$c" "$peer" rtps)/$RUNS |"
      done
    done
    echo
    if [ "$SYSCALLS" = 1 ]; then
      echo "System calls of the server per round trip (perf stat -e raw_syscalls:sys_enter over the whole client run, warm-up included):"
      echo
      echo "| conns | $(for peer in $PEERS; do printf '%s | ' "$peer"; done)"
      echo "|---:|$(for peer in $PEERS; do printf -- '---:|'; done)"
      for conns in $CONNS_LIST; do
        echo "| $conns | $(for peer in $PEERS; do printf '%s | ' "$(med "pingpong-c$conns" "$peer" syscalls_per_rt %.3f)"; done)"
      done
      echo
    fi
    echo "| conns | rt/s trellis/asio | rt/s trellis/netty | CPU/rt trellis/asio | CPU/rt trellis/netty |"
    echo "|---:|---:|---:|---:|---:|"
    for conns in $CONNS_LIST; do
      c=pingpong-c$conns
      echo "| $conns | $(ratio "$(med "$c" trellis rtps %.2f)" "$(med "$c" asio rtps %.2f)") |" \
        "$(ratio "$(med "$c" trellis rtps %.2f)" "$(med "$c" netty rtps %.2f)") |" \
        "$(ratio "$(med "$c" trellis server_cpu_ns_per_rt %.2f)" "$(med "$c" asio server_cpu_ns_per_rt %.2f)") |" \
        "$(ratio "$(med "$c" trellis server_cpu_ns_per_rt %.2f)" "$(med "$c" netty server_cpu_ns_per_rt %.2f)") |"
    done
    echo
  fi
  if [ -n "$STREAM_PEERS" ]; then
    echo "## Stream: $((STREAM_BYTES >> 20)) MiB on one connection in $((STREAM_CHUNK >> 10)) KiB writes, echo read concurrently, median of $RUNS round(s)"
    echo
    echo "| peer | MB/s | server CPU ms/GiB | runs |"
    echo "|---|---:|---:|---:|"
    for peer in $STREAM_PEERS; do
      echo "| $peer | $(med stream "$peer" mb_per_s %.1f) | $(med stream "$peer" server_cpu_ms_per_gib %.1f) | $(nruns stream "$peer" mb_per_s)/$RUNS |"
    done
    echo
    echo "| ratio | trellis/asio | trellis/netty |"
    echo "|---|---:|---:|"
    echo "| MB/s | $(ratio "$(med stream trellis mb_per_s %.2f)" "$(med stream asio mb_per_s %.2f)") |" \
      "$(ratio "$(med stream trellis mb_per_s %.2f)" "$(med stream netty mb_per_s %.2f)") |"
    echo "| server CPU/GiB | $(ratio "$(med stream trellis server_cpu_ms_per_gib %.2f)" "$(med stream asio server_cpu_ms_per_gib %.2f)") |" \
      "$(ratio "$(med stream trellis server_cpu_ms_per_gib %.2f)" "$(med stream netty server_cpu_ms_per_gib %.2f)") |"
    echo
  fi
  if [ -n "$IDLE_PEERS" ]; then
    echo "## Idle connections: $IDLE_CONNS held open on a fresh server (user-space VmRSS; kernel socket memory not included)"
    echo
    echo "| peer | VmRSS before KiB | with $IDLE_CONNS conns KiB | bytes/conn | bytes/conn (smaps_rollup Rss) | after close KiB |"
    echo "|---|---:|---:|---:|---:|---:|"
    for peer in $IDLE_PEERS; do
      echo "| $peer | $(med idle "$peer" rss_before_kb %.0f) | $(med idle "$peer" rss_idle_kb %.0f) |" \
        "$(med idle "$peer" bytes_per_conn %.0f) | $(med idle "$peer" smaps_bytes_per_conn %.0f) | $(med idle "$peer" rss_after_close_kb %.0f) |"
    done
    echo
  fi
  if [ ${#NOTES[@]} -gt 0 ] || [ ${#FAILURES[@]} -gt 0 ]; then
    echo "## Notes"
    echo
    for n in ${NOTES[@]+"${NOTES[@]}"}; do echo "- $n"; done
    for f in ${FAILURES[@]+"${FAILURES[@]}"}; do echo "- FAILED: $f"; done
    echo
  fi
  echo "Raw numbers: $RAW"
} >"$SUMMARY"
cat "$SUMMARY"
[ ${#FAILURES[@]} -eq 0 ]
