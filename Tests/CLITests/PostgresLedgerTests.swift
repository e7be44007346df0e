import Foundation
import Testing

/// `msg ledger` on the postgres:// store through the binary: a queue changed behind
/// msg's back with psql is named by `msg ledger verify`; checkpoints stay prefixes
/// while workers write. In ``PostgresTests``' suite, which runs one at a time (one
/// of its tests restarts the server).
extension PostgresTests {
    /// Four messages to u1..u4 flushed to the mock (u3's fails), a key, a checkpoint;
    /// the schema's name and psql's command line.
    func ledgerQueue(_ s: Sandbox, _ server: Server, _ env: [String: String]) throws -> (ids: [String], schema: String, psql: String) {
        let ids = try LedgerTests.store(s, env: env)
        let schema = String(env["MSG_STORE"]?.split(separator: "=").last ?? "")
        return (ids, schema, "psql -qAtX -v ON_ERROR_STOP=1 '\(server.url)'")
    }

    /// The tamperings of ``LedgerTests``, made with psql on the queue's tables (`S`
    /// stands for its schema; `H:to:` a Python statement over the record's history `h`).
    static let pgTamperings: [(name: String, sql: String, named: String)] = [
        ("a body", "UPDATE S.messages SET record = replace(record, 'hello 2', 'hellO 2') WHERE recipient = 'u2'", "u2: its content"),
        ("a recipient", #"UPDATE S.messages SET record = replace(record, '"to":"u2"', '"to":"u9"') WHERE recipient = 'u2'"#, "u2: its content"),
        ("a history entry", #"UPDATE S.messages SET record = replace(record, '"event":"sent"', '"event":"rent"') WHERE recipient = 'u1'"#,
         "u1: history entry 2 (rent)"),
        ("a deleted message", "DELETE FROM S.messages WHERE recipient = 'u2'", "u2 was deleted outside msg"),
        ("reordered entries", "H:u1:h[1], h[2] = h[2], h[1]", "u1: history entry 1 (sent)"),
        ("a removed entry", "H:u1:h.pop(1)", "u1: history entry 1 (sent)"),
        ("the last entry removed", "H:u3:h.pop()", "u3 has 2 history entries and the ledger 3"),
        // The last byte's lowest bit flipped (set to 0, it was already 0 one run in 256).
        ("a leaf of the log", #"UPDATE S.commits SET leaves = set_byte(leaves, length(leaves) - 1, get_byte(leaves, length(leaves) - 1) # 1) WHERE first = 1"#,
         "u1: its content"),
        ("a failed message made sent",
         #"UPDATE S.messages SET status = 'sent', record = replace(record, '"status":"failed","attempts"', '"status":"sent","attempts"') WHERE recipient = 'u3'"#,
         "u3 is sent, but its history ends failed"),
        ("a run of the log deleted", "DELETE FROM S.commits WHERE first = 2", "leaves 2 to 2 are missing: the log was changed outside msg"),
        ("an added message", """
            INSERT INTO S.messages (id, status, recipient, created_at, updated_at, record, history_at)
            SELECT 'forged', status, 'u7', created_at, updated_at, replace(record, id, 'forged'), history_at FROM S.messages WHERE recipient = 'u4'
            """, "1 messages are in no ledger, but 0 were stored before it began"),
    ]

    @Test(arguments: 0..<pgTamperings.count)
    func aChangeMadeWithPsqlIsNamed(_ index: Int) throws {
        let (name, sql, named) = Self.pgTamperings[index]
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let (ids, schema, psql) = try ledgerQueue(s, server, env)
        try #require(ids.count == 4)
        var run = "\(psql) -c \"$SQL\""
        if sql.hasPrefix("H:") {
            let parts = sql.split(separator: ":", maxSplits: 2).map(String.init)
            run = """
                \(psql) -c "SELECT record FROM \(schema).messages WHERE recipient = '\(parts[1])'" > r.json
                \(LedgerTests.python(parts[2]))
                echo "UPDATE \(schema).messages SET record = :'rec' WHERE recipient = '\(parts[1])'" | \(psql) -v rec="$(cat r.json)"
                """
        }
        let r = try s.sh("\(run) && msg ledger verify --checkpoint cp --pubkey k.pub; echo \"exit $?\"",
                         env: env.merging(["SQL": sql.replacingOccurrences(of: "S.", with: "\(schema).")]) { $1 })
        #expect(r.lines.last == "exit 65", "\(name): \(r.out) \(r.err)")
        let first = r.err.split(separator: "\n").first.map(String.init) ?? ""
        let wanted = LedgerTests.naming(named, ids)
        #expect(first.contains(wanted), "\(name): the first line names something else: \(r.err)")
        if !named.contains("missing") {
            #expect(r.err.contains("the store is not what its ledger holds"), "\(name): \(r.err)")
        }
    }

    /// A queue of schema 10 (its counts, floors and hints in tables of their own, as
    /// the msg before kept them) is migrated by the first command that writes: the
    /// checkpoint signed before verifies after it, the counts carry over (a counter
    /// of attempts at 7, which a recount of the records could not give), and it
    /// takes a compose and a flush.
    @Test func aSchema10QueueVerifiesItsOldCheckpointAfterTheMigration() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        let (ids, schema, psql) = try ledgerQueue(s, server, env)
        try #require(ids.count == 4)
        let S = schema
        let back = [
            "CREATE TABLE \(S).tallies (kind text NOT NULL, a text NOT NULL, b text NOT NULL, n bigint NOT NULL, PRIMARY KEY (kind, a, b))",
            "INSERT INTO \(S).tallies VALUES ('ok', '', '', 1), ('m', 'u4', 'queued', 1), ('m', 'u3', 'failed', 1), ('m', '', 'sent', 2), "
                + "('a', 'failed', 'remote', 7), ('a', 'sent', '', 2)",
            "CREATE TABLE \(S).tally_log (seq bigserial PRIMARY KEY, deltas text NOT NULL)",
            "CREATE TABLE \(S).claim_floors (xid bigint NOT NULL, created_at bigint)",
            "CREATE TABLE \(S).claim_floors_pruned (below bigint NOT NULL)",
            "CREATE TABLE \(S).claim_hints (kind text NOT NULL PRIMARY KEY, hint text NOT NULL)",
            "CREATE TABLE \(S).created_minutes (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL, PRIMARY KEY (status, minute))",
            "CREATE TABLE \(S).created_log (status text NOT NULL, minute bigint NOT NULL, n bigint NOT NULL)",
            "DROP TABLE \(S).kept", "DELETE FROM \(S).commits WHERE count = 0",
            "DROP INDEX \(S).commits_pending", "DROP INDEX \(S).commits_xid",
            "ALTER TABLE \(S).commits DROP COLUMN xid, DROP COLUMN effects",
            "ALTER TABLE \(S).commits RENAME TO ledger_runs", "ALTER SEQUENCE \(S).commits_id_seq RENAME TO ledger_runs_id_seq",
            "ALTER INDEX \(S).commits_first RENAME TO ledger_runs_first",
            "CREATE INDEX ledger_runs_pending ON \(S).ledger_runs (id) WHERE first IS NULL",
            "UPDATE \(S).msg_schema SET version = 10",
        ].map { "\(psql) -c \"\($0)\"" }.joined(separator: "\n")
        let r = try s.sh("""
            \(back)
            msg ledger verify --checkpoint cp --pubkey k.pub > /dev/null 2>&1; echo "before the migration $?"
            msg recover > /dev/null 2>&1; echo "recover $?"
            \(psql) -c "SELECT version FROM \(S).msg_schema"
            msg ledger verify --checkpoint cp --pubkey k.pub > /dev/null; echo "verify $?"
            msg metrics | grep -E '^msg_(messages|attempts_total)\\{' | sort
            msg compose --to u5 --body later --enqueue > /dev/null; msg flush --transport stdout: > /dev/null 3>/dev/null; echo "flush $?"
            msg ledger checkpoint --key k >> cp && msg ledger verify --checkpoint cp --pubkey k.pub > /dev/null; echo "verify $?"
            """, env: env)
        #expect(r.lines.prefix(3) == ["before the migration 74", "recover 0", "11"], "\(r.out) \(r.err)")
        #expect(r.lines.contains("verify 0") && r.lines.last == "verify 0" && r.lines.contains("flush 0"), "\(r.out) \(r.err)")
        #expect(r.out.contains(#"msg_attempts_total{outcome="failed",code="remote"} 7"#), "\(r.out)")
    }

    /// Four workers flush while messages are held, released, edited, removed and
    /// added, and one worker is killed mid-flush: the ledger verifies, every
    /// checkpoint taken meanwhile is a prefix of it, and an export's proof checks
    /// with no store.
    @Test func fourWorkersAndOperatorsKeepTheLedgerWhole() throws {
        let server = try Server()
        let s = try Sandbox()
        let env = server.queue()
        try compose(s, 3000, env)
        let r = try s.sh("""
            msg ledger keygen --key k > /dev/null
            for w in 1 2 3; do msg flush --batch 32 --transport 'stdout:?fail=0.2&seed='$w > out$w 2>/dev/null & done
            msg flush --batch 32 > killed 2>/dev/null & pk=$!
            until [ "$(wc -l < killed)" -ge 200 ] || ! kill -0 $pk 2>/dev/null; do sleep 0.01; done
            kill -9 $pk
            for i in 1 2 3; do
                msg ledger checkpoint --key k >> cp
                seq 50 | awk -v i=$i '{printf "{\\"to\\":\\"v%d\\",\\"body\\":\\"extra %d %d\\"}\\n", $1 % 5, i, $1}' | msg compose --enqueue > /dev/null
                msg queue hold --to v1 > /dev/null; msg queue edit --body edited$i $(msg queue ls --to v2 --status queued | cut -c8-43) > /dev/null 2>&1
                msg queue release --to v1 > /dev/null; msg queue rm $(msg queue ls --to v3 --status queued | cut -c8-43 | head -5) > /dev/null 2>&1
            done
            wait
            msg recover --stale-after 0s > /dev/null; msg retry --transport stdout: < /dev/null > /dev/null 2>&1; msg flush > /dev/null 2>&1
            msg queue purge --status sent --older-than 0s > /dev/null 2>&1
            msg ledger checkpoint --key k >> cp
            msg ledger verify --checkpoint cp --pubkey k.pub; echo "verify $?"
            msg export --status failed,dead,queued,sent --out e.ndjson --proof k > /dev/null; echo "export $?"
            MSG_STORE=none msg ledger verify --export e.ndjson --pubkey k.pub > /dev/null; echo "offline $?"
            """, env: env)
        #expect(r.lines.suffix(3) == ["verify 0", "export 0", "offline 0"], "\(r.out) \(r.err)")
        let report = r.lines.first { $0.hasPrefix(#"{"size":"#) } ?? ""
        #expect(report.contains(#""checkpoints":4}"#), "\(report)")
        #expect(!report.contains(#""removed":0,"#), "removals kept their leaves: \(report)")
    }
}
