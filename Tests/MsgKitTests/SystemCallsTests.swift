#if canImport(Glibc)
import Glibc
#endif
import MsgKit
import MsgSupport
import Testing

@Suite struct SystemCallsTests {
    func temporaryDirectory() -> String {
        var template = Array("/tmp/msg-test-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: path!)
    }

    func contents(_ path: String) throws -> [UInt8] {
        let fd = try SystemCalls.open(path, O_RDONLY, code: .storeIO)
        defer { close(fd) }
        return try SystemCalls.readToEnd(fd, code: .storeIO, what: path)
    }

    /// `export --out FILE` and the JSON store's compaction replace files this way.
    @Test func anAtomicReplacementNeverWritesThroughAPlantedLink() throws {
        let dir = temporaryDirectory()
        let victim = "\(dir)/victim"
        try SystemCalls.replaceAtomically(victim, with: Array("keep me\n".utf8), code: .storeIO)
        let path = "\(dir)/audit.ndjson"
        // The temporary name msg once used, a link to the victim: never written through.
        #expect(symlink(victim, "\(path).tmp-\(getpid())") == 0)
        try SystemCalls.replaceAtomically(path, with: Array("new\n".utf8), code: .storeIO)
        #expect(try contents(victim) == Array("keep me\n".utf8), "the link's target is untouched")
        #expect(try contents(path) == Array("new\n".utf8))
        // A link at the file itself is neither followed nor renamed over: refused.
        let linked = "\(dir)/linked.ndjson"
        #expect(symlink(victim, linked) == 0)
        #expect(throws: MsgError(.storeIO, "")) { try SystemCalls.replaceAtomically(linked, with: Array("new\n".utf8), code: .storeIO) }
        #expect(try contents(victim) == Array("keep me\n".utf8), "the link's target is untouched")
        var st = stat()
        #expect(lstat(linked, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK, "the link is left as it was")
    }

    @Test func aSecretFileMustBeTheOwnersAlone() throws {
        let path = temporaryDirectory() + "/secret"
        let fd = try SystemCalls.createExclusive(path, mode: 0o640, code: .storeIO)
        try SystemCalls.writeAll(fd, Array("s3cret\n".utf8), code: .storeIO, what: path)
        close(fd)
        chmod(path, 0o640)
        do {
            _ = try SystemCalls.readPrivateFile(path, what: "token file")
            Issue.record("a file the group may read was read")
        } catch {
            #expect(error.code == .config && error.message == "token file \(path) can be read by others; chmod 0600 it")
        }
        chmod(path, 0o600)
        #expect(try SystemCalls.readPrivateFile(path, what: "token file") == Array("s3cret\n".utf8))
        #expect(throws: MsgError(.config, "")) { try SystemCalls.readPrivateFile(path + ".missing", what: "token file") }
    }

    @Test func temporaryNamesCannotBeGuessed() {
        let names = Set((0..<100).map { _ in SystemCalls.unpredictableName(beside: "/x/f") })
        #expect(names.count == 100)
        #expect(names.allSatisfy { $0.hasPrefix("/x/f.tmp-") && $0.count > "/x/f.tmp-".count + 16 })
    }

    @Test func renameNoReplaceNeverReplaces() throws {
        let dir = temporaryDirectory()
        try SystemCalls.replaceAtomically("\(dir)/a", with: [1], code: .storeIO)
        try SystemCalls.replaceAtomically("\(dir)/b", with: [2], code: .storeIO)
        #expect(!SystemCalls.renameNoReplace("\(dir)/a", "\(dir)/b"))
        #expect(try contents("\(dir)/b") == [2])
        #expect(SystemCalls.renameNoReplace("\(dir)/a", "\(dir)/c"))
        #expect(try contents("\(dir)/c") == [1] && !SystemCalls.exists("\(dir)/a"))
    }
}
