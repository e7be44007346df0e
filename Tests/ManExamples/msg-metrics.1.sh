#!/usr/bin/env bash
# The examples of msg-metrics(1), run as printed (ManExampleTests): the cron line
# writes the textfile, and the alert's rule is one promtool accepts, on a series
# msg writes.
. "$(dirname "$0")/stage.sh"
mkdir -p /var/lib/node_exporter/textfile
msg compose --to a --body one --enqueue > /dev/null
cron '* * * * * msg metrics --textfile /var/lib/node_exporter/textfile'
grep -q '^msg_queue_lag_seconds ' /var/lib/node_exporter/textfile/msg.prom || fail "the textfile has the lag"
{ printf 'groups:\n  - name: msg\n    rules:\n'; sed 's/^/      /' <<'RULE'
- alert: MsgQueueLagging
  expr: msg_queue_lag_seconds > 600
  for: 5m
RULE
} > rules.yml
promtool check rules rules.yml > /dev/null || fail "promtool refuses the rule: $(promtool check rules rules.yml 2>&1)"
echo ok
