#!/bin/sh
# MPROF_SHIPPING together with MPROF_ENABLE must fail to compile with the exact message.
# usage: check_shipping_guard.sh CC INCLUDE_DIR SOURCE
cc=$1 inc=$2 src=$3
want='mprof: shipping builds must not enable profiling (MPROF_ENABLE); instrumentation is stripped by leaving MPROF_ENABLE undefined.'
if out=$("$cc" -DMPROF_SHIPPING -DMPROF_ENABLE -I"$inc" -fsyntax-only "$src" 2>&1); then
    echo "FAIL: shipping+enable compiled"; exit 1
fi
echo "$out" | grep -qF "$want" || { echo "FAIL: message not found in:"; echo "$out"; exit 1; }
"$cc" -DMPROF_SHIPPING -I"$inc" -fsyntax-only "$src" || { echo "FAIL: shipping alone must compile"; exit 1; }
echo "shipping guard ok: $want"
