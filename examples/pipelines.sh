#!/usr/bin/env bash
# Pipelines: queue, flush, retry what failed, audit what died.
# Run with msg on the PATH and MSG_HOME set (scripts/test does both).
set -euo pipefail
cd "$MSG_HOME"

# Three messages; one of them will be refused by its destination.
for to in ann@example.com bob@example.com carol@example.com; do
  msg compose --to "$to" --body "Report for $to" --enqueue > /dev/null
done
refused=$(msg queue ls --to bob@example.com | cut -c8-43)

# Send ann's now, picked by a listing: flush takes the ids on its stdin.
msg queue ls --to ann@example.com | msg flush > /dev/null

# A destination that times out on its first attempt for everyone, and refuses bob.
flaky="stdout:?fail_first=1&error=timeout&fd=3"
msg flush --transport "$flaky" 3>/dev/null > /dev/null || [ $? -eq 75 ]   # 75: deferred
echo "failed after the first flush: $(msg queue count --status failed)"

# Retry everything that failed, now (ignoring backoff); bob's is refused for good.
msg queue ls --status failed | msg retry --now --transport "stdout:?fail_ids=$refused&error=rejected&fd=3" 3>/dev/null > /dev/null || [ $? -eq 1 ]
echo "sent: $(msg queue count --status sent), dead: $(msg queue count --status dead)"

# Audit what died, with a manifest anyone can check.
msg export --format csv --out audit.csv
sha256sum -c audit.csv.sha256

# Fix the address and send it again: redrive, edit, flush to the outbox directory.
msg retry --dead "$refused" > /dev/null
msg queue edit "$refused" --to robert@example.com > /dev/null
msg flush > /dev/null
ls outbox/new | wc -l | xargs echo "files in the outbox:"
test "$(msg queue count --status sent)" -eq 3
