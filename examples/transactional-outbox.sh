#!/usr/bin/env bash
# The transactional outbox (msg-inbox(1)): an application in Python (examples/
# outbox/shop.py, psycopg) writes each order and the message announcing it in one
# transaction; one order fails and rolls back. `msg flush --watch` delivers the
# committed orders' messages, woken by PostgreSQL's NOTIFY, and never the rolled
# back one. Then the same with an inbox in the application's own SQLite database.
# A throw-away PostgreSQL cluster on loopback (scripts/postgres); the postgres://
# plugin is a package of its own (Plugins/NetworkPlugins).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export MSG_PLUGIN_PATH="${MSG_TEST_NETWORK_PLUGINS:-$("$repo/scripts/build-network-plugins")}"
cd "$MSG_HOME"

# (Its directory is outside MSG_HOME: the server runs as another user when we are root.)
pg="$(mktemp -d /tmp/msg-outbox.XXXXXX)"
(cd / && "$repo/scripts/postgres" start "$pg")
trap 'cd / && "$repo/scripts/postgres" stop "$pg"' EXIT
. "$pg/env"
export MSG_STORE="$MSG_TEST_POSTGRES" MSG_TRANSPORT="file:$MSG_HOME/outbox"

# The schema, with msg.inbox and msg.enqueue(), and the application's rights: it
# may call the two functions, and nothing else of msg's.
msg inbox install "$MSG_STORE"
psql "$(echo "$MSG_TEST_POSTGRES" | sed 's|^postgres://|postgresql://|')" -qc "
    GRANT USAGE ON SCHEMA msg TO $MSG_TEST_POSTGRES_APP_ROLE;
    GRANT EXECUTE ON FUNCTION msg.enqueue(jsonb), msg.enqueue_all(jsonb) TO $MSG_TEST_POSTGRES_APP_ROLE;
    GRANT CREATE ON SCHEMA public TO $MSG_TEST_POSTGRES_APP_ROLE;"
app="$(echo "$MSG_TEST_POSTGRES" | sed "s|^postgres://msg@|postgresql://$MSG_TEST_POSTGRES_APP_ROLE@|")"

msg flush --watch > delivered.ndjson 2> watch.err &
watch=$!
python3 "$repo/examples/outbox/shop.py" postgres "$app" msg order-1 order-2! order-3
until [ "$(wc -l < delivered.ndjson)" -ge 2 ]; do kill -0 $watch; sleep 0.05; done
kill -TERM $watch && wait $watch
jq -r '.body | fromjson | .order' delivered.ndjson
test "$(jq -r '.body | fromjson | .order' delivered.ndjson)" = $'order-1\norder-3'
test "$(ls outbox/new | wc -l)" = 2

# SQLite: the inbox is a table in the application's database; flush takes it in.
sqlite3 shop.db 'PRAGMA journal_mode = WAL' > /dev/null
msg inbox install sqlite:shop.db
export MSG_STORE="sqlite:$MSG_HOME/queue.sqlite"
python3 "$repo/examples/outbox/shop.py" sqlite shop.db order-4 order-5! order-6
msg flush --inbox sqlite:shop.db | jq -r '.body | fromjson | .order'
test "$(ls outbox/new | wc -l)" = 4
test "$(sqlite3 shop.db 'SELECT count(*) FROM msg_inbox')" = 0
