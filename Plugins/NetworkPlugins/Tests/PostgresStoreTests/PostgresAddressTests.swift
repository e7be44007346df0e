import MsgKit
@testable import PostgresStore
import Testing

@Suite struct PostgresAddressTests {
    let noEnv: (String) -> String? = { _ in nil }

    func address(_ text: String, env: [String: String] = [:]) throws(MsgError) -> PostgresAddress {
        try PostgresAddress(try PluginURL(text), environment: { env[$0] })
    }

    @Test func readsUserHostPortDatabaseAndParameters() throws {
        let a = try address("postgres://worker@db.example:6432/queue?sslmode=require&schema=outbox&connect_timeout=2")
        #expect(a.user == "worker" && a.host == "db.example" && a.port == 6432 && a.database == "queue")
        #expect(a.tls == .require && a.schema == "outbox" && a.connectTimeout == .seconds(2))
        #expect(!a.isUnixSocket)
        #expect(a.display == "postgres://worker@db.example:6432/queue")
    }

    @Test func defaultsComeFromTheEnvironmentAsInLibpq() throws {
        let a = try address("postgres://", env: ["USER": "ann", "PGPORT": "5433"])
        #expect(a.user == "ann" && a.database == "ann" && a.port == 5433)
        #expect(a.host == "/var/run/postgresql" && a.isUnixSocket && a.tls == .disable)
        #expect(a.socketPath == "/var/run/postgresql/.s.PGSQL.5433")
        let b = try address("postgresql://bob@/", env: ["PGHOST": "10.0.0.7", "PGDATABASE": "q"])
        #expect(b.host == "10.0.0.7" && b.database == "q" && b.tls == .prefer && b.port == 5432)
    }

    @Test func aUnixSocketDirectoryCanBeGivenEitherWay() throws {
        let a = try address("postgres://msg@%2Ftmp%2Fpg:5499/q")
        #expect(a.socketPath == "/tmp/pg/.s.PGSQL.5499")
        let b = try address("postgres://msg@/q?host=/tmp/pg&port=5499")
        #expect(b.socketPath == "/tmp/pg/.s.PGSQL.5499" && b.database == "q")
        #expect(throws: MsgError(.config, "")) { try address("postgres://msg@%2Ftmp/q?sslmode=require") }
    }

    /// As libpq: `sslrootcert=` names the CAs of verify-ca and verify-full, over
    /// `PGSSLROOTCERT`; `system` is the system's roots; verify-ca is a mode.
    @Test func theRootCertificatesComeFromTheURLThenTheEnvironment() throws {
        let env = ["PGSSLROOTCERT": "/etc/env-ca.pem"]
        #expect(try address("postgres://msg@db/q?sslmode=verify-full", env: env).rootCertificates == "/etc/env-ca.pem")
        #expect(try address("postgres://msg@db/q?sslmode=verify-ca&sslrootcert=/etc/url-ca.pem", env: env).rootCertificates == "/etc/url-ca.pem")
        let system = try address("postgres://msg@db/q?sslmode=verify-ca&sslrootcert=system", env: env)
        #expect(system.rootCertificates == nil && system.tls == .verifyCA && system.tls.verifies)
        #expect(try address("postgres://msg@db/q").rootCertificates == nil)
        #expect(throws: MsgError(.config, "")) { try address("postgres://msg@db/q?sslrootcert=") }
    }

    @Test func anIPv6HostKeepsItsBrackets() throws {
        let a = try address("postgres://msg@[::1]:5444/q")
        #expect(a.host == "::1" && a.port == 5444 && a.display == "postgres://msg@[::1]:5444/q")
    }

    @Test func aPasswordInTheURLIsRefusedAndNotRepeated() throws {
        for text in ["postgres://msg:hunter2@127.0.0.1/q", "postgres://msg@127.0.0.1/q?password=hunter2"] {
            do {
                _ = try address(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == .config)
                #expect(error.message.contains("PGPASSWORD"), "\(error.message)")
                #expect(!error.message.contains("hunter2"), "the password is echoed: \(error.message)")
            }
        }
    }

    @Test func badValuesAreConfigErrorsNamingTheParameter() throws {
        let cases = [
            ("postgres://msg@h/q?sslmode=maybe", "sslmode=maybe"),
            ("postgres://msg@h/q?schema=Drop;Table", "schema=Drop;Table"),
            ("postgres://msg@h:99999/q", "99999"),
            ("postgres://msg@h/q?colour=blue", "colour"),
        ]
        for (text, named) in cases {
            do {
                _ = try address(text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == .config && error.message.contains(named), "\(error.message)")
            }
        }
    }
}
