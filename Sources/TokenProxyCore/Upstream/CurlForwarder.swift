import Logging
import Synchronization

/// Forwards routed requests with libcurl: gets the route's credential, builds the upstream
/// request from parsed parts, and streams both bodies through a ``CurlTransfer``.
public final class CurlForwarder: RouteForwarder {
    private let engine: any CurlEngine
    private let credentials: CredentialRegistry
    private let limits: Mutex<Limits>
    private let bases = Mutex<[String: UpstreamURL.Base]>([:])

    /// Creates a forwarder over `engine` for `configuration`'s providers.
    public init(configuration: ProxyConfiguration, engine: any CurlEngine) {
        self.engine = engine
        self.credentials = CredentialRegistry(configuration: configuration, fetcher: UpstreamFetcher(engine: engine))
        self.limits = Mutex(configuration.limits)
    }

    /// Applies a reloaded configuration to the providers.
    public func reload(_ configuration: ProxyConfiguration) {
        self.credentials.reload(configuration)
    }

    /// Sends `exchange` upstream along `match`.
    public func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger) {
        let route = match.route
        let base: UpstreamURL.Base
        let url: String
        do throws(UpstreamURL.Failure) {
            base = try self.base(for: route.upstream)
            url = try UpstreamURL.build(base: base, path: match.upstreamPath, query: exchange.head.query)
        } catch {
            exchange.respond(
                ErrorResponse.response(
                    for: ProxyError(.badRequest, "cannot build the upstream URL: \(error)", route: route.name)
                )
            )
            return
        }

        guard let providerName = route.provider else {
            self.start(exchange, match: match, base: base, url: url, credential: nil, logger: logger)
            return
        }
        guard let entry = self.credentials.entry(providerName) else {
            exchange.respond(
                ErrorResponse.response(
                    for: ProxyError(.tokenUnavailable, "unknown provider", route: route.name, provider: providerName)
                )
            )
            return
        }
        if route.incomingAuthorization == .keep, exchange.head.headers.contains(entry.formatter.header) {
            // The client brought its own credential: it passes untouched, nothing is injected.
            self.start(exchange, match: match, base: base, url: url, credential: nil, logger: logger)
            return
        }
        let bound = QueueBound(exchange, queue: exchange.queue)
        entry.source.token { [self] result in
            bound.execute { exchange in
                guard !exchange.isComplete else { return }
                let credential = result.flatMap { entry.formatter.header(for: $0, provider: providerName) }
                switch credential {
                case .success(let header):
                    self.start(exchange, match: match, base: base, url: url, credential: header, logger: logger)
                case .failure(var error):
                    error.route = route.name
                    logger.warning(
                        "no credential",
                        metadata: [
                            "provider": "\(providerName)", "error": "\(error.code)", "reason": "\(error.message)",
                        ]
                    )
                    exchange.respond(ErrorResponse.response(for: error))
                }
            }
        }
    }

    private func start(
        _ exchange: HTTPExchange,
        match: Router.Match,
        base: UpstreamURL.Base,
        url: String,
        credential: UpstreamRequestBuilder.Credential?,
        logger: Logger
    ) {
        let route = match.route
        let limits = self.limits.withLock { $0 }
        let request = UpstreamRequestBuilder.build(
            head: exchange.head,
            match: match,
            url: url,
            credential: credential,
            clientAddress: exchange.remoteAddress
        )
        let clientKey: String?
        do {
            clientKey = try route.clientKey?.resolve()
        } catch {
            exchange.respond(
                ErrorResponse.response(
                    for: ProxyError(.upstreamUnreachable, "the route's client_key cannot be read", route: route.name)
                )
            )
            return
        }
        let options = CurlTransfer.Options(
            allowPlainHTTP: route.allowInsecureUpstream || route.provider == nil,
            caFile: route.caFile,
            clientCertificate: route.clientCert,
            clientKeyPEM: clientKey,
            connectTimeout: limits.upstreamConnectTimeoutSeconds,
            firstByteTimeout: route.timeoutSeconds ?? limits.upstreamFirstByteTimeoutSeconds
        )
        let sink = ExchangeSink(exchange: QueueBound(exchange, queue: exchange.queue)) { outcome in
            if case .failed(let error) = outcome {
                logger.warning("upstream failed", metadata: ["error": "\(error.code)", "reason": "\(error.message)"])
            }
        }
        let transfer = CurlTransfer(
            request: request,
            options: options,
            sink: sink,
            relay: CurlTransfer.Relay(match: match, base: base),
            route: route.name,
            provider: route.provider
        )
        let engine = self.engine
        exchange.onClose = { engine.cancel(transfer) }
        if request.body != .none {
            exchange.readBody { [weak exchange] event in
                guard let exchange else { return }
                switch event {
                case .bytes(let bytes):
                    if transfer.appendBody(bytes) {
                        exchange.pauseBody()
                    }
                case .end:
                    transfer.endBody()
                }
            }
        }
        engine.add(transfer)
    }

    private func base(for upstream: String) throws(UpstreamURL.Failure) -> UpstreamURL.Base {
        if let base = self.bases.withLock({ $0[upstream] }) {
            return base
        }
        let base = try UpstreamURL.parseBase(upstream)
        self.bases.withLock { $0[upstream] = base }
        return base
    }
}
