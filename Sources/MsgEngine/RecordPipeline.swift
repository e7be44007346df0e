import MsgKit

/// The loop shared by `compose` (drafts on stdin) and `queue add`: read lines,
/// turn each into a record, store each batch in one durable commit, then echo it.
///
/// Records are echoed only after their batch is committed ("durable before
/// acknowledged"). A batch is whatever input has already arrived, so a large
/// stream goes in large commits while a line typed by hand is stored and echoed
/// at once. Bad lines are reported as `msg: line N: …` and, with `--on-error skip`,
/// the stream goes on; with `abort`, the whole input is checked first and nothing
/// is stored if any line is bad.
public struct RecordPipeline {
    /// Turns one input line's JSON into a record.
    public typealias Decode = (JSONValue) throws(MsgError) -> Message

    private let decode: Decode
    private let store: (any Store)?
    private let writer: NDJSONWriter
    private let onError: OnError

    /// A pipeline storing into `store` (nil: only echo, as plain `compose`).
    public init(decode: @escaping Decode, store: (any Store)?, writer: NDJSONWriter = NDJSONWriter(), onError: OnError = .skip) {
        self.decode = decode
        self.store = store
        self.writer = writer
        self.onError = onError
    }

    /// What a run did.
    public struct Summary: Sendable, Equatable {
        /// Records echoed (stored, when there is a store).
        public var records = 0
        /// Of those, how many were already stored under their id.
        public var duplicates = 0
        /// Bad lines reported.
        public var badLines = 0
        /// The exit status: 0, or 65 when any line was bad.
        public var exitCode: Int32 { badLines > 0 ? 65 : 0 }
    }

    /// Runs over `reader` to its end.
    /// - Throws: `storeIO` and the like when the store fails; records echoed
    ///   before that are stored, the failed batch is not.
    public func run(_ reader: inout NDJSONReader, progress: Progress? = nil) throws(MsgError) -> Summary {
        var summary = Summary()
        if onError == .abort {
            var all: [Message] = []
            while let lines = try reader.nextBatch() {
                for line in lines {
                    switch parse(line) {
                    case .success(let m): all.append(m)
                    case .failure(let e):
                        Diagnostics.badLine(line.number, e)
                        Diagnostics.say("stopped at line \(line.number) (--on-error abort): nothing was stored")
                        summary.badLines += 1
                        return summary
                    }
                }
            }
            try commitAndEcho(all, &summary)
            return summary
        }
        while let lines = try reader.nextBatch() {
            var batch: [Message] = []
            batch.reserveCapacity(lines.count)
            for line in lines {
                switch parse(line) {
                case .success(let m): batch.append(m)
                case .failure(let e):
                    Diagnostics.badLine(line.number, e)
                    summary.badLines += 1
                }
            }
            try commitAndEcho(batch, &summary)
            progress?.update(summary.records)
        }
        try writer.finish()
        progress?.finish()
        return summary
    }

    private func parse(_ line: NDJSONReader.Line) -> Result<Message, MsgError> {
        line.json().flatMap { value in
            do throws(MsgError) { return .success(try decode(value)) } catch { return .failure(error) }
        }
    }

    private func commitAndEcho(_ batch: [Message], _ summary: inout Summary) throws(MsgError) {
        guard !batch.isEmpty else { return }
        let echoed: [Message]
        if let store {
            let results = try store.add(batch)
            summary.duplicates += results.reduce(0) { $0 + ($1.inserted ? 0 : 1) }
            echoed = results.map(\.message)
        } else {
            echoed = batch
        }
        let previous = writer.flushEveryLine
        writer.flushEveryLine = false
        defer { writer.flushEveryLine = previous }
        for m in echoed { try writer.write(m) }
        // The whole batch is acknowledged at once: it was committed at once.
        try writer.finish()
        summary.records += echoed.count
    }
}
