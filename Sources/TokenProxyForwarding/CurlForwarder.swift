import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Forwards routed requests with libcurl: gets the route's credential, builds the upstream
/// request from parsed parts, and streams both bodies through a ``CurlTransfer``.
package final class CurlForwarder: RouteForwarder {
    /// The engines; a client connection's requests all go through one of them.
    private let engines: [CurlEngine]
    private let credentials: CredentialRegistry
    /// Fixed at start, like the listeners (a reload changes providers, not limits).
    private let limits: Limits
    private let bases = Mutex<[String: UpstreamURL.Base]>([:])

    /// Creates a forwarder over `engine` for `configuration`'s providers, keeping tokens in
    /// `store` (by default the configuration's `token_store`).
    package convenience init(
        configuration: ProxyConfiguration,
        engine: CurlEngine,
        store: (any TokenStore)? = nil,
        logger: Logger
    ) {
        self.init(configuration: configuration, engines: [engine], store: store, logger: logger)
    }

    /// Creates a forwarder over several engines (at least one): each client connection is
    /// served by one of them, the proxy's own requests by the first. An engine writes an
    /// answer to its client connection itself when the connection is idle instead of handing
    /// it to the connection's queue (`docs/contributing/architecture.md`).
    package init(
        configuration: ProxyConfiguration,
        engines: [CurlEngine],
        store: (any TokenStore)? = nil,
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        precondition(!engines.isEmpty, "a forwarder needs an engine")
        self.engines = engines
        self.credentials = CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: engines[0]),
            store: store ?? configuration.tokenStore.makeStore(),
            metrics: metrics,
            logger: logger
        )
        self.limits = configuration.limits
    }

    /// The providers' credential sources, for `readyz`.
    package var credentialRegistry: CredentialRegistry? { self.credentials }

    /// Applies a reloaded configuration to the providers.
    package func reload(_ configuration: ProxyConfiguration) {
        self.credentials.reload(configuration)
    }

    /// Sends `exchange` upstream along `match`.
    package func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger) {
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
        let limits = self.limits
        let hasBody = exchange.head.framing != .none && exchange.head.framing != .contentLength(0)
        var entry: CredentialRegistry.Entry?
        if let providerName = route.provider {
            guard let found = self.credentials.entry(providerName) else {
                exchange.respond(
                    ErrorResponse.response(
                        for: ProxyError(
                            .tokenUnavailable,
                            "unknown provider",
                            route: route.name,
                            provider: providerName
                        )
                    )
                )
                return
            }
            // A client that brought its own credential on a `keep` route gets nothing injected.
            if !(route.incomingAuthorization == .keep && exchange.head.headers.contains(found.formatter.header)) {
                entry = found
            }
        }
        let idempotent = ReplayStateMachine.isIdempotent(exchange.head.method)
        let attempt = ForwardingAttempt(
            match: match,
            base: base,
            url: url,
            entry: entry,
            idempotent: idempotent,
            replay: ReplayStateMachine(
                replaysUnauthorized: route.retryOn401 && entry?.source.canRenew == true,
                idempotent: idempotent,
                limit: limits.replayBufferBytes,
                hasBody: hasBody
            ),
            logger: logger
        )
        if entry?.requestAuthorizer != nil, hasBody, Self.isForm(exchange.head) {
            // A form body is signed with the request (RFC 5849 §3.4.1.3.1), so it is read
            // whole first, within the replay buffer's bound.
            self.readFormBody(exchange, attempt: attempt, limit: limits.replayBufferBytes) { [self] in
                self.obtainCredentialAndStart(exchange, attempt: attempt, limits: limits)
            }
            return
        }
        self.obtainCredentialAndStart(exchange, attempt: attempt, limits: limits)
    }

    /// The header for this attempt: the token formatted, or for a provider that signs each
    /// request, its signature over the method, the URL and a form body.
    private func header(
        for token: AccessToken,
        entry: CredentialRegistry.Entry,
        exchange: HTTPExchange,
        attempt: ForwardingAttempt
    ) -> Result<CredentialHeader, ProxyError> {
        if let authorizer = entry.requestAuthorizer {
            return authorizer.authorization(method: exchange.head.method, url: attempt.url, formBody: attempt.formBody)
        }
        return entry.formatter.header(for: token, provider: entry.configuration.name)
    }

    /// Whether the request's body is `application/x-www-form-urlencoded` (parameters ignored).
    private static func isForm(_ head: HTTPRequestHead) -> Bool {
        guard let type = head.headers.first("Content-Type") else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingHTTPWhitespace() } ?? ""
        return media.equalsIgnoringASCIICase("application/x-www-form-urlencoded")
    }

    /// Reads the whole body into `attempt`, then runs `then`; a body over `limit` bytes is
    /// answered 413 `body_too_large` and the connection closes after it.
    private func readFormBody(
        _ exchange: HTTPExchange,
        attempt: ForwardingAttempt,
        limit: Int,
        then: @escaping () -> Void
    ) {
        var body: [UInt8] = []
        var refused = false
        exchange.readBody { [weak exchange] event in
            guard let exchange, !refused else { return }
            switch event {
            case .bytes(let bytes):
                guard body.count + bytes.count <= limit else {
                    refused = true
                    exchange.respond(
                        ErrorResponse.response(
                            for: ProxyError(
                                .bodyTooLarge,
                                "a form body to sign is larger than limits.replay_buffer_bytes (\(limit))",
                                route: attempt.match.route.name,
                                provider: attempt.match.route.provider
                            )
                        )
                    )
                    return
                }
                body += bytes
            case .end:
                attempt.keepSignedBody(body)
                then()
            }
        }
    }

    private func obtainCredentialAndStart(_ exchange: HTTPExchange, attempt: ForwardingAttempt, limits: Limits) {
        guard let entry = attempt.entry else {
            self.start(exchange, attempt: attempt, credential: nil, limits: limits)
            return
        }
        let routeName = attempt.match.route.name
        // The wait holds neither the exchange nor the attempt: a client that leaves while its
        // token is fetched frees them at once, not when the wait ends. The exchange owns the
        // attempt meanwhile.
        let bound = QueueBound(WeakReference(exchange), context: exchange.context)
        let boundAttempt = QueueBound(WeakReference(attempt), context: exchange.context)
        exchange.onClose = { [attempt] in _ = attempt }
        let logger = attempt.logger
        entry.source.token { [self] result in
            // A token at hand (static, or cached) arrives in the exchange's context: the transfer
            // then starts without another trip through its queue.
            bound.executeNowOrLater { reference in
                guard let exchange = reference.object, !exchange.isComplete,
                    let attempt = boundAttempt.value.object
                else { return }
                switch result.flatMap({ token in
                    self.header(for: token, entry: entry, exchange: exchange, attempt: attempt).map { (token, $0) }
                }) {
                case .success(let (token, header)):
                    attempt.token = token
                    if let obtained = token.obtainedAt, obtained >= exchange.startTime {
                        // This request waited for a token fetched (or refreshed) for it.
                        exchange.logFields["token_refreshed"] = "true"
                    }
                    self.start(exchange, attempt: attempt, credential: header, limits: limits)
                case .failure(var error):
                    error.route = routeName
                    logger.warning(
                        "no credential",
                        metadata: [
                            "provider": "\(entry.configuration.name)", "error": "\(error.code)",
                            "reason": "\(error.message)",
                        ]
                    )
                    exchange.respond(ErrorResponse.response(for: error))
                }
            }
        }
    }

    /// Starts a transfer for `attempt` with `credential`; `freshConnection` makes it open a new
    /// upstream connection rather than take one from the cache.
    private func start(
        _ exchange: HTTPExchange,
        attempt: ForwardingAttempt,
        credential: CredentialHeader?,
        limits: Limits,
        freshConnection: Bool = false
    ) {
        let route = attempt.match.route
        // The closures below keep the route's name, not a copy of its whole configuration.
        let routeName = route.name
        let logger = attempt.logger
        let request = UpstreamRequestBuilder.build(
            head: exchange.head,
            match: attempt.match,
            url: attempt.url,
            credential: credential,
            clientAddress: exchange.remoteAddress
        )
        let clientKey: String?
        do {
            clientKey = try route.clientKey?.resolve()
        } catch {
            exchange.respond(
                ErrorResponse.response(
                    for: ProxyError(
                        .upstreamUnreachable,
                        "the route's client_key cannot be read: \(error)",
                        route: route.name
                    )
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
            firstByteTimeout: route.timeoutSeconds ?? limits.upstreamFirstByteTimeoutSeconds,
            idleTimeout: limits.upstreamIdleSeconds,
            // The upstream may have acted on a request whose connection closed before any
            // answer: libcurl must not send one that is not idempotent again by itself.
            resendable: attempt.idempotent,
            freshConnection: freshConnection
        )
        let bound = QueueBound(exchange, context: exchange.context)
        // Weak: the attempt holds the transfer, which holds this sink.
        let weakAttempt = QueueBound(WeakReference(attempt), context: exchange.context)
        let sink = ExchangeSink(
            exchange: bound,
            interceptUnauthorized: { weakAttempt.value.object?.replayOnUnauthorized() ?? false },
            refuseUnauthorized: { [authorizer = attempt.entry?.requestAuthorizer, routeName] head in
                guard var error = authorizer?.refusal(of: head) else { return nil }
                error.route = routeName
                return error
            },
            onSwallowedResponseEnd: { [self] in
                // Runs in the exchange's context once the refused answer was drained.
                bound.execute { exchange in
                    guard let attempt = weakAttempt.value.object, !exchange.isComplete else { return }
                    if let token = attempt.token {
                        attempt.entry?.source.invalidate(token)
                    }
                    logger.info("replaying after 401", metadata: ["route": "\(routeName)"])
                    exchange.logFields["replayed"] = "true"
                    self.obtainCredentialAndStart(exchange, attempt: attempt, limits: limits)
                }
            },
            resendAfterLostConnection: { [self] exchange, error in
                // In the exchange's context. The same credential: the connection failed, not
                // the token. A new connection, so that another stale one cannot be taken.
                guard let attempt = weakAttempt.value.object, !exchange.isComplete,
                    attempt.resendOnLostConnection()
                else { return false }
                logger.info(
                    "resending on a new upstream connection",
                    metadata: ["route": "\(routeName)", "reason": "\(error.message)"]
                )
                exchange.logFields["resent"] = "true"
                self.start(exchange, attempt: attempt, credential: credential, limits: limits, freshConnection: true)
                return true
            }
        ) { outcome in
            if case .failed(let error) = outcome {
                logger.warning("upstream failed", metadata: ["error": "\(error.code)", "reason": "\(error.message)"])
            }
        }
        let transfer = CurlTransfer(
            request: request,
            options: options,
            sink: sink,
            rewriteLocation: { [match = attempt.match, base = attempt.base] in
                LocationRewrite.rewrite($0, match: match, base: base)
            },
            route: routeName,
            provider: route.provider
        )
        let engine = self.engine(for: exchange)
        // The exchange owns the attempt until it ends (its callbacks are dropped then).
        exchange.onClose = { [attempt] in
            _ = attempt
            engine.cancel(transfer)
        }
        attempt.attach(transfer, exchange: exchange)
        engine.add(transfer)
    }

    /// The engine serving `exchange`'s connection: chosen by the connection's context, so the
    /// same for all of its requests.
    private func engine(for exchange: HTTPExchange) -> CurlEngine {
        guard self.engines.count > 1 else { return self.engines[0] }
        let slot = UInt(bitPattern: ObjectIdentifier(exchange.context).hashValue) % UInt(self.engines.count)
        return self.engines[Int(slot)]
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
