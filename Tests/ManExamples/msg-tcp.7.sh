#!/usr/bin/env bash
# The examples of msg-tcp(7), run as printed (ManExampleTests); the receiver is this
# machine (receiver is 127.0.0.1), the client's script is run by python3.
. "$(dirname "$0")/stage.sh"
stop_listener() { kill "$1"; wait "$1" 2> /dev/null || true; }
mkdir -p /etc/msg /var/spool/msg
(umask 077; head -c 24 /dev/urandom | base64 > /etc/msg/token)

msg listen 'tcp://0.0.0.0:7000?token_file=/etc/msg/token' --into file:/var/spool/msg/inbox &
listener=$!; children+=($listener)
await "the receiver" port_open 7000
msg compose --to ops --body "disk full" --enqueue >/dev/null
MSG_TRANSPORT='tcp://receiver:7000?token_file=/etc/msg/token' msg flush > /dev/null
expect "$(cat /var/spool/msg/inbox/new/*.json | jq -r .body)" "disk full" "the receiver's inbox"
stop_listener $listener

msg listen tcp://127.0.0.1:7000 &
listener=$!; children+=($listener)
await "a receiver on loopback" port_open 7000
cat > client.py <<'PY'
import socket, json
s = socket.create_connection(("127.0.0.1", 7000))
f = s.makefile("rwb")
f.write(b'{"op":"hello","version":1}\n'); f.flush()
print(f.readline())
f.write(b'{"op":"lookup","id":"01890a5d-ac96-774b-bcce-b302099a8057"}\n')
f.flush(); print(f.readline())
PY
python3 client.py > replies
grep -q '"ok":true' replies || fail "hello answered: $(cat replies)"
grep -q '"delivered":false' replies || fail "lookup answered: $(cat replies)"
stop_listener $listener

ca; cert tls receiver; cert me me
msg listen 'tls://0.0.0.0:7443?cert=tls.pem&key=tls-key.pem&client_ca=ca.pem' &
listener=$!; children+=($listener)
await "the TLS receiver" port_open 7443
msg compose --to ops --body "over TLS" --enqueue >/dev/null
msg flush --transport 'tls://receiver:7443?ca=ca.pem&cert=me.pem&key=me-key.pem' > /dev/null
expect "$(cat ~/.local/share/msg/inbox/new/*.json | jq -r .body)" "over TLS" "the TLS receiver's inbox"
echo ok
