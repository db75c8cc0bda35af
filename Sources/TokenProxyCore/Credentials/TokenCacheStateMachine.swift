/// The token cache of one provider as a pure state machine: at most one fetch in flight,
/// every request that arrives meanwhile waits for its result, and a valid token is handed
/// out until `skew` before it expires (SPEC "Behaviour" 5).
///
/// `Waiter` is whatever the owner needs to answer a request later (a completion handler).
struct TokenCacheStateMachine<Waiter> {
    /// What the owner must do after a call.
    enum Action {
        /// Answer the caller now with this token.
        case deliver(AccessToken)
        /// Start the one fetch; the caller was queued.
        case startFetch
        /// A fetch is running; the caller was queued.
        case wait
    }

    private enum State {
        case idle
        case fetching([Waiter])
        case valid(AccessToken)
    }

    private var state: State = .idle
    private let skew: Duration

    /// Creates an empty cache refreshing `skew` before expiry.
    init(skew: Duration) {
        self.skew = skew
    }

    /// A request for a token at `now`.
    mutating func request(_ waiter: Waiter, now: ContinuousClock.Instant) -> Action {
        switch self.state {
        case .valid(let token) where self.isFresh(token, now: now):
            return .deliver(token)
        case .idle, .valid:
            self.state = .fetching([waiter])
            return .startFetch
        case .fetching(var waiters):
            waiters.append(waiter)
            self.state = .fetching(waiters)
            return .wait
        }
    }

    /// The fetch produced `token`: every waiter gets it.
    mutating func fetchSucceeded(_ token: AccessToken) -> [Waiter] {
        guard case .fetching(let waiters) = self.state else {
            self.state = .valid(token)
            return []
        }
        self.state = .valid(token)
        return waiters
    }

    /// The fetch failed: every waiter gets the error, and the next request fetches again.
    mutating func fetchFailed() -> [Waiter] {
        guard case .fetching(let waiters) = self.state else { return [] }
        self.state = .idle
        return waiters
    }

    /// Forgets `token` if it is still the current one (a 401 showed it is no longer valid);
    /// a newer token obtained meanwhile is kept.
    mutating func invalidate(_ token: AccessToken) {
        if case .valid(let current) = self.state, current == token {
            self.state = .idle
        }
    }

    /// The cached token, if any and fresh.
    func current(now: ContinuousClock.Instant) -> AccessToken? {
        if case .valid(let token) = self.state, self.isFresh(token, now: now) {
            return token
        }
        return nil
    }

    private func isFresh(_ token: AccessToken, now: ContinuousClock.Instant) -> Bool {
        guard let expiry = token.expiresAt else { return true }
        return now < expiry - self.skew
    }
}
