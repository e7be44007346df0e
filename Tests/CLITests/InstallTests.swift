import Foundation
import Testing

/// `make install`: the installed tree, moved away from where it was installed and
/// with the build out of reach, runs on its own.
@Suite(.timeLimit(.minutes(3))) struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../..").standardized.path

    @Test func anInstalledTreeRunsOnItsOwn() throws {
        let s = try Sandbox()
        let installed = try s.sh("MSG_INSTALL_FROM='\(buildDirectory)' '\(Self.repository)/scripts/install' '\(s.home)/prefix' && mv prefix moved")
        #expect(installed.status == 0, "\(installed.err)")
        for file in ["bin/msg", "lib/libMsgKit.so", "lib/msg/plugins/libSQLiteStore.so", "lib/msg/plugins/libTCPTransport.so", "lib/msg/plugins/libNATSTransport.so",
                     "share/man/man1/msg.1", "share/man/man1/msg-flush.1", "share/man/man5/msg-record.5", "share/man/man7/msg-tcp.7", "share/man/man7/msg-nats.7",
                     "share/bash-completion/completions/msg", "share/zsh/site-functions/_msg", "share/fish/vendor_completions.d/msg.fish",
                     "share/msg/msg-cron", "share/msg/crontab", "share/msg/systemd/msg-flush.service", "share/msg/systemd/msg-recover.timer",
                     "share/msg/grafana/msg.json", "share/msg/prometheus/msg-alerts.yml"] {
            #expect(FileManager.default.fileExists(atPath: "\(s.home)/moved/\(file)"), "\(file) installed")
        }
        // Nothing from the build: a bare environment, msg by its installed path only.
        let bare = "env -i PATH=/usr/bin:/bin MSG_HOME='\(s.home)/home' '\(s.home)/moved/bin/msg'"
        let plugins = try s.sh("\(bare) plugins")
        let paths = plugins.lines.compactMap { line in line.range(of: #""path":"[^"]+""#, options: .regularExpression).map { String(line[$0]) } }
        // scripts/test builds the postgres://, http://, tls:// and smtp:// plugins and the web server, so they are installed too.
        let postgresBuilt = FileManager.default.fileExists(atPath: "\(Self.repository)/Plugins/NetworkPlugins/.build/release/libPostgresStore.so")
        #expect(paths.count == (postgresBuilt ? 12 : 7) && paths.allSatisfy { $0.contains("\(s.home)/moved/lib/msg/plugins/") }, "\(plugins.out)")
        if postgresBuilt {
            let store = "postgres://nobody@127.0.0.1:1/x"
            let loaded = try s.sh("\(bare) queue count --store \(store)")
            #expect(loaded.status == 75 && loaded.err.contains("127.0.0.1:1"), "the installed postgres plugin loads and tries to connect (unreachable: 75): \(loaded.err)")
        }
        let pipeline = try s.sh("\(bare) compose --to ann --body hi | \(bare) queue add | \(bare) flush | wc -l; ls home/outbox/new | wc -l")
        #expect(pipeline.lines == ["1", "1"], "\(pipeline.err)")
        // What the examples call, pointing into the prefix it was installed under.
        let unit = try String(contentsOfFile: "\(s.home)/moved/share/msg/systemd/msg-flush.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(s.home)/prefix/bin/msg flush --watch"), "\(unit)")
        let crontab = try String(contentsOfFile: "\(s.home)/moved/share/msg/crontab", encoding: .utf8)
        #expect(crontab.contains("\(s.home)/prefix/share/msg/msg-cron"), "\(crontab)")
        let completion = try String(contentsOfFile: "\(s.home)/moved/share/bash-completion/completions/msg", encoding: .utf8)
        #expect(completion.contains("flush") && completion.contains("--transport"))
    }
}
