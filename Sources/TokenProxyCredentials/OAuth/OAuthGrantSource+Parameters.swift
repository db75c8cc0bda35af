import Foundation
import TokenProxyConfiguration
import TokenProxySupport

extension OAuthGrantSource {
    /// The grant's own parameters plus the common ones.
    func parameters(refreshToken: String?) -> Result<[(String, String)], ProxyError> {
        var parameters: [(String, String)] = []
        do {
            switch self.provider.grant {
            case .clientCredentials:
                parameters.append(("grant_type", "client_credentials"))
            case .password where refreshToken != nil:
                // A refresh token from an earlier answer (RFC 6749 §6).
                parameters.append(("grant_type", "refresh_token"))
                parameters.append(("refresh_token", refreshToken ?? ""))
            case .password:
                parameters.append(("grant_type", "password"))
                parameters.append(("username", self.provider.username ?? ""))
                parameters.append(("password", try self.provider.password?.resolve() ?? ""))
            case .refreshToken, .authorizationCode, .deviceCode:
                // RFC 6749 §6. The caller chose the token: the newest stored one of the chain,
                // or the configured seed.
                guard let refreshToken else {
                    return .failure(self.loginRequired("no usable refresh token"))
                }
                parameters.append(("grant_type", "refresh_token"))
                parameters.append(("refresh_token", refreshToken))
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
    func jwtAssertion() -> Result<String, ProxyError> {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: any Sendable] = ["iat": now, "exp": now + 3600, "jti": SecureRandom.hex(16)]
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

    func failure(_ message: String) -> ProxyError {
        ProxyError(.tokenUnavailable, message, provider: self.provider.name)
    }

    /// 401 `login_required`, naming the command that fixes it.
    func loginRequired(_ reason: String) -> ProxyError {
        ProxyError(
            .loginRequired,
            "\(reason); run `tokenproxy login \(self.provider.name)`",
            provider: self.provider.name
        )
    }
}
