import Foundation
import MsgKit
import MsgKitTesting
import Testing

/// The tests' process runner: a child past its deadline is killed with all it
/// started and named in the error; no child holds another's pipe; many at once
/// from many threads are each waited for.
@Suite(.timeLimit(.minutes(2))) struct TestProcessTests {
    @Test func aChildPastItsDeadlineIsKilledWithItsGroupAndNamed() throws {
        let s = try Sandbox()
        let started = Date()
        // The script's own child (sleep) holds the script's output: it must die too.
        let error = #expect(throws: MsgError.self) {
            try s.sh("echo before; sleep 300 & wait", timeout: 0.5)
        }
        #expect(Date().timeIntervalSince(started) < 60, "the deadline ended it, not sleep's end")
        let text = error?.message ?? ""
        #expect(text.contains("still running after 0.5 s, killed") && text.contains("sleep 300"), "\(text)")
        #expect(text.contains("--- stdout:\nbefore\n"), "what it printed so far: \(text)")
    }

    @Test func aPipeIsReadToItsEndWhenTheDeadlineKillsItsWriter() throws {
        let p = TestProcess(["/bin/sh", "-c", "echo one; exec sleep 300"], timeout: 0.5)
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text == "one\n")
        #expect(throws: TestProcess.Timeout.self) { try p.wait() }
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGKILL)
    }

    /// A long-lived child started while another test's pipe is open must not hold
    /// it: that test's read sees the end when its own child ends.
    ///
    /// The child's descriptors are compared by what they open, not by number: a
    /// program just started holds files of its own for a moment (the loader's
    /// cache and libraries, setlocale's locale files, each on descriptor 3), which
    /// is not a leak.
    @Test func aChildHoldsNoOtherDescriptor() throws {
        let other = Pipe()  // not close-on-exec, as Foundation makes them
        let pipeFile = try FileManager.default.destinationOfSymbolicLink(
            atPath: "/proc/self/fd/\(other.fileHandleForReading.fileDescriptor)")
        #expect(pipeFile.hasPrefix("pipe:["), "\(pipeFile)")
        let server = TestProcess(["/bin/sleep", "300"])
        try server.run()
        defer { server.signal(SIGKILL); try? server.wait() }
        // posix_spawn returns after the exec: what the child holds now, it was given.
        let fdDirectory = "/proc/\(server.processIdentifier)/fd"
        let held = try FileManager.default.contentsOfDirectory(atPath: fdDirectory).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0)
        }
        #expect(!held.contains(pipeFile), "the child holds the other test's pipe: \(held)")
        try other.fileHandleForWriting.close()
        #expect(other.fileHandleForReading.readDataToEndOfFile().isEmpty, "at its end at once")
    }

    @Test func manyChildrenFromManyThreadsAreEachWaitedFor() async throws {
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let r = try TestProcess.sh("exit \(i % 7)")
                    #expect(r.text.isEmpty)
                    return r.status - Int32(i % 7)
                }
            }
            for try await difference in group { #expect(difference == 0) }
        }
    }
}
