#!/usr/bin/env bash
# HttpClient against wrk over one keep-alive connection to the same server: http_echo_server
# (--threads 1) pinned to CPU $SERVER_CPU, the client (bench_http_client) and wrk pinned to CPU
# $CLIENT_CPU. RUNS interleaved rounds; each round runs every bench_http_client case in a process
# of its own (the global hook is process-wide) and `wrk -t1 -c1` for as long as that round's
# Futures case took (at least 1 s), in a rotated order. Prints the medians and the ratios:
# CoroutineOnLoop / Futures (wall and CPU per request; target <= 1.05) and Futures / wrk
# (requests per second; target >= 0.90).
#
#   benchmarks/run_http_client_bench.sh                       # 100,000 requests per case
#   RUNS=1 ARGS=--quick benchmarks/run_http_client_bench.sh   # 10,000
#
# Knobs (environment): BUILD=build/bench (its bench_http_client and examples/http_echo_server)
#   RUNS=3 ARGS= (flags for bench_http_client, e.g. --quick or --requests=N) CASES= (default:
#   all) SERVER_CPU=0 CLIENT_CPU=1 PORT=18190 OUT=build/http-client-bench
# Output: the summary (also $OUT/summary.md), one JSON file per case and round and the wrk
# outputs in $OUT/runs/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build/bench}
RUNS=${RUNS:-3}
ARGS=${ARGS:-}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PORT=${PORT:-18190}
OUT=${OUT:-build/http-client-bench}
BIN=$BUILD/benchmarks/bench_http_client
SERVER=$BUILD/examples/http_echo_server
URL=http://127.0.0.1:$PORT/plaintext
for f in "$BIN" "$SERVER"; do
  [ -x "$f" ] || { echo "missing $f (build bench_http_client and http_echo_server)" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
read -ra BIN_ARGS <<<"$ARGS"

mkdir -p "$OUT/runs"
rm -f "$OUT"/runs/*

taskset -c "$SERVER_CPU" "$SERVER" --port "$PORT" --threads 1 >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null' EXIT
for _ in $(seq 50); do
  curl -sf "$URL" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "$URL" >/dev/null || { echo "the server did not come up (see $OUT/server.log)" >&2; exit 1; }

if [ -z "${CASES:-}" ]; then
  CASES=$("$BIN" "${BIN_ARGS[@]}" --url="$URL" --benchmark_list_tests=true | cut -d/ -f1-2)
fi
read -ra CASE_LIST <<<"$(echo $CASES)"

# shellcheck source=benchmarks/peer_order.sh
source benchmarks/peer_order.sh
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
failed=0
for round in $(seq "$RUNS"); do
  secs=
  for c in $(rotated $((round - 1)) "${CASE_LIST[@]}"); do
    file=$OUT/runs/$(tr '/' '_' <<<"$c")-r$round.json
    if ! taskset -c "$CLIENT_CPU" "$BIN" "${BIN_ARGS[@]}" --url="$URL" --client_cpu="$CLIENT_CPU" \
      --benchmark_filter="^$c/" --benchmark_format=json >"$file" 2>"$file.err"; then
      echo "FAILED: $c round $round (see $file.err)" >&2
      failed=1
      continue
    fi
    if [ "$c" = HttpClient/Futures ]; then
      secs=$(python3 -c 'import json,sys,math; b=json.load(open(sys.argv[1]))["benchmarks"][0]
print(max(1, round(b["wall_ms"] / 1000)))' "$file" 2>/dev/null || echo 5)
      taskset -c "$CLIENT_CPU" wrk -t1 -c1 -d"${secs}s" "$URL" >"$OUT/runs/wrk-r$round.txt" 2>&1 ||
        { echo "FAILED: wrk round $round" >&2; failed=1; }
    fi
    echo "round $round: $c done" >&2
  done
  if [ -z "$secs" ]; then
    taskset -c "$CLIENT_CPU" wrk -t1 -c1 -d5s "$URL" >"$OUT/runs/wrk-r$round.txt" 2>&1 || failed=1
  fi
  echo "round $round: wrk done" >&2
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$OUT" "$RUNS" "$LOAD_START" "$LOAD_END" <<'EOF' | tee "$OUT/summary.md"
import glob, json, re, statistics, sys
out, runs, load_start, load_end = sys.argv[1:5]
rows = {}
for path in sorted(glob.glob(out + "/runs/*.json")):
    text = open(path).read()
    if not text.strip():
        print(f"- {path}: no output")
        continue
    for b in json.loads(text)["benchmarks"]:
        if b.get("error_occurred"):
            print(f"- {b['name']}: {b.get('error_message')}")
            continue
        rows.setdefault(b["name"].split("/iterations")[0], []).append(b)
wrk = []
for path in sorted(glob.glob(out + "/runs/wrk-r*.txt")):
    m = re.search(r"Requests/sec:\s+([0-9.]+)", open(path).read())
    if m:
        wrk.append(float(m.group(1)))
metrics = ["wall_ms", "cpu_ms", "wall_ns_per_req", "cpu_ns_per_req", "req_per_s",
           "allocs_per_req", "ctx_switches"]
med = {n: {m: statistics.median(b[m] for b in bs) for m in metrics} for n, bs in rows.items()}
print(f"Medians of {runs} interleaved round(s), one process per case; load average "
      f"{load_start} at start, {load_end} at end.\n")
print("| case | runs | req/s | wall ns/req | client CPU ns/req | allocs/req | ctx switches |")
print("|---|---:|---:|---:|---:|---:|---:|")
for n in sorted(med):
    d = med[n]
    print(f"| {n} | {len(rows[n])} | {d['req_per_s']:.0f} | {d['wall_ns_per_req']:.0f} "
          f"| {d['cpu_ns_per_req']:.0f} | {d['allocs_per_req']:.2f} | {d['ctx_switches']:.0f} |")
if wrk:
    print(f"| wrk -t1 -c1 | {len(wrk)} | {statistics.median(wrk):.0f} | "
          f"{1e9 / statistics.median(wrk):.0f} | - | - | - |")
print()
f, c = med.get("HttpClient/Futures"), med.get("HttpClient/CoroutineOnLoop")
if f and c:
    print(f"- CoroutineOnLoop / Futures: wall {c['wall_ns_per_req'] / f['wall_ns_per_req']:.3f}x, "
          f"CPU {c['cpu_ns_per_req'] / f['cpu_ns_per_req']:.3f}x (target <= 1.05x)")
if f and wrk:
    print(f"- Futures / wrk requests per second: {f['req_per_s'] / statistics.median(wrk):.3f}x "
          f"(target >= 0.90x)")
EOF
exit $failed
