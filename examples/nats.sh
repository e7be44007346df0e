#!/usr/bin/env bash
# Into a NATS JetStream stream (msg-nats(7)): a real nats-server -js on loopback
# (file storage, scripts/nats), 200 orders published with their ids as
# Nats-Msg-Id, then the same records published again, as after a crash between
# the stream's PubAck and msg's record of it: the stream keeps each once.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$MSG_HOME"

port="$("$repo/scripts/nats" start "$MSG_HOME/nats")"
trap '"$repo/scripts/nats" stop "$MSG_HOME/nats"' EXIT
# The duplicate window: longer than a crashed run can stay unrecovered.
"$repo/scripts/nats" stream add "nats://127.0.0.1:$port" ORDERS 'orders.>' --dupe-window 7200

seq 200 | awk '{printf "{\"to\":\"shop%d\",\"body\":\"{\\\"order\\\":%d}\"}\n", $1 % 10, $1}' | msg compose --enqueue > /dev/null
cp queue.sqlite before.sqlite
export MSG_TRANSPORT="nats://127.0.0.1:$port/orders.{to}?concurrency=16"
msg flush > /dev/null
echo "sent: $(msg queue count --status sent); in the stream: $("$repo/scripts/nats" stream dump "nats://127.0.0.1:$port" ORDERS | wc -l)"
msg queue ls --history --status sent | jq -cs '.[0].history[-1].receipt'

# The same records again: every PubAck says duplicate, the stream still holds 200.
cp before.sqlite queue.sqlite && rm -f queue.sqlite-wal queue.sqlite-shm
msg flush > /dev/null
stored="$("$repo/scripts/nats" stream dump "nats://127.0.0.1:$port" ORDERS | wc -l)"
echo "published again: in the stream: $stored; duplicates acknowledged: $(msg queue ls --history --status sent | jq -s 'map(select(.history[-1].receipt.duplicate)) | length')"
test "$stored" = 200
