#!/bin/sh
# timedemo_cli.sh TIMEDEMO MPROF WORKDIR - the gate's sub-millisecond workload (bench/timedemo)
# through the real binaries, with no timing outcome: a capture of N frames exports N frames with
# its zones (and, where the machine allows system tracing, the critical path the gate decides
# on, which the reader checks adds up), `--slow` does more work without changing what the frames
# compute, `mprof gate` accepts the exports, and bad arguments are refused with exit 2.
set -u
TD=$1
MPROF=$2
W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

"$TD" --frames 300 --capture "$W/run.mprof" > "$W/run.txt" 2>&1 || fail "timedemo: $(cat "$W/run.txt")"
"$TD" --frames 300 --slow planes=50 --capture "$W/slow.mprof" > "$W/slow.txt" 2>&1 \
    || fail "timedemo --slow: $(cat "$W/slow.txt")"
# The screen hash is what the frames computed: the extra work of --slow leaves it alone.
a=$(sed -n 's/.*(screen \([0-9a-f]*\)).*/\1/p' "$W/run.txt")
b=$(sed -n 's/.*(screen \([0-9a-f]*\)).*/\1/p' "$W/slow.txt")
[ -n "$a" ] || fail "no screen hash: $(cat "$W/run.txt")"
[ "$a" = "$b" ] || fail "--slow changed the frames' result: $a against $b"

for r in run slow; do
    "$MPROF" export "$W/$r.mprof" --format frames -o "$W/$r.json" || fail "export of $r"
    grep -q '"frameCount": 300,' "$W/$r.json" \
        || fail "$r: frame count: $(grep frameCount "$W/$r.json" | head -1)"
    for z in Render::walls Render::planes Render::sprites Render::blit; do
        grep -q "\"name\": \"$z\"" "$W/$r.json" || fail "$r: zone $z missing"
    done
    # With switch records the export carries the critical path; without (perf_event_paranoid,
    # a container) it says why, and the gate falls back to a weaker model.
    if grep -q '"criticalPath": "\(inferred\|wakers\)"' "$W/$r.json"; then
        for k in framePreemptedMs frameBlockedMs frameWaitRunnableMs; do
            grep -q "\"$k\"" "$W/$r.json" || fail "$r: critical path without $k"
        done
    fi
done

"$MPROF" gate --baseline "$W/run.json" --current "$W/run.json" > "$W/same.txt" 2>&1
code=$?
[ "$code" -eq 0 ] || fail "gate of a run against itself: exit $code: $(cat "$W/same.txt")"
grep -q "^  noise  *[a-z-]*:" "$W/same.txt" || fail "the text names no noise model: $(cat "$W/same.txt")"
"$MPROF" gate --baseline "$W/run.json" --current "$W/slow.json" --json "$W/gate.json" \
    > "$W/gate.txt" 2>&1
code=$?
[ "$code" -le 2 ] || fail "gate of the slowed run: exit $code: $(cat "$W/gate.txt")"
grep -q '"model": "' "$W/gate.json" || fail "the JSON names no noise model"

for bad in "--slow bogus=5" "--slow planes=0" "--slow planes" "--frames 10x" "--frames 0" "--nope"; do
    # shellcheck disable=SC2086
    "$TD" $bad > "$W/bad.txt" 2>&1
    code=$?
    [ "$code" -eq 2 ] || fail "timedemo $bad: exit $code, want 2"
    grep -q "timedemo:" "$W/bad.txt" || fail "timedemo $bad: no message: $(cat "$W/bad.txt")"
done
"$TD" --help > "$W/help.txt" 2>&1 || fail "--help exit"
grep -q -- "--slow ZONE=PCT" "$W/help.txt" || fail "--help lacks --slow"
echo "timedemo_cli: all checks passed"
