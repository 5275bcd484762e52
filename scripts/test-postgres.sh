#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks (Debian's `postgresql` package).
#   scripts/test-postgres.sh start DIR [--bench]   initdb in DIR, start on a free loopback port, write DIR/url
#   scripts/test-postgres.sh stop DIR              stop the server (DIR is left for the caller to remove)
#   scripts/test-postgres.sh stop-server DIR       stop it, keeping the cluster (a test restarts it)
#   scripts/test-postgres.sh start-server DIR      start it again on the same port
# The server refuses to run as root: as root, the cluster belongs to the `postgres` user the package
# creates. Tests use fsync=off (see server_opts); --bench keeps PostgreSQL's durable defaults (see
# docs/performance.md).
set -euo pipefail
# The server must not keep the caller's descriptors (beyond 0-2) open: a caller that waits for this
# script's exit through one of them (Foundation's Process does) would wait for the server's exit.
for fd in $(ls /proc/$$/fd); do
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
cmd=${1:?usage: test-postgres.sh start|stop|stop-server|start-server DIR}
dir=${2:?usage: test-postgres.sh $cmd DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    echo "test-postgres.sh: no PostgreSQL server found under /usr/lib/postgresql (apt-get install postgresql)" >&2
    exit 1
fi
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
server_opts() {
    local port=$1 extra
    # fsync=off: the tests crash the server (immediate shutdown), never the machine, so what was
    # written reaches the files anyway. synchronous_commit stays on: with it off, a commit the bridge was
    # told about can be lost in a server crash (the restart test then sees a claimed send repeated).
    extra="-c fsync=off -c full_page_writes=off"
    [ -f "$dir/bench" ] && extra=""
    echo "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 $extra"
}
start_server() {
    local port
    port=$(cat "$dir/port")
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$(server_opts "$port")" -w -t 60 start >/dev/null
}
case "$cmd" in
start)
    mkdir -p "$dir"
    [ "${3:-}" = "--bench" ] && touch "$dir/bench"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U imbridge --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2; exit 1; }
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >"$dir/port"
    [ "$(id -u)" = 0 ] && chown postgres "$dir/port"
    start_server || { cat "$dir/server.log" >&2; exit 1; }
    port=$(cat "$dir/port")
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U imbridge imbridge
    echo "postgres://imbridge@127.0.0.1:$port/imbridge" >"$dir/url"
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') test cluster at $(cat "$dir/url") (data in $dir)"
    ;;
stop)
    [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true
    ;;
stop-server)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
start-server)
    start_server
    ;;
*)
    echo "unknown command $cmd" >&2; exit 2 ;;
esac
