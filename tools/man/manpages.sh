#!/bin/sh
# manpages.sh - the man pages of the mprof command, made from its own --help texts: mprof(1)
# from `mprof --help`, and mprof-<command>(1) for every command that `mprof --help` lists, so
# a new command gets its page without a line here.
# usage: manpages.sh MPROF_BINARY OUT_DIR VERSION
set -eu
bin=$1 out=$2 version=$3
here=$(dirname "$0")
AWK=${AWK:-awk}
mkdir -p "$out"
rm -f "$out"/mprof.1 "$out"/mprof-*.1
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$bin" --help >"$tmp"
# The commands and their one-line descriptions: the indented lines under "Commands:".
cmds=$("$AWK" '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' "$tmp")
[ -n "$cmds" ] || { echo "manpages.sh: no commands in '$bin --help'" >&2; exit 1; }
see="\\fBmprof\\fR(1)"
for c in $cmds; do
    see="$see, \\fBmprof\\-$c\\fR(1)"
done
MAN_TITLE="a frame profiler for C programs: report, capture, view, export, compare and gate captures" \
MAN_DESCRIPTION="mprof reads the captures that a program instrumented with mprof (or with Tracy's C API, through mprof's drop-in header) writes. Each command is described in its own page, and by mprof <command> --help." \
MAN_SEE_ALSO=$(printf '%s' "$see" | sed 's/^\\fBmprof\\fR(1), //') \
    "$AWK" -f "$here/help2roff.awk" -v page=mprof -v version="$version" \
    -v extra="$here/mprof.extra" "$tmp" >"$out/mprof.1"
for c in $cmds; do
    title=$("$AWK" -v c="$c" '/^Commands:/ { on = 1; next }
        on && $1 == c { sub(/^  [a-z]+ +/, ""); print; exit }' "$tmp")
    "$bin" "$c" --help >"$tmp.cmd"
    MAN_TITLE=$title MAN_SEE_ALSO="\\fBmprof\\fR(1)" \
        "$AWK" -f "$here/help2roff.awk" -v page="mprof-$c" -v version="$version" -v extra="" \
        "$tmp.cmd" >"$out/mprof-$c.1"
done
rm -f "$tmp.cmd"
