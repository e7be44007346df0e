import MsgKit
import PostgresNIO
import Synchronization

/// The inbox in msg's schema of a PostgreSQL database (``PostgresInboxSchema``),
/// taken into the queue by the host (``DraftInbox``): `postgres://…` names it as it
/// names the store, and `flush` takes it in without being asked.
///
/// It has a connection of its own: a take holds its rows' locks (`FOR UPDATE SKIP
/// LOCKED`, so two drainers take different rows) while the host stores their
/// messages through the store's connection, then deletes them and commits. Once
/// asked whether rows came (a watch), it listens on the schema's channel, so
/// ``changed()`` only reads a counter the notifications move.
final class PostgresInbox: DraftInbox {
    private let db: BlockingConnection
    private let schema: String
    private let heard = Heard()
    private var seen: UInt64?
    private var listening = false

    /// A count of notifications, moved on an event loop thread.
    private final class Heard: Sendable {
        let count = Atomic<UInt64>(0)
    }

    /// Connects; brings the schema up to date (the inbox comes with it).
    /// - Throws: as ``PostgresStore/init(url:access:)``.
    init(url: PluginURL) throws(MsgError) {
        let address = try PostgresAddress(url)
        db = try BlockingConnection(address, password: try PassFile.password(for: address))
        schema = address.schema
        try PostgresSchema.migrate(db)
    }

    func install() throws(MsgError) -> String {
        try PostgresSchema.migrate(db)
        return "\(schema).inbox, \(schema).enqueue(jsonb) and \(schema).enqueue_all(jsonb) are there in \(db.address.display) (schema version \(PostgresSchema.current))"
    }

    func take(limit: Int, _ body: ([InboxRow]) throws(MsgError) -> Void) throws(MsgError) -> Int {
        try db.transaction("taking rows from \(schema).inbox") { () throws(MsgError) -> Int in
            let found = try db.query("""
                SELECT seq, id::text, draft::text, inserted_at FROM \(unescaped: schema).inbox
                ORDER BY seq LIMIT \(Int64(limit)) FOR UPDATE SKIP LOCKED
                """, "reading \(schema).inbox")
            var rows: [InboxRow] = []
            var seqs: [Int64] = []
            for row in found {
                let (seq, id, draft, at): (Int64, String, String, Int64)
                do {
                    (seq, id, draft, at) = try row.decode((Int64, String, String, Int64).self)
                } catch {
                    throw PostgresStore.corrupt("a row of \(schema).inbox", error)
                }
                seqs.append(seq)
                rows.append(InboxRow(id: id, draft: Array(draft.utf8), insertedAt: Timestamp(milliseconds: at)))
            }
            guard !rows.isEmpty else { return 0 }
            try body(rows)
            try db.query("DELETE FROM \(unescaped: schema).inbox WHERE seq = ANY(\(seqs))", "removing the rows taken from \(schema).inbox")
            return rows.count
        }
    }

    /// The first call starts listening (a one-shot take never asks) and answers
    /// true: rows committed before the LISTEN took hold are taken by the drain it causes.
    func changed() throws(MsgError) -> Bool {
        if !listening {
            // Once: a connection lost meanwhile listens again when it comes back.
            listening = true
            let heard = heard
            try db.listen(PostgresInboxSchema.channel(schema)) { heard.count.add(1, ordering: .relaxed) }
        }
        let now = heard.count.load(ordering: .relaxed)
        defer { seen = now }
        return seen != now
    }
}
