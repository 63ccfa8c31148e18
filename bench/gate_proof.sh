#!/bin/sh
# gate_proof.sh MPROF ENGINE WORKDIR [TRIALS] [RUNS] - the regression gate on the sample engine
# under a CPU hog (`make proof`; a timing check, so it is not part of `make test`).
#
# A CPU-bound process (one busy shell loop) runs beside everything. For each condition, TRIALS
# times: `mprof ci --runs RUNS --baseline-cmd "ENGINE --frames 600 --renderer cpu"` with the
# current command the same engine run (unchanged), with `--slow renderer=30`, or with
# `--slow physics=15`, so that both sides are interleaved (baseline 1, current 1, ...) on the
# same machine under the same load. Each trial's ci-report.json gives the gate's verdict, the zone
# it names, whether system tracing separated the noise, and the pooled p95s, from which the
# seed's bare rule (current p95 > 1.1 x baseline p95) is computed on the same data. Prints one
# line per trial and a table; exits 1 when the table misses what docs/GATE.md promises
# (unchanged: no regression; renderer +30 %: a regression naming a Renderer zone in every trial;
# physics +15 %: no regression).
set -u
MPROF=$1
ENGINE=$2
W=$3
TRIALS=${4:-4}
RUNS=${5:-3}
FRAMES=${PROOF_FRAMES:-600}
rm -rf "$W" && mkdir -p "$W" || exit 1
[ -x "$ENGINE" ] || { echo "gate_proof: no engine at $ENGINE (build it: make build)"; exit 1; }

# The hog: one CPU-bound process for the whole proof, ended by its pid.
sh -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2> /dev/null' EXIT
trap 'kill "$hog" 2> /dev/null; exit 130' INT TERM
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

PORT=$((21000 + $$ % 20000))
base_cmd="\"$ENGINE\" --frames $FRAMES --renderer cpu"
summary="$W/summary.txt"
: > "$summary"

# json FILE KEY: the first number or string value of "KEY" in a cJSON-printed report.
json() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -1; }

for cond in unchanged renderer physics; do
    case $cond in
        unchanged) slow= ;;
        renderer) slow="--slow renderer=30" ;;
        physics) slow="--slow physics=15" ;;
    esac
    t=1
    while [ "$t" -le "$TRIALS" ]; do
        d="$W/$cond-$t"
        # shellcheck disable=SC2086
        "$MPROF" ci --output-dir "$d" --port "$PORT" --runs "$RUNS" --skip-frames 30 \
            --baseline-cmd "$base_cmd" -- "$ENGINE" --frames "$FRAMES" --renderer cpu $slow \
            > "$d.out" 2>&1
        code=$?
        rep="$d/ci-report.json"
        gate="$d/gate-report.json"
        verdict=$(json "$rep" verdict)
        zone=$(json "$rep" topZone)
        p95=$(json "$rep" p95FrameTimeMs)
        bp95=$(json "$rep" baselineP95FrameTimeMs)
        model=$(json "$gate" model)
        ratio=$(json "$gate" p95Ratio)
        raw=$(json "$gate" rawP95Ratio)
        boff=$(json "$gate" baselineP95OffCpuShare)
        coff=$(json "$gate" currentP95OffCpuShare)
        bare=pass
        awk -v c="${p95:-0}" -v b="${bp95:-0}" 'BEGIN { exit !(b > 0 && c > 1.1 * b) }' && bare=regression
        echo "gate_proof: $cond trial $t: exit $code ${verdict:-?}${zone:+ zone $zone}, p95 ratio ${ratio:-?} (raw ${raw:-?}), noise ${model:-?}, p95 off-CPU ${boff:-?}/${coff:-?}, bare rule $bare"
        echo "$cond $t ${verdict:-failed} ${zone:--} $bare" >> "$summary"
        if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then
            tail -5 "$d.out"
        fi
        t=$((t + 1))
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill "$hog" 2> /dev/null
wait "$hog" 2> /dev/null
trap - EXIT INT TERM

echo
echo "gate_proof: sample engine, --frames $FRAMES --renderer cpu, $RUNS interleaved runs per side, a CPU hog beside it"
echo "gate_proof: load average $load_before at the start, $load_after at the end ($(nproc) CPUs)"
echo
echo "| condition | trials | regression | inconclusive | pass | failed | regression naming Renderer | bare 10 % rule: regressions |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
ok=1
for cond in unchanged renderer physics; do
    line=$(awk -v c="$cond" '$1 == c {
        n++; v[$3]++
        if ($3 == "regression" && $4 ~ /^Renderer/) ren++
        if ($5 == "regression") bare++
    } END { printf "%d %d %d %d %d %d %d", n, v["regression"], v["inconclusive"], v["pass"], v["failed"], ren, bare }' "$summary")
    set -- $line
    case $cond in
        unchanged) label="unchanged" ; [ "$2" -eq 0 ] && [ "$5" -eq 0 ] || ok=0 ;;
        renderer) label="\`--slow renderer=30\`" ; [ "$6" -eq "$1" ] || ok=0 ;;
        physics) label="\`--slow physics=15\`" ; [ "$2" -eq 0 ] && [ "$5" -eq 0 ] || ok=0 ;;
    esac
    echo "| $label | $1 | $2 | $3 | $4 | $5 | $6 | $7 |"
done
echo
if [ "$ok" -eq 1 ]; then
    echo "gate_proof: PASS"
else
    echo "gate_proof: FAIL (see docs/GATE.md, PROOF ON NOISE, for what each row must show)"
    exit 1
fi
