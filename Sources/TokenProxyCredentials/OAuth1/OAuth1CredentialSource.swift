import Foundation
import Synchronization
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxySupport

/// The credential of an `oauth1` provider (RFC 5849): every forwarded request is signed with
/// the consumer key and secret and the access token and its secret, with a fresh nonce and
/// timestamp each time (`docs/guide/oauth1.md`). Secrets are read when used, so a rotated file or
/// variable takes effect at the next request.
///
/// The token pair is the configured `token` and `token_secret`, or the one `tokenproxy login`
/// put in the token store. The store is read off the connection's thread, one read at a
/// time, when ``token(completion:)`` finds nothing fresh (the requests that find so wait for
/// it): a pair is believed for ``freshFor``, so a logout or a new login takes effect within
/// that time; no pair, or an unreadable store, for ``absentFor``.
/// ``authorization(method:url:formBody:)`` signs with what was read.
final class OAuth1CredentialSource: CredentialSource, RequestAuthorizer {
    private let provider: ProviderConfiguration
    private let store: (any TokenStore)?
    private let state = Mutex(State())

    /// What is known of the token pair in the store.
    private enum StoredPair {
        /// Not read yet.
        case unknown
        /// The pair, as `login` stored it, read at `since`.
        case found(token: String, secret: String, since: ContinuousClock.Instant)
        /// No usable pair (or the store could not be read: `failure`), as of `since`.
        case absent(ProxyError, since: ContinuousClock.Instant)
    }

    private struct State {
        var pair = StoredPair.unknown
        /// A read of the store is under way.
        var reading = false
        /// Requests waiting for that read.
        var waiting: [@Sendable (Result<AccessToken, ProxyError>) -> Void] = []
        /// The stored token the provider refused: found again, it is not used.
        var refused: String?
    }

    /// How long a stored pair is used before the store is read again.
    static let freshFor = Duration.seconds(5)
    /// How long a store without a pair (or unreadable) is believed.
    static let absentFor = Duration.seconds(1)

    /// A source for `provider`, whose grant is `oauth1`; a token pair that is not configured
    /// comes from `store`.
    init(provider: ProviderConfiguration, store: (any TokenStore)? = nil) {
        self.provider = provider
        self.store = store
    }

    /// The access token (`oauth_token`) when the provider can sign: what every request asks
    /// before it is signed, and what `readyz` and `status` ask. The token alone authorizes
    /// nothing; the header needs the secrets too.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        guard self.provider.token == nil, let store = self.store else {
            completion(self.credentials().map { AccessToken(value: $0.token ?? $0.consumerKey) })
            return
        }
        let now = ContinuousClock.now
        enum Next {
            case answer(Result<AccessToken, ProxyError>)
            case wait(read: Bool)
        }
        let next = self.state.withLockedValue { state -> Next in
            switch state.pair {
            case .found(let token, _, let since) where now - since < Self.freshFor:
                return .answer(.success(AccessToken(value: token)))
            case .absent(let error, let since) where now - since < Self.absentFor:
                return .answer(.failure(error))
            case .found, .absent, .unknown:
                state.waiting.append(completion)
                let read = !state.reading
                state.reading = true
                return .wait(read: read)
            }
        }
        switch next {
        case .answer(let result):
            completion(result)
        case .wait(let read):
            if read { self.read(store) }
        }
    }

    /// Reads the store on a credential thread (taking its lock and decrypting it would hold
    /// up a connection's thread), then answers the waiting requests.
    private func read(_ store: any TokenStore) {
        CredentialWorker.shared.run { [self] in
            let name = self.provider.name
            let loginRequired = ProxyError(.loginRequired, "run `tokenproxy login \(name)` first", provider: name)
            let grant: Result<StoredGrant?, ProxyError>
            do {
                grant = .success(try store.read().grants[name])
            } catch {
                grant = .failure(ProxyError(.tokenUnavailable, "\(error)", provider: name))
            }
            let waiting = self.state.withLockedValue { state in
                let now = ContinuousClock.now
                switch grant {
                case .failure(let error):
                    state.pair = .absent(error, since: now)
                case .success(let grant):
                    if let grant, grant.configFingerprint == self.provider.tokenFingerprint(),
                        grant.needsLogin != true, let token = grant.accessToken, let secret = grant.tokenSecret,
                        token != state.refused
                    {
                        state.pair = .found(token: token, secret: secret, since: now)
                    } else {
                        state.pair = .absent(loginRequired, since: now)
                    }
                }
                state.reading = false
                defer { state.waiting.removeAll() }
                return state.waiting
            }
            let result: Result<AccessToken, ProxyError>
            switch self.state.withLockedValue({ $0.pair }) {
            case .found(let token, _, _): result = .success(AccessToken(value: token))
            case .absent(let error, _): result = .failure(error)
            case .unknown: result = .failure(loginRequired)
            }
            for completion in waiting {
                completion(result)
            }
        }
    }

    /// A 401 is replayed once, signed anew: a provider that refused the timestamp or the
    /// nonce (`oauth_problem=timestamp_refused`, `nonce_used`) accepts the fresh one.
    var canRenew: Bool { true }

    /// `Authorization: OAuth …` for this request.
    func authorization(method: String, url: String, formBody: [UInt8]?) -> Result<CredentialHeader, ProxyError> {
        self.credentials().flatMap { credentials in
            do {
                let signature = try OAuth1Signer(credentials: credentials).sign(
                    method: method,
                    url: url,
                    formBody: formBody,
                    nonce: OAuth1Signer.nonce(),
                    timestamp: OAuth1Signer.timestamp()
                )
                return .success(CredentialHeader(name: self.provider.header, value: signature.header))
            } catch {
                return .failure(
                    ProxyError(.tokenUnavailable, "cannot sign the request: \(error)", provider: self.provider.name)
                )
            }
        }
    }

    /// A 401 whose `WWW-Authenticate` names an `oauth_problem` about the token itself
    /// (`token_rejected`, `token_revoked`, `token_expired`, `token_used`; the OAuth Problem
    /// Reporting extension) becomes 401 `login_required` naming the problem: re-signing
    /// cannot help, a new token is needed. A refused stored pair is not used again, and the
    /// store records that a login is needed (`status`, and a restarted proxy, see it).
    func refusal(of head: HTTPResponseHead) -> ProxyError? {
        guard let problem = OAuth1Problem.named(in: head.headers.values("WWW-Authenticate")),
            OAuth1Problem.tokenProblems.contains(problem)
        else { return nil }
        let name = self.provider.name
        let message = "the provider refused the access token (oauth_problem=\(problem))"
        guard self.provider.token == nil, let store = self.store else {
            return ProxyError(.loginRequired, message + "; configure a new token and token_secret", provider: name)
        }
        let error = ProxyError(.loginRequired, message + "; run `tokenproxy login \(name)` again", provider: name)
        let refused = self.state.withLockedValue { state -> String? in
            guard case .found(let token, _, _) = state.pair else { return nil }
            state.refused = token
            state.pair = .absent(error, since: .now)
            return token
        }
        if let refused {
            let fingerprint = self.provider.tokenFingerprint()
            CredentialWorker.shared.run {
                // Best effort: the pair stays refused in this process either way.
                try? store.update { contents in
                    guard var grant = contents.grants[name], grant.accessToken == refused,
                        grant.configFingerprint == fingerprint
                    else { return }
                    grant.needsLogin = true
                    grant.lastError = message
                    grant.lastErrorAt = Date()
                    contents.grants[name] = grant
                }
            }
        }
        return error
    }

    /// The signing credentials: the consumer's, and the configured token pair or the one
    /// last read from the store (``token(completion:)`` reads it).
    func credentials() -> Result<OAuth1Signer.Credentials, ProxyError> {
        OAuth1Signer.Credentials.consumer(of: self.provider).flatMap { consumer in
            self.tokenPair().flatMap { token, secret in
                var credentials = consumer
                credentials.token = token
                credentials.tokenSecret = secret
                return .success(credentials)
            }
        }
    }

    /// The access token and its secret: configured, or as last read from the store.
    private func tokenPair() -> Result<(String, String), ProxyError> {
        let name = self.provider.name
        if let token = self.provider.token, let tokenSecret = self.provider.tokenSecret {
            do {
                return .success((try token.resolve(), try tokenSecret.resolve()))
            } catch {
                return .failure(ProxyError(.tokenUnavailable, "a secret cannot be read: \(error)", provider: name))
            }
        }
        switch self.state.withLockedValue({ $0.pair }) {
        case .found(let token, let secret, _):
            return .success((token, secret))
        case .absent(let error, _):
            return .failure(error)
        case .unknown:
            return .failure(ProxyError(.loginRequired, "run `tokenproxy login \(name)` first", provider: name))
        }
    }
}
