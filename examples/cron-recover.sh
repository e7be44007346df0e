#!/usr/bin/env bash
# Crash recovery as cron does it. A flush is killed in the middle (here with
# msg's fault points; in life, a reboot); recover then finishes its work and a
# second flush sends the rest. Nothing is lost and nothing is sent twice.
#
# Suggested crontab (one flock so two runs never overlap):
#   */5 * * * * flock -n ~/.local/share/msg/cron.lock sh -c 'msg recover && msg retry'
set -euo pipefail
cd "$MSG_HOME"

seq 100 | awk '{printf "{\"to\":\"user%d@example.com\",\"body\":\"n%d\"}\n", $1, $1}' | msg compose --enqueue > /dev/null

# Killed after the transport delivered message 50 but before msg recorded it.
MSG_FAULT=after-delivery:50 msg flush --batch 10 > /dev/null || echo "flush was killed (status $?)"
echo "left sending: $(msg queue count --status sending)"

flock -n cron.lock sh -c 'msg recover --stale-after 0s > /dev/null && msg retry > /dev/null'
msg flush > /dev/null
echo "sent: $(msg queue count --status sent) of 100, files: $(ls outbox/new | wc -l)"
test "$(msg queue count --status sent)" -eq 100
test "$(ls outbox/new | wc -l)" -eq 100
