import Logging

/// Sends a routed request to its upstream and streams the answer back: the seam between
/// routing and the upstream engine (libcurl in production, fakes in tests).
package protocol RouteForwarder: Sendable {
    /// Forwards `exchange` along `match`. Called in the exchange's context; must respond or abort.
    func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger)

    /// Applies a reloaded configuration (providers may have changed).
    func reload(_ configuration: ProxyConfiguration)

    /// The providers' credential sources, which `readyz` asks; `nil` when the forwarder has none.
    var credentialRegistry: CredentialRegistry? { get }
}

extension RouteForwarder {
    /// Forwarders without configuration ignore reloads.
    package func reload(_ configuration: ProxyConfiguration) {}

    /// Forwarders without providers have no credential sources.
    package var credentialRegistry: CredentialRegistry? { nil }
}

/// The forwarder used until an upstream engine is configured: every routed request is
/// answered 502 `upstream_unreachable`.
package struct UnavailableForwarder: RouteForwarder {
    /// Creates the forwarder.
    package init() {}

    /// Answers 502 `upstream_unreachable`.
    package func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger) {
        exchange.respond(
            ErrorResponse.response(
                for: ProxyError(
                    .upstreamUnreachable,
                    "no upstream engine is available in this build",
                    route: match.route.name,
                    provider: match.route.provider
                )
            )
        )
    }
}
