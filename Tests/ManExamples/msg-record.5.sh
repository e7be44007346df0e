#!/usr/bin/env bash
# The example of msg-record(5), run as printed (ManExampleTests): the record is one
# line (the page wraps it), and msg takes it as it is.
. "$(dirname "$0")/stage.sh"
cat > record <<'RECORD'
{"id":"01a2045e-5a2e-759d-99f4-2f23dbc00fd2","to":"bob","body":"hi",
 "status":"queued","attempts":0,"created_at":"2026-11-22T17:47:02.062Z",
 "updated_at":"2026-11-22T17:47:02.062Z","history":[{"at":
 "2026-11-22T17:47:02.062Z","event":"queued","status":"queued"}]}
RECORD
tr -d '\n' < record | sed 's/, "/,"/g; s/:\s*"/:"/g' > line; echo >> line
msg queue add < line > stored
expect "$(jq -r '.id + " " + .status + " " + .created_at' stored)" "01a2045e-5a2e-759d-99f4-2f23dbc00fd2 queued 2026-11-22T17:47:02.062Z" "the record, stored"
msg flush > /dev/null
test -f ~/.local/share/msg/outbox/new/01a2045e-5a2e-759d-99f4-2f23dbc00fd2.json || fail "delivered under its id"
echo ok
