#!/usr/bin/env bash
# The examples of msg-shell(1), run as printed (ManExampleTests): the session at a
# terminal through tmux, typed line by line (<TAB> is the key), then the script.
. "$(dirname "$0")/stage.sh"
msg compose --to ops --body one | jq -c '.id = "01890a5d-ac96-774b-bcce-b302099a8057"' | msg queue add > /dev/null
msg compose --to bob --body two | jq -c '.id = "01890a6e-5b1c-7f00-8a2d-4c5e6f708192"' | msg queue add > /dev/null
msg flush --transport 'stdout:?fail=1' > /dev/null 2>&1 || true
expect "$(msg queue count --status failed)" 2 "two failed"

screen() { tmux -L examples capture-pane -p -t shell; }
type_line() {
    local line="$1" before after
    while [[ "$line" == *"<TAB>"* ]]; do
        before="${line%%<TAB>*}"; after="${line#*<TAB>}"
        tmux -L examples send-keys -t shell -l "$before"; tmux -L examples send-keys -t shell Tab
        line="$after"
    done
    tmux -L examples send-keys -t shell -l "$line"; tmux -L examples send-keys -t shell Enter
}
tmux -L examples new-session -d -s shell -x 160 -y 40 "msg shell; echo EXITED \$?; sleep 60"
children+=($(tmux -L examples display-message -p '#{pid}'))   # the tmux server, stopped with the run
await "the prompt" sh -c "tmux -L examples capture-pane -p -t shell | grep -q 'msg sqlite:queue.sqlite>'"
type_line 'queue ls --status failed'
type_line 'retry --now 01890a5d-ac96-774b-bcce-b302099a8057'
await "the retry" sh -c '[ "$(msg queue count --status sent)" = 1 ]'
type_line 'queue edit 01890a6e<TAB> --to robert@example.com'
await "the edit, the id completed" sh -c "echo 01890a6e-5b1c-7f00-8a2d-4c5e6f708192 | msg queue ls | grep -q robert@example.com"
type_line 'exit'
await "the shell's end" sh -c "tmux -L examples capture-pane -p -t shell | grep -q 'EXITED 0'"
tmux -L examples kill-server

msg shell <<'EOF' > said
queue count --status failed
retry --now
EOF
expect "$(head -1 said)" 1 "the script's count"
expect "$(msg queue count --status sent)" 2 "the script's retry"
echo ok
