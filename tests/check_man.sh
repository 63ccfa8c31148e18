#!/bin/sh
# The man pages against the command: a page for mprof and for every command `mprof --help`
# lists (and no other), each rendered by groff without a warning, found by man(1), and holding
# every word of the command's --help text (the page is made from it; this proves the converter
# dropped nothing).
# usage: check_man.sh MPROF_BINARY MAN_DIR (the folder holding man1/)
set -uf
bin=$1 dir=$2
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmds=$("$bin" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }')
[ -n "$cmds" ] || { echo "FAIL: no commands in mprof --help"; exit 1; }
expected="mprof.1"
for c in $cmds; do expected="$expected mprof-$c.1"; done
have=$(ls "$dir/man1" 2>/dev/null | grep '\.1$' | sort | tr '\n' ' ')
want=$(printf '%s\n' $expected | sort | tr '\n' ' ')
if [ "$have" != "$want" ]; then
    echo "FAIL: pages '$have', expected '$want'"
    fail=1
fi
check() { # page, help text file
    page=$1 help=$2
    f="$dir/man1/$page.1"
    [ -f "$f" ] || { echo "FAIL: no $f"; fail=1; return; }
    warn=$(groff -ww -z -man "$f" 2>&1)
    [ -z "$warn" ] || { echo "FAIL: groff warns on $page.1: $warn"; fail=1; }
    # What a user gets from man(1), plain text.
    MANWIDTH=200 man -M "$dir" -P cat "$page" 2>"$tmp/err" | col -b >"$tmp/page.txt"
    if [ ! -s "$tmp/page.txt" ]; then
        echo "FAIL: man -M $dir $page shows nothing: $(cat "$tmp/err")"
        fail=1
        return
    fi
    missing=0
    # A heading alone on its line ("Example:") becomes the page's section name (EXAMPLE).
    headings=" $(grep -E '^[A-Z][A-Za-z]*:$' "$help" | tr '\n' ' ')"
    for w in $(tr -s ' \t' '\n\n' <"$help" | grep -v '^$' | sort -u); do
        case $w in usage:|Options:|Exit|status:|codes:|Commands:|Formats:) continue ;; esac
        case $headings in *" $w "*) continue ;; esac
        if ! grep -qF -- "$w" "$tmp/page.txt"; then
            [ $missing -lt 5 ] && echo "FAIL: $page.1 lacks '$w' of its --help"
            missing=$((missing + 1))
        fi
    done
    [ $missing -eq 0 ] || { echo "FAIL: $page.1 lacks $missing word(s) of its --help"; fail=1; }
    grep -q "^NAME" "$tmp/page.txt" && grep -q "^SYNOPSIS" "$tmp/page.txt" ||
        { echo "FAIL: $page.1 has no NAME or SYNOPSIS"; fail=1; }
}
"$bin" --help >"$tmp/help.txt"
check mprof "$tmp/help.txt"
for c in $cmds; do
    "$bin" "$c" --help >"$tmp/help.txt"
    check "mprof-$c" "$tmp/help.txt"
done
[ $fail -eq 0 ] && echo "man ok: $(echo "$expected" | wc -w) pages match their --help"
exit $fail
