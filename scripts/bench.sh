#!/bin/sh
# Runs the benchmarks of a build directory; figures go to stdout as JSON lines.
set -eu
b=${1:-build}
for x in "$b"/bench/bench_*; do
    [ -x "$x" ] || continue
    case "$x" in *_off) continue ;; esac # run by its instrumented twin (bench_frame)
    echo "# $(basename "$x")" >&2
    "$x" --mprof "$b/mprof"
done
