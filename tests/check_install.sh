#!/bin/sh
# Installs this build into a temporary prefix, then builds a consumer with CMake
# (find_package(mprof), shared and static) and with pkg-config, runs it with a capture and
# reads the capture back with the installed mprof.
set -eu
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -n1)
LD_LIBRARY_PATH="$libdir" MPROF_LISTEN=0 MPROF_CAPTURE="$tmp/a.mprof" "$tmp/consumer/consumer"
MPROF_LISTEN=0 MPROF_CAPTURE="$tmp/b.mprof" "$tmp/consumer/consumer_static"
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -DMPROF_ENABLE "$src/tests/install/consumer.c" -o "$tmp/pc" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs mprof)
LD_LIBRARY_PATH="$libdir" MPROF_LISTEN=0 MPROF_CAPTURE="$tmp/c.mprof" "$tmp/pc"
for f in a b c; do
    "$tmp/prefix/bin/mprof" report --json "$tmp/$f.mprof" | grep -q '"count": 10' ||
        { echo "FAIL: capture $f has no 10 zones"; exit 1; }
done
# A program written against Tracy's C API: with mprof::tracy, and with pkg-config mprof-tracy.
LD_LIBRARY_PATH="$libdir" MPROF_LISTEN=0 MPROF_CAPTURE="$tmp/t1.mprof" "$tmp/consumer/tracy_game"
cc -std=c11 -DTRACY_ENABLE -DTRACY_MANUAL_LIFETIME "$src/tests/tracy/tracy_game.c" -o "$tmp/tg" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs mprof-tracy) -lpthread
LD_LIBRARY_PATH="$libdir" MPROF_LISTEN=0 MPROF_CAPTURE="$tmp/t2.mprof" "$tmp/tg"
for f in t1 t2; do
    "$tmp/prefix/bin/mprof" report --json "$tmp/$f.mprof" | grep -q '"count": 120' ||
        { echo "FAIL: capture $f has no 120 Frame zones"; exit 1; }
done
echo "install ok: CMake package (shared, static, mprof::tracy) and pkg-config (mprof, mprof-tracy) consumers recorded their zones"
