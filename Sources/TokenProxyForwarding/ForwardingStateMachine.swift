import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// One forwarded request's whole life as a pure state machine (`docs/reference/upstream.md`): a form
/// body read whole because the credential signs it, the wait for a credential, the transfer
/// in flight and what becomes of its answer (relayed, or a 401 dropped so that the request is
/// replayed with a new credential), a reused connection lost and the request resent on a new
/// one, the client leaving, and the end. Whether another attempt is allowed is
/// ``ReplayStateMachine``'s rule, which this one composes.
///
/// ``ForwardingAttempt`` feeds it events and carries out the returned ``Action``s; it does no
/// I/O and keeps no bytes. What happened is collected in ``outcome`` for the access line and
/// the metrics. Every event has an answer in every state: one that does not fit the state
/// (a late credential after the client left, a delivery of a cancelled transfer) is `.none`.
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
    }

    /// What the owner is to do.
    enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Read the whole request body first: the credential signs it (RFC 5849 §3.4.1.3.1).
        case readSignedBody
        /// Keep the body bytes just read for signing.
        case keepSignedBody
        /// Answer 413 `body_too_large`: the body to sign is larger than the replay buffer.
        case refuseSignedBody
        /// Ask the route's provider for a credential.
        case obtainCredential
        /// Start a transfer for this attempt.
        case startTransfer(Attempt)
        /// Relay the transfer's answer to the client.
        case relayResponse
        /// Drop the transfer's answer (a 401 that is replayed or refused).
        case dropResponse
        /// The answer was relayed whole: finish the client's response.
        case finish
        /// The answer broke off after its head: abort the client connection.
        case abort
        /// Answer the client with this error.
        case answer(ProxyError)
        /// Invalidate the token the dropped 401 answered, then obtain a credential again.
        case reauthorize
        /// Stop the transfer in flight.
        case cancelTransfer
    }

    private enum State: Sendable, Equatable {
        /// Created; nothing started.
        case idle
        /// Reading the body to sign; `bytes` read so far.
        case readingSignedBody(bytes: Int)
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
    }

    private var state = State.idle
    private var replay: ReplayStateMachine
    private let needsCredential: Bool
    private let signsBody: Bool
    private let signedBodyLimit: Int
    /// What happened so far.
    private(set) var outcome = ForwardingOutcome()

    /// `replay` is the rule for further attempts; `needsCredential` whether a provider's
    /// credential is injected; `signsBody` whether the body is read whole first, at most
    /// `signedBodyLimit` bytes, because the credential signs it.
    init(replay: ReplayStateMachine, needsCredential: Bool, signsBody: Bool, signedBodyLimit: Int) {
        self.replay = replay
        self.needsCredential = needsCredential
        self.signsBody = signsBody
        self.signedBodyLimit = signedBodyLimit
    }

    /// Whether request body bytes should still be kept for another attempt.
    var keepsBody: Bool { self.replay.keepsBody }

    /// Whether the answer of the transfer in flight is being dropped.
    var dropsResponse: Bool {
        if case .transferring(.dropping) = self.state { return true }
        return false
    }
}

extension ForwardingStateMachine {
    /// The request was routed: read a body to sign, obtain a credential, or start at once.
    mutating func start() -> Action {
        switch self.state {
        case .idle:
            if self.signsBody {
                self.state = .readingSignedBody(bytes: 0)
                return .readSignedBody
            }
            return self.beginFirstAttempt()
        case .readingSignedBody, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// `count` bytes of the body to sign arrived.
    mutating func signedBodyReceived(_ count: Int) -> Action {
        switch self.state {
        case .readingSignedBody(let bytes):
            guard bytes + count <= self.signedBodyLimit else {
                self.state = .finished
                return .refuseSignedBody
            }
            self.state = .readingSignedBody(bytes: bytes + count)
            return .keepSignedBody
        case .idle, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// The body to sign is complete: it is kept whole (within the replay buffer), so another
    /// attempt may send it too.
    mutating func signedBodyEnded() -> Action {
        switch self.state {
        case .readingSignedBody(let bytes):
            self.replay.bodyReceived(bytes)
            self.replay.bodyEnded()
            return self.beginFirstAttempt()
        case .idle, .waitingForCredential, .transferring, .finished:
            return .none
        }
    }

    /// `count` bytes of the request body arrived from the client (for a transfer).
    mutating func requestBodyReceived(_ count: Int) {
        self.replay.bodyReceived(count)
    }

    /// The client's request body is complete.
    mutating func requestBodyEnded() {
        self.replay.bodyEnded()
    }

    /// The provider gave a credential; `fetchedForRequest` when it was fetched while this
    /// request waited.
    mutating func credentialObtained(fetchedForRequest: Bool) -> Action {
        switch self.state {
        case .waitingForCredential(let attempt):
            if fetchedForRequest {
                self.outcome.tokenRefreshed = true
            }
            self.state = .transferring(.awaitingHead)
            return .startTransfer(attempt)
        case .idle, .readingSignedBody, .transferring, .finished:
            return .none
        }
    }

    /// The provider could not give a credential: the client gets `error`.
    mutating func credentialFailed(_ error: ProxyError) -> Action {
        switch self.state {
        case .waitingForCredential:
            self.state = .finished
            return .answer(error)
        case .idle, .readingSignedBody, .transferring, .finished:
            return .none
        }
    }

    /// The transfer could not be set up (a client key that cannot be read): the client gets
    /// `error`.
    mutating func transferFailedToStart(_ error: ProxyError) -> Action {
        switch self.state {
        case .transferring(.awaitingHead):
            self.state = .finished
            return .answer(error)
        case .transferring(.relaying), .transferring(.dropping), .idle, .readingSignedBody, .waitingForCredential,
            .finished:
            return .none
        }
    }

    /// The response head arrived. A 401 is dropped when the provider says the credential
    /// itself was refused (`refusal`, answered instead) or when the request is replayed.
    mutating func responseHeadReceived(status: Int, refusal: ProxyError?) -> Action {
        switch self.state {
        case .transferring(.awaitingHead):
            if status == 401 {
                if let refusal {
                    self.state = .transferring(.dropping(refusal: refusal))
                    return .dropResponse
                }
                if self.replay.unauthorized() == .replay {
                    self.state = .transferring(.dropping(refusal: nil))
                    return .dropResponse
                }
            }
            self.state = .transferring(.relaying)
            return .relayResponse
        case .transferring(.relaying), .transferring(.dropping), .idle, .readingSignedBody, .waitingForCredential,
            .finished:
            return .none
        }
    }

    /// libcurl sent the request again by itself on a new connection (idempotent methods
    /// only). An answer being dropped does not count.
    mutating func libcurlResent() -> Action {
        switch self.state {
        case .transferring(.awaitingHead), .transferring(.relaying):
            self.outcome.resent = true
        case .transferring(.dropping), .idle, .readingSignedBody, .waitingForCredential, .finished:
            break
        }
        return .none
    }

    /// The transfer in flight ended.
    mutating func transferEnded(_ end: CurlDelivery.End) -> Action {
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
                return .startTransfer(.resend)
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
            return .reauthorize
        case .idle, .readingSignedBody, .waitingForCredential, .finished:
            return .none
        }
    }

    /// The client connection ended before the answer did.
    mutating func clientClosed() -> Action {
        switch self.state {
        case .transferring:
            self.state = .finished
            return .cancelTransfer
        case .idle, .readingSignedBody, .waitingForCredential:
            self.state = .finished
            return .none
        case .finished:
            return .none
        }
    }

    private mutating func beginFirstAttempt() -> Action {
        if self.needsCredential {
            self.state = .waitingForCredential(.first)
            return .obtainCredential
        }
        self.state = .transferring(.awaitingHead)
        return .startTransfer(.first)
    }

    private mutating func finish(failure: ForwardingOutcome.UpstreamFailure?, _ action: Action) -> Action {
        self.state = .finished
        if let failure {
            self.outcome.upstreamFailure = failure
        }
        return action
    }

    /// The kind of an upstream failure answered with `error`.
    private static func failure(_ error: ProxyError) -> ForwardingOutcome.UpstreamFailure {
        error.code == .upstreamTimeout ? .timeout : .unreachable
    }
}
