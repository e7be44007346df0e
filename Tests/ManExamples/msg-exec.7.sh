#!/usr/bin/env bash
# The examples of msg-exec(7), run as printed (ManExampleTests): sendmail is
# Postfix's own, a private instance (scripts/postfix) that delivers into a Maildir;
# ssh to relay.example.com stands in for the remote host by running the command
# here, as that host's account (its own MSG_HOME).
. "$(dirname "$0")/stage.sh"
mkdir postfix && "$repo/scripts/postfix" start "$PWD/postfix" > /dev/null
export MAIL_CONFIG=$PWD/postfix/etc
stop_postfix() { "$repo/scripts/postfix" stop "$PWD/postfix"; }
printf '%s\n' '#!/bin/sh' 'shift; MSG_HOME=/tmp/relay exec "$@"' > /usr/local/bin/ssh && chmod 755 /usr/local/bin/ssh

cat > /usr/local/bin/msg-sendmail <<'SH'
#!/bin/sh
# /usr/local/bin/msg-sendmail
exec /usr/sbin/sendmail -i -- "$MSG_TO"
SH
chmod 755 /usr/local/bin/msg-sendmail
printf '%s\n' '{"to":"ann@example.com","body":"one","headers":{"Subject":"first"}}' '{"to":"bob@example.com","body":"two"}' | msg compose --enqueue > /dev/null
msg flush --transport 'exec:/usr/local/bin/msg-sendmail?input=mail&concurrency=4' > /dev/null
await "Postfix's delivery of both" sh -c '[ "$(ls postfix/mail/inbox/new | wc -l)" = 2 ]'
grep -q '^Subject: first' postfix/mail/inbox/new/* || fail "the mail as msg wrote it"
stop_postfix

msg compose --to carol --body relayed --enqueue > sent
msg flush --transport 'exec:ssh relay.example.com msg compose --enqueue' > /dev/null
expect "$(MSG_HOME=/tmp/relay msg queue ls | jq -r .id)" "$(jq -r .id sent)" "the relay's queue, the id kept"
echo ok
