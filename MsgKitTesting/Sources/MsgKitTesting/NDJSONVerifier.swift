import MsgKit
import MsgSupport

/// Feeds a byte stream to a ``LineSplitter`` whole, byte by byte, and in random
/// chunks, and checks that every way gives the same events (as SwiftNIO's
/// `ByteToMessageDecoderVerifier` does for decoders).
public enum NDJSONVerifier {
    /// A chunking that gave other events than the whole input.
    public struct Mismatch: Error, Sendable, CustomStringConvertible {
        /// How the input was cut (`byte by byte`, `random chunks, seed 3`).
        public let scenario: String
        /// The input, as text with escapes.
        public let input: String
        /// The events expected (from the whole input) and those seen.
        public let expected: [LineSplitter.Event], actual: [LineSplitter.Event]
        public var description: String { "\(scenario): input \(input) gave \(actual), expected \(expected)" }
    }

    /// Returns the events of `input` after checking all chunkings agree.
    /// - Throws: ``Mismatch`` naming the chunking that differs.
    public static func verify(_ input: [UInt8], maxLineLength: Int = LineSplitter.defaultMaxLineLength, seeds: Range<UInt64> = 0..<8) throws -> [LineSplitter.Event] {
        let whole = events(input, chunks: [input.count], maxLineLength: maxLineLength)
        var scenarios: [(String, [Int])] = [("byte by byte", Array(repeating: 1, count: input.count))]
        for seed in seeds {
            var rng = SplitMix64(seed: seed)
            var sizes: [Int] = []
            var left = input.count
            while left > 0 {
                let n = min(left, Int(rng.next() % 17) + 1)
                sizes.append(n)
                left -= n
            }
            scenarios.append(("random chunks, seed \(seed)", sizes))
        }
        for (name, sizes) in scenarios {
            let got = events(input, chunks: sizes, maxLineLength: maxLineLength)
            if got != whole {
                throw Mismatch(scenario: name, input: String(decoding: input, as: UTF8.self).debugDescription, expected: whole, actual: got)
            }
        }
        return whole
    }

    private static func events(_ input: [UInt8], chunks: [Int], maxLineLength: Int) -> [LineSplitter.Event] {
        var splitter = LineSplitter(maxLineLength: maxLineLength)
        var out: [LineSplitter.Event] = []
        var start = 0
        for size in chunks where size > 0 {
            splitter.feed(Array(input[start..<start + size])) { out.append($0) }
            start += size
        }
        splitter.finish { out.append($0) }
        return out
    }
}
