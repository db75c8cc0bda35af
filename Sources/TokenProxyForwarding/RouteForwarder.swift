import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyServer

/// Sends a routed request to its upstream and streams the answer back: the seam between
/// routing and the upstream engine (libcurl in production, fakes in tests).
///
/// An object, so that a request calls it through one reference rather than a boxed value.
package protocol RouteForwarder: AnyObject, Sendable {
    /// Forwards `exchange` along `match`. Called in the exchange's context; must respond or
    /// abort, and first make the exchange's observer one that hands `report` how the request
    /// went upstream when the exchange completes (``ForwardingRecord/observe(_:reportedBy:)``,
    /// or an object of its own).
    func forward(_ exchange: HTTPExchange, along match: Router.Match, report: AccessReport, logger: Logger)

    /// Applies a reloaded configuration (providers may have changed).
    func reload(_ configuration: ProxyConfiguration)

    /// The providers' credential sources, which `readyz` asks; `nil` when the forwarder has none.
    var credentialRegistry: CredentialRegistry? { get }
}

extension RouteForwarder {
    /// Forwarders without configuration ignore reloads.
    package func reload(_ configuration: ProxyConfiguration) {}

    /// Forwarders without providers have no credential sources.
    var credentialRegistry: CredentialRegistry? { nil }
}
