import Logging

@testable import TokenProxyConfiguration
@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

/// A ``ProxyHandler`` over an in-memory connection, its listener said to be bound to
/// `127.0.0.1:port`: request policy, admin endpoints and routing without a socket.
enum EmbeddedProxy {
    /// The port the proxy listener is said to be bound to (its origin for browser checks).
    static let port: UInt16 = 8421

    /// A connection served by a proxy handler for `configuration` and `forwarder`, with the
    /// connection settings the proxy service would derive from its limits.
    static func connection(
        _ configuration: ProxyConfiguration = TestProxy.configuration(),
        forwarder: any RouteForwarder = UnavailableForwarder(),
        logger: Logger = TestLogging.logger,
        settings: ConnectionSettings? = nil
    ) -> EmbeddedConnection {
        let handler = ProxyHandler(
            configuration: configuration,
            forwarder: forwarder,
            logger: logger,
            openConnections: { 1 }
        )
        handler.listenersBound(proxy: .inet(host: "127.0.0.1", port: Self.port), admin: nil)
        return EmbeddedConnection(
            handler: handler,
            settings: settings ?? ConnectionSettings(limits: configuration.limits)
        )
    }
}

/// A forwarder in the test's process: records each routed request and answers it as told.
///
/// `@unchecked Sendable`: the record is touched only in the exchanges' context, on the test's
/// thread.
final class FakeForwarder: RouteForwarder, @unchecked Sendable {
    /// How the forwarder answers.
    enum Answer {
        /// 200 with the route's name as the body.
        case routeName
        /// The error answer for this code.
        case error(ProxyError.Code)
    }

    let answer: Answer
    /// The route and target of each request forwarded, in order.
    private(set) var forwarded: [(route: String, target: String)] = []

    init(_ answer: Answer = .routeName) {
        self.answer = answer
    }

    func forward(_ exchange: HTTPExchange, along match: Router.Match, report: AccessReport, logger: Logger) {
        ForwardingRecord.observe(exchange, reportedBy: report)
        self.forwarded.append((match.route.name, exchange.head.target))
        switch self.answer {
        case .routeName:
            exchange.respond(HTTPResponse(status: 200, body: Array(match.route.name.utf8)))
        case .error(let code):
            exchange.respond(to: ProxyError(code, "the fake upstream failed", route: match.route.name))
        }
    }
}
