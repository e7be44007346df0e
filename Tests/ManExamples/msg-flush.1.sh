#!/usr/bin/env bash
# The examples of msg-flush(1), run as printed (ManExampleTests): relay.example is a
# msg listen here, api.example an HTTPS API (scripts/webhook-server, its certificate
# from a CA the system trusts), notify-ops a command that keeps what it is given.
. "$(dirname "$0")/stage.sh"
stop() { kill -TERM "$1"; wait "$1"; }
printf '%s\n' '#!/bin/sh' 'echo "$* $(cat)" >> /tmp/notified' > /usr/local/bin/notify-ops && chmod 755 /usr/local/bin/notify-ops

printf '%s\n' '{"to":"a","body":"1"}' '{"to":"ops","body":"2"}' | msg compose --enqueue > /dev/null
msg flush > /dev/null
msg compose --to ops --body 3 --enqueue > /dev/null
msg queue ls --to ops | msg flush > /dev/null
expect "$(ls ~/.local/share/msg/outbox/new | wc -l)" 3 "the two flushes"

msg listen tcp://127.0.0.1:7000 --into file:/tmp/relayed &
children+=($!)
await "the relay" port_open 7000
msg compose --to b --body 4 --enqueue > /dev/null
msg flush --transport tcp://relay.example:7000 --watch > /dev/null & watch=$!
await "the relay's delivery" sh -c '[ "$(ls /tmp/relayed/new | wc -l)" = 1 ]'
stop $watch

seq 20 | sed 's/.*/{"to":"m&","body":"b"}/' | msg compose --enqueue > /dev/null
set +e
msg flush --transport 'stdout:?fail=0.3&seed=7'    # a flaky mock
status=$?; set -e
expect "$status" 75 "some deferred"
[ "$(msg queue count --status failed)" -gt 0 ] || fail "the flaky mock failed some"

ca; cert api api.example
serve api.log python3 "$repo/scripts/webhook-server" --tls api.pem api-key.pem --port 443 --log api.requests
seq 5 | sed 's/.*/{"to":"d&","body":"e"}/' | msg compose --enqueue > /dev/null
msg flush --concurrency 16 --rate 10/s --transport https://api.example/v1/events > /dev/null 2>&1 || true
expect "$(grep -c '"applied": true' api.requests)" 5 "the API's POSTs"

msg compose --to late --body gone --expires-in 1ms --enqueue > /dev/null
msg flush --watch --on-event "notify-ops --channel msg" > /dev/null 2>&1 & watch=$!
await "the event's command" grep -q '"event":"dead"' /tmp/notified
stop $watch
grep -q '^--channel msg {' /tmp/notified || fail "notify-ops got its arguments and the event: $(cat /tmp/notified)"

msg compose --to short --body s --enqueue > /dev/null
msg flush --max-attempts 3 --backoff-cap 30s    # a short budget, for this run
echo ok
