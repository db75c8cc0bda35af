import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// One client request across its upstream attempts: the owner of its
/// ``ForwardingStateMachine``, which feeds it events (a credential, a response head, the end
/// of a transfer, the client leaving) and carries out what it answers. It keeps what the
/// state machine does not: the token and credential used, the body kept for another attempt,
/// and the transfer being fed. Confined to the exchange's context; the exchange owns it (by
/// its `onClose` hook) until the exchange ends.
final class ForwardingAttempt {
    /// The route the request matched and its upstream path.
    let match: Router.Match
    /// The route's upstream, for `Location` rewriting.
    let base: UpstreamURL.Base
    /// The upstream URL every attempt goes to.
    let url: String
    /// The route's provider, when a credential is injected.
    let entry: CredentialRegistry.Entry?
    /// The route's logger.
    let logger: Logger
    /// Whether the request's method is idempotent (RFC 9110 §9.2.2): it may be sent again.
    let idempotent: Bool
    /// The engine serving the exchange's connection.
    let engine: CurlEngine
    /// The limits fixed at start: timeouts and the replay buffer.
    let limits: Limits
    /// The exchange's context, which the attempt is confined to.
    let context: SerialContext
    /// Weak: the exchange owns the attempt, not the other way round; a client that leaves
    /// while a token is fetched frees both at once.
    private weak var exchange: HTTPExchange?
    /// Where the outcome so far is left for the access line and the metrics.
    private let record: ForwardingRecord
    private var machine: ForwardingStateMachine
    /// The token the current attempt was sent with.
    private var token: AccessToken?
    /// The credential header the current attempt was sent with.
    private var credential: CredentialHeader?
    private var kept: [UInt8] = []
    private var bodyComplete = false
    private var transfer: CurlTransfer?
    /// A form body read whole before the first attempt, because the credential signs it.
    private var formBody: [UInt8]?
    /// The reference that callbacks hold (a token wait, the transfers' sinks): made once.
    private lazy var handle = QueueBound(WeakReference(self), context: self.context)

    /// An attempt for `exchange`, not started until ``begin()``.
    init(
        exchange: HTTPExchange,
        record: ForwardingRecord,
        match: Router.Match,
        base: UpstreamURL.Base,
        url: String,
        entry: CredentialRegistry.Entry?,
        idempotent: Bool,
        machine: ForwardingStateMachine,
        engine: CurlEngine,
        limits: Limits,
        logger: Logger
    ) {
        self.exchange = exchange
        self.record = record
        self.context = exchange.context
        self.match = match
        self.base = base
        self.url = url
        self.entry = entry
        self.idempotent = idempotent
        self.machine = machine
        self.engine = engine
        self.limits = limits
        self.logger = logger
    }

    /// Starts the request's life.
    func begin() {
        self.perform(self.machine.start())
    }

    /// The client connection ended before the answer: the transfer in flight (if any) stops.
    func clientClosed() {
        self.perform(self.machine.clientClosed())
    }

    /// Carries out `action` (in the exchange's context). The outcome so far is written to
    /// the record first, so that an action that ends it is logged with it.
    func perform(_ action: ForwardingStateMachine.Action) {
        guard let exchange = self.exchange else { return }
        self.record.outcome = self.machine.outcome
        switch action {
        case .none, .keepSignedBody, .relayResponse, .dropResponse:
            break
        case .readSignedBody:
            self.formBody = []
            exchange.readBody { [weak self] event in
                self?.signedBodyEvent(event)
            }
        case .refuseSignedBody:
            let limit = self.limits.replayBufferBytes
            exchange.respond(
                to: ProxyError(
                    .bodyTooLarge,
                    "a form body to sign is larger than limits.replay_buffer_bytes (\(limit))",
                    route: self.match.route.name,
                    provider: self.match.route.provider
                )
            )
        case .obtainCredential:
            self.obtainCredential()
        case .startTransfer(let attempt):
            self.startTransfer(attempt, exchange: exchange)
        case .finish:
            exchange.finish()
        case .abort:
            exchange.abort()
        case .answer(let error):
            exchange.respond(to: error)
        case .reauthorize:
            // Once the refused answer was drained, through the queue: the new credential may
            // be at hand, and the replay must not start inside the delivery that ended.
            self.handle.execute { reference in
                reference.object?.reauthorize()
            }
        case .cancelTransfer:
            if let transfer = self.transfer {
                self.engine.cancel(transfer)
            }
        }
    }

    /// A body event while the body to sign is read whole.
    private func signedBodyEvent(_ event: RequestBodyEvent) {
        switch event {
        case .bytes(let bytes):
            let action = self.machine.signedBodyReceived(bytes.count)
            if action == .keepSignedBody {
                self.formBody?.append(contentsOf: bytes)
            }
            self.perform(action)
        case .end:
            self.bodyComplete = true
            self.perform(self.machine.signedBodyEnded())
        }
    }

    /// Replays after a dropped refusal (a 401, or a status of `renew_on_status`): the token
    /// it answered is invalidated (if still current) and a credential obtained again.
    private func reauthorize() {
        guard let exchange = self.exchange, !exchange.isComplete else { return }
        if let token = self.token {
            self.entry?.source.invalidate(token)
        }
        self.logger.info("replaying with a renewed token", metadata: ["route": "\(self.match.route.name)"])
        self.obtainCredential()
    }

    /// Asks the provider for the credential; without a provider there is none to wait for.
    private func obtainCredential() {
        guard let entry = self.entry else {
            self.perform(self.machine.credentialObtained(fetchedForRequest: false))
            return
        }
        let handle = self.handle
        entry.source.token { result in
            // A token at hand (static, or cached) arrives in the exchange's context: the
            // transfer then starts without another trip through its queue.
            handle.executeNowOrLater { reference in
                reference.object?.credentialArrived(result, entry: entry)
            }
        }
    }

    private func credentialArrived(_ result: Result<AccessToken, ProxyError>, entry: CredentialRegistry.Entry) {
        guard let exchange = self.exchange, !exchange.isComplete else { return }
        let credential = result.flatMap { token in
            self.header(for: token, entry: entry, exchange: exchange).map { (token, $0) }
        }
        switch credential {
        case .success(let (token, header)):
            self.token = token
            self.credential = header
            // Whether this request waited for a token fetched (or refreshed) for it.
            let fetched = token.obtainedAt.map { $0 >= exchange.startTime } ?? false
            self.perform(self.machine.credentialObtained(fetchedForRequest: fetched))
        case .failure(var error):
            error.route = self.match.route.name
            self.logger.warning(
                "no credential",
                metadata: [
                    "provider": "\(entry.configuration.name)", "error": "\(error.code)",
                    "reason": "\(error.message)",
                ]
            )
            self.perform(self.machine.credentialFailed(error))
        }
    }

    /// The header for this attempt: the token formatted, or for a provider that signs each
    /// request, its signature over the method, the URL and a form body.
    private func header(
        for token: AccessToken,
        entry: CredentialRegistry.Entry,
        exchange: HTTPExchange
    ) -> Result<CredentialHeader, ProxyError> {
        if let authorizer = entry.requestAuthorizer {
            return authorizer.authorization(method: exchange.head.method, url: self.url, formBody: self.formBody)
        }
        return entry.header(for: token)
    }
}

// MARK: Transfers

extension ForwardingAttempt {
    /// Starts a transfer for `attempt` with the current credential; a resend opens a new
    /// upstream connection rather than take one from the cache.
    private func startTransfer(_ attempt: ForwardingStateMachine.Attempt, exchange: HTTPExchange) {
        let route = self.match.route
        let request = UpstreamRequestBuilder.build(
            head: exchange.head,
            match: self.match,
            url: self.url,
            credential: self.credential,
            clientAddress: exchange.remoteAddress
        )
        let options: CurlTransfer.Options
        switch route.upstreamOptions(
            limits: self.limits,
            idleTimeout: self.limits.upstreamIdleSeconds,
            // The upstream may have acted on a request whose connection closed before any
            // answer: libcurl must not send one that is not idempotent again by itself.
            resendable: self.idempotent,
            freshConnection: attempt == .resend
        ) {
        case .success(let made): options = made
        case .failure(let failure):
            self.perform(self.machine.transferFailedToStart(failure))
            return
        }
        let sink = ExchangeSink(exchange: QueueBound(exchange, context: self.context), owner: self.handle)
        let transfer = CurlTransfer(
            engine: self.engine,
            request: request,
            options: options,
            sink: sink,
            rewriteLocation: { [match = self.match, base = self.base] in
                LocationRewrite.rewrite($0, match: match, base: base)
            },
            route: route.name,
            provider: route.provider
        )
        self.transfer = transfer
        self.feedBody(to: transfer, attempt: attempt, exchange: exchange)
        self.engine.add(transfer)
    }

    /// Gives `transfer` its body: a signed form body at once; for the first attempt the
    /// client's body as it arrives (nothing is read while the credential is obtained); for a
    /// later one the kept body at once, which stays kept while yet another attempt is possible.
    private func feedBody(to transfer: CurlTransfer, attempt: ForwardingStateMachine.Attempt, exchange: HTTPExchange) {
        if let formBody = self.formBody {
            _ = transfer.appendBody(formBody)
            transfer.endBody()
        } else if attempt != .first {
            _ = transfer.appendBody(self.kept)
            if !self.machine.keepsBody {
                self.kept = []
            }
            if self.bodyComplete {
                transfer.endBody()
            }
        } else if transfer.request.body != .none {
            exchange.readBody { [weak exchange, weak self] event in
                guard let exchange, let self else { return }
                self.receivedBody(event, exchange: exchange)
            }
        }
    }

    /// The client's body: fed to the current transfer and, while another attempt is possible,
    /// kept.
    private func receivedBody(_ event: RequestBodyEvent, exchange: HTTPExchange) {
        switch event {
        case .bytes(let bytes):
            if self.machine.keepsBody {
                self.machine.requestBodyReceived(bytes.count)
                if self.machine.keepsBody {
                    self.kept += bytes
                } else {
                    self.kept = []
                }
            }
            if let transfer = self.transfer, transfer.appendBody(bytes) {
                exchange.pauseBody()
            }
        case .end:
            self.bodyComplete = true
            self.machine.requestBodyEnded()
            self.transfer?.endBody()
        }
    }

    /// What one engine turn collected for the current transfer (in the exchange's context):
    /// relayed to the client, dropped (a 401 that is replayed or refused), or, for a lost
    /// reused connection, replaced by another attempt.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer, to exchange: HTTPExchange) {
        if let head = delivery.head {
            let refusal = head.status == 401 ? self.refusal(of: head) : nil
            _ = self.machine.responseHeadReceived(status: head.status, refusal: refusal)
        }
        if self.machine.dropsResponse {
            ExchangeSink.drop(delivery, from: transfer)
            if let end = delivery.end {
                self.perform(self.transferEnded(end))
            }
            return
        }
        if delivery.resentByLibcurl {
            _ = self.machine.libcurlResent()
        }
        var ending: ExchangeSink.Ending?
        if let end = delivery.end {
            let action = self.transferEnded(end)
            switch action {
            case .finish:
                ending = .finish
            case .abort:
                ending = .abort
            case .answer(let error):
                ending = .answer(error)
            case .startTransfer, .reauthorize:
                // Another attempt answers the client; this transfer relays nothing. The same
                // credential: the connection failed, not the token.
                if case .lostReusedConnection(let error) = end {
                    self.logger.info(
                        "resending on a new upstream connection",
                        metadata: ["route": "\(self.match.route.name)", "reason": "\(error.message)"]
                    )
                }
                self.perform(action)
                return
            case .none, .readSignedBody, .keepSignedBody, .refuseSignedBody, .obtainCredential, .relayResponse,
                .dropResponse, .cancelTransfer:
                ending = nil
            }
        }
        self.record.outcome = self.machine.outcome
        ExchangeSink.relay(delivery, ending: ending, from: transfer, to: exchange)
    }

    /// The state machine's answer to the end of the transfer; an upstream failure the client
    /// is answered with is logged.
    private func transferEnded(_ end: CurlDelivery.End) -> ForwardingStateMachine.Action {
        let action = self.machine.transferEnded(end)
        if case .answer(let error) = action {
            self.logger.warning("upstream failed", metadata: ["error": "\(error.code)", "reason": "\(error.message)"])
        }
        return action
    }

    /// The error to answer instead of a 401 when the provider says the credential itself was
    /// refused.
    private func refusal(of head: HTTPResponseHead) -> ProxyError? {
        guard var error = self.entry?.requestAuthorizer?.refusal(of: head) else { return nil }
        error.route = self.match.route.name
        return error
    }
}

@available(*, unavailable)
extension ForwardingAttempt: Sendable {}
