#!/usr/bin/env bash
# Makes sure PostgreSQL, Redis, NATS with JetStream, MinIO and LiveKit answer on this machine:
# starts any that is installed but stopped, builds MinIO and LiveKit from their Go modules the first
# time, and creates one database per service. Idempotent: run it as often as you like. `backing.sh nats-server` only
# prints the path of the nats-server v2.15 that the fault suite's JetStream cluster runs (building it
# from its Go module the first time), and starts nothing. `backing.sh tune-postgres` gives the local
# PostgreSQL the memory the deployments give theirs (shared_buffers, PG_SHARED_BUFFERS, default
# 1GB) and restarts it when that changes: Debian's default of 128MB holds less than the search bench's
# million messages, so every search would copy its pages from the OS cache. As root it also reserves
# the huge pages that shared memory needs (PostgreSQL's `huge_pages = try` then maps its buffers in
# 2 MB pages, with far fewer TLB misses: a search that reads a heap page per hit costs about a fifth
# less CPU); the reservation lasts until the machine restarts, so run it again after a reboot.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${PLATFORM_DATA_DIR:-$ROOT/.data}
PG_URL=${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432}
MINIO_PORT=${MINIO_PORT:-9000}
mkdir -p "$DATA/logs"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() {
  for _ in $(seq 1 150); do port_open "$1" && return 0; sleep 0.2; done
  echo "backing: nothing answers on port $1 after 30 s ($2)" >&2
  return 1
}
say() { echo "backing: $*"; }

ensure_postgres() {
  port_open 5432 && return 0
  if command -v pg_ctlcluster >/dev/null; then
    say "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  else
    echo "backing: PostgreSQL is not running and not installed; apt-get install postgresql" >&2; return 1
  fi
  wait_port 5432 PostgreSQL
}

ensure_redis() {
  port_open 6379 && return 0
  command -v redis-server >/dev/null || { echo "backing: install redis-server" >&2; return 1; }
  say "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --logfile "$DATA/logs/redis.log"
  wait_port 6379 Redis
}

ensure_nats() {
  port_open 4222 && return 0
  command -v nats-server >/dev/null || { echo "backing: install nats-server" >&2; return 1; }
  say "starting NATS with JetStream"
  mkdir -p "$DATA/nats"
  setsid nohup nats-server -a 127.0.0.1 -p 4222 -js -sd "$DATA/nats" >"$DATA/logs/nats.log" 2>&1 &
  wait_port 4222 NATS
}

minio_binary() {
  if command -v minio >/dev/null; then command -v minio; return; fi
  local gobin
  gobin="$(go env GOBIN 2>/dev/null)"; [ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null)/bin"
  if [ ! -x "$gobin/minio" ]; then
    command -v go >/dev/null || { echo "backing: MinIO needs Go to build (or a minio binary on PATH)" >&2; return 1; }
    say "building MinIO from its Go module (first start only, a few minutes)" >&2
    go install github.com/minio/minio@latest >&2
  fi
  echo "$gobin/minio"
}

# The fault suite's three-node JetStream cluster needs a recent nats-server (the distribution's
# may be years older): built from its Go module into GOBIN, beside MinIO, on first use only.
NATS_SERVER_VERSION=v2.15.2
nats_server_binary() {
  local gobin
  gobin="$(go env GOBIN 2>/dev/null)"; [ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null)/bin"
  if ! "$gobin/nats-server" --version 2>/dev/null | grep -q "$NATS_SERVER_VERSION"; then
    command -v go >/dev/null || { echo "backing: nats-server $NATS_SERVER_VERSION needs Go to build" >&2; return 1; }
    say "building nats-server $NATS_SERVER_VERSION from its Go module (first use only, a minute or two)" >&2
    go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION" >&2
  fi
  echo "$gobin/nats-server"
}

# LiveKit, the media server of voice channels and calls: the services sign its grants and manage its
# rooms (disconnecting whom a kick or a leave took out, applying a server mute). Built from its Go
# module on first use: v1.13.5 is the newest release whose module builds as is (later ones replace
# pion's WebRTC packages with forks that the module proxy does not serve).
LIVEKIT_VERSION=v1.13.5
LIVEKIT_PORT=${LIVEKIT_PORT:-7880}
livekit_binary() {
  local gobin version=$LIVEKIT_VERSION
  gobin="$(go env GOBIN 2>/dev/null)"; [ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null)/bin"
  if ! "$gobin/livekit-server" --version 2>/dev/null | grep -q "version ${version#v}"; then
    command -v go >/dev/null || { echo "backing: livekit-server $LIVEKIT_VERSION needs Go to build" >&2; return 1; }
    say "building livekit-server $LIVEKIT_VERSION from its Go module (first use only, a few minutes)" >&2
    local built; built=$(mktemp -d)
    # Its command is named `server`: built aside, then named for what it is.
    GOBIN="$built" go install "github.com/livekit/livekit-server/cmd/server@$LIVEKIT_VERSION" >&2
    mkdir -p "$gobin" && mv "$built/server" "$gobin/livekit-server" && rmdir "$built"
  fi
  echo "$gobin/livekit-server"
}

# Development mode: the key pair devkey/secret that the services default to, one UDP port, no
# address discovery (it would ask a STUN server outside this machine).
ensure_livekit() {
  port_open "$LIVEKIT_PORT" && return 0
  local bin; bin=$(livekit_binary)
  say "starting LiveKit on 127.0.0.1:$LIVEKIT_PORT"
  setsid nohup "$bin" --dev --bind 127.0.0.1 --node-ip 127.0.0.1 --port "$LIVEKIT_PORT" >"$DATA/logs/livekit.log" 2>&1 &
  wait_port "$LIVEKIT_PORT" LiveKit
}

ensure_minio() {
  port_open "$MINIO_PORT" && return 0
  local bin; bin=$(minio_binary)
  say "starting MinIO on 127.0.0.1:$MINIO_PORT"
  mkdir -p "$DATA/minio"
  MINIO_ROOT_USER=${MINIO_ROOT_USER:-minioadmin} MINIO_ROOT_PASSWORD=${MINIO_ROOT_PASSWORD:-minioadmin} \
    setsid nohup "$bin" server "$DATA/minio" --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$((MINIO_PORT + 1))" \
    >"$DATA/logs/minio.log" 2>&1 &
  wait_port "$MINIO_PORT" MinIO
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$MINIO_PORT/minio/health/ready" >/dev/null && return 0; sleep 0.2; done
  echo "backing: MinIO did not become ready; see $DATA/logs/minio.log" >&2; return 1
}

ensure_databases() {
  for db in auth guilds social media music; do
    if [ "$(psql "$PG_URL/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != "1" ]; then
      say "creating database $db"
      psql "$PG_URL/postgres" -qc "CREATE DATABASE $db"
    fi
  done
}

restart_postgres() {
  say "restarting PostgreSQL ($1)"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main restart
  wait_port 5432 PostgreSQL
}

tune_postgres() {
  local want=${PG_SHARED_BUFFERS:-1GB} has
  has=$(psql "$PG_URL/postgres" -tAc "SELECT setting::bigint * 8192 = pg_size_bytes('$want') FROM pg_settings WHERE name = 'shared_buffers'")
  if [ "$has" = t ]; then say "PostgreSQL shared_buffers is already $want"; else
    psql "$PG_URL/postgres" -qc "ALTER SYSTEM SET shared_buffers = '$want'"
    restart_postgres "shared_buffers $want"
  fi
  reserve_huge_pages
}

# The machine's huge pages: held (mapped, or reserved for a mapping) and free for a new one.
huge_pages_held_and_free() {
  awk '/^HugePages_(Total|Free|Rsvd)/ {n[$1] = $2} END {
    print n["HugePages_Total:"] - n["HugePages_Free:"] + n["HugePages_Rsvd:"], n["HugePages_Free:"] - n["HugePages_Rsvd:"]}' /proc/meminfo
}

# PostgreSQL (15 and later) reports how many huge pages its shared memory takes at the running
# settings; it maps them only if they are free when it starts, so a new reservation takes a restart.
# Which process holds the machine's huge pages is not visible, so "held" counts all of them.
reserve_huge_pages() {
  local need held free
  need=$(psql "$PG_URL/postgres" -tAc "SHOW shared_memory_size_in_huge_pages" 2>/dev/null || echo 0)
  if [ "${need:-0}" -le 0 ]; then say "PostgreSQL cannot tell how many huge pages it needs; leaving them alone"; return; fi
  read -r held free < <(huge_pages_held_and_free)
  if [ "$held" -ge "$need" ]; then say "PostgreSQL's shared memory is already in huge pages ($need of 2 MB)"; return; fi
  if [ "$free" -lt "$need" ] && ! echo $(($(cat /proc/sys/vm/nr_hugepages) + need - free)) 2>/dev/null >/proc/sys/vm/nr_hugepages; then
    say "could not reserve $need huge pages (it takes root): PostgreSQL stays on small pages, and searches cost more CPU"
    return
  fi
  restart_postgres "shared memory in $need huge pages of 2 MB"
  read -r held free < <(huge_pages_held_and_free)
  if [ "$held" -lt "$need" ]; then say "the kernel found only part of the huge pages: PostgreSQL runs on small pages"; fi
}

# `backing.sh nats-server`: only the nats-server of the cluster fault (built when missing); its path.
if [ "${1:-}" = nats-server ]; then nats_server_binary; exit; fi
if [ "${1:-}" = tune-postgres ]; then ensure_postgres; tune_postgres; exit; fi

ensure_postgres
ensure_redis
ensure_nats
ensure_minio
ensure_livekit
ensure_databases
say "PostgreSQL :5432, Redis :6379, NATS :4222, MinIO :$MINIO_PORT, LiveKit :$LIVEKIT_PORT ready"
