#!/usr/bin/env bash
# Static file serving over loopback: trellis's examples/file_server (FileRegion, sendfile)
# against nginx (benchmarks/peers/nginx_file.conf: sendfile on, 1 worker, access_log off).
#
# Both serve the same directory, $OUT/run/www, holding a 1 MB and a 100 MB file of random
# bytes. Each server is started once, pinned to CPU $SERVER_CPU; wrk (-t1 -c$CONNS, pinned to
# CPU $CLIENT_CPU) GETs one file for $SECS s per run, with benchmarks/peers/bytes.lua reporting
# the bytes received. After a smoke check (curl, bytes compared) and a discarded warm-up, $RUNS
# interleaved rounds (round -> file -> server, the server order alternating) record MB/s and
# the server's CPU time (utime+stime of /proc/PID/stat; nginx: its worker) per MB. Results:
# $OUT/raw.tsv and $OUT/summary.md (medians and trellis/nginx ratios), also printed.
#
# Run from the repository, as root the first time (nginx-light is installed with apt, without
# starting its service):
#   benchmarks/run_file_bench.sh                          # ~2 min with the defaults
#   RUNS=1 SECS=2 benchmarks/run_file_bench.sh            # smoke run
# Knobs: RUNS=5 SECS=5 CONNS=4 WARM_SECS=2 FILES="1m 100m" SERVER_CPU=0 CLIENT_CPU=1
#   BUILD=build/release (file_server is built there if missing; configured like
#   scripts/build.sh release when not yet) OUT=build/file-bench SKIP_APT=1 (no apt at all)
# Ports: trellis 18190, nginx 18194 (127.0.0.1 only).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1

RUNS=${RUNS:-5}
SECS=${SECS:-5}
CONNS=${CONNS:-4}
WARM_SECS=${WARM_SECS:-2}
FILES=${FILES:-1m 100m}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BUILD=${BUILD:-build/release}
OUT=${OUT:-build/file-bench}
SKIP_APT=${SKIP_APT:-}

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BUILD="$(cd "$(dirname "$BUILD")" 2>/dev/null && pwd)/$(basename "$BUILD")"
LOGS="$OUT/logs"
RUN_DIR="$OUT/run"
WWW="$RUN_DIR/www"
mkdir -p "$LOGS" "$RUN_DIR/tmp" "$WWW"

declare -A PORT=([trellis]=18190 [nginx]=18194)
declare -A SIZE_MB=([1m]=1 [100m]=100)
log() { printf '%s\n' "$*"; }
die() { printf 'run_file_bench.sh: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ packages
pkg_ok() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }
if ! command -v nginx >/dev/null || ! command -v wrk >/dev/null || ! command -v taskset >/dev/null; then
  [ -n "$SKIP_APT" ] && die "nginx, wrk or taskset missing and SKIP_APT set"
  [ "$(id -u)" -eq 0 ] || die "nginx-light, wrk or util-linux missing: run as root once"
  export DEBIAN_FRONTEND=noninteractive
  # Installing nginx must not start the system service (it would take :80): deny service
  # starts for the length of the install unless a policy-rc.d is already there.
  ADDED_POLICY=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    ADDED_POLICY=1
  fi
  log "== apt-get update && apt-get install --no-install-recommends nginx-light wrk util-linux curl"
  { apt-get update -q && apt-get install -y -q --no-install-recommends nginx-light wrk util-linux curl; } \
    >"$LOGS/apt.log" 2>&1
  rc=$?
  [ -n "$ADDED_POLICY" ] && rm -f /usr/sbin/policy-rc.d
  [ $rc -eq 0 ] || die "apt-get failed (see $LOGS/apt.log)"
fi

# ------------------------------------------------------------------ build and files
if [ ! -x "$BUILD/examples/file_server" ]; then
  if [ -f "$BUILD/build.ninja" ] || [ -f "$BUILD/Makefile" ]; then
    log "== cmake --build $BUILD --target file_server -j1"
    cmake --build "$BUILD" --target file_server -j1 >"$LOGS/build.log" 2>&1 ||
      die "building file_server failed (see $LOGS/build.log)"
  else
    log "== configuring $BUILD (Release) and building file_server"
    { cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRELLIS_SANITIZE= &&
      cmake --build "$BUILD" --target file_server -j1; } >"$LOGS/build.log" 2>&1 ||
      die "building file_server failed (see $LOGS/build.log)"
  fi
fi
for f in $FILES; do
  [ -n "${SIZE_MB[$f]:-}" ] || die "unknown file '$f' (1m 100m)"
  if [ "$(stat -c %s "$WWW/$f.bin" 2>/dev/null)" != "$((SIZE_MB[$f] << 20))" ]; then
    head -c "$((SIZE_MB[$f] << 20))" /dev/urandom >"$WWW/$f.bin"
  fi
done

# ------------------------------------------------------------------ servers
declare -A PID CPU_PID
start_server() {
  local name=$1 cmd
  if [ "$name" = trellis ]; then
    cmd=("$BUILD/examples/file_server" --root "$WWW" --port "${PORT[trellis]}" --threads 1)
  else
    cmd=(nginx -p "$RUN_DIR/" -c "$ROOT/benchmarks/peers/nginx_file.conf" -e "$RUN_DIR/error.log")
  fi
  log "+ taskset -c $SERVER_CPU ${cmd[*]}" | tee -a "$OUT/commands.txt"
  taskset -c "$SERVER_CPU" "${cmd[@]}" >"$LOGS/server-$name.log" 2>&1 &
  PID[$name]=$!
  CPU_PID[$name]=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:${PORT[$name]}/" && break
    sleep 0.1
  done
  if [ "$name" = nginx ]; then  # the worker does the work
    CPU_PID[$name]=$(pgrep -P "${PID[nginx]}" | head -1)
    [ -n "${CPU_PID[nginx]}" ] || die "no nginx worker (see $RUN_DIR/error.log)"
  fi
}
stop_servers() {
  for name in "${!PID[@]}"; do kill "${PID[$name]}" 2>/dev/null; done
  for name in "${!PID[@]}"; do wait "${PID[$name]}" 2>/dev/null; done
}
trap stop_servers EXIT

CLK_TCK=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_server trellis
start_server nginx
for name in trellis nginx; do
  for f in $FILES; do
    cmp -s <(curl -s "http://127.0.0.1:${PORT[$name]}/$f.bin") "$WWW/$f.bin" ||
      die "smoke check: $name does not serve $f.bin intact"
  done
done
log "smoke check: both servers serve every file intact"

# One run: prints "MB/s cpu_ms_per_MB".
run_one() {
  local name=$1 f=$2 secs=$3 t0 t1 line bytes dur errors
  t0=$(ticks "${CPU_PID[$name]}")
  # --timeout: a 100 MB answer shared by $CONNS connections takes seconds (wrk's default is 2 s).
  line=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${secs}s" --timeout 60s -s benchmarks/peers/bytes.lua \
           "http://127.0.0.1:${PORT[$name]}/$f.bin" 2>&1 | tee -a "$LOGS/wrk-$name-$f.log" |
         grep '^result')
  t1=$(ticks "${CPU_PID[$name]}")
  bytes=$(sed 's/.*bytes=\([0-9]*\).*/\1/' <<<"$line")
  dur=$(sed 's/.*duration_us=\([0-9]*\).*/\1/' <<<"$line")
  errors=$(sed 's/.*errors=\([0-9]*\).*/\1/' <<<"$line")
  [ "${errors:-1}" = 0 ] || log "warning: $name $f: $line" >&2
  awk -v b="$bytes" -v d="$dur" -v dt=$((t1 - t0)) -v hz="$CLK_TCK" 'BEGIN {
    mb = b / 1048576; printf "%.1f %.4f\n", mb / (d / 1e6), (dt * 1000 / hz) / mb }'
}

log "== warm-up (${WARM_SECS}s per server and file, discarded)"
for f in $FILES; do for name in trellis nginx; do run_one "$name" "$f" "$WARM_SECS" >/dev/null; done; done

printf 'round\tfile\tserver\tMBps\tcpu_ms_per_MB\n' >"$OUT/raw.tsv"
for round in $(seq "$RUNS"); do
  order="trellis nginx"
  [ $((round % 2)) -eq 0 ] && order="nginx trellis"
  for f in $FILES; do
    for name in $order; do
      read -r mbps cpu < <(run_one "$name" "$f" "$SECS")
      printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$f" "$name" "$mbps" "$cpu" | tee -a "$OUT/raw.tsv"
    done
  done
done

# ------------------------------------------------------------------ summary
{
  echo "| file | trellis MB/s | nginx MB/s | MB/s ratio | trellis CPU ms/MB | nginx CPU ms/MB | CPU ratio |"
  echo "|---|---|---|---|---|---|---|"
  for f in $FILES; do
    median() {  # server column -> median
      awk -F'\t' -v f="$f" -v s="$1" -v c="$2" '$2 == f && $3 == s {print $c}' "$OUT/raw.tsv" |
        sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
    }
    tm=$(median trellis 4); nm=$(median nginx 4); tc=$(median trellis 5); nc=$(median nginx 5)
    awk -v f="$f" -v tm="$tm" -v nm="$nm" -v tc="$tc" -v nc="$nc" 'BEGIN {
      printf "| %s | %.0f | %.0f | %.2f | %.3f | %.3f | %.2f |\n", f, tm, nm, tm / nm, tc, nc, tc / nc }'
  done
  echo
  echo "medians of $RUNS rounds; wrk -t1 -c$CONNS -d${SECS}s --timeout 60s; MB/s counts heads and bodies received, including answers in flight at the end; servers on CPU $SERVER_CPU, wrk on CPU $CLIENT_CPU"
} | tee "$OUT/summary.md"
