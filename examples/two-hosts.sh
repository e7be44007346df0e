#!/usr/bin/env bash
# Two hosts over TCP, here both on loopback: a receiver (`msg listen`) delivering
# into its inbox, and a sender flushing its queue to it. Then a plain Python
# client speaks the protocol of msg-tcp(7) by hand.
set -euo pipefail
cd "$MSG_HOME"
mkdir -p receiver sender

# The receiver; port 0 picks a free port, said on stderr.
MSG_HOME="$MSG_HOME/receiver" msg listen 'tcp://127.0.0.1:0?token=s3cret' 2> listen.log &
listener=$!
trap 'kill $listener 2>/dev/null || true' EXIT
until grep -q "listening on" listen.log; do
    kill -0 $listener   # fails, and stops the script, if the listener died
    sleep 0.05
done
url="$(grep -o 'tcp://[^,]*' listen.log)"
echo "receiver: $url"

# The sender: 20 messages, flushed over TCP. The token travels in the URL, so
# it is given through the environment, out of sight of ps.
export MSG_HOME="$MSG_HOME/sender"
seq 20 | awk '{printf "{\"to\":\"ops\",\"body\":\"event %d\"}\n", $1}' | msg compose --enqueue > /dev/null
MSG_TRANSPORT="$url?token=s3cret" msg flush > /dev/null
echo "sent: $(msg queue count --status sent), in the receiver's inbox: $(ls receiver/inbox/new | wc -l)"

# A wrong token reaches nothing and the message waits, failed, for a retry.
msg compose --to ops --body "wrong token" --enqueue > /dev/null
MSG_TRANSPORT="$url?token=guess" msg flush > /dev/null 2>&1 || echo "wrong token: status $?"

# The protocol by hand: hello, a lookup of a delivered id, and a garbage line.
first="$(msg queue ls --status sent --limit 1 | cut -c8-43)"
python3 - "${url#tcp://}" "$first" <<'PY'
import json, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
with socket.create_connection((host, int(port))) as s:
    f = s.makefile("rwb")
    for line in [{"op": "hello", "version": 1, "token": "s3cret"}, {"op": "lookup", "id": sys.argv[2]}]:
        f.write(json.dumps(line).encode() + b"\n")
    f.write(b"not json\n")
    f.flush()
    for _ in range(3):
        print("python client got:", f.readline().decode().strip())
PY

kill -TERM $listener
wait $listener
test "$(ls receiver/inbox/new | wc -l)" -eq 20
