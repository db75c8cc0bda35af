import Foundation
import Synchronization

/// The credential of an `oauth1` provider (RFC 5849): every forwarded request is signed with
/// the consumer key and secret and the access token and its secret, with a fresh nonce and
/// timestamp each time (`docs/oauth1.md`). Secrets are read when used, so a rotated file or
/// variable takes effect at the next request.
///
/// The token pair is the configured `token` and `token_secret`, or the one `tokenproxy login`
/// put in the token store. The stored pair is read once and kept; a store without one is
/// read again at most once a second, so a login is picked up without a restart and requests
/// that arrive before it do not each read the file.
final class OAuth1CredentialSource: CredentialSource, RequestAuthorizer {
    private let provider: ProviderConfiguration
    private let store: (any TokenStore)?
    private let stored = Mutex(StoredPair.unknown)

    /// What is known of the token pair in the store.
    private enum StoredPair {
        /// Not read yet, or forgotten after the provider refused it.
        case unknown
        /// The pair, as `login` stored it.
        case found(token: String, secret: String)
        /// The store held no usable pair when read at this instant.
        case absent(since: ContinuousClock.Instant)
    }

    /// How long a store found without a token pair is believed.
    private static let absentFor = Duration.seconds(1)

    /// A source for `provider`, whose grant is `oauth1`; a token pair that is not configured
    /// comes from `store`.
    init(provider: ProviderConfiguration, store: (any TokenStore)? = nil) {
        self.provider = provider
        self.store = store
    }

    /// The access token (`oauth_token`) when the provider can sign: what `readyz` and
    /// `status` ask. The token alone authorizes nothing; the header needs the secrets too.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        completion(self.credentials().map { AccessToken(value: $0.token ?? $0.consumerKey) })
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
    /// cannot help, a new token is needed. A refused stored pair is not used again; the store
    /// is read anew for the pair of the next login.
    func refusal(of head: HTTPResponseHead) -> ProxyError? {
        guard let problem = OAuth1Problem.named(in: head.headers.values("WWW-Authenticate")),
            OAuth1Problem.tokenProblems.contains(problem)
        else { return nil }
        let remedy: String
        if self.provider.token != nil {
            remedy = "configure a new token and token_secret"
        } else {
            remedy = "run `tokenproxy login \(self.provider.name)` again"
            self.stored.withLock { pair in
                if case .found(let token, _) = pair {
                    self.refused.withLock { $0 = token }
                }
                pair = .unknown
            }
        }
        return ProxyError(
            .loginRequired,
            "the provider refused the access token (oauth_problem=\(problem)); \(remedy)",
            provider: self.provider.name
        )
    }

    /// The stored token the provider refused: the same pair found again is not used.
    private let refused = Mutex<String?>(nil)

    /// The signing credentials as configured now.
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

    /// The access token and its secret: configured, or stored by `login`.
    private func tokenPair() -> Result<(String, String), ProxyError> {
        let name = self.provider.name
        if let token = self.provider.token, let tokenSecret = self.provider.tokenSecret {
            do {
                return .success((try token.resolve(), try tokenSecret.resolve()))
            } catch {
                return .failure(ProxyError(.tokenUnavailable, "a secret cannot be read: \(error)", provider: name))
            }
        }
        let loginRequired = ProxyError(.loginRequired, "run `tokenproxy login \(name)` first", provider: name)
        guard let store = self.store else { return .failure(loginRequired) }
        switch self.stored.withLock({ $0 }) {
        case .found(let token, let secret):
            return .success((token, secret))
        case .absent(let since) where ContinuousClock.now - since < Self.absentFor:
            return .failure(loginRequired)
        case .absent, .unknown:
            break
        }
        let grant: StoredGrant?
        do {
            grant = try store.read().grants[name]
        } catch {
            return .failure(ProxyError(.tokenUnavailable, error.description, provider: name))
        }
        let refused = self.refused.withLock { $0 }
        guard let grant, grant.configFingerprint == self.provider.tokenFingerprint(),
            let token = grant.accessToken, let secret = grant.tokenSecret, token != refused
        else {
            self.stored.withLock { $0 = .absent(since: .now) }
            return .failure(loginRequired)
        }
        self.stored.withLock { $0 = .found(token: token, secret: secret) }
        return .success((token, secret))
    }
}
