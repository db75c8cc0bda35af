import Logging
import Synchronization
import TokenProxyCredentials
import TokenProxyServer
import TokenProxyUpstream

/// One client request across its upstream attempts (the first, at most one replay after a
/// 401, at most one resend after a reused connection failed; ``ReplayStateMachine``): the
/// token used, the body kept for another attempt, and the transfer being fed. Confined to the
/// exchange's context.
final class ForwardingAttempt {
    let match: Router.Match
    let base: UpstreamURL.Base
    let url: String
    let entry: CredentialRegistry.Entry?
    let logger: Logger
    /// Whether the request's method is idempotent (RFC 9110 §9.2.2): it may be sent again.
    let idempotent: Bool
    /// The token the current attempt was sent with.
    var token: AccessToken?
    private var replay: ReplayStateMachine
    private var kept: [UInt8] = []
    private var bodyComplete = false
    private var transfer: CurlTransfer?
    /// A form body read whole before the first attempt, because the credential signs it.
    private(set) var formBody: [UInt8]?

    init(
        match: Router.Match,
        base: UpstreamURL.Base,
        url: String,
        entry: CredentialRegistry.Entry?,
        idempotent: Bool,
        replay: ReplayStateMachine,
        logger: Logger
    ) {
        self.idempotent = idempotent
        self.match = match
        self.base = base
        self.url = url
        self.entry = entry
        self.replay = replay
        self.logger = logger
    }

    /// The client's body: fed to the current transfer and, while another attempt is possible,
    /// kept.
    func receivedBody(_ event: RequestBodyEvent, exchange: HTTPExchange) {
        switch event {
        case .bytes(let bytes):
            if self.replay.keepsBody {
                self.replay.bodyReceived(bytes.count)
                if self.replay.keepsBody {
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
            self.replay.bodyEnded()
            self.transfer?.endBody()
        }
    }

    /// Keeps a body read whole before any transfer: every attempt sends it, and a replay
    /// needs nothing more from the client.
    func keepSignedBody(_ body: [UInt8]) {
        self.formBody = body
        self.bodyComplete = true
        // The body is whole (and within the replay buffer), so another attempt may send it.
        self.replay.bodyReceived(body.count)
        self.replay.bodyEnded()
    }

    /// A new transfer takes over. The first one starts reading the client's body (nothing is
    /// read while the credential is being obtained); a later one gets the kept body at once,
    /// which stays kept while yet another attempt is possible.
    func attach(_ transfer: CurlTransfer, exchange: HTTPExchange) {
        let replaying = self.transfer != nil
        self.transfer = transfer
        if let formBody = self.formBody {
            _ = transfer.appendBody(formBody)
            transfer.endBody()
        } else if replaying {
            _ = transfer.appendBody(self.kept)
            if !self.replay.keepsBody {
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

    /// The upstream answered 401: whether to swallow it and replay.
    func replayOnUnauthorized() -> Bool {
        self.replay.unauthorized() == .replay
    }

    /// The reused connection the current transfer went out on failed before any answer:
    /// whether to send the request again on a new one.
    func resendOnLostConnection() -> Bool {
        self.replay.lostReusedConnection() == .resend
    }
}

@available(*, unavailable)
extension ForwardingAttempt: Sendable {}
