#!/usr/bin/env bash
# The examples of msg-retry(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
# What the examples act on: failures to api.example.com, bob, acme's tenant
# (rate-limited), an unreachable one, and two dead ones (one rejected).
printf '%s\n' '{"to":"api.example.com","body":"a"}' '{"to":"bob@example.com","body":"b"}' \
    '{"to":"api","body":"t","headers":{"tenant":"acme"}}' '{"to":"far","body":"u"}' | msg compose --enqueue > /dev/null
msg flush --to 'api.example.com' --transport 'stdout:?fail=1' > /dev/null 2>&1 || true
msg flush --to 'bob@example.com' --transport 'stdout:?fail=1' > /dev/null 2>&1 || true
msg flush --to api --transport 'stdout:?fail=1&error=rate_limited&retry_after=1ms' > /dev/null 2>&1 || true
msg flush --to far --transport 'stdout:?fail=1&error=unreachable' > /dev/null 2>&1 || true
printf '%s\n' '{"to":"gone","body":"d"}' '{"to":"refused","body":"r"}' | msg compose --enqueue > /dev/null
msg flush --transport 'stdout:?fail=1&error=rejected' > /dev/null 2>&1 || true
expect "$(msg queue count --status failed) $(msg queue count --status dead)" "4 2" "four failed, two dead"

msg retry --now --to api.example.com --reason "their fix is out" > /dev/null
expect "$(msg queue count --status sent)" 1 "api.example.com's sent"
msg retry --dead --limit 1 --dry-run 2>&1 | grep -q 'would' || fail "a dry run says what it would do"
msg retry > /dev/null 2>&1 || true
msg queue ls --status failed --to bob@example.com | msg retry --now > /dev/null
expect "$(msg queue count --status sent --to bob@example.com)" 1 "bob's sent"
msg queue ls --status failed --error unreachable | msg retry --now --pace 50/s > /dev/null
msg retry --now --header tenant=acme --error rate_limited > /dev/null
expect "$(msg queue count --status failed)" 0 "every failure retried"
msg retry --dead --error rejected --since 1h > /dev/null 2>&1 || true
msg retry --dead && msg flush > /dev/null
expect "$(msg queue count --status sent)" 6 "the dead redriven and sent"

msg compose --to later --body l --enqueue > /dev/null
msg flush --transport 'stdout:?fail=1' --backoff-base 1ms > /dev/null 2>&1 || true
cron "*/5 * * * * flock -n ~/.local/share/msg/cron.lock sh -c 'msg recover </dev/null && msg retry </dev/null'"
expect "$(msg queue count --status failed)" 0 "cron's line retried what failed"
echo ok
