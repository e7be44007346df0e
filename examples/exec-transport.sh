#!/usr/bin/env bash
# The exec: transport, msg's pipe(8): mail through a sendmail-compatible command,
# an HTTP POST through curl, and a relay into another queue. Each command runs
# once per message, without a shell unless one is named; its exit status says
# what happened (sysexits: 0 sent, 75 try again, 69 unreachable, others dead).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$MSG_HOME"

# 1. Mail. A stand-in for sendmail that keeps each mail in mail/; msmtp and real
# sendmail take the same arguments (-i: a lone dot is not the end; -- then the
# recipient). With input=mail msg writes the mail itself (RFC 5322: Message-ID
# from msg's id, Date, the subject encoded where it is not ASCII); a header that
# would add lines to the mail's header makes the message dead, never sent altered.
mkdir -p mail bin
cat > bin/sendmail <<'SH'
#!/bin/sh
# A fake sendmail: -i, then -- and the recipients; the mail on stdin.
[ "$1" = -i ] && [ "$2" = -- ] && [ -n "$3" ] || { echo "usage: sendmail -i -- RCPT" >&2; exit 64; }
case "$3" in *@*) ;; *) echo "$3: no such user here" >&2; exit 67;; esac
cat > "$MAILDIR/$MSG_ID.eml"
SH
chmod +x bin/sendmail
export MAILDIR="$MSG_HOME/mail"
# The shell only gives sendmail the envelope recipient; its path is its $0.
mailer='exec:/bin/sh -c '"'"'exec "$0" -i -- "$MSG_TO"'"'"
mailer="$mailer $MSG_HOME/bin/sendmail?input=mail"
# The same, without a shell: a two-line script, exec /usr/sbin/sendmail -i -- "$MSG_TO"
msg compose --to ann@example.com --header Subject="Disk 91% full" --body "on db1" --enqueue > /dev/null
msg compose --to ann@example.com --header Subject="Grüße aus Köln" --body "Tschüs" --enqueue > /dev/null
msg compose --to 'nobody; rm -rf ~' --header Subject=test --body "a hostile address" --enqueue > /dev/null
printf '%s\n' '{"to":"ann@example.com","body":"x","headers":{"Subject":"hi\nBcc: everyone@example.com"}}' | msg compose --enqueue > /dev/null
msg flush --transport "$mailer" > /dev/null || echo "mail: flush exit $? (two messages dead)"
echo "mail: $(ls mail | wc -l) mail sent; dead: $(msg queue ls --status dead | grep -o '"message":"[^"]*"' | cut -c1-70)"
grep -q '^Subject: Disk 91% full$' mail/*.eml
grep -q '^Subject: =?UTF-8?B?' mail/*.eml
! grep -q '^Bcc:' mail/*.eml
[ "$(ls mail | wc -l)" -eq 2 ]

# 2. An HTTP POST through curl, to a webhook receiver on loopback. curl -f exits
# 22 on an HTTP error, which is not a sysexits code: the wrapper says which
# answers are worth a retry.
"$repo/scripts/webhook-server" --log hooks.ndjson > server.out &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
until grep -q "listening on" server.out 2>/dev/null; do kill -0 $server; sleep 0.05; done
port="$(awk '{print $3}' server.out)"
cat > bin/post <<'SH'
#!/bin/sh
# POST the record on stdin; 2xx sent, 429 and 5xx again later, other answers dead.
code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
       -H "Idempotency-Key: \"$MSG_ID\"" --data-binary @- "$1") || exit 69
case "$code" in 2??) exit 0;; 429|5??) echo "HTTP $code" >&2; exit 75;; *) echo "HTTP $code" >&2; exit 65;; esac
SH
chmod +x bin/post
seq 5 | awk '{printf "{\"to\":\"ops\",\"body\":\"event %d\"}\n", $1}' | msg compose --enqueue > /dev/null
msg flush --transport "exec:$MSG_HOME/bin/post http://127.0.0.1:$port/hook?concurrency=4" > /dev/null
echo "curl: $(grep -c '"applied": true' hooks.ndjson) requests applied by the server"

# 3. A relay into another queue: what `ssh relay msg compose --enqueue` does on a
# relay host, here a second MSG_HOME. compose keeps the id, so the relay stores a
# message once however often it is sent, and flushes it onward itself.
msg compose --to later@example.com --body "relayed" --enqueue > /dev/null
msg flush --transport "exec:env MSG_HOME=$MSG_HOME/relay msg compose --enqueue" > /dev/null
echo "relay: $(MSG_HOME="$MSG_HOME/relay" msg queue count --status queued) queued on the relay"
MSG_HOME="$MSG_HOME/relay" msg queue ls | grep -q '"body":"relayed"'
