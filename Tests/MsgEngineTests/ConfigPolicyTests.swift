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

    @Test func sectionsSetDeadlineWorkersThrottleAndBreaker() throws {
        let s = try settings("""
            deadline = 5s
            concurrency = 2
            breaker = 7
            [destination *@slow.example]
            deadline = 1s
            [destination hooks.*]
            concurrency = 4
            rate = 10/s
            burst = 3
            breaker = 2
            breaker_cooldown = 1m
            """)
        #expect(s.configured.deadline == .seconds(5) && s.configured.concurrency == 2 && s.configured.breaker == 7)
        #expect(s.sections.map(\.pattern) == ["*@slow.example", "hooks.*"] && s.sections.allSatisfy(\.values.hasOwnWorkers))
        let hooks = s.sections[1].values
        #expect(hooks.rate == Rate(count: 10, periodMilliseconds: 1000, burst: 1) && hooks.burst == 3 && hooks.breaker == 2
                && hooks.breakerCooldown == .seconds(60) && hooks.lines["rate"] == 8)
        #expect(s.problems.isEmpty)
    }

    @Test func everyProblemIsKeptWithItsLineAndTheFirstErrorRefuses() throws {
        let text = """
            max_attemps = 5
            deadline = 0s
            deadline = 2s
            [destination *]
            store = sqlite:x
            concurrency = 999
            burst = 2
            [nonsense]
            rate = 1/s
            """
        let error = #expect(throws: MsgError.self) { try settings(text) }
        #expect(error?.message.contains("line 1: unknown key 'max_attemps' (did you mean 'max_attempts'?)") == true, "\(error?.message ?? "")")
        let dir = temporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/config", contents: Data(text.utf8))
        let env = ["MSG_HOME": dir, "HOME": dir, "MSG_CONFIG": dir + "/config"]
        let read = try Settings.read(Settings.Overrides(), env: { env[$0] })
        let said = read.problems.map { "\($0.line) \($0.isError ? "error" : "warning") \($0.text)" }
        // Line 2's value is never read: line 3 wins, as its warning says.
        #expect(said.count == 6, "\(said)")
        for (i, start) in ["1 error unknown key 'max_attemps'",
                           "3 warning 'deadline' is set again: this line wins over line 2", "5 error 'store' cannot be set per destination",
                           "6 error concurrency: '999' is not a count of destinations at once, from 1 to 256",
                           "7 warning burst: applies to a rate, and none is set here", "8 error expected '[destination PATTERN]'"].enumerated() {
            #expect(said[i].hasPrefix(start), "\(said[i]) is not \(start)")
        }
        // What follows a line that is not a section belongs to no section.
        #expect(read.sections.map(\.pattern) == ["*"] && read.sections[0].values.rate == nil)
    }

    @Test func aRunsRulesResolvePerDestination() {
        var rules = DeliveryRules()
        rules.breakerThreshold = 5
        var hooks = DeliveryRules.Destination(pattern: "hooks.*")
        hooks.rate = Rate(count: 2, periodMilliseconds: 1000, burst: 1)
        hooks.breakerThreshold = 1
        var all = DeliveryRules.Destination(pattern: "*")
        all.coolDown = .seconds(90)
        rules.destinations = [hooks, all]
        #expect(rules.hasRate)
        #expect(rules.resolved(for: "hooks.a").rate?.count == 2 && rules.resolved(for: "hooks.a").breakerThreshold == 1)
        #expect(rules.resolved(for: "hooks.a").coolDown == .seconds(30), "the first section that matches sets the rules, the rest are the run's")
        #expect(rules.resolved(for: "mail").rate == nil && rules.resolved(for: "mail").coolDown == .seconds(90) && rules.resolved(for: "mail").breakerThreshold == 5)
    }

    @Test func aSectionShadowedForEveryKeyItSetsIsNamed() {
        func section(_ pattern: String, _ line: Int, transport: String? = nil, attempts: Int? = nil) -> DestinationSection {
            var v = ConfigValues()
            v.transport = transport
            v.maxAttempts = attempts
            return DestinationSection(pattern: pattern, line: line, values: v)
        }
        let found = ConfigCheck.shadowed([
            section("*@example.com", 1, transport: "file:/a"),
            section("ann@example.com", 3, transport: "file:/b"),            // shadowed: transport only
            section("bob@example.com", 5, transport: "file:/c", attempts: 2), // its policy applies
            section("*", 7, attempts: 1),
            section("*.org", 9, attempts: 4),                               // shadowed by *
            section("x", 11),                                               // sets nothing
        ], path: "cfg")
        #expect(found.map(\.line) == [3, 9, 11], "\(found)")
        #expect(found.allSatisfy { !$0.isError })
        #expect(found[0].text.contains("[destination *@example.com] (line 1) comes first"))
    }

    @Test func lanesTakeTheirSectionsMessagesAndTheRestShareTheFirst() {
        let first = KeyScheduler(workers: 1), own = KeyScheduler(workers: 1)
        let lanes = LaneSchedulers([first, own], lane: { $0.key.hasPrefix("slow") ? 1 : 0 })
        let items = KeySchedulerTests.claimed(["slow.a", "fast.b", "slow.c", "fast.d"])
        lanes.add(items)
        #expect(first.take(size: 10, parallelism: 1)?.map(\.key) == ["fast.b", "fast.d"])
        #expect(own.take(size: 10, parallelism: 1)?.map(\.key) == ["slow.a", "slow.c"])
        lanes.add(items)
        #expect(lanes.withdraw("slow.c").map(\.key) == ["slow.c"] && lanes.withdrawAll().count == 3)
    }
}
