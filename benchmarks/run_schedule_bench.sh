#!/usr/bin/env bash
# Scheduling, trellis against Netty 4.1 on Netty's own benchmark shapes (ScheduleFutureTaskBenchmark):
# 100,000 no-op tasks scheduled i hours ahead per batch, from inside the loop (scheduleLots), from
# another thread (scheduleLotsOutsideLoop) and from another thread cancelling each at once
# (scheduleCancelLotsOutsideLoop). Netty: benchmarks/peers/ScheduleLots.java (Debian
# libnetty-java, one NIO loop, the JIT warmed with WARMUP batches per shape); trellis:
# bench_scheduling's ScheduleFutureTask_* benchmarks (one EventLoop). Both report medians over
# BATCHES batches, per schedule:
#   cpu_ns     CPU time spent scheduling: the loop thread's (in the loop), or the caller's plus the
#              loop's until the loop has taken in every task (outside it)
#   caller_ns  CPU time of the thread calling schedule() (what Netty's JMH benchmark times)
#   wall_ns    wall time until the loop has taken in every task
# RUNS rounds run both peers (the order alternates from round to round); the summary holds the
# medians over the rounds and the ratios trellis/Netty.
#
#   benchmarks/run_schedule_bench.sh
#   RUNS=1 WARMUP=20 BATCHES=5 benchmarks/run_schedule_bench.sh     # a quick smoke run
#
# Knobs (environment): RUNS=5 WARMUP=200 BATCHES=30 (Netty's; trellis runs 30 after 5 warm-up
#   batches) NUM=100000 JAVA_OPTS= BUILD=build/release OUT=build/schedule-bench
#   BUILD_TRELLIS=1 (configure $BUILD as Release if needed and build bench_scheduling) JOBS=2
#   SKIP_APT=1 (install nothing: the JDK, libnetty-java and trellis's own build packages are
#   otherwise installed when missing, which needs root)
# Output: $OUT/summary.md (also printed), $OUT/raw.tsv (round, peer, shape, metric, value).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build/release}
OUT=${OUT:-build/schedule-bench}
RUNS=${RUNS:-5}
WARMUP=${WARMUP:-200}
BATCHES=${BATCHES:-30}
NUM=${NUM:-100000}
JAVA_OPTS=${JAVA_OPTS:-}
BUILD_TRELLIS=${BUILD_TRELLIS:-1}
JOBS=${JOBS:-2}
read -ra JOPTS <<<"$JAVA_OPTS"
SHAPES="scheduleLots scheduleLotsOutsideLoop scheduleCancelLotsOutsideLoop"
METRICS="cpu_ns caller_ns wall_ns"

log() { echo "[schedule-bench] $*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$OUT/logs" "$OUT/classes"
: >"$OUT/logs/build.log"

# --- packages -----------------------------------------------------------------------------------
SKIP_APT=${SKIP_APT:-}
pkg_ok() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }
if [ -z "$SKIP_APT" ]; then
  missing=()
  for pkg in openjdk-17-jdk-headless libnetty-java; do pkg_ok "$pkg" || missing+=("$pkg"); done
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}): run as root once, or install them"
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
      >"$OUT/logs/apt.log" 2>&1 || die "apt-get install failed, see $OUT/logs/apt.log"
  fi
  # trellis's own build packages (compiler, CMake, Asio, spdlog, Google Benchmark...).
  [ "$BUILD_TRELLIS" = 1 ] && { scripts/install-deps.sh >>"$OUT/logs/apt.log" 2>&1 ||
    die "scripts/install-deps.sh failed, see $OUT/logs/apt.log"; }
fi

# --- builds -------------------------------------------------------------------------------------
if [ "$BUILD_TRELLIS" = 1 ]; then
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    log "configuring $BUILD (Release)"
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >>"$OUT/logs/build.log" 2>&1 ||
      die "cmake configure failed, see $OUT/logs/build.log"
  fi
  log "building bench_scheduling in $BUILD"
  cmake --build "$BUILD" --target bench_scheduling -j"$JOBS" >>"$OUT/logs/build.log" 2>&1 ||
    die "building bench_scheduling failed, see $OUT/logs/build.log"
fi
BENCH=$BUILD/benchmarks/bench_scheduling
[ -x "$BENCH" ] || die "$BENCH missing (BUILD_TRELLIS=1 builds it)"

jars=(/usr/share/java/netty-{common,buffer,transport,resolver}.jar)
command -v javac >/dev/null || die "javac not found (openjdk-17-jdk-headless)"
ls "${jars[@]}" >/dev/null 2>&1 || die "Netty jars not found (libnetty-java)"
NETTY_CP=$(IFS=:; echo "${jars[*]}")
if [ ! -e "$OUT/classes/ScheduleLots.class" ] || [ benchmarks/peers/ScheduleLots.java -nt "$OUT/classes/ScheduleLots.class" ]; then
  log "building ScheduleLots.java"
  javac -cp "$NETTY_CP" -d "$OUT/classes" benchmarks/peers/ScheduleLots.java >>"$OUT/logs/build.log" 2>&1 ||
    die "javac ScheduleLots.java failed, see $OUT/logs/build.log"
fi

# --- runs ---------------------------------------------------------------------------------------
RAW=$OUT/raw.tsv
: >"$RAW"

run_netty() {  # round
  local logf="$OUT/logs/netty-r$1.log"
  java ${JOPTS[@]+"${JOPTS[@]}"} -cp "$OUT/classes:$NETTY_CP" ScheduleLots --num="$NUM" \
    --warmup="$WARMUP" --batches="$BATCHES" >"$logf" 2>&1 || die "Netty run $1 failed, see $logf"
  # RESULT shape=X cpu_ns=.. caller_ns=.. wall_ns=.. batches=..
  awk -v r="$1" '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      print r "\tnetty\t" v["shape"] "\tcpu_ns\t" v["cpu_ns"]
      print r "\tnetty\t" v["shape"] "\tcaller_ns\t" v["caller_ns"]
      print r "\tnetty\t" v["shape"] "\twall_ns\t" v["wall_ns"] }' "$logf" >>"$RAW"
}

run_trellis() {  # round
  local json="$OUT/logs/trellis-r$1.json"
  if [ "$NUM" != 100000 ]; then log "warning: bench_scheduling always schedules 100000 per batch"; fi
  "$BENCH" --benchmark_filter='^ScheduleFutureTask_' --benchmark_format=json >"$json" \
    2>"$OUT/logs/trellis-r$1.err" || die "bench_scheduling run $1 failed, see $OUT/logs/trellis-r$1.err"
  python3 - "$json" "$1" >>"$RAW" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
for b in data["benchmarks"]:
    shape = b["name"].split("/")[0].split("_", 1)[1]  # ScheduleFutureTask_X/iterations:30
    for m in ("cpu_ns", "caller_ns", "wall_ns", "allocs_per_schedule", "wakeups_per_batch"):
        print(f"{sys.argv[2]}\ttrellis\t{shape}\t{m}\t{b[m]}")
EOF
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$RUNS"); do
  if ((round % 2)); then order="trellis netty"; else order="netty trellis"; fi
  for peer in $order; do
    log "round $round: $peer"
    "run_$peer" "$round"
  done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- summary ------------------------------------------------------------------------------------
med() {  # peer shape metric [printf-format] -> median over the rounds, or "-"
  awk -F'\t' -v p="$1" -v s="$2" -v m="$3" '$2 == p && $3 == s && $4 == m && $5 != "" {print $5}' "$RAW" |
    sort -g | awk -v f="${4:-%.2f}" '{a[NR] = $1} END {
      if (NR == 0) { print "-"; exit }
      printf f "\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }

SUMMARY=$OUT/summary.md
{
  echo "# Scheduling: trellis vs Netty (ScheduleFutureTaskBenchmark shapes)"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
    "Linux $(uname -r). $NUM tasks per batch; medians over $BATCHES batches per run, then over $RUNS round(s)." \
    "Load average at start $LOAD_START, at end $LOAD_END."
  echo "Netty: $(dpkg-query -W -f='libnetty-java ${Version}' libnetty-java 2>/dev/null), $(java -version 2>&1 | head -1), $WARMUP warm-up batches per shape."
  echo
  echo "| shape | metric (ns per schedule) | trellis | Netty | trellis/Netty |"
  echo "|---|---|---:|---:|---:|"
  for shape in $SHAPES; do
    for m in $METRICS; do
      t=$(med trellis "$shape" "$m"); n=$(med netty "$shape" "$m")
      echo "| $shape | $m | $t | $n | $(ratio "$t" "$n") |"
    done
  done
  echo
  echo "| shape | trellis allocations per schedule | trellis loop wake-ups per batch |"
  echo "|---|---:|---:|"
  for shape in $SHAPES; do
    echo "| $shape | $(med trellis "$shape" allocs_per_schedule %.5f) | $(med trellis "$shape" wakeups_per_batch) |"
  done
  echo
  echo "Raw numbers: $RAW"
} >"$SUMMARY"
cat "$SUMMARY"
