#!/usr/bin/env bash
# HTTPS over loopback: trellis's example server (http_echo_server --tls-cert/--tls-key, one
# worker thread) against nginx (1 worker) with the same certificate (ECDSA P-256, made here
# with the openssl command) and the same protocol settings (TLS 1.2 and 1.3, OpenSSL's default
# ciphers). Each server is pinned to CPU $SERVER_CPU, the load generator to $CLIENT_CPU.
#
#   plaintext  wrk -t1 -c$CONNS -d${SECS}s https://127.0.0.1:PORT/plaintext (keep-alive):
#              requests/s and the server's CPU time per request (utime+stime from /proc)
#   handshake  openssl s_time -new -time $SECS: full handshakes per second (TLS 1.3, a new
#              session each time), and the server's CPU time per handshake
#
# Interleaved rounds ($RUNS); the medians go to $OUT/summary.md, each run to $OUT/raw.tsv.
#   benchmarks/run_tls_bench.sh            # ~2 min with the defaults
# Knobs: RUNS=3 SECS=10 CONNS=50 SERVER_CPU=0 CLIENT_CPU=1 BUILD=build/bench OUT=build/tls-bench
# Ports: trellis 18443, nginx 18444 (127.0.0.1 only).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
RUNS=${RUNS:-3}
SECS=${SECS:-10}
CONNS=${CONNS:-50}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BUILD=${BUILD:-build/bench}
OUT=${OUT:-build/tls-bench}
mkdir -p "$OUT/run"
OUT="$(cd "$OUT" && pwd)"
RUN="$OUT/run"
SERVER_BIN="$BUILD/examples/http_echo_server"
[ -x "$SERVER_BIN" ] || { echo "build $SERVER_BIN first" >&2; exit 1; }
command -v nginx >/dev/null || { echo "nginx is not installed" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }

# ------------------------------------------------------------------ certificate
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$RUN/ca.key" \
  -out "$RUN/ca.pem" -days 2 -subj "/CN=tls bench CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$RUN/server.key" \
  -out "$RUN/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$RUN/san.ext"
openssl x509 -req -in "$RUN/server.csr" -CA "$RUN/ca.pem" -CAkey "$RUN/ca.key" -CAcreateserial \
  -out "$RUN/server.pem" -days 2 -extfile "$RUN/san.ext" 2>/dev/null

# ------------------------------------------------------------------ servers
cat >"$RUN/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $RUN/nginx.pid;
error_log $RUN/nginx-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $RUN/body;
  proxy_temp_path $RUN/proxy;
  fastcgi_temp_path $RUN/fastcgi;
  uwsgi_temp_path $RUN/uwsgi;
  scgi_temp_path $RUN/scgi;
  keepalive_requests 10000000;
  server {
    listen 127.0.0.1:18444 ssl;
    ssl_certificate $RUN/server.pem;
    ssl_certificate_key $RUN/server.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    location /plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
}
CONF

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

taskset -c "$SERVER_CPU" "$SERVER_BIN" --port 18443 --threads 1 --tls-cert "$RUN/server.pem" \
  --tls-key "$RUN/server.key" >"$RUN/trellis.log" 2>&1 &
TRELLIS_PID=$!
PIDS+=("$TRELLIS_PID")
taskset -c "$SERVER_CPU" nginx -c "$RUN/nginx.conf" -p "$RUN" >"$RUN/nginx.log" 2>&1 &
NGINX_MASTER=$!
PIDS+=("$NGINX_MASTER")
sleep 1
NGINX_WORKER=$(pgrep -P "$NGINX_MASTER" | head -1)
[ -n "$NGINX_WORKER" ] || { echo "nginx did not start: $(cat "$RUN/nginx-error.log")" >&2; exit 1; }
declare -A PORT=([trellis]=18443 [nginx]=18444)
declare -A PID=([trellis]=$TRELLIS_PID [nginx]=$NGINX_WORKER)
for s in trellis nginx; do
  body=$(curl -s --max-time 5 --cacert "$RUN/ca.pem" "https://127.0.0.1:${PORT[$s]}/plaintext")
  [ "$body" = "Hello, World!" ] || { echo "$s does not answer over https: '$body'" >&2; exit 1; }
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

: >"$OUT/raw.tsv"
printf 'round\tserver\tcase\trate_per_s\tserver_cpu_us_per_op\n' >>"$OUT/raw.tsv"
for round in $(seq 1 "$RUNS"); do
  order="trellis nginx"
  [ $((round % 2)) -eq 0 ] && order="nginx trellis"
  for s in $order; do
    # keep-alive GET /plaintext
    before=$(cpu_ticks "${PID[$s]}")
    out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${SECS}s" "https://127.0.0.1:${PORT[$s]}/plaintext")
    after=$(cpu_ticks "${PID[$s]}")
    reqs=$(printf '%s\n' "$out" | awk '/^Requests\/sec/ {print $2}')
    total=$(printf '%s\n' "$out" | awk '/requests in/ {print $1}')
    cpu=$(awk -v a="$after" -v b="$before" -v t="$TICK" -v n="$total" 'BEGIN {printf "%.2f", (a - b) / t * 1e6 / n}')
    printf '%s\t%s\tplaintext\t%s\t%s\n' "$round" "$s" "$reqs" "$cpu" >>"$OUT/raw.tsv"
    # full handshakes
    before=$(cpu_ticks "${PID[$s]}")
    out=$(taskset -c "$CLIENT_CPU" openssl s_time -connect "127.0.0.1:${PORT[$s]}" -new \
      -time "$SECS" -CAfile "$RUN/ca.pem" 2>&1)
    after=$(cpu_ticks "${PID[$s]}")
    n=$(printf '%s\n' "$out" | awk '/connections in .* real seconds/ {print $1; exit}')
    real=$(printf '%s\n' "$out" | awk '/connections in .* real seconds/ {print $4; exit}')
    rate=$(awk -v n="$n" -v r="$real" 'BEGIN {printf "%.1f", n / r}')
    cpu=$(awk -v a="$after" -v b="$before" -v t="$TICK" -v n="$n" 'BEGIN {printf "%.1f", (a - b) / t * 1e6 / n}')
    printf '%s\t%s\thandshake\t%s\t%s\n' "$round" "$s" "$rate" "$cpu" >>"$OUT/raw.tsv"
  done
done

# ------------------------------------------------------------------ summary (medians)
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
{
  echo "| case | server | rate/s (median) | server CPU µs/op (median) |"
  echo "|---|---|---:|---:|"
  for c in plaintext handshake; do
    for s in trellis nginx; do
      r=$(awk -F'\t' -v c="$c" -v s="$s" '$2 == s && $3 == c {print $4}' "$OUT/raw.tsv" | median)
      u=$(awk -F'\t' -v c="$c" -v s="$s" '$2 == s && $3 == c {print $5}' "$OUT/raw.tsv" | median)
      echo "| $c | $s | $r | $u |"
    done
  done
} | tee "$OUT/summary.md"
