/// The token cache of one provider as a pure state machine: at most one fetch in flight,
/// every request that arrives meanwhile waits for its result, a valid token is handed out
/// until shortly before it expires (`docs/reference/token-store.md`, RFC 6749 §5.1), and a failed
/// fetch is remembered for a backoff interval, during which requests get that failure rather
/// than a new token request.
///
/// `Waiter` is whatever the owner needs to answer a request later (a completion handler),
/// kept under an id the owner gives, so that a wait that ends early is removed in constant
/// time however many wait; `Failure` is what a failed fetch leaves to answer with. Every
/// fetch has a number, so the result of a fetch the owner gave up on (its deadline passed)
/// cannot overwrite a later one.
struct TokenCacheStateMachine<Waiter, Failure> {
    /// What the owner must do after a call to ``request(_:id:now:)``.
    enum Action {
        /// Answer the caller now with this token.
        case deliver(AccessToken)
        /// Start fetch number `fetch`; the caller was queued.
        case startFetch(UInt64)
        /// A fetch is running; the caller was queued.
        case wait
        /// A recent fetch failed and its backoff has not passed: answer the caller with it.
        case fail(Failure)
    }

    /// What the last failures leave: how many in a row, and the remembered one until when.
    private struct Backoff {
        var failures: Int
        var failure: Failure
        var until: ContinuousClock.Instant
    }

    private enum State {
        case idle
        /// Fetch `fetch` runs; `failures` counts the failed fetches before it, in a row.
        case fetching(fetch: UInt64, waiters: [UInt64: Waiter], failures: Int)
        case valid(AccessToken)
        /// A fetch ahead of expiry runs while the current token is still handed out.
        case refreshing(AccessToken, fetch: UInt64, waiters: [UInt64: Waiter], failures: Int)
        /// The last fetch failed; `token` is a still-valid one an early refresh failed to renew.
        case backingOff(Backoff, token: AccessToken?)
    }

    private var state: State = .idle
    private var lastFetch: UInt64 = 0
    private let skew: Duration
    private let minimumBackoff: Duration
    private let maximumBackoff: Duration

    /// Creates an empty cache renewing tokens `skew` before expiry (at most half their
    /// lifetime), remembering a failure for `minimumBackoff`, doubled for each further
    /// failure in a row up to `maximumBackoff`.
    init(skew: Duration, minimumBackoff: Duration = .seconds(1), maximumBackoff: Duration = .seconds(30)) {
        self.skew = skew
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = max(minimumBackoff, maximumBackoff)
    }

    /// A request for a token at `now` by `waiter`, known as `id` (unique among waiters).
    mutating func request(_ waiter: Waiter, id: UInt64, now: ContinuousClock.Instant) -> Action {
        switch self.state {
        case .valid(let token) where self.isFresh(token, now: now):
            return .deliver(token)
        case .idle, .valid:
            return self.startFetch(waiter, id: id, failures: 0)
        case .fetching(let fetch, var waiters, let failures):
            // The state lets go of the table first, so that adding to it does not copy it.
            self.state = .idle
            waiters[id] = waiter
            self.state = .fetching(fetch: fetch, waiters: waiters, failures: failures)
            return .wait
        case .refreshing(let token, let fetch, var waiters, let failures):
            if self.isFresh(token, now: now) {
                return .deliver(token)
            }
            self.state = .idle
            waiters[id] = waiter
            self.state = .refreshing(token, fetch: fetch, waiters: waiters, failures: failures)
            return .wait
        case .backingOff(let backoff, let token):
            if let token, self.isFresh(token, now: now) {
                return .deliver(token)
            }
            if now < backoff.until {
                return .fail(backoff.failure)
            }
            return self.startFetch(waiter, id: id, failures: backoff.failures)
        }
    }

    /// Starts a refresh ahead of expiry if `token` is still the cached one and nothing is
    /// being fetched; requests keep getting it meanwhile. Returns the fetch to start, if any.
    mutating func beginBackgroundRefresh(of token: AccessToken, now: ContinuousClock.Instant) -> UInt64? {
        switch self.state {
        case .valid(let current) where current == token:
            self.lastFetch &+= 1
            self.state = .refreshing(token, fetch: self.lastFetch, waiters: [:], failures: 0)
            return self.lastFetch
        case .backingOff(let backoff, let current?) where current == token && now >= backoff.until:
            self.lastFetch &+= 1
            self.state = .refreshing(token, fetch: self.lastFetch, waiters: [:], failures: backoff.failures)
            return self.lastFetch
        default:
            return nil
        }
    }

    /// Fetch `fetch` produced `token`: every waiter gets it. Nothing changes (and no waiter
    /// is returned) when that fetch is no longer the running one.
    mutating func fetchSucceeded(_ token: AccessToken, fetch: UInt64) -> [Waiter] {
        guard let (_, waiters, _) = self.running(fetch) else { return [] }
        self.state = .valid(token)
        return waiters
    }

    /// Fetch `fetch` failed at `now` with `failure`: every waiter gets it, and when
    /// `remember` (the fetch asked a token endpoint or ran a command) it is remembered for the
    /// backoff (at least `retryAfter` when the endpoint asked for one, within the maximum). A
    /// token an early refresh failed to renew stays in use while it is fresh.
    mutating func fetchFailed(
        _ failure: Failure,
        fetch: UInt64,
        now: ContinuousClock.Instant,
        retryAfter: Duration? = nil,
        remember: Bool = true
    ) -> [Waiter] {
        guard let (token, waiters, failures) = self.running(fetch) else { return [] }
        guard remember else {
            // Nothing was asked of anyone (no usable grant stored, a secret unreadable): the
            // next request looks again, which costs nobody but this process.
            self.state = token.map { .valid($0) } ?? .idle
            return waiters
        }
        var delay = self.minimumBackoff
        for _ in 0..<min(failures, 16) where delay < self.maximumBackoff {
            delay = delay * 2
        }
        if let retryAfter, retryAfter > delay {
            delay = retryAfter
        }
        delay = min(delay, self.maximumBackoff)
        self.state = .backingOff(Backoff(failures: failures + 1, failure: failure, until: now + delay), token: token)
        return waiters
    }

    /// Removes waiter `id` (its wait ended before the fetch), returning it; nil when it was
    /// answered already.
    mutating func removeWaiter(_ id: UInt64) -> Waiter? {
        switch self.state {
        case .fetching(let fetch, var waiters, let failures):
            guard waiters[id] != nil else { return nil }
            self.state = .idle
            let waiter = waiters.removeValue(forKey: id)
            self.state = .fetching(fetch: fetch, waiters: waiters, failures: failures)
            return waiter
        case .refreshing(let token, let fetch, var waiters, let failures):
            guard waiters[id] != nil else { return nil }
            self.state = .idle
            let waiter = waiters.removeValue(forKey: id)
            self.state = .refreshing(token, fetch: fetch, waiters: waiters, failures: failures)
            return waiter
        case .idle, .valid, .backingOff:
            return nil
        }
    }

    /// Gives up everything: the provider was replaced (a reload changed its configuration).
    /// The running fetch, if any, is abandoned (its result, when it comes, changes nothing),
    /// the cached token and remembered failure are forgotten, and the waiters are returned for
    /// the owner to hand to the provider's successor.
    mutating func abandon() -> [Waiter] {
        let waiters: [Waiter]
        switch self.state {
        case .fetching(_, let queued, _), .refreshing(_, _, let queued, _):
            waiters = Self.ordered(queued)
        case .idle, .valid, .backingOff:
            waiters = []
        }
        self.state = .idle
        return waiters
    }

    /// Forgets `token` if it is still the current one (a 401 showed it is no longer valid);
    /// a newer token obtained meanwhile is kept.
    mutating func invalidate(_ token: AccessToken) {
        switch self.state {
        case .valid(let current) where current == token:
            self.state = .idle
        case .refreshing(let current, let fetch, let waiters, let failures) where current == token:
            self.state = .fetching(fetch: fetch, waiters: waiters, failures: failures)
        case .backingOff(let backoff, let current?) where current == token:
            self.state = .backingOff(backoff, token: nil)
        default:
            break
        }
    }

    /// Forgets the cached token and any remembered failure (the token store changed under
    /// the cache: a logout, a login, another process). A running fetch goes on; its result
    /// is still taken.
    mutating func reset() {
        switch self.state {
        case .valid, .backingOff:
            self.state = .idle
        case .refreshing(_, let fetch, let waiters, _):
            self.state = .fetching(fetch: fetch, waiters: waiters, failures: 0)
        case .idle, .fetching:
            break
        }
    }

    /// The cached token, if any and fresh.
    func current(now: ContinuousClock.Instant) -> AccessToken? {
        switch self.state {
        case .valid(let token) where self.isFresh(token, now: now),
            .refreshing(let token, _, _, _) where self.isFresh(token, now: now),
            .backingOff(_, let token?) where self.isFresh(token, now: now):
            return token
        default:
            return nil
        }
    }

    /// The remembered failure, while its backoff runs.
    func remembered(now: ContinuousClock.Instant) -> Failure? {
        guard case .backingOff(let backoff, _) = self.state, now < backoff.until else { return nil }
        return backoff.failure
    }

    private mutating func startFetch(_ waiter: Waiter, id: UInt64, failures: Int) -> Action {
        self.lastFetch &+= 1
        self.state = .fetching(fetch: self.lastFetch, waiters: [id: waiter], failures: failures)
        return .startFetch(self.lastFetch)
    }

    /// The running fetch's token (for a refresh), waiters (in the order of their ids) and
    /// failures so far, if `fetch` is it.
    private func running(_ fetch: UInt64) -> (AccessToken?, [Waiter], Int)? {
        switch self.state {
        case .fetching(let running, let waiters, let failures) where running == fetch:
            return (nil, Self.ordered(waiters), failures)
        case .refreshing(let token, let running, let waiters, let failures) where running == fetch:
            return (token, Self.ordered(waiters), failures)
        default:
            return nil
        }
    }

    private static func ordered(_ waiters: [UInt64: Waiter]) -> [Waiter] {
        waiters.sorted { $0.key < $1.key }.map(\.value)
    }

    private func isFresh(_ token: AccessToken, now: ContinuousClock.Instant) -> Bool {
        guard let expiry = token.expiresAt else { return true }
        return now < expiry - token.refreshSkew(self.skew)
    }
}
