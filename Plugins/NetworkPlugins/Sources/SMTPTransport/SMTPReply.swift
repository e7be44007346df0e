import NIOCore

/// One reply of an SMTP server (RFC 5321 4.2): its code and its lines, the
/// enhanced status code (RFC 3463, `5.1.1`) kept in the text.
struct SMTPReply: Sendable, Equatable {
    var code: Int
    var lines: [String]
    /// More bytes had arrived behind it, not yet read as a reply: after the 220 to
    /// STARTTLS that is text injected in clear (RFC 3207 4.2; CVE-2011-0411's class).
    /// Not part of what the reply says (two equal replies may be cut differently).
    var trailing = false

    static func == (a: SMTPReply, b: SMTPReply) -> Bool { a.code == b.code && a.lines == b.lines }

    /// The lines in one, for what msg says and keeps.
    var text: String { lines.joined(separator: " / ") }

    /// `550 5.1.1 no such user`: as a person reads it, cut at 300 characters.
    var shown: String {
        let whole = "\(code) \(text)"
        return whole.count > 300 ? String(whole.prefix(300)) + "…" : whole
    }

    /// 2xx: done (RFC 5321 4.2.1).
    var isCompletion: Bool { (200..<300).contains(code) }
    var isTransient: Bool { (400..<500).contains(code) }
}

/// Reads replies off the wire: lines ending CRLF (a bare LF is taken too), `250-`
/// continuing a reply and `250 ` ending it. A line over 2,048 octets or a reply of
/// over 200 lines is an error: a server that sends that is not answering.
struct SMTPReplyDecoder: ByteToMessageDecoder {
    typealias InboundOut = SMTPReply

    private var lines: [String] = []

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: 0x0A) else {
            if buffer.readableBytes > 2048 { throw SMTPProtocolError("a reply line over 2048 octets") }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        guard var line = buffer.readString(length: length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 1)
        if line.hasSuffix("\r") { line.removeLast() }
        let bytes = Array(line.utf8)
        guard bytes.count >= 3, bytes[0...2].allSatisfy({ (0x30...0x39).contains($0) }),
              bytes.count == 3 || bytes[3] == 0x20 || bytes[3] == 0x2D, let code = Int(String(line.prefix(3))) else {
            throw SMTPProtocolError("a reply that is not SMTP: '\(line.prefix(80))'")
        }
        lines.append(bytes.count > 4 ? String(line.dropFirst(4)) : "")
        if lines.count > 200 { throw SMTPProtocolError("a reply of over 200 lines") }
        if bytes.count > 3 && bytes[3] == 0x2D { return .continue }
        var reply = SMTPReply(code: code, lines: lines)
        reply.trailing = buffer.readableBytes > 0
        lines = []
        context.fireChannelRead(wrapInboundOut(reply))
        return .continue
    }
}

/// A server that does not speak SMTP as it should.
struct SMTPProtocolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
