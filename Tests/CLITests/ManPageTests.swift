import Foundation
import Testing

@Suite(.timeLimit(.minutes(3))) struct ManPageTests {
    /// The source tree's man/ directory, found from this file.
    static let manDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../man").standardized.path

    @Test func everyPageRendersWithoutWarnings() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.manDirectory)
            .filter { $0.range(of: #"\.[1-8]$"#, options: .regularExpression) != nil }
        let expected = ["msg.1", "msg-compose.1", "msg-queue.1", "msg-flush.1", "msg-retry.1", "msg-recover.1", "msg-export.1", "msg-ledger.1", "msg-metrics.1", "msg-destinations.1",
                        "msg-listen.1", "msg-shell.1", "msg-config.5", "msg-record.5", "msg-tcp.7", "msg-plugins.7", "msg-postgres.7",
                        "msg-exec.7", "msg-http.7", "msg-smtp.7"]
        #expect(Set(expected).isSubset(of: pages), "missing: \(Set(expected).subtracting(pages).sorted())")
        let s = try Sandbox()
        for page in pages {
            let r = try s.sh("LC_ALL=C.UTF-8 groff -ww -man -Tutf8 -z '\(Self.manDirectory)/\(page)' 2>&1; echo \"exit $?\"")
            #expect(r.out == "exit 0\n", "\(page): \(r.out)")
            // mandoc is stricter: a stray escape or an empty paragraph that groff lets
            // pass shows up as garbage where man(1) is mandoc.
            let lint = try s.sh("mandoc -T lint '\(Self.manDirectory)/\(page)' 2>&1; echo \"exit $?\"")
            #expect(lint.out == "exit 0\n", "\(page): \(lint.out)")
        }
    }

    /// Nothing but text and the characters roff escapes stand for: a control byte in
    /// a page is always a mistake (a `\f` that became a form feed, say).
    @Test func noPageHoldsAControlCharacter() throws {
        for page in try FileManager.default.contentsOfDirectory(atPath: Self.manDirectory) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(Self.manDirectory)/\(page)"))
            let bad = bytes.enumerated().first { $0.element < 0x20 && $0.element != 0x0A && $0.element != 0x09 }
            #expect(bad == nil, "\(page): byte \(bad?.element ?? 0) at offset \(bad?.offset ?? 0)")
        }
    }

    /// The README's list of man pages is the man/ directory's, page for page, so
    /// it cannot go stale; and the README stays a landing page (#50).
    @Test func theREADMEListsEveryPageAndStaysShort() throws {
        let readme = try String(contentsOfFile: Self.manDirectory + "/../README.md", encoding: .utf8)
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.manDirectory)
            .filter { $0.range(of: #"\.[1-8]$"#, options: .regularExpression) != nil }
            .map { name -> String in
                let dot = name.lastIndex(of: ".")!
                return "\(name[..<dot])(\(name[name.index(after: dot)...]))"
            }
        let section = try #require(readme.range(of: "\n## Learn more\n")).upperBound
        let rest = readme[section...]
        let list = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        let named = list.matches(of: /msg(-[a-z]+)?\([1-8]\)/).map { String($0.output.0) }
        #expect(Set(named) == Set(pages), "listed but no page: \(Set(named).subtracting(pages).sorted()); a page not listed: \(Set(pages).subtracting(named).sorted())")
        #expect(named.count == Set(named).count, "a page listed twice: \(named)")
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 450, "the README has \(lines) lines; measurements go to docs/PERFORMANCE.md, contributors' notes to CONTRIBUTING.md")
    }
}
