#!/usr/bin/env bash
# Local dependencies of the stack: PostgreSQL and NATS with JetStream (and, for the browser tests of
# the HTML pages, chromium).
#
# As a library (what deploy/local/run.sh does):
#     . deploy/local/deps.sh
#     ensure_pg; ensure_nats      # each prints one line saying what it did
#     ...
#     deps_stop_started           # stops only what ensure_* started in this shell
#
# As a command:
#     deploy/local/deps.sh ensure # both; whatever it starts keeps running afterwards
#     deploy/local/deps.sh stop   # stops the private PostgreSQL cluster and NATS under .local
#
# Environment (all optional):
#     PGPORT      PostgreSQL port on 127.0.0.1 (default 5432; libpq's own variable, so psql agrees)
#     NATS_PORT   NATS port on 127.0.0.1 (default 4222)
#     LOCAL_DIR   where private data, logs and binaries live (default <repo>/.local, git-ignored)
#
# Everything here is written to be safe under the caller's `set -euo pipefail`: functions report
# failure through their return status and never rely on errexit being on or off.

# The repository root, found from this file's location so the scripts work from any directory.
DEPS_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOCAL_DIR=${LOCAL_DIR:-$DEPS_REPO_ROOT/.local}

# What ensure_pg / ensure_nats started in this shell, so that deps_stop_started stops exactly those
# and never a server that was already running before.
DEPS_PG_STARTED=${DEPS_PG_STARTED:-}     # "cluster <version>" or "pgctl <bindir> <datadir>"
DEPS_NATS_PID=${DEPS_NATS_PID:-}
DEPS_APT_UPDATED=${DEPS_APT_UPDATED:-}

_deps_say() { printf 'deps: %s\n' "$*"; }
_deps_err() { printf 'deps: %s\n' "$*" >&2; }

_deps_is_root() { [ "$(id -u)" -eq 0 ]; }

# Runs a command with root rights: directly when already root (containers, CI), else through sudo.
_deps_priv() {
  if _deps_is_root; then "$@"; else sudo "$@"; fi
}

# _deps_wait SECONDS CMD...: polls CMD every half second until it succeeds or time runs out.
_deps_wait() {
  local tries=$(($1 * 2)) i
  shift
  for ((i = 0; i < tries; i++)); do
    "$@" && return 0
    sleep 0.5
  done
  return 1
}

# _deps_tcp_open PORT: whether 127.0.0.1:PORT accepts a TCP connection (bash's /dev/tcp, no tools).
_deps_tcp_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------

_deps_pg_port() { printf '%s' "${PGPORT:-5432}"; }

# Whether a server answers on 127.0.0.1:PGPORT. pg_isready is part of the client package, which may
# be missing on a machine that still has a server reachable; a plain TCP check stands in then.
_deps_pg_ready() {
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h 127.0.0.1 -p "$(_deps_pg_port)" 2>/dev/null
  else
    _deps_tcp_open "$(_deps_pg_port)"
  fi
}

# Prints the highest installed PostgreSQL bin directory (Debian layout first, then PATH), or fails.
_deps_pg_bindir() {
  local d best=""
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] || continue
    best=$(printf '%s\n%s\n' "$best" "$d" | sed '/^$/d' | sort -V | tail -n 1)
  done
  if [ -z "$best" ] && command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    best=$(dirname "$(command -v pg_ctl)")
  fi
  [ -n "$best" ] && printf '%s\n' "$best"
}

# Prints the version of the Debian cluster "main" that is configured for PGPORT, or fails.
# A cluster on another port is no use to us (it would answer somewhere else).
_deps_pg_debian_cluster() {
  local d ver port conf best=""
  for d in /etc/postgresql/*/main; do
    [ -d "$d" ] || continue
    ver=$(basename "$(dirname "$d")")
    conf="$d/postgresql.conf"
    port=$(sed -n 's/^[[:space:]]*port[[:space:]]*=[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$conf" 2>/dev/null | tail -n 1)
    [ "${port:-5432}" = "$(_deps_pg_port)" ] || continue
    best=$(printf '%s\n%s\n' "$best" "$ver" | sed '/^$/d' | sort -V | tail -n 1)
  done
  [ -n "$best" ] && printf '%s\n' "$best"
}

# Whether the Debian cluster's postmaster is running (it may run yet not answer on our port).
_deps_pg_cluster_running() {
  local pid
  pid=$(head -n 1 "/var/run/postgresql/$1-main.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Starts Debian cluster <version>/main and waits for it; records that we started it.
_deps_pg_start_cluster() {
  local ver=$1
  if ! _deps_pg_cluster_running "$ver"; then
    _deps_priv pg_ctlcluster --skip-systemctl-redirect "$ver" main start >/dev/null 2>&1 || return 1
    DEPS_PG_STARTED="cluster $ver"
  fi
  _deps_wait 30 _deps_pg_ready && return 0
  stop_pg_started # started but not answering here: out of the way of a private cluster
  return 1
}

# Makes a freshly installed Debian cluster accept passwordless (trust) TCP connections from this
# machine as user postgres: the stack's URLs carry no password. Lines go first because pg_hba.conf
# is first-match. Only ever applied to a cluster this script installed.
_deps_pg_trust_local() {
  local hba=/etc/postgresql/$1/main/pg_hba.conf marker='# trustlayer deploy/local/deps.sh: local dev access'
  _deps_priv grep -qF "$marker" "$hba" 2>/dev/null && return 0
  _deps_priv sed -i \
    -e "1i $marker" \
    -e '1i host    all             all             127.0.0.1/32            trust' \
    -e '1i host    all             all             ::1/128                 trust' \
    "$hba" || return 1
  # A cluster that the package already started must reread the file.
  if _deps_pg_cluster_running "$1"; then
    _deps_priv pg_ctlcluster --skip-systemctl-redirect "$1" main reload >/dev/null 2>&1 || true
  fi
}

# Installs Debian's postgresql package (server, client and a default cluster).
_deps_pg_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    _deps_err "no PostgreSQL found and no apt-get to install it; install PostgreSQL or start one on 127.0.0.1:$(_deps_pg_port)"
    return 1
  fi
  mkdir -p "$LOCAL_DIR/log" || return 1
  local log=$LOCAL_DIR/log/apt.log
  if [ -z "$DEPS_APT_UPDATED" ]; then
    _deps_priv apt-get update >"$log" 2>&1 || { _deps_err "apt-get update failed, see $log"; return 1; }
    DEPS_APT_UPDATED=1
  fi
  _deps_priv env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >>"$log" 2>&1 ||
    { _deps_err "apt-get install postgresql failed, see $log"; return 1; }
}

# Runs a command as the owner of the private cluster: the postgres system user when we are root
# (initdb and postgres refuse to run as root), otherwise the current user.
_deps_as_pg_owner() {
  if _deps_is_root; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Creates (once) and starts a private cluster in $LOCAL_DIR/pg, listening on 127.0.0.1:PGPORT only,
# superuser postgres, trust authentication: a throwaway development database.
_deps_pg_start_private() {
  local bin=$1 port data sock log
  port=$(_deps_pg_port)
  data=$LOCAL_DIR/pg
  log=$LOCAL_DIR/log/postgres.log
  # Unix socket paths are limited to about 107 bytes; a deep checkout falls back to /tmp.
  sock=$LOCAL_DIR/pgsock
  if [ "${#sock}" -gt 80 ]; then sock=${TMPDIR:-/tmp}/trustlayer-pgsock-$(id -u); fi
  mkdir -p "$data" "$sock" "$LOCAL_DIR/log" || return 1
  touch "$log" || return 1
  if _deps_is_root; then
    if ! id postgres >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin postgres || return 1
    fi
    chown postgres "$data" "$sock" "$log" || return 1
    chmod 700 "$data" || return 1
    if ! runuser -u postgres -- test -w "$data"; then
      _deps_err "user postgres cannot write $data (is a parent folder private to root?); set LOCAL_DIR to a folder it can reach"
      return 1
    fi
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    _deps_as_pg_owner "$bin/initdb" -D "$data" -A trust -U postgres -E UTF8 >>"$log" 2>&1 ||
      { _deps_err "initdb failed, see $log"; return 1; }
  fi
  # -w -t 30: pg_ctl itself waits up to 30 s for the server to accept connections.
  _deps_as_pg_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $sock" start >/dev/null 2>&1 ||
    { _deps_err "private PostgreSQL did not start, see $log"; return 1; }
  DEPS_PG_STARTED="pgctl $bin $data"
  _deps_wait 30 _deps_pg_ready && return 0
  stop_pg_started
  return 1
}

ensure_pg() {
  local port ver bin how
  port=$(_deps_pg_port)
  if _deps_pg_ready; then
    _deps_say "PostgreSQL already answers on 127.0.0.1:$port"
    return 0
  fi

  # 1. A Debian cluster for this port that is merely stopped.
  if ver=$(_deps_pg_debian_cluster) && _deps_pg_start_cluster "$ver"; then
    _deps_say "started Debian cluster $ver/main on 127.0.0.1:$port"
    return 0
  fi

  # 2. No PostgreSQL at all: install Debian's, and use the cluster the package creates.
  how="started"
  if ! bin=$(_deps_pg_bindir); then
    _deps_pg_install || return 1
    how="installed PostgreSQL and started"
    if ver=$(_deps_pg_debian_cluster) && _deps_pg_trust_local "$ver"; then
      # The package may have started the cluster itself; it was not running before, so it is ours.
      if _deps_pg_cluster_running "$ver"; then DEPS_PG_STARTED="cluster $ver"; fi
    else
      ver="" # no cluster for our port, or its pg_hba.conf could not be edited: go private
    fi
    if [ -n "$ver" ] && _deps_pg_start_cluster "$ver"; then
      _deps_say "installed PostgreSQL $ver; its cluster answers on 127.0.0.1:$port (trust for local TCP)"
      return 0
    fi
    bin=$(_deps_pg_bindir) || { _deps_err "PostgreSQL was installed but no initdb was found"; return 1; }
  fi

  # 3. Binaries but no usable cluster: a private one under .local.
  if _deps_pg_start_private "$bin"; then
    _deps_say "$how private PostgreSQL cluster in $LOCAL_DIR/pg on 127.0.0.1:$port"
    return 0
  fi
  _deps_err "PostgreSQL did not become ready on 127.0.0.1:$port"
  return 1
}

# Whether `psql` and `createdb` exist; installs Debian's client package when they do not (a server
# may be reachable, in a container say, without the client tools on this machine).
ensure_pg_client() {
  command -v psql >/dev/null 2>&1 && command -v createdb >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { _deps_err "psql/createdb not found; install the PostgreSQL client"; return 1; }
  mkdir -p "$LOCAL_DIR/log" || return 1
  local log=$LOCAL_DIR/log/apt.log
  if [ -z "$DEPS_APT_UPDATED" ]; then
    _deps_priv apt-get update >"$log" 2>&1 || { _deps_err "apt-get update failed, see $log"; return 1; }
    DEPS_APT_UPDATED=1
  fi
  _deps_priv env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-client >>"$log" 2>&1 ||
    { _deps_err "apt-get install postgresql-client failed, see $log"; return 1; }
}

# Whether poppler's pdftotext exists (the ingestion service extracts PDF text with it); installs
# Debian's poppler-utils when it does not.
ensure_pdftotext() {
  command -v pdftotext >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { _deps_err "pdftotext not found; install poppler-utils"; return 1; }
  mkdir -p "$LOCAL_DIR/log" || return 1
  local log=$LOCAL_DIR/log/apt.log
  if [ -z "$DEPS_APT_UPDATED" ]; then
    _deps_priv apt-get update >"$log" 2>&1 || { _deps_err "apt-get update failed, see $log"; return 1; }
    DEPS_APT_UPDATED=1
  fi
  _deps_say "installing poppler-utils (pdftotext)"
  _deps_priv env DEBIAN_FRONTEND=noninteractive apt-get install -y poppler-utils >>"$log" 2>&1 ||
    { _deps_err "apt-get install poppler-utils failed, see $log"; return 1; }
}

# wrk, the C load generator the verification bench drives the HTTP side with, as pgbench drives
# PostgreSQL: a Go client on the same two cores costs more CPU per request than the service's read.
ensure_wrk() {
  command -v wrk >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { _deps_err "wrk not found; install it (Debian package wrk)"; return 1; }
  mkdir -p "$LOCAL_DIR/log" || return 1
  local log=$LOCAL_DIR/log/apt.log
  if [ -z "$DEPS_APT_UPDATED" ]; then
    _deps_priv apt-get update >"$log" 2>&1 || { _deps_err "apt-get update failed, see $log"; return 1; }
    DEPS_APT_UPDATED=1
  fi
  _deps_say "installing wrk"
  _deps_priv env DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >>"$log" 2>&1 ||
    { _deps_err "apt-get install wrk failed, see $log"; return 1; }
}

# Whether Debian's chromium exists (the browser tests of the HTML pages drive it headless through
# pkg/browsertest); installs the package when it does not. The tests use $CHROMIUM_PATH when set,
# else the first of chromium, chromium-browser, google-chrome on PATH.
ensure_chromium() {
  if [ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ]; then return 0; fi
  command -v chromium >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { _deps_err "chromium not found; install it (Debian package chromium) or set CHROMIUM_PATH"; return 1; }
  mkdir -p "$LOCAL_DIR/log" || return 1
  local log=$LOCAL_DIR/log/apt.log
  if [ -z "$DEPS_APT_UPDATED" ]; then
    _deps_priv apt-get update >"$log" 2>&1 || { _deps_err "apt-get update failed, see $log"; return 1; }
    DEPS_APT_UPDATED=1
  fi
  _deps_say "installing chromium (headless browser tests)"
  _deps_priv env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core >>"$log" 2>&1 ||
    { _deps_err "apt-get install chromium failed, see $log"; return 1; }
}

stop_pg_started() {
  [ -n "$DEPS_PG_STARTED" ] || return 0
  local kind a b
  read -r kind a b <<<"$DEPS_PG_STARTED"
  case $kind in
  cluster) _deps_priv pg_ctlcluster --skip-systemctl-redirect "$a" main stop -m fast >/dev/null 2>&1 ;;
  pgctl) _deps_as_pg_owner "$a/pg_ctl" -D "$b" -m fast -w -t 30 stop >/dev/null 2>&1 ;;
  esac
  DEPS_PG_STARTED=""
}

# ---------------------------------------------------------------------------------------------
# NATS
# ---------------------------------------------------------------------------------------------

_deps_nats_port() { printf '%s' "${NATS_PORT:-4222}"; }

# Prints the path of a nats-server binary: the system's, else the version pinned as a `tool` in the
# repository's go.mod files (built into Go's cache by `go tool -n`, which prints the path instead
# of running it, so we get the server's own pid to stop later), else a plain build of that module.
_deps_nats_binary() {
  local p
  if p=$(command -v nats-server 2>/dev/null); then printf '%s\n' "$p"; return 0; fi
  if [ -x /usr/sbin/nats-server ]; then printf '%s\n' /usr/sbin/nats-server; return 0; fi
  command -v go >/dev/null 2>&1 || { _deps_err "neither nats-server nor go found"; return 1; }
  mkdir -p "$LOCAL_DIR/log" "$LOCAL_DIR/bin" || return 1
  if p=$(cd "$DEPS_REPO_ROOT" && go tool -n nats-server 2>>"$LOCAL_DIR/log/nats-build.log") && [ -x "$p" ]; then
    printf '%s\n' "$p"
    return 0
  fi
  if (cd "$DEPS_REPO_ROOT" && go build -o "$LOCAL_DIR/bin/nats-server" github.com/nats-io/nats-server/v2) \
    >>"$LOCAL_DIR/log/nats-build.log" 2>&1; then
    printf '%s\n' "$LOCAL_DIR/bin/nats-server"
    return 0
  fi
  _deps_err "could not build nats-server, see $LOCAL_DIR/log/nats-build.log"
  return 1
}

ensure_nats() {
  local port bin store log pid
  port=$(_deps_nats_port)
  if _deps_tcp_open "$port"; then
    _deps_say "NATS already answers on 127.0.0.1:$port"
    return 0
  fi
  bin=$(_deps_nats_binary) || return 1
  store=$LOCAL_DIR/nats
  log=$LOCAL_DIR/log/nats.log
  mkdir -p "$store" "$LOCAL_DIR/log" || return 1
  nohup "$bin" -a 127.0.0.1 -p "$port" -js -sd "$store" -P "$store/nats.pid" >"$log" 2>&1 </dev/null &
  pid=$!
  DEPS_NATS_PID=$pid
  if _deps_wait 20 _deps_tcp_open "$port"; then
    _deps_say "started NATS ($bin) with JetStream in $store on 127.0.0.1:$port, pid $pid"
    return 0
  fi
  _deps_err "NATS did not answer on 127.0.0.1:$port within 20 s; last lines of $log:"
  tail -n 20 "$log" >&2 2>/dev/null || true
  stop_nats_started
  return 1
}

stop_nats_started() {
  [ -n "$DEPS_NATS_PID" ] || return 0
  local pid=$DEPS_NATS_PID i
  DEPS_NATS_PID=""
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Stops what ensure_pg and ensure_nats started in this shell (NATS first: nothing depends on it
# here, and PostgreSQL's shutdown is the slower one).
deps_stop_started() {
  stop_nats_started
  stop_pg_started
}

# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

# `stop`: for servers that an earlier `deps.sh ensure` left running. Only touches the private
# cluster and the NATS server that live under $LOCAL_DIR, never the system's.
_deps_stop_local() {
  local bin pid
  if [ -f "$LOCAL_DIR/pg/postmaster.pid" ] && bin=$(_deps_pg_bindir); then
    _deps_as_pg_owner "$bin/pg_ctl" -D "$LOCAL_DIR/pg" -m fast -w stop >/dev/null 2>&1 &&
      _deps_say "stopped private PostgreSQL in $LOCAL_DIR/pg"
  fi
  if pid=$(cat "$LOCAL_DIR/nats/nats.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    DEPS_NATS_PID=$pid
    stop_nats_started
    _deps_say "stopped NATS (pid $pid)"
  fi
  return 0
}

_deps_main() {
  set -euo pipefail
  case ${1:-} in
  ensure) ensure_pg && ensure_nats && ensure_pdftotext && ensure_chromium ;;
  pg) ensure_pg ;;
  nats) ensure_nats ;;
  pdftotext) ensure_pdftotext ;;
  wrk) ensure_wrk ;;
  chromium) ensure_chromium ;;
  stop) _deps_stop_local ;;
  *)
    echo "usage: $0 ensure|pg|nats|pdftotext|wrk|chromium|stop" >&2
    return 2
    ;;
  esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  _deps_main "$@"
fi
