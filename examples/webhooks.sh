#!/usr/bin/env bash
# Webhooks over https://: messages POSTed to a receiver on loopback (a real
# server: Python's http.server and ssl, scripts/webhook-server), signed as
# Standard Webhooks specifies, over TLS with a private CA, with an
# Idempotency-Key the receiver deduplicates by. The http:// plugin is a package
# of its own (Plugins/NetworkPlugins): scripts/build-network-plugins builds it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export MSG_PLUGIN_PATH="${MSG_TEST_NETWORK_PLUGINS:-$("$repo/scripts/build-network-plugins")}"
cd "$MSG_HOME"

# A private CA and the receiver's certificate, for 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=example CA" -keyout ca-key.pem -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout key.pem -out req.csr 2>/dev/null
openssl x509 -req -in req.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 1 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out cert.pem 2>/dev/null

# The signing secret both sides share, in a file only its owner reads: never in
# the URL or argv, where ps and logs would show it.
umask 077
printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64)" > webhook.secret
"$repo/scripts/webhook-server" --tls cert.pem key.pem --secret "$(cat webhook.secret)" --log hooks.ndjson > server.out &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until grep -q "listening on" server.out 2>/dev/null; do kill -0 $server; sleep 0.05; done
port="$(awk '{print $3}' server.out)"

export MSG_TRANSPORT="https://127.0.0.1:$port/hooks/orders?ca_file=$MSG_HOME/ca.pem&signing_secret_file=$MSG_HOME/webhook.secret&concurrency=8&lookup=https://127.0.0.1:$port/applied/%7Bid%7D"
seq 50 | awk '{printf "{\"to\":\"orders\",\"body\":\"{\\\"order\\\":%d}\",\"headers\":{\"Content-Type\":\"application/json\"}}\n", $1}' \
    | msg compose --enqueue > /dev/null
msg flush > /dev/null
echo "sent: $(msg queue count --status sent); verified by the receiver: $(grep -c '"signature_ok": true' hooks.ndjson)"

echo "applied: $(grep -c '"applied": true' hooks.ndjson) of $(wc -l < hooks.ndjson) requests"

# A receiver whose certificate does not verify is refused, naming the host; the
# message stays queued and flush exits 78.
msg compose --to orders --body '{"order":51}' --enqueue > /dev/null
MSG_TRANSPORT="https://127.0.0.1:$port/hooks/orders" msg flush > /dev/null 2> refused.err || echo "unverified certificate: exit $?"
cat refused.err
test "$(msg queue count --status queued)" = 1
