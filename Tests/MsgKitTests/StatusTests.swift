import MsgKit
import Testing

@Suite struct StatusTests {
    /// The whole from/to table, written out: 1 allowed, 0 refused.
    /// Columns and rows: queued held sending failed sent delivered read dead.
    static let table: [Status: [Int]] = [
        .queued:    [0, 1, 1, 0, 1, 1, 1, 1],
        .held:      [1, 0, 0, 1, 0, 0, 0, 0],
        .sending:   [1, 0, 0, 1, 1, 1, 1, 1],
        .failed:    [0, 1, 1, 0, 1, 1, 1, 1],
        .sent:      [0, 0, 0, 0, 0, 1, 1, 0],
        .delivered: [0, 0, 0, 0, 0, 0, 1, 0],
        .read:      [0, 0, 0, 0, 0, 0, 0, 0],
        .dead:      [1, 0, 0, 0, 0, 0, 0, 0],
    ]
    static let order: [Status] = [.queued, .held, .sending, .failed, .sent, .delivered, .read, .dead]

    @Test(arguments: Status.allCases, Status.allCases)
    func transition(from: Status, to: Status) throws {
        let expected = Self.table[from]![Self.order.firstIndex(of: to)!] == 1
        #expect(from.canChange(to: to) == expected, "\(from) -> \(to)")
        var m = Message(id: "01890a5d-ac96-774b-bcce-b302099a8057", to: "a", body: "b", now: Timestamp(milliseconds: 0))
        m.status = from
        let before = m
        if expected {
            try m.transition(to: to, event: "x", at: Timestamp(milliseconds: 5))
            #expect(m.status == to && m.history.count == 2 && m.updatedAt.milliseconds == 5)
        } else {
            #expect(throws: MsgError(.invalidTransition, "")) { try m.transition(to: to, event: "x", at: Timestamp(milliseconds: 5)) }
            #expect(m == before, "a refused change leaves the message untouched")
        }
    }

    @Test func parsesLists() throws {
        #expect(try Status.parseList("failed, dead") == [.failed, .dead])
        #expect(throws: MsgError(.badInput, "")) { try Status.parseList("queued,nope") }
    }
}

@Suite struct MsgErrorTests {
    @Test func exitCodesComeFromOneTable() {
        let expected: [MsgError.Code: Int32] = [
            .usage: 64, .badInput: 65, .invalidTransition: 65, .notFound: 65, .unavailable: 69, .storeIO: 74,
            .corrupt: 74, .config: 78, .timeout: 75, .unreachable: 75, .rateLimited: 75, .remote: 75, .rejected: 1,
            .noPermission: 77,
        ]
        #expect(MsgError.Code.all.count == expected.count)
        for code in MsgError.Code.all {
            #expect(code.exitCode == expected[code], "\(code)")
            #expect(MsgError.Code(name: code.name) == code)
        }
        #expect(MsgError.Code.timeout.isRetryable && !MsgError.Code.rejected.isRetryable)
        // The five a transport reports; a permission is not one of them.
        #expect(MsgError.Code.all.filter(\.isDeliveryClass) == [.timeout, .unreachable, .rateLimited, .remote, .rejected])
        #expect(MsgError(.storeIO, "a") == MsgError(.storeIO, "b"))
        #expect(MsgError(.storeIO, "a") != MsgError(.corrupt, "a"))
    }
}
