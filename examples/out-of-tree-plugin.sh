#!/usr/bin/env bash
# Out-of-tree plugins: examples/plugin is a package of its own that depends on
# MsgKit by path and builds a `journal:FILE` transport and a `snapshot:FILE` store
# (the whole queue in one file, written against the ten requirements of plugin
# ABI 10 and one capability, the commit journal, which gives it counts and a
# ledger msg can verify). msg loads them from a directory named in
# MSG_PLUGIN_PATH; nothing in msg knows about them. The store first passes the
# conformance suite every msg store must pass.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$MSG_HOME"

swift build --package-path "$here/plugin" --scratch-path "$MSG_HOME/plugin-build" >&2
swift test --package-path "$here/plugin" --scratch-path "$MSG_HOME/plugin-build" >&2
built="$(swift build --package-path "$here/plugin" --scratch-path "$MSG_HOME/plugin-build" --show-bin-path)"
mkdir -p plugins && chmod 0700 plugins
install -m 0755 "$built/libJournalTransport.so" "$built/libSnapshotStore.so" plugins/
export MSG_PLUGIN_PATH="$MSG_HOME/plugins"

msg plugins --format table | grep JournalTransport
msg plugins --format table | grep SnapshotStore
export MSG_STORE="snapshot:$MSG_HOME/queue.snap"
msg compose --to ann@example.com --body "via a plugin" --enqueue > /dev/null
msg compose --to bob@example.com --body "and another" --enqueue > /dev/null
msg flush --transport "journal:$MSG_HOME/journal.ndjson"
test "$(wc -l < journal.ndjson)" -eq 2
test "$(msg queue count --status sent)" -eq 2
# The counts and the ledger, made by msg from the store's journal.
msg metrics | grep -q '^msg_messages{status="sent"} 2$'
msg ledger verify
echo "journal lines: $(wc -l < journal.ndjson); sent in the snapshot store: $(msg queue count --status sent)"
