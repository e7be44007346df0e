#!/usr/bin/env bash
# An out-of-tree plugin: examples/plugin is a package of its own that depends on
# MsgKit by path and builds a `journal:FILE` transport. msg loads it from a
# directory named in MSG_PLUGIN_PATH; nothing in msg knows about it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$MSG_HOME"

swift build --package-path "$here/plugin" --scratch-path "$MSG_HOME/plugin-build" >&2
built="$(swift build --package-path "$here/plugin" --scratch-path "$MSG_HOME/plugin-build" --show-bin-path)"
mkdir -p plugins && chmod 0700 plugins
install -m 0755 "$built/libJournalTransport.so" plugins/
export MSG_PLUGIN_PATH="$MSG_HOME/plugins"

msg plugins --format table | grep JournalTransport
msg compose --to ann@example.com --body "via a plugin" --enqueue > /dev/null
msg flush --transport "journal:$MSG_HOME/journal.ndjson"
test "$(wc -l < journal.ndjson)" -eq 1
echo "journal lines: $(wc -l < journal.ndjson)"
