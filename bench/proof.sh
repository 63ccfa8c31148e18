#!/bin/sh
# proof.sh BUILD - `make proof`: the checks whose outcome depends on timing and on the machine's
# load, kept out of `make test` (docs/GATE.md, PROOF ON NOISE). Each prints its own figures;
# the script exits 1 when any of them misses what it must show.
#   1. mprof ci --self-test: the built-in workload through the whole ci pipeline, interleaved;
#   2. bench/gate_noise.sh: the small gate workload, unchanged and Physics +15 %, 3 runs a side;
#   3. bench/gate_proof.sh: the sample engine under a CPU hog (renderer +30 %, physics +15 %,
#      unchanged), 3 interleaved runs per side, PROOF_TRIALS (4) trials each.
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

echo "# proof: bench/gate_proof.sh"
sh "$HERE/gate_proof.sh" "$B/mprof" "$B/examples/engine/mprof_engine" "$OUT/engine" "${PROOF_TRIALS:-4}" || status=1

echo "# proof: $( [ "$status" -eq 0 ] && echo PASS || echo FAIL ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
