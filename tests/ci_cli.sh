#!/bin/sh
# ci_cli.sh MPROF WORKDIR - `mprof ci` end to end with the real binary: the built-in workload as
# the test command over a live capture, the default layout (baseline/, current/, ci-report.json),
# a failing command, a command that never connects (missing artifact), usage errors.
set -u
MPROF=$1
W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
has() { grep -q -- "$2" "$1" || fail "$1 lacks '$2'"; }
# A port of our own, so that parallel tests do not meet on 8086.
PORT=$((20000 + $$ % 30000))

# run EXPECTED NAME ARGS...
run() {
    want=$1; name=$2; shift 2
    "$MPROF" ci "$@" > "$W/$name.out" 2> "$W/$name.err"
    got=$?
    [ "$got" -eq "$want" ] || fail "$name: exit $got, expected $want: $(cat "$W/$name.out" "$W/$name.err")"
}

D="$W/Saved/Profiling/mprofCI"
# 1. No baseline yet: capture, export, report; verdict no-baseline.
run 0 first --runs 1 --output-dir "$D" --port "$PORT" -- "$MPROF" ci --self-test-workload --frames 2000
has "$D/ci-report.json" '"schema": "mprof.ciReport.v1"'
has "$D/ci-report.json" '"verdict": "no-baseline"'
has "$D/ci-report.json" '"frameCount": 2000'
has "$D/ci-report.json" '"eventsLost": 0'
has "$D/ci-report.json" '"commandExitCode": 0'
has "$D/ci-report.json" '"valid": true'
[ -s "$D/ci-capture.mprof" ] || fail "no capture artifact at the default path"
has "$D/current/frames.json" '"schema": "mprof.frames.v1"'

# A synthetic baseline run whose frames take 0.00001 ms (no real run can be that fast), with
# the workload's zones: against it any real run is a regression naming Physics, whatever the
# load on the machine. No hostname or CPU in it, so the machine guard only warns.
tiny() {
    mkdir -p "$1"
    awk -v n=2000 'BEGIN {
        printf "{\"schema\": \"mprof.frames.v1\", \"frameCount\": %d, \"frameTimesMs\": [", n
        for (i = 1; i <= n; i++) printf "%s%.6f", (i > 1 ? "," : ""), 0.00001 + (i % 7) * 1e-6
        printf "], \"zones\": ["
        split("Physics AI Render", zn, " ")
        for (z = 1; z <= 3; z++) {
            printf "%s{\"name\": \"%s\", \"totalMs\": 0.001, \"selfTotalMs\": 0.001, \"selfPerFrameMs\": [", (z > 1 ? "," : ""), zn[z]
            for (i = 1; i <= n; i++) printf "%s%.7f", (i > 1 ? "," : ""), 0.000001
            printf "]}"
        }
        printf "]}\n"
    }' > "$1/$2"
}

# 2. The default layout: DIR/baseline is used when it holds exports. The verdicts here do not
#    depend on timing (a threshold of 10000 % cannot be crossed by two runs of the same workload;
#    the timing proofs are in bench/, `make proof`).
mkdir -p "$D/baseline" && cp "$D/current/frames.json" "$D/baseline/run1.json" && cp "$D/current/frames.json" "$D/baseline/run2.json"
run 0 second --output-dir "$D" --port "$PORT" --runs 2 --skip-frames 10 --threshold 10000 -- "$MPROF" ci --self-test-workload --frames 2000
has "$D/ci-report.json" '"verdict": "pass"'
has "$D/ci-report.json" '"baselineP95FrameTimeMs"'
has "$D/ci-report.json" '"runsPerSide": 2'
[ -s "$D/current/frames-1.json" ] && [ -s "$D/current/frames-2.json" ] || fail "second: no frames-1/2.json in current/"
[ -e "$D/current/frames.json" ] && fail "second: a stale current/frames.json was left beside this run's exports"
[ -s "$D/gate-report.md" ] || fail "no Markdown gate report"
# Baseline figures are rounded as the exports round them (%.6f).
grep -Eq '"baselineP95FrameTimeMs": [0-9]+(\.[0-9]{1,6})?,' "$D/ci-report.json" || fail "baselineP95FrameTimeMs not rounded: $(grep baselineP95 "$D/ci-report.json")"

# 3. A slower build is a regression naming a zone (exit 1): against the synthetic baseline.
#    Every zone grew against it; the one named is the largest of those whose per-run means grew
#    by more than the two runs differ. Which one that is depends on where a busy machine preempts
#    the two runs (a few ms inside Physics, ~15 us a frame, moves a run's mean by 10 % or more),
#    so this checks that a zone of the workload is named; that the gate names the zone that
#    grew is test_gate's (exact exports) and `make proof`'s (the workload beside a CPU hog).
tiny "$W/tiny" run1.json
tiny "$W/tiny" run2.json
run 1 slowed --output-dir "$D" --port "$PORT" --runs 2 --baseline "$W/tiny" -- "$MPROF" ci --self-test-workload --frames 10000
has "$D/ci-report.json" '"verdict": "regression"'
grep -Eq '"topZone": "(Physics|AI|Render)"' "$D/ci-report.json" || fail "slowed: no zone of the workload named: $(grep topZone "$D/ci-report.json")"
has "$D/ci-report.json" 'no system tracing'

# 3a. One run per side cannot be significant: inconclusive, exit 0, and that is a warning, not a
#     reason (reasons[] lists failures only).
tiny "$W/tiny1" run1.json
run 0 onerun --output-dir "$W/onerun" --port "$PORT" --runs 1 --baseline "$W/tiny1" -- "$MPROF" ci --self-test-workload --frames 2000
has "$W/onerun/ci-report.json" '"verdict": "inconclusive"'
has "$W/onerun/ci-report.json" '"reasons": \[\]'
has "$W/onerun/ci-report.json" 'the gate was inconclusive'
run 1 onerun_fail --output-dir "$W/onerun" --port "$PORT" --runs 1 --fail-on-inconclusive --baseline "$W/tiny1" -- "$MPROF" ci --self-test-workload --frames 2000
grep -A1 '"reasons": \[' "$W/onerun/ci-report.json" | grep -q '^ *"the gate was inconclusive' || fail "onerun_fail: the first reason is not the inconclusive gate"

# 3b. No frames: on a side of the gate (all skipped) or in the run itself is bad input (exit 3),
#     not an inconclusive pass.
run 3 allskipped --output-dir "$D" --port "$PORT" --runs 1 --skip-frames 5000 -- "$MPROF" ci --self-test-workload --frames 2000
has "$D/ci-report.json" '"verdict": "failed"'
has "$D/ci-report.json" 'no frames in BASELINE: all 4000 were skipped'
run 3 noframes --output-dir "$W/noframes" --port "$PORT" --runs 1 -- "$MPROF" ci --self-test-workload --frames 0
has "$W/noframes/ci-report.json" 'no frames in CURRENT: the run recorded no frame marks'

# 3c. --baseline-cmd: the baseline command runs interleaved with the current one (baseline 1,
#     current 1, baseline 2, current 2), and the gate compares those runs.
run 0 interleaved --output-dir "$W/inter" --port "$PORT" --runs 2 --threshold 10000 --baseline-cmd "\"$MPROF\" ci --self-test-workload --frames 1500" -- "$MPROF" ci --self-test-workload --frames 2000
has "$W/inter/ci-report.json" '"verdict": "pass"'
has "$W/inter/ci-report.json" '"baselineCommand":'
[ -s "$W/inter/baseline-runs/frames-2.json" ] || fail "interleaved: no baseline-runs/frames-2.json"
order=$(grep -o '"side": "[a-z]*"' "$W/inter/ci-report.json" | sed 's/.*"\([a-z]*\)"$/\1/' | tr '\n' ' ')
[ "$order" = "baseline current baseline current " ] || fail "interleaved: runs[] order is '$order'"
has "$W/inter/ci-report.json" '"frameCount": 4000'

# 3d. --expect-exit: a command that ends with 3 by design is accepted when 3 is listed.
run 0 expect --output-dir "$W/expect" --port "$PORT" --runs 1 --expect-exit 0,3 -- "$MPROF" ci --self-test-workload --frames 200 --exit 3
has "$W/expect/ci-report.json" '"verdict": "no-baseline"'
has "$W/expect/ci-report.json" '"commandExitCode": 3'
run 1 expect_not --output-dir "$W/expect" --port "$PORT" --runs 1 --expect-exit 0,255 -- "$MPROF" ci --self-test-workload --frames 200 --exit 3
has "$W/expect/ci-report.json" 'the command failed with exit code 3 (not one of --expect-exit)'
run 2 expect_bad --expect-exit 0,300 -- true
has "$W/expect_bad.err" "--expect-exit needs"
run 2 runs_zero --runs 0 -- true
run 2 both_baselines --baseline "$W/tiny" --baseline-cmd true -- true
has "$W/both_baselines.err" "exclude each other"

# 4. The command fails: exit 1 with the reason, the capture still checked and kept.
run 1 cmdfail --runs 1 --output-dir "$W/fail" --port "$PORT" --required-artifact "$W/fail/art/run.mprof" -- "$MPROF" ci --self-test-workload --frames 200 --exit 3
has "$W/fail/ci-report.json" '"verdict": "failed"'
has "$W/fail/ci-report.json" 'the command failed with exit code 3'
has "$W/fail/ci-report.json" '"commandExitCode": 3'
[ -s "$W/fail/art/run.mprof" ] || fail "--required-artifact path not used"

# 5. A command that never connects: the artifact is missing (exit 3).
run 3 noart --runs 1 --output-dir "$W/noart" --port "$PORT" --drain-seconds 0.5 -- true
has "$W/noart/ci-report.json" '"verdict": "failed"'
has "$W/noart/ci-report.json" 'is missing'

# 5b. An artifact in the root directory: its directory is "" (make_dirs read past the end of
#     the buffer there). Nothing connects, so nothing is written to /.
RA="/mprof-ci-root-$$.mprof"
run 3 rootart --runs 1 --output-dir "$W/rootart" --port "$PORT" --drain-seconds 0.5 --required-artifact "$RA" -- true
has "$W/rootart/ci-report.json" 'is missing'
grep -q 'cannot create' "$W/rootart/ci-report.json" && fail "rootart: $(cat "$W/rootart/ci-report.json")"
[ -f "$RA" ] && [ ! -L "$RA" ] && rm -f "$RA"

# 6. Another instrumented process owns the port: its capture is not taken for this run's. (Its
#    capture would go on until the drain time is up: the other process runs on.)
PORT2=$((PORT + 1))
MPROF_LISTEN=1 MPROF_PORT=$PORT2 "$MPROF" ci --self-test-workload --frames 5000000 > /dev/null 2>&1 &
other=$!
# Wait until it listens (a loaded machine can take seconds to start it): /proc/net/tcp lists
# listening sockets with state 0A and the port in hex.
hexport=$(printf '%04X' "$PORT2")
i=0
while [ "$i" -lt 200 ] && ! grep -q ":$hexport 00000000:0000 0A" /proc/net/tcp /proc/net/tcp6 2> /dev/null; do
    sleep 0.1
    i=$((i + 1))
done
run 0 otherproc --runs 1 --output-dir "$W/other" --port "$PORT2" --drain-seconds 1 -- "$MPROF" ci --self-test-workload --frames 2000
has "$W/other/ci-report.json" 'recorded another process'
has "$W/other/ci-report.json" '"source": "in-process"'
has "$W/other/ci-report.json" '"frameCount": 2000'
# 6a. The same with --required-artifact a symlink: falling back to the in-process file must not
#     rename it over the link (nor over a device node); the in-process file is the artifact.
T=$(mktemp -d) || exit 1
echo keep > "$T/target"
ln -s "$T/target" "$T/link.mprof"
run 0 symlinkart --runs 1 --output-dir "$W/symart" --port "$PORT2" --drain-seconds 1 --required-artifact "$T/link.mprof" -- "$MPROF" ci --self-test-workload --frames 2000
[ -L "$T/link.mprof" ] || fail "symlinkart: the --required-artifact symlink was replaced"
has "$W/symart/ci-report.json" '"source": "in-process"'
has "$W/symart/ci-report.json" "\"path\": \"$W/symart/inprocess-capture.mprof\""
has "$W/symart/ci-report.json" '"frameCount": 2000'
[ -s "$W/symart/inprocess-capture.mprof" ] || fail "symlinkart: the in-process artifact is gone"
rm -rf "$T"
kill "$other" 2> /dev/null
wait "$other" 2> /dev/null

# 6b. A wrapper between ci and the instrumented process (sh -c): the live capture's pid is not
#     the direct child's, but it matches the in-process capture's, so it is this run's. The
#     workload runs about 3 s (0.6 s under ASan at load let the capture connect too late once).
run 0 wrapped --runs 1 --output-dir "$W/wrapped" --port "$PORT" -- sh -c "\"$MPROF\" ci --self-test-workload --frames 150000; exit \$?"
has "$W/wrapped/ci-report.json" '"source": "live"'
has "$W/wrapped/ci-report.json" '"frameCount": 150000'
grep -q 'recorded another process' "$W/wrapped/ci-report.json" && fail "wrapped: live capture rejected"

# 6c. The instrumented process is killed with -9 during the capture while the command exits 0:
#     the capture did not end cleanly, so the run fails, and the report says "complete": false.
#     When the process dies before the capture connects the run fails too (no artifact), so
#     the check holds however loaded the machine is; --allow-incomplete accepts a cut capture.
# Exit 1 (the capture was cut) or 3 (killed before it connected: no artifact); never 0.
"$MPROF" ci --output-dir "$W/killed9" --port "$PORT" -- sh -c "\"$MPROF\" ci --self-test-workload --frames 10000000 & sleep 2; kill -9 \$!; wait; exit 0" > "$W/killed9.out" 2> "$W/killed9.err"
got=$?
[ "$got" -eq 1 ] || [ "$got" -eq 3 ] || fail "killed9: exit $got, expected 1 or 3: $(cat "$W/killed9.out" "$W/killed9.err")"
if grep -q '"valid": true' "$W/killed9/ci-report.json"; then
    has "$W/killed9/ci-report.json" 'did not end cleanly'
    has "$W/killed9/ci-report.json" '"complete": false'
    # The capture object says how it ended, whatever number of runs came before: the live
    #     capture lost its peer, or, when it had not connected within the 2 s (a loaded
    #     machine), the in-process file was cut off.
    if grep -q '"source": "live"' "$W/killed9/ci-report.json"; then
        has "$W/killed9/ci-report.json" '"ending": "peer-lost"'
    else
        has "$W/killed9/ci-report.json" '"source": "in-process"'
        has "$W/killed9/ci-report.json" '"ending": "cut-off"'
    fi
    run 0 killed9ok --output-dir "$W/killed9ok" --port "$PORT" --allow-incomplete -- sh -c "\"$MPROF\" ci --self-test-workload --frames 10000000 & sleep 2; kill -9 \$!; wait; exit 0"
fi

# 7. Usage errors.
run 2 nocmd --output-dir "$W/x"
has "$W/nocmd.err" "no command to run"
run 2 badport --port 70000 -- true
run 0 help --help
has "$W/help.out" "mprof.ciReport.v1"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "ci_cli: all checks passed"
