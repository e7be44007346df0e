import Logging
import MsgKit
import MsgSupport
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import TLSCommon

/// One connection to the server, used synchronously (named so as not to shadow
/// PostgresNIO's own `PostgresClient`, a pool): the ``Store`` protocol is
/// synchronous and msg calls it from one thread, so each query is sent on NIO's
/// shared event loop and waited for. Closed when the client goes away.
///
/// Every session runs with `synchronous_commit=on`, whatever the server's default:
/// a commit msg acknowledges must be on the server's disk.
final class BlockingConnection {
    let address: PostgresAddress
    private let password: String?
    /// The context of a verifying sslmode (msg makes the connection), else nil.
    private let verifying: NIOSSLContext?
    private var connection: PostgresConnection
    private var pending: PendingQuery
    /// The connection was lost (the server restarted, failed over, went away): the
    /// next query connects again first, so a long-running command (`flush --watch`)
    /// goes on once the server is back.
    private var lost = false
    private static let logger = Logger(label: "msg.postgres") { _ in SwiftLogNoOpLogHandler() }
    /// The channels listened on (``listen(_:_:)``), listened on again on a new connection.
    private var listeners: [(channel: String, heard: @Sendable () -> Void)] = []

    /// Connects. - Throws: `config` for a refused login or a missing database;
    /// `unreachable` (75: try again) when the server cannot be reached.
    init(_ address: PostgresAddress, password: String?) throws(MsgError) {
        self.address = address
        self.password = password
        verifying = address.tls.verifies ? try Self.verifyingContext(address) : nil
        connection = try Self.connect(address, password: password, verifying: verifying)
        pending = PendingQuery(connection)
    }

    /// A new connection: over a channel msg made and checked (``VerifiedChannel``)
    /// for a verifying sslmode, else as PostgresNIO makes one.
    private static func connect(_ address: PostgresAddress, password: String?, verifying: NIOSSLContext?) throws(MsgError) -> PostgresConnection {
        let timeout = TimeAmount.milliseconds(address.connectTimeout.milliseconds)
        var config: PostgresConnection.Configuration
        if let verifying {
            let channel = try VerifiedChannel.open(address, context: verifying, timeout: timeout)
            config = .init(establishedChannel: channel, username: address.user, password: password, database: address.database)
        } else if address.isUnixSocket {
            config = .init(unixSocketPath: address.socketPath, username: address.user, password: password, database: address.database)
        } else {
            config = .init(host: address.host, port: address.port, username: address.user, password: password,
                           database: address.database, tls: try Self.tls(address))
        }
        config.options.connectTimeout = timeout
        config.options.additionalStartupParameters = [("application_name", "msg"), ("synchronous_commit", "on")]
        do {
            return try PostgresConnection.connect(
                on: config.establishedChannel?.eventLoop ?? MultiThreadedEventLoopGroup.singleton.next(), configuration: config, id: 1, logger: Self.logger
            ).wait()
        } catch {
            config.establishedChannel?.close(promise: nil)
            // A server that cannot be reached now (refused, reset, timed out) is a
            // temporary failure, however PostgresNIO hands it over.
            let e = Self.error(error, "connecting to \(address.display)", address)
            let network = error is IOError || error is NIOConnectionError || error is ChannelError
            throw e.code == .storeIO && network ? MsgError(.unreachable, e.message, underlying: e.underlying) : e
        }
    }

    deinit {
        _ = try? connection.close().wait()
    }

    /// Runs one statement and collects its rows. - Throws: as ``error(_:_:_:)`` maps.
    @discardableResult
    func query(_ q: PostgresQuery, _ what: @autoclosure () -> String) throws(MsgError) -> PostgresQueryResult {
        if lost {
            let fresh = try Self.connect(address, password: password, verifying: verifying)
            _ = try? connection.close().wait()
            connection = fresh
            pending = PendingQuery(fresh)
            lost = false
            // What was notified while the connection was away is not told again: say
            // something may have come, and listen on the new one.
            for l in listeners where Self.attach(l.channel, l.heard, to: fresh) {
                l.heard()
            }
        }
        do {
            return try pending.run(on: connection.eventLoop) { connection.query(q, logger: Self.logger) }
        } catch {
            let e = Self.error(error, what(), address)
            // Unreachable: the connection is gone (or unusable); the next query makes a new one.
            if e.code == .unreachable { lost = true }
            throw e
        }
    }

    /// Calls `heard` (on an event loop thread) each time `channel` is notified, from
    /// when this returns: the LISTEN is sent, and a query behind it waited for.
    /// - Throws: as ``query(_:_:)``.
    func listen(_ channel: String, _ heard: @escaping @Sendable () -> Void) throws(MsgError) {
        listeners.append((channel, heard))
        // A connection found closed is lost: the query connects again, and listens
        // on the new one.
        if !lost && !Self.attach(channel, heard, to: connection) { lost = true }
        try query("SELECT 1", "listening on \(channel)")
    }

    /// Adds a listener to `connection` unless it is closed: checked and added on its
    /// event loop, where it cannot close in between. (PostgresNIO traps when a
    /// listener's start is written to a closed channel and dropped unused.)
    private static func attach(_ channel: String, _ heard: @escaping @Sendable () -> Void, to connection: PostgresConnection) -> Bool {
        let added = try? connection.eventLoop.submit { () -> Bool in
            guard !connection.isClosed else { return false }
            connection.addListener(channel: channel) { _, _ in heard() }
            return true
        }.wait()
        return added ?? false
    }

    /// Runs `body` between BEGIN and COMMIT; rolls back when it throws.
    func transaction<R>(_ what: String, _ body: () throws(MsgError) -> R) throws(MsgError) -> R {
        try query("BEGIN", what)
        let result: R
        do throws(MsgError) {
            result = try body()
        } catch {
            // A lost connection took its transaction with it.
            if !lost { _ = try? query("ROLLBACK", what) }
            throw error
        }
        try query("COMMIT", what)
        return result
    }

    // MARK: Errors

    /// The SQLSTATE of a server error, if `error` is one.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// Maps a PostgresNIO error to a one-line ``MsgError``: refused logins and missing
    /// databases are `config` (78); a server that went away or cannot be reached (a
    /// closed or reset connection, a shutdown, a restart, a failover: SQLSTATE class
    /// 08 and 57P01-57P03) `unreachable` (75: a temporary failure, try again);
    /// everything else `storeIO` (74). The server's own text is kept; PostgresNIO's
    /// generic description is not shown.
    static func error(_ error: any Error, _ what: String, _ address: PostgresAddress) -> MsgError {
        if let e = error as? MsgError { return e }
        if error is PendingQuery.Closed {
            return MsgError(.unreachable, "\(what): \(address.display) closed the connection; work not committed was not stored")
        }
        let sendable = SendableDescription(String(reflecting: error))
        guard let psql = error as? PSQLError else {
            return MsgError(.storeIO, "\(what): \(error)", underlying: sendable)
        }
        if let info = psql.serverInfo {
            let state = info[.sqlState] ?? ""
            let text = info[.message] ?? "server error"
            switch state {
            case "28000", "28P01", "3D000", "42501", "3F000":
                return MsgError(.config, "\(what): \(text) (SQLSTATE \(state))", underlying: sendable)
            case "57P01", "57P02", "57P03", _ where state.hasPrefix("08"):
                let at = what.contains(address.display) ? "" : " (\(address.display))"
                return MsgError(.unreachable, "\(what)\(at): \(text) (SQLSTATE \(state))", underlying: sendable)
            default:
                // Name the server.
                let at = what.contains(address.display) ? "" : " (\(address.display))"
                return MsgError(.storeIO, "\(what)\(at): \(text) (SQLSTATE \(state))", underlying: sendable)
            }
        }
        switch psql.code {
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            // A query still waiting when the server went away fails as the client
            // closing: either way the connection is gone, not the query wrong.
            return MsgError(.unreachable, "\(what): \(address.display) closed the connection; work not committed was not stored", underlying: sendable)
        case .connectionError:
            let cause = psql.underlying.map(reason) ?? "cannot connect"
            let at = what.contains(address.display) ? "" : " (\(address.display))"
            return MsgError(.unreachable, "\(what)\(at): \(cause)", underlying: sendable)
        case .sslUnsupported:
            return MsgError(.config, "\(what): the server does not offer TLS, and sslmode=\(address.tls.rawValue) requires it", underlying: sendable)
        case .authMechanismRequiresPassword:
            return MsgError(.config, "\(what): the server wants a password; set PGPASSWORD or add it to ~/.pgpass", underlying: sendable)
        default:
            // An error wrapping another PostgresNIO error says what the inner one says.
            if let inner = psql.underlying, inner is PSQLError { return self.error(inner, what, address) }
            let cause = psql.underlying.map(reason) ?? "\(psql.code)"
            let at = what.contains(address.display) ? "" : " (\(address.display))"
            return MsgError(.storeIO, "\(what)\(at): \(cause)", underlying: sendable)
        }
    }

    /// A connection failure in a few words (`Connection refused`), not NIO's dump.
    static func reason(_ error: any Error) -> String {
        if let io = error as? IOError { return SystemCalls.describe(io.errnoCode) }
        if let c = error as? NIOConnectionError {
            if c.dnsAError != nil && c.dnsAAAAError != nil && c.connectionErrors.isEmpty { return "host \(c.host) not found" }
            let reasons = c.connectionErrors.map { reason($0.error) }
            return reasons.isEmpty ? "cannot connect" : Array(Set(reasons)).sorted().joined(separator: "; ")
        }
        if let e = error as? ChannelError, case .connectTimeout = e { return "no answer within the connect timeout" }
        return "\(error)"
    }

    /// PostgresNIO's TLS for the modes that do not verify, as libpq's: prefer and
    /// require encrypt without checking the certificate.
    private static func tls(_ address: PostgresAddress) throws(MsgError) -> PostgresConnection.Configuration.TLS {
        if address.tls == .disable { return .disable }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        do {
            let context = try NIOSSLContext(configuration: tls)
            return address.tls == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw MsgError(.config, "setting up TLS for \(address.display): \(error)")
        }
    }

    /// verify-full's and verify-ca's: tls://'s client configuration (TLSSetup), the
    /// chain verified against `sslrootcert=` or `PGSSLROOTCERT`, else the system's
    /// roots; verify-ca checks no name, verify-full the host (``VerifiedChannel``).
    private static func verifyingContext(_ address: PostgresAddress) throws(MsgError) -> NIOSSLContext {
        let display = "the store \(address.display)"
        var tls = try TLSSetup.client(TLSSetup.Files(ca: address.rootCertificates.map { ("sslrootcert", $0) }), display: display)
        if address.tls == .verifyCA { tls.certificateVerification = .noHostnameVerification }
        return try TLSSetup.context(tls, display: display)
    }
}

/// An error's debug text, kept as the underlying error of a ``MsgError``.
struct SendableDescription: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
