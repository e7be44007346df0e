#!/usr/bin/env bash
# The example of msg-plugins(7), run as printed (ManExampleTests), from the top of
# the source tree (its build goes to an overlay, gone with the run).
. "$(dirname "$0")/stage.sh"
mkdir -p /mnt/layers/plugin/upper /mnt/layers/plugin/work
mount -t overlay overlay -o "lowerdir=$repo/examples/plugin,upperdir=/mnt/layers/plugin/upper,workdir=/mnt/layers/plugin/work" "$repo/examples/plugin"
mkdir -p ~/.local/lib/msg-plugins /var/log
msg compose --to ann --body "into the journal" --enqueue > /dev/null
cd "$repo"

swift build --package-path examples/plugin -c release > /mnt/work/build.log 2>&1 || fail "the plugin's build: $(tail -20 /mnt/work/build.log)"
install -m 0755 examples/plugin/.build/release/libJournalTransport.so ~/.local/lib/msg-plugins/
export MSG_PLUGIN_PATH=~/.local/lib/msg-plugins
msg flush --transport journal:/var/log/msg.ndjson > /dev/null
expect "$(jq -r .body /var/log/msg.ndjson)" "into the journal" "the journal's line"
echo ok
