#!/bin/sh
# Regression test for check_no_symbols.sh: it must judge symbols, not nm's lines, so a checkout
# whose path contains "mprof" passes, and it must still catch a real mprof reference.
# usage: check_no_symbols_selftest.sh NM OFF_OBJECT ON_OBJECT
nm=$1; off=$2; on=$3
here=$(dirname "$0")
dir=$(mktemp -d "${TMPDIR:-/tmp}/mprof-checkout.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/mprof/build"
cp "$off" "$dir/mprof/build/a_mprof_off.o" && cp "$off" "$dir/mprof/build/b_mprof_off.o" &&
    cp "$on" "$dir/mprof/build/mprof_on.o" || exit 1
# Two objects, so nm prints each object's path (which contains "mprof") as a header line.
if ! sh "$here/check_no_symbols.sh" "$nm" "$dir/mprof/build/a_mprof_off.o" \
        "$dir/mprof/build/b_mprof_off.o"; then
    echo "FAIL: disabled objects under a path containing mprof were rejected"; exit 1
fi
if sh "$here/check_no_symbols.sh" "$nm" "$dir/mprof/build/a_mprof_off.o" \
        "$dir/mprof/build/mprof_on.o" >/dev/null; then
    echo "FAIL: an object referencing mprof symbols was accepted"; exit 1
fi
echo "check_no_symbols.sh matches symbols, not paths"
