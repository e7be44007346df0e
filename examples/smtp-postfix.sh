#!/usr/bin/env bash
# Mail through smtp://: messages rendered as RFC 5322 mail (Message-ID from msg's
# id, the subject encoded where it is not ASCII) and sent with STARTTLS to a real
# MTA on loopback, Debian's Postfix (scripts/postfix runs a private instance that
# delivers into a Maildir; it needs root, as Postfix does). The smtp:// plugin is
# one of the network plugins (Plugins/NetworkPlugins).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export MSG_PLUGIN_PATH="${MSG_TEST_NETWORK_PLUGINS:-$("$repo/scripts/build-network-plugins")}"
cd "$MSG_HOME"
chmod 755 "$MSG_HOME"

# The server's certificate, for 127.0.0.1; the sender trusts it with ca=.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null
chmod 600 key.pem
mkdir postfix
port="$("$repo/scripts/postfix" start "$MSG_HOME/postfix" cert.pem key.pem)"
trap '"$repo/scripts/postfix" stop "$MSG_HOME/postfix"' EXIT

export MSG_TRANSPORT="smtp://127.0.0.1:$port?ca=$MSG_HOME/cert.pem&from=alerts@example.com"
msg compose --to ops@example.com --header 'Subject=Backup finished' --body 'All 42 volumes copied.' --enqueue > /dev/null
msg compose --to ops@example.com --header 'Subject=Grüße aus Köln' --body 'Schöne Grüße' --enqueue > /dev/null
# A header that would add one of its own (a Bcc the sender did not mean) is never sent.
msg compose --to ops@example.com --header $'Subject=Invoice\nBcc: someone@example.net' --body x --enqueue > /dev/null
msg flush > /dev/null || echo "flush: exit $? (one message refused, dead)"
echo "sent: $(msg queue count --status sent), dead: $(msg queue count --status dead)"
msg queue ls --status dead --format csv | tr -d '\r' | tail -n +2 | cut -d, -f2,4

# Postfix delivers after its 250: wait for both, then read them back.
for _ in $(seq 200); do [ "$(ls postfix/mail/inbox/new | wc -l)" -ge 2 ] && break; sleep 0.05; done
python3 - postfix/mail/inbox/new <<'PY'
import email, email.policy, os, sys
for name in sorted(os.listdir(sys.argv[1])):
    m = email.message_from_binary_file(open(os.path.join(sys.argv[1], name), "rb"), policy=email.policy.default)
    print(f"{m['Message-ID']}  {m['Subject']}")
PY
test "$(ls postfix/mail/inbox/new | wc -l)" = 2
