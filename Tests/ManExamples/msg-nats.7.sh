#!/usr/bin/env bash
# The examples of msg-nats(7), run as printed (ManExampleTests): Debian's
# nats-server with JetStream on port 4222 here, first in clear text, then as
# nats.example.com with TLS (a certificate of a CA the system trusts) and a token;
# `nats stream add`, the NATS CLI's, is its one command the page uses, done
# through nats-py (scripts/nats).
. "$(dirname "$0")/stage.sh"
echo "127.0.0.1 nats.example.com" >> /etc/hosts
ca; cert nats nats.example.com
cat > /usr/local/bin/nats <<SH
#!/bin/sh
# nats stream add NAME --subjects SUBJECTS --dupe-window 2h --defaults
[ "\$1 \$2" = "stream add" ] || { echo "nats: only 'stream add' stands in here" >&2; exit 1; }
name=\$3; shift 3; subjects=; window=120
while [ \$# -gt 0 ]; do
  case "\$1" in
    --subjects) subjects=\$2; shift 2 ;;
    --dupe-window) case "\$2" in *h) window=\$((\${2%h} * 3600)) ;; *m) window=\$((\${2%m} * 60)) ;; *) window=\${2%s} ;; esac; shift 2 ;;
    --defaults) shift ;;
    *) echo "nats: \$1 does not stand in here" >&2; exit 1 ;;
  esac
done
exec "$repo/scripts/nats" stream add "\${NATS_URL:-nats://127.0.0.1:4222}" "\$name" "\$subjects" --dupe-window "\$window"
SH
chmod 755 /usr/local/bin/nats
stop_nats() { "$repo/scripts/nats" stop /mnt/work/nats; }

"$repo/scripts/nats" start /mnt/work/nats --port 4222 > /dev/null
nats stream add ORDERS --subjects 'orders.>' --dupe-window 2h --defaults
msg compose --to eu --body '{"order":1}' --enqueue > sent
msg flush --transport 'nats://127.0.0.1:4222/orders.{to}' > /dev/null
stored="$("$repo/scripts/nats" stream dump nats://127.0.0.1:4222 ORDERS)"
expect "$(jq -r .subject <<< "$stored")" orders.eu "the subject made from the recipient"
expect "$(jq -r '.headers["Nats-Msg-Id"]' <<< "$stored")" "$(jq -r .id sent)" "the id as Nats-Msg-Id"
expect "$(msg queue ls --history | jq -c '.history[-1].receipt')" '{"stream":"ORDERS","seq":1}' "the PubAck kept"
stop_nats

NATS_TOKEN=t0ken-$RANDOM
printf '%s\n' "$NATS_TOKEN" > /mnt/work/server.token
rm -rf /mnt/work/nats
"$repo/scripts/nats" start /mnt/work/nats --port 4222 --tls nats.pem nats-key.pem ca.pem --token /mnt/work/server.token > /dev/null
"$repo/scripts/nats" stream add nats://nats.example.com:4222 --ca ca.pem --token /mnt/work/server.token ORDERS 'orders.>'
seq 40 | awk '{printf "{\"to\":\"shop%d\",\"body\":\"order %d\"}\n", $1, $1}' | msg compose --enqueue > /dev/null
(
umask 077; printf '%s\n' "$NATS_TOKEN" > ~/.config/msg/nats.token
)
msg flush --transport 'nats://nats.example.com:4222/orders.new?tls=yes&token_file=/home/ann/.config/msg/nats.token&concurrency=64' > /dev/null
expect "$("$repo/scripts/nats" stream dump nats://nats.example.com:4222 --ca ca.pem --token /mnt/work/server.token ORDERS | wc -l)" 40 "every order in the stream, over TLS"
expect "$(msg queue count --status sent)" 41 "all sent"
stop_nats
echo ok
