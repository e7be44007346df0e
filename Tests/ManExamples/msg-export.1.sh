#!/usr/bin/env bash
# The examples of msg-export(1), run as printed (ManExampleTests).
. "$(dirname "$0")/stage.sh"
# Two failed messages, one dead and one sent.
printf '%s\n' '{"to":"a","body":"one"}' '{"to":"b","body":"two"}' '{"to":"c","body":"three"}' '{"to":"d","body":"four"}' | msg compose --enqueue > /dev/null
msg flush --transport 'stdout:?fail_to=a,b,c' > /dev/null 2>&1 || true
msg retry --now --to c --transport 'stdout:?fail=1&error=rejected' > /dev/null 2>&1 || true
mkdir audit

msg export --since 7d --format csv --out audit.csv 2> /dev/null
sha256sum -c audit.csv.sha256 | tee checked
grep -qx 'audit.csv: OK' checked || fail "the manifest checks"
expect "$(tail -n +2 audit.csv | wc -l)" 3 "the failed and the dead, as CSV"
msg export --status sent,dead --redact body | jq -c '.history[-1]' > last
expect "$(wc -l < last)" 2 "the sent and the dead, each its last event"
msg export --status sent,dead --redact body | jq -r .body | sort -u | grep -qx '\[redacted\]' || fail "bodies redacted"
msg export --out audit/today.csv --format csv && sha256sum -c audit/today.csv.sha256 | tee checked
grep -qx 'audit/today.csv: OK' checked || fail "the manifest checks from where the export ran"
echo ok
