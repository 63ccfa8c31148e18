#!/bin/sh
# The Debian package on this machine, as a user gets it: `cpack -G DEB` makes
# mprof_<version>_<arch>.deb from this build; `apt-get install ./mprof_*.deb` installs it with its
# Debian dependencies; then the installed files are used as a user would: the shared libraries
# under their versioned sonames, `man mprof-report`, `mprof doctor`, a consumer built with
# pkg-config and one with find_package(mprof), a program written against Tracy's C API built with
# `pkg-config mprof-tracy` and with mprof::tracy, each run and its capture read by the installed
# mprof; finally the package is purged and every file it installed must be gone. The machine is
# left without mprof whatever happens (a trap purges it). Needs root, or sudo without a
# password: installing a package is what the test is about, so it fails rather than skips.
# usage: check_deb.sh BUILD_DIR SOURCE_DIR [CPACK]
set -u
build=$1 src=$2 cpack=${3:-cpack}
tmp=$(mktemp -d)
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then
        sudo="sudo -n"
    else
        echo "FAIL: the package test installs a Debian package: run it as root, or with sudo that needs no password"
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
apt="$sudo apt-get -q -y -o DPkg::Lock::Timeout=600"
if dpkg -s mprof >/dev/null 2>&1; then
    echo "FAIL: a package named mprof is already installed ($(dpkg-query -W -f='${Version}' mprof));"
    echo "      the test installs and removes its own: remove it first (apt-get purge mprof)"
    exit 1
fi
installed=""
cleanup() {
    if [ -n "$installed" ] && dpkg -s mprof >/dev/null 2>&1; then
        $apt purge mprof >/dev/null 2>&1 || $sudo dpkg --purge mprof >/dev/null 2>&1
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
    echo "FAIL: $*"
    exit 1
}

# ---- build the package -----------------------------------------------------------------------
(cd "$build" && "$cpack" -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) ||
    { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/pkg/mprof_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || fail "cpack made no mprof_*.deb"
echo "package: $(basename "$deb"), $(wc -c <"$deb") bytes"
depends=$(dpkg-deb -f "$deb" Depends)
for d in libzstd1 libxxhash0 libunwind8 libcjson1 libmicrohttpd12 libsqlite3-0 libpq5 libdw1; do
    case "$depends" in *"$d"*) ;; *) fail "Depends lacks $d: $depends" ;; esac
done

# ---- install it --------------------------------------------------------------------------------
installed=1
$apt install --no-install-recommends "$deb" >"$tmp/apt.log" 2>&1 ||
    { cat "$tmp/apt.log"; fail "apt-get install ./$(basename "$deb")"; }
dpkg -s mprof | grep -q '^Status: install ok installed' || fail "dpkg does not list mprof as installed"
dpkg -L mprof >"$tmp/files"
for f in /usr/bin/mprof /usr/include/mprof/mprof.h /usr/include/mprof/tracy/TracyC.h \
    /usr/lib/cmake/mprof/mprofConfig.cmake /usr/share/man/man1/mprof.1 \
    /usr/share/man/man1/mprof-report.1 /usr/share/doc/mprof/MIGRATING.md; do
    grep -qx "$f" "$tmp/files" || fail "the package does not install $f"
done
for lib in mprof mprof_tracy; do
    so=$(grep "/lib$lib\.so\.[0-9]*\.[0-9]*\.[0-9]*$" "$tmp/files" | head -n1)
    [ -n "$so" ] || fail "no versioned lib$lib.so.X.Y.Z"
    soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
    [ "$soname" = "lib$lib.so.0" ] || fail "lib$lib's soname is '$soname', not lib$lib.so.0"
    ldconfig -p | grep -q "lib$lib.so.0 " || fail "ldconfig does not know lib$lib.so.0"
done
pc=$(grep '/mprof.pc$' "$tmp/files")
pcdir=$(dirname "$pc")

# ---- use it as a user would ---------------------------------------------------------------------
mprof=/usr/bin/mprof
[ "$(command -v mprof)" = /usr/bin/mprof ] || [ -x /usr/bin/mprof ] || fail "no mprof on PATH"
MANWIDTH=100 man mprof-report 2>"$tmp/man.err" | col -b >"$tmp/man.txt"
grep -q '^NAME' "$tmp/man.txt" && grep -q 'mprof-report - print statistics of a capture' "$tmp/man.txt" ||
    fail "man mprof-report does not show the page: $(head -3 "$tmp/man.txt") $(cat "$tmp/man.err")"
man -w mprof >/dev/null 2>&1 || fail "man mprof finds no page"
"$mprof" doctor --json >"$tmp/doctor.json"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "mprof doctor exited $rc"
grep -q '"schema": "mprof.doctor.v1"' "$tmp/doctor.json" || fail "mprof doctor --json"

export PKG_CONFIG_PATH="$pcdir"
run_and_count() { # program, capture, zone name, count expected
    MPROF_LISTEN=0 MPROF_CAPTURE="$2" "$1" >/dev/null || fail "$1 failed"
    "$mprof" report --json "$2" >"$tmp/r.json" || fail "mprof report $2"
    awk -v n="\"name\": \"$3\"" -v c="\"count\": $4," 'index($0, n) { hit = 1 } hit && index($0, c) { ok = 1; exit }
        hit && /}/ { hit = 0 } END { exit !ok }' "$tmp/r.json" ||
        fail "$1: the report has no zone '$3' with count $4"
}
cc -DMPROF_ENABLE "$src/tests/install/consumer.c" -o "$tmp/pc_consumer" $(pkg-config --cflags --libs mprof) ||
    fail "pkg-config mprof: the consumer does not build"
run_and_count "$tmp/pc_consumer" "$tmp/a.mprof" consumer 10
cc -std=c11 -DTRACY_ENABLE -DTRACY_MANUAL_LIFETIME "$src/tests/tracy/tracy_game.c" -o "$tmp/pc_tracy" \
    $(pkg-config --cflags --libs mprof-tracy) -lpthread ||
    fail "pkg-config mprof-tracy: the Tracy program does not build"
run_and_count "$tmp/pc_tracy" "$tmp/b.mprof" Frame 120
# find_package(mprof) from /usr, with no hint: shared, static and mprof::tracy.
cmake -S "$src/tests/install" -B "$tmp/consumer" >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/consumer" >>"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log"; fail "find_package(mprof): the consumers do not build"; }
grep -q 'mprof_DIR:PATH=/usr/lib' "$tmp/consumer/CMakeCache.txt" ||
    fail "find_package(mprof) did not find the installed package: $(grep mprof_DIR "$tmp/consumer/CMakeCache.txt")"
run_and_count "$tmp/consumer/consumer" "$tmp/c.mprof" consumer 10
run_and_count "$tmp/consumer/consumer_static" "$tmp/d.mprof" consumer 10
run_and_count "$tmp/consumer/tracy_game" "$tmp/e.mprof" Frame 120

# ---- remove it -----------------------------------------------------------------------------------
$apt purge mprof >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log"; fail "apt-get purge mprof"; }
installed=""
dpkg -s mprof >/dev/null 2>&1 && fail "mprof is still installed after purge"
left=""
while read -r f; do
    [ -d "$f" ] && continue
    [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done <"$tmp/files"
[ -z "$left" ] || fail "files left after purge:$left"
ldconfig -p | grep -q 'libmprof' && fail "ldconfig still lists libmprof after purge"
echo "package ok: $(basename "$deb") installed with apt-get, man mprof-report, mprof doctor, consumers built with pkg-config (mprof, mprof-tracy) and find_package (shared, static, mprof::tracy) recorded, purged cleanly"
