#!/usr/bin/env bash
# Runs a subset of the suite on PostgreSQL through PgBouncer in transaction pooling mode
# (docs/scaling.md): a private pgbouncer (Debian's package) with its own configuration in a temporary
# directory, on a free port, in front of the PostgreSQL at PG_HOST:PG_PORT (127.0.0.1:5432), with
# trust authentication as the local PostgreSQL has. The pooled URL is what the application uses;
# LISTEN goes over DATABASE_DIRECT_URL, straight to PostgreSQL, as in production.
#
#   scripts/pgbouncer-tests.sh [test files...]
#
# Without arguments it runs the files below: POST idempotency (one and two API processes),
# charges, parallel refunds, webhook delivery, jobs, LISTEN on the direct URL while NOTIFY goes
# through the pooler, and the catalog test (migrations through the pooler). pgbouncer is stopped and its directory removed on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_HOST="${PG_HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5432}"
PG_USER="${PG_USER:-postgres}"
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
  FILES=(
    test/idempotency.test.ts
    src/modules/charges/charges.test.ts
    src/modules/charges/refund-concurrency.test.ts
    src/modules/webhooks/webhooks.test.ts
    src/platform/jobs/jobs.test.ts
    src/platform/db/listen-url.test.ts
    test/distribution.test.ts
  )
fi

PGBOUNCER="$(command -v pgbouncer || echo /usr/sbin/pgbouncer)"
if [ ! -x "$PGBOUNCER" ]; then
  echo "--- installing pgbouncer"
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null 2>&1) ||
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null)
  PGBOUNCER="$(command -v pgbouncer || echo /usr/sbin/pgbouncer)"
fi

DIR="$(mktemp -d /tmp/recaudo-pgbouncer.XXXXXX)"
DB="recaudo_pgbouncer_$$"
PGB_PID=""
cleanup() {
  if [ -n "$PGB_PID" ] && kill -0 "$PGB_PID" 2>/dev/null; then
    kill "$PGB_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PGB_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$PGB_PID" 2>/dev/null || true
  fi
  psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -qAtc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT

PORT="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"

# The database the tests use, created directly (CREATE DATABASE cannot run through a transaction
# pooler's shared sessions anyway). The application's session limits cannot travel as startup
# parameters through PgBouncer (ignore_startup_parameters below drops them), so they are set on the
# database, as docs/scaling.md says to do on the production role.
psql -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres -qAt \
  -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
  -c "CREATE DATABASE $DB" \
  -c "ALTER DATABASE $DB SET statement_timeout = '30s'" \
  -c "ALTER DATABASE $DB SET lock_timeout = '15s'" \
  -c "ALTER DATABASE $DB SET idle_in_transaction_session_timeout = '60s'"

printf '"%s" ""\n' "$PG_USER" >"$DIR/userlist.txt"
cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
* = host=$PG_HOST port=$PG_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
pool_mode = transaction
; Few server connections for many clients: the point of the exercise (docs/scaling.md).
default_pool_size = 20
max_db_connections = 25
max_client_conn = 400
; node-postgres sends these at connect time; a transaction pooler cannot keep per-client session
; settings, so it drops them (the database-level settings above apply instead).
ignore_startup_parameters = statement_timeout,lock_timeout,idle_in_transaction_session_timeout
server_reset_query =
; Counters for the summary line at the end, refreshed every second.
stats_period = 1
admin_users = $PG_USER
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
EOF

# pgbouncer refuses to run as root: it drops to the postgres user then, who must read its files.
RUN_AS=()
if [ "$(id -u)" = 0 ]; then
  chown -R postgres "$DIR"
  RUN_AS=(-u postgres)
fi
"$PGBOUNCER" "${RUN_AS[@]}" "$DIR/pgbouncer.ini" >"$DIR/stdout.log" 2>&1 &
PGB_PID=$!
for _ in $(seq 1 50); do
  pg_isready -h 127.0.0.1 -p "$PORT" -q 2>/dev/null && break
  kill -0 "$PGB_PID" 2>/dev/null || break
  sleep 0.1
done
if ! pg_isready -h 127.0.0.1 -p "$PORT" -q; then
  echo "pgbouncer did not start:"
  cat "$DIR/stdout.log" "$DIR/pgbouncer.log" 2>/dev/null || true
  exit 1
fi
MODE="$(psql -h 127.0.0.1 -p "$PORT" -U "$PG_USER" -d pgbouncer -qAtc 'SHOW CONFIG' | awk -F'|' '$1 == "pool_mode" { print $2 }')"
echo "--- pgbouncer $("$PGBOUNCER" --version | head -n1 | awk '{print $2}') on 127.0.0.1:$PORT, pool_mode=$MODE, in front of $PG_HOST:$PG_PORT"

# Nothing may reach PostgreSQL around the pooler by accident: the URLs below are the only ones.
unset DATABASE_URL
export TEST_DATABASE_URL="postgres://$PG_USER@127.0.0.1:$PORT/$DB"
export TEST_DATABASE_DIRECT_URL="postgres://$PG_USER@$PG_HOST:$PG_PORT/$DB"
# Processes the tests spawn (two API servers) read the application's own settings.
export DATABASE_DIRECT_URL="$TEST_DATABASE_DIRECT_URL"
echo "=== tests on PostgreSQL through PgBouncer (${#FILES[@]} files) ==="
started=$(date +%s)
status=0
node --import tsx --test --test-concurrency=2 --test-timeout=300000 --test-reporter=spec "${FILES[@]}" || status=$?
echo "=== PgBouncer: $([ $status = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - started)) s ==="
# Proof that the traffic went through the pooler: its own counters for the test database.
sleep 1.5
psql -h 127.0.0.1 -p "$PORT" -U "$PG_USER" -d pgbouncer -qAt -F ' ' -c 'SHOW STATS' 2>/dev/null |
  awk -v db="$DB" '$1 == db { print "--- pgbouncer served " $2 " transactions, " $3 " queries for " db " over at most 25 server connections (max_db_connections)" }' || true
if [ $status != 0 ]; then
  echo "--- pgbouncer log (last 40 lines)"
  tail -n 40 "$DIR/pgbouncer.log" 2>/dev/null || true
fi
exit $status
