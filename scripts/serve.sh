#!/usr/bin/env bash
# Installs what is missing, builds trellis (Release, build/release) and starts the HTTP/1.1 echo
# example server in the foreground.
#   scripts/serve.sh                          http_echo_server --host 127.0.0.1 --port 8080
#   scripts/serve.sh --host 0.0.0.0 --port 9000   arguments go to the server as they are
# Environment: HOST and PORT change the defaults; JOBS (default 2); TRELLIS_SKIP_DEPS=1.
set -euo pipefail
# shellcheck source=SCRIPTDIR/build.sh
source "$(dirname "${BASH_SOURCE[0]}")/build.sh"

target=http_echo_server
if (( $# == 0 )); then
  set -- --host "${HOST:-127.0.0.1}" --port "${PORT:-8080}"
fi

trellis_mode_settings release
trellis_install_deps
# Tests and benchmarks off: only the server and the libraries it needs are built.
trellis_configure "$TRELLIS_MODE_DIR" "${TRELLIS_MODE_ARGS[@]}" \
  -DTRELLIS_BUILD_TESTS=OFF -DTRELLIS_BUILD_BENCHMARKS=OFF -DTRELLIS_BUILD_EXAMPLES=ON

if ! trellis_has_target "$TRELLIS_MODE_DIR" "$target"; then
  trellis_log "the $target example does not exist yet (no '$target' target in examples/CMakeLists.txt)."
  trellis_log "once it does, this script builds it and runs:"
  echo "  ${TRELLIS_MODE_DIR#"$TRELLIS_ROOT"/}/examples/$target $*"
  exit 0
fi

trellis_build "$TRELLIS_MODE_DIR" "$target"
server="$TRELLIS_MODE_DIR/examples/$target"
if [[ ! -x "$server" ]]; then
  server=$(find "$TRELLIS_MODE_DIR" -type f -name "$target" -perm -u+x -print -quit)
fi
if [[ -z "$server" || ! -x "$server" ]]; then
  trellis_log "ERROR: built $target but cannot find the binary under $TRELLIS_MODE_DIR" >&2
  exit 1
fi
trellis_log "starting: ${server#"$TRELLIS_ROOT"/} $*  (Ctrl-C stops it)"
exec "$server" "$@"
