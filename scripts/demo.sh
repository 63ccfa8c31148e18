#!/bin/sh
# The main job: profile the sample engine for a few seconds with an in-process capture, then
# show the report and the next commands to try. Usage: scripts/demo.sh BUILD_DIR
set -eu
b=${1:-build}
out=Saved/Profiling/mprof
mkdir -p "$out"
engine="$b/examples/engine/mprof_engine"
mprof="$b/mprof"
if [ ! -x "$engine" ]; then
    echo "demo: $engine is missing; build with 'make build' first" >&2
    exit 3
fi
echo "demo: running the sample engine for 300 frames with profiling on (capture: $out/demo.mprof)"
MPROF_LISTEN=0 "$engine" --frames 300 --threads 2 --capture "$out/demo.mprof"
echo
"$mprof" report --top 15 --all "$out/demo.mprof"
if "$mprof" view --help >/dev/null 2>&1; then
    "$mprof" view "$out/demo.mprof" -o "$out/demo.html"
    echo
    echo "demo: timeline written to $out/demo.html (open it in a browser)"
fi
cat <<MSG

Next steps:
  $mprof report --json $out/demo.mprof        # the same summary as JSON
  $mprof report --memory --locks $out/demo.mprof
  $mprof export $out/demo.mprof --format chrome -o $out/demo.json   # open in ui.perfetto.dev
  $engine --listen & $mprof capture -o $out/live.mprof -s 5       # live capture over loopback
MSG
