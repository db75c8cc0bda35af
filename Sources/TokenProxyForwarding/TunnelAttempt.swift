import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// One upgrade request (`docs/guide/websocket.md`): the credential, the handshake upstream on
/// a `tp-tunnel` thread, one replay after a 401 with a renewed credential, then either the
/// tunnel (``TunnelPump``) or the upstream's answer relayed as an ordinary response.
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
    private var token: AccessToken?
    private var replayed = false
    private var pump: TunnelPump?
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
        self.limits = limits
        self.slots = slots
        self.logger = logger
    }

    private var bound: QueueBound<TunnelAttempt> { QueueBound(self, context: self.exchange.context) }

    /// Starts with the credential. The exchange's `onClose` ends the attempt when the client leaves.
    func begin() {
        self.exchange.onClose = { [self] in self.end() }
        self.obtainCredential()
    }

    private func obtainCredential() {
        guard let entry = self.entry else {
            self.handshake(credential: nil)
            return
        }
        let bound = self.bound
        entry.source.token { result in
            bound.executeNowOrLater { $0.credentialArrived(result, entry: entry) }
        }
    }

    private func credentialArrived(_ result: Result<AccessToken, ProxyError>, entry: CredentialRegistry.Entry) {
        guard !self.ended else { return }
        let header = result.flatMap { token -> Result<CredentialHeader, ProxyError> in
            self.token = token
            if let authorizer = entry.requestAuthorizer {
                return authorizer.authorization(method: self.exchange.head.method, url: self.url, formBody: nil)
            }
            return entry.header(for: token)
        }
        switch header {
        case .success(let header):
            if let obtained = self.token?.obtainedAt, obtained >= self.exchange.startTime {
                self.record.outcome.tokenRefreshed = true
            }
            self.handshake(credential: header)
        case .failure(var error):
            error.route = self.match.route.name
            self.logger.warning(
                "no credential",
                metadata: [
                    "provider": "\(entry.configuration.name)", "error": "\(error.code)", "reason": "\(error.message)",
                ]
            )
            self.answer(error)
        }
    }

    private func handshake(credential: CredentialHeader?) {
        let route = self.match.route
        let options: CurlRequestSetup.Options
        switch route.upstreamOptions(limits: self.limits) {
        case .success(let made): options = made
        case .failure(let error):
            self.answer(error)
            return
        }
        let request = UpstreamRequestBuilder.build(
            head: self.exchange.head,
            match: self.match,
            url: self.url,
            credential: credential,
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
        let route = self.match.route
        switch result {
        case .failure(let failure):
            self.record.outcome.upstreamFailure = failure.timedOut ? .timeout : .unreachable
            let error = ProxyError(
                failure.timedOut ? .upstreamTimeout : .upstreamUnreachable,
                failure.message,
                route: route.name
            )
            self.logger.warning("upstream failed", metadata: ["error": "\(error.code)", "reason": "\(error.message)"])
            self.answer(error)
        case .success(let answer) where route.renewOnStatus.contains(answer.head.status) && self.replays:
            // RFC 6750 §3.1: the token was refused (a 401, or a status of `renew_on_status`);
            // a renewed one is tried once.
            self.replayed = true
            self.record.outcome.replayed = true
            if let token = self.token {
                self.entry?.source.invalidate(token)
            }
            self.logger.info(
                "replaying with a renewed token",
                metadata: ["route": "\(route.name)", "upstream.status": "\(answer.head.status)"]
            )
            self.obtainCredential()
        case .success(let answer):
            if let tunnel = answer.tunnel {
                self.exchange.upgrade(answer.head)
                let pump = TunnelPump(exchange: self.exchange, tunnel: tunnel) { [self] in self.end() }
                self.pump = pump
                pump.start(leftover: answer.leftover)
            } else {
                var response = HTTPResponse(status: answer.head.status, body: answer.body)
                response.head = answer.head
                self.exchange.respond(response)
                self.end()
            }
        }
    }

    /// Whether a refusal of the handshake (`renew_on_status`) is replayed once with a renewed
    /// credential.
    private var replays: Bool {
        !self.replayed && self.match.route.retryOn401 && self.entry?.source.canRenew == true
    }

    private func answer(_ error: ProxyError) {
        self.exchange.respond(to: error)
        self.end()
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
