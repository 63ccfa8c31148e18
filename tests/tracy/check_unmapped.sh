#!/bin/sh
# What mprof cannot record is a compile error that says why, in C and in C++, with TRACY_ENABLE
# and without: each construct below is compiled alone and must fail with mprof's message; the
# same file with the construct replaced by a mapped one must compile (so the failure is the
# construct's, not the file's).
# usage: check_unmapped.sh CC CXX INCLUDE_DIR (the folder holding tracy/TracyC.h)
set -u
cc=$1 cxx=$2 inc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
# name | statement that must not compile | what the message must say
cases='zone_color|TracyCZoneN(z, "x", 1); TracyCZoneColor(z, 0xff0000); TracyCZoneEnd(z);|TracyCZoneColor
zone_callstack|TracyCZoneNS(z, "x", 8, 1); TracyCZoneEnd(z);|callstacks
zone_callstack_c|TracyCZoneCS(z, 0xff, 8, 1); TracyCZoneEnd(z);|callstacks
message_callstack|TracyCMessageLS("x", 8);|callstacks
message_callstack_c|TracyCMessageCS("x", 1, 0xff, 8);|callstacks
lock_mark|TracyCLockMark(lk);|TracyCLockMark
plot_watt|TracyCPlotConfig("w", TracyPlotFormatWatt, 0, 0, 0);|TracyPlotFormatWatt
image_offset|TracyCFrameImage(img, 4, 4, 2, 0);|frame offset
sampling|TracyCBeginSamplingProfiling();|MPROF_SAMPLE_HZ
gpu|___tracy_emit_gpu_zone_begin(gz);|GPU'
compile() { # lang, defines, statement, out
    lang=$1 defs=$2 stmt=$3 out=$4
    if [ "$lang" = c ]; then src=$tmp/t.c comp=$cc std=-std=c11; else src=$tmp/t.cpp comp=$cxx std=-std=c++11; fi
    cat >"$src" <<EOF2
#include <tracy/TracyC.h>
#ifdef TRACY_ENABLE
TracyCLockCtx lk;
struct ___tracy_gpu_zone_begin_data gz;
#endif
static unsigned char img[64];
void f(void);
void f(void)
{
    (void)img;
    $stmt
}
EOF2
    # shellcheck disable=SC2086
    "$comp" $std $defs -Wall -Wextra -I"$inc" -c "$src" -o "$tmp/t.o" >"$out" 2>&1
}
for lang in c cxx; do
    for defs in "-DTRACY_ENABLE" ""; do
        echo "$cases" | while IFS='|' read -r name stmt says; do
            # Without TRACY_ENABLE the lock and GPU declarations do not exist, as in Tracy.
            if [ -z "$defs" ] && { [ "$name" = lock_mark ] || [ "$name" = gpu ]; }; then continue; fi
            if compile "$lang" "$defs" "$stmt" "$tmp/out"; then
                echo "FAIL: $lang $defs $name compiled: $stmt"
                echo x >>"$tmp/failed"
            elif ! grep -q "mprof" "$tmp/out" || ! grep -q -- "$says" "$tmp/out"; then
                echo "FAIL: $lang $defs $name failed without mprof's message ('$says'):"
                head -5 "$tmp/out"
                echo x >>"$tmp/failed"
            fi
            echo x >>"$tmp/count"
        done
        # The control: the same file with a mapped statement compiles cleanly.
        if ! compile "$lang" "$defs" 'TracyCZoneN(z, "x", 1); TracyCZoneEnd(z); TracyCFrameImage(img, 4, 4, 0, 0);' "$tmp/out" ||
            [ -s "$tmp/out" ]; then
            echo "FAIL: $lang $defs the mapped control does not compile cleanly:"
            head -5 "$tmp/out"
            echo x >>"$tmp/failed"
        fi
    done
done
# TRACY_CALLSTACK stops the build at the header with its own message.
echo 'int x;' >"$tmp/cs.c"
if "$cc" -std=c11 -DTRACY_ENABLE -DTRACY_CALLSTACK=8 -include tracy/TracyC.h -I"$inc" -c "$tmp/cs.c" \
    -o "$tmp/cs.o" >"$tmp/out" 2>&1; then
    echo "FAIL: TRACY_CALLSTACK=8 compiled"
    echo x >>"$tmp/failed"
elif ! grep -q "mprof: TRACY_CALLSTACK" "$tmp/out"; then
    echo "FAIL: TRACY_CALLSTACK=8 failed without mprof's message"
    echo x >>"$tmp/failed"
fi
n=$(wc -l <"$tmp/count")
if [ -s "$tmp/failed" ]; then
    echo "unmapped: $(wc -l <"$tmp/failed") of $n checks failed"
    exit 1
fi
echo "unmapped: $n uses of unmapped Tracy API refused at compile time with mprof's message, C and C++, enabled and disabled; TRACY_CALLSTACK refused"
