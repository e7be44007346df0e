#!/usr/bin/env bash
# The example of msg-postgres(7), run as printed (ManExampleTests): db.example is a
# PostgreSQL cluster here on port 5432, its certificate from a CA the system
# trusts, role msg with the password the example gives; the two hosts' watches
# run side by side; the plugins are built (or found built) by the tree's script.
. "$(dirname "$0")/stage.sh"
ca; db_example ...
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
