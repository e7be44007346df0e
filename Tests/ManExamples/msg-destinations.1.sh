#!/usr/bin/env bash
# The examples of msg-destinations(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
msg compose --to api.example.com --body event --enqueue > /dev/null

msg destinations suspend api.example.com --for 2h \
    --reason "their maintenance, CHG-4411"
msg destinations --format table | grep -q 'CHG-4411' || fail "the table names the suspension's reason"
status=0; msg flush > /dev/null 2>&1 || status=$?
expect "$status" 75 "a flush holds the suspended destination back"
msg destinations resume api.example.com
msg flush > /dev/null
expect "$(msg queue count --status sent)" 1 "sent once resumed"
echo ok
