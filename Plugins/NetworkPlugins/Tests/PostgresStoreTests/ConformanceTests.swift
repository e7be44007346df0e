import MsgKit
import MsgKitTesting
@testable import PostgresStore
import Testing

@Suite struct ConformanceTests {
    @Test func passesStoreConformance() throws {
        try StoreConformance.run(freshURL: { try TestServer.freshURL() }, open: { url, access in try TestServer.open(url, access: access) })
    }

    @Test func thePostgresqlSchemeIsTheSameStore() throws {
        let url = try TestServer.freshURL()
        let a = try TestServer.open(url)
        _ = try a.add([Fixtures.message(1)])
        let b = try TestServer.open("postgresql" + url.dropFirst("postgres".count))
        #expect(try b.get(Fixtures.message(1).id)?.message == Fixtures.message(1))
    }
}
