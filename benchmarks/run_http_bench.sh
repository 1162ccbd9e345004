#!/usr/bin/env bash
# End-to-end HTTP/1.1 benchmark over loopback: trellis's example server against four peers.
#
#   trellis  build/release/examples/http_echo_server --threads 1 (GET /plaintext -> hello,
#            a request with a body -> the body echoed back)
#   netty    benchmarks/peers/HttpHello.java   Netty 4.1 (Debian libnetty-java), 1 event loop
#   beast    benchmarks/peers/beast_http.cpp   Boost.Beast async server, 1 io_context
#   asio     benchmarks/peers/asio_http.cpp    raw standalone Asio, the "physical floor"
#            (counts "\r\n\r\n", canned response; echoes Content-Length bodies)
#   nginx    benchmarks/peers/nginx.conf       `return 200 "Hello, World!"`, 1 worker
#   base     $BASE_BUILD/examples/http_echo_server: another build of trellis (an earlier commit),
#            run like trellis, to compare two versions in one run (not in the default PEERS;
#            never built here)
#
# Every server is started once, pinned to CPU $SERVER_CPU, and runs for the whole benchmark;
# wrk runs pinned to CPU $CLIENT_CPU. Cases:
#   plaintext  wrk -t1 -c$CONNS -d${SECS}s --latency http://127.0.0.1:PORT/plaintext
#   pipelined  the same with -s benchmarks/peers/pipeline.lua (16 requests per write)
#   post       wrk ... -s benchmarks/peers/post.lua http://127.0.0.1:PORT/echo (1 KiB body;
#              trellis and asio echo it, netty and beast read it and answer the hello,
#              nginx discards it and answers the hello)
# After a smoke test (curl) and a discarded warm-up of every peer with every case (JVM:
# $WARM_JVM_SECS s per case, others $WARM_SECS s), it measures $RUNS interleaved rounds
# (round -> case -> peer; the peer order changes from round to round). For each run it records req/s, p50/p99 latency, socket errors and
# non-2xx responses, and the server's CPU time (utime+stime of /proc/PID/stat; for nginx the
# worker processes) per request. Results: $OUT/raw.tsv and $OUT/summary.md (medians over the
# rounds and trellis/netty, trellis/asio ratios), also printed; wrk outputs and server logs
# are kept in $OUT/logs/.
#
# Run from anywhere, as root the first time (missing Debian packages are installed with apt):
#   benchmarks/run_http_bench.sh                       # ~9.5 min with the defaults
#   RUNS=1 SECS=2 WARM_SECS=1 WARM_JVM_SECS=4 benchmarks/run_http_bench.sh   # ~70 s smoke run
#   PEERS="trellis asio" CASES=post benchmarks/run_http_bench.sh
# Knobs (environment): RUNS=3 SECS=10 CONNS=50 DEPTH=16 WARM_SECS=3 WARM_JVM_SECS=15
#   PEERS="trellis netty beast asio nginx" CASES="plaintext pipelined post" SERVER_CPU=0
#   CLIENT_CPU=1 BUILD=build/release OUT=build/http-bench JAVA_OPTS= SKIP_APT=1 (no apt at all)
#   BASE_BUILD= (the build directory of the base peer)
#   PEER_CXXFLAGS="-O3 -DNDEBUG -flto=auto" (the C++ peers' flags: those of trellis's Release build)
#   REBUILD=1 (rebuild http_echo_server even when it exists; by default it is built only if
#   missing: configured like `scripts/build.sh release` if $BUILD is not configured yet)
# Ports: trellis 18180, netty 18181, beast 18182, asio 18183, nginx 18184 (127.0.0.1 only).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
PEER_SRC="$ROOT/benchmarks/peers"

RUNS=${RUNS:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
DEPTH=${DEPTH:-16}
WARM_SECS=${WARM_SECS:-3}
WARM_JVM_SECS=${WARM_JVM_SECS:-15}
PEERS=${PEERS:-trellis netty beast asio nginx}
CASES=${CASES:-plaintext pipelined post}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BUILD=${BUILD:-build/release}
OUT=${OUT:-build/http-bench}
JAVA_OPTS=${JAVA_OPTS:-}
SKIP_APT=${SKIP_APT:-}
REBUILD=${REBUILD:-}
BASE_BUILD=${BASE_BUILD:-}
PEER_CXXFLAGS=${PEER_CXXFLAGS:--O3 -DNDEBUG -flto=auto}

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$(cd "$(dirname "$BUILD")" 2>/dev/null && pwd)/$(basename "$BUILD")"
LOGS="$OUT/logs"
RUN_DIR="$OUT/run"
mkdir -p "$LOGS" "$RUN_DIR"

declare -A PORT=([trellis]=18180 [netty]=18181 [beast]=18182 [asio]=18183 [nginx]=18184
                 [base]=18185)
declare -A NOTE=([trellis]="echoes body" [base]="echoes body" [netty]="reads body, answers hello"
                 [beast]="reads body, answers hello" [asio]="echoes body"
                 [nginx]="discards body, answers hello")

log() { printf '%s\n' "$*"; }
die() { printf 'run_http_bench.sh: %s\n' "$*" >&2; exit 1; }

for p in $PEERS; do [ -n "${PORT[$p]:-}" ] || die "unknown peer '$p' (known: ${!PORT[*]})"; done
for c in $CASES; do
  case $c in plaintext | pipelined | post) ;; *) die "unknown case '$c' (plaintext pipelined post)" ;; esac
done
has_peer() { [[ " $PEERS " == *" $1 "* ]]; }

# ------------------------------------------------------------------ packages
pkg_ok() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }
has_candidate() { apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; }

ADDED_POLICY=
remove_policy() {
  if [ -n "$ADDED_POLICY" ]; then rm -f /usr/sbin/policy-rc.d; ADDED_POLICY=; fi
}

install_packages() {
  # Each entry: alternatives separated by '|'; satisfied when one is installed, else the first
  # one apt has a candidate for is installed.
  local wanted=("wrk" "util-linux" "procps" "curl")
  has_peer netty && wanted+=("openjdk-17-jdk-headless" "libnetty-java")
  has_peer beast && wanted+=("libboost1.81-dev|libboost-dev" "g++")
  has_peer asio && wanted+=("libasio-dev" "g++")
  has_peer nginx && wanted+=("nginx-light|nginx")
  local missing=() entry alt ok
  for entry in "${wanted[@]}"; do
    ok=
    for alt in ${entry//|/ }; do pkg_ok "$alt" && { ok=1; break; }; done
    [ -n "$ok" ] || missing+=("$entry")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -n "$SKIP_APT" ]; then
    log "SKIP_APT set: not installing ${missing[*]}"
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}): run as root once, or install them"
  export DEBIAN_FRONTEND=noninteractive
  # Installing nginx must not start the system service (it would take :80): deny service
  # starts for the length of the install unless a policy-rc.d is already there.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    ADDED_POLICY=1
  fi
  log "== apt-get update"
  apt-get update -q >"$LOGS/apt-update.log" 2>&1 || { remove_policy; die "apt-get update failed (see $LOGS/apt-update.log)"; }
  local pkgs=() pick
  for entry in "${missing[@]}"; do
    pick=
    for alt in ${entry//|/ }; do has_candidate "$alt" && { pick=$alt; break; }; done
    pkgs+=("${pick:-${entry%%|*}}")
  done
  log "== apt-get install --no-install-recommends ${pkgs[*]}"
  apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$LOGS/apt-install.log" 2>&1
  local rc=$?
  remove_policy
  [ $rc -eq 0 ] || die "apt-get install failed (see $LOGS/apt-install.log)"
}

# ------------------------------------------------------------------ build
NETTY_CP=
build_all() {
  local jobs=()
  if has_peer trellis && { [ -n "$REBUILD" ] || [ ! -x "$BUILD/examples/http_echo_server" ]; }; then
    if [ -f "$BUILD/build.ninja" ] || [ -f "$BUILD/Makefile" ]; then
      log "== cmake --build $BUILD --target http_echo_server -j2"
      cmake --build "$BUILD" --target http_echo_server -j2 >"$LOGS/build-trellis.log" 2>&1 ||
        die "building http_echo_server failed (see $LOGS/build-trellis.log)"
    else  # configure like scripts/build.sh release
      local gen=()
      [ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null && gen=(-G Ninja)
      log "== configuring $BUILD (Release) and building http_echo_server"
      { cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTRELLIS_SANITIZE= &&
        cmake --build "$BUILD" --target http_echo_server -j2; } >"$LOGS/build-trellis.log" 2>&1 ||
        die "building http_echo_server failed (see $LOGS/build-trellis.log)"
    fi
  fi
  if has_peer trellis; then
    [ -x "$BUILD/examples/http_echo_server" ] || die "$BUILD/examples/http_echo_server missing"
  fi
  if has_peer base; then
    [ -x "$BASE_BUILD/examples/http_echo_server" ] ||
      die "peer base: $BASE_BUILD/examples/http_echo_server missing (set BASE_BUILD)"
  fi
  # The C++ peers get the flags of trellis's Release build (CMake's Release -O3 -DNDEBUG, and
  # link-time optimisation as TRELLIS_LTO gives the example programs); a change of flags
  # rebuilds them.
  local cxx=(g++ $PEER_CXXFLAGS -std=c++20 -Wall -Wextra)
  if [ "$(cat "$OUT/peer-cxxflags" 2>/dev/null)" != "$PEER_CXXFLAGS" ]; then
    rm -f "$OUT/beast_http" "$OUT/asio_http"
    echo "$PEER_CXXFLAGS" >"$OUT/peer-cxxflags"
  fi
  if has_peer beast && [ "$PEER_SRC/beast_http.cpp" -nt "$OUT/beast_http" ]; then
    log "== ${cxx[*]} -o $OUT/beast_http benchmarks/peers/beast_http.cpp -pthread (background)"
    "${cxx[@]}" -o "$OUT/beast_http" "$PEER_SRC/beast_http.cpp" -pthread >"$LOGS/build-beast.log" 2>&1 &
    jobs+=($!)
  fi
  if has_peer asio && [ "$PEER_SRC/asio_http.cpp" -nt "$OUT/asio_http" ]; then
    log "== ${cxx[*]} -DASIO_STANDALONE -o $OUT/asio_http benchmarks/peers/asio_http.cpp -pthread"
    "${cxx[@]}" -DASIO_STANDALONE -o "$OUT/asio_http" "$PEER_SRC/asio_http.cpp" -pthread \
      >"$LOGS/build-asio.log" 2>&1 || die "building asio_http failed (see $LOGS/build-asio.log)"
  fi
  if has_peer netty; then
    local j=/usr/share/java jar
    for jar in netty-common netty-buffer netty-transport netty-codec netty-codec-http netty-handler \
               netty-resolver; do
      [ -f "$j/$jar.jar" ] || die "$j/$jar.jar missing (libnetty-java not installed?)"
      NETTY_CP="${NETTY_CP:+$NETTY_CP:}$j/$jar.jar"
    done
    for jar in "$j"/netty-transport-native-*.jar; do  # the unversioned names only
      [ -e "$jar" ] || continue
      [[ "$(basename "$jar")" =~ -[0-9][0-9.]*(\.Final)?\.jar$ ]] && continue
      NETTY_CP="$NETTY_CP:$jar"
    done
    if [ "$PEER_SRC/HttpHello.java" -nt "$OUT/java/HttpHello.class" ]; then
      log "== javac -d $OUT/java -cp <netty jars> benchmarks/peers/HttpHello.java"
      mkdir -p "$OUT/java"
      javac -d "$OUT/java" -cp "$NETTY_CP" "$PEER_SRC/HttpHello.java" >"$LOGS/build-netty.log" 2>&1 ||
        die "javac HttpHello failed (see $LOGS/build-netty.log)"
    fi
  fi
  local job
  for job in "${jobs[@]}"; do
    wait "$job" || die "building beast_http failed (see $LOGS/build-beast.log)"
  done
}

# ------------------------------------------------------------------ servers
declare -A PID=() CPU_PIDS=() START_TIME=()
STARTED=()

# shellcheck disable=SC2206  # JAVA_OPTS is split into words on purpose
server_cmd() {  # peer -> the array CMD
  case $1 in
    trellis) CMD=("$BUILD/examples/http_echo_server" --host 127.0.0.1 --port "${PORT[trellis]}" --threads 1) ;;
    base) CMD=("$BASE_BUILD/examples/http_echo_server" --host 127.0.0.1 --port "${PORT[base]}" --threads 1) ;;
    netty) CMD=(java $JAVA_OPTS -cp "$OUT/java:$NETTY_CP" HttpHello "${PORT[netty]}") ;;
    beast) CMD=("$OUT/beast_http" "${PORT[beast]}") ;;
    asio) CMD=("$OUT/asio_http" "${PORT[asio]}") ;;
    nginx) CMD=(nginx -p "$RUN_DIR/nginx/" -c "$PEER_SRC/nginx.conf" -e "$RUN_DIR/nginx/error.log") ;;
  esac
}

start_time() { awk '$3 != "Z" {print $22}' "/proc/$1/stat" 2>/dev/null; }  # to recognise our PIDs later
ours() { [ -n "$2" ] && [ "$(start_time "$1")" = "$2" ]; }  # pid start_time: alive and the same process

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_server() {  # peer
  local name=$1 port=${PORT[$1]} pid i
  port_open "$port" && die "port $port is already in use: not starting $name (free it first)"
  server_cmd "$name"
  [ "$name" = nginx ] && { mkdir -p "$RUN_DIR/nginx/tmp"; rm -f "$RUN_DIR/nginx/nginx.pid"; }
  log "+ taskset -c $SERVER_CPU ${CMD[*]}" | tee -a "$OUT/commands.txt"
  taskset -c "$SERVER_CPU" "${CMD[@]}" >"$LOGS/server-$name.log" 2>&1 &
  pid=$!
  PID[$name]=$pid
  START_TIME[$pid]=$(start_time "$pid")
  STARTED+=("$name")
  for ((i = 0; i < 300; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$LOGS/server-$name.log" >&2
      grep -q 'in use' "$LOGS/server-$name.log" &&
        echo "(a server that does not set SO_REUSEADDR cannot bind while connections it closed are in TIME_WAIT; wait 60 s)" >&2
      die "$name exited during start-up"
    fi
    port_open "$port" && break
    sleep 0.1
  done
  port_open "$port" || die "$name does not listen on $port after 30 s"
  CPU_PIDS[$name]=$pid
  if [ "$name" = nginx ]; then  # the workers do the work: the master's children
    sleep 0.3
    CPU_PIDS[$name]=$(cat /proc/"$pid"/task/*/children 2>/dev/null | xargs)
    [ -n "${CPU_PIDS[$name]}" ] || die "nginx: no worker process found under master $pid"
    for i in ${CPU_PIDS[$name]}; do START_TIME[$i]=$(start_time "$i"); done
  fi
  log "  $name: pid $pid, CPU accounted from pid(s) ${CPU_PIDS[$name]}: $(head -n 1 "$LOGS/server-$name.log" | grep . || echo '(no output)')"
}

stop_one() {  # peer: SIGTERM by PID, SIGKILL after 5 s; then nginx workers left behind
  local name=$1 pid=${PID[$1]:-} k i
  [ -n "$pid" ] || return 0
  local st=${START_TIME[$pid]:-}
  if ours "$pid" "$st"; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do ours "$pid" "$st" || break; sleep 0.1; done
    if ours "$pid" "$st"; then log "  $name: SIGKILL $pid"; kill -KILL "$pid" 2>/dev/null; fi
  fi
  wait "$pid" 2>/dev/null
  if [ "$name" = nginx ]; then  # workers normally exit with the master
    for k in ${CPU_PIDS[$name]:-}; do
      for ((i = 0; i < 50; i++)); do ours "$k" "${START_TIME[$k]:-}" || break; sleep 0.1; done
      if ours "$k" "${START_TIME[$k]:-}"; then log "  nginx worker: SIGKILL $k"; kill -KILL "$k" 2>/dev/null; fi
    done
  fi
  PID[$name]=
}

cleanup() {
  local n
  remove_policy
  for n in "${STARTED[@]}"; do stop_one "$n"; done
}
trap cleanup EXIT
trap 'log "run_http_bench.sh: interrupted" >&2; exit 130' INT TERM

CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() {  # pids... -> utime+stime summed (fields 14 and 15; the name field has no spaces here)
  local p sum=0 t
  for p in "$@"; do
    t=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null) || t=0
    sum=$((sum + ${t:-0}))
  done
  echo "$sum"
}
# shellcheck disable=SC2086  # a list of PIDs
server_ticks() { cpu_ticks ${CPU_PIDS[$1]}; }

# ------------------------------------------------------------------ wrk
url_of() {  # peer case
  case $2 in
    post) echo "http://127.0.0.1:${PORT[$1]}/echo" ;;
    *) echo "http://127.0.0.1:${PORT[$1]}/plaintext" ;;
  esac
}
wrk_cmd() {  # peer case secs [--latency] -> the array WRK
  local extra=()
  case $2 in
    pipelined) extra=(-s "$PEER_SRC/pipeline.lua") ;;
    post) extra=(-s "$PEER_SRC/post.lua") ;;
  esac
  WRK=(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$3s" ${4:+"$4"} "${extra[@]}" "$(url_of "$1" "$2")")
  [ "$2" = pipelined ] && WRK+=(-- "$DEPTH")
}

wrk_parse() {  # file -> "rps requests p50_us p99_us socket_errors non2xx"
  awk '
    function us(s,   v) { v = s + 0
      if (s ~ /us$/) return v; if (s ~ /ms$/) return v * 1000; if (s ~ /m$/) return v * 60e6
      if (s ~ /s$/) return v * 1e6; return v }
    /^Requests\/sec:/ { rps = $2 }
    / requests in / { reqs = $1 }
    $1 == "50%" { p50 = us($2) }
    $1 == "99%" { p99 = us($2) }
    /Non-2xx or 3xx responses:/ { non2xx += $NF }
    /Socket errors:/ { for (i = 3; i <= NF; i++) { v = $i; gsub(",", "", v); if (v ~ /^[0-9]+$/) sock += v } }
    END { printf "%s %s %s %s %d %d\n", (rps == "" ? "NA" : rps), (reqs == "" ? "NA" : reqs),
                 (p50 == "" ? "NA" : p50), (p99 == "" ? "NA" : p99), sock, non2xx }' "$1"
}

RAW="$OUT/raw.tsv"
run_one() {  # round case peer
  local r=$1 c=$2 p=$3 f="$LOGS/wrk-$2-$3-r$1.txt" t0 t1 w0 w1
  wrk_cmd "$p" "$c" "$SECS" --latency
  t0=$(server_ticks "$p"); w0=$(date +%s.%N)
  "${WRK[@]}" >"$f" 2>&1
  w1=$(date +%s.%N); t1=$(server_ticks "$p")
  local rps reqs p50 p99 sock non2xx
  read -r rps reqs p50 p99 sock non2xx <<<"$(wrk_parse "$f")"
  local cpu
  cpu=$(awk -v dt=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$reqs" -v w0="$w0" -v w1="$w1" 'BEGIN {
    s = dt / hz; printf "%.1f %.1f %s", s * 1000, 100 * s / (w1 - w0),
      ((n + 0 > 0) ? sprintf("%.2f", s * 1e6 / n) : "NA") }')
  local cpu_ms cpu_pct us_req
  read -r cpu_ms cpu_pct us_req <<<"$cpu"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$c" "$p" "$rps" "$reqs" "$p50" "$p99" \
    "$sock" "$non2xx" "$cpu_ms" "$cpu_pct" "$us_req" >>"$RAW"
  printf '  r%s %-9s %-7s %10s req/s  p50 %7s us  p99 %8s us  sock-err %s non-2xx %s  srv CPU %5s%%  %6s us/req\n' \
    "$r" "$c" "$p" "$rps" "$p50" "$p99" "$sock" "$non2xx" "$cpu_pct" "$us_req"
}

# ------------------------------------------------------------------ main
install_packages
for tool in wrk taskset curl; do command -v "$tool" >/dev/null || die "$tool not found"; done
has_peer netty && { command -v javac >/dev/null || die "javac not found"; }
has_peer nginx && { command -v nginx >/dev/null || die "nginx not found"; }
build_all

{
  echo "date_utc: $(date -u '+%Y-%m-%d %H:%M:%S')"
  echo "kernel: $(uname -srm)"
  echo "cpu: $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo) x $(nproc)"
  has_peer netty && echo "java: $(java -version 2>&1 | head -n 1), netty: $(dpkg-query -W -f '${Version}' libnetty-java 2>/dev/null)"
  has_peer beast && echo "boost: $(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp)"
  echo "asio: $(sed -n 's/^#define ASIO_VERSION \([0-9]*\).*/\1/p' /usr/include/asio/version.hpp 2>/dev/null)"
  echo "gcc: $(g++ --version 2>/dev/null | head -n 1)"
  echo "flags: trellis CMake Release (-O3 -DNDEBUG, LTO: -flto=auto), C++ peers $PEER_CXXFLAGS"
  has_peer nginx && echo "nginx: $(nginx -v 2>&1)"
  echo "wrk: $(wrk -v 2>&1 | head -n 1)"
  echo "pinning: servers taskset -c $SERVER_CPU, wrk taskset -c $CLIENT_CPU"
  echo "params: RUNS=$RUNS SECS=$SECS CONNS=$CONNS DEPTH=$DEPTH WARM_SECS=$WARM_SECS WARM_JVM_SECS=$WARM_JVM_SECS PEERS='$PEERS' CASES='$CASES' JAVA_OPTS='$JAVA_OPTS'"
} | tee "$OUT/env.txt"
: >"$OUT/commands.txt"
T0=$(date +%s)

log "== starting servers"
for p in $PEERS; do start_server "$p"; done

# Two pipelined GET /plaintext in one write, both answers read by Content-Length; the client
# closes first, so no TIME_WAIT is left on the server's port. Prints "STATUS BODY" per answer.
pipelined_check() {  # port
  (
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf 'GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&3
    shopt -s nocasematch
    for _ in 1 2; do
      IFS= read -r -t 2 status <&3 || exit 1
      len=0
      while IFS= read -r -t 2 field <&3; do
        field=${field%$'\r'}
        [ -z "$field" ] && break
        [[ "$field" == content-length:* ]] && len=${field#*:}
      done
      body=
      (( len > 0 )) && { IFS= read -r -t 2 -N "$((len))" body <&3 || exit 1; }
      echo "${status%$'\r'} $body"
    done
  )
}

log "== smoke tests"
: >"$OUT/responses.txt"
for p in $PEERS; do
  resp=$(curl -s -i --max-time 5 "$(url_of "$p" plaintext)")
  printf '== %s GET /plaintext\n%s\n\n' "$p" "$resp" >>"$OUT/responses.txt"
  code=$(printf '%s' "$resp" | head -n 1 | tr -d '\r')
  body=$(printf '%s' "$resp" | tail -n 1)
  [[ "$code" == "HTTP/1.1 200"* && "$body" == "Hello, World!" ]] ||
    die "$p: unexpected answer to GET /plaintext: '$code' '$body' (see $OUT/responses.txt)"
  line="  $p: GET /plaintext -> '$code' '$body' ($(printf '%s' "$resp" | wc -c) B)"
  if [[ " $CASES " == *" post "* ]]; then
    resp=$(curl -s -i --max-time 5 -H 'Expect:' -H 'Content-Type: text/plain' --data-binary 'ping' \
      "$(url_of "$p" post)")
    printf '== %s POST /echo (body "ping")\n%s\n\n' "$p" "$resp" >>"$OUT/responses.txt"
    code=$(printf '%s' "$resp" | head -n 1 | tr -d '\r')
    body=$(printf '%s' "$resp" | tail -n 1)
    [[ "$code" == "HTTP/1.1 200"* ]] || die "$p: unexpected answer to POST /echo: '$code' (see $OUT/responses.txt)"
    line="$line; POST /echo -> '$code' '$body'"
  fi
  if [[ " $CASES " == *" pipelined "* ]]; then
    n=$(pipelined_check "${PORT[$p]}" | tee -a "$OUT/responses.txt" | grep -c '^HTTP/1.1 200 .*Hello, World!$')
    [ "${n:-0}" -eq 2 ] || die "$p: ${n:-0} good answers to 2 pipelined GET /plaintext (see $OUT/responses.txt)"
    line="$line; 2 pipelined GETs -> 2 x 200"
  fi
  log "$line"
done

log "== warm-up (discarded): every case, ${WARM_JVM_SECS}s each for the JVM, ${WARM_SECS}s for the others"
for p in $PEERS; do
  w=$WARM_SECS; [ "$p" = netty ] && w=$WARM_JVM_SECS
  msg="  $p:"
  for c in $CASES; do
    wrk_cmd "$p" "$c" "$w"
    "${WRK[@]}" >"$LOGS/warmup-$c-$p.txt" 2>&1
    msg="$msg $c $(awk '/^Requests\/sec:/{printf "%.0f", $2}' "$LOGS/warmup-$c-$p.txt") req/s;"
  done
  log "$msg"
done

printf 'round\tcase\tpeer\treq_per_s\trequests\tp50_us\tp99_us\tsocket_errors\tnon2xx\tsrv_cpu_ms\tsrv_cpu_pct\tsrv_cpu_us_per_req\n' >"$RAW"
for c in $CASES; do
  wrk_cmd "${PEERS%% *}" "$c" "$SECS" --latency
  echo "${WRK[*]}" | sed -E "s#127.0.0.1:[0-9]+#127.0.0.1:PORT#" >>"$OUT/commands.txt"
done
log "== measuring: $RUNS interleaved rounds x (${CASES}) x (${PEERS}), ${SECS}s each"
# The peer order changes from round to round (see peer_order.sh).
# shellcheck source=benchmarks/peer_order.sh
source "$ROOT/benchmarks/peer_order.sh"
for ((r = 1; r <= RUNS; r++)); do
  for c in $CASES; do
    for p in $(rotated $((r - 1)) $PEERS); do run_one "$r" "$c" "$p"; done
  done
done

for p in $PEERS; do  # memory of the server processes after all runs
  for k in ${CPU_PIDS[$p]}; do
    printf '%s\tpid=%s\tVmRSS_kB=%s\tthreads=%s\n' "$p" "$k" "$(awk '/^VmRSS:/{print $2}' /proc/"$k"/status 2>/dev/null)" \
      "$(awk '/^Threads:/{print $2}' /proc/"$k"/status 2>/dev/null)"
  done
done >"$OUT/memory.tsv"

log "== stopping servers"
cleanup
trap - EXIT
T1=$(date +%s)

# ------------------------------------------------------------------ summary
median() {  # case peer column -> median over the rounds (NA if none)
  awk -F'\t' -v c="$1" -v p="$2" -v col="$3" 'NR > 1 && $2 == c && $3 == p && $col != "NA" { print $col }' "$RAW" |
    sort -g | awk '{ a[NR] = $1 } END { if (!NR) { print "NA"; exit }
      print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
errors() {  # case peer -> socket errors + non-2xx over all rounds
  awk -F'\t' -v c="$1" -v p="$2" 'NR > 1 && $2 == c && $3 == p { s += $8 + $9 } END { print s + 0 }' "$RAW"
}
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "NA" || v == "") print "NA"; else printf f, v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b + 0 == 0) print "NA"; else printf "%.2f", a / b }'; }
case_desc() {
  case $1 in
    plaintext) echo "GET /plaintext, one request in flight per connection" ;;
    pipelined) echo "GET /plaintext, $DEPTH pipelined requests per write (pipeline.lua)" ;;
    post) echo "POST /echo with a 1 KiB body (post.lua)" ;;
  esac
}

declare -A MED_RPS=() MED_CPU=()
{
  echo "### HTTP benchmark $(date -u '+%Y-%m-%d %H:%M') UTC"
  echo
  echo "Servers pinned with \`taskset -c $SERVER_CPU\` (started once, kept running), wrk with \`taskset -c $CLIENT_CPU\`:"
  echo "\`wrk -t1 -c$CONNS -d${SECS}s --latency\`. $RUNS interleaved round(s), median shown. srv CPU us/req ="
  echo "server process CPU time (utime+stime; nginx: its worker) / requests; srv CPU % = of one core during the run."
  echo "mean us = connections x requests in flight per connection / req/s (Little's law; pipelined: the round trip"
  echo "of a batch of $DEPTH). Pipelined p50/p99 are n/a: wrk 4.1 records one latency per batch but corrects them with"
  echo "the per-request interval, which wrecks its percentiles (wg/wrk#236); raw.tsv keeps what wrk printed."
  echo "errors = wrk socket errors + non-2xx responses over all rounds. Raw data: $RAW"
  echo
  for c in $CASES; do
    echo "**$c**: $(case_desc "$c")"
    echo
    depth=1; [ "$c" = pipelined ] && depth=$DEPTH
    echo "| peer | req/s | p50 us | p99 us | mean us | srv CPU % | srv CPU us/req | errors | note |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for p in $PEERS; do
      MED_RPS[$c,$p]=$(median "$c" "$p" 4)
      MED_CPU[$c,$p]=$(median "$c" "$p" 12)
      note=
      [ "$c" = post ] && note=${NOTE[$p]}
      [ "$p" = asio ] && note="floor${note:+; $note}"
      if [ "$c" = pipelined ]; then
        p50=n/a; p99=n/a
      else
        p50=$(fmt "$(median "$c" "$p" 6)" '%.0f'); p99=$(fmt "$(median "$c" "$p" 7)" '%.0f')
      fi
      mean=$(awk -v r="${MED_RPS[$c,$p]}" -v n=$((CONNS * depth)) 'BEGIN {
        if (r == "NA" || r + 0 == 0) print "NA"; else printf "%.0f", n * 1e6 / r }')
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$p" "$(fmt "${MED_RPS[$c,$p]}" '%.0f')" \
        "$p50" "$p99" "$mean" "$(fmt "$(median "$c" "$p" 11)" '%.1f')" "$(fmt "${MED_CPU[$c,$p]}" '%.2f')" \
        "$(errors "$c" "$p")" "$note"
    done
    echo
  done
  if has_peer trellis && { has_peer netty || has_peer asio; }; then
    echo "**Ratios** (of the medians; CPU/req below 1 = trellis is cheaper, req/s above 1 = trellis is faster)"
    echo
    echo "| case | trellis/netty req/s | trellis/netty CPU/req | trellis/asio req/s | trellis/asio CPU/req |"
    echo "|---|---|---|---|---|"
    for c in $CASES; do
      printf '| %s | %s | %s | %s | %s |\n' "$c" \
        "$(ratio "${MED_RPS[$c,trellis]}" "${MED_RPS[$c,netty]:-NA}")" "$(ratio "${MED_CPU[$c,trellis]}" "${MED_CPU[$c,netty]:-NA}")" \
        "$(ratio "${MED_RPS[$c,trellis]}" "${MED_RPS[$c,asio]:-NA}")" "$(ratio "${MED_CPU[$c,trellis]}" "${MED_CPU[$c,asio]:-NA}")"
    done
    echo
  fi
  if has_peer trellis && has_peer base; then
    echo "**trellis against base** ($BASE_BUILD; CPU/req below 1 = trellis is cheaper)"
    echo
    echo "| case | trellis/base req/s | trellis/base CPU/req |"
    echo "|---|---|---|"
    for c in $CASES; do
      printf '| %s | %s | %s |\n' "$c" "$(ratio "${MED_RPS[$c,trellis]}" "${MED_RPS[$c,base]}")" \
        "$(ratio "${MED_CPU[$c,trellis]}" "${MED_CPU[$c,base]}")"
    done
    echo
  fi
  echo "Wall time: $((T1 - T0)) s (warm-up included)."
} >"$OUT/summary.md"
echo
cat "$OUT/summary.md"
