#!/usr/bin/env bash
# The examples of msg-inbox(1), run as printed (ManExampleTests): shop.db is an
# application's SQLite database with a table of orders, as is /srv/shop/shop.db
# for the service; db.example is a PostgreSQL cluster as in msg-postgres(7), with
# the application's own table, and its role app may only enqueue.
. "$(dirname "$0")/stage.sh"
sqlite3 shop.db 'CREATE TABLE orders (name TEXT PRIMARY KEY)'
msg inbox install sqlite:shop.db
sqlite3 shop.db <<'SQL'
BEGIN;
INSERT INTO orders VALUES ('o1');
INSERT INTO msg_inbox (draft) VALUES ('{"to":"warehouse","body":"o1"}');
COMMIT;
SQL
msg flush --inbox sqlite:shop.db > flushed
expect "$(jq -r .body flushed)" o1 "the order's message, sent"
expect "$(sqlite3 shop.db 'SELECT count(*) FROM msg_inbox')" 0 "the inbox, taken in"

mkdir -p /srv/shop
sqlite3 /srv/shop/shop.db 'CREATE TABLE orders (name TEXT PRIMARY KEY)'
msg inbox install sqlite:/srv/shop/shop.db 2> /dev/null
msg flush --watch --inbox sqlite:/srv/shop/shop.db > /dev/null 2>&1 &
children+=($!)
sqlite3 -cmd '.timeout 5000' /srv/shop/shop.db "INSERT INTO msg_inbox (draft) VALUES ('{\"to\":\"warehouse\",\"body\":\"o3\"}')"
await "the watch's delivery" sh -c '[ "$(ls ~/.local/share/msg/outbox/new | wc -l)" = 2 ]'

# PostgreSQL: the cluster of msg-postgres(7)'s example.
ca; db_example secret
pg_admin "CREATE ROLE app LOGIN PASSWORD 'secret'"
export PGPASSWORD=secret MSG_STORE='postgres://msg@db.example/outbox?sslmode=verify-full'
msg inbox install "$MSG_STORE" 2> /dev/null
psql -q -v ON_ERROR_STOP=1 'postgresql://msg@db.example/outbox?sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt' <<'SQL'
CREATE TABLE public.orders (name text PRIMARY KEY);
GRANT INSERT ON public.orders TO app;
GRANT USAGE ON SCHEMA msg TO app;
GRANT EXECUTE ON FUNCTION msg.enqueue(jsonb), msg.enqueue_all(jsonb) TO app;
SQL
psql -q -v ON_ERROR_STOP=1 'postgresql://app@db.example/outbox?sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt' > /dev/null <<'SQL'
BEGIN;
INSERT INTO orders VALUES ('o2');
SELECT msg.enqueue('{"to":"warehouse","body":"o2"}');
COMMIT;
SQL
msg flush > flushed
expect "$(jq -r .body flushed)" o2 "the message of the application's transaction, sent"
expect "$(ls ~/.local/share/msg/outbox/new | wc -l)" 3 "each delivered once"
echo ok
