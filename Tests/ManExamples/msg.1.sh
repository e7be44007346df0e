#!/usr/bin/env bash
# The examples of msg(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
printf '%s\n' '{"email":"carol@example.com","text":"hi Carol"}' > contacts.json

msg compose --to bob@example.com --body "Hello" | msg queue add > /dev/null
msg queue ls --format table | grep -q 'bob@example.com' || fail "the table lists bob's"
jq -c '{to: .email, body: .text}' contacts.json | msg compose --enqueue > /dev/null
expect "$(msg queue ls --to carol@example.com --format csv | tail -1 | cut -d, -f2)" queued "carol's, as CSV"

msg flush > /dev/null
expect "$(ls ~/.local/share/msg/outbox/new | wc -l)" 2 "delivered into the outbox"
msg compose --to erin --body later --enqueue > /dev/null
msg flush --transport 'stdout:?fail=1' > /dev/null 2>&1 || true
msg queue ls --status failed | msg retry --now > /dev/null
expect "$(msg queue count --status sent)" 3 "the failed one retried now"
# What a crash leaves, and what cron's line finishes: a failed message due again.
msg compose --to frank --body again --enqueue > /dev/null
msg flush --transport 'stdout:?fail=1' --backoff-base 1ms > /dev/null 2>&1 || true
cron '*/5 * * * * msg recover </dev/null && msg retry </dev/null'
expect "$(msg queue count --status failed)" 0 "cron's line retried what failed"

msg export --since 7d --format csv --out audit.csv
sha256sum -c audit.csv.sha256 | grep -q 'audit.csv: OK' || fail "the manifest checks"

mkdir -p /etc/msg /srv/audit && msg ledger keygen --key /etc/msg/ledger.key > /dev/null && cp /etc/msg/ledger.key.pub .
cron '0 * * * * msg ledger checkpoint --key /etc/msg/ledger.key >> /srv/audit/checkpoints'
msg ledger verify --checkpoint /srv/audit/checkpoints --pubkey ledger.key.pub > /dev/null
echo ok
