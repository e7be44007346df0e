import Foundation
import Testing

/// The plugin contract stays small (plugin ABI 8 and on, docs/DESIGN.md 4): the store's
/// core is at most ten requirements, as recorded in MsgKit/ABI.txt, and the host
/// finds what a plugin does beyond its core through the values it declares, never
/// by casting it to a protocol.
@Suite struct ContractShapeTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The requirements of `proto` as the ABI record lists them.
    static func requirements(of proto: String) throws -> [String] {
        let abi = try String(contentsOfFile: repository + "/MsgKit/ABI.txt", encoding: .utf8)
        var inside = false
        var found: [String] = []
        for line in abi.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") { inside = line == "Protocol \(proto)" }
            if inside, line.hasSuffix("[requirement]") { found.append(line.trimmingCharacters(in: .whitespaces)) }
        }
        return found
    }

    @Test func theStoreHasAtMostTenRequirements() throws {
        let store = try Self.requirements(of: "Store")
        #expect(!store.isEmpty, "Protocol Store is in MsgKit/ABI.txt")
        #expect(store.count <= 10, "\(store.count) requirements: \(store)")
        #expect(store.contains { $0.hasPrefix("Var capabilities") }, "what is optional is declared at open")
    }

    @Test func noHostFileCastsAPluginToACapability() throws {
        var offenders: [String] = []
        for folder in ["Sources/MsgEngine", "Sources/MsgCLI"] {
            let root = Self.repository + "/" + folder
            guard let files = FileManager.default.enumerator(atPath: root) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("as? any") || line.contains("as! any") || line.contains("is any ") {
                    offenders.append("\(folder)/\(file):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(offenders.isEmpty, "capability casts: \(offenders)")
    }
}
