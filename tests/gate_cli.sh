#!/bin/sh
# gate_cli.sh MPROF WORKDIR - drives the real `mprof gate` binary: exit codes 0/1/2/3, the text
# verdict, the JSON and Markdown reports, and the messages for bad input. Frame exports are made
# with awk (same model as tests/test_gate.c: Physics ~4 ms, Render ~8 ms, AI ~2 ms per frame).
set -u
MPROF=$1
W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# export NAME SEED FRAMES RENDER_SCALE HOSTNAME
export_json() {
    awk -v seed="$2" -v n="$3" -v scale="$4" -v host="$5" -v file="$1" 'BEGIN {
        srand(seed)
        split("Physics Render AI", zn, " "); zm[1] = 4; zm[2] = 8; zm[3] = 2
        for (i = 1; i <= n; i++) {
            f[i] = 0.5
            for (z = 1; z <= 3; z++) {
                v = zm[z] * (0.85 + 0.3 * rand())
                if (rand() < 0.03) v *= 1.5
                if (z == 2) v *= scale
                zt[z, i] = v; tot[z] += v; f[i] += v
            }
        }
        printf "{\"schema\": \"mprof.frames.v1\", \"capture\": {\"file\": \"%s\", \"hostname\": \"%s\", \"cpu\": \"awk\", \"buildType\": \"Release\"},\n", file, host
        printf "\"frameCount\": %d, \"frameTimesMs\": [", n
        for (i = 1; i <= n; i++) printf "%s%.4f", (i > 1 ? "," : ""), f[i]
        printf "],\n\"zones\": ["
        for (z = 1; z <= 3; z++) {
            printf "%s{\"name\": \"%s\", \"totalMs\": %.4f, \"selfTotalMs\": %.4f, \"selfPerFrameMs\": [", (z > 1 ? "," : ""), zn[z], tot[z], tot[z]
            for (i = 1; i <= n; i++) printf "%s%.4f", (i > 1 ? "," : ""), zt[z, i]
            printf "]}"
        }
        printf "]}\n"
    }' > "$W/$1"
}

export_json base.json 1 600 1.0 h1
export_json same.json 2 600 1.0 h1
export_json slow.json 3 600 1.28 h1
mkdir -p "$W/base2" "$W/slow2"
export_json base2/r1.json 11 600 1.0 h1
export_json base2/r2.json 12 600 1.0 h1
export_json base2/r3.json 15 600 1.0 h1
export_json slow2/r1.json 13 600 1.28 h1
export_json slow2/r2.json 14 600 1.28 h1
export_json slow2/r3.json 16 600 1.28 h1
export_json few.json 4 30 1.5 h1
export_json other.json 5 600 1.0 h2
printf '{"schema": "mprof.frames.v1", "frameTimesMs": [1, 2,' > "$W/bad.json"

# run EXPECTED_CODE NAME ARGS... : runs the gate, keeps stdout/stderr in $W/NAME.out/.err
run() {
    want=$1; name=$2; shift 2
    "$MPROF" gate "$@" > "$W/$name.out" 2> "$W/$name.err"
    got=$?
    [ "$got" -eq "$want" ] || fail "$name: exit $got, expected $want: $(cat "$W/$name.err")"
}
has() { grep -q -- "$2" "$W/$1" || fail "$1 lacks '$2'"; }

run 0 help --help
has help.out "Exit status: 0 pass, 1 regression, 2 inconclusive, 3 bad input"

run 0 same --baseline "$W/base.json" --current "$W/same.json"
has same.out "mprof gate: PASS (exit 0)"

# One run per side: the tests agree, but one run cannot tell a busier machine from slower code.
run 2 slow1 --baseline "$W/base.json" --current "$W/slow.json"
has slow1.out "mprof gate: INCONCLUSIVE (exit 2)"
has slow1.out "rerun with --runs 3"
has slow1.out "warning: no system tracing"

run 1 slow --baseline "$W/base2" --current "$W/slow2" --json "$W/slow.report.json" --markdown "$W/slow.md"
has slow.out "mprof gate: REGRESSION (exit 1)"
has slow.out 'most of the growth is in zone "Render"'
has slow.report.json '"schema": "mprof.gateReport.v1"'
has slow.report.json '"verdict": "regression"'
has slow.md '| `Render` |'

# A directory side: the baseline directory holds two runs.
mkdir -p "$W/basedir" && cp "$W/base.json" "$W/same.json" "$W/basedir/"
run 0 dir --baseline "$W/basedir" --current "$W/same.json"
has dir.out "runs                        2            1"

run 2 few --baseline "$W/base.json" --current "$W/few.json"
has few.out "mprof gate: INCONCLUSIVE (exit 2)"
has few.out "record 30 more"

run 3 bad --baseline "$W/base.json" --current "$W/bad.json" --json "$W/bad.report.json"
has bad.err "bad.json: malformed JSON"
has bad.report.json '"verdict": "bad-input"'

run 3 missing --baseline "$W/base.json" --current "$W/nope.json"
has missing.err "nope.json: No such file or directory"

run 3 usage --baseline "$W/base.json"
has usage.err "--baseline and --current are required"

run 3 badflag --baseline "$W/base.json" --current "$W/same.json" --threshold ten
has badflag.err "--threshold: 'ten' is not a number"

run 3 machines --baseline "$W/base.json" --current "$W/other.json"
has machines.err "hostname differs"
has machines.err "--allow-different-machines"
run 0 machines_ok --baseline "$W/base.json" --current "$W/other.json" --allow-different-machines
has machines_ok.out "warning: hostname differs"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "gate_cli: all checks passed"
