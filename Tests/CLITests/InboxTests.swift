import Foundation
import MsgKit
import Testing

/// The transactional outbox on SQLite (msg-inbox(1)) through the real binary: an
/// application's database filled by the sqlite3 tool, as an application would, in
/// its own transactions; `msg inbox drain` and `flush --inbox` take each committed
/// row into the queue exactly once.
@Suite(.timeLimit(.minutes(3))) struct InboxTests {
    /// A sandbox with an application database `app.db` (its own table, WAL as many
    /// applications run) and the inbox installed in it.
    func application() throws -> Sandbox {
        let s = try Sandbox()
        let r = try s.sh("sqlite3 app.db 'PRAGMA journal_mode = WAL; CREATE TABLE orders (name TEXT PRIMARY KEY)' > /dev/null && msg inbox install sqlite:app.db")
        #expect(r.status == 0 && r.err == "msg: created msg_inbox in app.db\n", "\(r.err)")
        return s
    }

    /// A file of SQL inserting orders, each with its message, one transaction each
    /// (`sqlite3 -cmd '.timeout 30000' app.db < FILE`).
    func orders(_ s: Sandbox, _ range: ClosedRange<Int>, to: String = "warehouse") throws -> String {
        try s.file("orders-\(range.lowerBound)-\(range.upperBound).sql", range.map {
            "BEGIN; INSERT INTO orders VALUES ('o\($0)'); INSERT INTO msg_inbox (draft) VALUES ('{\"to\":\"\(to)\",\"body\":\"o\($0)\"}'); COMMIT;\n"
        }.joined())
    }

    /// Committed rows are delivered once; a rolled back one, and one of an
    /// application that died in its transaction, never. The counts and the ledger
    /// hold for what came in this way.
    @Test func aCommittedRowIsDeliveredOnceAndARolledBackOneNever() throws {
        let s = try application()
        let gone = try s.file("gone.sql", """
            BEGIN; INSERT INTO orders VALUES ('gone'); INSERT INTO msg_inbox (draft) VALUES ('{"to":"warehouse","body":"gone"}'); ROLLBACK;
            """)
        let r = try s.sh("""
            sqlite3 -cmd '.timeout 30000' app.db < \(try orders(s, 1...3)); sqlite3 -cmd '.timeout 30000' app.db < \(gone)
            python3 -c "import json, os, sqlite3
            db = sqlite3.connect('app.db', isolation_level=None)
            db.execute('BEGIN')
            db.execute('INSERT INTO msg_inbox (draft) VALUES (?)', (json.dumps({'to': 'warehouse', 'body': 'crashed'}),))
            os._exit(9)"; echo "application died: $?"
            msg inbox drain sqlite:app.db | wc -l
            sqlite3 app.db 'SELECT count(*) FROM msg_inbox'
            msg inbox drain sqlite:app.db | wc -l
            msg flush | wc -l
            msg flush --inbox sqlite:app.db | wc -l
            msg queue stats --by destination | grep -c warehouse; msg ledger verify > /dev/null; echo "verified: $?"
            """)
        #expect(r.lines == ["application died: 9", "3", "0", "0", "3", "0", "1", "verified: 0"], "\(r.out) \(r.err)")
        #expect(try s.droppedBodies() == ["o1", "o2", "o3"])
    }

    /// A row is taken again when msg dies between storing its message and removing
    /// it (MSG_FAULT=after-intake, here in the second take): the store refuses the
    /// ids it has, and the rows go.
    @Test func aKillBetweenStoringAndRemovingQueuesNothingTwice() throws {
        let s = try application()
        let batch = 16_384, n = 20_000
        let r = try s.sh("""
            sqlite3 -cmd '.timeout 30000' app.db < \(try orders(s, 1...n))
            MSG_FAULT=after-intake:\(batch + 1) msg inbox drain sqlite:app.db > /dev/null 2>&1; echo "killed: $?"
            sqlite3 app.db 'SELECT count(*) FROM msg_inbox'; msg queue count
            msg inbox drain sqlite:app.db | grep -c '"status":"queued"'; msg queue count
            sqlite3 app.db 'SELECT count(*) FROM msg_inbox'
            msg flush > /dev/null; msg queue count --status sent
            """)
        // The first take was stored and removed; the second stored, then the kill.
        #expect(r.lines == ["killed: 137", "\(n - batch)", "\(n)", "\(n - batch)", "\(n)", "0", "\(n)"], "\(r.out) \(r.err)")
        let bodies = try s.droppedBodies()
        #expect(bodies.count == n && Set(bodies).count == n)
    }

    /// Two drainers at once while the application writes (with a busy timeout, as an
    /// application has: a drainer holds the write lock for a batch): each row queued once.
    @Test func twoDrainersAtOnceTakeEachRowOnce() throws {
        let s = try application()
        let r = try s.sh("""
            sqlite3 -cmd '.timeout 30000' app.db < \(try orders(s, 1...3000)) &
            for d in 1 2; do (for i in $(seq 40); do msg inbox drain sqlite:app.db; done) > out$d 2> err$d & done
            wait
            msg inbox drain sqlite:app.db > out3
            cat out1 out2 out3 | grep -c '"status":"queued"'
            cat out1 out2 out3 | cut -c8-43 | sort | uniq -d | wc -l
            msg queue count; sqlite3 app.db 'SELECT count(*) FROM msg_inbox'
            cat err1 err2
            """)
        #expect(r.lines == ["3000", "0", "3000", "0"], "\(r.out) \(r.err)")
    }

    /// Rows that are not drafts are stored dead with the reason and their text, and
    /// the rows behind them go on: the inbox is never blocked.
    @Test func aRowThatIsNotADraftIsDeadAndTheRestGo() throws {
        let s = try application()
        let rows = try s.file("rows.sql", """
            INSERT INTO msg_inbox (draft) VALUES ('{"to":"a","body":"first"}');
            INSERT INTO msg_inbox (draft) VALUES ('not json');
            INSERT INTO msg_inbox (draft) VALUES ('{"to":"b"}');
            INSERT INTO msg_inbox (draft) VALUES (x'ff00');
            INSERT INTO msg_inbox (draft) VALUES ('{"to":"a","body":"last"}');
            """)
        let r = try s.sh("""
            sqlite3 -cmd '.timeout 30000' app.db < \(rows)
            msg inbox drain sqlite:app.db > /dev/null 2> err; echo "exit $?"; cat err
            msg queue ls --status dead | jq -r '[.to, .last_error.message, (.inbox_draft // .inbox_draft_hex)] | join(" | ")'
            msg flush | jq -r .body
            """)
        #expect(r.lines == [
            "exit 65",
            "msg: took 5 rows: 2 queued, 0 queued already, 3 dead (not valid drafts)",
            "? | inbox row is not a valid draft: invalid JSON: invalid literal at column 1; its text is kept whole in inbox_draft | not json",
            "b | inbox row is not a valid draft: missing field \"body\"; its text is kept whole in inbox_draft | {\"to\":\"b\"}",
            "? | inbox row is not a valid draft: invalid UTF-8 at column 1; its text is kept whole in inbox_draft | ff00",
            "first", "last",
        ], "\(r.out) \(r.err)")
    }

    /// A draft over msg's limit is refused at the application's INSERT, by the
    /// table's own check, inside its transaction. A row msg refuses when it takes
    /// it keeps its whole text: in its dead record when that fits, else in a file
    /// the record names (here a 10 MB row of an inbox installed before the check,
    /// which `inbox install` then adds).
    @Test func aDraftOverTheLimitIsRefusedAtInsertAndARefusedRowKeepsItsWholeText() throws {
        let s = try application()
        let r = try s.sh("""
            python3 -c "import json, sqlite3
            db = sqlite3.connect('app.db')
            try:
                with db:
                    db.execute('INSERT INTO orders VALUES (?)', ('big',))
                    db.execute('INSERT INTO msg_inbox (draft) VALUES (?)', (json.dumps({'to': 'a', 'body': 'x' * (10 << 20)}),))
                print('committed')
            except sqlite3.Error as e:
                print(e)
            print(db.execute('SELECT count(*) FROM orders').fetchone()[0])
            db.execute('DROP TRIGGER msg_inbox_limit')
            with db:
                db.execute('INSERT INTO msg_inbox (draft) VALUES (?)', (json.dumps({'to': 'a', 'body': 'y' * (10 << 20)}),))
                db.execute('INSERT INTO msg_inbox (draft) VALUES (?)', (json.dumps({'to': 'b', 'body': 7, 'pad': 'z' * 900000}),))"
            msg inbox install sqlite:app.db 2>&1
            msg inbox drain sqlite:app.db > /dev/null 2>&1; echo "drain $?"
            msg queue ls --status dead | jq -r '[.to, (.inbox_draft | length), .inbox_draft_file // ""] | join(" ")'
            """)
        #expect(Array(r.lines.prefix(4)) == [
            "msg_inbox: the draft is over msg's limit of 1048576 bytes (1 MiB); nothing was inserted", "0",
            "msg: msg_inbox is there already in app.db; added its check of a draft's size", "drain 65",
        ], "\(r.out) \(r.err)")
        let dead = r.lines.dropFirst(4).map { $0.split(separator: " ").map(String.init) }
        #expect(dead.count == 2 && dead.map(\.first) == ["a", "b"], "\(r.lines)")
        #expect(dead.last?.dropFirst().first == "900033", "the whole text in the record: \(r.lines)")
        let file = try #require(dead.first?.last)
        let kept = try Data(contentsOf: URL(fileURLWithPath: file))
        let draft = try JSONSerialization.jsonObject(with: kept) as? [String: String]
        #expect(draft?["body"] == String(repeating: "y", count: 10 << 20), "the whole 10 MB draft in \(file)")
        #expect(file.hasPrefix("\(s.home)/refused/"), "\(file)")
    }

    /// Rows inserted in one transaction keep their order per destination, though
    /// they share a millisecond: a row's id follows its insertion.
    @Test func rowsOfOneTransactionKeepTheirOrder() throws {
        let s = try application()
        let inserts = try s.file("one.sql", "BEGIN;\n" + (1...500).map { "INSERT INTO msg_inbox (draft) VALUES ('{\"to\":\"d\($0 % 3)\",\"body\":\"\($0)\"}');\n" }.joined() + "COMMIT;\n")
        let r = try s.sh("sqlite3 -cmd '.timeout 30000' app.db < \(inserts) && msg inbox drain sqlite:app.db > /dev/null && msg queue ls | jq -r .body")
        #expect(r.lines == (1...500).map(String.init), "\(r.err)")
    }

    /// `flush --watch --inbox` delivers what the application commits while it runs.
    @Test func theWatchTakesInWhatIsCommittedWhileItRuns() throws {
        let s = try application()
        let (watch, _, _) = try s.start(["flush", "--watch", "--inbox", "sqlite:\(s.home)/app.db"])
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        for batch in [1...10, 11...20] {
            let r = try s.sh("sqlite3 -cmd '.timeout 30000' app.db < \(try orders(s, batch))")
            #expect(r.status == 0, "\(r.err)")
            #expect(eventually(within: 10) { (try? s.droppedBodies().count) == batch.upperBound }, "delivered: \((try? s.droppedBodies().count) ?? -1)")
        }
        kill(watch.processIdentifier, SIGTERM)
        try watch.wait()
        #expect(watch.terminationStatus == 0)
        #expect(try s.droppedBodies() == (1...20).map { "o\($0)" }.sorted())
    }

    @Test func whatIsNotAnApplicationsDatabaseIsRefused() throws {
        let s = try Sandbox()
        let r = try s.sh("""
            msg inbox install sqlite:missing.db; echo "exit $?"
            echo text > plain.txt; msg inbox install sqlite:plain.txt; echo "exit $?"
            msg queue add < /dev/null; msg inbox install sqlite:queue.sqlite; echo "exit $?"
            sqlite3 other.db 'CREATE TABLE t (x)'; msg inbox drain sqlite:other.db; echo "exit $?"
            msg inbox drain 'sqlite:other.db?mode=rw'; echo "exit $?"
            ls
            """)
        #expect(r.lines == ["exit 78", "exit 78", "exit 78", "exit 78", "exit 78", "other.db", "plain.txt", "queue.sqlite"], "\(r.out)")
        #expect(r.err.contains("there is no database at missing.db"))
        #expect(r.err.contains("plain.txt is not a SQLite database"))
        #expect(r.err.contains("queue.sqlite is a msg store, not an application's database"))
        #expect(r.err.contains("there is no msg_inbox table in other.db: msg inbox install sqlite:other.db creates it"))
        #expect(r.err.contains("unknown parameter 'mode'"))
    }
}
