#!/bin/sh
# read_identity.sh MPROF DATA_DIR [--record]
#
# Every output of the commands that read captures, byte for byte as mprof wrote it before its
# reader decoded in batches and on worker threads: report (text, JSON, every section), the
# Chrome, CSV and frame exports (whole and --frames 3:9), diff (text, JSON) and the viewer's
# document, on each capture in DATA_DIR, with --jobs 1, 2 and 3. DATA_DIR/NAME.sha256 holds the
# SHA-256 of what mprof wrote before, with its messages and exit status; --record writes those
# files from MPROF instead (run it with a build whose outputs changed on purpose, and say in the
# commit what changed). The recorded outputs are those of commit 507db7f, the one-event-at-a-time
# reader, with keys added since (and only added: the rest compared equal as JSON): the report's
# `async`, the frame export's critical path (`frameBlockedMs`, `framePreemptedMs`,
# `frameWaitRunnableMs`, `system.criticalPath` and its counts) and the viewer document's
# `zone_stats`.
#
# The captures: engine.mprof, the sample engine (120 frames, 2 job threads, CPU renderer: zones,
# fibers, locks, memory, plots, messages, context switches), recorded from a copy of the engine
# and its libraries in a folder deleted afterwards, so that no machine can symbolize its
# callstacks and every machine prints the same; flat.mprof, bench_core's workload (flat zones
# from one thread) at 200,000 zones; big_leaf.mprof, the same workload at a million zones
# recorded while the machine's counter stepped (nearly all ZONE_LEAF records), for which only
# the outputs whose size does not grow with the zones are compared (no Chrome, per-zone CSV or
# viewer document).
set -u
mprof=$1
data=$2
record=${3:-}
case $mprof in /*) ;; *) mprof=$(pwd)/$mprof ;; esac
case $data in /*) ;; *) data=$(pwd)/$data ;; esac
work=$(mktemp -d /tmp/mprof-identity-XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
# The frame export quotes a git SHA: the capture's, else this one.
MPROF_GIT_SHA=0123456789abcdef0123456789abcdef01234567
export MPROF_GIT_SHA
fail=0

# run OUT CMD...: the command's exit status, messages and output file (if any) as one hash.
outputs() {
    j=$1
    J=""
    [ "$j" != 0 ] && J="--jobs $j"
    o=out
    rm -rf $o
    mkdir $o
    run() {
        what=$1
        shift
        "$@" > $o/$what.stdout 2> $o/$what.stderr
        echo "exit $?" >> $o/$what.stderr
    }
    run report $mprof report $J capture.mprof
    run report_top0 $mprof report $J --top 0 --all capture.mprof
    run report_json $mprof report $J --json capture.mprof
    run report_all_json $mprof report $J --json --all capture.mprof
    run csv $mprof export $J capture.mprof --format csv -o $o/zones.csv
    run frames $mprof export $J capture.mprof --format frames -o $o/frames.json
    run frames_range $mprof export $J capture.mprof --format frames --frames 3:9 -o $o/frames_r.json
    run diff $mprof diff $J capture.mprof capture.mprof
    run diff_json $mprof diff $J --json capture.mprof capture.mprof
    if [ "$big" = 0 ]; then
        run chrome $mprof export $J capture.mprof --format chrome -o $o/chrome.json
        run perzone $mprof export $J capture.mprof --format csv --per-zone -o $o/perzone.csv
        run chrome_range $mprof export $J capture.mprof --format chrome --frames 3:9 -o $o/chrome_r.json
        run view $mprof view $J capture.mprof --json -o $o/view.json
    fi
    (cd $o && for f in $(ls | sort); do echo "$(sha256sum < $f | cut -c1-64)  $f"; done)
}

# A checkout without the captures (they are committed beside their hashes) compares nothing:
# that is a failure, not a pass.
n_caps=$(ls "$data"/*.mprof 2>/dev/null | wc -l)
if [ "$n_caps" = 0 ]; then
    echo "read_identity: no capture in $data (tests/data/read_identity/*.mprof)" >&2
    exit 1
fi
for cap in "$data"/*.mprof; do
    name=$(basename "$cap" .mprof)
    case $name in big_*) big=1 ;; *) big=0 ;; esac
    rm -rf "$work/$name"
    mkdir -p "$work/$name"
    cp "$cap" "$work/$name/capture.mprof"
    cd "$work/$name" || exit 1
    if [ "$record" = "--record" ]; then
        outputs 0 > "$data/$name.sha256"
        echo "recorded $data/$name.sha256"
        continue
    fi
    for j in 1 2 3; do
        outputs $j > got.$j
        if ! cmp -s "$data/$name.sha256" got.$j; then
            echo "$name, --jobs $j: outputs differ from before:"
            diff "$data/$name.sha256" got.$j | grep '^>' | sed 's/^> /  /'
            fail=1
        fi
    done
done
if [ "$record" != "--record" ]; then
    [ $fail = 0 ] && echo "read_identity: every output of $(ls "$data"/*.mprof | wc -l) captures is as before, with --jobs 1, 2 and 3"
fi
exit $fail
