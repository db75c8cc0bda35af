import CryptoExtras
import Foundation

/// The credential of an `oauth1` provider (RFC 5849): every forwarded request is signed with
/// the consumer key and secret and the access token and its secret, with a fresh nonce and
/// timestamp each time (`docs/oauth1.md`). Secrets are read when used, so a rotated file or
/// variable takes effect at the next request.
final class OAuth1CredentialSource: CredentialSource, RequestAuthorizer {
    private let provider: ProviderConfiguration

    /// A source for `provider`, whose grant is `oauth1`.
    init(provider: ProviderConfiguration) {
        self.provider = provider
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
    /// cannot help, a new token is needed.
    func refusal(of head: HTTPResponseHead) -> ProxyError? {
        guard let problem = OAuth1Problem.named(in: head.headers.values("WWW-Authenticate")),
            OAuth1Problem.tokenProblems.contains(problem)
        else { return nil }
        return ProxyError(
            .loginRequired,
            "the provider refused the access token (oauth_problem=\(problem)); configure a new token and token_secret",
            provider: self.provider.name
        )
    }

    /// The signing credentials as configured now.
    func credentials() -> Result<OAuth1Signer.Credentials, ProxyError> {
        let name = self.provider.name
        guard let token = self.provider.token, let tokenSecret = self.provider.tokenSecret else {
            return .failure(ProxyError(.loginRequired, "run `tokenproxy login \(name)` first", provider: name))
        }
        guard let consumerKey = self.provider.consumerKey, let consumerSecret = self.provider.consumerSecret else {
            return .failure(
                ProxyError(.tokenUnavailable, "consumer_key and consumer_secret are needed", provider: name)
            )
        }
        let method = self.provider.signatureMethod.flatMap(OAuth1SignatureMethod.init(rawValue:)) ?? .hmacSHA1
        do {
            let secret = try consumerSecret.resolve()
            var rsaKey: _RSA.Signing.PrivateKey?
            if method == .rsaSHA1 {
                do {
                    rsaKey = try _RSA.Signing.PrivateKey(pemRepresentation: secret)
                } catch {
                    return .failure(
                        ProxyError(
                            .tokenUnavailable,
                            "consumer_secret is not a PEM RSA private key of 2048 bits or more",
                            provider: name
                        )
                    )
                }
            }
            return .success(
                OAuth1Signer.Credentials(
                    consumerKey: consumerKey,
                    consumerSecret: method == .rsaSHA1 ? "" : secret,
                    token: try token.resolve(),
                    tokenSecret: try tokenSecret.resolve(),
                    method: method,
                    rsaKey: rsaKey,
                    realm: self.provider.realm
                )
            )
        } catch {
            return .failure(ProxyError(.tokenUnavailable, "a secret cannot be read: \(error)", provider: name))
        }
    }
}
