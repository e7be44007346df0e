#!/usr/bin/env bash
# The examples of msg-recover(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
# What a crash leaves: a flush into the outbox killed while it sends, its messages
# left sending (some already in the outbox), then a failed message due again.
seq 2000 | sed 's/.*/{"to":"u&","body":"b"}/' | msg compose --enqueue > /dev/null
msg flush --batch 10 --transport 'exec:/bin/true?concurrency=1' > /dev/null 2>&1 & flush=$!
await "messages sending" sh -c '[ "$(msg queue count --status sending)" -gt 0 ]'
kill -9 $flush; wait $flush 2> /dev/null || true
left=$(msg queue count --status sending)
# Recover takes what has been sending for over 5 s (--stale-after): claimed at
# different times, they grow stale one claim after another, so wait for all.
await "the sending ones stale" sh -c "msg recover --dry-run 2>&1 | grep -q '^msg: would recover $left messages'"

msg recover --dry-run 2> said
grep -q "^msg: would recover $left messages" said || fail "the dry run says what it would do: $(cat said)"
expect "$(msg queue count --status sending)" "$left" "a dry run changes nothing"
cron "*/5 * * * * flock -n ~/.local/share/msg/cron.lock sh -c 'msg recover </dev/null && msg retry </dev/null'"
expect "$(msg queue count --status sending)" 0 "cron's line recovered them"
echo ok
