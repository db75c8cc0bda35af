import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyMetrics
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// Forwards routed requests with libcurl: resolves the route's upstream URL and provider, and
/// hands each request to a ``ForwardingAttempt``, which obtains the credential and streams
/// both bodies through a ``CurlTransfer`` as its ``ForwardingStateMachine`` decides.
package final class CurlForwarder: RouteForwarder {
    /// The engines; a client connection's requests all go through one of them.
    private let engines: [CurlEngine]
    private let credentials: CredentialRegistry
    /// Fixed at start, like the listeners (a reload changes providers, not limits).
    private let limits: Limits
    /// Open tunnels against `limits.max_tunnels`.
    let tunnels: TunnelSlots

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

    /// Creates a forwarder over several engines (at least one) for `configuration`'s
    /// providers, keeping tokens in `store` (by default the configuration's `token_store`)
    /// and counting token requests in `metrics`; token requests go through the first engine.
    package convenience init(
        configuration: ProxyConfiguration,
        engines: [CurlEngine],
        store: (any TokenStore)? = nil,
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        precondition(!engines.isEmpty, "a forwarder needs an engine")
        let credentials = CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: engines[0]),
            store: store ?? configuration.tokenStore.makeStore(metrics: metrics, logger: logger),
            metrics: metrics,
            logger: logger
        )
        self.init(engines: engines, credentials: credentials, limits: configuration.limits)
    }

    /// Creates a forwarder over several engines (at least one) with the providers'
    /// `credentials`: each client connection is served by one of the engines. An engine
    /// writes an answer to its client connection itself when the connection is idle instead
    /// of handing it to the connection's queue (`docs/contributing/architecture.md`).
    package init(engines: [CurlEngine], credentials: CredentialRegistry, limits: Limits) {
        precondition(!engines.isEmpty, "a forwarder needs an engine")
        self.engines = engines
        self.credentials = credentials
        self.limits = limits
        self.tunnels = TunnelSlots(limit: limits.maxTunnels)
    }

    /// The providers' credential sources, for `readyz`.
    package var credentialRegistry: CredentialRegistry? { self.credentials }

    /// Applies a reloaded configuration to the providers.
    package func reload(_ configuration: ProxyConfiguration) {
        self.credentials.reload(configuration)
    }

    /// Sends `exchange` upstream along `match`; `report` is told how it went when it ends.
    package func forward(
        _ exchange: HTTPExchange,
        along match: Router.Match,
        report: AccessReport,
        logger: Logger
    ) {
        // An exchange the connection already ended (its client left) has had its end reported.
        guard !exchange.isComplete else { return }
        // The route is read where the router keeps it: a local copy would copy all its fields.
        let base: UpstreamURL.Base
        let url: String
        do throws(UpstreamURL.Failure) {
            base = try match.base.get()
            url = try UpstreamURL.build(base: base, path: match.upstreamPath, query: exchange.head.query)
        } catch {
            ForwardingRecord.observe(exchange, reportedBy: report)
            exchange.respond(
                ErrorResponse.response(
                    for: ProxyError(.badRequest, "cannot build the upstream URL: \(error)", route: match.route.name)
                )
            )
            return
        }
        let limits = self.limits
        let hasBody = exchange.head.framing != .none && exchange.head.framing != .contentLength(0)
        var entry: CredentialRegistry.Entry?
        if let providerName = match.route.provider {
            // The route's entry as taken when the configuration was loaded, without a look-up
            // by name.
            guard let found = match.services?.provider ?? self.credentials.entry(providerName) else {
                ForwardingRecord.observe(exchange, reportedBy: report)
                exchange.respond(
                    ErrorResponse.response(
                        for: ProxyError(
                            .tokenUnavailable,
                            "unknown provider",
                            route: match.route.name,
                            provider: providerName
                        )
                    )
                )
                return
            }
            // A client that brought its own credential on a `keep` route gets nothing injected.
            if !(match.route.incomingAuthorization == .keep && exchange.head.headers.contains(found.formatter.header)) {
                entry = found
            }
        }
        switch TunnelRequest.kind(of: exchange.head, along: match) {
        case .ordinary:
            break
        case .refused(let error):
            ForwardingRecord.observe(exchange, reportedBy: report)
            exchange.respond(to: error)
            return
        case .upgrade(let protocols):
            let record = ForwardingRecord.observe(exchange, reportedBy: report)
            guard self.tunnels.take() else {
                exchange.respond(
                    to: ProxyError(
                        .tooManyTunnels,
                        "\(self.tunnels.limit) tunnels are open (limits.max_tunnels)",
                        route: match.route.name
                    )
                )
                return
            }
            // A handshake is an attempt like any request's: the same rule replays a refused
            // one; it has no body, and it is never resent (each opens its own connection).
            let machine = ForwardingStateMachine(
                replay: ReplayStateMachine(
                    replaysUnauthorized: match.route.retryOn401 && entry?.source.canRenew == true,
                    renewingOn: match.route.renewOnStatus,
                    idempotent: false,
                    limit: 0,
                    hasBody: false,
                    provesPossession: entry?.configuration.dpop != nil
                ),
                needsCredential: entry != nil,
                hasBody: false,
                signsBody: false,
                signedBodyLimit: 0
            )
            TunnelAttempt(
                exchange: exchange,
                record: record,
                match: match,
                base: base,
                url: url,
                protocols: protocols,
                entry: entry,
                machine: machine,
                limits: limits,
                slots: self.tunnels,
                logger: logger
            ).begin()
            return
        }
        let idempotent = ReplayStateMachine.isIdempotent(exchange.head.method)
        let machine = ForwardingStateMachine(
            replay: ReplayStateMachine(
                replaysUnauthorized: match.route.retryOn401 && entry?.source.canRenew == true,
                renewingOn: match.route.renewOnStatus,
                idempotent: idempotent,
                limit: limits.replayBufferBytes,
                hasBody: hasBody,
                provesPossession: entry?.configuration.dpop != nil
            ),
            needsCredential: entry != nil,
            hasBody: hasBody,
            // A form body is signed with the request (RFC 5849 §3.4.1.3.1), so it is read
            // whole first, within the replay buffer's bound.
            signsBody: entry?.requestAuthorizer != nil && hasBody && Self.isForm(exchange.head),
            signedBodyLimit: limits.replayBufferBytes
        )
        let attempt = ForwardingAttempt(
            exchange: exchange,
            report: report,
            match: match,
            base: base,
            url: url,
            entry: entry,
            idempotent: idempotent,
            machine: machine,
            engine: self.engine(for: exchange),
            limits: limits,
            logger: logger
        )
        // The exchange owns the attempt, its observer, until it ends; a client that leaves stops
        // its transfer.
        exchange.observer = attempt
        attempt.begin()
    }

    /// Whether the request's body is `application/x-www-form-urlencoded` (parameters ignored).
    private static func isForm(_ head: HTTPRequestHead) -> Bool {
        guard let type = head.headers.first("Content-Type") else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingHTTPWhitespace() } ?? ""
        return media.equalsIgnoringASCIICase("application/x-www-form-urlencoded")
    }

    /// The engine serving `exchange`'s connection: chosen by the connection's context, so the
    /// same for all of its requests, in turn by the order the contexts were made, so that
    /// connections spread evenly over the engines with no hashing per request (a seeded hash
    /// of the context's address takes a hundred instructions).
    private func engine(for exchange: HTTPExchange) -> CurlEngine {
        guard self.engines.count > 1 else { return self.engines[0] }
        return self.engines[Int(exchange.context.ordinal % UInt(self.engines.count))]
    }
}
