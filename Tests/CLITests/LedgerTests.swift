import Foundation
import Testing

/// `msg ledger` through the binary: a store changed behind msg's back, with the
/// sqlite3 tool, is named by `msg ledger verify`, and one msg changed verifies.
@Suite struct LedgerTests {
    /// The stores that keep a ledger on this machine without a server: the default
    /// SQLite one, and the JSON file (its leaves in its `$ledger` lines).
    static let stores = ["sqlite", "json"]

    /// The environment that names `store` (the default, SQLite, when empty).
    static func env(_ store: String) -> [String: String] {
        store == "json" ? ["MSG_STORE": "json:q.json"] : [:]
    }

    /// Four messages to u1..u4, flushed to the mock (u3's fails), a key, a checkpoint,
    /// in the store `env` names (the default one when empty); the ids of u1..u4.
    static func store(_ s: Sandbox, env: [String: String] = [:]) throws -> [String] {
        let r = try s.sh("""
            for i in 1 2 3 4; do msg compose --to u$i --body "hello $i" --enqueue; done
            msg flush --transport 'stdout:?fail=1&error=remote' --to u3 > /dev/null
            msg flush --transport stdout: --to u1 > /dev/null 3>/dev/null; msg flush --transport stdout: --to u2 > /dev/null 3>/dev/null
            msg ledger keygen --key k > /dev/null && msg ledger checkpoint --key k > cp && msg ledger verify --checkpoint cp --pubkey k.pub
            """, env: env)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains(#""messages":4,"removed":0,"before_ledger":0,"checkpoints":1}"#), "\(r.out)")
        return r.lines.filter { $0.hasPrefix(#"{"id":""#) }.map { String($0.dropFirst(7).prefix(36)) }
    }

    /// The Python command that applies `expression` to the record in `r.json` (its
    /// JSON `r`, its history `h`), as a person with the store would, keeping the
    /// text on one line.
    static func python(_ expression: String) -> String {
        """
        python3 -c 'import json,sys; r = json.load(open("r.json")); h = r.get("history"); \(expression); open("r.json", "w").write(json.dumps(r, separators=(",", ":"), ensure_ascii=False))'
        """
    }

    /// What a tampering's first line must say: `named` with u1..u3 as their
    /// messages' ids (`ids`, from ``store(_:env:)``) name them.
    static func naming(_ named: String, _ ids: [String]) -> String {
        named.replacingOccurrences(of: "u1", with: "message \(ids[0])").replacingOccurrences(of: "u2", with: "message \(ids[1])")
            .replacingOccurrences(of: "u3", with: "message \(ids[2])")
    }

    /// Rewrites the record of `to` with ``python(_:)``.
    func rewrite(_ to: String, _ expression: String) -> String {
        """
        sqlite3 queue.sqlite "SELECT record FROM messages WHERE recipient = '\(to)'" > r.json
        \(Self.python(expression))
        sqlite3 queue.sqlite "UPDATE messages SET record = CAST(readfile('r.json') AS TEXT) WHERE recipient = '\(to)'"
        """
    }

    static let tamperings: [(name: String, script: String, named: String)] = [
        ("a body", #"sqlite3 queue.sqlite "UPDATE messages SET record = replace(record, 'hello 2', 'hellO 2') WHERE recipient = 'u2'""#,
         "u2: its content"),
        ("a recipient", #"sqlite3 queue.sqlite "UPDATE messages SET record = replace(record, '\"to\":\"u2\"', '\"to\":\"u9\"') WHERE recipient = 'u2'""#,
         "u2: its content"),
        ("a history entry", #"sqlite3 queue.sqlite "UPDATE messages SET record = replace(record, '\"event\":\"sent\"', '\"event\":\"rent\"') WHERE recipient = 'u1'""#,
         "u1: history entry 2 (rent)"),
        ("a deleted message", #"sqlite3 queue.sqlite "DELETE FROM messages WHERE recipient = 'u2'""#, "u2 was deleted outside msg"),
        ("reordered entries", "H:u1:h[1], h[2] = h[2], h[1]", "u1: history entry 1 (sent)"),
        ("an inserted entry", "H:u1:h.append(h[1])", "u1 has 4 history entries and the ledger 3"),
        ("a removed entry", "H:u1:h.pop(1)", "u1: history entry 1 (sent)"),
        ("the last entry removed", "H:u3:h.pop()", "u3 has 2 history entries and the ledger 3"),
        // A leaf rewritten in the log: the message it held, then the checkpoint, say so.
        // The last byte changed whatever it was (set to 0, it was already 0 one run in 256).
        ("a leaf of the log", #"sqlite3 queue.sqlite "UPDATE commits SET leaves = substr(leaves, 1, length(leaves) - 1) || CASE WHEN substr(leaves, -1) = X'00' THEN X'01' ELSE X'00' END WHERE first = 1 AND count > 0""#,
         "u1: its content"),
        // A leaf whose kind byte says a format this msg does not know (a store built
        // for a newer msg): named as such, not as a change, and its message not replayed.
        ("a leaf of a newer format", #"sqlite3 queue.sqlite "UPDATE commits SET leaves = CASE substr(leaves, 1, 1) WHEN X'01' THEN X'21' WHEN X'11' THEN X'21' WHEN X'02' THEN X'22' WHEN X'03' THEN X'23' WHEN X'13' THEN X'23' ELSE X'24' END || substr(leaves, 2) WHERE first = 1 AND count > 0""#,
         "leaf 1 is in ledger format 3, which this msg (format 2) cannot check"),
        // msg's own rules over the replay: a state written after delivery (the body
        // of a sent message rewritten, then a change through msg, which writes the
        // content it read as a new state), and a status its history does not end in.
        ("a sent body rewritten under a new state",
         #"sqlite3 queue.sqlite "UPDATE messages SET record = replace(record, 'hello 2', 'hellO 2') WHERE recipient = 'u2'" && msg queue ls --to u2 | msg queue mark --status delivered > /dev/null"#,
         "u2: leaf"),
        ("a failed message made sent",
         #"sqlite3 queue.sqlite "UPDATE messages SET status = 'sent', record = replace(record, '\"status\":\"failed\",\"attempts\"', '\"status\":\"sent\",\"attempts\"') WHERE recipient = 'u3'""#,
         "u3 is sent, but its history ends failed"),
        ("an added message", #"sqlite3 queue.sqlite "INSERT INTO messages (id, status, recipient, created_at, updated_at, open, record, history_at) SELECT 'forged', status, 'u7', created_at, updated_at, open, replace(record, id, 'forged'), history_at FROM messages WHERE recipient = 'u4'""#,
         "1 messages are in no ledger, but 0 were stored before it began"),
    ]

    @Test(arguments: 0..<tamperings.count)
    func aChangeBehindMsgsBackIsNamed(_ index: Int) throws {
        let (name, script, named) = Self.tamperings[index]
        let s = try Sandbox()
        let ids = try Self.store(s)
        try #require(ids.count == 4)
        var run = script
        if script.hasPrefix("H:") {
            let parts = script.split(separator: ":", maxSplits: 2).map(String.init)
            run = rewrite(parts[1], parts[2])
        }
        let r = try s.sh("cd \(s.home) && \(run) && msg ledger verify --checkpoint cp --pubkey k.pub; echo \"exit $?\"")
        #expect(r.lines.last == "exit 65", "\(name): \(r.out) \(r.err)")
        let first = r.err.split(separator: "\n").first.map(String.init) ?? ""
        let wanted = Self.naming(named, ids)
        #expect(first.contains(wanted), "\(name): the first line names something else: \(r.err)")
        #expect(r.err.contains("the store is not what its ledger holds"), "\(name): \(r.err)")
        if name == "a leaf of the log" {
            #expect(r.err.contains("do not hash to the root of the checkpoint"), "\(r.err)")
        }
    }

    @Test func aForgedCheckpointOrAnotherKeysIsRefused() throws {
        let s = try Sandbox()
        _ = try Self.store(s)
        let r = try s.sh("""
            sed 's/"size":[0-9]*/"size":3/' cp > forged; msg ledger verify --checkpoint forged --pubkey k.pub; echo "exit $?"
            msg ledger keygen --key other > /dev/null; msg ledger checkpoint --key other > theirs
            msg ledger verify --checkpoint theirs --pubkey k.pub; echo "exit $?"
            msg ledger verify --checkpoint cp; echo "exit $?"
            echo 'not a checkpoint' >> cp; msg ledger verify --checkpoint cp --pubkey k.pub; echo "exit $?"
            """)
        #expect(r.lines == ["exit 65", "exit 65", "exit 64", "exit 65"], "\(r.out) \(r.err)")
        let errors = r.err.split(separator: "\n").map(String.init)
        #expect(errors.first?.contains("forged:1: the checkpoint's signature is not k.pub's") == true, "\(r.err)")
        #expect(errors.contains { $0.contains("theirs:1: the checkpoint is signed by key") }, "\(r.err)")
        #expect(errors.contains { $0.contains("cp:2: not a msg ledger checkpoint") }, "\(r.err)")
    }

    /// Checkpoints taken along the way (by `checkpoint`, and by a flush's
    /// `--checkpoint-key`) stay prefixes of the log as it grows; a message removed or
    /// purged keeps its leaves.
    @Test func everyEarlierCheckpointIsAPrefixAndRemovalsKeepTheirLeaves() throws {
        let s = try Sandbox()
        let ids = try Self.store(s)
        try #require(ids.count == 4)
        let r = try s.sh("""
            msg queue rm \(ids[3]) > /dev/null
            msg ledger checkpoint --key k >> cp
            msg compose --to u5 --body five --enqueue > /dev/null
            msg flush --transport stdout: --checkpoint-key k --checkpoint-to cp > /dev/null 3>/dev/null
            msg queue purge --status sent --older-than 0s > /dev/null
            msg ledger checkpoint --key k >> cp
            msg ledger verify --checkpoint cp --pubkey k.pub
            """)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.lines.last?.contains(#""messages":1,"removed":4,"before_ledger":0,"checkpoints":4}"#) == true, "\(r.out) \(r.err)")
        // A removal then deleted from the list of the removed: its leaves are no one's.
        let gone = try s.sh("sqlite3 queue.sqlite \"DELETE FROM ledger_removed WHERE id = '\(ids[3])'\"; msg ledger verify; echo \"exit $?\"")
        #expect(gone.lines.last == "exit 65" && gone.err.contains("message \(ids[3]) was deleted outside msg"), "\(gone.out) \(gone.err)")
    }

    /// Python that rewrites every leaf of the store's ledger that keeps its id as a
    /// UUID's 16 bytes (format 2) as an older msg kept it, the id as its text (format
    /// 1), read as DESIGN.md 10 and `LedgerLeaf` describe the bytes; prints how many.
    static let toFormatOne = #"""
        python3 -c '
        import sqlite3, uuid
        db = sqlite3.connect("queue.sqlite")
        def varint(b, i):
            v, s = 0, 0
            while True:
                c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
                if c < 0x80: return v, i
        def put(v):
            out = bytearray()
            while v >= 0x80: out.append(v & 0x7f | 0x80); v >>= 7
            return bytes(out + bytes([v]))
        changed = 0
        for first, leaves in db.execute("SELECT first, leaves FROM commits WHERE count > 0").fetchall():
            out, i = bytearray(), 0
            while i < len(leaves):
                kind = leaves[i]; n, i = varint(leaves, i + 1); size, i = varint(leaves, i)
                name = leaves[i:i + size]; i += size
                if kind >> 4 == 1:
                    kind, name, changed = kind & 15, str(uuid.UUID(bytes=bytes(name))).encode(), changed + 1
                out += bytes([kind]) + put(n) + put(len(name)) + name + leaves[i:i + 32]; i += 32
            db.execute("UPDATE commits SET leaves = ? WHERE first = ? AND count > 0", (bytes(out), first))
        db.commit(); print("format 1:", changed)'
        """#

    /// A store whose ledger an older msg wrote (every id as its text, format 1) still
    /// verifies against the checkpoint it signed then: the format is how a leaf is
    /// kept, not what it hashes. The leaves written after it name a UUID by its bytes.
    @Test func aLedgerKeptInFormatOneVerifiesAndGrowsInFormatTwo() throws {
        let s = try Sandbox()
        let ids = try Self.store(s)
        try #require(ids.count == 4)
        let sizes = "sqlite3 queue.sqlite \"SELECT sum(length(leaves)) FROM commits\""
        let r = try s.sh("""
            \(sizes)
            \(Self.toFormatOne)
            \(sizes)
            msg ledger verify --checkpoint cp --pubkey k.pub
            msg compose --to u5 --body five --enqueue > /dev/null
            sqlite3 queue.sqlite "SELECT hex(substr(leaves, 1, 1)) FROM commits WHERE count > 0 ORDER BY first DESC LIMIT 1"
            msg queue rm \(ids[3]) > /dev/null
            msg ledger checkpoint --key k >> cp
            msg ledger verify --checkpoint cp --pubkey k.pub
            """)
        #expect(r.status == 0, "\(r.err)")
        try #require(r.lines.count == 6, "\(r.out) \(r.err)")
        // The four state leaves of u1..u4: 20 bytes more each as text.
        #expect(r.lines[1] == "format 1: 4" && Int(r.lines[2]) == Int(r.lines[0]).map { $0 + 80 }, "\(r.out)")
        #expect(r.lines[3].contains(#""messages":4,"removed":0,"before_ledger":0,"checkpoints":1}"#), "\(r.out) \(r.err)")
        #expect(r.lines[4] == "11", "u5's state leaf, written now, in format 2: \(r.out)")
        #expect(r.lines[5].contains(#""messages":4,"removed":1,"before_ledger":0,"checkpoints":2}"#), "\(r.out) \(r.err)")
    }

    /// The build the ledger's cost is measured against (`scripts/ledger-off`: this
    /// tree with the ledger's work left out) can still be made: its patch applies.
    @Test func theBuildWithoutTheLedgerCanStillBeMade() throws {
        let s = try Sandbox()
        let r = try s.sh("cd '\(InstallTests.repository)' && git apply --check scripts/ledger-off.patch")
        #expect(r.status == 0, "scripts/ledger-off.patch no longer applies: \(r.err)")
    }

    /// A flush killed at any of its points leaves a ledger that verifies, and so do
    /// the recover and flush that finish its work.
    @Test(arguments: ["before-sending", "after-sending", "after-delivery", "after-sent"], Self.stores)
    func aKilledFlushLeavesALedgerThatVerifies(point: String, store: String) throws {
        let s = try Sandbox(), env = Self.env(store)
        let made = try s.sh("seq 300 | awk '{printf \"{\\\"to\\\":\\\"u%d\\\",\\\"body\\\":\\\"m%d\\\"}\\n\", $1 % 7, $1}' | msg compose --enqueue | wc -l", env: env)
        #expect(made.out == "300\n", "\(made.err)")
        let r = try s.sh("""
            MSG_FAULT=\(point):150 msg flush --batch 32 --transport stdout: > /dev/null 3>/dev/null; echo "killed $?"
            msg ledger verify > /dev/null; echo "verify $?"
            msg recover --stale-after 0s > /dev/null; msg flush --transport stdout: > /dev/null 3>/dev/null
            msg ledger verify > /dev/null; echo "verify $?"; msg queue count --status sent
            """, env: env)
        #expect(r.lines == ["killed 137", "verify 0", "verify 0", "300"], "\(point), \(store): \(r.out) \(r.err)")
    }

    /// An export with its proof is checked with no store: the export, FILE.proof and
    /// the public key; a record changed or taken out of it, another key, or a
    /// checkpoint the auditor does not hold, is named.
    @Test func anExportIsProvenWithoutTheStore() throws {
        let s = try Sandbox()
        let ids = try Self.store(s)
        try #require(ids.count == 4)
        let r = try s.sh("""
            msg compose --to u6 --body six --enqueue > /dev/null
            msg export --status failed,sent --out audit.ndjson --proof k 2> /dev/null; echo "export $?"
            sha256sum -c audit.ndjson.sha256 > /dev/null; echo "sha $?"
            mkdir auditor; cp audit.ndjson audit.ndjson.proof k.pub auditor/; head -1 audit.ndjson.proof > auditor/checkpoints
            cd auditor && MSG_STORE=sqlite:/nonexistent/q.sqlite msg ledger verify --export audit.ndjson --pubkey k.pub; echo "verify $?"
            msg ledger verify --export audit.ndjson --checkpoint checkpoints --pubkey k.pub > /dev/null; echo "held $?"
            msg ledger verify --export audit.ndjson --checkpoint ../cp --pubkey k.pub > /dev/null; echo "not held $?"
            cp audit.ndjson keep; sed -i 's/hello 1/hellO 1/' audit.ndjson
            msg ledger verify --export audit.ndjson --pubkey k.pub; echo "changed $?"
            grep -v 'hello 2' keep > audit.ndjson; msg ledger verify --export audit.ndjson --pubkey k.pub; echo "taken out $?"
            cp keep audit.ndjson; cp audit.ndjson.proof proof.keep
            python3 -c 'import sys; l = open("audit.ndjson.proof").read().split("\\n"); h = l[-2].index(",\\"") + 2; c = l[-2][h]; l[-2] = l[-2][:h] + ("0" if c != "0" else "1") + l[-2][h + 1:]; open("audit.ndjson.proof", "w").write("\\n".join(l))'
            msg ledger verify --export audit.ndjson --pubkey k.pub; echo "subtree $?"; cp proof.keep audit.ndjson.proof
            awk 'NR == 1 { print } { print }' keep > audit.ndjson; awk 'NR == 2 { print } { print }' proof.keep > audit.ndjson.proof
            msg ledger verify --export audit.ndjson --pubkey k.pub; echo "twice $?"; cp keep audit.ndjson; cp proof.keep audit.ndjson.proof
            cd .. && msg ledger keygen --key other > /dev/null
            msg ledger verify --export auditor/audit.ndjson --pubkey other.pub; echo "other key $?"
            """)
        #expect(r.lines.first == "export 0" && r.lines.contains("sha 0"), "\(r.out) \(r.err)")
        #expect(r.lines.contains { $0.hasPrefix(#"{"export":"audit.ndjson","messages":3,"leaves":9,"#) }, "\(r.out) \(r.err)")
        let errors = r.err.split(separator: "\n").map(String.init)
        #expect(Array(r.lines.suffix(8)) == ["verify 0", "held 0", "not held 65", "changed 65", "taken out 65", "subtree 65", "twice 65", "other key 65"],
                "\(r.out) \(r.err)")
        #expect(errors.contains { $0.contains("error export-duplicate: audit.ndjson:2: message \(ids[0]) is in the export twice") }, "\(r.err)")
        #expect(errors.contains { $0.contains("is none of the checkpoints given") }, "\(r.err)")
        #expect(errors.contains { $0.hasPrefix("msg: ledger: error content-changed: audit.ndjson:1: message \(ids[0]): its content") }, "\(r.err)")
        #expect(errors.contains { $0.contains("message \(ids[1]) is proven but not in audit.ndjson") }, "\(r.err)")
        #expect(errors.contains { $0.contains("the checkpoint's signature is not the public key's") }, "\(r.err)")
        #expect(errors.contains { $0.contains("do not hash to the checkpoint's root: the proof was changed") }, "\(r.err)")
    }

    /// Two flushes and a writer at once: the store's writers take turns, so the leaves
    /// of each commit follow the last, and the log verifies.
    @Test(arguments: Self.stores) func concurrentWritersLeaveALedgerThatVerifies(store: String) throws {
        let s = try Sandbox(), env = Self.env(store)
        let r = try s.sh("""
            seq 600 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"m%d\\"}\\n", $1 % 13, $1}' | msg compose --enqueue > /dev/null
            msg flush --batch 16 --transport stdout: > /dev/null 3>/dev/null & msg flush --batch 16 --transport stdout: > /dev/null 3>/dev/null &
            seq 200 | awk '{printf "{\\"to\\":\\"v%d\\",\\"body\\":\\"n%d\\"}\\n", $1 % 5, $1}' | msg compose --enqueue > /dev/null
            wait; msg flush --transport stdout: > /dev/null 3>/dev/null
            msg ledger verify; echo "verify $?"; msg queue count --status sent
            """, env: env)
        #expect(r.lines.suffix(2) == ["verify 0", "800"], "\(r.out) \(r.err)")
        #expect(r.lines.first?.contains(#""messages":800,"removed":0,"before_ledger":0"#) == true, "\(r.out)")
    }

    /// Every command that changes messages leaves a ledger that verifies, and each
    /// grows it (it did change something): a failure, a dead message, hold, release,
    /// an edit of the body and of the recipient, retry, a redrive, a receipt, a
    /// killed flush and its recovery, a removal and a purge.
    @Test(arguments: Self.stores) func everyCommandThatChangesMessagesKeepsTheLedgerWhole(store: String) throws {
        let s = try Sandbox(), env = Self.env(store)
        let r = try s.sh("""
            v() { size=$(msg ledger verify 2> v.err | sed 's/.*"size":\\([0-9]*\\).*/\\1/'); echo "$1 ${size:-failed}"; head -1 v.err; }
            id() { msg queue ls --to "$1" | cut -c8-43; }
            for i in 1 2 3 4 5 6; do msg compose --to u$i --body "b$i" --enqueue > /dev/null; done; v added
            msg flush --transport 'stdout:?fail=1&error=remote' --to u1 > /dev/null 2>&1; v failed
            msg flush --transport 'stdout:?fail=1&error=rejected' --to u2 > /dev/null 2>&1; v dead
            msg queue hold --to u3 > /dev/null 2>&1; v held
            msg queue release --to u3 > /dev/null 2>&1; v released
            msg queue edit $(id u4) --body edited > /dev/null 2>&1; v edited
            msg queue edit $(id u4) --to u44 > /dev/null 2>&1; v retargeted
            msg retry --now --transport stdout: > /dev/null 2>&1 3>/dev/null; v retried
            msg retry --dead > /dev/null 2>&1; v redriven
            msg flush --transport stdout: > /dev/null 2>&1 3>/dev/null; v flushed
            msg queue mark --status delivered $(id u5) > /dev/null 2>&1; v marked
            msg compose --to u7 --body x --enqueue > /dev/null; MSG_FAULT=after-sending:1 msg flush --transport stdout: > /dev/null 2>&1; v killed
            msg recover --stale-after 0s --transport stdout: > /dev/null 2>&1 3>/dev/null; v recovered
            msg queue rm $(id u6) > /dev/null 2>&1; v removed
            msg queue purge --status sent,delivered,dead --older-than 0s > /dev/null 2>&1; v purged
            msg queue ls --history --to u44 | grep -c '"event":"edited"'
            """, env: env)
        let steps = r.lines.dropLast()
        let sizes = steps.compactMap { Int($0.split(separator: " ").last ?? "") }
        #expect(sizes.count == 15 && steps.count == 15, "every step verifies: \(r.out) \(r.err)")
        #expect(zip(sizes, sizes.dropFirst()).allSatisfy { $0 < $1 }, "every step wrote leaves: \(r.out)")
        #expect(r.lines.last == "0", "u44 was sent and purged with its edits: \(r.out)")
    }

    /// A JSON store edited by hand: a body rewritten in its line, and a record line
    /// added without its `$ledger` line, are each named; a store written before
    /// msg kept a ledger in it says so until a command that writes begins one.
    @Test func aJSONStoreEditedByHandIsNamed() throws {
        let s = try Sandbox(), env = Self.env("json")
        let r = try s.sh("""
            for i in 1 2 3; do msg compose --to u$i --body "hello $i" --enqueue > /dev/null; done
            msg flush --transport stdout: > /dev/null 3>/dev/null; cp q.json kept
            msg ledger verify > /dev/null; echo "verify $?"
            sed -i 's/hello 2/hellO 2/' q.json; msg ledger verify 2>&1 >/dev/null | grep -c 'error content-changed'
            cp kept q.json; grep -v '^{"[$]' kept | head -1 | sed 's/01/02/' >> q.json
            msg ledger verify 2>&1 >/dev/null | grep -c 'error message-unledgered'
            grep -v '^{"[$]' kept > q.json; msg ledger verify 2>&1; echo "verify $?"
            msg recover > /dev/null; msg ledger verify; echo "verify $?"
            """, env: env)
        let lines = r.lines
        #expect(lines.count == 7, "\(r.out) \(r.err)")
        guard lines.count == 7 else { return }
        #expect(Array(lines[0..<3]) == ["verify 0", "1", "1"], "verify, a body rewritten, a record added: \(r.out)")
        #expect(lines[3].contains("holds 3 messages from before its ledger began; a command that writes, such as msg recover, begins it"), "\(r.out)")
        #expect(lines[4] == "verify 74" && lines[6] == "verify 0", "\(r.out)")
        #expect(lines[5].contains(#""messages":3,"removed":0,"before_ledger":3"#), "\(r.out)")
    }

    /// A store found damaged is set aside and what still reads is carried into a new
    /// one, whose ledger begins again with what it carried: it verifies, it is not
    /// taken for a store changed outside msg.
    @Test func aStoreCarriedOutOfADamagedFileVerifies() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            seq 3000 | awk '{printf "{\\"to\\":\\"u%d\\",\\"body\\":\\"m%d with some text\\"}\\n", $1 % 7, $1}' | msg compose --enqueue > /dev/null
            at=$(sqlite3 queue.sqlite "SELECT (pageno - 1) * 16384 FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 10")
            head -c 16384 /dev/zero | tr '\\0' 'x' | dd of=queue.sqlite bs=1 seek=$at conv=notrunc status=none
            msg queue ls > /dev/null 2>&1; echo "ls $?"
            msg compose --to u9 --body after --enqueue > /dev/null 2>&1; echo "enqueue $?"
            msg compose --to u9 --body again --enqueue > /dev/null 2>&1; echo "again $?"
            msg ledger verify 2>&1; echo "verify $?"
            """)
        #expect(r.lines.prefix(2) == ["ls 74", "enqueue 74"], "\(r.out) \(r.err)")
        #expect(r.lines.last == "verify 0" && r.lines.contains("again 0"), "\(r.out) \(r.err)")
        #expect(r.out.contains(#""removed":0,"before_ledger":"#) && !r.out.contains(#""before_ledger":0,"#), "carried ones came before the new ledger: \(r.out)")
    }

    @Test func keysAreOwnersOnlyAndNeverOverwritten() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg ledger keygen --key k > /dev/null; stat -c %a k; msg ledger keygen --key k; echo "exit $?"
            chmod 644 k; msg compose --to a --body b --enqueue > /dev/null; msg ledger checkpoint --key k; echo "exit $?"
            """)
        #expect(r.lines == ["600", "exit 64", "exit 78"], "\(r.out) \(r.err)")
        #expect(r.err.contains("k exists; msg ledger keygen does not overwrite a key") && r.err.contains("can be read by others"), "\(r.err)")
    }
}
