import Foundation
import Testing

/// Every example in every man page's EXAMPLES section runs (#50): each page has a
/// script in Tests/ManExamples that sets up what the examples assume (the peers
/// they name, a failed message to retry, a key) and then runs them as printed,
/// checking what each did. This test holds the script to the page: every line of
/// every example must be in it, word for word, so a page cannot change without
/// its examples being run again.
@Suite(.timeLimit(.minutes(6))) struct ManExampleTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    /// The pages with an EXAMPLES section.
    static let pages: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: repository + "/man")) ?? []
        return names.filter { name in
            name.range(of: #"\.[1-8]$"#, options: .regularExpression) != nil
                && ((try? String(contentsOfFile: repository + "/man/" + name, encoding: .utf8))?.contains("\n.SH EXAMPLES\n") ?? false)
        }.sorted()
    }()

    /// The lines of the examples of `page` as a reader types them: roff escapes
    /// undone, prompts (`$ `, `receiver$ `, `msg sqlite:queue.sqlite> `) taken
    /// off, and what a command printed (a line without a prompt in a block with
    /// prompts, but a here-document's lines and a continued line) left out.
    static func exampleLines(_ page: String) throws -> [String] {
        let text = try String(contentsOfFile: repository + "/man/" + page, encoding: .utf8)
        guard let start = text.range(of: "\n.SH EXAMPLES\n") else { return [] }
        let section = text[start.upperBound...]
        let end = section.range(of: "\n.SH ")?.lowerBound ?? section.endIndex
        var blocks: [[String]] = []
        var block: [String]?
        for raw in section[..<end].split(separator: "\n", omittingEmptySubsequences: false) {
            if raw == ".EX" { block = []; continue }
            if raw == ".EE" { if let b = block { blocks.append(b) }; block = nil; continue }
            guard block != nil else { continue }
            block?.append(decode(String(raw)))
        }
        let prompt = /^(?:[a-z]*\$ |msg [^ >]+> )/
        var lines: [String] = []
        for b in blocks {
            let prompted = b.contains { $0.firstMatch(of: prompt) != nil }
            var input: String?
            var continued = false
            for line in b {
                let command = line.replacing(prompt, with: "", maxReplacements: 1)
                let isCommand = !prompted || line.firstMatch(of: prompt) != nil || input != nil || continued
                if isCommand {
                    let trimmed = command.trimmingCharacters(in: .whitespaces)
                    if !trimmed.isEmpty { lines.append(trimmed) }
                }
                if let end = input {
                    if command == end { input = nil }
                } else if isCommand, let here = command.firstMatch(of: /<<\\?'?([A-Z]+)'?/) {
                    input = String(here.output.1)
                }
                continued = isCommand && command.hasSuffix("\\")
            }
        }
        return lines
    }

    /// roff's escapes as the page shows them.
    static func decode(_ line: String) -> String {
        var s = line
        for (escape, shown) in [("\\(aq", "'"), ("\\(dq", "\""), ("\\(:u", "ü"), ("\\-", "-"), ("\\&", ""), ("\\e", "\\")] {
            s = s.replacingOccurrences(of: escape, with: shown)
        }
        return s
    }

    @Test func everyPageWithExamplesHasItsScript() throws {
        #expect(Self.pages.count >= 19, "\(Self.pages)")
        for page in Self.pages {
            #expect(FileManager.default.fileExists(atPath: "\(Self.repository)/Tests/ManExamples/\(page).sh"), "no script runs the examples of \(page)")
        }
    }

    @Test(arguments: pages) func theExamplesRunAsPrinted(page: String) throws {
        let path = "\(Self.repository)/Tests/ManExamples/\(page).sh"
        let script = try String(contentsOfFile: path, encoding: .utf8)
        let lines = try Self.exampleLines(page)
        #expect(!lines.isEmpty, "\(page): no example found")
        for line in lines where !script.contains(line) {
            Issue.record("\(page): its example line is not run by \(path): \(line)")
        }
        let s = try Sandbox()
        let r = try s.sh("unshare -mn bash '\(path)'", env: ["MSG_REPO": Self.repository], timeout: 300)
        #expect(r.status == 0 && r.lines.last == "ok", "\(page): \(r.out)\(r.err)")
    }
}
