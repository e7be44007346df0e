#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import CNATS
import MsgKit
import MsgSupport

/// One connection to a NATS server and its JetStream context, opened when first
/// needed and again after it was lost. libnats's own reconnection is off: a
/// connection lost mid-call fails what was not yet acknowledged as `unreachable`,
/// and the host retries it; `Nats-Msg-Id` makes the stream take a message it
/// already holds as a duplicate, not a second copy.
final class NATSConnection {
    let settings: NATSSettings
    /// The board libnats's callbacks report to. Retained for the life of the
    /// process: libnats may call a connection's callbacks on its own threads after
    /// the connection was destroyed, so what they point to must never go away.
    let board: AckBoard
    private var connection: OpaquePointer?
    private(set) var context: OpaquePointer?
    /// Connections opened so far; the current one's number.
    private var generation = 0

    /// What a connection's disconnection callback points to: the board and that
    /// connection's number. Kept for the life of the process, as the board is.
    private final class Loss {
        let board: AckBoard
        let generation: Int
        init(board: AckBoard, generation: Int) {
            self.board = board
            self.generation = generation
        }
    }

    init(settings: NATSSettings) {
        self.settings = settings
        let board = AckBoard(fixedSubject: settings.subject.isFixed)
        _ = Unmanaged.passRetained(board)
        self.board = board
    }

    deinit { PipeSignalBlock.around { close() } }

    private static let opened: Bool = nats_Open(0) == NATS_OK

    /// Opens the connection unless it is open, waiting at most `timeout` ms for it
    /// (and for TLS). - Throws: a delivery class, or `config` for credentials or
    /// TLS the server refuses.
    func open(timeout: Int64, stall: Int64) throws(MsgError) {
        if let connection, !natsConnection_IsClosed(connection), context != nil { return }
        close()
        // libnats spins on a contended lock 2,000 times by default before it
        // sleeps; its reader, its acknowledgement thread and the publisher contend
        // for one lock at each message, and on a machine of few cores the spinning
        // takes the core the thread it waits for needs. Once, before the first connection.
        _ = Self.opened
        var options: OpaquePointer?
        try check(natsOptions_Create(&options))
        defer { natsOptions_Destroy(options) }
        let closure = Unmanaged.passUnretained(board).toOpaque()
        try check(natsOptions_SetURL(options, settings.server))
        try check(natsOptions_SetName(options, "msg"))
        try check(natsOptions_SetTimeout(options, max(1, timeout)))
        try check(natsOptions_SetAllowReconnect(options, false))
        generation += 1
        board.connected(generation: generation)
        let loss = Unmanaged.passRetained(Loss(board: board, generation: generation)).toOpaque()
        try check(natsOptions_SetDisconnectedCB(options, { _, closure in
            guard let closure else { return }
            let loss = Unmanaged<Loss>.fromOpaque(closure).takeUnretainedValue()
            loss.board.connectionLost(generation: loss.generation)
        }, loss))
        if settings.secure {
            try check(natsOptions_SetSecure(options, true))
            if let ca = settings.caFile { try check(natsOptions_LoadCATrustedCertificates(options, ca), what: "ca \(ca)") }
            if let cert = settings.certificateFile, let key = settings.keyFile {
                try check(natsOptions_LoadCertificatesChain(options, cert, key), what: "cert \(cert) and key \(key)")
            }
            // The name the certificate must have: always checked, never taken from the server.
            try check(natsOptions_SetExpectedHostname(options, settings.serverName ?? settings.host))
        }
        if let token = settings.token { try check(natsOptions_SetToken(options, token)) }
        if let user = settings.user, let password = settings.password { try check(natsOptions_SetUserInfo(options, user, password)) }
        if let creds = settings.credsFile { try check(natsOptions_SetUserCredentialsFromFiles(options, creds, nil), what: "creds \(creds)") }
        if let nkey = settings.nkey, let seed = settings.nkeySeedFile { try check(natsOptions_SetNKeyFromSeed(options, nkey, seed), what: "nkey_seed \(seed)") }

        var opened: OpaquePointer?
        let status = natsConnection_Connect(&opened, options)
        guard status == NATS_OK, let opened else {
            natsConnection_Destroy(opened)
            throw NATSFailure.connecting(status, server: settings.server)
        }
        var js = jsOptions()
        jsOptions_Init(&js)
        js.PublishAsync.MaxPending = Int64(settings.concurrency)
        js.PublishAsync.StallWait = max(1, stall)
        js.PublishAsync.AckHandlerClosure = closure
        js.PublishAsync.AckHandler = { _, message, ack, failure, closure in
            defer { natsMsg_Destroy(message) }
            guard let closure, let message else { return }
            var value: UnsafePointer<CChar>?
            guard natsMsgHeader_Get(message, "Nats-Msg-Id", &value) == NATS_OK, let value else { return }
            let board = Unmanaged<AckBoard>.fromOpaque(closure).takeUnretainedValue()
            let id = String(cString: value)
            if let ack {
                var receipt: [JSONValue.Member] = [.init("stream", .string(ack.pointee.Stream.map { String(cString: $0) } ?? "")),
                                                   .init("seq", .number(String(ack.pointee.Sequence)))]
                if ack.pointee.Duplicate { receipt.append(.init("duplicate", .bool(true))) }
                board.record(id: id, outcome: .delivered(confirmed: false), receipt: .object(receipt))
            } else if let failure {
                let subject = natsMsg_GetSubject(message).map { String(cString: $0) } ?? "?"
                let text = failure.pointee.ErrText.map { String(cString: $0) } ?? String(cString: natsStatus_GetText(failure.pointee.Err))
                let error = NATSFailure.publishing(failure.pointee.Err, code: Int(failure.pointee.ErrCode.rawValue), text: text, subject: subject,
                                                   fixedSubject: board.fixedSubject)
                board.record(id: id, outcome: .failed(error, retryAfter: nil))
            }
        }
        var made: OpaquePointer?
        let madeStatus = natsConnection_JetStream(&made, opened, &js)
        guard madeStatus == NATS_OK, let made else {
            natsConnection_Destroy(opened)
            throw NATSFailure.connecting(madeStatus, server: settings.server)
        }
        connection = opened
        context = made
    }

    /// Sends what the call published now, not at libnats's flusher's next turn
    /// (it waits a millisecond for more): one write a call, not one a message.
    func flush(within milliseconds: Int64) {
        guard let connection else { return }
        _ = natsConnection_FlushTimeout(connection, max(1, milliseconds))
    }

    /// Takes back the publishes still awaiting their acknowledgement, so they no
    /// longer count against `concurrency`; an acknowledgement that comes for one
    /// later is dropped.
    func dropPending() {
        guard let context else { return }
        var pending = natsMsgList()
        if js_PublishAsyncGetPendingList(&pending, context) == NATS_OK { natsMsgList_Destroy(&pending) }
    }

    func close() {
        if let context { jsCtx_Destroy(context) }
        if let connection { natsConnection_Destroy(connection) }
        context = nil
        connection = nil
    }

    private func check(_ status: natsStatus, what: String? = nil) throws(MsgError) {
        guard status != NATS_OK else { return }
        let text = NATSFailure.lastError(status)
        throw MsgError(.config, "nats: " + (what.map { "cannot use \($0): " } ?? "") + text)
    }
}
