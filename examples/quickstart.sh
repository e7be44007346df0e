#!/usr/bin/env bash
# Quick start: a message's whole life on the default store (SQLite under $MSG_HOME,
# the file drop $MSG_HOME/outbox): compose, queue, flush, a failing destination and
# its retry, the destinations, an audit export with its checksum, the metrics.
# Run with msg on the PATH (scripts/run-example does that); uses $MSG_HOME.
set -euo pipefail
cd "$MSG_HOME"
step() { printf '\n== %s\n' "$*"; }

step "compose a message and queue it: queue add echoes it once it is on disk"
id=$(msg compose --to bob@example.com --body "Hello Bob" | msg queue add | sed 's/^{"id":"\([^"]*\)".*/\1/')
echo "queued $id"

step "drafts on stdin: compose completes each one, --enqueue stores them"
printf '%s\n' \
  '{"to":"carol@example.com","body":"Lunch at noon?"}' \
  '{"to":"dave@example.com","body":"Build is green","headers":{"x-ci":"42"}}' \
  | msg compose --enqueue > /dev/null
msg queue ls --format table

step "flush: each message goes to the file drop, then is recorded sent"
msg flush > /dev/null
ls outbox/new
echo "what bob's mailbox got:"
cat "outbox/new/$id.json"; echo

step "a destination that fails: the attempt is counted and retried with backoff"
cat > deliver <<'SH'
#!/bin/sh
# A stand-in for a mail relay that is down until ./relay-up exists.
[ -e relay-up ] || { echo "relay down" >&2; exit 75; }
cat > "sent-$MSG_ID.json"
SH
chmod +x deliver
msg compose --to erin@example.com --body "Are you there?" --enqueue > /dev/null
msg flush --transport "exec:$PWD/deliver" > /dev/null || echo "flush exit $? (75: deferred for a retry)"
msg destinations --format table
msg queue ls --status failed --format table

step "the relay is back: retry what failed (the pipeline form: ls | retry)"
touch relay-up
msg queue ls --status failed | msg retry --now --transport "exec:$PWD/deliver" > /dev/null
msg queue count --status failed | sed 's/^/failed now: /'

step "one message's whole life, from its history"
msg queue show "$(msg queue ls --to erin@example.com | sed 's/^{"id":"\([^"]*\)".*/\1/')" --format table

step "an audit export of everything, with a checksum sha256sum checks"
msg export --status all --format csv --out audit.csv
sha256sum -c audit.csv.sha256
head -3 audit.csv | cut -c1-100

step "metrics for Prometheus (msg metrics --textfile DIR for node_exporter)"
msg metrics | grep -E '^msg_(messages|queue_lag|attempts_total)'
