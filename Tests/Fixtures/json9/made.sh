# How Tests/Fixtures/json9 was made, by msg at c7697dd (the JSON store's `$ledger`
# lines, one a change, before the journal line), in a directory of its own with
# MSG_STORE=json:queue.json:
seq 300 | awk '{printf "{\"to\":\"user%d@example.com\",\"body\":\"fixture %d\"}\n", $1 % 30, $1}' | msg compose | msg queue add > /dev/null
msg flush --transport 'stdout:?fail=1&error=remote' --to user3@example.com > /dev/null 2>&1 || true
msg flush --transport stdout: --limit 120 > /dev/null 3> /dev/null
msg queue hold --to user7@example.com --reason fixture > /dev/null 2>&1
msg queue purge --status sent --older-than 0s > /dev/null 2>&1
for i in 1 2 3; do msg compose --to late@example.com --body "late $i" --enqueue > /dev/null; done
msg flush --transport stdout: --to late@example.com --limit 2 > /dev/null 2>&1 3> /dev/null
msg destinations suspend user9@example.com --reason fixture > /dev/null
msg ledger keygen --key k > /dev/null
msg ledger checkpoint --key k > cp
msg metrics | grep -E '^msg_(messages|attempts_total|deliveries_total|failures_total)' | sort > metrics.txt
