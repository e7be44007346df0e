import Dispatch
import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import Synchronization

/// The `smtp://` and `smtps://` transport (msg-smtp(7)): each record as RFC 5322
/// mail (``MailText``, with `Message-ID: <ID@msg>`) to an SMTP server, the
/// envelope recipient its `to` and the sender its `from` or `from=`. Sessions are
/// kept and reused across messages and calls; `concurrency=` sessions send at once,
/// records of distinct destinations (the host never gives two of one destination
/// to one call then).
public final class SMTPTransport: Transport {
    private let settings: SMTPSettings
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// One session per lane, each used by one thread at a time: its own serial
    /// queue (a thread of its own while it waits for the server, so `concurrency=`
    /// sessions talk at once whatever the number of cores).
    private let lanes: [Lane]
    private let queues: [DispatchQueue]

    /// - Throws: `config` for a URL or a file that does not read.
    public init(url: PluginURL) throws(MsgError) {
        settings = try SMTPSettings(url)
        lanes = (0..<settings.concurrency).map { _ in Lane() }
        queues = (0..<settings.concurrency).map { DispatchQueue(label: "msg.smtp.lane\($0)") }
    }

    deinit {
        for lane in lanes { lane.close() }
        try? group.syncShutdownGracefully()
    }

    public var parallelism: Int { settings.concurrency }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        if records.isEmpty { return [] }
        let count = min(lanes.count, records.count)
        if count == 1 { return send(records[...], lane: lanes[0], deadline: deadline) }
        // Lane k takes records k, k + count, …: a call's records are of distinct
        // destinations, so any split keeps each destination's order.
        let outcomes = Mutex([DeliveryOutcome?](repeating: nil, count: records.count))
        let (lanes, settings, group) = (self.lanes, self.settings, self.group)
        let box = RecordsBox(records)
        let done = DispatchGroup()
        for k in 0..<count {
            queues[k].async(group: done) {
                let mine = stride(from: k, to: box.records.count, by: count).map { box.records[$0] }
                let got = Self.send(mine[...], lane: lanes[k], settings: settings, group: group, deadline: deadline)
                outcomes.withLock { all in
                    for (i, outcome) in zip(stride(from: k, to: box.records.count, by: count), got) { all[i] = outcome }
                }
            }
        }
        done.wait()
        return outcomes.withLock { $0.map { $0 ?? .failed(MsgError(.unreachable, "not sent"), retryAfter: nil) } }
    }

    private func send(_ records: ArraySlice<EncodedMessage>, lane: Lane, deadline: MsgDuration) -> [DeliveryOutcome] {
        Self.send(records, lane: lane, settings: settings, group: group, deadline: deadline)
    }

    /// The records one after another over `lane`'s session, made anew when there
    /// is none or it can take no more; when one cannot be made, the rest fail alike
    /// (a `config` failure stops the run, Transport requirement 4).
    private static func send(_ records: ArraySlice<EncodedMessage>, lane: Lane, settings: SMTPSettings, group: any EventLoopGroup,
                             deadline: MsgDuration) -> [DeliveryOutcome] {
        var outcomes: [DeliveryOutcome] = []
        outcomes.reserveCapacity(records.count)
        for record in records {
            let mail: Mail
            do throws(MsgError) { mail = try Mail(record.message, settings: settings) } catch {
                if error.code == .config { return outcomes + Array(repeating: .failed(error, retryAfter: nil), count: records.count - outcomes.count) }
                outcomes.append(.failed(error, retryAfter: nil))
                continue
            }
            let session: SMTPConnection
            // The attempt's deadline bounds it whole: a session made for it, and every step.
            let until = NIODeadline.now() + .milliseconds(deadline.milliseconds)
            do throws(MsgError) { session = try lane.session(settings, group: group, until: until) } catch {
                return outcomes + Array(repeating: .failed(error, retryAfter: nil), count: records.count - outcomes.count)
            }
            outcomes.append(session.send(from: mail.from, to: mail.to, data: mail.data, utf8: mail.utf8, deadline: deadline, until: until))
        }
        return outcomes
    }
}

/// One record as mail: its envelope and its text.
struct Mail {
    var from: String
    var to: String
    var data: [UInt8]
    /// Whether the mail needs SMTPUTF8 (RFC 6531): an address in the envelope or
    /// the header that is not ASCII (display names go as encoded words, the body as
    /// quoted-printable, so nothing else is).
    var utf8: Bool

    /// - Throws: `rejected` for a record that would not go as it is (MailText's
    ///   refusals, an address that is not one, no sender when the transport names
    ///   none): that message is dead with why, and the rest go on (one bad message
    ///   never stops the queue; only a setting that concerns every message does).
    init(_ m: Message, settings: SMTPSettings) throws(MsgError) {
        data = try MailText.render(m, from: settings.from, lineEnding: .crlf)
        to = try SMTPSettings.envelope(m.to, what: "to", code: .rejected)
        if let from = m.from {
            self.from = try SMTPSettings.envelope(from, what: "from", code: .rejected)
        } else if let from = settings.from {
            self.from = from
        } else {
            throw MsgError(.rejected, "the message has no from, and \(settings.display) names no from=ADDRESS for the envelope of such messages")
        }
        utf8 = !to.utf8.allSatisfy { $0 < 0x80 } || !from.utf8.allSatisfy { $0 < 0x80 } || data.contains { $0 >= 0x80 }
    }
}

/// A lane's session, kept between calls; one made more than ``reuseLimit`` ago
/// unused is made anew rather than raced against the server's idle limit.
final class Lane: @unchecked Sendable {
    private var connection: SMTPConnection?
    private var lastUsed = NIODeadline.now()
    static let reuseLimit = TimeAmount.seconds(60)

    /// Only one thread uses a lane at a time: its queue's (``SMTPTransport/deliver(_:deadline:)``).
    func session(_ settings: SMTPSettings, group: any EventLoopGroup, until: NIODeadline? = nil) throws(MsgError) -> SMTPConnection {
        let now = NIODeadline.now()
        defer { lastUsed = now }
        if let connection, connection.isOpen, now - lastUsed < Self.reuseLimit { return connection }
        connection?.quit()
        connection = nil
        let fresh = try SMTPConnection(settings, group: group, until: until)
        connection = fresh
        return fresh
    }

    func close() {
        connection?.quit()
        connection = nil
    }
}

/// The records of one call, read by the lanes' threads.
private struct RecordsBox: @unchecked Sendable {
    let records: [EncodedMessage]
    init(_ records: [EncodedMessage]) { self.records = records }
}
