import MsgKit

/// `flush --watch --metrics ADDR` and `listen --metrics ADDR`: metrics text at
/// `GET /metrics` for Prometheus to scrape, served by the web server plugin (the
/// server `msg web` runs on), so a slow or idle client holds only its own
/// connection. `render` is asked on the server's threads one scrape at a time:
/// for flush, ``storeMetrics(_:top:)`` reads the store through a handle of its own
/// (delivery's handle is never shared between threads), so a scrape shows what
/// `msg metrics` prints. Anything but `GET /metrics` is 404.
public final class MetricsServer {
    private let server: any WebServer
    /// Where it listens, as `HOST:PORT` (the port chosen when 0 was asked).
    public let address: String

    /// Listens on `listening`.
    /// - Throws: `unavailable` when it cannot listen or the web server plugin is missing.
    public init(address listening: MetricsAddress, render: @escaping @Sendable () throws(MsgError) -> String, reporter: Reporter,
                loader: PluginLoader) throws(MsgError) {
        let context = WebServerContext(respond: { Self.answer($0, render) }, idleTimeout: .seconds(5))
        server = try loader.openWebServer("http://\(listening)", context: context)
        let bound = try server.start()
        address = String(bound.dropFirst("http://".count))
        let loopback = listening.host.hasPrefix("127.")
        reporter.say("metrics at http://\(address)/metrics" + (loopback ? "" : " (reachable from other hosts: \(listening.host) is not loopback)"))
    }

    /// Stops listening and waits for the scrapes being answered.
    public func stop() { server.stop() }

    /// What renders ``Metrics`` of `store`, which the server's threads alone use from then on.
    public static func storeMetrics(_ store: any Store, top: Int = 20) -> @Sendable () throws(MsgError) -> String {
        let turns = StoreTurns(store)
        return { () throws(MsgError) -> String in
            // A store that cannot be reached (a server restarting) is said, not an error:
            // the scrape answers, with msg_store_up 0, and the next one reads the store again.
            var up = PrometheusText()
            up.family("msg_store_up", .gauge, help: "1 when the store answered this scrape, 0 when it could not be reached.")
            do throws(MsgError) {
                let text = try turns.turn { (s) throws(MsgError) in try Metrics(store: s, top: top).render() }
                up.sample("msg_store_up", [], 1)
                return text + up.text
            } catch where error.code == .unreachable {
                up.sample("msg_store_up", [], 0)
                return up.text
            }
        }
    }

    /// The answer to a request.
    static func answer(_ request: WebRequest, _ render: @Sendable () throws(MsgError) -> String) -> WebResponse {
        guard request.method == "GET" || request.method == "HEAD", request.path == "/metrics" else {
            return response(404, "msg serves /metrics only\n")
        }
        do throws(MsgError) {
            return response(200, try render())
        } catch {
            return response(503, "msg: \(error.message)\n")
        }
    }

    static func response(_ status: Int, _ body: String) -> WebResponse {
        WebResponse(status: status, headers: [WebHeader("content-type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(body.utf8))
    }
}
