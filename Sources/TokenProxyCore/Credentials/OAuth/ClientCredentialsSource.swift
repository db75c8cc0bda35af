import Synchronization

/// The `client_credentials` grant (RFC 6749 §4.4): the proxy's own identity, no user.
/// Tokens are cached per provider; one request is in flight at a time and every request
/// arriving meanwhile shares its result; expiry counts from when the request was sent.
final class ClientCredentialsSource: CredentialSource {
    private typealias Completion = @Sendable (Result<AccessToken, ProxyError>) -> Void

    private let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let tokenWait: Double
    private let cache: Mutex<TokenCacheStateMachine<Completion>>

    init(provider: ProviderConfiguration, fetcher: UpstreamFetcher, limits: Limits) {
        self.provider = provider
        self.client = TokenEndpointClient(
            provider: provider,
            fetcher: fetcher,
            connectTimeout: limits.upstreamConnectTimeoutSeconds
        )
        self.tokenWait = limits.tokenWaitSeconds
        self.cache = Mutex(TokenCacheStateMachine(skew: .milliseconds(Int64(provider.refreshSkewSeconds * 1000))))
    }

    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        switch self.cache.withLock({ $0.request(completion, now: .now) }) {
        case .deliver(let token):
            completion(.success(token))
        case .wait:
            break
        case .startFetch:
            var parameters = [("grant_type", "client_credentials")]
            if !self.provider.scopes.isEmpty {
                parameters.append(("scope", self.provider.scopes.joined(separator: " ")))
            }
            if let audience = self.provider.audience {
                parameters.append(("audience", audience))
            }
            if let resource = self.provider.resource {
                parameters.append(("resource", resource))
            }
            let deadline = ContinuousClock.now + .milliseconds(Int64(self.tokenWait * 1000))
            let defaultExpiresIn = self.provider.defaultExpiresIn
            self.client.request(parameters, deadline: deadline) { [self] result in
                let outcome = result.map { issued -> AccessToken in
                    let lifetime = issued.response.expiresIn ?? defaultExpiresIn
                    return AccessToken(
                        value: issued.response.accessToken,
                        expiresAt: lifetime.map { issued.sentAt + .milliseconds(Int64($0 * 1000)) }
                    )
                }
                let waiters = self.cache.withLock { cache -> [Completion] in
                    switch outcome {
                    case .success(let token): return cache.fetchSucceeded(token)
                    case .failure: return cache.fetchFailed()
                    }
                }
                waiters.forEach { $0(outcome) }
            }
        }
    }

    /// Forgets `token` if it is still the cached one.
    func invalidate(_ token: AccessToken) {
        self.cache.withLock { $0.invalidate(token) }
    }
}
