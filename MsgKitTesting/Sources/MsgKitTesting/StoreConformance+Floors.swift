import MsgKit

extension StoreConformance {
    /// A store that says where commits changed the queue (``JournalStore/changeFloor(since:)``) names,
    /// for the commits of any handle since a mark, the lowest position they wrote:
    /// what was added, changed or removed, by this handle or another; all for a
    /// destination state; nothing when nothing was written (or, from a store whose
    /// marks are conservative, as PostgreSQL's are while other transactions are
    /// open, a position written before). A store that does not say passes.
    static func floorScenarios(_ runner: inout ScenarioRunner, fresh: () throws -> (String, any Store),
                               open: (String) throws -> any Store) {
        runner.scenario("a store that says where the queue changed names the lowest position written since a mark") { c in
            let (url, store) = try fresh()
            guard let floors = store.capabilities.journal else { return }
            let other = try open(url)
            let ms = (0..<6).map { Fixtures.message($0, to: "r\($0 % 2)", createdOffset: Int64($0) * 10) }
            // Positions written so far: a conservative store may name them again.
            var written: [Message] = []
            func writtenBefore(_ p: ClaimPosition) -> Bool {
                written.contains { ClaimPosition(createdAt: $0.createdAt, id: "") == p }
            }
            // At or before the lowest position written, within its millisecond (or at
            // one written before).
            func expectFloor(_ floor: ChangeFloor.Floor, _ m: Message, _ what: String) {
                let lowest = ClaimPosition(createdAt: m.createdAt, id: m.id)
                guard case .from(let p) = floor, p <= lowest, p >= ClaimPosition(createdAt: m.createdAt, id: "") || writtenBefore(p) else {
                    c.expect(false, "\(what): \(floor), not at or just before \(lowest)")
                    return
                }
            }
            func expectNothing(since mark: Int64, _ what: String) throws {
                let floor = try floors.changeFloor(since: mark).floor
                if floor == .none { return }
                guard case .from(let p) = floor, writtenBefore(p) else {
                    c.expect(false, "\(what): \(floor), not none")
                    return
                }
            }
            let first = try floors.changeFloor(since: nil)
            c.expectEqual(first.floor, .all, "with no mark to ask from")
            try expectNothing(since: first.mark, "nothing written since")
            _ = try other.add([ms[4], ms[2], ms[5]])
            written += [ms[4], ms[2], ms[5]]
            let added = try floors.changeFloor(since: first.mark)
            expectFloor(added.floor, ms[2], "another handle added three: the lowest of them")
            c.expect(added.mark >= first.mark, "the mark never goes back: \(first.mark) to \(added.mark)")
            try expectNothing(since: added.mark, "nothing since")
            _ = try store.add([ms[1], ms[3]])
            _ = try other.add([ms[0]])
            written += [ms[1], ms[3], ms[0]]
            expectFloor(try floors.changeFloor(since: added.mark).floor, ms[0], "two commits, one of this handle: the lowest of both")
            let now = try floors.changeFloor(since: nil).mark
            var sent = ms[3]
            try sent.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            _ = try other.update([Change(sent, expected: .queued)])
            expectFloor(try floors.changeFloor(since: now).floor, ms[3], "a change of one")
            let afterChange = try floors.changeFloor(since: nil).mark
            _ = try other.update([Change(sent, expected: .queued)])
            try expectNothing(since: afterChange, "a change that did not apply wrote nothing")
            _ = try other.remove([Removal(id: ms[1].id)])
            expectFloor(try floors.changeFloor(since: afterChange).floor, ms[1], "a removal")
            let afterRemoval = try floors.changeFloor(since: nil).mark
            _ = try other.claimSession { (session) throws(MsgError) in
                _ = try session.store([], states: ["r0": #"{"paused_until":1}"#])
            }
            c.expectEqual(try floors.changeFloor(since: afterRemoval).floor, .all, "a destination state: anything may have changed")
            let latest = try floors.changeFloor(since: nil).mark
            c.expectEqual(try floors.changeFloor(since: latest + 1_000_000).floor, .all, "a mark ahead of the store")
        }
    }
}
