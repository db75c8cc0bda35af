import Synchronization

/// A provider's token cache shared by its callers: the ``TokenCacheStateMachine`` behind a
/// lock, with the waiters' completions held in it. Sources supply how to fetch; this type
/// decides when, and hands every waiter the result of the one fetch.
final class SharedTokenCache: Sendable {
    /// What a caller waits with.
    typealias Completion = @Sendable (Result<AccessToken, ProxyError>) -> Void

    private let machine: Mutex<TokenCacheStateMachine<Completion>>

    /// Creates an empty cache renewing tokens `refreshSkewSeconds` before they expire.
    init(refreshSkewSeconds: Double) {
        self.machine = Mutex(TokenCacheStateMachine(skew: BoundedSeconds.duration(refreshSkewSeconds)))
    }

    /// Answers from the cache, or queues `completion` and calls `fetch` when no fetch is
    /// running; `fetch` must end with ``complete(_:)``.
    func token(completion: @escaping Completion, fetch: () -> Void) {
        switch self.machine.withLock({ $0.request(completion, now: .now) }) {
        case .deliver(let token):
            completion(.success(token))
        case .wait:
            break
        case .startFetch:
            fetch()
        }
    }

    /// Ends the running fetch: the token is cached (on success) and every waiter answered.
    func complete(_ outcome: Result<AccessToken, ProxyError>) {
        let waiters = self.machine.withLock { machine -> [Completion] in
            switch outcome {
            case .success(let token): return machine.fetchSucceeded(token)
            case .failure: return machine.fetchFailed()
            }
        }
        waiters.forEach { $0(outcome) }
    }

    /// Forgets `token` if it is still the cached one.
    func invalidate(_ token: AccessToken) {
        self.machine.withLock { $0.invalidate(token) }
    }

    /// Whether a refresh ahead of expiry should start now (see the state machine).
    func beginBackgroundRefresh(of token: AccessToken) -> Bool {
        self.machine.withLock { $0.beginBackgroundRefresh(of: token) }
    }
}
