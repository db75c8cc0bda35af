import Dispatch
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyForwarding
import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// The running proxy: its listeners (proxy and optional admin), the request handler and
/// the forwarder, started from one configuration and reloadable in place.
package final class ProxyService: Sendable {
    /// The configuration the service started with (listen addresses are fixed at start).
    package let configuration: ProxyConfiguration
    private let server: HTTPServer
    private let adminServer: HTTPServer?
    private let handler: ProxyHandler
    private let forwarder: any RouteForwarder
    private let logger: Logger
    /// What the `metrics` endpoint exposes.
    package let metrics: ProxyMetrics

    /// Creates the service; ``start()`` binds its listeners. Exchanges are counted in `metrics`
    /// (pass the forwarder's, so that token requests are counted in the same place).
    package init(
        configuration: ProxyConfiguration,
        forwarder: any RouteForwarder,
        logger: Logger,
        metrics: ProxyMetrics = ProxyMetrics()
    ) {
        self.metrics = metrics
        self.configuration = configuration
        self.logger = logger
        self.forwarder = forwarder
        let limits = configuration.limits
        let settings = ConnectionSettings(limits: limits)
        let counter = ConnectionCounter()
        let handler = ProxyHandler(
            configuration: configuration,
            forwarder: forwarder,
            logger: logger,
            metrics: metrics,
            openConnections: { counter.count }
        )
        self.handler = handler
        self.server = HTTPServer(
            settings: settings,
            maxConnections: limits.maxConnections,
            handler: handler,
            logger: logger
        )
        if case .listener = configuration.admin {
            self.adminServer = HTTPServer(
                settings: settings,
                maxConnections: 64,
                handler: AdminListenerHandler(proxy: handler),
                logger: logger
            )
        } else {
            self.adminServer = nil
        }
        counter.servers = [self.server] + (self.adminServer.map { [$0] } ?? [])
    }

    /// Builds the whole service from `configuration`, as `serve` runs it: `engineCount`
    /// libcurl engines (1 to 64), the metrics, the providers' credential registry keeping
    /// tokens in `store` (token requests go through the first engine and are counted in the
    /// same metrics, as the store's failures are when it was made with them), the forwarder
    /// over them, and the listeners. Fails when an engine cannot start.
    package convenience init(
        configuration: ProxyConfiguration,
        store: any TokenStore,
        engineCount: Int,
        metrics: ProxyMetrics = ProxyMetrics(),
        logger: Logger
    ) throws(SystemError) {
        let count = min(max(engineCount, 1), Self.maximumEngines)
        let engines = try CurlEngine.make(count: count)
        let credentials = CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: engines[0]),
            store: store,
            metrics: metrics,
            logger: logger
        )
        let forwarder = CurlForwarder(engines: engines, credentials: credentials, limits: configuration.limits)
        self.init(
            configuration: configuration,
            forwarder: forwarder,
            logger: logger,
            metrics: metrics
        )
    }

    /// The most engines a service runs, whatever it is asked.
    package static let maximumEngines = 64

    /// The bound addresses: the proxy listener, then the admin listener when configured.
    package struct BoundAddresses: Sendable {
        /// Where the proxy listens (with the real port when 0 was configured).
        package var proxy: ListenAddress
        /// Where the admin endpoints listen, when separate.
        package var admin: ListenAddress?
    }

    /// Binds the listeners and starts serving.
    package func start() throws(SystemError) -> BoundAddresses {
        let proxy = try self.server.bind(self.configuration.listen)
        var admin: ListenAddress?
        if let adminServer = self.adminServer, case .listener(let address) = self.configuration.admin {
            do throws(SystemError) {
                admin = try adminServer.bind(address)
            } catch {
                self.server.closeListeners()
                throw error
            }
        }
        self.handler.listenersBound(proxy: proxy, admin: admin)
        return BoundAddresses(proxy: proxy, admin: admin)
    }

    /// The number of open client connections on every listener.
    package var openConnections: Int {
        self.server.openConnections + (self.adminServer?.openConnections ?? 0)
    }

    /// Applies a new configuration to requests that start from now on. Listen addresses,
    /// limits and the token store are fixed at start; a change to them is logged and needs
    /// a restart.
    package func reload(_ configuration: ProxyConfiguration) {
        if configuration.listen != self.configuration.listen || configuration.admin != self.configuration.admin
            || configuration.limits != self.configuration.limits
            || configuration.tokenStore != self.configuration.tokenStore
        {
            self.logger.warning("listen, admin, limits and token_store changes take effect after a restart")
        }
        // The providers first: the handler's routes take their providers' entries from the
        // reloaded registry. A request that starts between the two takes the previous routes
        // with their entries, as requests already in flight keep them; a retired OAuth source
        // hands a request that waits for a token to its successor.
        self.forwarder.reload(configuration)
        self.handler.reload(configuration)
    }

    /// Stops accepting and finishes in-flight exchanges; calls `completion` with `true` once
    /// every connection closed, or with `false` when `timeout` seconds passed first.
    package func drain(timeout: Double, completion: @escaping @Sendable (Bool) -> Void) {
        let once = OnceFlag()
        let servers = [self.server] + (self.adminServer.map { [$0] } ?? [])
        let open = Mutex(servers.count)
        for server in servers {
            server.drain {
                let last = open.withLockedValue { count -> Bool in
                    count -= 1
                    return count == 0
                }
                if last, once.claim() { completion(true) }
            }
        }
        DeadlineScheduler.shared.schedule(at: .now + BoundedSeconds.duration(timeout)) {
            // The completion may block (it ends the process and flushes the log): not on the
            // deadline thread, whose actions must stay short.
            DispatchQueue.global().async {
                if once.claim() { completion(false) }
            }
        }
    }
}
