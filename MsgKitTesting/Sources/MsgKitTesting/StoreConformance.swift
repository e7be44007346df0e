import MsgKit

/// The behaviour every ``Store`` plugin must show (docs/DESIGN.md 4 and 6), run against
/// fresh locations. Call ``run(freshURL:open:)`` from a test; it throws
/// ``ConformanceFailures`` naming every scenario that failed.
///
/// `freshURL` returns a new, empty location each time (`json:/tmp/x/queue.json`);
/// `open` opens a store on a URL for the given access and may be called several
/// times for one URL, as separate processes would.
public enum StoreConformance {
    /// Runs every scenario. - Throws: ``ConformanceFailures``.
    public static func run(freshURL: () throws -> String, open openAccess: (String, StoreAccess) throws -> any Store) throws {
        var runner = ScenarioRunner(suite: "StoreConformance")
        func open(_ url: String) throws -> any Store { try openAccess(url, .write) }
        func fresh() throws -> (String, any Store) {
            let url = try freshURL()
            return (url, try open(url))
        }

        runner.scenario("opened for reading, a store that does not exist is an error, and stays missing") { c in
            let url = try freshURL()
            do {
                _ = try openAccess(url, .read)
                c.expect(false, "a missing store was opened for reading")
            } catch let e as MsgError {
                c.expectEqual(e.code, .storeIO, "error code")
            }
            do {
                _ = try openAccess(url, .read)
                c.expect(false, "the first read made a store")
            } catch let e as MsgError {
                c.expectEqual(e.code, .storeIO, "error code the second time")
            }
            let writer = try open(url)
            _ = try writer.add([Fixtures.message(1)])
            let reader = try openAccess(url, .read)
            c.expectEqual(try reader.get(Fixtures.message(1).id)?.message, Fixtures.message(1), "read back through read access")
            c.expectEqual(reader.setAside(), [], "nothing set aside")
            do {
                _ = try reader.add([Fixtures.message(2)])
                c.expect(false, "a store opened for reading wrote")
            } catch let e as MsgError {
                c.expectEqual(e.code, .storeIO, "error code of a write through read access")
            }
            c.expectEqual(try writer.count(Query()), 1, "nothing written through read access")
        }

        runner.scenario("capabilities are declared at open, the same for every handle and every read") { c in
            let (url, store) = try fresh()
            let names = store.capabilities.names
            c.expectEqual(store.capabilities.names, names, "read twice")
            c.expectEqual(try open(url).capabilities.names, names, "another handle")
            _ = try store.add([Fixtures.message(1)])
            c.expectEqual(try openAccess(url, .read).capabilities.names, names, "a handle that reads")
            // What a store declares, it does: a watcher sees another handle's commit.
            if let watching = store.capabilities.watching {
                let before = try watching.changeToken()
                _ = try open(url).add([Fixtures.message(2)])
                c.expect(try watching.changeToken() != before, "the change token moved with another handle's commit")
            }
            if let counting = store.capabilities.journal, let counts = try counting.counts(now: Fixtures.t0, excluding: []) {
                c.expectEqual(counts.tally.records(statuses: [.queued], to: nil), try store.count(Query(statuses: [.queued])), "the counts are the records'")
            }
        }

        runner.scenario("round trip keeps every field and unknown ones") { c in
            let (_, store) = try fresh()
            var m = Fixtures.message(1)
            m.lastError = .init(code: "timeout", message: "slow", retryable: true, at: Fixtures.t0)
            m.notBefore = Fixtures.t0
            m.from = "alice"
            let added = try store.add([m])
            c.expectEqual(added, [AddResult(message: m, inserted: true)], "add result")
            c.expectEqual(try store.get(m.id)?.message, m, "stored record")
            c.expectEqual(try store.get(m.id)?.json, EncodedMessage(m).json, "stored text, byte for byte")
        }

        runner.scenario("adding an existing id is a no-op") { c in
            let (_, store) = try fresh()
            let m = Fixtures.message(1)
            _ = try store.add([m])
            var changed = m
            changed.body = "other"
            let again = try store.add([changed, Fixtures.message(2)])
            c.expectEqual(again.map(\.inserted), [false, true], "inserted flags")
            c.expectEqual(again.first?.message, m, "result for the existing id")
            c.expectEqual(try store.get(m.id)?.message, m, "stored record")
            c.expectEqual(try store.get(m.id)?.json, EncodedMessage(m).json, "stored text, byte for byte")
            c.expectEqual(try store.count(Query()), 2, "count")
        }

        runner.scenario("duplicate ids within one batch are stored once") { c in
            let (_, store) = try fresh()
            let r = try store.add([Fixtures.message(7), Fixtures.message(7)])
            c.expectEqual(r.map(\.inserted), [true, false], "inserted flags")
            c.expectEqual(try store.count(Query()), 1, "count")
        }

        runner.scenario("fifo order is created_at then id") { c in
            let (_, store) = try fresh()
            let ms = [Fixtures.message(3, createdOffset: 10), Fixtures.message(2, createdOffset: 0),
                      Fixtures.message(1, createdOffset: 10), Fixtures.message(4, createdOffset: -5)]
            _ = try store.add(ms)
            var ids: [String] = []
            try store.list(Query()) { r in ids.append(r.message.id); return true }
            c.expectEqual(ids, [ms[3].id, ms[1].id, ms[2].id, ms[0].id], "order")
            var first: [String] = []
            try store.list(Query()) { r in first.append(r.message.id); return false }
            c.expectEqual(first, [ms[3].id], "stopping after the first")
        }

        runner.scenario("filters and count agree") { c in
            let (_, store) = try fresh()
            var a = Fixtures.message(1, to: "ann", createdOffset: 0)
            let b = Fixtures.message(2, to: "bob", createdOffset: 1000)
            var d = Fixtures.message(3, to: "bob", createdOffset: 2000)
            a.status = .held
            d.status = .failed
            d.nextAttemptAt = Fixtures.t0.adding(.seconds(60))
            _ = try store.add([a, b, d])
            func ids(_ q: Query) throws -> [String] {
                var r: [String] = []
                try store.list(q) { x in r.append(x.message.id); return true }
                return r
            }
            let cases: [(Query, [String])] = [
                (Query(statuses: [.held]), [a.id]),
                (Query(statuses: [.queued, .failed]), [b.id, d.id]),
                (Query(to: "bob"), [b.id, d.id]),
                (Query(since: Fixtures.t0.adding(.seconds(1))), [b.id, d.id]),
                (Query(until: Fixtures.t0.adding(.seconds(1))), [a.id]),
                (Query(limit: 2), [a.id, b.id]),
                (Query(dueBy: Fixtures.t0.adding(.seconds(10))), [a.id, b.id]),
                (Query(ids: [d.id, a.id]), [a.id, d.id]),
                // Statuses a store may keep apart (waiting and parked), merged in FIFO order.
                (Query(statuses: [.held, .failed]), [a.id, d.id]),
                (Query(statuses: [.failed, .held, .queued]), [a.id, b.id, d.id]),
                (Query(statuses: [.held, .queued], limit: 1), [a.id]),
                (Query(statuses: [.dead, .held, .sent]), [a.id]),
            ]
            for (q, expected) in cases {
                c.expectEqual(try ids(q), expected, "list \(q)")
                c.expectEqual(try store.count(q), expected.count, "count \(q)")
            }
        }

        runner.scenario("update is compare-and-set on status") { c in
            let (_, store) = try fresh()
            let m = Fixtures.message(1)
            _ = try store.add([m])
            var sending = m
            try sending.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            c.expectEqual(try store.update([Change(sending, expected: .failed)]), [false], "wrong expected status")
            c.expectEqual(try store.get(m.id)?.message.status, .queued, "status after refused change")
            c.expectEqual(try store.update([Change(sending, expected: .queued), Change(Fixtures.message(9), expected: .queued)]),
                          [true, false], "applied flags")
            c.expectEqual(try store.get(m.id)?.message, sending, "record after change")
            c.expectEqual(try store.update([Change(sending, expected: .queued)]), [false], "second identical change")
        }

        runner.scenario("remove honours statuses") { c in
            let (_, store) = try fresh()
            _ = try store.add([Fixtures.message(1), Fixtures.message(2)])
            let r = try store.remove([Removal(id: Fixtures.message(1).id, statuses: [.sent]),
                                      Removal(id: Fixtures.message(2).id), Removal(id: Fixtures.message(3).id)])
            c.expectEqual(r, [false, true, false], "removed flags")
            c.expectEqual(try store.count(Query()), 1, "count")
        }

        runner.scenario("claims never hand out one message twice") { c in
            let (url, store) = try fresh()
            _ = try store.add((0..<10).map { Fixtures.message($0, createdOffset: Int64($0)) })
            let other = try open(url)
            func take(_ s: any Store, _ n: Int) throws -> [Message] {
                let claimed = try s.claim(Query(statuses: [.queued]), limit: n) { (m) throws(MsgError) -> Message? in
                    var x = m
                    try x.transition(to: .sending, event: "attempt", at: Fixtures.t0)
                    x.lease = .init(host: "h", pid: 1, until: Fixtures.t0.adding(.seconds(30)))
                    return x
                }
                for r in claimed {
                    c.expectEqual(r, EncodedMessage(r.message), "the text returned is the record's canonical text")
                    c.expectEqual(try s.get(r.message.id), r, "the record returned is the one stored, text and all")
                }
                return claimed.map(\.message)
            }
            let first = try take(store, 4)
            let second = try take(other, 4)
            let third = try take(store, 4)
            c.expectEqual(first.map(\.id), (0..<4).map { Fixtures.message($0).id }, "first claim (fifo)")
            c.expectEqual(second.map(\.id), (4..<8).map { Fixtures.message($0).id }, "second claim, other handle")
            c.expectEqual(third.count, 2, "third claim size")
            c.expectEqual(try store.count(Query(statuses: [.sending])), 10, "all sending")
            c.expect(try other.get(first[0].id)?.message.lease != nil, "lease stored")
        }

        runner.scenario("an expired lease can be taken over, a live one cannot") { c in
            let (_, store) = try fresh()
            var m = Fixtures.message(1)
            try m.transition(to: .sending, event: "attempt", at: Fixtures.t0)
            m.lease = .init(host: "h", pid: 1, until: Fixtures.t0.adding(.seconds(30)))
            _ = try store.add([m])
            let early = try store.claim(Query(statuses: [.sending], leaseEndedBy: Fixtures.t0.adding(.seconds(10))), limit: 5) { $0 }
            c.expectEqual(early.count, 0, "claim while the lease is live")
            let late = try store.claim(Query(statuses: [.sending], leaseEndedBy: Fixtures.t0.adding(.seconds(31))), limit: 5) { $0 }
            c.expectEqual(late.map(\.message.id), [m.id], "claim after the lease ended")
        }

        runner.scenario("a failing transform stores nothing") { c in
            let (_, store) = try fresh()
            _ = try store.add([Fixtures.message(1), Fixtures.message(2)])
            do {
                _ = try store.claim(Query(), limit: 5) { (m) throws(MsgError) -> Message? in
                    if m.id == Fixtures.message(2).id { throw MsgError(.badInput, "boom") }
                    var x = m
                    x.body = "changed"
                    return x
                }
                c.expect(false, "the transform's error was not thrown")
            } catch let e as MsgError {
                c.expectEqual(e.code, .badInput, "error code")
            }
            c.expectEqual(try store.get(Fixtures.message(1).id)?.message.body, Fixtures.message(1).body, "first record unchanged")
        }

        runner.scenario("changes are visible to a store opened later") { c in
            let (url, store) = try fresh()
            _ = try store.add((0..<50).map { Fixtures.message($0) })
            var m = Fixtures.message(3)
            try m.transition(to: .held, event: "held", at: Fixtures.t0)
            _ = try store.update([Change(m, expected: .queued)])
            _ = try store.remove([Removal(id: Fixtures.message(4).id)])
            let reopened = try open(url)
            c.expectEqual(try reopened.count(Query()), 49, "count after reopen")
            c.expectEqual(try reopened.get(m.id)?.message, m, "changed record after reopen")
            c.expectEqual(try reopened.get(Fixtures.message(4).id), nil, "removed record after reopen")
        }

        runner.scenario("many small commits, then compaction, keep every record") { c in
            let (url, store) = try fresh()
            _ = try store.add((0..<20).map { Fixtures.message($0) })
            for round in 0..<10 {
                for i in 0..<20 {
                    var m = try store.get(Fixtures.message(i).id)?.message ?? Fixtures.message(i)
                    m.body = "round \(round)"
                    _ = try store.update([Change(m, expected: .queued)])
                }
            }
            let reopened = try open(url)
            c.expectEqual(try reopened.count(Query()), 20, "count")
            c.expectEqual(try reopened.get(Fixtures.message(5).id)?.message.body, "round 9", "last change kept")
        }

        claimScenarios(&runner, fresh: fresh, open: open)
        skippingScenarios(&runner, fresh: fresh)
        countScenarios(&runner, fresh: fresh)
        ageScenarios(&runner, fresh: fresh)
        floorScenarios(&runner, fresh: fresh, open: open)
        largeScenarios(&runner, fresh: fresh)
        ledgerScenarios(&runner, fresh: fresh)
        if !runner.failures.isEmpty { throw ConformanceFailures(failures: runner.failures) }
    }
}
