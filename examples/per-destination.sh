#!/usr/bin/env bash
# Per destination: many destinations at once, each in order; one that is down
# opens its circuit breaker and the rest flows; a throttle; an expiry.
# Run with msg on the PATH and MSG_HOME set (scripts/test does both).
set -euo pipefail
cd "$MSG_HOME"

# Five messages to an endpoint that is down, then forty to eight that are up (the
# destination is "to").
for i in 1 2 3 4 5; do msg compose --to down.example.com --body "event $i" --enqueue > /dev/null; done
for i in $(seq 0 39); do
  printf '{"to":"api%d.example.com","body":"event %d"}\n' $((i % 8)) "$i"
done | msg compose --enqueue > /dev/null

# Eight at once through a mock answering in 20 ms; down.example.com fails every time.
mock="stdout:?fd=3&latency=20ms&fail_to=down.example.com"
msg flush --concurrency 8 --breaker 2 --breaker-cooldown 10m --transport "$mock" 3>/dev/null > /dev/null 2> flush.err || [ $? -eq 75 ]
grep -q "destination down.example.com: circuit open for 10m after 2 failures" flush.err
echo "sent: $(msg queue count --status sent); down.example.com: $(msg queue count --status failed) failed, $(msg queue count --status queued) wait"
test "$(msg queue count --status queued)" -eq 3

# What is known about each destination, and why the waiting message waits.
msg destinations --format table | grep -E "^DESTINATION|^down"
waiting=$(msg queue ls --status queued --limit 1 | cut -c8-43)
msg queue show "$waiting" 2>&1 > /dev/null | grep -q "waits: breaker: down.example.com is open until"

# A throttle of 5 a second, shared by every process on the store; and an expiry.
for i in 1 2 3 4 5 6; do msg compose --to slow.example.com --body "tick $i" --enqueue > /dev/null; done
msg compose --to slow.example.com --body "stale" --expires-in 1ms --enqueue > /dev/null
start=$(date +%s%N)
msg flush --rate 5/s --transport "stdout:?fd=3" 3>/dev/null > /dev/null 2>&1 || [ $? -eq 1 ]   # 1: the stale one is dead
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$elapsed" -ge 900 ] || { echo "six at 5/s took only $elapsed ms" >&2; exit 1; }
msg queue ls --status dead --history | grep -q '"event":"expired"'
msg queue stats --by destination --format table

# The config file's sections, checked and looked up before anything is sent: hooks
# get workers of their own and a 2 s deadline, so a hung one holds only its own.
cat > config <<'CONF'
[destination hooks.*]
transport = file:$MSG_HOME/hooks
deadline = 2s
concurrency = 4
CONF
export MSG_CONFIG="$MSG_HOME/config"
msg compose --to hooks.orders --body "order 1" --enqueue > /dev/null
msg config check
msg route hooks.orders | grep -q '"transport":"file:'"$MSG_HOME"'/hooks".*"deadline":"2s","concurrency":4,"own_workers":true'
msg flush --transport "stdout:?fd=3" 3>/dev/null > /dev/null 2> override.err || [ $? -eq 75 ]
grep -q "warning: --transport stdout: replaces the transport of 1 \[destination\] section" override.err
