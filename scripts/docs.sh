#!/usr/bin/env bash
# Builds the API reference (Doxygen over the public headers, docs/Doxyfile) into build/docs/html
# and fails when Doxygen warns: an undocumented public class, function or member, or a doc
# comment it cannot parse. Installs doxygen when it is missing (Debian, as root).
#
#   scripts/docs.sh                       # the whole reference; exit 1 on any warning
#   scripts/docs.sh pipeline/include/trellis/pipeline/channel_group.hpp ...
#                                         # only these headers or folders (checks a part)
# Environment: DOCS_OUT=build/docs (output folder), SKIP_APT=1 (never install).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v doxygen >/dev/null 2>&1; then
  if [[ "${SKIP_APT:-0}" != 1 && $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "docs: installing doxygen" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends doxygen >/dev/null
  else
    echo "docs: doxygen is missing (Debian: apt-get install doxygen)" >&2
    exit 1
  fi
fi

out=${DOCS_OUT:-build/docs}
mkdir -p "$out"
log=$out/warnings.log
config=$(cat docs/Doxyfile)
config+=$'\n'"OUTPUT_DIRECTORY = $out"
config+=$'\n'"WARN_LOGFILE = $log"
if (( $# > 0 )); then
  config+=$'\n'"INPUT = $* docs/api_mainpage.md"
fi
rm -f "$log"
doxygen - <<<"$config" >/dev/null
count=$(grep -c . "$log" || true)
if (( count > 0 )); then
  sed 's|^'"$PWD"'/||' "$log" | head -n "${DOCS_SHOW:-200}" >&2
  echo "docs: $count warning(s) (the list: $log); the reference is in $out/html" >&2
  exit 1
fi
echo "docs: no warnings; the reference is $out/html/index.html"
