#!/bin/sh
# frames_cli.sh WORKLOAD MPROF WORKDIR - the whole path through the real binaries: an
# instrumented program captures in-process, `mprof export --format frames` writes the frame
# export, and `mprof gate` accepts it (the same run on both sides passes).
set -u
WORKLOAD=$1
MPROF=$2
W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
MPROF_GIT_SHA=0123456789abcdef MPROF_BUILD_TYPE=test "$WORKLOAD" --capture "$W/run.mprof" --frames 120 \
    || fail "workload"
"$MPROF" export "$W/run.mprof" --format frames -o "$W/run.json" || fail "mprof export --format frames"
grep -q '"schema": "mprof.frames.v1"' "$W/run.json" || fail "schema"
grep -q '"frameCount": 120,' "$W/run.json" || fail "frame count: $(grep frameCount "$W/run.json" | head -1)"
grep -q '"gitSha": "0123456789abcdef"' "$W/run.json" || fail "git SHA from the capture"
grep -q '"buildType": "test"' "$W/run.json" || fail "build type from the capture"
grep -q '"name": "Physics"' "$W/run.json" || fail "Physics zone"
"$MPROF" export "$W/run.mprof" --format frames > "$W/stdout.json" || fail "export to stdout"
cmp -s "$W/run.json" "$W/stdout.json" || fail "stdout and file exports differ"
"$MPROF" gate --baseline "$W/run.json" --current "$W/run.json" > "$W/gate.txt" 2>&1
code=$?
[ "$code" -eq 0 ] || fail "gate of a run against itself: exit $code: $(cat "$W/gate.txt")"
"$MPROF" export "$W/missing.mprof" --format frames -o "$W/x.json" 2> "$W/err.txt"
code=$?
[ "$code" -eq 3 ] || fail "export of a missing capture: exit $code"
grep -q "missing.mprof" "$W/err.txt" || fail "message names the file: $(cat "$W/err.txt")"
[ ! -e "$W/x.json" ] || fail "a failed export left a file"
echo "frames_cli: all checks passed"
