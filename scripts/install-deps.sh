#!/bin/sh
# Installs the Debian packages listed in scripts/deps.txt that are missing. Runs apt-get only
# when something is missing; needs root (or sudo) for that.
set -eu
here=$(dirname "$0")
missing=""
for p in $(grep -v '^#' "$here/deps.txt"); do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "mprof: installing Debian packages:$missing"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends $missing
