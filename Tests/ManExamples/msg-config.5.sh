#!/usr/bin/env bash
# The examples of msg-config(5), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
cat > ~/.config/msg/config <<'EOF'
give_up_after = 2d
[destination *@example.com]
transport = file:$MSG_HOME/mail
max_attempts = 20
[destination hooks.*]
transport = file:$MSG_HOME/hooks
deadline = 1s
concurrency = 4
[destination partner.*]
rate = 10/s
breaker = 2
EOF
for to in ann@example.com hooks.orders partner.eu; do msg compose --to "$to" --body hi --enqueue > /dev/null; done
msg config check 2> check.err || fail "a clean file: $(cat check.err)"
grep -q "no problems" check.err || fail "says it is clean: $(cat check.err)"
msg config | grep give_up_after
msg config | grep -q "^give_up_after = 2d .*# $HOME/.config/msg/config line 1" || fail "the key and its line"
msg route ann@example.com hooks.orders partner.eu
msg route ann@example.com hooks.orders partner.eu > routes
grep -q '"destination":"ann@example.com","transport":"file:'"$HOME"'/.local/share/msg/mail","route":"\[destination \*@example.com\] (line 2)","max_attempts":20' routes || fail "ann's route: $(cat routes)"
grep -q '"destination":"hooks.orders".*"deadline":"1s","concurrency":4,"own_workers":true' routes || fail "the hooks' workers: $(cat routes)"
grep -q '"destination":"partner.eu".*"rate":"10/s","breaker":2' routes || fail "the partner's throttle: $(cat routes)"

msg flush --transport stdout: --route '*@example.com=file:/tmp/mail' > out 2> err
grep -q "warning: --transport stdout: replaces the transport of 2 \[destination\] sections" err || fail "the override is said: $(cat err)"
expect "$(ls /tmp/mail/new | wc -l)" 1 "the mail kept its route"
expect "$(msg queue count --status sent)" 3 "all three sent"
[ ! -d ~/.local/share/msg/hooks/new ] || fail "the hooks' section transport was replaced for the run"
echo ok
