extension EncodedMessage {
    /// The record as a destination receives it (``Message/writeDelivered(to:)``),
    /// cut from ``json`` by ``RecordLayout/delivered(_:historyOffset:)``: the stored
    /// text with `status` made `delivered` and the `lease` and `history` members left
    /// out. A transport writes these bytes, so the body is not encoded again. Text it
    /// cannot cut (edited by hand) is encoded from ``message`` instead; the result is
    /// the same.
    public var deliveredJSON: [UInt8] {
        if let cut = json.withUnsafeBufferPointer({ RecordLayout.delivered($0, historyOffset: historyOffset) }) { return cut }
        var w = JSONWriter(capacity: json.count)
        message.writeDelivered(to: &w)
        return w.bytes
    }
}
