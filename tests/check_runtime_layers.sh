#!/bin/sh
# check_runtime_layers.sh NM OBJECT... - the runtime's files call each other one way.
#
# Every symbol an object file uses and another one defines (a call or a data reference) is an
# edge between the two files; tsort(1) orders the edges and names any loop it finds. A loop is a
# call circle (src/runtime/README.md lists the order the files keep), so the test fails on it.
set -eu
nm=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in "$@"; do
    name=$(echo "$o" | sed 's|.*\.dir/||; s|\.o$||')
    "$nm" --defined-only -g "$o" | awk -v f="$name" 'NF == 3 { print $3, f }' >> "$tmp/defs"
    "$nm" --undefined-only "$o" | awk -v f="$name" '{ print $NF, f }' >> "$tmp/uses"
done
sort -k1,1 "$tmp/defs" > "$tmp/defs.s"
sort -k1,1 "$tmp/uses" > "$tmp/uses.s"
# user definer, for every symbol defined in one runtime file and used in another
join "$tmp/uses.s" "$tmp/defs.s" | awk '$2 != $3 { print $2, $3 }' | sort -u > "$tmp/edges"
n=$(wc -l < "$tmp/edges")
if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loops"; then
    echo "check_runtime_layers: the runtime's files call each other in a circle:"
    sed "s|^tsort: $tmp/edges: input contains a loop:|  a circle:|; s|^tsort: |    |" "$tmp/loops"
    exit 1
fi
if [ "$n" -eq 0 ]; then
    echo "check_runtime_layers: no edge found among $# objects (nm failed?)"
    exit 1
fi
echo "check_runtime_layers: $# files, $n one-way edges, no circle"
