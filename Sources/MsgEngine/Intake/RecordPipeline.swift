import Dispatch
import MsgKit
import Synchronization

/// The loop shared by `compose` (drafts on stdin) and `queue add`: read lines,
/// turn each into a record, store each batch in one durable commit, then echo it.
///
/// Records are echoed only after their batch is committed ("durable before
/// acknowledged"). A batch is whatever input has already arrived, so a large
/// stream goes in large commits while a line typed by hand is stored and echoed
/// at once. Bad lines are reported as `msg: line N: …` and, with `--on-error skip`,
/// the stream goes on; with `abort`, the whole input is checked first and nothing
/// is stored if any line is bad.
///
/// Reading and decoding run on a second thread, one batch ahead of the thread that
/// commits and echoes: on two cores, parsing the next batch overlaps the store's
/// commit of this one. Echoes still follow their own batch's commit.
public struct RecordPipeline {
    /// Turns one input line's bytes into a record.
    public typealias Decode = @Sendable ([UInt8]) throws(MsgError) -> Message

    private let decode: Decode
    private let store: (any Store)?
    private let writer: NDJSONWriter
    private let onError: OnError
    private let reporter: Reporter

    /// A pipeline storing into `store` (nil: only echo, as plain `compose`), echoing
    /// to `writer` and reporting bad lines to `reporter`.
    public init(decode: @escaping Decode, store: (any Store)?, writer: NDJSONWriter, onError: OnError = .skip,
                reporter: Reporter) {
        self.decode = decode
        self.store = store
        self.writer = writer
        self.onError = onError
        self.reporter = reporter
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
        let stores = store != nil
        if onError == .abort {
            var all: [EncodedMessage] = []
            while let lines = try reader.nextBatch() {
                for line in lines {
                    switch Self.parse(line, decode).flatMap({ Self.encode($0, store: stores) }) {
                    case .success(let r): all.append(r)
                    case .failure(let e):
                        reporter.badLine(line.number, e)
                        reporter.say("stopped at line \(line.number) (--on-error abort): nothing was stored")
                        summary.badLines += 1
                        return summary
                    }
                }
            }
            try commitAndEcho(all, &summary)
            try writer.finish()
            return summary
        }
        let channel = Channel<Parsed>(capacity: 2)
        let stop = Atomic<Bool>(false)
        let decode = self.decode
        let producerReader = reader
        DispatchQueue(label: "msg.reader").async {
            var reader = producerReader
            do throws(MsgError) {
                while !stop.load(ordering: .relaxed), let lines = try reader.nextBatch() {
                    var messages: [EncodedMessage] = []
                    var bad: [(Int, MsgError)] = []
                    messages.reserveCapacity(lines.count)
                    for line in lines {
                        switch Self.parse(line, decode).flatMap({ Self.encode($0, store: stores) }) {
                        case .success(let r): messages.append(r)
                        case .failure(let e): bad.append((line.number, e))
                        }
                    }
                    channel.send(.batch(messages: messages, bad: bad))
                }
                channel.send(.end)
            } catch {
                channel.send(.failed(error))
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            channel.close()
        }
        loop: while true {
            switch channel.receive() {
            case .batch(let batch, let bad):
                for (number, error) in bad { reporter.badLine(number, error) }
                summary.badLines += bad.count
                try commitAndEcho(batch, &summary)
                progress?.update(summary.records)
            case .end:
                break loop
            case .failed(let error):
                throw error
            }
        }
        try writer.finish()
        progress?.finish()
        return summary
    }

    /// What the reading thread hands over.
    private enum Parsed: Sendable {
        case batch(messages: [EncodedMessage], bad: [(Int, MsgError)])
        case end
        case failed(MsgError)
    }

    /// Encodes a record, refusing one over ``RecordLimits/maxRecordBytes``: every
    /// record msg accepts is one its transports deliver.
    /// With `store`, the ledger's leaf is made here too (on the reading thread, not
    /// before the commit); only echoed, nothing is hashed.
    static func encode(_ m: Message, store: Bool) -> Result<EncodedMessage, MsgError> {
        let r = store ? EncodedMessage(m, preparingLedger: true) : EncodedMessage(m)
        return r.json.count > RecordLimits.maxRecordBytes ? .failure(RecordLimits.tooLarge(r.json.count)) : .success(r)
    }

    private static func parse(_ line: NDJSONReader.Line, _ decode: Decode) -> Result<Message, MsgError> {
        line.bytes.flatMap { bytes in
            do throws(MsgError) { return .success(try decode(bytes)) } catch { return .failure(error) }
        }
    }

    private func commitAndEcho(_ batch: [EncodedMessage], _ summary: inout Summary) throws(MsgError) {
        guard !batch.isEmpty else { return }
        let previous = writer.flushEveryLine
        writer.flushEveryLine = false
        defer { writer.flushEveryLine = previous }
        if let store {
            let results = try store.add(batch)
            for (record, result) in zip(batch, results) {
                if result.inserted {
                    try writer.writeRaw(record.json)
                } else {
                    summary.duplicates += 1
                    try writer.write(result.message)
                }
            }
        } else {
            for record in batch { try writer.writeRaw(record.json) }
        }
        // The whole batch is acknowledged at once: it was committed at once.
        try writer.finish()
        summary.records += batch.count
    }
}
