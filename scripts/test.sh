#!/bin/sh
# Runs ctest in a build directory and ends with what a test run must say: every test that did
# not run, and why. A test may skip (exit 77) only for missing hardware, which its ctest label
# `hardware` declares (CUDA without an NVIDIA GPU); any other skip means something the tests
# need is not installed, and fails the run, so `make test` and CI never pass on tests that
# did not run.
# usage: test.sh BUILD_DIR [ctest options...]
set -u
build=$1
shift
cd "$build" || exit 2
mkdir -p Testing
out=Testing/mprof-ctest-output.txt
{
    ctest "$@"
    echo $? >Testing/mprof-ctest-rc
} 2>&1 | tee "$out"
rc=$(cat Testing/mprof-ctest-rc)
# The run's log, before `ctest -N` below writes a new one.
cp Testing/Temporary/LastTest.log Testing/mprof-last-test.log 2>/dev/null || : >Testing/mprof-last-test.log

skipped=$(sed -n '/The following tests did not run:/,/^$/p' "$out" | grep '(Skipped)' |
    sed 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/')
hardware=$(ctest -N -L '^hardware$' 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: \(.*\)$/\1/p')

# Why a test skipped: the lines of its last output that say so, else its last line.
reason() {
    awk -v t="$1" '
        $0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == t { grab = 0; seen = 1; n = 0; next }
        seen && /^Output:$/ { getline; grab = 1; next }
        grab && /^<end of output>$/ { grab = 0; seen = 0; next }
        grab { if ($0 != "") { line[++n] = $0 } }
        END {
            out = ""
            for (i = 1; i <= n; i++)
                if (tolower(line[i]) ~ /skip/) out = out (out == "" ? "" : " / ") line[i]
            if (out == "" && n) out = line[n]
            print out == "" ? "(no output)" : out
        }' Testing/mprof-last-test.log
}

if [ -n "$skipped" ]; then
    n=$(echo "$skipped" | wc -l)
    bad=0
    echo
    echo "Skipped tests ($n):"
    for t in $skipped; do
        if echo "$hardware" | grep -qx "$t"; then
            echo "  $t (hardware): $(reason "$t")"
        else
            echo "  $t (NOT ALLOWED): $(reason "$t")"
            bad=$((bad + 1))
        fi
    done
    if [ $bad -gt 0 ]; then
        echo "test.sh: $bad test(s) skipped for something other than missing hardware:"
        echo "test.sh: install what they need (make deps, or sh scripts/install-deps.sh) and run again"
        [ "$rc" -eq 0 ] && rc=1
    fi
else
    echo "Skipped tests: none"
fi
exit "$rc"
