#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit
import MsgSupport
import MsgKitTesting
import Testing

@Suite struct LoaderTests {
    /// A copy of the stdout plugin in a directory of its own, with `mode`.
    func pluginCopy(dirMode: mode_t, fileMode: mode_t = 0o755) throws -> String {
        let dir = temporaryDirectory()
        let source = try #require(PluginLoader.executableDirectory()) + "/libStdoutTransport.so"
        let copy = "\(dir)/libStdoutTransport.so"
        let fd = try SystemCalls.open(copy, O_WRONLY | O_CREAT, mode: 0o755, code: .storeIO)
        try SystemCalls.writeAll(fd, try readFile(source), code: .storeIO, what: copy)
        close(fd)
        chmod(copy, fileMode)
        chmod(dir, dirMode)
        return dir
    }

    @Test func refusesAPluginInAWorldWritableDirectory() throws {
        let dir = try pluginCopy(dirMode: 0o777)
        let isolated = PluginLoader(extraDirectories: [dir], registry: PluginRegistry())
        do {
            _ = try isolated.openTransport("stdout:")
            Issue.record("loaded an untrusted plugin")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("plugin directory \(dir) is writable by group or others (mode 777)"), "\(error.message)")
        }
    }

    @Test func refusesAGroupWritablePluginFile() throws {
        let dir = try pluginCopy(dirMode: 0o755, fileMode: 0o775)
        let isolated = PluginLoader(extraDirectories: [dir], registry: PluginRegistry())
        #expect(throws: MsgError(.unavailable, "")) { try isolated.load("\(dir)/libStdoutTransport.so") }
    }

    /// A plugin is loaded when it speaks this major and at most this minor: one
    /// built for 5 (before minors), for another major, or for a newer minor is
    /// refused, saying which; one built for an older minor of this major loads.
    @Test(arguments: [(5 as UInt32, "5", "rebuild"), (99 << 16, "99.0", "rebuild"),
                      (PluginRegistrar.abiMajor << 16 | (PluginRegistrar.abiMinor + 1), "\(PluginRegistrar.abiMajor).\(PluginRegistrar.abiMinor + 1)", "upgrade msg")])
    func refusesAPluginBuiltForAnotherABI(theirs: UInt32, said: String, advice: String) throws {
        let dir = temporaryDirectory()
        let source = "\(dir)/other.c"
        // Its register function accepts what it was built for, as PluginRegistrar.register does.
        let code = """
            int msg_plugin_register(unsigned abi, void *r) {
                unsigned mine = \(theirs)u;
                return (mine < 65536u ? abi == mine : ((abi >> 16) == (mine >> 16) && (abi & 65535u) >= (mine & 65535u))) ? 0 : (int)mine;
            }

            """
        let fd = try SystemCalls.open(source, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, Array(code.utf8), code: .storeIO, what: source)
        close(fd)
        #expect(try TestProcess.sh("cc -shared -fPIC -o '\(dir)/libOther.so' '\(source)'").status == 0)
        chmod(dir, 0o755)
        let isolated = PluginLoader(extraDirectories: [dir], registry: PluginRegistry())
        do {
            try isolated.load("\(dir)/libOther.so")
            Issue.record("loaded a plugin built for ABI \(said)")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("was built for msg plugin ABI \(said), this msg speaks ABI \(PluginRegistrar.abiMajor).\(PluginRegistrar.abiMinor); \(advice)"), "\(error.message)")
        }
    }

    /// A plugin built for minor 0 of this major loads, whatever this msg's minor.
    @Test func loadsAPluginBuiltForThisMajorAndAnOlderOrEqualMinor() throws {
        let dir = temporaryDirectory()
        let source = "\(dir)/older.c"
        let mine = PluginRegistrar.abiMajor << 16
        let code = """
            int msg_plugin_register(unsigned abi, void *r) {
                return ((abi >> 16) == (\(mine)u >> 16) && (abi & 65535u) >= (\(mine)u & 65535u)) ? 0 : (int)\(mine)u;
            }

            """
        let fd = try SystemCalls.open(source, O_WRONLY | O_CREAT, code: .storeIO)
        try SystemCalls.writeAll(fd, Array(code.utf8), code: .storeIO, what: source)
        close(fd)
        #expect(try TestProcess.sh("cc -shared -fPIC -o '\(dir)/libOlder.so' '\(source)'").status == 0)
        chmod(dir, 0o755)
        try PluginLoader(extraDirectories: [dir], registry: PluginRegistry()).load("\(dir)/libOlder.so")
    }

    @Test func unknownSchemeListsTheKnownOnes() throws {
        let isolated = PluginLoader(registry: PluginRegistry())
        do {
            _ = try isolated.openStore("nosuch:/x")
            Issue.record("opened an unknown scheme")
        } catch {
            #expect(error.code == .unavailable && error.code.exitCode == 69)
            #expect(error.message.contains("no store plugin for scheme 'nosuch:'"))
            #expect(error.message.contains("json:"), "\(error.message)")
        }
    }

    @Test func loadsOnlyWhatACommandNeeds() throws {
        let registry = PluginRegistry()
        let isolated = PluginLoader(registry: registry)
        _ = try isolated.openStore("json:\(temporaryDirectory())/q.json")
        #expect(registry.entries.map(\.scheme) == ["json"])
    }

    @Test func stdoutTransportPassesConformance() throws {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let faults = TransportFaults(
            failing: { code in try loader.openTransport("stdout:?fd=\(devNull)&fail=1&error=\(code.name)") },
            slow: { latency in try loader.openTransport("stdout:?fd=\(devNull)&latency=\(latency)") })
        try TransportConformance.run(faults: faults) {
            var fds: [Int32] = [0, 0]
            _ = pipe(&fds)
            _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
            let transport = try loader.openTransport("stdout:?fd=\(fds[1])")
            var seen: [String: Int] = [:]
            // The mock's destination is its own process: after a "crash" it is the same one.
            return TransportUnderTest(transport: transport, deliveries: {
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                var bytes: [UInt8] = []
                while true {
                    let n = read(fds[0], &buffer, buffer.count)
                    if n <= 0 { break }
                    bytes += buffer[0..<n]
                }
                for line in bytes.split(separator: 0x0A) {
                    let m = try Message(json: try JSONParser.parse(Array(line)))
                    seen[m.id, default: 0] += 1
                }
                return seen
            }, reopen: { transport })
        }
    }
}
