#if canImport(Glibc)
@preconcurrency import Glibc
#endif
@preconcurrency import CReadline
import MsgEngine
import MsgKit
import MsgSupport
import Synchronization

/// The prompt of `msg shell`, on GNU readline's callback interface.
///
/// SIGINT is blocked and read from a signalfd beside the terminal, so Ctrl-C at the
/// prompt abandons the line without any signal handler. While a command runs it
/// stays blocked: `flush --watch` and `listen` wait for it and stop cleanly, and back
/// at the prompt whatever arrived meanwhile is dropped, so the shell never dies of it.
final class InteractiveShell {
    /// readline's C callbacks take no context pointer: the line handler leaves the line
    /// here and the completer is found here. Only the shell's own thread uses them.
    private static let received = Mutex<Received?>(nil)
    private static let completer = Mutex<CompleterBox?>(nil)

    private enum Received: Sendable {
        case line(String)
        case end
    }

    private let runner: ShellRunner
    private let prompt: String
    private let history: ShellHistory

    init(runner: ShellRunner, settings: Settings) {
        self.runner = runner
        let store = settings.store
        let shown = store.hasPrefix("sqlite:\(settings.home)/") || store.hasPrefix("json:\(settings.home)/")
            ? (store.split(separator: ":").first.map(String.init) ?? "") + ":" + (store.split(separator: "/").last.map(String.init) ?? "")
            : store
        prompt = "msg \(shown)> "
        history = ShellHistory(path: settings.home + "/history")
        let session = Session(settings: settings, console: Console(input: -1, output: -1, error: -1, reporter: Reporter { _ in }))
        session.reportsSetAside = false
        let box = CompleterBox(ShellCompleter(ids: { prefix in session.storedIDs(matching: prefix) }))
        Self.completer.withLock { $0 = box }
    }

    /// Runs until Ctrl-D or `exit`. - Returns: the exit status (`exit N` gives N).
    func run() throws(MsgError) -> Int32 {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        let interrupts = signalfd(-1, &signals, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard interrupts >= 0 else { throw MsgError(.storeIO, "cannot watch for Ctrl-C: \(SystemCalls.describe(errno))") }
        defer { close(interrupts) }

        rl_readline_name = UnsafePointer(strdup("msg"))
        rl_catch_signals = 0
        rl_attempted_completion_function = { text, start, _ in
            rl_attempted_completion_over = 1
            let line = rl_line_buffer.map { String(cString: $0) } ?? ""
            let before = String(decoding: Array(line.utf8.prefix(Int(start))), as: UTF8.self)
            let word = text.map { String(cString: $0) } ?? ""
            let box = InteractiveShell.completer.withLock { $0 }
            let matches = box?.completer.candidates(before: before, text: word) ?? []
            if matches.count == 1, let last = matches[0].last, ":/,".contains(last) { rl_completion_append_character = 0 }
            return InteractiveShell.matchArray(matches)
        }
        history.load()
        while true {
            Self.received.withLock { $0 = nil }
            rl_callback_handler_install(prompt) { line in
                // Removed here, before readline would show the next prompt.
                rl_callback_handler_remove()
                guard let line else {
                    InteractiveShell.received.withLock { $0 = .end }
                    return
                }
                InteractiveShell.received.withLock { $0 = .line(String(cString: line)) }
                free(line)
            }
            let got = waitForLine(interrupts)
            switch got {
            case .end:
                _ = try? SystemCalls.writeAll(1, [0x0A], code: .storeIO, what: "standard output")
                return 0
            case .line(let text):
                history.add(text)
                if case .exit(let status) = runner.run(text) { return status }
                drain(interrupts)
            }
        }
    }

    /// Feeds readline until it has a line or the input ends; Ctrl-C abandons the line.
    private func waitForLine(_ interrupts: Int32) -> Received {
        var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: interrupts, events: Int16(POLLIN), revents: 0)]
        while true {
            if let got = Self.received.withLock({ $0 }) { return got }
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return .end
            }
            if fds[1].revents & Int16(POLLIN) != 0 {
                drain(interrupts)
                // As bash does: the abandoned line stays on screen, a fresh prompt below it.
                rl_free_line_state()
                rl_callback_sigcleanup()
                rl_crlf()
                rl_replace_line("", 0)
                rl_on_new_line()
                rl_redisplay()
            }
            if fds[0].revents & Int16(POLLIN | POLLHUP) != 0 { rl_callback_read_char() }
        }
    }

    /// Drops the signals that arrived.
    private func drain(_ interrupts: Int32) {
        var info = signalfd_siginfo()
        while read(interrupts, &info, MemoryLayout<signalfd_siginfo>.size) > 0 {}
    }

    /// readline's match list: malloc'd, NULL-terminated, the first entry the text
    /// that replaces the word (the one match, or the matches' common prefix).
    private static func matchArray(_ matches: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        guard let first = matches.first else { return nil }
        var common = first
        for m in matches.dropFirst() {
            common = String(zip(common, m).prefix { $0 == $1 }.map(\.0))
        }
        let entries = matches.count == 1 ? [first] : [common] + matches
        guard let raw = malloc((entries.count + 1) * MemoryLayout<UnsafeMutablePointer<CChar>?>.stride) else { return nil }
        let array = raw.bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: entries.count + 1)
        for (i, e) in entries.enumerated() { array[i] = strdup(e) }
        array[entries.count] = nil
        return array
    }

}

/// The completer, reachable from readline's completion callback.
///
/// `@unchecked Sendable` is safe because readline calls that callback only on the
/// shell's own thread, inside `rl_callback_read_char`, the one thread that uses the
/// completer (and the session it opens the store with).
private final class CompleterBox: @unchecked Sendable {
    let completer: ShellCompleter
    init(_ completer: ShellCompleter) { self.completer = completer }
}
