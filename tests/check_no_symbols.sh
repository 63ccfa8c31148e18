#!/bin/sh
# A build without MPROF_ENABLE must reference no mprof symbol: every macro compiled away.
# usage: check_no_symbols.sh NM OBJECT...
nm=$1; shift
bad=$("$nm" -u "$@" | grep -i mprof)
if [ -n "$bad" ]; then
    echo "disabled build references mprof symbols:"; echo "$bad"; exit 1
fi
echo "no mprof symbols referenced by: $*"
