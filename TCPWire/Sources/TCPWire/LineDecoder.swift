import NIOCore

/// One line off the wire, without its newline.
enum WireLine {
    case line(ByteBuffer)
    /// A line longer than the limit, dropped as it arrived; its length in bytes.
    case tooLong(Int)
}

/// Splits the byte stream into lines of at most `maxBytes`, holding at most
/// `maxBytes` plus one read of input however long a line is: the bytes of an
/// overlong line are dropped as they come, and the line is reported when its
/// newline arrives. An unterminated last line is dropped: a record counts only
/// once its newline is in (a client killed mid-line delivers nothing).
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = WireLine

    let maxBytes: Int
    /// Bytes already dropped of the current overlong line; 0 when none.
    private var dropped = 0
    /// How far the buffer was already searched for a newline.
    private var searched = 0

    init(maxBytes: Int) { self.maxBytes = maxBytes }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view[(view.startIndex + searched)...].firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maxBytes {
                dropped += buffer.readableBytes
                buffer.moveReaderIndex(to: buffer.writerIndex)
                searched = 0
            } else {
                searched = buffer.readableBytes
            }
            return .needMoreData
        }
        let length = newline - view.startIndex
        searched = 0
        if dropped > 0 || length > maxBytes {
            buffer.moveReaderIndex(forwardBy: length + 1)
            let total = dropped + length
            dropped = 0
            context.fireChannelRead(wrapInboundOut(.tooLong(total)))
            return .continue
        }
        let line = buffer.readSlice(length: length) ?? ByteBuffer()
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(.line(line)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}
