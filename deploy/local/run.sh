#!/usr/bin/env bash
# `make run`: the whole stack on this machine without Docker.
#
#   1. PostgreSQL and NATS (JetStream): used if already running, otherwise started (deps.sh)
#   2. the database each <SVC>_DATABASE_URL names (default: verification, scoring and ingestion on
#      the local PostgreSQL), created when missing; by default owned by <svc>_owner, which the
#      migrations run as, with the service serving as <svc>_app (docs/database-roles.md)
#   3. the three services, built with version stamps into .local/bin and started in the background
#   4. waits; Ctrl-C (or TERM to the process group) stops the services, then whatever step 1 started
#
# Configuration passes through from the environment (names in README.md, "Ports and configuration");
# the defaults below fill what is unset. An admin token that is not set is generated and printed.
# Also read: PGPORT (default 5432), NATS_PORT (default 4222), LOCAL_DIR (default .local),
# RUN_HEALTH_TIMEOUT (seconds to wait for /healthz, default 60).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# shellcheck source=deploy/local/deps.sh
. "$ROOT/deploy/local/deps.sh"

SERVICES=(verification scoring ingestion)
BIN_DIR=$LOCAL_DIR/bin
LOG_DIR=$LOCAL_DIR/log
PGPORT=${PGPORT:-5432}
NATS_PORT=${NATS_PORT:-4222}
HEALTH_TIMEOUT=${RUN_HEALTH_TIMEOUT:-60}
STOP_TIMEOUT=15

declare -A PIDS=()    # service -> pid of the process this script started
declare -A HTTP_URL=() # service -> base URL used for the health check and the summary

log() { printf 'run: %s\n' "$*"; }

# ---------------------------------------------------------------------------------------------
# Shutdown. Runs once, on any exit: normal, error, INT or TERM. `setsid make run` followed by a
# TERM to the whole process group (what the acceptance harness does) lands here too; the services
# got the same TERM directly and are already on their way out.
# ---------------------------------------------------------------------------------------------
cleanup() {
  local rc=$? svc pid alive i
  # A second Ctrl-C must not cut the cleanup short and leave processes behind.
  trap '' INT TERM
  set +e
  alive=()
  for svc in "${!PIDS[@]}"; do
    pid=${PIDS[$svc]}
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      alive+=("$pid")
    fi
  done
  if [ "${#alive[@]}" -gt 0 ]; then
    log "stopping services..."
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
      local still=()
      for pid in "${alive[@]}"; do kill -0 "$pid" 2>/dev/null && still+=("$pid"); done
      alive=("${still[@]+"${still[@]}"}")
      [ "${#alive[@]}" -eq 0 ] && break
      sleep 0.2
    done
    for pid in "${alive[@]+"${alive[@]}"}"; do
      log "pid $pid did not stop within ${STOP_TIMEOUT}s; killing it"
      kill -KILL "$pid" 2>/dev/null
    done
    for svc in "${!PIDS[@]}"; do wait "${PIDS[$svc]}" 2>/dev/null; done
  fi
  # Only what deps.sh started in this run; servers that were running before are left alone.
  if [ -n "$DEPS_NATS_PID" ] || [ -n "$DEPS_PG_STARTED" ]; then
    log "stopping the PostgreSQL/NATS servers started by this run..."
    deps_stop_started
  fi
  log "stopped"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

# Uppercase prefix of a service's variables: verification -> VERIFICATION.
prefix() { printf '%s' "${1^^}"; }

# Turns a listen address (":8081", "0.0.0.0:8081", "[::]:8081", "127.0.0.1:8081") into a
# host:port this machine can connect to.
dial_addr() {
  local addr=$1 host port
  port=${addr##*:}
  host=${addr%:*}
  case $host in
  "" | 0.0.0.0) host=127.0.0.1 ;;
  "[::]") host="[::1]" ;;
  esac
  printf '%s:%s' "$host" "$port"
}

# Whether URL answers with HTTP 2xx. curl when present, else a bare request over bash's /dev/tcp.
http_ok() {
  local url=$1
  if command -v curl >/dev/null 2>&1; then
    curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null
    return
  fi
  local hostport=${url#http://} path status
  path=/${hostport#*/}
  hostport=${hostport%%/*}
  status=$(
    exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hostport" >&3
    head -n 1 <&3
  ) 2>/dev/null || return 1
  [[ $status == HTTP/*" 2"* ]]
}

# 32 random bytes as hex.
random_hex() {
  local hex
  hex=$(od -An -N32 -tx1 /dev/urandom 2>/dev/null | tr -d ' \n') || hex=""
  if [ "${#hex}" -ne 64 ]; then hex=$(openssl rand -hex 32); fi
  printf '%s' "$hex"
}

# ---------------------------------------------------------------------------------------------
# 1. PostgreSQL and NATS
# ---------------------------------------------------------------------------------------------
mkdir -p "$BIN_DIR" "$LOG_DIR"
ensure_pg
ensure_nats
ensure_pdftotext
ensure_pg_client

# ---------------------------------------------------------------------------------------------
# 2. Databases: the one each *_DATABASE_URL names, created when missing
# ---------------------------------------------------------------------------------------------
# A service whose *_DATABASE_URL the caller did not set gets the roles of a deployment
# (docs/database-roles.md): <svc>_owner owns the database and runs the migrations
# (<SVC>_MIGRATE_DATABASE_URL), <svc>_app is what the service serves as. Their passwords are random
# per run. A URL the caller set is used as it is, with the roles it names.
declare -A MAKE_ROLES=()
for svc in "${SERVICES[@]}"; do
  v=$(prefix "$svc")_DATABASE_URL
  if [ -z "${!v:-}" ]; then
    MAKE_ROLES[$svc]=1
    export "$v=postgres://postgres@127.0.0.1:$PGPORT/$svc?sslmode=disable" # to create the database
  fi
done

# The maintenance URL of a database URL: the same server, user and parameters, database "postgres".
maintenance_url() { sed -E 's#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\1/postgres#' <<<"$1"; }
# The database a URL names (its path; URL escapes are not expected in a database name).
database_name() { sed -E 's#^postgres(ql)?://[^/?]*/?([^?]*).*$#\2#' <<<"$1"; }

for svc in "${SERVICES[@]}"; do
  v=$(prefix "$svc")_DATABASE_URL
  url=${!v}
  db=$(database_name "$url")
  if [ -z "$db" ]; then
    echo "run: $v names no database (${url%%\?*}); give it one, e.g. .../$svc" >&2
    exit 1
  fi
  admin=$(maintenance_url "$url")
  # -w: never prompt for a password (a prompt would hang a non-interactive run); a password in the
  # URL or PGPASSWORD still applies. :'db' and :"db" are psql's quoting of a literal and a name.
  if ! exists=$(psql -w -X -q -tA -v ON_ERROR_STOP=1 -v db="$db" "$admin" 2>&1 <<<"SELECT 1 FROM pg_database WHERE datname = :'db'"); then
    echo "run: cannot connect to the PostgreSQL of $v as its user, without a password prompt:" >&2
    echo "run:   ${exists##*FATAL:  }" >&2
    echo "run: allow it (pg_hba.conf: host all all 127.0.0.1/32 trust), put the password in the URL or export PGPASSWORD." >&2
    exit 1
  fi
  if [ "$exists" != 1 ]; then
    psql -w -X -q -v ON_ERROR_STOP=1 -v db="$db" "$admin" <<<'CREATE DATABASE :"db"' ||
      { echo "run: could not create database $db for $v (does its user have CREATEDB?)" >&2; exit 1; }
    log "created database $db"
  fi
done

for svc in "${!MAKE_ROLES[@]}"; do
  p=$(prefix "$svc")
  v=${p}_DATABASE_URL
  admin_db=${!v}
  owner=${svc}_owner app=${svc}_app
  owner_pw=$(random_hex) app_pw=$(random_hex)
  # Idempotent: roles made once, passwords set on every run; a database made by an earlier run as
  # postgres is handed to the owner with everything in it.
  psql -w -X -q -v ON_ERROR_STOP=1 -v db="$svc" -v owner="$owner" -v app="$app" \
    -v owner_pw="$owner_pw" -v app_pw="$app_pw" "$(maintenance_url "$admin_db")" <<'SQL' >/dev/null ||
SELECT format('CREATE ROLE %I LOGIN', r) FROM unnest(ARRAY[:'owner', :'app']) r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE :"owner" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_pw';
ALTER ROLE :"app" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'app_pw';
ALTER DATABASE :"db" OWNER TO :"owner";
\connect :"db"
SELECT set_config('run.owner', :'owner', false);
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
              AND pg_get_userbyid(c.relowner) <> current_setting('run.owner') LOOP
    EXECUTE format('ALTER TABLE public.%I OWNER TO %I', r.relname, current_setting('run.owner'));
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace
              AND pg_get_userbyid(p.proowner) <> current_setting('run.owner') LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO %I', r.fn, current_setting('run.owner'));
  END LOOP;
END $$;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
SQL
    { echo "run: could not set up the roles $owner and $app of database $svc" >&2; exit 1; }
  host_part="127.0.0.1:$PGPORT/$svc?sslmode=disable"
  export "${p}_MIGRATE_DATABASE_URL=postgres://$owner:$owner_pw@$host_part"
  export "${p}_DATABASE_URL=postgres://$app:$app_pw@$host_part"
done

# ---------------------------------------------------------------------------------------------
# 3. Build and start the services
# ---------------------------------------------------------------------------------------------
LDFLAGS=$("$ROOT/deploy/ldflags.sh")
pkgs=()
for svc in "${SERVICES[@]}"; do pkgs+=("./services/$svc/cmd/$svc"); done
log "building ${SERVICES[*]} into ${BIN_DIR#"$ROOT"/}/"
# One go build for all three: the packages compile in parallel and share the cache. go.work at
# the repository root makes every service module buildable from here.
go build -ldflags "$LDFLAGS" -o "$BIN_DIR/" "${pkgs[@]}"

# Defaults for what the caller did not set. Everything else the caller exported
# (<SVC>_ALLOW_PRIVATE_CIDRS, <SVC>_BLOB_URL, <SVC>_LOG_LEVEL, NATS_NAMESPACE,
# OTEL_EXPORTER_OTLP_ENDPOINT, ...) reaches the services unchanged through the environment.
declare -A DEFAULT_HTTP=([verification]=8081 [scoring]=8082 [ingestion]=8083)
declare -A DEFAULT_GRPC=([verification]=9091 [scoring]=9092 [ingestion]=9093)
export NATS_URL=${NATS_URL:-nats://127.0.0.1:$NATS_PORT}
# The ingestion archive lives in the git-ignored local folder (its default, under /var/lib, is for
# servers).
export INGESTION_BLOB_URL=${INGESTION_BLOB_URL:-file://$LOCAL_DIR/archive/ingestion?create_dir=1}
export VERIFICATION_BLOB_URL=${VERIFICATION_BLOB_URL:-file://$LOCAL_DIR/blobs/verification?create_dir=1}
generated=()
for svc in "${SERVICES[@]}"; do
  p=$(prefix "$svc")
  v=${p}_HTTP_ADDR
  export "$v=${!v:-127.0.0.1:${DEFAULT_HTTP[$svc]}}"
  v=${p}_GRPC_ADDR
  export "$v=${!v:-127.0.0.1:${DEFAULT_GRPC[$svc]}}"
  v=${p}_ADMIN_TOKEN
  if [ -z "${!v:-}" ]; then
    export "$v=$(random_hex)"
    generated+=("$v")
  fi
done

for svc in "${SERVICES[@]}"; do
  p=$(prefix "$svc")
  v=${p}_HTTP_ADDR
  HTTP_URL[$svc]="http://$(dial_addr "${!v}")"
  # Something already answering there (a previous run, say) would pass our health check in place
  # of the service we are about to start, which would then fail to listen.
  if http_ok "${HTTP_URL[$svc]}/healthz"; then
    echo "run: ${HTTP_URL[$svc]} already answers; is another stack running? Stop it first." >&2
    exit 1
  fi
done

for svc in "${SERVICES[@]}"; do
  "$BIN_DIR/$svc" >"$LOG_DIR/$svc.log" 2>&1 </dev/null &
  PIDS[$svc]=$!
done

if [ "${#generated[@]}" -gt 0 ]; then
  echo
  echo "Generated admin tokens (header X-Admin-Token); export them to keep them across runs:"
  for v in "${generated[@]}"; do echo "  $v=${!v}"; done
fi

# ---------------------------------------------------------------------------------------------
# 4. Wait for health, show where everything is, then wait for Ctrl-C or a dying service
# ---------------------------------------------------------------------------------------------
# Prints why a service stopped, with the end of its log.
report_death() {
  echo "run: $1 exited; last 20 lines of ${LOG_DIR#"$ROOT"/}/$1.log:" >&2
  tail -n 20 "$LOG_DIR/$1.log" >&2 || true
}

deadline=$((SECONDS + HEALTH_TIMEOUT))
for svc in "${SERVICES[@]}"; do
  until http_ok "${HTTP_URL[$svc]}/healthz"; do
    if ! kill -0 "${PIDS[$svc]}" 2>/dev/null; then
      report_death "$svc"
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "run: $svc did not answer ${HTTP_URL[$svc]}/healthz within ${HEALTH_TIMEOUT}s; last lines of its log:" >&2
      tail -n 20 "$LOG_DIR/$svc.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
done

echo
printf '%-14s %-28s %-22s %s\n' SERVICE HTTP gRPC LOG
for svc in "${SERVICES[@]}"; do
  p=$(prefix "$svc")
  v=${p}_GRPC_ADDR
  printf '%-14s %-28s %-22s %s\n' "$svc" "${HTTP_URL[$svc]}" "$(dial_addr "${!v}")" "${LOG_DIR#"$ROOT"/}/$svc.log"
done
echo
echo "PostgreSQL 127.0.0.1:$PGPORT   NATS $NATS_URL"
if [ "${#MAKE_ROLES[@]}" -gt 0 ]; then
  echo "Database roles: each service serves as <service>_app and migrates as <service>_owner (docs/database-roles.md)"
fi
echo "MCP endpoint (scoring): ${HTTP_URL[scoring]}/mcp   API descriptions: <HTTP>/openapi.json"
echo "First calls to try: README.md, section \"First calls\""
echo "Press Ctrl-C to stop."

# `wait` returns as soon as a trapped signal arrives, so Ctrl-C is handled at once. It also returns
# when any service exits on its own, which ends the run: a partial stack is not useful.
while :; do
  if ((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))); then
    wait -n "${PIDS[@]}" || true
  else
    sleep 1 &
    wait $! || true
  fi
  for svc in "${SERVICES[@]}"; do
    if ! kill -0 "${PIDS[$svc]}" 2>/dev/null; then
      report_death "$svc"
      exit 1
    fi
  done
done
