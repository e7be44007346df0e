import MsgKit
import MsgSupport
@testable import PostgresStore
import Synchronization
import Testing

#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// The throw-away server `scripts/test` starts (`scripts/postgres`). Without it these
/// tests fail, naming what to run: a shared-queue store that was never tested
/// against a server must not pass as tested.
enum TestServer {
    /// `postgres://msg@127.0.0.1:PORT/msgtest`, password in PGPASSWORD.
    static func url() throws(MsgError) -> String {
        guard let url = SystemCalls.environment("MSG_TEST_POSTGRES") else {
            Issue.record("MSG_TEST_POSTGRES is not set: run scripts/test, which starts a throw-away PostgreSQL (scripts/postgres)")
            throw MsgError(.config, "no test server")
        }
        return url
    }

    private static let counter = Mutex(0)

    /// A URL for a schema nobody has used: a fresh, empty queue.
    static func freshURL(_ base: String? = nil) throws(MsgError) -> String {
        let n = counter.withLock { (n: inout Int) -> Int in n += 1; return n }
        var resolved = base ?? ""
        if base == nil { resolved = try url() }
        return "\(resolved)?schema=t\(getpid())_\(n)_\(UInt32.random(in: 0...UInt32.max))"
    }

    static func open(_ url: String, access: StoreAccess = .write) throws(MsgError) -> PostgresStore {
        try PostgresStore(url: try PluginURL(url), access: access)
    }
}
