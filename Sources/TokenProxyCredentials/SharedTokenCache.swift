import Dispatch
import Synchronization
import TokenProxyConfiguration
import TokenProxySupport

/// A provider's token cache shared by its callers: the ``TokenCacheStateMachine`` behind a
/// lock, with the waiters' completions held in it. Sources supply how to fetch; this type
/// decides when, hands every waiter the result of the one fetch, and puts an end to every
/// wait (`docs/reference/security.md`, "Hostile timing"):
///
/// - a caller waits at most `limits.token_wait_seconds`, then gets 502 `token_unavailable`
///   while the fetch goes on for the others;
/// - a fetch that has not ended by its deadline (`limits.token_request_seconds`) is given up:
///   its waiters are answered, and its late result, if any, is ignored;
/// - a failed fetch is remembered with backoff, and callers meanwhile get that failure;
/// - a cache retired by a reload abandons its fetch and hands its waiters, and every later
///   caller, to its successor, each with the end of wait it already had.
final class SharedTokenCache: Sendable {
    /// What a caller waits with.
    typealias Completion = @Sendable (Result<AccessToken, ProxyError>) -> Void
    /// Where a retired cache sends a caller: its completion and the end of its wait.
    typealias Handover = @Sendable (@escaping Completion, ContinuousClock.Instant) -> Void

    /// One running fetch: its number (to match its result) and when it is given up.
    struct Fetch: Sendable {
        /// The state machine's number for it.
        let number: UInt64
        /// Its whole-life deadline; the source stops trying at this instant.
        let deadline: ContinuousClock.Instant
    }

    private struct Waiter {
        var id: UInt64
        var completion: Completion
        /// When its wait ends.
        var until: ContinuousClock.Instant
    }

    private struct State {
        var machine: TokenCacheStateMachine<Waiter, ProxyError>
        var nextWaiter: UInt64 = 0
        /// Set once the cache is retired: where callers go instead.
        var handover: Handover?
    }

    private let state: Mutex<State>
    private let provider: String
    private let waitLimit: Duration
    private let fetchLimit: Duration
    /// Past its deadline a fetch gets this long to report before it is given up: the fetch
    /// itself stops at its deadline, and its answer should win over the watchdog's.
    private static let watchdogGrace = Duration.seconds(1)

    /// Creates an empty cache for `provider`, renewing tokens `refreshSkewSeconds` before they
    /// expire; callers wait `waitSeconds` at most, a fetch lives `fetchSeconds` at most, and a
    /// failure is remembered for at most `backoffSeconds`.
    init(
        provider: String,
        refreshSkewSeconds: Double,
        waitSeconds: Double,
        fetchSeconds: Double,
        backoffSeconds: Double = Limits().tokenFailureBackoffSeconds
    ) {
        self.provider = provider
        let maximum = BoundedSeconds.duration(backoffSeconds)
        let machine = TokenCacheStateMachine<Waiter, ProxyError>(
            skew: BoundedSeconds.duration(refreshSkewSeconds),
            minimumBackoff: min(.seconds(1), maximum),
            maximumBackoff: maximum
        )
        self.state = Mutex(State(machine: machine))
        self.waitLimit = BoundedSeconds.duration(waitSeconds)
        self.fetchLimit = BoundedSeconds.duration(fetchSeconds)
    }

    /// Answers from the cache or the remembered failure, or queues `completion` (until
    /// `until`, by default the wait limit from now) and calls `fetch` when no fetch is
    /// running; `fetch` must end with ``complete(_:_:retryAfter:remember:)``, and should stop
    /// trying at the fetch's deadline. A retired cache hands the caller to its successor.
    func token(completion: @escaping Completion, until: ContinuousClock.Instant? = nil, fetch: (Fetch) -> Void) {
        let now = ContinuousClock.now
        let until = until ?? now + self.waitLimit
        let (decision, id) = self.state.withLockedValue { state -> (Decision, UInt64) in
            if let handover = state.handover {
                return (.handOver(handover), 0)
            }
            state.nextWaiter &+= 1
            let id = state.nextWaiter
            let waiter = Waiter(id: id, completion: completion, until: until)
            return (.act(state.machine.request(waiter, id: id, now: now)), id)
        }
        switch decision {
        case .handOver(let handover):
            handover(completion, until)
        case .act(.deliver(let token)):
            completion(.success(token))
        case .act(.fail(let error)):
            completion(.failure(error))
        case .act(.wait):
            self.armWait(id, until: until)
        case .act(.startFetch(let number)):
            self.armWait(id, until: until)
            fetch(self.started(number, now: now))
        }
    }

    /// The cached token while it is fresh, as ``token(completion:until:fetch:)`` would deliver
    /// it at once; nil otherwise, and for a retired cache.
    func tokenAtHand() -> AccessToken? {
        let now = ContinuousClock.now
        return self.state.withLockedValue { state in
            state.handover == nil ? state.machine.current(now: now) : nil
        }
    }

    /// What ``token(completion:until:fetch:)`` does with a caller, decided under the lock.
    private enum Decision {
        case act(TokenCacheStateMachine<Waiter, ProxyError>.Action)
        case handOver(Handover)
    }

    /// Retires the cache (a reload replaced its provider): the running fetch is abandoned (its
    /// late result changes nothing), and its waiters and every later caller go to `handover`
    /// with the end of wait they had.
    func retire(handover: @escaping Handover) {
        let waiters = self.state.withLockedValue { state -> [Waiter] in
            state.handover = handover
            return state.machine.abandon()
        }
        for waiter in waiters {
            handover(waiter.completion, waiter.until)
        }
    }

    /// Ends fetch `fetch`: the token is cached (on success) or, when `remember` (a token
    /// endpoint was asked or a command run), the failure remembered with backoff (at least
    /// `retryAfter`); every waiter is answered. The result of a fetch that was given up
    /// changes nothing.
    func complete(
        _ fetch: Fetch,
        _ outcome: Result<AccessToken, ProxyError>,
        retryAfter: Duration? = nil,
        remember: Bool = true
    ) {
        let now = ContinuousClock.now
        let waiters = self.state.withLockedValue { state -> [Waiter] in
            switch outcome {
            case .success(let token):
                return state.machine.fetchSucceeded(token, fetch: fetch.number)
            case .failure(let error):
                return state.machine.fetchFailed(
                    error,
                    fetch: fetch.number,
                    now: now,
                    retryAfter: retryAfter,
                    remember: remember
                )
            }
        }
        waiters.forEach { $0.completion(outcome) }
    }

    /// Forgets `token` if it is still the cached one.
    func invalidate(_ token: AccessToken) {
        self.state.withLockedValue { $0.machine.invalidate(token) }
    }

    /// Forgets the cached token and any remembered failure when `decide`, given the fresh
    /// cached token (nil when none) and whether a failure is remembered, says so; both are
    /// looked at and changed under one lock, so a token that arrives meanwhile is not dropped.
    func reset(when decide: (_ cached: AccessToken?, _ failing: Bool) -> Bool) {
        let now = ContinuousClock.now
        self.state.withLockedValue { state in
            let cached = state.machine.current(now: now)
            let failing = state.machine.remembered(now: now) != nil
            if decide(cached, failing) {
                state.machine.reset()
            }
        }
    }

    /// A refresh ahead of expiry to start now, if `token` is still cached and nothing runs
    /// (see the state machine); the caller must end it with ``complete(_:_:retryAfter:remember:)``.
    func beginBackgroundRefresh(of token: AccessToken) -> Fetch? {
        let now = ContinuousClock.now
        guard let number = self.state.withLockedValue({ $0.machine.beginBackgroundRefresh(of: token, now: now) }) else {
            return nil
        }
        return self.started(number, now: now)
    }

    /// Arms the watchdog of fetch `number`, started at `now`.
    private func started(_ number: UInt64, now: ContinuousClock.Instant) -> Fetch {
        let fetch = Fetch(number: number, deadline: now + self.fetchLimit)
        // Strong: a cache replaced by a reload still answers the waiters it holds.
        DeadlineScheduler.shared.schedule(at: fetch.deadline + Self.watchdogGrace) { [self] in
            let error = ProxyError(
                .tokenUnavailable,
                "the token request timed out (limits.token_request_seconds) and was abandoned",
                provider: self.provider
            )
            // The waiters' completions are their callers' code: off the deadline thread.
            Self.completions.async { self.complete(fetch, .failure(error)) }
        }
        return fetch
    }

    /// Ends waiter `id`'s wait at `until`, if it is still waiting then: the deadline thread
    /// takes the waiter out, and its completion runs on ``completions``.
    private func armWait(_ id: UInt64, until: ContinuousClock.Instant) {
        DeadlineScheduler.shared.schedule(at: until) { [self] in
            guard let waiter = self.state.withLockedValue({ $0.machine.removeWaiter(id) }) else { return }
            let error = ProxyError(
                .tokenUnavailable,
                "no token within limits.token_wait_seconds; the token request goes on",
                provider: self.provider
            )
            Self.completions.async { waiter.completion(.failure(error)) }
        }
    }

    /// Where the completions of waits ended by a deadline run: never on the deadline thread,
    /// whose actions must stay short, since one slow completion there would hold back every
    /// later deadline in the process.
    private static let completions = DispatchQueue.global()
}
