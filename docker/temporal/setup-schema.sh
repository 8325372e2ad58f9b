#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases, before the server starts.
# Runs in temporalio/admin-tools with the server's DB settings (POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, SQL_PASSWORD); the steps of Temporal's own compose setup for postgres12.
# lockwright's Temporal cluster tier (lockwright/controlplane/temporalcluster.py) runs it
# too, with the binaries on PATH and TEMPORAL_SCHEMA_DIR naming the schema beside them.
# Idempotent: `create` ignores an existing database, update-schema applies only what is new.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
port=${DB_PORT:-5432}
schemas=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema}/postgresql/v12
for db in temporal:temporal temporal_visibility:visibility; do
  name=${db%%:*}
  dir=${db#*:}
  sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" \
            -u "$POSTGRES_USER" --db "$name" "$@"; }
  sql create
  sql setup-schema -v 0.0
  sql update-schema -d "$schemas/$dir/versioned"
done
echo "temporal schema ready"
