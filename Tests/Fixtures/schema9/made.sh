# How Tests/Fixtures/schema9 was made, by msg at 7eb3e3f (schema 9, as 182006b wrote it):
seq 300 | awk '{printf "{\"to\":\"user%d@example.com\",\"body\":\"fixture %d\"}\n", $1 % 30, $1}' | msg compose | msg queue add > /dev/null
msg flush --transport 'stdout:?fail=1&error=remote' --to user3@example.com > /dev/null 2>&1 || true
msg flush --transport stdout: --limit 120 > /dev/null 3> /dev/null
msg queue hold --to user7@example.com --reason fixture > /dev/null
msg queue purge --status sent --older-than 0s > /dev/null
msg ledger keygen --key k > /dev/null
msg ledger checkpoint --key k > cp
msg metrics | grep -E '^msg_(messages|attempts_total|deliveries_total|failures_total)' | sort > metrics.txt
sqlite3 queue.sqlite .dump > queue.sql   # .dump keeps no header: the two PRAGMAs are added
printf "PRAGMA application_id=%s;\nPRAGMA user_version=%s;\n" "$(sqlite3 queue.sqlite "PRAGMA application_id")" "$(sqlite3 queue.sqlite "PRAGMA user_version")" >> queue.sql
