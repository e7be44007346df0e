#!/usr/bin/env bash
# The systemd units in examples/systemd, checked by running what they run:
# each ExecStart with msg from the PATH; the watching flush is stopped by SIGTERM,
# as `systemctl stop` does, and must exit 0 having sent what was queued.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$MSG_HOME"
if command -v systemd-analyze > /dev/null; then
    systemd-analyze verify --man=no "$here"/systemd/*.service "$here"/systemd/*.timer 2>&1 | grep -v "not executable\|No such file" || true
fi
commands() { sed -n 's#^ExecStart=/usr/local/bin/msg ##p' "$1"; }

msg compose --to ops --body "from a service" --enqueue > /dev/null
read -r -a watch <<< "$(commands "$here/systemd/msg-flush.service")"
msg "${watch[@]}" > flushed.ndjson &
service=$!
until grep -q '"status":"sent"' flushed.ndjson 2>/dev/null; do kill -0 $service; sleep 0.05; done
kill -TERM $service
wait $service   # exit 0 after SIGTERM
echo "flush --watch sent $(wc -l < flushed.ndjson) and stopped on SIGTERM"

while read -r -a line; do
    status=0
    msg "${line[@]}" > /dev/null < /dev/null || status=$?   # systemd: StandardInput=null
    [ "$status" -eq 0 ] || [ "$status" -eq 75 ]
    echo "ran: msg ${line[*]} (exit $status)"
done < <(commands "$here/systemd/msg-recover.service")
