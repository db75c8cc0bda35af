import Dispatch
import Foundation
import Synchronization

/// The machine grants that need no person: `client_credentials` (RFC 6749 §4.4),
/// `password` (§4.3), `refresh_token` (§6) and `token_exchange` (RFC 8693).
///
/// Tokens are cached per provider; one request is in flight at a time and every request
/// arriving meanwhile shares its result; expiry counts from when the request was sent.
/// A rotated refresh token replaces the old one as soon as it arrives; an answer without
/// one keeps the old one; `invalid_grant` on a refresh forgets it, and requests then get
/// 401 `login_required` until a new one is configured or stored.
final class OAuthGrantSource: CredentialSource {
    private let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let tokenWait: Double
    private let cache: SharedTokenCache
    /// The refresh token in use: nil until first read from the config seed, `.some(nil)`
    /// once `invalid_grant` made it unusable.
    private let refreshToken = Mutex<String??>(nil)

    init(provider: ProviderConfiguration, fetcher: UpstreamFetcher, limits: Limits) {
        var provider = provider
        if provider.tokenURL == nil, let file = provider.serviceAccountFile {
            // A Google service-account key names its token endpoint.
            provider.tokenURL = (try? ServiceAccountKey.load(file))?.tokenURI
        }
        self.provider = provider
        self.client = TokenEndpointClient(
            provider: provider,
            fetcher: fetcher,
            connectTimeout: limits.upstreamConnectTimeoutSeconds
        )
        self.tokenWait = limits.tokenWaitSeconds
        self.cache = SharedTokenCache(refreshSkewSeconds: provider.refreshSkewSeconds)
    }

    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        self.cache.token(completion: completion) { self.fetch() }
    }

    /// Forgets `token` if it is still the cached one.
    func invalidate(_ token: AccessToken) {
        self.cache.invalidate(token)
    }

    private func fetch() {
        let parameters: [(String, String)]
        switch self.parameters() {
        case .failure(let error):
            self.finish(.failure(error))
            return
        case .success(let built):
            parameters = built
        }
        let deadline = ContinuousClock.now + .milliseconds(Int64(self.tokenWait * 1000))
        let defaultExpiresIn = self.provider.defaultExpiresIn
        let usedRefreshToken = parameters.first { $0.0 == "refresh_token" }?.1
        self.client.request(parameters, deadline: deadline) { [self] result in
            switch result {
            case .success(let issued):
                if let rotated = issued.response.refreshToken, self.provider.grant == .refreshToken {
                    self.refreshToken.withLock { $0 = .some(rotated) }
                }
                let lifetime = issued.response.expiresIn ?? defaultExpiresIn
                self.finish(
                    .success(
                        AccessToken(
                            value: issued.response.accessToken,
                            expiresAt: lifetime.map { issued.sentAt + .milliseconds(Int64($0 * 1000)) }
                        )
                    )
                )
            case .failure(let failure):
                if failure.oauthError == "invalid_grant", let usedRefreshToken {
                    // The refresh token is dead: forget it (unless another one replaced it).
                    self.refreshToken.withLock { current in
                        if current == .some(usedRefreshToken) || current == nil {
                            current = .some(nil)
                        }
                    }
                    var error = failure.error
                    error.code = .loginRequired
                    error.message =
                        "the refresh token was refused (invalid_grant); run `tokenproxy login \(self.provider.name)`"
                    self.finish(.failure(error))
                } else {
                    self.finish(.failure(failure.error))
                }
            }
        }
    }

    private func finish(_ outcome: Result<AccessToken, ProxyError>) {
        if case .success(let token) = outcome {
            self.scheduleBackgroundRefresh(of: token)
        }
        self.cache.complete(outcome)
    }

    /// Refreshes a little before the token goes stale (a tenth of its life, between 1 and
    /// 30 seconds ahead), so requests rarely wait for a token request.
    private func scheduleBackgroundRefresh(of token: AccessToken) {
        guard let expiresAt = token.expiresAt else { return }
        let stale = expiresAt - .milliseconds(Int64(self.provider.refreshSkewSeconds * 1000))
        let remaining = Double((stale - .now).milliseconds) / 1000
        let lead = max(1, min(30, remaining / 10))
        let delay = remaining - lead
        guard delay > 0 else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.cache.beginBackgroundRefresh(of: token) else { return }
            self.fetch()
        }
    }

    /// The grant's own parameters plus the common ones.
    private func parameters() -> Result<[(String, String)], ProxyError> {
        var parameters: [(String, String)] = []
        do {
            switch self.provider.grant {
            case .clientCredentials:
                parameters.append(("grant_type", "client_credentials"))
            case .password:
                parameters.append(("grant_type", "password"))
                parameters.append(("username", self.provider.username ?? ""))
                parameters.append(("password", try self.provider.password?.resolve() ?? ""))
            case .refreshToken:
                guard let token = try self.currentRefreshToken() else {
                    return .failure(
                        ProxyError(
                            .loginRequired,
                            "no usable refresh token; run `tokenproxy login \(self.provider.name)`",
                            provider: self.provider.name
                        )
                    )
                }
                parameters.append(("grant_type", "refresh_token"))
                parameters.append(("refresh_token", token))
            case .tokenExchange:
                // RFC 8693 §2.1. The subject token is read for every exchange: a projected
                // Kubernetes service-account token is rotated on disk.
                parameters.append(("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"))
                parameters.append(("subject_token", try self.provider.subjectToken?.resolve() ?? ""))
                parameters.append(
                    ("subject_token_type", self.provider.subjectTokenType ?? "urn:ietf:params:oauth:token-type:jwt")
                )
                if let actor = try self.provider.actorToken?.resolve() {
                    parameters.append(("actor_token", actor))
                    parameters.append(
                        ("actor_token_type", self.provider.actorTokenType ?? "urn:ietf:params:oauth:token-type:jwt")
                    )
                }
                if let requested = self.provider.requestedTokenType {
                    parameters.append(("requested_token_type", requested))
                }
            case .jwtBearer:
                // RFC 7523 §2.1: the assertion is the grant.
                parameters.append(("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"))
                switch self.jwtAssertion() {
                case .success(let assertion): parameters.append(("assertion", assertion))
                case .failure(let error): return .failure(error)
                }
            default:
                return .failure(
                    ProxyError(.tokenUnavailable, "grant not handled here", provider: self.provider.name)
                )
            }
        } catch {
            return .failure(
                ProxyError(
                    .tokenUnavailable,
                    error.problems.map(\.message).joined(separator: "; "),
                    provider: self.provider.name
                )
            )
        }
        if !self.provider.scopes.isEmpty {
            parameters.append(("scope", self.provider.scopes.joined(separator: " ")))
        }
        // For jwt_bearer, `audience` is the assertion's `aud`, not a form parameter.
        if let audience = self.provider.audience, self.provider.grant != .jwtBearer {
            parameters.append(("audience", audience))
        }
        if let resource = self.provider.resource {
            parameters.append(("resource", resource))
        }
        return .success(parameters)
    }

    /// A fresh signed assertion: from a service-account key file (read each time, so a
    /// rotated key is used), or from `key` with `issuer_claim`, `subject` and `audience`.
    private func jwtAssertion() -> Result<String, ProxyError> {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: any Sendable] = ["iat": now, "exp": now + 3600, "jti": DemoRandom.hex(16)]
        let signer: JWTSigner
        do {
            if let file = self.provider.serviceAccountFile {
                let key = try ServiceAccountKey.load(file)
                signer = try JWTSigner(pem: key.privateKey, algorithm: .rs256, keyID: key.privateKeyID)
                claims["iss"] = key.clientEmail
                claims["sub"] = self.provider.subject ?? key.clientEmail
                claims["aud"] = self.provider.audience ?? key.tokenURI ?? self.provider.tokenURL ?? ""
                if !self.provider.scopes.isEmpty {
                    // Google reads the scopes from the assertion.
                    claims["scope"] = self.provider.scopes.joined(separator: " ")
                }
            } else {
                let pem = try self.provider.key?.resolve() ?? ""
                signer = try JWTSigner(pem: pem, algorithm: self.provider.jwtAlgorithm)
                let issuer = self.provider.issuerClaim ?? ""
                claims["iss"] = issuer
                claims["sub"] = self.provider.subject ?? issuer
                claims["aud"] = self.provider.audience ?? self.provider.tokenURL ?? ""
            }
            return .success(try signer.sign(claims))
        } catch let error as ConfigurationError {
            return .failure(self.failure(error.problems.map(\.message).joined(separator: "; ")))
        } catch {
            return .failure(self.failure("cannot sign the assertion: \(error)"))
        }
    }

    private func failure(_ message: String) -> ProxyError {
        ProxyError(.tokenUnavailable, message, provider: self.provider.name)
    }

    private func currentRefreshToken() throws(ConfigurationError) -> String? {
        if let known = self.refreshToken.withLock({ $0 }) {
            return known
        }
        let seed = try self.provider.refreshToken?.resolve()
        self.refreshToken.withLock { current in
            if current == nil {
                current = .some(seed)
            }
        }
        return self.refreshToken.withLock { $0 } ?? nil
    }
}
