# Sourced first by each page's script (ManExampleTests): a private machine for the
# examples of one man page, so they run as printed. In mount and network namespaces
# of their own (unshare -mn, as root), /etc, /usr, /srv, /var, /home and /tmp are
# overlays whose changes vanish with the run, loopback is the run's own (the ports
# the pages name are free), and the hosts the pages name (api.example.com,
# receiver, db.example…) are 127.0.0.1. msg is the tree's build, on the PATH.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "the man pages' examples run as root, in namespaces of their own (unshare -mn)"; exit 1; }
repo="${MSG_REPO:?MSG_REPO names the source tree}"
msg_bin="$(dirname "$(command -v msg)")"
ip link set lo up
mount -t tmpfs -o mode=0755 tmpfs /mnt
for d in /etc /usr /srv /var /home /tmp; do
    mkdir -p "/mnt/layers$d/upper" "/mnt/layers$d/work"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=/mnt/layers$d/upper,workdir=/mnt/layers$d/work" "$d"
done
echo "127.0.0.1 api.example.com api.example hooks.example.com relay.example relay.example.com receiver receiver.example.com inbox.example db.example smtp.example.com" >> /etc/hosts
# A user's account as the pages assume it: msg's defaults under HOME, no config file.
# The network plugins (tls://, https://, smtp://, postgres://) as the README has a
# user set them up: MSG_PLUGIN_PATH, here the build scripts/test made.
if [ -n "${MSG_TEST_NETWORK_PLUGINS:-}" ]; then export MSG_PLUGIN_PATH="$MSG_TEST_NETWORK_PLUGINS"; fi
unset MSG_HOME MSG_STORE MSG_TRANSPORT MSG_CONFIG XDG_CONFIG_HOME XDG_DATA_HOME
export HOME=/home/ann PATH="$msg_bin:/usr/local/bin:$PATH"
mkdir -p "$HOME/.config/msg" /mnt/work
git config --global user.name Ann; git config --global user.email ann@example.com
cd /mnt/work

children=()
finish() {
    local status=$?
    for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "${pgdata:-}" ] && runuser -u postgres -- "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop > /dev/null 2>&1
    exit $status
}
trap finish EXIT

# Fails the run saying what was expected.
fail() { echo "FAILED: $*"; exit 1; }
expect() { [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"; }

# Runs `command` until it succeeds, at most 20 s: readiness of a peer, or work
# another process does; never a fixed sleep.
await() {
    local what="$1"; shift
    for _ in $(seq 400); do "$@" > /dev/null 2>&1 && return 0; sleep 0.05; done
    fail "still not the case after 20 s: $what"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2> /dev/null; }

# A crontab line, run as cron runs it: the fields after the five of the time, by
# /bin/sh, with a bare environment (HOME, LOGNAME, SHELL, and the PATH and
# MSG_PLUGIN_PATH a crontab's lines set) and standard input an empty pipe.
cron() {
    local command
    command="$(printf '%s\n' "$1" | sed -E 's/^([^ ]+ +){5}//')"
    : | env -i HOME="$HOME" LOGNAME=ann SHELL=/bin/sh PATH="$msg_bin:/usr/bin:/bin" ${MSG_PLUGIN_PATH:+MSG_PLUGIN_PATH="$MSG_PLUGIN_PATH"} \
        /bin/sh -c "$command"
}

# A private CA the system trusts (its bundle, in the overlay), and certificates
# from it: cert NAME DNS… writes NAME.pem and NAME-key.pem here.
ca() {
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=msg-examples-ca -keyout ca-key.pem -out ca.pem 2> /dev/null
    cat ca.pem >> /etc/ssl/certs/ca-certificates.crt
}
cert() {
    local name="$1"; shift
    local sans; sans="$(printf 'DNS:%s,' "$@")"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$name-key.pem" -out "$name.csr" 2> /dev/null
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
        -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "${sans%,}") -out "$name.pem" 2> /dev/null
    chmod 600 "$name-key.pem"
}

# db.example: a PostgreSQL cluster here on port 5432, over TLS with a certificate
# from the CA above (ca first), database outbox owned by role msg whose password is
# $1; pg_admin runs SQL as the cluster's superuser (more roles, say).
db_example() {
    pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    pgdata=/mnt/work/pg/data
    cert db db.example
    mkdir -p /mnt/work/pg && chown postgres: /mnt/work/pg
    runuser -u postgres -- "$pgbin/initdb" -D "$pgdata" -U pgadmin --auth-local=trust --auth-host=reject -E UTF8 > /dev/null
    install -o postgres -m 0600 db-key.pem "$pgdata/server.key"; install -o postgres -m 0644 db.pem "$pgdata/server.crt"
    printf '%s\n' "listen_addresses = '127.0.0.1'" 'port = 5432' "unix_socket_directories = '/mnt/work/pg'" 'ssl = on' >> "$pgdata/postgresql.conf"
    printf '%s\n' 'local all all trust' 'hostssl all all 127.0.0.1/32 scram-sha-256' > "$pgdata/pg_hba.conf"
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$pgdata" -l /mnt/work/pg/server.log -w start > /dev/null
    pg_admin "CREATE ROLE msg LOGIN PASSWORD '$1'" "CREATE DATABASE outbox OWNER msg"
}
pg_admin() {
    local sql
    for sql in "$@"; do
        runuser -u postgres -- "$pgbin/psql" -q -h /mnt/work/pg -U pgadmin -d postgres -v ON_ERROR_STOP=1 -c "$sql"
    done
}

# A peer started in the background, stopped when the run ends; its first line
# (the port it listens on) is awaited.
serve() {
    local log="$1"; shift
    "$@" > "$log" 2>&1 &
    children+=($!)
    await "$* to start" grep -q . "$log"
}
