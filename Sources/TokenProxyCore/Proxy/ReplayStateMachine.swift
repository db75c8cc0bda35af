/// The 401 replay rule (`docs/upstream.md`, "A 401 from the upstream") as a pure state machine: a request whose
/// upstream answered 401 is replayed once with a fresh token, when its body (if any) was
/// complete and at most the replay buffer when the answer came. A second 401, or a body
/// that could not be kept, goes back to the client unchanged.
struct ReplayStateMachine: Sendable, Equatable {
    /// What to do with a 401.
    enum Decision: Sendable, Equatable {
        /// Relay it to the client as it is.
        case relay
        /// Drop it, invalidate the token used (if still current) and send the request again.
        case replay
    }

    private enum State: Sendable, Equatable {
        /// The first attempt; the body kept so far and whether it ended.
        case first(kept: Int, complete: Bool)
        /// The body outgrew the replay buffer, or replay is off: nothing can be replayed.
        case unreplayable
        /// The one replay is under way.
        case replaying
    }

    private var state: State
    private let limit: Int

    /// `enabled` is the route's `retry_on_401`; `limit` the replay buffer; `hasBody` whether
    /// the request has a body at all.
    init(enabled: Bool, limit: Int, hasBody: Bool) {
        self.limit = limit
        self.state = enabled ? .first(kept: 0, complete: !hasBody) : .unreplayable
    }

    /// Whether body bytes should still be kept for a replay.
    var keepsBody: Bool {
        if case .first = self.state { return true }
        return false
    }

    /// `count` more body bytes arrived from the client.
    mutating func bodyReceived(_ count: Int) {
        guard case .first(let kept, let complete) = self.state else { return }
        self.state = kept + count > self.limit ? .unreplayable : .first(kept: kept + count, complete: complete)
    }

    /// The request body is complete.
    mutating func bodyEnded() {
        guard case .first(let kept, _) = self.state else { return }
        self.state = .first(kept: kept, complete: true)
    }

    /// The upstream answered 401.
    mutating func unauthorized() -> Decision {
        guard case .first(_, complete: true) = self.state else {
            if self.state == .replaying {
                // A second 401 goes to the client: the new token is refused too.
                self.state = .unreplayable
            }
            return .relay
        }
        self.state = .replaying
        return .replay
    }
}
