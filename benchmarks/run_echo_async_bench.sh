#!/usr/bin/env bash
# The TCPEcho quartet (bench_tcp_echo_async), each case in a process of its own (the global hook
# is process-wide), RUNS interleaved rounds with the case order rotated from round to round;
# prints the medians of every counter and the ratios against Pure with the same number of loops.
#
#   benchmarks/run_echo_async_bench.sh                    # 1,000,000 writes, 100,000 round trips
#   RUNS=3 ARGS=--quick benchmarks/run_echo_async_bench.sh  # 100,000 writes, 20,000 round trips
#
# Knobs (environment): BUILD=build/release RUNS=5 ARGS= (flags for the binary, e.g. --quick or
#   --messages=N --round_trips=R) CASES= (cases such as "TCPEcho/Pure/OneLoop PingPong/Pure/TwoLoops",
#   default: all) OUT=build/echo-async-bench
# Output: the summary (also $OUT/summary.md) and one JSON file per run in $OUT/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build/release}
RUNS=${RUNS:-5}
ARGS=${ARGS:-}
OUT=${OUT:-build/echo-async-bench}
BIN=$BUILD/benchmarks/bench_tcp_echo_async
[ -x "$BIN" ] || { echo "missing $BIN (build the bench_tcp_echo_async target)" >&2; exit 1; }
read -ra BIN_ARGS <<<"$ARGS"

if [ -z "${CASES:-}" ]; then
  CASES=$("$BIN" "${BIN_ARGS[@]}" --benchmark_list_tests=true | cut -d/ -f1-3)
fi
read -ra CASE_LIST <<<"$(echo $CASES)"
mkdir -p "$OUT/runs"
rm -f "$OUT"/runs/*.json

# shellcheck source=benchmarks/peer_order.sh
source benchmarks/peer_order.sh
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
failed=0
for round in $(seq "$RUNS"); do
  for c in $(rotated $((round - 1)) "${CASE_LIST[@]}"); do
    file=$OUT/runs/$(tr '/' '_' <<<"$c")-r$round.json
    if ! "$BIN" "${BIN_ARGS[@]}" --benchmark_filter="^$c/" --benchmark_format=json \
      >"$file" 2>"$file.err"; then
      echo "FAILED: $c round $round (see $file.err)" >&2
      failed=1
      continue
    fi
    echo "round $round: $c done" >&2
  done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$OUT" "$RUNS" "$LOAD_START" "$LOAD_END" <<'EOF' | tee "$OUT/summary.md"
import glob, json, statistics, sys
out, runs, load_start, load_end = sys.argv[1:5]
rows = {}
for path in sorted(glob.glob(out + "/runs/*.json")):
    with open(path) as f:
        text = f.read()
    if not text.strip():
        print(f"- {path}: no output")
        continue
    data = json.loads(text)
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            print(f"- {b['name']}: {b.get('error_message')}")
            continue
        rows.setdefault(b["name"].rsplit("/", 1)[0], []).append(b)
metrics = ["cpu_ms", "wall_ms", "ctx_switches", "ctx_voluntary", "ctx_involuntary", "allocs",
           "thread_hops", "wall_ns_per_rt", "cpu_ns_per_rt"]
med = {name: {m: statistics.median(b[m] for b in bs) for m in metrics if m in bs[0]}
       for name, bs in rows.items()}
print(f"Medians of {runs} interleaved round(s), one process per case; load average "
      f"{load_start} at start, {load_end} at end.\n")
print("| case | runs | CPU ms | wall ms | ctx switches (vol+invol) | allocations | thread hops "
      "| ns/rt (wall) | CPU ns/rt |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
fmt = lambda d, m, f="{:.0f}": f.format(d[m]) if m in d else "-"
for name in sorted(med):
    d = med[name]
    print(f"| {name} | {len(rows[name])} | {fmt(d, 'cpu_ms', '{:.1f}')} | {fmt(d, 'wall_ms', '{:.1f}')} "
          f"| {fmt(d, 'ctx_switches')} ({fmt(d, 'ctx_voluntary')}+{fmt(d, 'ctx_involuntary')}) "
          f"| {fmt(d, 'allocs')} | {fmt(d, 'thread_hops')} | {fmt(d, 'wall_ns_per_rt')} "
          f"| {fmt(d, 'cpu_ns_per_rt')} |")
print("\nRatios against Pure with the same shape and loops (medians):\n")
print("| case | CPU | wall | ctx switches | allocations | ns/rt |")
print("|---|---:|---:|---:|---:|---:|")
def ratio(a, b, m):
    if m not in a or m not in b or b[m] == 0:
        return "-"
    return f"{a[m] / b[m]:.2f}"
for name in sorted(med):
    parts = name.split("/")
    if parts[1] == "Pure":
        continue
    base = "/".join([parts[0], "Pure"] + parts[2:])
    if base not in med:
        continue
    a, b = med[name], med[base]
    print(f"| {name} | {ratio(a, b, 'cpu_ms')} | {ratio(a, b, 'wall_ms')} "
          f"| {ratio(a, b, 'ctx_switches')} | {ratio(a, b, 'allocs')} | {ratio(a, b, 'wall_ns_per_rt')} |")
EOF
exit $failed
