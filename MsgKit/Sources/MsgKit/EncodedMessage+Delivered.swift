extension EncodedMessage {
    /// The record as a destination receives it (``Message/writeDelivered(to:)``),
    /// cut from ``json``: the stored text with `status` made `delivered` and the
    /// `lease` and `history` members left out. A transport writes these bytes, so
    /// the body is not encoded again. Text it cannot cut with certainty (edited by
    /// hand) is encoded from ``message`` instead; the result is the same.
    public var deliveredJSON: [UInt8] {
        if let cut = json.withUnsafeBufferPointer({ DeliveredCut.find(in: $0, end: historyOffset, hasLease: message.lease != nil) }) {
            var out: [UInt8] = []
            out.reserveCapacity(historyOffset + 12)
            out.append(contentsOf: json[..<cut.status.lowerBound])
            out.append(contentsOf: DeliveredCut.delivered)
            if let lease = cut.lease {
                out.append(contentsOf: json[cut.status.upperBound..<lease.lowerBound])
                out.append(contentsOf: json[lease.upperBound..<historyOffset])
            } else {
                out.append(contentsOf: json[cut.status.upperBound..<historyOffset])
            }
            out.append(UInt8(ascii: "}"))
            return out
        }
        var w = JSONWriter(capacity: json.count)
        message.writeDelivered(to: &w)
        return w.bytes
    }
}

/// Finds the top-level `status` value and `lease` member of compact record text.
private enum DeliveredCut {
    static let delivered = Array(#""delivered""#.utf8)
    private static let statusKey = Array("status".utf8)
    private static let leaseKey = Array("lease".utf8)

    /// The `status` value and the `lease` member with its leading comma, in
    /// `b[..<end]` (the record up to its history); nil on anything unexpected.
    static func find(in b: UnsafeBufferPointer<UInt8>, end: Int, hasLease: Bool) -> (status: Range<Int>, lease: Range<Int>?)? {
        guard end <= b.count, end > 1, b[0] == UInt8(ascii: "{") else { return nil }
        var status: Range<Int>?
        var lease: Range<Int>?
        var i = 1
        while i < end {
            let memberStart = i
            guard b[i] == UInt8(ascii: "\""), let keyEnd = stringEnd(b, i, end) else { return nil }
            let key = UnsafeBufferPointer(rebasing: b[(i + 1)..<(keyEnd - 1)])
            // A key spelled with escapes could be `status` in disguise.
            guard !key.contains(UInt8(ascii: "\\")) else { return nil }
            i = keyEnd
            guard i < end, b[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            guard let valueEnd = valueEnd(b, i, end) else { return nil }
            if key.elementsEqual(statusKey) {
                guard status == nil else { return nil }
                status = i..<valueEnd
            } else if key.elementsEqual(leaseKey) {
                // Never the first member (`id` is), so it has a comma before it.
                guard lease == nil, memberStart > 1 else { return nil }
                lease = (memberStart - 1)..<valueEnd
            }
            i = valueEnd
            if i == end { break }
            guard b[i] == UInt8(ascii: ",") else { return nil }
            i += 1
        }
        guard let status, (lease != nil) == hasLease else { return nil }
        return (status, lease)
    }

    /// The index just past the string starting at `i`.
    private static func stringEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int? {
        var i = start + 1
        while i < end {
            switch b[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        return nil
    }

    /// The index just past the value starting at `i` (compact text: no whitespace).
    private static func valueEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int? {
        guard start < end else { return nil }
        switch b[start] {
        case UInt8(ascii: "\""):
            return stringEnd(b, start, end)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < end {
                switch b[i] {
                case UInt8(ascii: "\""):
                    guard let e = stringEnd(b, i, end) else { return nil }
                    i = e
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return nil
        default:
            var i = start
            while i < end, b[i] != UInt8(ascii: ","), b[i] != UInt8(ascii: "}") {
                if b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { return nil }
                i += 1
            }
            return i
        }
    }
}
