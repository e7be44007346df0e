import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// The Debian packages as a fresh host sees them (issue #71): built by
/// scripts/package from this build, checked by lintian, unpacked into a scratch
/// root, their units verified and rated by systemd-analyze, and the quickstart
/// run from that root in a mount namespace where the Swift toolchain's
/// directory is an empty tmpfs, on the default store and over https://.
@Suite(.timeLimit(.minutes(12))) struct PackageTests {
    @Test func thePackagesRunWhereTheToolchainIsNot() throws {
        let s = try Sandbox()
        try TLSTests().makeCertificates(s)
        let repo = DestinationTransportTests.repository
        let built = try s.sh("""
            set -e
            debs=$(cd '\(repo)' && MSG_INSTALL_FROM='\(buildDirectory)' MSG_DEB_LEVEL=1 scripts/package "$OLDPWD/debs" 2>"$OLDPWD/package.err") || { cat package.err >&2; exit 1; }
            echo $debs
            lintian --fail-on error $debs > lintian.out 2>&1; echo "lintian $?"
            grep -c '^E:' lintian.out || true
            mkdir root
            for deb in $debs; do dpkg-deb -x "$deb" root; done
            dpkg-deb -f debs/msg_*.deb Depends
            dpkg-deb -c debs/msg_*.deb | grep -c ' ./etc/msg/config$'
            dpkg-deb -I debs/msg_*.deb conffiles
            units=(/usr/lib/systemd/system/msg-flush.service /usr/lib/systemd/system/msg-recover.service /usr/lib/systemd/system/msg-recover.timer)
            systemd-analyze verify --man=no --recursive-errors=no --root="$PWD/root" "${units[@]}"; echo "verify $?"
            for unit in msg-flush.service msg-recover.service; do
              systemd-analyze security --offline=yes "root/usr/lib/systemd/system/$unit" | sed -n "s/.*Overall exposure level for $unit: \\([0-9.]*\\) .*/\\1/p"
            done
            """, timeout: 600)
        #expect(built.status == 0, "\(built.out) \(built.err)")
        let lines = built.lines
        #expect(lines.count == 9, "\(built.out) \(built.err)")
        guard lines.count == 9 else { return }
        #expect(lines[0].contains("msg_0") && lines[0].contains("msg-network-plugins_0"), "the two packages: \(lines[0])")
        let lintian = (try? String(contentsOfFile: s.home + "/lintian.out", encoding: .utf8)) ?? ""
        #expect(lines[1] == "lintian 0" && lines[2] == "0", "no error from lintian: \(lintian)")
        #expect(lines[3].contains("adduser") && lines[3].contains("libsqlite3-0") && lines[3].contains("libssl3"), "its dependencies: \(lines[3])")
        #expect(lines[4] == "1" && lines[5] == "/etc/msg/config", "the config file, a conffile: \(lines[4]) \(lines[5])")
        #expect(lines[6] == "verify 0", "\(built.err)")
        for rating in lines[7...] {
            #expect((Double(rating) ?? 10) <= 3.0, "systemd-analyze security rates a unit \(rating)")
        }

        let server = try HostileDestinationTests.Receiver(s, name: "hook", arguments: ["--tls", "\(s.home)/server.pem", "\(s.home)/server-key.pem"])
        let runtime = try s.sh("dirname \"$(ldd '\(buildDirectory)/msg' | awk '$1 == \"libswiftCore.so\" { print $3 }')\"").out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let toolchain = runtime.hasSuffix("/usr/lib/swift/linux") && runtime != "/usr/lib/swift/linux" ? String(runtime.dropLast(20)) : runtime
        #expect(FileManager.default.fileExists(atPath: runtime + "/libswiftCore.so"), "the toolchain's runtime: \(runtime)")
        let quickstart = try s.sh("""
            mount -t tmpfs none '\(toolchain)'
            ls -A '\(toolchain)' | wc -l
            unset MSG_PLUGIN_PATH
            export PATH=$PWD/root/usr/bin:/usr/bin:/bin
            command -v msg
            msg compose --to ann --body hi --enqueue > /dev/null; msg flush > /dev/null; echo "flush $?"
            ls "$MSG_HOME/outbox/new" | wc -l
            msg compose --to bob --body hi --enqueue > /dev/null
            LD_DEBUG=files msg flush --transport 'https://localhost:\(server.port)/hook?ca_file=\(s.home)/ca.pem' > /dev/null 2> ld.log; echo "https $?"
            grep -c 'file=libswiftCore.so \\[0\\];  generating link map' ld.log
            grep -c 'libHTTPTransport.so \\[0\\];  generating link map' ld.log
            ldd root/usr/lib/msg/plugins/*.so root/usr/bin/msg | grep -c 'not found'
            """, wrapper: "unshare -m", timeout: 300)
        #expect(quickstart.lines == ["0", "\(s.home)/root/usr/bin/msg", "flush 0", "1", "https 0", "1", "1", "0"],
                "\(quickstart.out) \(quickstart.err)")
        #expect(try server.requests().count == 1, "the https:// server got the message")
    }
}
