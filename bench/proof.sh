#!/bin/sh
# proof.sh BUILD - `make proof`: the checks whose outcome depends on timing and on the machine's
# load, kept out of `make test` (docs/GATE.md, PROOF ON NOISE). Each prints its own figures;
# the script exits 1 when any of them misses what it must show.
#   1. mprof ci --self-test: the built-in workload through the whole ci pipeline, interleaved;
#   2. bench/gate_noise.sh: the small gate workload, unchanged and Physics +30 %, 3 runs a side;
#   3. bench/gate_proof.sh on the sample engine (16 ms-class frames, a main thread that waits for
#      two job workers) and on bench/timedemo (a single-threaded loop of 0.2-0.5 ms frames), each
#      under a CPU hog: unchanged, one zone slowed so that every frame is about 15 % slower, one
#      zone slowed by about 2 % of the frame; 3 interleaved runs per side, PROOF_TRIALS (4)
#      trials each.
set -u
B=${1:-build}
HERE=$(dirname "$0")
OUT="$B/proof"
mkdir -p "$OUT" || exit 1
status=0
echo "# proof: load average $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"

echo "# proof: mprof ci --self-test"
"$B/mprof" ci --self-test --output-dir "$OUT/self-test" || status=1

echo "# proof: bench/gate_noise.sh"
sh "$HERE/gate_noise.sh" "$B/tests/gate_workload" "$B/mprof" "$OUT/gate_noise" "${PROOF_NOISE_TRIALS:-5}" || status=1

# --slow-cpu burns a share of the subsystem's CPU time, so the slowdown is the same at any load:
# renderer=30 adds about 1 ms on-CPU, which overlaps the job workers in part: +15 % to the
# median decision frame (3.8 ms under the hog); physics=40 about 0.08 ms (2 %). The timedemo's
# Render::planes is 46 % of its frame (planes=33: +15 %), Render::walls 23 % (walls=9: +2 %).
ENGINE="$B/examples/engine/mprof_engine --frames 600 --renderer cpu --quiet"
echo "# proof: bench/gate_proof.sh, the sample engine"
sh "$HERE/gate_proof.sh" "$B/mprof" "$OUT/engine" "sample engine" Renderer "$ENGINE" \
    "--slow-cpu renderer=30" "--slow-cpu physics=40" "${PROOF_TRIALS:-4}" || status=1

TIMEDEMO="$B/bench/timedemo --frames 4800 --quiet"
echo "# proof: bench/gate_proof.sh, the sub-millisecond timedemo"
sh "$HERE/gate_proof.sh" "$B/mprof" "$OUT/timedemo" "timedemo (sub-millisecond)" Render::planes \
    "$TIMEDEMO" "--slow planes=33" "--slow walls=9" "${PROOF_TRIALS:-4}" || status=1

echo "# proof: $( [ "$status" -eq 0 ] && echo PASS || echo FAIL ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
