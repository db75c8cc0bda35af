import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// One upgrade request (`docs/guide/websocket.md`): an attempt of the same
/// ``ForwardingStateMachine`` as a forwarded request, whose transfer is the handshake
/// upstream on a `tp-tunnel` thread. The machine decides as for any request: the
/// credential, one replay after a 401 (or a status of `renew_on_status`) with a renewed
/// credential, the answer relayed; a relayed `101` then becomes the tunnel (``TunnelPump``).
///
/// Confined to the exchange's context. It holds one of the forwarder's tunnel slots from
/// its start to its end, whatever the way it ends.
final class TunnelAttempt {
    /// The threads the handshakes block on (connect, TLS, the answer head), each bounded by
    /// the connect and first-byte timeouts.
    static let worker = BlockingWorker(name: "tp-tunnel")

    private let exchange: HTTPExchange
    /// Where how the tunnel went upstream is left for the access line and the metrics.
    private let record: ForwardingRecord
    private let match: Router.Match
    private let base: UpstreamURL.Base
    private let url: String
    private let protocols: [String]
    private let entry: CredentialRegistry.Entry?
    private let limits: Limits
    private let slots: TunnelSlots
    private let logger: Logger
    private var machine: ForwardingStateMachine
    private var token: AccessToken?
    private var credential: CredentialHeader?
    private var pump: TunnelPump?
    /// Whether the attempt ended (answered, or the client left): its slot is given back once.
    private var ended = false
    /// Whether a `tp-tunnel` thread is in the handshake: the slot stays taken until it
    /// returns, even when the client left, so `max_tunnels` bounds those threads and their
    /// upstream connections too.
    private var handshaking = false

    init(
        exchange: HTTPExchange,
        record: ForwardingRecord,
        match: Router.Match,
        base: UpstreamURL.Base,
        url: String,
        protocols: [String],
        entry: CredentialRegistry.Entry?,
        machine: ForwardingStateMachine,
        limits: Limits,
        slots: TunnelSlots,
        logger: Logger
    ) {
        self.exchange = exchange
        self.record = record
        self.match = match
        self.base = base
        self.url = url
        self.protocols = protocols
        self.entry = entry
        self.machine = machine
        self.limits = limits
        self.slots = slots
        self.logger = logger
    }

    private var bound: QueueBound<TunnelAttempt> { QueueBound(self, context: self.exchange.context) }

    /// Starts the request's life. The exchange's `onClose` ends the attempt when the client
    /// leaves.
    func begin() {
        self.exchange.onClose = { [self] in
            self.perform(self.machine.clientClosed())
            self.end()
        }
        self.perform(self.machine.start())
    }

    /// Carries out `action`; `answer` is the handshake's answer when the action concerns it.
    /// The outcome so far is written to the record first, so that an action that ends the
    /// exchange is logged with it.
    private func perform(_ action: ForwardingStateMachine.Action, answer: CurlTunnelHandshake.Answer? = nil) {
        self.record.outcome = self.machine.outcome
        switch action {
        case .none, .readSignedBody, .refuseSignedBody, .forwardBody, .endBody, .cancelTransfer:
            // An upgrade has no body to read or sign, and a handshake's thread cannot be
            // stopped: it returns within the connect and first-byte timeouts.
            break
        case .obtainCredential:
            self.obtainCredential()
        case .startTransfer:
            self.handshake()
        case .relayHead:
            guard let answer else { break }
            if let tunnel = answer.tunnel {
                self.exchange.upgrade(answer.head)
                let pump = TunnelPump(exchange: self.exchange, tunnel: tunnel) { [self] in self.end() }
                self.pump = pump
                pump.start(leftover: answer.leftover)
            } else {
                self.exchange.sendHead(answer.head)
            }
        case .dropHead, .dropBody:
            answer?.tunnel?.close()
        case .relayBody:
            if let body = answer?.body {
                self.exchange.sendBody(body)
            }
        case .finish:
            self.exchange.finish()
            self.end()
        case .abort:
            self.exchange.abort()
            self.end()
        case .answer(let error):
            self.exchange.respond(to: error)
            self.end()
        case .reauthorize:
            if let token = self.token {
                self.entry?.source.invalidate(token)
            }
            self.logger.info("replaying with a renewed token", metadata: ["route": "\(self.match.route.name)"])
            self.obtainCredential()
        case .proveAgain:
            // The same token with a new proof carrying the nonce the 401 gave (RFC 9449 §9).
            guard let entry = self.entry, let token = self.token else {
                self.perform(
                    self.machine.credentialFailed(ProxyError(.tokenUnavailable, "no token to prove possession of"))
                )
                break
            }
            token.binding?.nonceRetried(at: .upstream)
            self.logger.info("sending again with the DPoP nonce", metadata: ["route": "\(self.match.route.name)"])
            self.credentialArrived(.success(token), entry: entry)
        }
    }

    private func obtainCredential() {
        guard let entry = self.entry else { return }
        if let token = entry.source.tokenAtHand() {
            self.credentialArrived(.success(token), entry: entry)
            return
        }
        let bound = self.bound
        entry.source.token { result in
            bound.executeNowOrLater { $0.credentialArrived(result, entry: entry) }
        }
    }

    private func credentialArrived(_ result: Result<AccessToken, ProxyError>, entry: CredentialRegistry.Entry) {
        guard !self.ended else { return }
        let request = CredentialRequest(
            entry: entry,
            method: self.exchange.head.method,
            url: self.url,
            formBody: nil,
            route: self.match.route.name,
            requestStart: self.exchange.startTime,
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

    private func handshake() {
        let options: CurlRequestSetup.Options
        switch self.match.upstreamOptions(limits: self.limits, provider: self.entry?.certifyingConfiguration) {
        case .success(let made): options = made
        case .failure(let error):
            self.perform(self.machine.transferFailedToStart(error))
            return
        }
        let request = UpstreamRequestBuilder.build(
            head: self.exchange.head,
            match: self.match,
            url: self.url,
            credential: self.credential,
            clientAddress: self.exchange.remoteAddress
        )
        let head = TunnelRequest.head(request, base: self.base, protocols: self.protocols)
        let bound = self.bound
        let url = self.url
        let offered = self.protocols
        let isHead = self.exchange.head.isHead
        self.handshaking = true
        Self.worker.run {
            let result = CurlTunnelHandshake.perform(
                url: url,
                options: options,
                requestHead: head,
                offered: offered,
                isHead: isHead
            )
            bound.execute { $0.handshakeFinished(result) }
        }
    }

    /// The handshake's answer, fed to the machine as a transfer's: its head, its body (an
    /// answer other than `101`), and its end, in one batch.
    private func handshakeFinished(_ result: Result<CurlTunnelHandshake.Answer, CurlTunnelHandshake.Failure>) {
        self.handshaking = false
        guard !self.ended else {
            // The client left during the handshake: its slot was kept for this thread.
            if case .success(let answer) = result {
                answer.tunnel?.close()
            }
            self.slots.release()
            return
        }
        switch result {
        case .failure(let failure):
            let error = ProxyError(
                failure.timedOut ? .upstreamTimeout : .upstreamUnreachable,
                failure.message,
                route: self.match.route.name
            )
            self.logger.warning("upstream failed", metadata: ["error": "\(error.code)", "reason": "\(error.message)"])
            self.perform(self.machine.transferEnded(.fail(error)))
        case .success(let answer):
            let status = answer.head.status
            let refusal = status == 401 ? self.refusal(of: answer.head) : nil
            // Any answer's DPoP-Nonce is kept for the next proof, a 101's too.
            let asksForNonce = self.token?.binding?.asksForNonce(answer.head, url: self.url) ?? false
            if answer.tunnel != nil {
                // The tunnel's bytes are the pump's: the machine's part ends with the head. Not
                // in a batch: the pump's first reads must reach the client as they are made,
                // or a client that takes them all at the batch's end, with no write left
                // waiting, would never report itself writable to a pump waiting for it.
                let action = self.machine.responseHeadReceived(status: status, refusal: refusal)
                self.perform(action, answer: answer)
                if action == .dropHead {
                    // Not a status a route renews on today; should one be, its end follows.
                    self.perform(self.machine.transferEnded(.finish))
                }
                return
            }
            self.exchange.batch { _ in
                self.perform(
                    self.machine.responseHeadReceived(status: status, refusal: refusal, asksForNonce: asksForNonce),
                    answer: answer
                )
                if !answer.body.isEmpty {
                    self.perform(self.machine.responseBodyReceived(), answer: answer)
                }
                self.perform(self.machine.transferEnded(.finish))
            }
        }
    }

    /// The error to answer instead of a 401 when the provider says the credential itself was
    /// refused.
    private func refusal(of head: HTTPResponseHead) -> ProxyError? {
        guard var error = self.entry?.requestAuthorizer?.refusal(of: head) else { return nil }
        error.route = self.match.route.name
        return error
    }

    /// Ends the attempt once: the tunnel closes, and the slot is given back.
    private func end() {
        guard !self.ended else { return }
        self.ended = true
        self.pump?.close()
        self.pump = nil
        if !self.handshaking {
            self.slots.release()
        }
        self.exchange.onClose = nil
    }
}

@available(*, unavailable)
extension TunnelAttempt: Sendable {}
