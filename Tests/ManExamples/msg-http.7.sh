#!/usr/bin/env bash
# The examples of msg-http(7), run as printed (ManExampleTests): hooks.example.com
# and api.example.com are scripts/webhook-server (Python's http.server and ssl) on
# port 443 here, with certificates of a private CA; the webhook server checks the
# Standard Webhooks signature itself, from the spec.
. "$(dirname "$0")/stage.sh"
ca; cert hooks hooks.example.com; cert api api.example.com
cp ca.pem /etc/ssl/private-ca.pem
TOKEN=t0ken-$RANDOM
printf '%s\n' '{"to":"orders","body":"{\"order\":1}"}' '{"to":"orders","body":"{\"order\":2}"}' | msg compose --enqueue > /dev/null

(
umask 077; printf 'whsec_%s\n' "$(head -c 32 /dev/urandom | base64)" > ~/.config/msg/hook.secret
)
serve hooks.out python3 "$repo/scripts/webhook-server" --tls hooks.pem hooks-key.pem --port 443 --secret "$(cat ~/.config/msg/hook.secret)" --log hooks.log
msg flush --transport 'https://hooks.example.com/orders?signing_secret_file=/home/ann/.config/msg/hook.secret&ca_file=/etc/ssl/private-ca.pem&concurrency=8' > /dev/null
expect "$(jq -c 'select(.signature_ok == true and .applied == true) | .path' hooks.log | sort -u)" '"/orders"' "signed POSTs, verified"
expect "$(wc -l < hooks.log)" 2 "one POST each"
kill "${children[-1]}"; wait "${children[-1]}" 2> /dev/null || true

msg compose --to api --body 'hello, API' --enqueue > /dev/null
printf 'Authorization: Bearer %s\n' "$TOKEN" > ~/.config/msg/api.headers; chmod 600 ~/.config/msg/api.headers
serve api.out python3 "$repo/scripts/webhook-server" --tls api.pem api-key.pem --port 443 --log api.log
msg flush --transport 'https://api.example.com/v1/messages?input=body&headers_file=/home/ann/.config/msg/api.headers' > /dev/null
expect "$(jq -r .body api.log)" 'hello, API' "the body alone"
grep -q "Bearer $TOKEN" api.log || fail "the header from the file: $(cat api.log)"
echo ok
