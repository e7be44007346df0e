import MsgKit
@testable import PostgresStore
import Testing

@Suite struct PassFileTests {
    @Test func theFirstMatchingLineWinsAndStarsMatchAnything() {
        let text = """
            # comment
            db.example:5432:queue:worker:first
            *:*:queue:worker:second
            *:*:*:*:third
            """
        #expect(PassFile.lookup(text, host: "db.example", port: 5432, database: "queue", user: "worker") == "first")
        #expect(PassFile.lookup(text, host: "other", port: 5432, database: "queue", user: "worker") == "second")
        #expect(PassFile.lookup(text, host: "other", port: 1, database: "x", user: "y") == "third")
        #expect(PassFile.lookup("h:1:d:u:p", host: "h", port: 2, database: "d", user: "u") == nil)
    }

    @Test func backslashEscapesColonsAndBackslashes() {
        #expect(PassFile.lookup(#"h:1:d:u:a\:b\\c:d"#, host: "h", port: 1, database: "d", user: "u") == #"a:b\c:d"#)
        #expect(PassFile.lookup(#"h\:x:1:d:u:p"#, host: "h:x", port: 1, database: "d", user: "u") == "p")
    }

    @Test func pgpasswordComesFirst() throws {
        let a = try PostgresAddress(try PluginURL("postgres://u@h/d"), environment: { _ in nil })
        #expect(try PassFile.password(for: a, environment: { $0 == "PGPASSWORD" ? "env" : nil }) == "env")
        #expect(try PassFile.password(for: a, environment: { $0 == "PGPASSFILE" ? "/nonexistent/pgpass" : nil }) == nil)
    }
}
