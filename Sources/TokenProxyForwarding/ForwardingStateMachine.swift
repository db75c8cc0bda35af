import TokenProxySupport

/// One request's whole life upstream, forwarded or a tunnel's handshake, as a pure state
/// machine (`docs/reference/upstream.md`): a form body read whole because the credential
/// signs it, the wait for a credential, the transfer in flight and what becomes of its
/// answer (relayed, or a 401 dropped so that the request is replayed with a new
/// credential), a reused connection lost and the request resent on a new one, the client
/// leaving, and the end. Whether another attempt is allowed is
/// ``ReplayStateMachine``'s rule, which this one composes.
///
/// It is the only place that decides: ``ForwardingAttempt`` feeds it every event and carries
/// out every returned ``Action``. It keeps the request body that another attempt may send,
/// so each attempt's body comes with the action that starts it. What happened is collected in
/// ``outcome`` for the access line and the metrics. Every event has an answer in every
/// state: one that does not fit the state (a late credential after the client left, a
/// delivery of a cancelled transfer) is `.none`, or for response bytes `.dropBody`.
struct ForwardingStateMachine: Sendable {
    /// Which attempt a transfer is.
    enum Attempt: Sendable, Equatable {
        /// The first: a request body (if any) is read from the client as it goes out.
        case first
        /// After a 401 was dropped, with a new credential and the kept body.
        case replay
        /// After a reused connection failed before any answer: the same credential and the
        /// kept body, on a new connection.
        case resend
        /// After a 401 asked for a DPoP nonce: the same token with a new proof carrying the
        /// nonce, and the kept body.
        case nonceRetry
    }

    /// The body a transfer sends.
    enum Body: Sendable, Equatable {
        /// The request has none.
        case none
        /// The client's body, read as the transfer sends it (``requestBodyReceived(_:)``).
        case fromClient
        /// The whole body, kept from an earlier read.
        case kept([UInt8])
    }

    /// How a transfer ended (the owner's transfer reports it).
    enum TransferEnd: Sendable, Equatable {
        /// The whole response arrived.
        case finish
        /// The response broke off after its head.
        case abort
        /// No response head arrived; the client is answered with this error.
        case fail(ProxyError)
        /// No byte of a response arrived on a connection reused from the cache; answered
        /// with this error unless the request is sent again.
        case lostReusedConnection(ProxyError)
    }

    /// What the owner is to do.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Read the whole request body first: the credential signs it (RFC 5849 §3.4.1.3.1).
        case readSignedBody
        /// Answer 413 `body_too_large`: the body to sign is larger than the replay buffer.
        case refuseSignedBody
        /// Ask the route's provider for a credential; a credential that signs the request
        /// signs `formBody` with it.
        case obtainCredential(formBody: [UInt8]?)
        /// Start a transfer for this attempt, sending `Body`.
        case startTransfer(Attempt, Body)
        /// Hand the request body bytes just received to the transfer.
        case forwardBody
        /// End the transfer's request body.
        case endBody
        /// Send the response head to the client.
        case relayHead
        /// Drop the response head (a 401 that is replayed or refused).
        case dropHead
        /// Send the response body bytes to the client.
        case relayBody
        /// Drop the response body bytes: the transfer goes on at full speed.
        case dropBody
        /// The answer was relayed whole: finish the client's response.
        case finish
        /// The answer broke off after its head: abort the client connection.
        case abort
        /// Answer the client with this error.
        case answer(ProxyError)
        /// Once the dropped answer ended: invalidate the token it refused, then obtain a
        /// credential again (signing `formBody`, as ``obtainCredential(formBody:)``).
        case reauthorize(formBody: [UInt8]?)
        /// Once the dropped answer ended: make the credential again from the same token (a
        /// new DPoP proof, with the nonce the answer gave), then report it as obtained.
        case proveAgain(formBody: [UInt8]?)
        /// Stop the transfer in flight.
        case cancelTransfer
    }

    private enum State: Sendable, Equatable {
        /// Created; nothing started.
        case idle
        /// Reading the body to sign.
        case readingSignedBody
        /// Waiting for the credential of `attempt`.
        case waitingForCredential(Attempt)
        /// A transfer is in flight.
        case transferring(Response)
        /// The client was answered, or left.
        case finished
    }

    /// Where the answer of the transfer in flight stands.
    private enum Response: Sendable, Equatable {
        /// No head yet.
        case awaitingHead
        /// The head was relayed; the body follows it.
        case relaying
        /// A 401 is being dropped; at its end the client gets `refusal`, or without one the
        /// request is replayed.
        case dropping(refusal: ProxyError?)
        /// A 401 asking for a DPoP nonce is being dropped; at its end the request is sent
        /// again with the nonce.
        case droppingForNonce
    }

    private var state = State.idle
    private var replay: ReplayStateMachine
    private let needsCredential: Bool
    private let hasBody: Bool
    private let signsBody: Bool
    private let signedBodyLimit: Int
    /// The request body as far as it is kept: the whole form body to sign, or the client's
    /// body while ``ReplayStateMachine`` says another attempt may send it.
    private var kept: [UInt8] = []
    /// What happened so far.
    private(set) var outcome = ForwardingOutcome()

    /// `replay` is the rule for further attempts; `needsCredential` whether a provider's
    /// credential is injected; `hasBody` whether the request has a body; `signsBody` whether
    /// it is read whole first, at most `signedBodyLimit` bytes, because the credential signs it.
    init(
        replay: ReplayStateMachine,
        needsCredential: Bool,
        hasBody: Bool,
        signsBody: Bool,
        signedBodyLimit: Int
    ) {
        self.replay = replay
        self.needsCredential = needsCredential
        self.hasBody = hasBody
        self.signsBody = signsBody && hasBody
        self.signedBodyLimit = signedBodyLimit
    }
}

extension ForwardingStateMachine {
    /// The request was routed: read a body to sign, obtain a credential, or start at once.
    mutating func start() -> Action {
        switch self.state {
        case .idle:
            if self.signsBody {
                self.state = .readingSignedBody
                return .readSignedBody
            }
            return self.beginFirstAttempt()
        case .readingSignedBody, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// `bytes` of the body to sign arrived: kept, within the replay buffer.
    mutating func signedBodyReceived(_ bytes: [UInt8]) -> Action {
        switch self.state {
        case .readingSignedBody:
            guard self.kept.count + bytes.count <= self.signedBodyLimit else {
                self.kept = []
                self.state = .finished
                return .refuseSignedBody
            }
            self.kept += bytes
            return .none
        case .idle, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// The body to sign is complete: it is kept whole (within the replay buffer), so another
    /// attempt may send it too.
    mutating func signedBodyEnded() -> Action {
        switch self.state {
        case .readingSignedBody:
            self.replay.bodyReceived(self.kept.count)
            self.replay.bodyEnded()
            return self.beginFirstAttempt()
        case .idle, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// `bytes` of the request body arrived from the client, for the first attempt's transfer;
    /// they are kept while another attempt may send them.
    mutating func requestBodyReceived(_ bytes: [UInt8]) -> Action {
        if self.replay.keepsBody {
            self.replay.bodyReceived(bytes.count)
            if self.replay.keepsBody {
                self.kept += bytes
            } else {
                self.kept = []
            }
        }
        switch self.state {
        case .transferring:
            return .forwardBody
        case .idle, .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// The client's request body is complete.
    mutating func requestBodyEnded() -> Action {
        self.replay.bodyEnded()
        switch self.state {
        case .transferring:
            return .endBody
        case .idle, .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// The provider gave a credential; `fetchedForRequest` when it was fetched while this
    /// request waited.
    mutating func credentialObtained(fetchedForRequest: Bool) -> Action {
        switch self.state {
        case .waitingForCredential(let attempt):
            if fetchedForRequest {
                self.outcome.tokenRefreshed = true
            }
            return self.startTransfer(attempt)
        case .idle, .readingSignedBody, .transferring, .finished:
            return .none
        }
    }

    /// The provider could not give a credential: the client gets `error`.
    mutating func credentialFailed(_ error: ProxyError) -> Action {
        switch self.state {
        case .waitingForCredential:
            return self.finish(failure: nil, .answer(error))
        case .idle, .readingSignedBody, .transferring, .finished:
            return .none
        }
    }

    /// The transfer could not be set up (a client key that cannot be read): the client gets
    /// `error`.
    mutating func transferFailedToStart(_ error: ProxyError) -> Action {
        switch self.state {
        case .transferring(.awaitingHead):
            return self.finish(failure: nil, .answer(error))
        case .transferring(.relaying), .transferring(.dropping), .transferring(.droppingForNonce), .idle,
            .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// The response head arrived. A 401 is dropped when the provider says the credential
    /// itself was refused (`refusal`, answered instead), or when it asks for a DPoP nonce
    /// (`asksForNonce`) and the request may be sent again with it (a second such 401 is
    /// relayed: the token is fine); a 401 or another status the route renews on
    /// (`renew_on_status`) is dropped when the request is replayed.
    mutating func responseHeadReceived(status: Int, refusal: ProxyError?, asksForNonce: Bool = false) -> Action {
        switch self.state {
        case .transferring(.awaitingHead):
            if status == 401, let refusal {
                self.state = .transferring(.dropping(refusal: refusal))
                return .dropHead
            }
            if status == 401, asksForNonce, self.replay.provesPossession {
                // A nonce challenge never renews the token (RFC 9449 §9): answered once with
                // the nonce, then relayed.
                guard self.replay.nonceRequested() else {
                    self.state = .transferring(.relaying)
                    return .relayHead
                }
                self.state = .transferring(.droppingForNonce)
                return .dropHead
            }
            if self.replay.renews(status), self.replay.unauthorized() == .replay {
                self.state = .transferring(.dropping(refusal: nil))
                return .dropHead
            }
            self.state = .transferring(.relaying)
            return .relayHead
        case .transferring(.relaying), .transferring(.dropping), .transferring(.droppingForNonce), .idle,
            .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// Bytes of the response body arrived: relayed after a relayed head, dropped otherwise.
    mutating func responseBodyReceived() -> Action {
        switch self.state {
        case .transferring(.relaying):
            return .relayBody
        case .transferring(.awaitingHead), .transferring(.dropping), .transferring(.droppingForNonce), .idle,
            .readingSignedBody, .waitingForCredential, .finished:
            return .dropBody
        }
    }

    /// libcurl sent the request again by itself on a new connection (idempotent methods
    /// only). An answer being dropped does not count.
    mutating func libcurlResent() -> Action {
        switch self.state {
        case .transferring(.awaitingHead), .transferring(.relaying):
            self.outcome.resent = true
        case .transferring(.dropping), .transferring(.droppingForNonce), .idle, .readingSignedBody,
            .waitingForCredential, .finished:
            break
        }
        return .none
    }

    /// The transfer in flight ended.
    mutating func transferEnded(_ end: TransferEnd) -> Action {
        switch self.state {
        case .transferring(.awaitingHead):
            switch end {
            case .finish, .abort:
                // Not an end a transfer reports without a head; the client sees a broken answer.
                return self.finish(failure: .aborted, .abort)
            case .fail(let error):
                return self.finish(failure: Self.failure(error), .answer(error))
            case .lostReusedConnection(let error):
                guard self.replay.lostReusedConnection() == .resend else {
                    return self.finish(failure: Self.failure(error), .answer(error))
                }
                self.outcome.resent = true
                return self.startTransfer(.resend)
            }
        case .transferring(.relaying):
            if case .finish = end {
                return self.finish(failure: nil, .finish)
            }
            // Broken off after the head: the client must see the body break off too.
            return self.finish(failure: .aborted, .abort)
        case .transferring(.dropping(let refusal)):
            if let refusal {
                return self.finish(failure: nil, .answer(refusal))
            }
            self.outcome.replayed = true
            self.state = .waitingForCredential(.replay)
            return .reauthorize(formBody: self.formBody)
        case .transferring(.droppingForNonce):
            self.outcome.nonceRetried = true
            self.state = .waitingForCredential(.nonceRetry)
            return .proveAgain(formBody: self.formBody)
        case .idle, .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// The client connection ended before the answer did.
    mutating func clientClosed() -> Action {
        switch self.state {
        case .transferring:
            self.release()
            return .cancelTransfer
        case .idle, .readingSignedBody, .waitingForCredential:
            self.release()
            return .none
        case .finished:
            return .none
        }
    }

    /// The form body a signing credential signs: the kept body, when the request signs one.
    private var formBody: [UInt8]? {
        self.signsBody ? self.kept : nil
    }

    private mutating func beginFirstAttempt() -> Action {
        if self.needsCredential {
            self.state = .waitingForCredential(.first)
            return .obtainCredential(formBody: self.formBody)
        }
        return self.startTransfer(.first)
    }

    /// Starts `attempt`'s transfer: the first streams the client's body (unless it was read
    /// whole to sign), a later one sends the kept body, which is let go once no further
    /// attempt may need it.
    private mutating func startTransfer(_ attempt: Attempt) -> Action {
        self.state = .transferring(.awaitingHead)
        guard self.hasBody else { return .startTransfer(attempt, .none) }
        if attempt == .first, !self.signsBody {
            return .startTransfer(attempt, .fromClient)
        }
        let body = self.kept
        if !self.signsBody, !self.replay.keepsBody {
            self.kept = []
        }
        return .startTransfer(attempt, .kept(body))
    }

    private mutating func finish(failure: ForwardingOutcome.UpstreamFailure?, _ action: Action) -> Action {
        self.release()
        if let failure {
            self.outcome.upstreamFailure = failure
        }
        return action
    }

    /// The request is over: nothing is kept.
    private mutating func release() {
        self.state = .finished
        self.kept = []
    }

    /// The kind of an upstream failure answered with `error`.
    private static func failure(_ error: ProxyError) -> ForwardingOutcome.UpstreamFailure {
        error.code == .upstreamTimeout ? .timeout : .unreachable
    }
}
