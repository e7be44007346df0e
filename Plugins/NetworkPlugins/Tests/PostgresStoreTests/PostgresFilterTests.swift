import MsgKit
import MsgKitTesting
@testable import PostgresStore
import PostgresNIO
import Testing

/// The pages of a listing each start after the last row of the one before: one
/// term for where, however many pages came before (a term a page made the
/// thousandth page of a million-record listing carry a thousand).
@Suite struct PostgresFilterTests {
    @Test func eachPageHasOneStartingPoint() {
        var filter = PostgresFilter(Query(statuses: [.queued]))
        filter.after(createdAt: 1, id: "a")
        filter.after(createdAt: 2, id: "b")
        filter.add("recipient <> $", "x")
        let sql = filter.select("id", from: "msg.messages", limit: 10).sql
        #expect(sql.components(separatedBy: "(created_at, id) >").count == 2, "\(sql)")
        #expect(sql == "SELECT id FROM msg.messages WHERE status = $1 AND recipient <> $2 AND (created_at, id) > ($3, $4) ORDER BY created_at, id LIMIT $5")
        #expect(filter.select("id", from: "msg.messages", limit: 10).binds.count == 5)
    }

    /// Through a live server: 2,500 records in three pages, all of them in FIFO order.
    @Test func aListingOfSeveralPagesGivesEveryRecordOnceInOrder() throws {
        let store = try TestServer.open(try TestServer.freshURL())
        let records = (0..<2_500).map { Fixtures.message($0, to: "p@x", createdOffset: Int64($0 / 3)) }
        _ = try store.add(records.reversed())
        var ids: [String] = []
        try store.list(Query()) { (r) throws(MsgError) -> Bool in ids.append(r.message.id); return true }
        let fifo = records.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.map(\.id)
        #expect(ids == fifo)
    }
}
