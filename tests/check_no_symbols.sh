#!/bin/sh
# A build without MPROF_ENABLE must reference no mprof symbol: every macro compiled away.
# usage: check_no_symbols.sh NM OBJECT...
# Symbols are matched, not nm's lines: nm prints the object's path too, and a checkout whose path
# contains "mprof" must not fail. Each object is listed alone in POSIX format ("name type ..."),
# so the first field is always a symbol.
nm=$1; shift
bad=""
for obj in "$@"; do
    syms=$("$nm" -u -P "$obj") || { echo "cannot list symbols of $obj"; exit 1; }
    hit=$(printf '%s\n' "$syms" | awk 'NF >= 2 { print $1 }' | grep -i mprof)
    if [ -n "$hit" ]; then bad="$bad$obj: $hit
"; fi
done
if [ -n "$bad" ]; then
    echo "disabled build references mprof symbols:"; printf '%s' "$bad"; exit 1
fi
echo "no mprof symbols referenced by: $*"
