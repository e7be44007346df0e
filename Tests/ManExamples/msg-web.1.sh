#!/usr/bin/env bash
# The examples of msg-web(1), run as printed (ManExampleTests): each dashboard is
# asked for a page as a browser or a scraper would; db.example is this machine.
. "$(dirname "$0")/stage.sh"
stop_web() { kill "$1"; wait "$1" 2> /dev/null || true; }
started() { grep -q 'dashboard of' web.err; }
msg compose --to bob --body hi --enqueue > /dev/null

msg web 2> web.err &
web=$!; children+=($web)
await "msg web" started
grep -q 'at http://127.0.0.1:9470/ (read-only)' web.err || fail "it says where: $(cat web.err)"
expect "$(curl -s http://127.0.0.1:9470/ | grep -c '<h1>Overview</h1>')" 1 "the overview"
stop_web $web

msg web --allow-actions --listen 127.0.0.1:8080 2> web.err &
web=$!; children+=($web)
await "msg web with actions" started
id=$(msg queue ls | jq -r .id)
expect "$(curl -s "http://127.0.0.1:8080/messages/$id" | grep -c 'action="/messages/[^"]*/hold"')" 1 "a hold button"
stop_web $web

mkdir -p /etc/msg
(umask 077; head -c 24 /dev/urandom | base64 > /etc/msg/web-token)
msg web --listen 0.0.0.0:9470 --token-file /etc/msg/web-token 2> web.err &
web=$!; children+=($web)
await "msg web with a token" started
curl -u ops:"$(cat /etc/msg/web-token)" http://db.example:9470/metrics > metrics.txt
grep -q '^msg_messages{status="queued"} 1$' metrics.txt || fail "the metrics through the token: $(head -3 metrics.txt)"
expect "$(curl -s -o /dev/null -w '%{http_code}' http://db.example:9470/metrics)" 401 "no token, no page"
stop_web $web

ca
cert web db.example
cert ops ops
install -m 0644 web.pem /etc/msg/web.pem; install -m 0600 web-key.pem /etc/msg/web-key.pem; install -m 0644 ca.pem /etc/msg/team-ca.pem
msg web --listen 'https://0.0.0.0:9443?cert=/etc/msg/web.pem&key=/etc/msg/web-key.pem&client_ca=/etc/msg/team-ca.pem' 2> web.err &
web=$!; children+=($web)
await "msg web over TLS" started
expect "$(curl -s --cert ops.pem --key ops-key.pem https://db.example:9443/ | grep -c '<h1>Overview</h1>')" 1 "a holder of a certificate sees it"
curl -s -o /dev/null https://db.example:9443/ && fail "a client without a certificate got a page"
stop_web $web
echo ok
