#!/usr/bin/env bash
# The example of msg-postgres(7), run as printed (ManExampleTests): db.example is a
# PostgreSQL cluster here on port 5432, its certificate from a CA the system
# trusts, role msg with the password the example gives; the two hosts' watches
# run side by side; the plugins are built (or found built) by the tree's script.
. "$(dirname "$0")/stage.sh"
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pgdata=/mnt/work/pg/data
ca; cert db db.example
mkdir -p /mnt/work/pg && chown postgres: /mnt/work/pg
runuser -u postgres -- "$pgbin/initdb" -D "$pgdata" -U pgadmin --auth-local=trust --auth-host=reject -E UTF8 > /dev/null
install -o postgres -m 0600 db-key.pem "$pgdata/server.key"; install -o postgres -m 0644 db.pem "$pgdata/server.crt"
cat >> "$pgdata/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = 5432
unix_socket_directories = '/mnt/work/pg'
ssl = on
CONF
printf '%s\n' 'local all all trust' 'hostssl all all 127.0.0.1/32 scram-sha-256' > "$pgdata/pg_hba.conf"
runuser -u postgres -- "$pgbin/pg_ctl" -D "$pgdata" -l /mnt/work/pg/server.log -w start > /dev/null
runuser -u postgres -- "$pgbin/psql" -q -h /mnt/work/pg -U pgadmin -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE msg LOGIN PASSWORD '...'" -c "CREATE DATABASE outbox OWNER msg"
cd "$repo"

export PGPASSWORD=...            # or a line in ~/.pgpass
export MSG_PLUGIN_PATH=$(scripts/build-network-plugins)
export MSG_STORE=postgres://msg@db.example/outbox?sslmode=verify-full
msg compose --to ann --body hi | msg queue add
msg flush --watch &            # on host a, twice
children+=($!)
msg flush --watch &            # on host b, twice
children+=($!)
await "the watches' delivery" sh -c '[ "$(msg queue count --status sent)" = 1 ]'
msg recover                      # from cron, on any host
expect "$(ls ~/.local/share/msg/outbox/new | wc -l)" 1 "delivered once"
echo ok
