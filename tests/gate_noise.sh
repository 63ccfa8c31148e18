#!/bin/sh
# gate_noise.sh WORKLOAD MPROF WORKDIR [TRIALS] [FRAMES] [ITERS] - the gate's proof on noise.
#
# On this machine, as it is (shared, noisy), TRIALS times each:
#   unchanged: record a baseline run and a current run of the same workload back to back, export
#              both, gate current against baseline: the verdict must never be "regression";
#   slowed:    the same with the current run's Physics zone doing 15 % more work (--slow 15): the
#              verdict must be "regression" and name Physics as the zone where the time went.
# Baseline and current are recorded next to each other in time, in alternating order, so that
# both see the same load, as an A/B benchmark on a shared runner should be. Prints one line per gate run and a summary.
set -u
WORKLOAD=$1
MPROF=$2
W=$3
TRIALS=${4:-10}
FRAMES=${5:-5000}
# ~0.1 ms frames: with ~20 us frames a few microseconds of interrupt noise in the slowest frames
# shrank a real 15 % slowdown to a 7 % p95 change on a loaded machine (seen twice in 10 runs).
ITERS=${6:-50000}
rm -rf "$W" && mkdir -p "$W" || exit 1
# The library writes these into each capture; the gate's machine guard compares the build type.
MPROF_BUILD_TYPE=${MPROF_BUILD_TYPE:-gate-noise}
export MPROF_BUILD_TYPE

record() { # NAME SLOW_PCT
    "$WORKLOAD" --capture "$W/$1.mprof" --export "$W/$1.json" --frames "$FRAMES" --iters "$ITERS" --slow "$2" \
        || { echo "gate_noise: workload failed for $1"; exit 1; }
}

unchanged_regressions=0; unchanged_pass=0; unchanged_inconclusive=0
slowed_named=0; slowed_other=0
for kind in unchanged slowed; do
    slow=0
    [ "$kind" = slowed ] && slow=15
    i=1
    while [ "$i" -le "$TRIALS" ]; do
        # Alternate which side runs first, so that a drift in time favours neither.
        if [ $((i % 2)) -eq 1 ]; then
            record "${kind}_base_$i" 0
            record "${kind}_cur_$i" "$slow"
        else
            record "${kind}_cur_$i" "$slow"
            record "${kind}_base_$i" 0
        fi
        "$MPROF" gate --baseline "$W/${kind}_base_$i.json" --current "$W/${kind}_cur_$i.json" \
            --skip-frames 10 --json "$W/${kind}_$i.report.json" > "$W/${kind}_$i.txt" 2>&1
        code=$?
        ratio=$(sed -n 's/.*p95 ratio \([0-9.]*\) vs limit.*/\1/p' "$W/${kind}_$i.txt")
        zone=$(sed -n 's/.*most of the growth is in zone "\([^"]*\)".*/\1/p' "$W/${kind}_$i.txt")
        verdict=$(sed -n 's/^mprof gate: \([A-Z]*\) (exit.*/\1/p' "$W/${kind}_$i.txt")
        echo "gate_noise: $kind run $i: exit $code ${verdict:-?} p95 ratio ${ratio:-?}${zone:+ zone $zone}"
        if [ "$kind" = unchanged ]; then
            case $code in
                0) unchanged_pass=$((unchanged_pass + 1)) ;;
                2) unchanged_inconclusive=$((unchanged_inconclusive + 1)) ;;
                *) unchanged_regressions=$((unchanged_regressions + 1)); cat "$W/${kind}_$i.txt" ;;
            esac
        else
            if [ "$code" -eq 1 ] && [ "$zone" = Physics ]; then
                slowed_named=$((slowed_named + 1))
            else
                slowed_other=$((slowed_other + 1)); cat "$W/${kind}_$i.txt"
            fi
        fi
        i=$((i + 1))
    done
done
echo "gate_noise: unchanged, $TRIALS gate runs: $unchanged_pass pass, $unchanged_inconclusive inconclusive, $unchanged_regressions regression"
echo "gate_noise: Physics 15 % slower, $TRIALS gate runs: $slowed_named regression naming Physics, $slowed_other other"
[ "$unchanged_regressions" -eq 0 ] && [ "$slowed_named" -eq "$TRIALS" ]
