#!/usr/bin/env bash
# Crash recovery as cron does it. A flush is killed in the middle (here with
# msg's fault points; in life, a reboot); recover then finishes its work and a
# second flush sends the rest. Nothing is lost and nothing is sent twice.
#
# The crontab is examples/cron/crontab; it runs examples/cron/msg-cron, which
# this script runs too: recover, then retry, under one flock.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$MSG_HOME"

seq 100 | awk '{printf "{\"to\":\"user%d@example.com\",\"body\":\"n%d\"}\n", $1, $1}' | msg compose --enqueue > /dev/null

# Killed after the transport delivered message 50 but before msg recorded it.
MSG_FAULT=after-delivery:50 msg flush --batch 10 > /dev/null || echo "flush was killed (status $?)"
echo "left sending: $(msg queue count --status sending)"

# Cron would wait out --stale-after (5s); this demo does not.
"$here/cron/msg-cron" --stale-after 0s > /dev/null
msg flush > /dev/null
echo "sent: $(msg queue count --status sent) of 100, files: $(ls outbox/new | wc -l)"
test "$(msg queue count --status sent)" -eq 100
test "$(ls outbox/new | wc -l)" -eq 100
