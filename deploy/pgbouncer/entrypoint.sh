#!/bin/sh
# Writes PgBouncer's configuration from the environment (compose.yaml) and runs it in the foreground.
# The settings are docs/scaling.md's; the password file stays inside the container.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
dir=/tmp/pgbouncer
mkdir -p "$dir"
umask 077
printf '"recaudo" "%s"\n' "$POSTGRES_PASSWORD" > "$dir/userlist.txt"
cat > "$dir/pgbouncer.ini" <<INI
[databases]
recaudo = host=${POSTGRES_HOST:-postgres} port=5432 dbname=recaudo

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = 6432
auth_type = scram-sha-256
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = ${PGBOUNCER_DEFAULT_POOL_SIZE:-32}
reserve_pool_size = ${PGBOUNCER_RESERVE_POOL_SIZE:-8}
max_db_connections = ${PGBOUNCER_MAX_DB_CONNECTIONS:-40}
max_client_conn = ${PGBOUNCER_MAX_CLIENT_CONN:-400}
ignore_startup_parameters = statement_timeout,lock_timeout,idle_in_transaction_session_timeout
server_reset_query =
INI
exec /usr/sbin/pgbouncer "$dir/pgbouncer.ini"
