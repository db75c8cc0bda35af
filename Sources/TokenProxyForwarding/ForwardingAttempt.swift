import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// One client request across its upstream attempts: the owner of its
/// ``ForwardingStateMachine``, which it feeds every event (a credential, body bytes, a
/// response head, the end of a transfer, the client leaving) and whose every action it
/// carries out. It keeps what the state machine cannot: the token and credential used, and
/// the transfer in flight. Confined to the exchange's context; the exchange owns it as its
/// observer until the exchange ends, and the attempt then reports the exchange with the
/// machine's outcome.
final class ForwardingAttempt: HTTPExchangeObserver {
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
    /// The exchange, which holds the attempt as its observer until it ends and then drops
    /// it: the cycle lasts as long as the exchange, and a client that leaves while a token is
    /// fetched frees both at once (the token's wait holds the attempt weakly).
    private let exchange: HTTPExchange
    /// Where the access line and the metrics go when the exchange completes.
    private let report: AccessReport
    private var machine: ForwardingStateMachine
    /// The token the current attempt was sent with.
    private var token: AccessToken?
    /// The credential header the current attempt was sent with.
    private var credential: CredentialHeader?
    private var transfer: CurlTransfer?
    /// The reference that callbacks hold (a token wait, the transfers' sinks): a value, made
    /// where it is needed, with no object of its own.
    private var handle: WeakBound<ForwardingAttempt> { WeakBound(self, context: self.context) }

    /// An attempt for `exchange`, not started until ``begin()``.
    init(
        exchange: HTTPExchange,
        report: AccessReport,
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
        self.report = report
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
    func exchangeConnectionClosed(_ exchange: HTTPExchange) {
        self.perform(self.machine.clientClosed())
    }

    /// The exchange ended: reported with how it went upstream, the machine's outcome.
    func exchangeCompleted(_ exchange: HTTPExchange, finished: Bool) {
        self.report.exchangeCompleted(exchange, outcome: self.machine.outcome, finished: finished)
    }

    /// Carries out `action` (in the exchange's context): `bytes` are the request body bytes
    /// of a body event or the response body bytes of a delivery, `head` the response head of
    /// a delivery. (The delivery's parts are passed, not the delivery as an optional: that
    /// would copy it.)
    private func perform(
        _ action: ForwardingStateMachine.Action,
        bytes: [UInt8] = [],
        head: HTTPResponseHead? = nil
    ) {
        let exchange = self.exchange
        switch action {
        case .none, .dropHead, .dropBody:
            break
        case .readSignedBody:
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
        case .obtainCredential(let formBody):
            self.obtainCredential(formBody: formBody)
        case .startTransfer(let attempt, let body):
            self.startTransfer(attempt, body: body, exchange: exchange)
        case .forwardBody:
            if let transfer = self.transfer, transfer.appendBody(bytes) {
                exchange.pauseBody()
            }
        case .endBody:
            self.transfer?.endBody()
        case .relayHead:
            if let head {
                exchange.sendHead(head)
            }
        case .relayBody:
            if !bytes.isEmpty {
                exchange.sendBody(bytes)
            }
        case .finish:
            exchange.finish()
        case .abort:
            exchange.abort()
        case .answer(let error):
            exchange.respond(to: error)
        case .reauthorize(let formBody):
            // Once the refused answer was drained, through the queue: the new credential may
            // be at hand, and the replay must not start inside the delivery that ended.
            self.handle.execute { attempt in
                attempt?.reauthorize(formBody: formBody)
            }
        case .proveAgain(let formBody):
            // As for a replay: after the dropped answer, through the queue.
            self.handle.execute { attempt in
                attempt?.proveAgain(formBody: formBody)
            }
        case .cancelTransfer:
            if let transfer = self.transfer {
                self.engine.cancel(transfer)
            }
        }
    }

    /// Sends the request again after a 401 that asked for a DPoP nonce: the same token, with
    /// a new proof that carries the nonce (RFC 9449 §9).
    private func proveAgain(formBody: [UInt8]?) {
        guard let entry = self.entry, let token = self.token else {
            self.perform(
                self.machine.credentialFailed(ProxyError(.tokenUnavailable, "no token to prove possession of"))
            )
            return
        }
        token.binding?.nonceRetried(at: .upstream)
        self.logger.info("sending again with the DPoP nonce", metadata: ["route": "\(self.match.route.name)"])
        self.credentialArrived(.success(token), entry: entry, formBody: formBody)
    }

    /// A body event while the body to sign is read whole.
    private func signedBodyEvent(_ event: RequestBodyEvent) {
        switch event {
        case .bytes(let bytes): self.perform(self.machine.signedBodyReceived(bytes))
        case .end: self.perform(self.machine.signedBodyEnded())
        }
    }

    /// Replays after a dropped refusal (a 401, or a status of `renew_on_status`): the token
    /// it answered is invalidated (if still current) and a credential obtained again.
    private func reauthorize(formBody: [UInt8]?) {
        guard !self.exchange.isComplete else { return }
        if let token = self.token {
            self.entry?.source.invalidate(token)
        }
        self.logger.info("replaying with a renewed token", metadata: ["route": "\(self.match.route.name)"])
        self.obtainCredential(formBody: formBody)
    }

    /// Asks the provider for the credential; a credential that signs requests signs
    /// `formBody` too.
    private func obtainCredential(formBody: [UInt8]?) {
        guard let entry = self.entry else { return }
        if let token = entry.source.tokenAtHand() {
            self.credentialArrived(.success(token), entry: entry, formBody: formBody)
            return
        }
        let handle = self.handle
        entry.source.token { result in
            // A token that had to be waited for: its completion may come on any thread, and
            // one that comes in the exchange's context starts the transfer there at once.
            handle.executeNowOrLater { attempt in
                attempt?.credentialArrived(result, entry: entry, formBody: formBody)
            }
        }
    }

    private func credentialArrived(
        _ result: Result<AccessToken, ProxyError>,
        entry: CredentialRegistry.Entry,
        formBody: [UInt8]?
    ) {
        let exchange = self.exchange
        guard !exchange.isComplete else { return }
        // The usual case, a token formatted into its header, is taken without describing the
        // request, which copies the method, the URL and the logger.
        if let credential = CredentialRequest.formatted(result, entry: entry, requestStart: exchange.startTime) {
            self.token = credential.token
            self.credential = credential.header
            self.perform(self.machine.credentialObtained(fetchedForRequest: credential.fetchedForRequest))
            return
        }
        let request = CredentialRequest(
            entry: entry,
            method: exchange.head.method,
            url: self.url,
            formBody: formBody,
            route: self.match.route.name,
            requestStart: exchange.startTime,
            logger: self.logger
        )
        switch request.credential(from: result) {
        case .success(let credential):
            self.token = credential.token
            self.credential = credential.header
            self.perform(self.machine.credentialObtained(fetchedForRequest: credential.fetchedForRequest))
        case .failure(let error):
            self.perform(self.machine.credentialFailed(error))
        }
    }
}

// MARK: Transfers

extension ForwardingAttempt {
    /// Starts a transfer for `attempt` with the current credential, sending `body`; a resend
    /// opens a new upstream connection rather than take one from the cache.
    private func startTransfer(
        _ attempt: ForwardingStateMachine.Attempt,
        body: ForwardingStateMachine.Body,
        exchange: HTTPExchange
    ) {
        let request = UpstreamRequestBuilder.build(
            head: exchange.head,
            match: self.match,
            url: self.url,
            credential: self.credential,
            clientAddress: exchange.remoteAddress
        )
        let options: CurlTransfer.Options
        switch self.match.upstreamOptions(
            limits: self.limits,
            provider: self.entry?.certifyingConfiguration,
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
        let transfer = CurlTransfer(
            engine: self.engine,
            request: request,
            options: options,
            sink: ExchangeSink(
                exchange: QueueBound(exchange, context: self.context),
                owner: self.handle,
                match: self.match,
                base: self.base
            ),
            route: self.match.route.name,
            provider: self.match.route.provider
        )
        self.transfer = transfer
        switch body {
        case .none:
            break
        case .fromClient:
            // Read only now: nothing is read while the credential is obtained.
            exchange.readBody { [weak self] event in
                self?.receivedBody(event)
            }
        case .kept(let bytes):
            _ = transfer.appendBody(bytes)
            transfer.endBody()
        }
        self.engine.add(transfer)
    }

    /// The client's body, for the first attempt's transfer.
    private func receivedBody(_ event: RequestBodyEvent) {
        switch event {
        case .bytes(let bytes): self.perform(self.machine.requestBodyReceived(bytes), bytes: bytes)
        case .end: self.perform(self.machine.requestBodyEnded())
        }
    }

    /// What one engine turn collected for the current transfer (in the exchange's context):
    /// each part is an event of the state machine, carried out in one batch (one flush); the
    /// body bytes are then reported to the transfer's flow control.
    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer, to exchange: HTTPExchange) {
        var relayedBody = false
        exchange.batch { _ in
            // The head is read where the delivery holds it; it is bound (and so copied) only for
            // a 401 or a DPoP-bound token, which look into it.
            if let status = delivery.head?.status {
                var refusal: ProxyError?
                var asksForNonce = false
                if status == 401, let head = delivery.head {
                    refusal = self.refusal(of: head)
                }
                if let binding = self.token?.binding, let head = delivery.head {
                    asksForNonce = binding.asksForNonce(head, url: self.url)
                }
                self.perform(
                    self.machine.responseHeadReceived(status: status, refusal: refusal, asksForNonce: asksForNonce),
                    head: delivery.head
                )
            }
            if delivery.resentByLibcurl {
                self.perform(self.machine.libcurlResent())
            }
            if delivery.bodyBytes > 0 {
                let action = self.machine.responseBodyReceived()
                relayedBody = action == .relayBody
                self.perform(action, bytes: delivery.body)
            }
            if let end = delivery.end {
                self.perform(self.transferEnded(end))
            }
        }
        guard delivery.bodyBytes > 0 else { return }
        guard relayedBody else {
            transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
            return
        }
        let writable = exchange.isComplete || exchange.isWritable
        transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: writable)
        if writable {
            // A hook an earlier delivery left is stale: this one found room.
            exchange.onWritable = nil
        } else {
            exchange.onWritable = {
                exchange.onWritable = nil
                transfer.consumerBecameWritable()
            }
        }
    }

    /// The state machine's answer to the end of the transfer; an upstream failure the client
    /// is answered with, and a resend, are logged.
    private func transferEnded(_ end: CurlDelivery.End) -> ForwardingStateMachine.Action {
        let action: ForwardingStateMachine.Action
        switch end {
        case .finish: action = self.machine.transferEnded(.finish)
        case .abort: action = self.machine.transferEnded(.abort)
        case .fail(let error): action = self.machine.transferEnded(.fail(error))
        case .lostReusedConnection(let error):
            action = self.machine.transferEnded(.lostReusedConnection(error))
            if case .startTransfer(.resend, _) = action {
                // The same credential: the connection failed, not the token.
                self.logger.info(
                    "resending on a new upstream connection",
                    metadata: ["route": "\(self.match.route.name)", "reason": "\(error.message)"]
                )
            }
        }
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
