#!/usr/bin/env bash
# with_postgres.sh COMMAND…: runs COMMAND beside a throwaway PostgreSQL server, and stops the server
# afterwards, whether COMMAND passed or not. The server keeps its data under .build/postgres-test
# (removed at the end), listens on a free port on 127.0.0.1 only, and trusts local connections.
# COMMAND finds it in FARESYNC_TEST_POSTGRES (postgres://faresync@127.0.0.1:PORT/faresync), and a
# second database for its own use in FARESYNC_TEST_POSTGRES_ADMIN (the server's `postgres` database),
# and pg_ctl for the server in FARESYNC_TEST_POSTGRES_CTL (say `$FARESYNC_TEST_POSTGRES_CTL -m immediate
# restart` for a crash and a restart; run it from a folder the server's user may enter).
#
# initdb refuses to run as root: as root, the server runs as Debian's `postgres` user.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: with_postgres.sh COMMAND [ARG…]" >&2; exit 2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "with_postgres.sh: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }

base=${POSTGRES_TEST_DIR:-$PWD/.build/postgres-test}
mkdir -p "$base"
data=$(mktemp -d "$base/data.XXXXXX")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

as_server() { "$@"; }
server_user=
if [ "$(id -u)" = 0 ]; then
  server_user="runuser -u postgres --"
  chown postgres: "$data"
  # The server's user must reach its data directory through every folder above it.
  dir=$data
  while [ "$dir" != / ]; do dir=$(dirname "$dir"); chmod o+x "$dir" 2>/dev/null || true; done
  as_server() { runuser -u postgres -- "$@"; }
fi

stop() {
  as_server "$bin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$data"
}
trap stop EXIT

as_server "$bin/initdb" -D "$data" -U faresync --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
# In the configuration file rather than on pg_ctl's command line, so that a test can stop and start
# the server again with FARESYNC_TEST_POSTGRES_CTL alone.
printf "%s\n" "listen_addresses = '127.0.0.1'" "port = $port" "unix_socket_directories = '$data'" "fsync = off" \
  "max_connections = 200" >>"$data/postgresql.conf"
as_server "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w start >/dev/null
as_server "$bin/createdb" -h 127.0.0.1 -p "$port" -U faresync faresync

export FARESYNC_TEST_POSTGRES="postgres://faresync@127.0.0.1:$port/faresync"
export FARESYNC_TEST_POSTGRES_ADMIN="postgres://faresync@127.0.0.1:$port/postgres"
export FARESYNC_TEST_POSTGRES_CTL="$server_user $bin/pg_ctl -D $data -l $data/server.log -w"
echo "with_postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
"$@"
