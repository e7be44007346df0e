import Dispatch
import MsgKit
import MsgSupport

/// The ledger page's check: `msg ledger verify`, run on a handle of its own on a
/// thread of its own when asked, its last result kept.
struct LedgerVerification: Sendable {
    var running = false
    var started: Timestamp?
    var finished: Timestamp?
    /// The report's line, or what went wrong.
    var result: String?
    var whole = false
}

extension Dashboard {
    func ledger(verifyNow: Bool) throws(MsgError) -> WebResponse {
        if verifyNow, let open = openAnother { startVerification(open) }
        let size = try withStore { (s) throws(MsgError) -> Int? in
            try Self.ledgerSize(s)
        }
        let v = verification.withLock { $0 }
        return page(title: "msg: ledger") { h in
            h.tag("<h1>Ledger</h1><table class=\"facts\"><tbody>")
            guard let size else {
                h.tag("</tbody></table><p>This store keeps no ledger (the sqlite:, json: and postgres: stores do).</p>")
                return
            }
            Self.fact(&h, "size", "\(size) leaves")
            if let last = options.checkpoints.last {
                Self.fact(&h, "last checkpoint", "\(last.size) leaves, signed \(last.time) by key \(last.keyID)")
            } else {
                Self.fact(&h, "last checkpoint", "none given (msg web --checkpoint FILE --pubkey FILE.pub)")
            }
            Self.fact(&h, "checkpoints given", String(options.checkpoints.count))
            if v.running {
                Self.fact(&h, "verify", "running since \(v.started?.description ?? "")")
            } else if let result = v.result {
                Self.fact(&h, "verify", (v.whole ? "whole: " : "NOT whole: ") + result + " (at \(v.finished?.description ?? ""))")
            } else {
                Self.fact(&h, "verify", "not run yet")
            }
            h.tag("</tbody></table>")
            if !v.running { h.tag("<p><a class=\"button\" href=\"/ledger?verify=1\">Verify now</a> (reads every message; msg ledger verify)</p>") }
        }
    }

    /// The number of leaves in the store's ledger, or nil when it keeps none.
    static func ledgerSize(_ s: any Store) throws(MsgError) -> Int? {
        try s.capabilities.journal.map { (l) throws(MsgError) in try l.ledgerRead { () throws(MsgError) in try l.ledgerSize() } }
    }

    private func startVerification(_ open: @escaping @Sendable () throws(MsgError) -> any Store) {
        let begin = verification.withLock { v -> Bool in
            guard !v.running else { return false }
            (v.running, v.started) = (true, .now())
            return true
        }
        guard begin else { return }
        let checkpoints = options.checkpoints
        DispatchQueue.global().async { [self] in
            var (line, whole) = ("", false)
            do throws(MsgError) {
                let store = try open()
                guard let ledger = store.capabilities.journal else { throw MsgError(.config, "this store keeps no ledger") }
                let report = try LedgerAudit(store: ledger).verify(checkpoints: checkpoints)
                whole = report.isWhole
                line = whole ? report.line : LedgerFinding.lines(report.findings, limit: 5).joined(separator: "; ")
            } catch {
                line = error.message
            }
            verification.withLock { v in (v.running, v.finished, v.result, v.whole) = (false, .now(), line, whole) }
        }
    }
}
