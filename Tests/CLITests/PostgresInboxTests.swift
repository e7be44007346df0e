import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// The transactional outbox on PostgreSQL (msg-inbox(1)) against the throw-away
/// server: an application's role, with no right but calling `enqueue()`, writes in
/// its own transactions through psql and psycopg; `flush --watch` delivers what
/// committed, once, woken by NOTIFY. In ``PostgresTests``, whose tests run one at a
/// time: one of them restarts the server.
extension PostgresTests {
    /// A fresh queue in its own schema, with the application's role allowed to enqueue.
    struct InboxQueue {
        let env: [String: String]
        let schema: String
        /// psql as msg (the schema's owner) and as the application's role.
        let owner: String, app: String
        /// The application's connection string, for psycopg.
        let appDSN: String

        init(_ s: Sandbox) throws {
            let server = try Server()
            var env = server.queue()
            schema = String(env["MSG_STORE"]!.split(separator: "=").last!)
            env["MSG_TRANSPORT"] = "file:\(s.home)/outbox"
            self.env = env
            let dsn = server.url.replacingOccurrences(of: "postgres://", with: "postgresql://")
            let role = ProcessInfo.processInfo.environment["MSG_TEST_POSTGRES_APP_ROLE"] ?? "msg_app"
            appDSN = dsn.replacingOccurrences(of: "://msg@", with: "://\(role)@")
            owner = "psql '\(dsn)' -v ON_ERROR_STOP=1 -qAt"
            app = "psql '\(appDSN)' -v ON_ERROR_STOP=1 -qAt"
            let r = try s.sh("""
                msg inbox install "$MSG_STORE" 2>&1 && \(owner) -c "GRANT USAGE ON SCHEMA \(schema) TO \(role);
                    GRANT EXECUTE ON FUNCTION \(schema).enqueue(jsonb), \(schema).enqueue_all(jsonb) TO \(role)"
                """, env: env)
            #expect(r.status == 0 && r.out.contains("(schema version 11)"), "\(r.out) \(r.err)")
        }
    }

    @Test func aRollbackLeavesNothingAndACommitIsDeliveredOnceWithinASecond() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let (watch, out) = try startMsg(s, q, ["flush", "--watch"])
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        let r = try s.sh("""
            \(q.app) -c "BEGIN" -c "SELECT \(q.schema).enqueue('{\\"to\\":\\"shop\\",\\"body\\":\\"rolled back\\"}')" -c "ROLLBACK" > /dev/null
            python3 -c "import json, os, psycopg
            db = psycopg.connect('\(q.appDSN)')
            db.execute('SELECT \(q.schema).enqueue(%s::jsonb)', (json.dumps({'to': 'shop', 'body': 'crashed'}),))
            os._exit(9)"; echo "application died: $?"
            \(q.app) -c "BEGIN" -c "SELECT \(q.schema).enqueue('{\\"to\\":\\"shop\\",\\"body\\":\\"committed\\"}')" -c "COMMIT" > /dev/null
            """, env: q.env)
        #expect(r.lines == ["application died: 9"], "\(r.err)")
        #expect(eventually(within: 10) { (try? s.droppedBodies()) == ["committed"] })
        kill(watch.processIdentifier, SIGTERM)
        try watch.wait()
        let sent = try records(String(contentsOfFile: out, encoding: .utf8))
        #expect(sent.map(\.body) == ["committed"] && sent.allSatisfy { $0.status == .sent })
        // From the commit's enqueue() to the record of delivery.
        for m in sent { #expect(m.updatedAt.milliseconds - m.createdAt.milliseconds < 1000, "\(m.createdAt) → \(m.updatedAt)") }
        let left = try s.sh("""
            \(q.owner) -c 'SELECT count(*) FROM \(q.schema).inbox'; msg queue count
            msg ledger verify > /dev/null; echo "verified: $?"
            """, env: q.env)
        #expect(left.lines == ["0", "1", "verified: 0"], "\(left.err)")
    }

    /// An id given twice (the idempotency key) is one message, in one call or two;
    /// a draft msg compose would refuse is refused with SQLSTATE MS001, and the
    /// transaction with it.
    @Test func anIdGivenTwiceIsOneMessageAndABadDraftIsRefused() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let id = "01890a5d-ac96-774b-bcce-b302099a8057"
        let r = try s.sh("""
            \(q.app) -c "SELECT \(q.schema).enqueue('{\\"id\\":\\"\(id)\\",\\"to\\":\\"a\\",\\"body\\":\\"x\\"}')"
            \(q.app) -c "SELECT * FROM \(q.schema).enqueue_all('[{\\"id\\":\\"\(id)\\",\\"to\\":\\"a\\",\\"body\\":\\"x\\"},{\\"to\\":\\"a\\",\\"body\\":\\"y\\"}]')" | wc -l
            msg flush | jq -r .body
            \(q.app) -c "SELECT \(q.schema).enqueue('{\\"id\\":\\"\(id)\\",\\"to\\":\\"a\\",\\"body\\":\\"x\\"}')" > /dev/null; msg flush | wc -l
            \(q.app) -c "\\\\set VERBOSITY verbose" -c "BEGIN" -c "SELECT \(q.schema).enqueue('{\\"to\\":\\"a\\",\\"body\\":\\"kept?\\"}')" -c "SELECT \(q.schema).enqueue('{\\"to\\":\\"a\\",\\"headers\\":{\\"X\\":1},\\"body\\":\\"\\"}')" -c "COMMIT" 2>&1 | grep ERROR
            \(q.app) -c "SELECT * FROM \(q.schema).enqueue_all('[{\\"to\\":\\"a\\",\\"body\\":\\"z\\"},{\\"body\\":\\"no one\\"}]')" 2>&1 | grep ERROR
            msg flush | wc -l; msg queue count
            """, env: q.env)
        #expect(r.lines == [
            id, "2", "x", "y", "0",
            "ERROR:  MS001: msg.enqueue: field \"headers.X\" must be a string",
            "ERROR:  msg.enqueue_all: draft 2: missing field \"to\"",
            "0", "2",
        ], "\(r.out) \(r.err)")
    }

    /// What msg would refuse after the application's commit is refused inside its
    /// transaction: a 10 MB draft (naming its size and the limit), and a header
    /// named as a field; nothing of that transaction is kept, and nothing is dead.
    @Test func aDraftOverTheLimitOrAHeaderAsAFieldIsRefusedInTheTransaction() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let r = try s.sh("""
            python3 -c "import json, psycopg
            db = psycopg.connect('\(q.appDSN)')
            for draft in ({'to': 'a', 'body': 'x' * (10 << 20)}, {'to': 'a', 'body': 'b', 'subject': 'Hello'}):
                try:
                    with db.transaction():
                        db.execute('SELECT \(q.schema).enqueue(%s::jsonb)', (json.dumps({'to': 'a', 'body': 'first'}),))
                        db.execute('SELECT \(q.schema).enqueue(%s::jsonb)', (json.dumps(draft),))
                    print('committed')
                except psycopg.Error as e:
                    print(e.sqlstate, str(e).splitlines()[0])"
            msg flush | wc -l; msg queue count --status dead
            """, env: q.env)
        #expect(r.lines.count == 4, "\(r.out) \(r.err)")
        #expect(r.lines.first?.hasPrefix("MS001 msg.enqueue: the draft is 10485") == true, "\(r.lines)")
        #expect(r.lines.first?.hasSuffix("bytes, over msg's limit of 1048576 bytes (1 MiB)") == true, "\(r.lines)")
        #expect(r.lines.dropFirst().first == "MS001 msg.enqueue: unknown field \"subject\" (did you mean \"headers.Subject\"?)", "\(r.lines)")
        #expect(Array(r.lines.suffix(2)) == ["0", "0"], "\(r.out) \(r.err)")
    }

    /// 1,000 application transactions from 8 connections at once, a third rolled
    /// back, while two watches take the inbox in and send: exactly the committed
    /// ones delivered, each once (by the watches' own records: the drop keeps one
    /// file per id whatever it is given).
    @Test func aThousandTransactionsFromEightConnectionsDeliverExactlyTheCommitted() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let (watch, out) = try startMsg(s, q, ["flush", "--watch"], name: "one")
        let (other, otherOut) = try startMsg(s, q, ["flush", "--watch"], name: "two")
        defer { for w in [watch, other] where w.isRunning { kill(w.processIdentifier, SIGKILL) } }
        let r = try s.sh("""
            python3 - '\(q.appDSN)' \(q.schema) <<'EOF'
            import json, sys, threading, psycopg
            dsn, schema = sys.argv[1], sys.argv[2]
            def worker(w):
                with psycopg.connect(dsn) as db:
                    for i in range(w, 1000, 8):
                        with db.transaction(force_rollback=(i % 3 == 0)):
                            db.execute(f"SELECT {schema}.enqueue(%s::jsonb)", (json.dumps({"to": f"t{i % 5}", "body": str(i)}),))
            threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
            for t in threads: t.start()
            for t in threads: t.join()
            EOF
            """, env: q.env)
        #expect(r.status == 0, "\(r.err)")
        let committed = (0..<1000).filter { $0 % 3 != 0 }.map(String.init).sorted()
        #expect(eventually(within: 30) { (try? s.droppedBodies().count) == committed.count })
        for w in [watch, other] {
            kill(w.processIdentifier, SIGTERM)
            try w.wait()
            #expect(w.terminationStatus == 0)
        }
        #expect(try s.droppedBodies() == committed)
        let sent = try records(String(contentsOfFile: out, encoding: .utf8) + String(contentsOfFile: otherOut, encoding: .utf8))
        #expect(sent.map(\.body).sorted() == committed, "each sent once, by one of the two")
        let counts = try s.sh("msg queue count; msg queue count --status sent", env: q.env)
        #expect(counts.lines == ["\(committed.count)", "\(committed.count)"], "\(counts.err)")
    }

    /// A watch killed between storing a batch and removing its rows: the rows are
    /// taken again by the next, and nothing is queued or delivered twice.
    @Test func aWatchKilledMidDrainQueuesNothingTwice() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let r = try s.sh("""
            \(q.app) -c "SELECT count(*) FROM \(q.schema).enqueue_all((SELECT jsonb_agg(jsonb_build_object('to', 'd' || (i % 7), 'body', i::text)) FROM generate_series(1, 6000) i))"
            MSG_FAULT=after-intake:1 msg flush --watch > /dev/null 2>&1; echo "killed: $?"
            \(q.owner) -c 'SELECT count(*) FROM \(q.schema).inbox'; msg queue count
            msg flush | wc -l; msg queue count --status sent
            \(q.owner) -c 'SELECT count(*) FROM \(q.schema).inbox'
            """, env: q.env)
        #expect(r.lines == ["6000", "killed: 137", "6000", "6000", "6000", "6000", "0"], "\(r.out) \(r.err)")
        let bodies = try s.droppedBodies()
        #expect(bodies.count == 6000 && Set(bodies).count == 6000)
    }

    /// The application's role calls enqueue() and nothing else of msg's.
    @Test func theApplicationsRoleCanOnlyEnqueue() throws {
        let s = try Sandbox()
        let q = try InboxQueue(s)
        let r = try s.sh("""
            \(q.app) -c "SELECT \(q.schema).enqueue('{\\"to\\":\\"a\\",\\"body\\":\\"x\\"}')" | wc -l
            for sql in "SELECT count(*) FROM \(q.schema).messages" "SELECT count(*) FROM \(q.schema).inbox" \\
                "INSERT INTO \(q.schema).inbox VALUES (0, gen_random_uuid(), '{}', 0)" "DELETE FROM \(q.schema).inbox" \\
                "UPDATE \(q.schema).messages SET status = 'sent'" "SELECT \(q.schema).enqueue_checked('{}')" \\
                "SELECT nextval('\(q.schema).inbox_seq')" "SELECT count(*) FROM \(q.schema).commits"; do
                \(q.app) -c "$sql" 2>&1 | grep -o 'permission denied for [a-z]*'
            done
            \(q.owner) -c 'SELECT count(*) FROM \(q.schema).inbox'
            """, env: q.env)
        #expect(r.lines == ["1"] + ["table", "table", "table", "table", "table", "function", "sequence", "table"].map { "permission denied for \($0)" } + ["1"],
                "\(r.out) \(r.err)")
    }

    /// Starts msg with the queue's environment (and MSG_HOME), standard input closed,
    /// its output and errors into files (a pipe nobody reads would stop it).
    /// - Returns: the process, and the path of its output.
    func startMsg(_ s: Sandbox, _ q: InboxQueue, _ arguments: [String], name: String = "watch") throws -> (TestProcess, String) {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: buildDirectory + "/msg")
        p.arguments = arguments
        p.environment = q.env.merging(["MSG_HOME": s.home, "XDG_CONFIG_HOME": s.home + "/config"]) { a, _ in a }
        p.standardInput = FileHandle.nullDevice
        let out = try s.file("\(name).out", ""), err = try s.file("\(name).err", "")
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try p.run()
        return (p, out)
    }
}
