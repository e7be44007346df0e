#!/usr/bin/env bash
# The examples of msg-queue(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
# What the examples act on: mail to bob, a newsletter, acme's tenant, a failed
# rate-limited message, a dead rejected one, the message the edit names.
printf '%s\n' '{"to":"bob@example.com","body":"b"}' '{"to":"newsletter","body":"n"}' \
    '{"to":"api","body":"t","headers":{"tenant":"acme"}}' '{"to":"limited","body":"l"}' '{"to":"refused","body":"r"}' | msg compose --enqueue > /dev/null
msg compose --to robert --body edit | jq -c '.id = "01890a5d-ac96-774b-bcce-b302099a8057"' | msg queue add > /dev/null
msg flush --to limited --transport 'stdout:?fail=1&error=rate_limited' > /dev/null 2>&1 || true
msg flush --to refused --transport 'stdout:?fail=1&error=rejected' > /dev/null 2>&1 || true

msg compose --to ann --body hi | msg queue add > /dev/null
msg queue ls --status failed --since 1h --format csv | grep -q ',failed,' || fail "the failed one, as CSV"
msg queue ls --to bob@example.com | msg queue rm
expect "$(msg queue count --to bob@example.com)" 0 "bob's removed"
msg queue ls --status queued --to newsletter | msg queue hold
expect "$(msg queue count --status held)" 1 "the newsletter held"
msg queue hold --header tenant=acme --reason "over quota" --dry-run
expect "$(msg queue count --status held)" 1 "a dry run holds nothing"
msg queue ls --status failed --error rate_limited | msg retry --now > /dev/null
expect "$(msg queue count --status sent)" 1 "the rate-limited one sent now"
msg queue rm --status dead --error rejected --until 7d
expect "$(msg queue count --status dead)" 1 "a dead message of a minute ago is kept by --until 7d"
msg queue edit 01890a5d-ac96-774b-bcce-b302099a8057 --to robert@example.com > /dev/null
expect "$(echo 01890a5d-ac96-774b-bcce-b302099a8057 | msg queue ls | jq -r .to)" robert@example.com "the edit"
msg queue purge --status sent,dead --older-than 30d
expect "$(msg queue count --status sent,dead)" 2 "nothing is 30 days old"
echo ok
