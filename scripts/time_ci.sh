#!/usr/bin/env bash
# Time CI as it runs on a submission: `bash .ci/run` in a fresh clone of this repository, with
# CI=true and an empty pip cache (every wheel is downloaded, as on a new machine). Prints each
# stage's start (from .ci/run's own "==" lines) and the whole run's time; the log stays in the
# printed work folder.
#
#   scripts/time_ci.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
echo "work folder: $work"
git clone -q "$repo" "$work/clone"
export PIP_CACHE_DIR="$work/pip-cache" CI=true
start=$(date +%s)
status=0
(cd "$work/clone" && bash .ci/run < /dev/null) > "$work/ci.log" 2>&1 || status=$?
finished=$(date +%s)
grep -E '^== |passed|failed' "$work/ci.log" || true
printf 'CI: %d s (%d min %02d s), exit %d\n' $((finished - start)) $(((finished - start) / 60)) $(((finished - start) % 60)) "$status"
exit "$status"
