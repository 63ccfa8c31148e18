#!/bin/sh
# Installs what mprof's build and tests need, so that `make test` runs every test on a fresh
# Debian machine: the Debian packages of scripts/deps.txt that are missing (apt-get, via sudo
# when not root), Debian's cargo when no cargo is installed (the Rust bindings' tests), and the
# browser tests' npm packages from the committed package-lock.json (`npm ci`, when
# node_modules is missing or older than the lock file). Each step runs only when needed.
set -eu
here=$(dirname "$0")
root=$(cd "$here/.." && pwd)
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
updated=""
apt_install() {
    echo "mprof: installing Debian packages:$*"
    if [ -z "$updated" ]; then
        $sudo apt-get update -qq
        updated=1
    fi
    $sudo apt-get install -y -qq --no-install-recommends "$@"
}

missing=""
for p in $(grep -v '^#' "$here/deps.txt"); do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# shellcheck disable=SC2086
[ -z "$missing" ] || apt_install $missing

# The Rust bindings' tests (tests/check_rust.sh) need cargo: Debian's, unless one is installed
# (a rustup toolchain may be there without being on PATH; check_rust.sh finds both).
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "${HOME:-/root}/.cargo/bin/cargo" ] &&
    [ ! -x /root/.cargo/bin/cargo ]; then
    apt_install cargo
fi

# The browser tests' driver (playwright-core, pinned in package-lock.json; no browser is
# downloaded: the tests use Debian's chromium). npm comes with NodeSource's nodejs; Debian's
# npm package conflicts with it, so it is installed only when npm is missing.
command -v npm >/dev/null 2>&1 || apt_install npm
stamp="$root/node_modules/.mprof-npm-ci"
if [ ! -f "$stamp" ] || [ "$root/package-lock.json" -nt "$stamp" ] ||
    [ ! -d "$root/node_modules/playwright-core" ]; then
    echo "mprof: npm ci (package-lock.json)"
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
fi
