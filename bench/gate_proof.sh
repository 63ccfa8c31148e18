#!/bin/sh
# gate_proof.sh MPROF WORKDIR LABEL ZONE "COMMAND" "SLOWED ARGS" "SMALL ARGS" [TRIALS] [RUNS] - the
# regression gate on one workload under a CPU hog (`make proof` runs it for the sample engine and
# for bench/timedemo; a timing check, so it is not part of `make test`).
#
# A CPU-bound process (one busy shell loop) runs beside everything. Each trial runs three
# conditions one after the other, so that a change of the machine's load during the proof falls
# on all three alike: `mprof ci --runs RUNS --baseline-cmd "COMMAND" -- COMMAND [ARGS]` with the
# current command unchanged, with SLOWED ARGS (one zone slowed so that every frame is about 15 %
# slower) and with SMALL ARGS (one zone slowed by about 2 % of the frame), so both sides are
# interleaved (baseline 1, current 1, ...) on the same machine under the same load. Each trial's
# ci-report.json and gate-report.json give the verdict, the zone named, the noise model, the
# p95 ratios raw and decided, and how much of the p95 frames the model removed next to what the
# capture knew was runnable (and what the off-CPU x machine-busy estimate would have removed);
# the seed's bare rule (current p95 > 1.1 x baseline p95) is applied to the same runs. Prints one
# line per trial and a table; exits 1 when the table misses what docs/GATE.md promises
# (unchanged: no regression; slowed: a regression naming ZONE in every trial; small: no
# regression).
set -u
MPROF=$1
W=$2
LABEL=$3
ZONE=$4
CMD=$5
SLOWED=$6
SMALL=$7
TRIALS=${8:-4}
RUNS=${9:-3}
SKIP=${PROOF_SKIP_FRAMES:-30}
rm -rf "$W" && mkdir -p "$W" || exit 1

# The hog: one CPU-bound process for the whole proof, ended by its pid.
sh -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2> /dev/null' EXIT
trap 'kill "$hog" 2> /dev/null; exit 130' INT TERM
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

PORT=$((21000 + $$ % 20000))
summary="$W/summary.txt"
: > "$summary"

# json FILE KEY: the first number or string value of "KEY" in a report written one key a line.
# Empty when the report is missing (a failed run) or the value is null.
json() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" 2> /dev/null | grep -v '^null$' | head -1; }
# pct SHARE: a 0..1 share as a percentage with no decimals, or ? when missing.
pct() { awk -v v="${1:-}" 'BEGIN { if (v == "" || v == "null") print "?"; else printf "%.0f", 100 * v }'; }

t=1
while [ "$t" -le "$TRIALS" ]; do
    for cond in unchanged slowed small; do
        case $cond in
            unchanged) args= ;;
            slowed) args=$SLOWED ;;
            small) args=$SMALL ;;
        esac
        d="$W/$cond-$t"
        load=$(cut -d' ' -f1 /proc/loadavg)
        # The current command is split into words (the paths of a build have no spaces), so
        # that mprof ci runs the program itself, whose pid its live capture checks.
        # shellcheck disable=SC2086
        "$MPROF" ci --output-dir "$d" --port "$PORT" --runs "$RUNS" --skip-frames "$SKIP" \
            --baseline-cmd "$CMD" -- $CMD $args > "$d.out" 2>&1
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
        runs=$(json "$gate" recommendedRuns)
        bkn=$(pct "$(json "$gate" baselineP95RunnableShare)")
        ckn=$(pct "$(json "$gate" currentP95RunnableShare)")
        brm=$(pct "$(json "$gate" baselineP95RemovedShare)")
        crm=$(pct "$(json "$gate" currentP95RemovedShare)")
        bbz=$(pct "$(json "$gate" baselineP95BusyModelRemovedShare)")
        cbz=$(pct "$(json "$gate" currentP95BusyModelRemovedShare)")
        bare=pass
        awk -v c="${p95:-0}" -v b="${bp95:-0}" 'BEGIN { exit !(b > 0 && c > 1.1 * b) }' && bare=regression
        echo "gate_proof: $LABEL $cond trial $t (load $load): exit $code ${verdict:-?}${zone:+ naming $zone}${runs:+ (--runs $runs advised)}, p95 ratio decided ${ratio:-?} raw ${raw:-?}, model ${model:-?}, p95 frames runnable $bkn/$ckn %, removed $brm/$crm % (off-CPU x busy would remove $bbz/$cbz %), bare rule $bare"
        echo "$cond $t ${verdict:-failed} ${zone:--} $bare ${ratio:-?} ${raw:-?} $brm/$crm $bkn/$ckn $bbz/$cbz $load" >> "$summary"
        if [ "$code" -ne 0 ] && [ "$code" -ne 1 ]; then
            tail -5 "$d.out"
        fi
    done
    t=$((t + 1))
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill "$hog" 2> /dev/null
wait "$hog" 2> /dev/null
trap - EXIT INT TERM

echo
echo "gate_proof: $LABEL, $RUNS interleaved runs per side, a CPU hog beside it"
echo "gate_proof: load average $load_before at the start, $load_after at the end ($(nproc) CPUs)"
echo
echo "| condition | trials | regression | inconclusive | pass | failed | regression naming $ZONE | bare 10 % rule: regressions |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
ok=1
for cond in unchanged slowed small; do
    line=$(awk -v c="$cond" -v z="$ZONE" '$1 == c {
        n++; v[$3]++
        if ($3 == "regression" && index($4, z) == 1) named++
        if ($5 == "regression") bare++
    } END { printf "%d %d %d %d %d %d %d", n, v["regression"], v["inconclusive"], v["pass"], v["failed"], named, bare }' "$summary")
    set -- $line
    case $cond in
        unchanged) label="unchanged" ; [ "$2" -eq 0 ] && [ "$5" -eq 0 ] || ok=0 ;;
        slowed) label="\`$SLOWED\` (every frame ~15 % slower)" ; [ "$6" -eq "$1" ] || ok=0 ;;
        small) label="\`$SMALL\` (~2 % of the frame)" ; [ "$2" -eq 0 ] && [ "$5" -eq 0 ] || ok=0 ;;
    esac
    echo "| $label | $1 | $2 | $3 | $4 | $5 | $6 | $7 |"
done
echo
echo "| condition | trial | verdict | zone | p95 ratio decided | raw | p95 frames removed b/c % | runnable b/c % | off-CPU x busy b/c % | load |"
echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"
awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $6, $7, $8, $9, $10, $11 }' "$summary"
echo
if [ "$ok" -eq 1 ]; then
    echo "gate_proof: $LABEL: PASS"
else
    echo "gate_proof: $LABEL: FAIL (see docs/GATE.md, PROOF ON NOISE, for what each row must show)"
    exit 1
fi
