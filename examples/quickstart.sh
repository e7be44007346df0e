#!/usr/bin/env bash
# Quick start: compose messages, store them durably, and look at the queue.
# Run with msg on the PATH (scripts/run-example does that); uses $MSG_HOME.
set -euo pipefail

# One message from flags, stored: `compose` prints the record, `queue add` stores
# it (fsync) and only then echoes it.
msg compose --to bob@example.com --body "Hello Bob" | msg queue add

# Drafts on stdin: compose completes each (id, times, status), --enqueue stores them.
printf '%s\n' \
  '{"to":"carol@example.com","body":"Lunch at noon?"}' \
  '{"to":"dave@example.com","body":"Build is green","headers":{"x-ci":"42"}}' \
  | msg compose --enqueue > /dev/null

echo "queued: $(msg queue count --status queued)"
msg queue ls --format table
msg queue ls --to dave@example.com --format csv
