import Logging

@testable import TokenProxyForwarding
@testable import TokenProxyServer
@testable import TokenProxySupport

/// A forwarder for tests that do not reach an upstream: every routed request is answered
/// 502 `upstream_unreachable`.
final class UnavailableForwarder: RouteForwarder {
    /// Creates the forwarder.
    init() {}

    /// Answers 502 `upstream_unreachable`.
    func forward(_ exchange: HTTPExchange, along match: Router.Match, report: AccessReport, logger: Logger) {
        ForwardingRecord.observe(exchange, reportedBy: report)
        exchange.respond(
            to: ProxyError(
                .upstreamUnreachable,
                "no upstream engine is available in this build",
                route: match.route.name,
                provider: match.route.provider
            )
        )
    }
}
