import Foundation
import MsgEngine
import MsgKit
import Testing

/// The config file's retry policy and `[destination PATTERN]` sections, as
/// `Settings.resolve` reads them: what every command finds.
@Suite struct ConfigPolicyTests {
    func settings(_ text: String, env extra: [String: String] = [:]) throws(MsgError) -> Settings {
        let dir = temporaryDirectory()
        let path = dir + "/config"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        let env = ["MSG_HOME": dir, "HOME": dir, "MSG_CONFIG": path].merging(extra) { $1 }
        return try Settings.resolve(Settings.Overrides(), env: { env[$0] })
    }

    @Test func theDefaultsRideOutAnOutage() throws {
        let s = try settings("")
        #expect(s.retry.maxAttempts == 0 && s.retry.giveUpAfter == .seconds(5 * 86_400) && s.retry.cap == .seconds(3600) && s.retry.base == .seconds(1))
        #expect(s.routes.isEmpty && s.retry.destinations.isEmpty)
    }

    @Test func globalKeysAndSectionsSetThePolicyAndTheRoutes() throws {
        let s = try settings("""
            max_attempts = 25
            backoff_cap = 10m
            give_up_after = 2d
            transport = exec:/bin/true

            [destination *@example.com]
            transport = smtp://127.0.0.1:25?from=me@example.com
            backoff_base = 30s
            [destination hooks.*]
            transport = https://hooks.example.com/in
            [destination *]
            max_attempts = 3
            """)
        #expect(s.retry.maxAttempts == 25 && s.retry.cap == .seconds(600) && s.retry.giveUpAfter == .seconds(2 * 86_400))
        #expect(s.retry.destinations.map(\.pattern) == ["*@example.com", "*"], "the sections that set a policy key")
        #expect(s.retry.resolved(for: "ann@example.com").base == .seconds(30) && s.retry.resolved(for: "ann@example.com").maxAttempts == 25)
        #expect(s.retry.resolved(for: "hooks.orders").maxAttempts == 3)
        #expect(s.routes == [Settings.Route(pattern: "*@example.com", transport: "smtp://127.0.0.1:25?from=me@example.com", origin: "[destination *@example.com] (line 6)"),
                             Settings.Route(pattern: "hooks.*", transport: "https://hooks.example.com/in", origin: "[destination hooks.*] (line 9)")])
        #expect(s.transport == "exec:/bin/true")
    }

    @Test func oneTransportNamedForTheRunLeavesTheRoutesOut() throws {
        let s = try settings("[destination *]\ntransport = exec:/bin/false\n", env: ["MSG_TRANSPORT": "exec:/bin/true"])
        #expect(s.routes.isEmpty && s.transport == "exec:/bin/true")
    }

    @Test func aBadValueNamesItsLineAndKey() throws {
        for (text, said) in [("backoff_cap = soon", "line 1: backoff_cap: invalid duration 'soon'"),
                             ("\n[destination *]\nmax_attempts = -1", "line 3: max_attempts: '-1' is not a count of attempts"),
                             ("[destination *]\nstore = sqlite:x", "line 2: 'store' cannot be set per destination"),
                             ("[destination]", "line 1: expected '[destination PATTERN]'"),
                             ("give_up_after = 0s", "line 1: give_up_after: must be longer than 0")] {
            let error = #expect(throws: MsgError.self) { try settings(text) }
            #expect(error?.code == .config && error?.message.contains(said) == true, "\(text): \(error?.message ?? "")")
        }
    }
}
