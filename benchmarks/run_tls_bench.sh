#!/usr/bin/env bash
# HTTPS over loopback: trellis's example server (http_echo_server --tls-cert/--tls-key, one
# worker thread) against nginx (1 worker) with the same certificates (ECDSA P-256 and RSA-2048,
# made here with the openssl command) and the same protocol settings (TLS 1.2 and 1.3, trellis's
# default cipher suites and groups in the server's order, one stateless session ticket per
# handshake). Each server is pinned to CPU $SERVER_CPU, the load
# generator to $CLIENT_CPU. Server CPU time is utime+stime of the serving process from /proc
# (trellis: the whole process; nginx: its worker).
#
#   plaintext  wrk -t1 -c$CONNS -d${SECS}s https://127.0.0.1:PORT/plaintext (keep-alive, the
#              first certificate of $CERTS): requests/s and server CPU time per request
#   cleartext  the same over http:// to a cleartext port (trellis: a second http_echo_server
#              without TLS; nginx: a second listen without ssl), for the https/cleartext ratio
#   handshake  openssl s_time -new -tls1_3 -time $SECS, per certificate: full handshakes per
#              second (a new session each time) and server CPU time per handshake
#   resumed    openssl s_time -reuse -tls1_3 -www /plaintext -time $SECS, per certificate:
#              handshakes resuming the first connection's session (TLS 1.3 session ticket) and
#              one HTTP/1.0 GET each (s_time only takes the ticket in when it reads). The share of
#              connections that really resumed is checked (s_time prints 'r' for each) and
#              reported; below 90% the run says so.
#
# Interleaved rounds ($RUNS, the server order alternating); each run goes to $OUT/raw.tsv, the
# medians and ratios to $OUT/summary.md. About 9 minutes with the defaults (RUNS x 2 servers x
# 6 cases x SECS).
#   benchmarks/run_tls_bench.sh
#   RUNS=1 SECS=3 benchmarks/run_tls_bench.sh     # a quick look
# Knobs: RUNS=5 SECS=8 CONNS=50 CERTS="ecdsa rsa" SERVER_CPU=0 CLIENT_CPU=1 BUILD=build/bench
#   OUT=build/tls-bench TRELLIS_ARGS="--acceptor-threads 0" (flags for http_echo_server: by
#   default it accepts on its one worker loop, as nginx's worker does, instead of on a thread of
#   its own that hands each connection over)
# Build: cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build/bench
#   http_echo_server
# Ports (127.0.0.1 only): trellis 18443 (ECDSA), 18445 (RSA), 18441 (cleartext); nginx 18444
#   (ECDSA), 18446 (RSA), 18442 (cleartext).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
RUNS=${RUNS:-5}
SECS=${SECS:-8}
CONNS=${CONNS:-50}
CERTS=${CERTS:-ecdsa rsa}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BUILD=${BUILD:-build/bench}
TRELLIS_ARGS=${TRELLIS_ARGS---acceptor-threads 0}
OUT=${OUT:-build/tls-bench}
mkdir -p "$OUT/run"
OUT="$(cd "$OUT" && pwd)"
RUN="$OUT/run"
SERVER_BIN="$BUILD/examples/http_echo_server"
[ -x "$SERVER_BIN" ] || { echo "build $SERVER_BIN first" >&2; exit 1; }
command -v nginx >/dev/null || { echo "nginx is not installed" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }
read -ra CERT_LIST <<<"$CERTS"
for c in "${CERT_LIST[@]}"; do
  case $c in ecdsa | rsa) ;; *) echo "CERTS: ecdsa and/or rsa, not '$c'" >&2; exit 1 ;; esac
done
HTTPS_CERT=${CERT_LIST[0]}

# ------------------------------------------------------------------ machine and build
{
  cxx=$(awk -F= '/^CMAKE_CXX_COMPILER:/ {print $2}' "$BUILD/CMakeCache.txt" 2>/dev/null)
  type=$(awk -F= '/^CMAKE_BUILD_TYPE:/ {print $2}' "$BUILD/CMakeCache.txt" 2>/dev/null)
  flags=$(awk -F= '/^CMAKE_CXX_FLAGS:/ {print $2}' "$BUILD/CMakeCache.txt" 2>/dev/null)
  type_upper=$(printf '%s' "$type" | tr '[:lower:]' '[:upper:]')
  type_flags=$(awk -F= -v k="CMAKE_CXX_FLAGS_${type_upper}:" 'index($0, k) == 1 {print $2}' \
    "$BUILD/CMakeCache.txt" 2>/dev/null)
  echo "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
  echo "openssl: $(openssl version); nginx: $(nginx -v 2>&1 | sed 's/^nginx version: //')," \
    "$(nginx -V 2>&1 | awk '/built with OpenSSL/ {print "built with OpenSSL " $4}')"
  echo "trellis build: $BUILD, ${type:-?} ($("${cxx:-c++}" --version 2>/dev/null | head -1)," \
    "flags: ${flags:+$flags }$type_flags)"
  echo "runs: RUNS=$RUNS SECS=$SECS CONNS=$CONNS CERTS='$CERTS' SERVER_CPU=$SERVER_CPU" \
    "CLIENT_CPU=$CLIENT_CPU TRELLIS_ARGS='$TRELLIS_ARGS'"
} | tee "$OUT/machine.txt"

# ------------------------------------------------------------------ certificates
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$RUN/ca.key" \
  -out "$RUN/ca.pem" -days 2 -subj "/CN=tls bench CA" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$RUN/san.ext"
for c in ecdsa rsa; do
  if [ "$c" = ecdsa ]; then key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256); else key=(-newkey rsa:2048); fi
  openssl req "${key[@]}" -nodes -keyout "$RUN/$c.key" -out "$RUN/$c.csr" -subj "/CN=localhost" \
    2>/dev/null
  openssl x509 -req -in "$RUN/$c.csr" -CA "$RUN/ca.pem" -CAkey "$RUN/ca.key" -CAcreateserial \
    -out "$RUN/$c.pem" -days 2 -extfile "$RUN/san.ext" 2>/dev/null
done

# ------------------------------------------------------------------ servers
# nginx gets trellis's TLS defaults (SslContextBuilder, ssl/src/ssl_context_builder.cpp): its
# cipher suites in its order of preference, its groups, one session ticket per handshake.
TLS12_CIPHERS="ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
TLS12_CIPHERS+=":ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
TLS13_SUITES="TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
TLS_GROUPS="X25519:P-256:P-384"
declare -A TPORT=([ecdsa]=18443 [rsa]=18445 [clear]=18441)
declare -A NPORT=([ecdsa]=18444 [rsa]=18446 [clear]=18442)
{
  cat <<CONF
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
    listen 127.0.0.1:${NPORT[clear]};
    location /plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
CONF
  for c in ecdsa rsa; do
    cat <<CONF
  server {
    listen 127.0.0.1:${NPORT[$c]} ssl;
    ssl_certificate $RUN/$c.pem;
    ssl_certificate_key $RUN/$c.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers $TLS12_CIPHERS;
    ssl_conf_command Ciphersuites $TLS13_SUITES;
    ssl_ecdh_curve $TLS_GROUPS;
    ssl_prefer_server_ciphers on;
    ssl_session_tickets on;
    ssl_conf_command NumTickets 1;
    location /plaintext { default_type text/plain; return 200 "Hello, World!"; }
  }
CONF
  done
  echo "}"
} >"$RUN/nginx.conf"

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

# trellis: one process per port (each idle while another is measured); nginx: one worker for all.
declare -A TPID
for c in ecdsa rsa clear; do
  tls=()
  [ "$c" != clear ] && tls=(--tls-cert "$RUN/$c.pem" --tls-key "$RUN/$c.key")
  # shellcheck disable=SC2086 # TRELLIS_ARGS is a list of flags
  taskset -c "$SERVER_CPU" "$SERVER_BIN" --port "${TPORT[$c]}" --threads 1 $TRELLIS_ARGS "${tls[@]}" \
    >"$RUN/trellis-$c.log" 2>&1 &
  TPID[$c]=$!
  PIDS+=("${TPID[$c]}")
done
taskset -c "$SERVER_CPU" nginx -c "$RUN/nginx.conf" -p "$RUN" >"$RUN/nginx.log" 2>&1 &
NGINX_MASTER=$!
PIDS+=("$NGINX_MASTER")
sleep 1
NGINX_WORKER=$(pgrep -P "$NGINX_MASTER" | head -1)
[ -n "$NGINX_WORKER" ] || { echo "nginx did not start: $(cat "$RUN/nginx-error.log")" >&2; exit 1; }

# pid SERVER KIND / port SERVER KIND (KIND: ecdsa, rsa or clear)
pid_of() { if [ "$1" = trellis ]; then echo "${TPID[$2]}"; else echo "$NGINX_WORKER"; fi; }
port_of() { if [ "$1" = trellis ]; then echo "${TPORT[$2]}"; else echo "${NPORT[$2]}"; fi; }
for s in trellis nginx; do
  body=$(curl -s --max-time 5 "http://127.0.0.1:$(port_of "$s" clear)/plaintext")
  [ "$body" = "Hello, World!" ] || { echo "$s does not answer over http: '$body'" >&2; exit 1; }
  for c in "${CERT_LIST[@]}"; do
    body=$(curl -s --max-time 5 --cacert "$RUN/ca.pem" "https://127.0.0.1:$(port_of "$s" "$c")/plaintext")
    [ "$body" = "Hello, World!" ] || { echo "$s ($c) does not answer over https: '$body'" >&2; exit 1; }
    # Resumption by session ticket, checked once with s_client as well as by s_time's counts.
    sess="$RUN/$s-$c.sess"
    printf 'GET /plaintext HTTP/1.0\r\n\r\n' | timeout 5 openssl s_client -connect \
      "127.0.0.1:$(port_of "$s" "$c")" -tls1_3 -CAfile "$RUN/ca.pem" -sess_out "$sess" -ign_eof -quiet \
      >/dev/null 2>&1
    reused=$(printf 'GET /plaintext HTTP/1.0\r\n\r\n' | timeout 5 openssl s_client -connect \
      "127.0.0.1:$(port_of "$s" "$c")" -tls1_3 -CAfile "$RUN/ca.pem" -sess_in "$sess" -ign_eof 2>&1 |
      grep -c '^Reused')
    [ "$reused" -ge 1 ] || echo "warning: $s ($c) did not resume a session with s_client" >&2
  done
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
# us_per_op TICKS_BEFORE TICKS_AFTER OPS
us_per_op() { awk -v a="$2" -v b="$1" -v t="$TICK" -v n="$3" 'BEGIN {printf "%.2f", (n > 0 ? (a - b) / t * 1e6 / n : 0)}'; }

# wrk_case SERVER KIND SCHEME: requests/s and server CPU us per request
wrk_case() {
  local pid before after out reqs total
  pid=$(pid_of "$1" "$2")
  before=$(cpu_ticks "$pid")
  out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${SECS}s" "$3://127.0.0.1:$(port_of "$1" "$2")/plaintext")
  after=$(cpu_ticks "$pid")
  reqs=$(printf '%s\n' "$out" | awk '/^Requests\/sec/ {print $2}')
  total=$(printf '%s\n' "$out" | awk '/requests in/ {print $1}')
  printf '%s\t%s\t-\n' "$reqs" "$(us_per_op "$before" "$after" "$total")"
}

# s_time_case SERVER CERT new|reuse: connections/s, server CPU us per connection, reused share
s_time_case() {
  local pid before after start end out n marks reused extra=()
  [ "$3" = reuse ] && extra=(-www /plaintext)
  pid=$(pid_of "$1" "$2")
  before=$(cpu_ticks "$pid")
  start=$(date +%s.%N)
  out=$(taskset -c "$CLIENT_CPU" openssl s_time -connect "127.0.0.1:$(port_of "$1" "$2")" "-$3" \
    -tls1_3 -time "$SECS" -CAfile "$RUN/ca.pem" "${extra[@]}" 2>&1)
  after=$(cpu_ticks "$pid")
  end=$(date +%s.%N)
  # s_time's "real seconds" are whole seconds: the rate is taken over the measured wall time.
  n=$(printf '%s\n' "$out" | awk '/connections in .* real seconds/ {print $1; exit}')
  # One mark per connection: 'r' resumed, '*' (or a version letter) a full handshake.
  marks=$(printf '%s\n' "$out" | grep -E '^[*rt123]+$' | tr -d '\n')
  reused=$(printf '%s' "$marks" | tr -cd 'r' | wc -c)
  printf '%s\t%s\t%s\n' "$(awk -v n="${n:-0}" -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", n / (b - a)}')" \
    "$(us_per_op "$before" "$after" "${n:-0}")" \
    "$(awk -v r="$reused" -v n="${#marks}" 'BEGIN {printf "%.3f", (n > 0 ? r / n : 0)}')"
}

: >"$OUT/raw.tsv"
printf 'round\tserver\tcase\tcert\trate_per_s\tserver_cpu_us_per_op\treused_share\n' >>"$OUT/raw.tsv"
for round in $(seq 1 "$RUNS"); do
  order="trellis nginx"
  [ $((round % 2)) -eq 0 ] && order="nginx trellis"
  for s in $order; do
    printf '%s\t%s\tplaintext\t%s\t%s\n' "$round" "$s" "$HTTPS_CERT" \
      "$(wrk_case "$s" "$HTTPS_CERT" https)" >>"$OUT/raw.tsv"
    printf '%s\t%s\tcleartext\t-\t%s\n' "$round" "$s" "$(wrk_case "$s" clear http)" >>"$OUT/raw.tsv"
    for c in "${CERT_LIST[@]}"; do
      printf '%s\t%s\thandshake\t%s\t%s\n' "$round" "$s" "$c" "$(s_time_case "$s" "$c" new)" \
        >>"$OUT/raw.tsv"
      line=$(s_time_case "$s" "$c" reuse)
      printf '%s\t%s\tresumed\t%s\t%s\n' "$round" "$s" "$c" "$line" >>"$OUT/raw.tsv"
      share=$(printf '%s' "$line" | cut -f3)
      awk -v x="$share" 'BEGIN {exit !(x < 0.9)}' &&
        echo "warning: round $round, $s ($c): only $share of the s_time -reuse connections resumed" >&2
    done
  done
  echo "round $round of $RUNS done" >&2
done

# ------------------------------------------------------------------ summary (medians)
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "-"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# med SERVER CASE CERT COLUMN
med() { awk -F'\t' -v s="$1" -v c="$2" -v k="$3" -v f="$4" '$2 == s && $3 == c && $4 == k {print $f}' "$OUT/raw.tsv" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b; else print "-"}'; }
{
  cat "$OUT/machine.txt"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| case | cert | trellis rate/s | nginx rate/s | trellis CPU µs/op | nginx CPU µs/op | CPU trellis/nginx | resumed share (trellis, nginx) |"
  echo "|---|---|---:|---:|---:|---:|---:|---|"
  rows=("plaintext $HTTPS_CERT" "cleartext -")
  for c in "${CERT_LIST[@]}"; do rows+=("handshake $c" "resumed $c"); done
  for row in "${rows[@]}"; do
    read -r cs k <<<"$row"
    tr=$(med trellis "$cs" "$k" 5)
    nr=$(med nginx "$cs" "$k" 5)
    tu=$(med trellis "$cs" "$k" 6)
    nu=$(med nginx "$cs" "$k" 6)
    share="-"
    [ "$cs" = resumed ] && share="$(med trellis "$cs" "$k" 7), $(med nginx "$cs" "$k" 7)"
    echo "| $cs | $k | $tr | $nr | $tu | $nu | $(ratio "$tu" "$nu") | $share |"
  done
  echo
  for s in trellis nginx; do
    echo "$s: CPU per request https/cleartext = $(ratio "$(med "$s" plaintext "$HTTPS_CERT" 6)" \
      "$(med "$s" cleartext - 6)")"
  done
} | tee "$OUT/summary.md"
