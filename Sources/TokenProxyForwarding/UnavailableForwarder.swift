import Logging
import TokenProxyServer
import TokenProxySupport

/// The forwarder used until an upstream engine is configured: every routed request is
/// answered 502 `upstream_unreachable`.
struct UnavailableForwarder: RouteForwarder {
    /// Creates the forwarder.
    init() {}

    /// Answers 502 `upstream_unreachable`.
    func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger) {
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
