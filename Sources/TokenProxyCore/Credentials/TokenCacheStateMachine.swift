/// The token cache of one provider as a pure state machine: at most one fetch in flight,
/// every request that arrives meanwhile waits for its result, and a valid token is handed
/// out until `skew` before it expires (`docs/token-store.md`, RFC 6749 §5.1).
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
        /// A background refresh is running while the old token is still handed out.
        case refreshing(AccessToken, [Waiter])
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
        case .refreshing(let token, var waiters):
            if self.isFresh(token, now: now) {
                return .deliver(token)
            }
            waiters.append(waiter)
            self.state = .refreshing(token, waiters)
            return .wait
        }
    }

    /// Starts a refresh ahead of expiry if `token` is still the cached one and nothing is
    /// being fetched; requests keep getting it meanwhile. Returns whether to fetch now.
    mutating func beginBackgroundRefresh(of token: AccessToken) -> Bool {
        guard case .valid(let current) = self.state, current == token else { return false }
        self.state = .refreshing(token, [])
        return true
    }

    /// The fetch produced `token`: every waiter gets it.
    mutating func fetchSucceeded(_ token: AccessToken) -> [Waiter] {
        defer { self.state = .valid(token) }
        switch self.state {
        case .fetching(let waiters), .refreshing(_, let waiters): return waiters
        case .idle, .valid: return []
        }
    }

    /// The fetch failed: every waiter gets the error, and the next request fetches again.
    mutating func fetchFailed() -> [Waiter] {
        switch self.state {
        case .fetching(let waiters):
            self.state = .idle
            return waiters
        case .refreshing(let token, let waiters):
            // The old token stays in use while it is fresh; the next stale request fetches.
            self.state = .valid(token)
            return waiters
        case .idle, .valid:
            return []
        }
    }

    /// Forgets `token` if it is still the current one (a 401 showed it is no longer valid);
    /// a newer token obtained meanwhile is kept.
    mutating func invalidate(_ token: AccessToken) {
        switch self.state {
        case .valid(let current) where current == token:
            self.state = .idle
        case .refreshing(let current, let waiters) where current == token:
            self.state = .fetching(waiters)
        default:
            break
        }
    }

    /// The cached token, if any and fresh.
    func current(now: ContinuousClock.Instant) -> AccessToken? {
        switch self.state {
        case .valid(let token) where self.isFresh(token, now: now),
            .refreshing(let token, _) where self.isFresh(token, now: now):
            return token
        default:
            return nil
        }
    }

    private func isFresh(_ token: AccessToken, now: ContinuousClock.Instant) -> Bool {
        guard let expiry = token.expiresAt else { return true }
        return now < expiry - self.skew
    }
}
