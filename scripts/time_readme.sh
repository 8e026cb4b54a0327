#!/usr/bin/env bash
# Time the README's two commands as a new user meets them: a fresh clone of this repository, an
# empty pip cache, and no C/C++ compiler on PATH (a step that compiles fails loudly instead of
# quietly costing minutes). Prints the install and run times and the run's peak memory.
#
#   scripts/time_readme.sh [1|2|both]     # 1: set up + demo, 2: set up + tests (default: both)
#
# Each command is split at its last " && ": what comes before is the install, the last part
# the run. Logs stay in the printed work folder.
set -euo pipefail
which=${1:-both}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
shim="$work/no-compiler"
mkdir -p "$shim"
for tool in cc gcc g++ c++ clang clang++ x86_64-linux-gnu-gcc x86_64-linux-gnu-g++; do
    printf '#!/bin/sh\necho "compiler invoked: $0 $*" >> "%s/compiler.log"\nexit 1\n' "$work" > "$shim/$tool"
    chmod +x "$shim/$tool"
done
export PATH="$shim:$PATH" CC="$shim/cc" CXX="$shim/c++"
mapfile -t commands < <(grep -E '^python3 -m venv ' "$repo/README.md")
[ "${#commands[@]}" -eq 2 ] || { echo "expected two set-up commands in README.md, found ${#commands[@]}" >&2; exit 2; }
echo "work folder: $work"
for n in 1 2; do
    [ "$which" = both ] || [ "$which" = "$n" ] || continue
    clone="$work/clone-$n"
    git clone -q "$repo" "$clone"
    command=${commands[$((n - 1))]}
    install=${command% && *}
    run=${command##* && }
    export PIP_CACHE_DIR="$work/pip-cache-$n"  # empty: every wheel is downloaded as a new user's would be
    start=$(date +%s)
    (cd "$clone" && bash -c "$install") > "$work/install-$n.log" 2>&1
    installed=$(date +%s)
    status=0
    (cd "$clone" && /usr/bin/time -v -o "$work/time-$n.txt" bash -c "$run") > "$work/run-$n.log" 2>&1 || status=$?
    finished=$(date +%s)
    peak_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time-$n.txt")
    printf 'command %s: install %d s, run %d s (exit %d), peak RSS of the run %.1f GB\n' \
        "$n" $((installed - start)) $((finished - installed)) "$status" "$(echo "$peak_kb / 1048576" | bc -l)"
    tail -n 3 "$work/run-$n.log" | sed 's/^/    /'
done
if [ -s "$work/compiler.log" ]; then
    echo "a compiler was invoked:"; cat "$work/compiler.log"; exit 1
fi
echo "no compiler was invoked"
