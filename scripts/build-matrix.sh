#!/bin/sh
# Builds mprof in every standard configuration, with its defaults, and fails on the first
# warning: Debug, Release, RelWithDebInfo and MinSizeRel with gcc and with clang (tests,
# benchmarks and examples included, as a top-level build has them), and a packager's build
# (tests, benchmarks and examples off, Debian's dpkg-buildflags, CMAKE_BUILD_TYPE=None as
# debhelper passes it). Warnings are errors here (MPROF_WERROR=ON), as in every build of the
# project's own; a user's build keeps them warnings.
# usage: build-matrix.sh [CONFIG...]   CONFIG: gcc-Debug ... clang-MinSizeRel, packager
#        (default: all nine). SKIP="gcc-RelWithDebInfo" leaves out configurations another
#        step already builds (CI: make test builds gcc-RelWithDebInfo). Build trees go to
#        build-matrix/CONFIG and are removed after a good build unless KEEP=1.
set -eu
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
all="gcc-Debug gcc-Release gcc-RelWithDebInfo gcc-MinSizeRel clang-Debug clang-Release clang-RelWithDebInfo clang-MinSizeRel packager"
configs=${*:-$all}
skip=${SKIP:-}
start=$(date +%s)
done_list=""
for cfg in $configs; do
    case " $skip " in *" $cfg "*) echo "matrix: $cfg skipped (SKIP)"; continue ;; esac
    dir=build-matrix/$cfg
    t0=$(date +%s)
    rm -rf "$dir"
    mkdir -p build-matrix
    case $cfg in
    gcc-*|clang-*)
        cc=${cfg%%-*} type=${cfg#*-}
        cxx=g++
        [ "$cc" = clang ] && cxx=clang++
        CC=$cc CXX=$cxx cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DMPROF_WERROR=ON >"$dir.log" 2>&1 ||
            { cat "$dir.log"; echo "matrix: FAIL: $cfg does not configure"; exit 1; }
        ;;
    packager)
        cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=None -DMPROF_BUILD_TESTS=OFF \
            -DMPROF_BUILD_BENCH=OFF -DMPROF_BUILD_EXAMPLES=OFF -DMPROF_WERROR=ON \
            -DCMAKE_C_FLAGS="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)" \
            -DCMAKE_CXX_FLAGS="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)" \
            -DCMAKE_EXE_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" \
            -DCMAKE_SHARED_LINKER_FLAGS="$(dpkg-buildflags --get LDFLAGS)" >"$dir.log" 2>&1 ||
            { cat "$dir.log"; echo "matrix: FAIL: $cfg does not configure"; exit 1; }
        ;;
    *)
        echo "matrix: unknown configuration '$cfg' (one of: $all)"
        exit 2
        ;;
    esac
    if ! cmake --build "$dir" -j "$JOBS" >>"$dir.log" 2>&1; then
        grep -E 'error|warning' "$dir.log" | head -40
        echo "matrix: FAIL: $cfg does not build (log: $dir.log)"
        exit 1
    fi
    echo "matrix: $cfg builds ($(( $(date +%s) - t0 )) s)"
    done_list="$done_list $cfg"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$dir" "$dir.log"
done
echo "matrix: every configuration builds:$done_list ($(( $(date +%s) - start )) s)"
