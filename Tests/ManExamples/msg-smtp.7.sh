#!/usr/bin/env bash
# The examples of msg-smtp(7), run as printed (ManExampleTests): smtp.example.com
# and the local MTA are scripts/smtp-server (Python's aiosmtpd) here, on ports 465
# (TLS from the first byte, AUTH required) and 25, with a certificate of a private
# CA the system trusts.
. "$(dirname "$0")/stage.sh"
ca; cert smtp smtp.example.com
mkdir -p /etc/msg smarthost local
(umask 077; printf 'pa55-%s\n' "$RANDOM" > /etc/msg/smtp.pass)
serve smarthost.out python3 "$repo/scripts/smtp-server" --maildir smarthost --port 465 --tls smtp.pem smtp-key.pem --implicit-tls \
    --auth "alerts:$(cat /etc/msg/smtp.pass)"
msg compose --to oncall@example.com --body "disk full" --header Subject=alert --enqueue > /dev/null

cron "*/5 * * * * MSG_TRANSPORT='smtps://smtp.example.com:465?user=alerts&password_file=/etc/msg/smtp.pass&from=alerts@example.com' msg flush </dev/null" > /dev/null
expect "$(jq -r '.mail_from + " " + .rcpt_tos[0]' smarthost/log)" "alerts@example.com oncall@example.com" "the smarthost's envelope"

serve local.out python3 "$repo/scripts/smtp-server" --maildir local --port 25
msg compose --to root@localhost --body "from the box" --enqueue > /dev/null
msg flush --transport 'smtp://127.0.0.1:25?tls=none&from=root@localhost' > /dev/null
expect "$(jq -r .rcpt_tos[0] local/log)" "root@localhost" "the local MTA's envelope"
echo ok
