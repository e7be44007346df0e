import MsgKit
import NIOCore
import NIOEmbedded
@testable import SMTPTransport
import Testing

/// The dense parts of smtp:// alone: reading replies, dot-stuffing, envelopes and URLs.
@Suite struct SMTPUnitTests {
    /// Feeds `chunks` to the decoder, as the network may cut them, and returns the replies.
    func replies(_ chunks: [String]) throws -> [SMTPReply] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(SMTPReplyDecoder()))
        for chunk in chunks { try channel.writeInbound(channel.allocator.buffer(string: chunk)) }
        var out: [SMTPReply] = []
        while let reply = try channel.readInbound(as: SMTPReply.self) { out.append(reply) }
        return out
    }

    @Test func repliesAreReadWholeWhereverTheyAreCut() throws {
        let got = try replies(["220 mx.example ESMTP\r\n250-mx.exa", "mple\r\n250-PIPELINING\r\n250-SIZE 10240000\r", "\n250 SMTPUTF8\r\n",
                               "550 5.1.1 <a@b>: Recipient address rejected\n", "354\r\n"])
        #expect(got == [
            SMTPReply(code: 220, lines: ["mx.example ESMTP"]),
            SMTPReply(code: 250, lines: ["mx.example", "PIPELINING", "SIZE 10240000", "SMTPUTF8"]),
            SMTPReply(code: 550, lines: ["5.1.1 <a@b>: Recipient address rejected"]),
            SMTPReply(code: 354, lines: [""]),
        ])
        #expect(got[2].shown == "550 5.1.1 <a@b>: Recipient address rejected")
        #expect(got[2].isTransient == false && SMTPReply(code: 451, lines: []).isTransient)
    }

    @Test func whatIsNotSMTPIsAnError() throws {
        for bad in ["HTTP/1.1 400 Bad Request\r\n", "25 short\r\n", "250x no separator\r\n", String(repeating: "2", count: 3000)] {
            #expect(throws: SMTPProtocolError.self, "\(bad.prefix(20))") { _ = try replies([bad]) }
        }
    }

    @Test func linesThatStartWithADotGetOneMore() {
        let text = ".first\r\nmiddle\r\n..two\r\n.\r\nlast"
        #expect(String(decoding: SMTPConnection.dotStuffed(Array(text.utf8)), as: UTF8.self)
                == "..first\r\nmiddle\r\n...two\r\n..\r\nlast\r\n")
        #expect(SMTPConnection.dotStuffed(Array("a\r\n".utf8)) == Array("a\r\n".utf8))
    }

    @Test func envelopesTakeTheAddressAndRefuseWhatWouldBreakACommand() throws {
        #expect(try SMTPSettings.envelope("Ann Example <ann@example.com>", what: "to") == "ann@example.com")
        #expect(try SMTPSettings.envelope("  bob@example.com ", what: "to") == "bob@example.com")
        #expect(try SMTPSettings.envelope("jörg@example.com", what: "to") == "jörg@example.com")
        for bad in ["", "a b@example.com", "<>", "a@example.com>\r\nRCPT TO:<x@y", "x\u{7F}@y"] {
            #expect(throws: MsgError(.rejected, ""), "\(bad)") { try SMTPSettings.envelope(bad, what: "to", code: .rejected) }
        }
    }

    @Test func urls() throws {
        let s = try SMTPSettings(PluginURL("smtp://mail.example.com?from=a@example.com&concurrency=4&helo=me.example"))
        #expect(s.port == 25 && s.security == .startTLS && s.concurrency == 4 && s.helo == "me.example" && s.from == "a@example.com")
        let implicit = try SMTPSettings(PluginURL("smtps://[::1]"))
        #expect(implicit.port == 465 && implicit.security == .implicit && implicit.display == "smtps://[::1]:465")
        #expect(try SMTPSettings(PluginURL("smtp://127.0.0.1:2525?tls=none")).security == SMTPSettings.Security.none)
        for bad in ["smtp://", "smtp://h:0", "smtp://h:25?tls=maybe", "smtps://h?tls=none", "smtp://h?concurrency=0",
                    "smtp://h?user=ann", "smtp://h?nope=1", "smtp://h?helo=a%20b", "smtp://h?from=a%20b@c"] {
            #expect(throws: MsgError(.config, ""), "\(bad)") { try SMTPSettings(PluginURL(bad)) }
        }
    }
}
