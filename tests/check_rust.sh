#!/bin/sh
# The Rust bindings' tests (bindings/rust): `cargo test` without features (every macro compiled
# away, the guard, the shipping build's symbols) and with `enable` (an end-to-end capture read
# back by the real mprof binary). The crate links the static libmprof of this build, and cargo
# builds inside the CMake build directory, so the source tree stays clean.
# usage: check_rust.sh SOURCE_DIR LIB_DIR MPROF_BINARY TARGET_DIR
# Exit 77 (ctest: skipped) when no cargo is installed: PATH, then rustup's usual places.
src=$1 lib=$2 tool=$3 target=$4
cargo=
for c in "${CARGO:-}" "$(command -v cargo 2>/dev/null)" "${HOME:-/root}/.cargo/bin/cargo" \
         /root/.cargo/bin/cargo /usr/bin/cargo; do
    if [ -n "$c" ] && [ -x "$c" ]; then
        cargo=$c
        break
    fi
done
if [ -z "$cargo" ]; then
    echo "check_rust: no cargo found (PATH, ~/.cargo/bin, /usr/bin): Rust binding tests skipped"
    echo "check_rust: apt-get install cargo, or install rustup, to run them"
    exit 77
fi
# rustup's cargo is a proxy that needs its rustc beside it and its toolchains in RUSTUP_HOME.
PATH=$(dirname "$cargo"):$PATH
export PATH
if [ -z "${RUSTUP_HOME:-}" ] && [ ! -d "${HOME:-/nonexistent}/.rustup" ] && [ -d /root/.rustup ]; then
    RUSTUP_HOME=/root/.rustup
    export RUSTUP_HOME
fi
CARGO_TARGET_DIR=$target MPROF_LIB_DIR=$lib MPROF_LINK=static MPROF_TOOL=$tool
export CARGO_TARGET_DIR MPROF_LIB_DIR MPROF_LINK MPROF_TOOL
cd "$src/bindings/rust" || exit 1
had_target=
for d in bindings/rust/target examples/rust_engine/target bindings/rust/tests/tracy_engine/target; do
    [ -e "$src/$d" ] && had_target="$had_target $d"
done
echo "check_rust: $("$cargo" --version), $(rustc --version 2>/dev/null)"
"$cargo" test --offline || { echo "check_rust: FAIL: cargo test (no features)"; exit 1; }
"$cargo" test --offline --features enable ||
    { echo "check_rust: FAIL: cargo test --features enable"; exit 1; }
# The tracy-client-shaped module: disabled (compiles, no-ops) and recording (tests/tracy.rs: an
# engine written for tracy-client builds unchanged against this crate and is read back).
"$cargo" test --offline --features tracy ||
    { echo "check_rust: FAIL: cargo test --features tracy"; exit 1; }
"$cargo" test --offline --features 'tracy enable' ||
    { echo "check_rust: FAIL: cargo test --features 'tracy enable'"; exit 1; }
# The source tree stays as it was: no target/ there, no lockfile rewritten (in a git checkout).
for d in bindings/rust/target examples/rust_engine/target bindings/rust/tests/tracy_engine/target; do
    case " $had_target " in *" $d "*) continue ;; esac
    if [ -e "$src/$d" ]; then
        echo "check_rust: FAIL: cargo wrote $d in the source tree"; exit 1
    fi
done
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    for f in bindings/rust/Cargo.lock examples/rust_engine/Cargo.lock \
        bindings/rust/tests/tracy_engine/Cargo.lock; do
        if ! git -C "$src" diff --quiet -- "$f"; then
            echo "check_rust: FAIL: cargo rewrote $f"; exit 1
        fi
    done
fi
echo "check_rust: ok"
