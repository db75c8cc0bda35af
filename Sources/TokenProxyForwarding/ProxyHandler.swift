import Foundation
import Logging
import Synchronization
import TokenProxyAdmin
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport

/// The proxy's request handler: request policy, admin endpoints, routing, then the
/// forwarder; writes the access log line for every exchange.
///
/// The configuration lives in a snapshot swapped whole on reload (SIGHUP): an exchange uses
/// the snapshot it started with, so a reload never disturbs requests in flight.
package final class ProxyHandler: HTTPExchangeHandler {
    /// A class, so that taking it for a request is one reference, not a copy of each part.
    private final class Snapshot: Sendable {
        let configuration: ProxyConfiguration
        let router: Router
        let policy: RequestPolicy
        let admin: AdminEndpoints
        let adminPrefix: String?
        /// The proxy listener, whose origin is the proxy's own for browser checks.
        let proxyListener: RequestPolicy.Listener
        /// The separate admin listener, an origin of its own (the proxy listener's when the
        /// admin endpoints live under a path prefix).
        let adminListener: RequestPolicy.Listener

        init(
            configuration: ProxyConfiguration,
            router: Router,
            policy: RequestPolicy,
            admin: AdminEndpoints,
            adminPrefix: String?,
            listeners: (proxy: RequestPolicy.Listener, admin: RequestPolicy.Listener)
        ) {
            self.configuration = configuration
            self.router = router
            self.policy = policy
            self.admin = admin
            self.adminPrefix = adminPrefix
            self.proxyListener = listeners.proxy
            self.adminListener = listeners.admin
        }
    }

    private let snapshot: Mutex<Snapshot>
    private let forwarder: any RouteForwarder
    private let logger: Logger
    private let startedAt = Date()
    private let openConnections: @Sendable () -> Int
    private let metrics: ProxyMetrics

    /// Creates the handler. `openConnections` reports the servers' connection count; every
    /// exchange is counted in `metrics`.
    package init(
        configuration: ProxyConfiguration,
        forwarder: any RouteForwarder,
        logger: Logger,
        metrics: ProxyMetrics = ProxyMetrics(),
        openConnections: @escaping @Sendable () -> Int
    ) {
        self.forwarder = forwarder
        self.logger = logger
        self.metrics = metrics
        self.openConnections = openConnections
        self.snapshot = Mutex(
            Self.makeSnapshot(
                configuration,
                startedAt: self.startedAt,
                openConnections: openConnections,
                listeners: Self.listeners(configuredBy: configuration),
                logger: logger,
                credentials: forwarder.credentialRegistry,
                metrics: metrics
            )
        )
    }

    /// The listeners as configured, until ``listenersBound(proxy:admin:)`` gives the real ports.
    private static func listeners(
        configuredBy configuration: ProxyConfiguration
    ) -> (proxy: RequestPolicy.Listener, admin: RequestPolicy.Listener) {
        if case .listener(let admin) = configuration.admin {
            return Self.listeners(proxy: configuration.listen, admin: admin)
        }
        return Self.listeners(proxy: configuration.listen, admin: nil)
    }

    /// The listeners for bound (or configured) addresses; without a separate admin listener,
    /// the admin endpoints answer on the proxy listener.
    private static func listeners(
        proxy: ListenAddress,
        admin: ListenAddress?
    ) -> (proxy: RequestPolicy.Listener, admin: RequestPolicy.Listener) {
        let proxyListener = RequestPolicy.Listener(proxy)
        return (proxyListener, admin.map { RequestPolicy.Listener($0) } ?? proxyListener)
    }

    /// Records the addresses the listeners were bound to (the real ports when 0 was
    /// configured): each listener's origin is the proxy's own there (RFC 6454 §4).
    package func listenersBound(proxy: ListenAddress, admin: ListenAddress?) {
        let listeners = Self.listeners(proxy: proxy, admin: admin)
        self.snapshot.withLockedValue { current in
            current = Self.makeSnapshot(
                current.configuration,
                startedAt: self.startedAt,
                openConnections: self.openConnections,
                listeners: listeners,
                logger: self.logger,
                credentials: self.forwarder.credentialRegistry,
                metrics: self.metrics
            )
        }
    }

    private static func makeSnapshot(
        _ configuration: ProxyConfiguration,
        startedAt: Date,
        openConnections: @escaping @Sendable () -> Int,
        listeners: (proxy: RequestPolicy.Listener, admin: RequestPolicy.Listener),
        logger: Logger,
        credentials: CredentialRegistry?,
        metrics: ProxyMetrics
    ) -> Snapshot {
        var adminPrefix: String?
        if case .pathPrefix(let prefix) = configuration.admin {
            adminPrefix = prefix
        }
        return Snapshot(
            configuration: configuration,
            // The `require_header` secret is the proxy's own: it never goes upstream.
            router: Router(
                routes: configuration.routes,
                withheldHeaders: configuration.requireHeader.map { [$0.name] } ?? []
            ) { route in
                // Made once per configuration rather than looked up by name per request.
                var routeLogger = logger
                routeLogger[metadataKey: "route"] = "\(route.name)"
                return RouteServices(
                    logger: routeLogger,
                    report: AccessReport(
                        logger: logger,
                        metrics: metrics,
                        route: route.name,
                        series: metrics.series(forRoute: route.name)
                    ),
                    provider: route.provider.flatMap { credentials?.entry($0) }
                )
            },
            policy: RequestPolicy(allowedHosts: configuration.allowedHosts, requireHeader: configuration.requireHeader),
            admin: AdminEndpoints(
                configuration: configuration,
                startedAt: startedAt,
                openConnections: openConnections,
                credentials: credentials,
                metrics: metrics
            ),
            adminPrefix: adminPrefix,
            listeners: listeners
        )
    }

    /// Replaces the configuration for exchanges that start from now on. Called after the
    /// forwarder's reload, so that each route takes its provider's current entry.
    package func reload(_ configuration: ProxyConfiguration) {
        // Listeners are fixed at start: the current ones are kept.
        self.snapshot.withLockedValue { current in
            current = Self.makeSnapshot(
                configuration,
                startedAt: self.startedAt,
                openConnections: self.openConnections,
                listeners: (current.proxyListener, current.adminListener),
                logger: self.logger,
                credentials: self.forwarder.credentialRegistry,
                metrics: self.metrics
            )
        }
    }

    /// Serves one exchange on the proxy listener.
    package func handle(_ exchange: HTTPExchange) {
        let snapshot = self.snapshot.withLockedValue { $0 }
        // The head and the route are read where they are kept: local copies of them copied
        // every string and list they hold, every request.
        if let error = snapshot.policy.checkRequest(exchange.head) {
            self.reject(exchange, error)
            return
        }
        if let prefix = snapshot.adminPrefix, Router.path(exchange.head.path, hasSegmentPrefix: prefix) {
            self.serveAdmin(
                exchange,
                name: String(exchange.head.path.dropFirst(prefix.count)),
                listener: snapshot.proxyListener,
                snapshot: snapshot
            )
            return
        }
        if let error = snapshot.policy.checkAccess(exchange.head, listener: snapshot.proxyListener) {
            self.reject(exchange, error)
            return
        }
        guard let match = snapshot.router.match(authority: exchange.head.authority, path: exchange.head.path) else {
            self.reject(exchange, ProxyError(.noRoute, "no route matches \(exchange.head.path)"))
            return
        }
        if match.route.incomingAuthorization == .reject {
            // The credential header is the provider's (`header`), Authorization by default.
            let credentialHeader =
                match.route.provider.flatMap { snapshot.configuration.providers[$0]?.header } ?? "Authorization"
            if exchange.head.headers.contains(credentialHeader) {
                self.reject(
                    exchange,
                    ProxyError(
                        .badRequest,
                        "this route does not accept a client \(credentialHeader) header",
                        route: match.route.name
                    )
                )
                return
            }
        }
        // The forwarder makes the exchange's observer, which reports it with how it went
        // upstream (the request's attempt itself, so that a request makes no record of its own).
        self.forwarder.forward(
            exchange,
            along: match,
            report: match.services?.report ?? self.accessReport(route: match.route.name),
            logger: match.services?.logger ?? self.logger
        )
    }

    /// Serves one exchange on a separate admin listener, where endpoints sit at the root.
    func handleAdmin(_ exchange: HTTPExchange) {
        let snapshot = self.snapshot.withLockedValue { $0 }
        if let error = snapshot.policy.checkRequest(exchange.head) {
            self.reject(exchange, error)
            return
        }
        self.serveAdmin(exchange, name: exchange.head.path, listener: snapshot.adminListener, snapshot: snapshot)
    }

    private func serveAdmin(
        _ exchange: HTTPExchange,
        name: String,
        listener: RequestPolicy.Listener,
        snapshot: Snapshot
    ) {
        let endpoint = name.hasPrefix("/") ? String(name.dropFirst()) : name
        let refusal = snapshot.policy.checkAccess(exchange.head, listener: listener)
        if let refusal, !AdminEndpoints.isProbe(endpoint) {
            self.reject(exchange, refusal)
            return
        }
        self.logAccess(exchange, route: "admin", metricsRoute: ProxyMetrics.adminRoute)
        let bound = QueueBound(exchange, context: exchange.context)
        // A probe is answered whatever its Host (a kubelet probes the pod's address), but a
        // request that fails the host or browser checks learns only the status code: the
        // providers' states and messages stay with those who pass them.
        let statusOnly = refusal != nil
        snapshot.admin.respond(to: endpoint, method: exchange.head.method) { response in
            let answer = statusOnly ? AdminEndpoints.statusOnly(response) : response
            bound.executeNowOrLater { $0.respond(answer) }
        }
    }

    private func reject(_ exchange: HTTPExchange, _ error: ProxyError) {
        self.logAccess(exchange, route: error.route ?? "-", metricsRoute: error.route ?? ProxyMetrics.noRoute)
        exchange.respond(to: error)
    }

    /// Logs a request the connection rejected before it became an exchange.
    package func requestRejected(_ error: ProxyError, remoteAddress: String) {
        self.metrics.requestFinished(route: ProxyMetrics.noRoute, status: error.code.status, duration: nil)
        self.logger.info(
            "rejected",
            metadata: [
                "status": "\(error.code.status)",
                "error": "\(error.code)",
                "reason": "\(error.message)",
                "client": "\(remoteAddress)",
            ]
        )
    }

    /// What the exchange's access line and metrics need: `route` on the access line, counted
    /// under `metricsRoute`, by default `route`.
    private func accessReport(route: String, metricsRoute: String? = nil) -> AccessReport {
        AccessReport(
            logger: self.logger,
            metrics: self.metrics,
            route: route,
            series: self.metrics.series(forRoute: metricsRoute ?? route)
        )
    }

    /// Counts the exchange, which the proxy answers itself, in the metrics and writes its
    /// access line when it ends (``AccessReport``). An answer the proxy made brings its
    /// `error` code (and for a 502 or 504 its `reason`) in the exchange's log fields
    /// (``HTTPExchange/respond(_:)``).
    private func logAccess(_ exchange: HTTPExchange, route: String, metricsRoute: String? = nil) {
        exchange.observer = ForwardingRecord(report: self.accessReport(route: route, metricsRoute: metricsRoute))
    }
}
