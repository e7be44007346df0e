#!/usr/bin/env bash
# The examples of msg-ledger(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
mkdir -p /etc/msg /srv/audit && git -C /srv/audit init -q && touch /srv/audit/checkpoints && git -C /srv/audit add checkpoints && git -C /srv/audit commit -qm start
msg ledger keygen --key /etc/msg/ledger.key > /dev/null && cp /etc/msg/ledger.key.pub .
printf '%s\n' '{"to":"a","body":"one"}' '{"to":"b","body":"two"}' | msg compose --enqueue > /dev/null
msg flush --transport 'stdout:?fail_to=b&error=rejected' > /dev/null 2>&1 || true

cron '0 * * * * cd /srv/audit && msg ledger checkpoint --key /etc/msg/ledger.key >> checkpoints && git commit -qm checkpoint checkpoints'
expect "$(git -C /srv/audit log --oneline | wc -l)" 2 "the checkpoint committed"
msg ledger verify --checkpoint /srv/audit/checkpoints --pubkey ledger.key.pub | jq -e '.checkpoints == 1 and .messages == 2' > /dev/null \
    || fail "verify against the checkpoint"
msg export --status sent,dead --since 30d --out audit.ndjson --proof /etc/msg/ledger.key 2> /dev/null
msg ledger verify --export audit.ndjson --pubkey ledger.key.pub | jq -e '.messages == 2' > /dev/null || fail "verify the export"
echo ok
