#!/usr/bin/env bash
# Two serve processes on one PostgreSQL store (two_servers.py), run inside Tests/lib/with_postgres.sh.
#
# usage: two_servers.sh FARESYNC
set -euo pipefail
: "${FARESYNC_TEST_POSTGRES:?run inside Tests/lib/with_postgres.sh}"
FARESYNC=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
psql -q "$FARESYNC_TEST_POSTGRES_ADMIN" -c "CREATE DATABASE two_servers" > /dev/null
python3 "$HERE/two_servers.py" "$FARESYNC" "${FARESYNC_TEST_POSTGRES%/*}/two_servers" "$WORK"
