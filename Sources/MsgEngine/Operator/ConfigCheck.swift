#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit

/// `msg config check`: everything wrong in the config file, one ``ConfigProblem``
/// a line, in the order of the file. Errors (a command refuses to run): a line that
/// does not read, an unknown key (with the known one it nearly is), a bad value, a
/// transport URL that does not parse or that no plugin serves. Warnings: a key set
/// twice, a section that an earlier one shadows for every key it sets, a section
/// whose pattern matches no destination in the store and no message it holds.
public enum ConfigCheck {
    /// The problems of `settings`' config file; `store` is asked which destinations
    /// it knows (nil: not asked).
    public static func problems(_ settings: Settings, loader: PluginLoader, store: (any Store)?) -> [ConfigProblem] {
        guard let path = settings.configPath else { return [] }
        var problems = settings.problems
        func transport(_ url: String?, line: Int?) {
            guard let url, let line else { return }
            do throws(MsgError) { try loader.checkTransport(url) } catch {
                problems.append(ConfigProblem(path: path, line: line, text: "transport: \(error.message)"))
            }
        }
        transport(settings.configured.transport, line: settings.configured.lines["transport"])
        let sections = settings.sections.filter { $0.line > 0 }
        for s in sections { transport(s.values.transport, line: s.values.lines["transport"]) }
        problems += shadowed(sections, path: path)
        if let store { problems += unused(sections, store: store, path: path) }
        return problems.sorted { $0.line < $1.line }
    }

    /// What a section sets, in groups that each take the first section that sets them.
    private static let groups: [(name: String, sets: @Sendable (ConfigValues) -> Bool)] = [
        ("transport", { $0.transport != nil }),
        ("retry policy", { $0.setsPolicy }),
        ("deadline and workers", { $0.hasOwnWorkers }),
        ("throttle and breaker", { $0.rate != nil || $0.breaker != nil || $0.breakerCooldown != nil }),
    ]

    /// Sections an earlier one shadows: for each group it sets, an earlier section
    /// that sets it too matches every destination it does (its pattern, read as a
    /// destination, matches the earlier one's).
    package static func shadowed(_ sections: [DestinationSection], path: String) -> [ConfigProblem] {
        var out: [ConfigProblem] = []
        for (j, later) in sections.enumerated() {
            let sets = groups.filter { $0.sets(later.values) }
            if sets.isEmpty {
                out.append(ConfigProblem(path: path, line: later.line, text: "[destination \(later.pattern)] sets nothing", isError: false))
                continue
            }
            var by: [DestinationSection] = []
            for g in sets {
                guard let earlier = sections[..<j].first(where: { g.sets($0.values) && covers($0.pattern, later.pattern) }) else { break }
                if !by.contains(earlier) { by.append(earlier) }
            }
            guard by.count > 0, sets.allSatisfy({ g in by.contains { g.sets($0.values) } }) else { continue }
            let first = by.map(\.origin).joined(separator: " and ")
            out.append(ConfigProblem(path: path, line: later.line, text: "[destination \(later.pattern)] never applies: \(first) come\(by.count == 1 ? "s" : "") first and match\(by.count == 1 ? "es" : "") every destination it does, for every key it sets", isError: false))
        }
        return out
    }

    /// Whether every destination `later` matches is matched by `earlier`.
    static func covers(_ earlier: String, _ later: String) -> Bool {
        earlier == later || fnmatch(earlier, later, 0) == 0
    }

    /// Sections whose pattern matches no destination the store knows (a state or a
    /// waiting message) and no recipient of a message it holds; none while the
    /// store holds nothing.
    static func unused(_ sections: [DestinationSection], store: any Store, path: String) -> [ConfigProblem] {
        var left = sections
        var any = false
        func saw(_ to: String) {
            any = true
            left.removeAll { fnmatch($0.pattern, to, 0) == 0 }
        }
        for e in (try? Destinations(store: store).list()) ?? [] where !left.isEmpty { saw(e.key) }
        if !left.isEmpty {
            try? store.list(Query()) { (r) throws(MsgError) -> Bool in
                saw(r.message.to)
                return !left.isEmpty
            }
        }
        // A store that holds nothing yet (a new install) says nothing about patterns.
        guard any else { return [] }
        return left.map {
            ConfigProblem(path: path, line: $0.line, text: "[destination \($0.pattern)] matches no destination in the store and no message it holds (a misspelt pattern? msg route DEST shows where one goes)", isError: false)
        }
    }
}
