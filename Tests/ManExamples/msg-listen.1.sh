#!/usr/bin/env bash
# The examples of msg-listen(1), run as printed (ManExampleTests); inbox.example
# is this machine.
. "$(dirname "$0")/stage.sh"
stop_listener() { kill "$1"; wait "$1" 2> /dev/null || true; }

msg listen tcp://127.0.0.1:7000 --into file:/tmp/inbox &
listener=$!; children+=($listener)
await "the listener" port_open 7000
msg compose --to bob --body hi --enqueue >/dev/null
msg flush --transport tcp://127.0.0.1:7000
expect "$(ls /tmp/inbox/new | wc -l)" 1 "one message in the inbox"
stop_listener $listener

mkdir -p /etc/msg
(
umask 077; head -c 24 /dev/urandom | base64 > /etc/msg/token
)
msg listen 'tcp://0.0.0.0:7000?token_file=/etc/msg/token' &
listener=$!; children+=($listener)
await "the listener with a token" port_open 7000
msg compose --to carol --body hi --enqueue >/dev/null
msg flush --transport 'tcp://inbox.example:7000?token_file=/etc/msg/token'
expect "$(ls ~/.local/share/msg/inbox/new | wc -l)" 1 "carol's in the default inbox"
stop_listener $listener

printf 's3cret\n' > /etc/msg/token
msg listen 'tcp://0.0.0.0:7000?token_file=/etc/msg/token' &
listener=$!; children+=($listener)
await "the listener with the other token" port_open 7000
msg compose --to dan --body hi --enqueue >/dev/null
MSG_TRANSPORT='tcp://inbox.example:7000?token=s3cret' msg flush
expect "$(ls ~/.local/share/msg/inbox/new | wc -l)" 2 "dan's too"
echo ok
