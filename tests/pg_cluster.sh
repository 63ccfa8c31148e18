#!/bin/sh
# pg_cluster.sh start|stop|kill|restart STATE - a throwaway PostgreSQL cluster for the run-store
# tests (ctest fixture store_pg). start: initdb in a fresh temporary directory, the server
# listening only on a unix socket in that directory (no TCP port, so parallel builds cannot
# collide), trust authentication for the user "mprof"; writes STATE with the directory and the
# connection URL. stop: stops the server (even when a test failed) and removes the directory.
# kill: stops the server at once, as a crash would (pg_ctl -m immediate), keeping its data;
# restart: starts it again on the same data (tests/test_store_doubt.c kills it at a commit).
# PostgreSQL refuses to run as root: as root the cluster belongs to the "postgres" user that the
# Debian package creates (else "nobody"). A missing server is a failure, not a skip: CI installs
# it from scripts/deps.txt.
set -u
cmd=${1:?start or stop}
state=${2:?state file}

bindir=${MPROF_PG_BINDIR:-}
if [ -z "$bindir" ]; then
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do bindir=$d; done
fi

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u "$owner" -- "$@"
    else
        "$@"
    fi
}

stop_cluster() {
    [ -f "$state" ] || return 0
    dir=$(sed -n 's/^dir=//p' "$state")
    owner=$(sed -n 's/^owner=//p' "$state")
    if [ -n "$dir" ] && [ -d "$dir/data" ]; then
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    case "$dir" in /tmp/mprof-pg.*) rm -rf "$dir" ;; esac
    rm -f "$state"
}

start_server() {
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-k $dir -c listen_addresses= -p 5432 -c fsync=off -c max_connections=40" \
        start > /dev/null 2>&1
}

if [ "$cmd" = stop ]; then
    stop_cluster
    echo "pg_cluster: stopped"
    exit 0
fi

if [ "$cmd" = kill ] || [ "$cmd" = restart ]; then
    dir=$(sed -n 's/^dir=//p' "$state")
    owner=$(sed -n 's/^owner=//p' "$state")
    [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "pg_cluster: no cluster in $state" >&2; exit 1; }
    if [ "$cmd" = kill ]; then
        as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
    else
        start_server || { echo "pg_cluster: the server did not start again:" >&2; cat "$dir/server.log" >&2; exit 1; }
    fi
    exit 0
fi

[ "$cmd" = start ] || { echo "pg_cluster: start, stop, kill or restart" >&2; exit 2; }
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "pg_cluster: no PostgreSQL server found (/usr/lib/postgresql/*/bin/initdb): install the" \
         "Debian package postgresql (scripts/deps.txt) or set MPROF_PG_BINDIR" >&2
    exit 1
fi
stop_cluster  # a cluster left by an interrupted run
owner=$(id -un)
if [ "$(id -u)" = 0 ]; then
    if id postgres >/dev/null 2>&1; then owner=postgres; else owner=nobody; fi
fi
dir=$(mktemp -d /tmp/mprof-pg.XXXXXX) || exit 1
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown "$owner" "$dir"
printf 'dir=%s\nowner=%s\n' "$dir" "$owner" > "$state"
if ! as_owner "$bindir/initdb" -D "$dir/data" -A trust -U mprof -E UTF8 --no-sync \
        > "$dir/initdb.log" 2>&1; then
    echo "pg_cluster: initdb failed:" >&2; cat "$dir/initdb.log" >&2
    stop_cluster; exit 1
fi
if ! start_server; then
    echo "pg_cluster: the server did not start:" >&2; cat "$dir/server.log" >&2
    stop_cluster; exit 1
fi
printf 'url=postgresql:///postgres?host=%s&port=5432&user=mprof\nsocketdir=%s\n' "$dir" "$dir" >> "$state"
echo "pg_cluster: started in $dir, PostgreSQL $("$bindir/postgres" --version | sed 's/.* //')"
