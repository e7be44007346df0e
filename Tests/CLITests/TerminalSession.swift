import Foundation
import MsgKitTesting

/// A program running in a real pseudo-terminal (a tmux pane on a server of its
/// own), driven by keystrokes and read off the screen, as a person would use it.
final class TerminalSession {
    private let socket = "msg-test-\(UUID().uuidString.prefix(8))"

    /// Starts `command` (run by sh) in a `width`×50 pane; when it ends the pane shows
    /// `EXITED <status>`.
    init(_ command: String, width: Int = 160) throws {
        guard tmux(["new-session", "-d", "-x", String(width), "-y", "50", "\(command); echo EXITED $?; sleep 600"], capture: false).status == 0 else {
            throw CocoaError(.executableLoad)
        }
    }

    deinit {
        // kill-server alone was seen to leave the server running; make sure.
        let pid = Int32(tmux(["display-message", "-p", "#{pid}"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let pane = Int32(tmux(["display-message", "-p", "#{pane_pid}"]).output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        _ = tmux(["kill-server"], capture: false)
        for p in [pane, pid] where p > 1 { kill(p, SIGKILL) }
    }

    /// Sends keys in tmux's names (`Tab`, `Enter`, `C-c`, `C-d`, `Up`) or literal text.
    func send(_ keys: String...) {
        _ = tmux(["send-keys", "-t", "0"] + keys, capture: false)
    }

    /// The screen, as text.
    var screen: String { tmux(["capture-pane", "-p", "-t", "0"]).output }

    /// Waits until the screen shows `text` `count` times (looked at every 20 ms, for
    /// up to 20 s) and returns the screen; nil if it never does.
    @discardableResult
    func waitFor(_ text: String, count: Int = 1) -> String? {
        for _ in 0..<1000 {
            let s = screen
            if s.components(separatedBy: text).count - 1 >= count { return s }
            usleep(20_000)
        }
        return nil
    }

    /// Runs a tmux command. A client that starts the server leaves it running,
    /// daemonized, with none of this process's descriptors (TestProcess starts
    /// children with 0, 1 and 2 alone) and in a session of its own.
    private func tmux(_ arguments: [String], capture: Bool = true) -> (status: Int32, output: String) {
        let p = TestProcess()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/tmux")
        p.arguments = ["-L", socket, "-f", "/dev/null"] + arguments
        let out = Pipe()
        p.standardOutput = capture ? out : FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { return (-1, "") }
        let data = capture ? out.fileHandleForReading.readDataToEndOfFile() : Data()
        try? p.wait()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
