/// When a request is sent upstream again (`docs/reference/upstream.md`, "A 401 from the upstream" and
/// "A reused connection that fails"), as a pure state machine. Two events can each cause one
/// more attempt:
///
/// - a 401, or another status the route's `renew_on_status` lists: replayed once with a
///   fresh token, on routes with `retry_on_401`;
/// - a reused upstream connection that failed before any byte of an answer: the request is
///   resent once on a new connection, when its method is idempotent (RFC 9110 §9.2.2; a
///   proxy never retries the others on its own, RFC 9112 §9.3.1);
/// - a 401 asking for a DPoP nonce (RFC 9449 §9), for a request with a proof: sent once more
///   with the nonce, the same token and a new proof.
///
/// Each needs the body (if any) complete and at most the replay buffer when the event
/// comes, so a request goes upstream at most four times. Otherwise the 401 goes back to the
/// client unchanged, and the failure is answered 502 `upstream_unreachable`.
struct ReplayStateMachine: Sendable, Equatable {
    /// What to do with a 401.
    enum Decision: Sendable, Equatable {
        /// Relay it to the client as it is.
        case relay
        /// Drop it, invalidate the token used (if still current) and send the request again.
        case replay
    }

    /// What to do when a reused connection failed before any answer.
    enum LostConnectionDecision: Sendable, Equatable {
        /// Answer the client with the failure.
        case fail
        /// Send the request again, with the same credential, on a new connection.
        case resend
    }

    /// The further attempts still allowed.
    struct Retries: OptionSet, Sendable, Equatable {
        let rawValue: UInt8

        /// One replay after a 401.
        static let replayAfterUnauthorized = Retries(rawValue: 1 << 0)
        /// One resend after a reused connection failed.
        static let resendAfterLostConnection = Retries(rawValue: 1 << 1)
        /// One more try with the DPoP nonce a 401 asked for (RFC 9449 §9).
        static let retryWithNonce = Retries(rawValue: 1 << 2)
    }

    private enum State: Sendable, Equatable {
        /// The whole body so far is kept (`kept` bytes, `complete` once it ended), and
        /// `retries` are still allowed (never empty).
        case holding(kept: Int, complete: Bool, retries: Retries)
        /// Nothing is sent again: the body outgrew the replay buffer, the route and the method
        /// allow no further attempt, or every allowed one was made.
        case final
    }

    private var state: State
    private let limit: Int
    /// The statuses that say the token was refused (`renew_on_status`).
    private let renewingStatuses: [Int]
    /// Whether the request carries a DPoP proof, so that a 401 may ask for a nonce.
    let provesPossession: Bool

    /// `replaysUnauthorized` is the route's `retry_on_401` with a provider that can renew its
    /// token, `renewingOn` its `renew_on_status`; `idempotent` whether the method may be
    /// resent; `limit` the replay buffer; `hasBody` whether the request has a body at all;
    /// `provesPossession` whether it carries a DPoP proof, so that a server may ask for a nonce.
    init(
        replaysUnauthorized: Bool,
        renewingOn: [Int] = [401],
        idempotent: Bool,
        limit: Int,
        hasBody: Bool,
        provesPossession: Bool = false
    ) {
        self.limit = limit
        self.renewingStatuses = renewingOn
        self.provesPossession = provesPossession
        var retries: Retries = []
        if replaysUnauthorized {
            retries.insert(.replayAfterUnauthorized)
        }
        if provesPossession {
            retries.insert(.retryWithNonce)
        }
        if idempotent {
            retries.insert(.resendAfterLostConnection)
        }
        self.state = retries.isEmpty ? .final : .holding(kept: 0, complete: !hasBody, retries: retries)
    }

    /// Whether `method` is idempotent (RFC 9110 §9.2.2), so a request the upstream may have
    /// received can be sent again. Methods are case-sensitive (RFC 9110 §9.1).
    static func isIdempotent(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE":
            return true
        default:
            return false
        }
    }

    /// Whether body bytes should still be kept for another attempt.
    var keepsBody: Bool {
        if case .holding = self.state { return true }
        return false
    }

    /// `count` more body bytes arrived from the client.
    mutating func bodyReceived(_ count: Int) {
        guard case .holding(let kept, let complete, let retries) = self.state else { return }
        self.state =
            kept + count > self.limit ? .final : .holding(kept: kept + count, complete: complete, retries: retries)
    }

    /// The request body is complete.
    mutating func bodyEnded() {
        guard case .holding(let kept, _, let retries) = self.state else { return }
        self.state = .holding(kept: kept, complete: true, retries: retries)
    }

    /// Whether an answer with `status` says the token was refused, so that it renews the
    /// token and replays (``unauthorized()``) rather than going to the client.
    func renews(_ status: Int) -> Bool {
        self.renewingStatuses.contains(status)
    }

    /// The upstream refused the token: 401, or another status of ``renews(_:)``.
    mutating func unauthorized() -> Decision {
        // A second 401 goes to the client: the new token is refused too.
        self.take(.replayAfterUnauthorized) ? .replay : .relay
    }

    /// A 401 asked for a DPoP nonce and gave one: whether the request is sent once more
    /// with it (the same token, a new proof). It uses up neither the replay nor the resend.
    mutating func nonceRequested() -> Bool {
        self.take(.retryWithNonce)
    }

    /// A reused connection failed before any byte of an answer.
    mutating func lostReusedConnection() -> LostConnectionDecision {
        self.take(.resendAfterLostConnection) ? .resend : .fail
    }

    /// Uses up `retry` if it is still allowed and the whole body is kept; the body stays kept
    /// while another retry is allowed.
    private mutating func take(_ retry: Retries) -> Bool {
        guard case .holding(let kept, complete: true, var retries) = self.state, retries.contains(retry) else {
            return false
        }
        retries.remove(retry)
        self.state = retries.isEmpty ? .final : .holding(kept: kept, complete: true, retries: retries)
        return true
    }
}
