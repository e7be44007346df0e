import Dispatch
import Foundation
import MsgKit
import MsgKitTesting
@testable import PostgresStore
import Synchronization
import Testing

/// Claims that run at once on a real server (``DestinationLocks``): each holds its
/// destinations, one claim never waits for another's, and a claim that holds a
/// destination sees what the one that held it before committed.
@Suite struct ClaimLockTests {
    /// What a claim on another connection, in another thread, reserved.
    final class Outcome: @unchecked Sendable {
        let value = Mutex<Result<Reservation, MsgError>?>(nil)
    }

    /// Runs `reserve` in a claim of `store` on a thread of its own.
    static func inAnotherClaim(_ store: PostgresStore, _ keys: [String], wait: Bool, done: DispatchSemaphore) -> Outcome {
        let outcome = Outcome()
        let worker = Workers(stores: [store])
        Thread.detachNewThread {
            let r: Result<Reservation, MsgError>
            do throws(MsgError) {
                r = .success(try worker.stores[0].claimSession { (s) throws(MsgError) -> Reservation in
                    guard let locks = s.locks else { throw MsgError(.storeIO, "no destination locks") }
                    return try locks.reserve(keys, wait: wait, keysAreRecipients: true)
                })
            } catch {
                r = .failure(error)
            }
            outcome.value.withLock { $0 = r }
            done.signal()
        }
        return outcome
    }

    @Test func aClaimSkipsWhatAnotherHoldsAndAWaiterSeesWhatItCommitted() throws {
        let url = try TestServer.freshURL()
        let first = try TestServer.open(url)
        let m = Fixtures.message(1, to: "a")
        _ = try first.add([m, Fixtures.message(2, to: "b")])
        let skipped = DispatchSemaphore(value: 0), waited = DispatchSemaphore(value: 0)
        var skipper: Outcome?
        var waiter: Outcome?
        try first.claimSession { (s) throws(MsgError) in
            guard let locks = s.locks else { throw MsgError(.storeIO, "no destination locks") }
            let mine = try locks.reserve(["a"], wait: false, keysAreRecipients: true)
            #expect(mine == Reservation(granted: ["a"], busy: [], inFlight: []))
            var x = m
            try x.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            #expect(try s.store([Change(EncodedMessage(x), expected: .queued)], states: [:]) == [true])
            // Another claim, while this one holds a: answered at once, a busy.
            skipper = Self.inAnotherClaim(try TestServer.open(url), ["a", "b"], wait: false, done: skipped)
            #expect(skipped.wait(timeout: .now() + 20) == .success, "a claim without waiting never waits for another")
            // A third waits for a until this one commits.
            waiter = Self.inAnotherClaim(try TestServer.open(url), ["a"], wait: true, done: waited)
            #expect(waited.wait(timeout: .now() + 0.3) == .timedOut, "a waiter waits while a is held")
        }
        #expect(waited.wait(timeout: .now() + 20) == .success)
        let other = try #require(try skipper?.value.withLock { $0 }?.get())
        #expect(other.granted == ["b"] && other.busy == ["a"], "\(other)")
        let after = try #require(try waiter?.value.withLock { $0 }?.get())
        #expect(after.granted == ["a"])
        #expect(after.inFlight == [InFlight(id: m.id, to: "a")], "the holder's claim, committed while the waiter waited")
    }

    @Test func aClaimHoldsNoMoreThanTheLockTableAffords() throws {
        let url = try TestServer.freshURL()
        let store = try TestServer.open(url)
        let keys = (0..<(PostgresClaimSession.mostHeld + 10)).map { "d\($0)" }
        let r = try store.claimSession { (s) throws(MsgError) -> Reservation in
            guard let locks = s.locks else { throw MsgError(.storeIO, "no destination locks") }
            return try locks.reserve(keys, wait: false, keysAreRecipients: true)
        }
        #expect(r.granted == Set(keys.prefix(PostgresClaimSession.mostHeld)) && r.busy.isEmpty, "the first ones, in order; the rest neither granted nor busy")
    }
}
