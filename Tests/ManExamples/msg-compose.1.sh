#!/usr/bin/env bash
# The examples of msg-compose(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
printf '%s\n' '{"email":"carol@example.com","text":"hi Carol"}' '{"email":"dan@example.com","text":"hi Dan"}' > contacts.json

msg compose --to ann@example.com --body "The build is green" --enqueue
uptime | msg compose --to ops --body - --header host=$(hostname) | msg queue add
jq -c '{to: .email, body: .text}' contacts.json | msg compose --enqueue
msg compose --to bob --body "tomorrow" --not-before 12h --enqueue

expect "$(msg queue count)" 5 "messages stored"
expect "$(msg queue ls --to ops | jq -r '.headers.host')" "$(hostname)" "the header of ops's"
expect "$(msg queue ls --to 'carol@example.com' | jq -r .body)" "hi Carol" "carol's body"
msg flush > /dev/null
expect "$(msg queue ls --status queued | jq -r .to)" bob "what waits (until tomorrow)"
echo ok
