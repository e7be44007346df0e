import AsyncHTTPClient
import Dispatch
import MsgKit
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The `http://` and `https://` transport: one POST per message, on AsyncHTTPClient
/// (msg-http(7)).
///
/// Each request carries `Idempotency-Key` (the message id, as the IETF httpapi
/// draft writes it: a structured-field string), so a server that deduplicates
/// applies an in-doubt message once however often it is sent. Connections are
/// kept alive, and up to `concurrency` requests are in flight; outcomes come back
/// in order. The answer is read by ``ResponseClassifier``.
public final class HTTPTransport: Transport {
    let settings: HTTPSettings
    private let client: HTTPClient
    private let version = MsgVersion.current

    /// How long `lookup` waits for an answer.
    static let lookupDeadline: Int64 = 30_000

    public init(url: PluginURL) throws(MsgError) {
        settings = try HTTPSettings(url)
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            if let ca = settings.caFile { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca)) }
            if let cert = settings.certificateFile, let key = settings.keyFile {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(cert).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
        } catch {
            throw MsgError(.config, "http: cannot read the TLS files (ca_file, cert_file, key_file): \(error)")
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: settings.followRedirects ? .follow(max: 5, allowCycles: false) : .disallow,
            timeout: .init(connect: .seconds(10)))
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: settings.concurrency)
        // A destination that refuses connections is unreachable now; fail at once
        // instead of retrying until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    deinit {
        try? client.syncShutdown()
    }

    /// Requests in flight at once in one call: a flush gives such a call one message per destination.
    public var parallelism: Int { settings.concurrency }

    public func deliver(_ records: [EncodedMessage], deadline: MsgDuration) -> [DeliveryOutcome] {
        let host = settings.host
        // Each request is made just before it is sent, so a signature's timestamp is
        // when it left, however long the requests before it took.
        return run(records.count, request: { self.request(for: records[$0]) }, deadline: deadline) { result in
            switch result {
            case .success(let response):
                return ResponseClassifier.outcome(status: Int(response.status.code), headers: response.headers, body: response.body,
                                                  host: host, now: Timestamp.now().milliseconds)
            case .failure(let error):
                return ResponseClassifier.outcome(error: error, host: host, deadline: deadline)
            }
        }
    }

    public func lookup(_ id: String) throws(MsgError) -> Bool? {
        try lookup([id])[0]
    }

    public func lookup(_ ids: [String]) throws(MsgError) -> [Bool?] {
        guard let template = settings.lookupTemplate else { return ids.map { _ in nil } }
        let deadline = MsgDuration(milliseconds: Self.lookupDeadline)
        let request = { (i: Int) -> Result<HTTPClient.Request, MsgError> in
            let url = template.replacingAll("{id}", with: Self.pathEncoded(ids[i]))
            do {
                return .success(try HTTPClient.Request(url: url, method: .GET, headers: self.headers(id: ids[i])))
            } catch {
                return .failure(MsgError(.config, "http: the lookup URL \(url) is not valid"))
            }
        }
        let host = settings.host
        let answers = run(ids.count, request: request, deadline: deadline) { result -> Result<Bool?, MsgError> in
            switch result {
            case .success(let response) where response.status.code == 200: return .success(true)
            case .success(let response) where response.status.code == 404: return .success(false)
            case .success: return .success(nil)
            case .failure(let error): return .failure(ResponseClassifier.classify(error, host: host, deadline: deadline))
            }
        }
        return try answers.map { answer throws(MsgError) -> Bool? in try answer.get() }
    }

    /// Sends `count` requests, made by `make` just before each is sent, with at most
    /// `concurrency` in flight, each within `deadline`, and reads each answer with
    /// `read`; a request that could not be made is its error.
    private func run<T: Sendable>(_ count: Int, request make: (Int) -> Result<HTTPClient.Request, MsgError>, deadline: MsgDuration,
                                  read: @escaping @Sendable (Result<HTTPClient.Response, any Error>) -> T) -> [T] where T: FailureRepresentable {
        let results = NIOLockedValueBox([T?](repeating: nil, count: count))
        let window = DispatchSemaphore(value: settings.concurrency)
        let done = DispatchGroup()
        for i in 0..<count {
            window.wait()
            let request: HTTPClient.Request
            switch make(i) {
            case .success(let made): request = made
            case .failure(let error):
                results.withLockedValue { $0[i] = T(failure: error) }
                window.signal()
                continue
            }
            done.enter()
            client.execute(request: request, deadline: .now() + .milliseconds(max(1, deadline.milliseconds))).whenComplete { result in
                let value = read(result)
                results.withLockedValue { $0[i] = value }
                window.signal()
                done.leave()
            }
        }
        done.wait()
        return results.withLockedValue { $0.map { $0! } }
    }

    /// The POST for one message, or why it cannot be made (`rejected`).
    private func request(for record: EncodedMessage) -> Result<HTTPClient.Request, MsgError> {
        let m = record.message
        // The id goes into headers: one that could end a header line is never sent.
        guard m.id.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7f }) else {
            return .failure(MsgError(.rejected, "the id cannot be sent in an HTTP header: it has a control or non-ASCII character"))
        }
        let body: [UInt8]
        var headers = headers(id: m.id)
        if settings.inputBody {
            body = Array(m.body.utf8)
            let type = m.headers.first { $0.key.lowercased() == "content-type" }?.value ?? settings.bodyContentType
            guard !type.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                return .failure(MsgError(.rejected, "the message's Content-Type header has a line break"))
            }
            headers.replaceOrAdd(name: "Content-Type", value: type)
        } else {
            body = record.deliveredJSON
            headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        }
        if let signer = settings.signer {
            for (name, value) in signer.headers(id: m.id, timestamp: Timestamp.now().milliseconds / 1000, body: body) {
                headers.replaceOrAdd(name: name, value: value)
            }
        }
        do {
            return .success(try HTTPClient.Request(url: settings.endpoint, method: .POST, headers: headers, body: .bytes(body)))
        } catch {
            return .failure(MsgError(.config, "http: '\(settings.endpoint)' is not a valid http(s) URL"))
        }
    }

    /// What every request carries.
    private func headers(id: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "User-Agent", value: "msg/\(version)")
        for (name, value) in settings.extraHeaders { headers.add(name: name, value: value) }
        // A structured-field string (RFC 8941): an id is quoted, with \ and " escaped.
        let quoted = id.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
        headers.replaceOrAdd(name: "Idempotency-Key", value: "\"\(quoted)\"")
        return headers
    }

    /// `id` made safe for a URL path segment.
    static func pathEncoded(_ id: String) -> String {
        var out = ""
        for b in id.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isASCII && (c.isLetter || c.isNumber || "-._~".contains(c)) { out.append(c) } else {
                out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// A result type that can stand for a request that could not be made.
protocol FailureRepresentable {
    init(failure: MsgError)
}

extension DeliveryOutcome: FailureRepresentable {
    init(failure: MsgError) { self = .failed(failure, retryAfter: nil) }
}

extension Result: FailureRepresentable where Success == Bool?, Failure == MsgError {
    init(failure: MsgError) { self = .failure(failure) }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        let parts = self.split(separator: target, omittingEmptySubsequences: false)
        return parts.joined(separator: replacement)
    }

    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
