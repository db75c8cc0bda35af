import Foundation

/// How a provider obtains its credential (`grant`).
package enum GrantType: String, Sendable, Equatable, Hashable, CaseIterable {
    /// RFC 6749 §4.4: the client's own credentials.
    case clientCredentials = "client_credentials"
    /// RFC 6749 §6: a refresh token seeded from the configuration; rotated tokens are persisted.
    case refreshToken = "refresh_token"
    /// RFC 6749 §4.3: resource owner password credentials (deprecated by RFC 9700 §2.4).
    case password
    /// RFC 6749 §4.1 with PKCE (RFC 7636): a browser login through `tokenproxy login`.
    case authorizationCode = "authorization_code"
    /// RFC 8628: a device login through `tokenproxy login`.
    case deviceCode = "device_code"
    /// RFC 7523 §2.1: a signed JWT assertion (a Google service-account key, say).
    case jwtBearer = "jwt_bearer"
    /// RFC 8693: another token (a Kubernetes projected token, say) exchanged for an access token.
    case tokenExchange = "token_exchange"
    /// A fixed token from a secret (an API key).
    case staticToken = "static"
    /// A token printed by a command.
    case command
    /// RFC 5849: OAuth 1.0a request signing.
    case oauth1

    /// Whether obtaining tokens needs a person (`tokenproxy login`): authorization_code,
    /// device_code, and oauth1 (three-legged; see ``ProviderConfiguration/needsLogin`` for
    /// an oauth1 provider configured with its token).
    package var isInteractive: Bool {
        switch self {
        case .authorizationCode, .deviceCode, .oauth1: return true
        default: return false
        }
    }

    /// Whether this grant asks an OAuth 2 token endpoint (`token_url` or `issuer` discovery).
    var usesTokenEndpoint: Bool {
        switch self {
        case .staticToken, .command, .oauth1: return false
        default: return true
        }
    }

    /// The provider keys every grant accepts (`docs/reference/configuration.md`, "Common keys").
    static let commonKeys: [String] = [
        "grant", "issuer", "client_auth", "scopes", "audience", "resource", "token_request_params",
        "token_request_headers", "revocation_url", "refresh_skew_seconds", "default_expires_in", "header",
        "format", "ca_file", "allow_insecure_endpoints", "git_username",
    ]

    /// The provider keys of the TLS client certificate, which every grant accepts: the
    /// certificate goes to the token endpoint and to the routes' upstreams (RFC 8705).
    static let clientCertificateKeys: [String] = ["client_cert", "client_key"]

    /// The keys of an OAuth 2 client talking to a token endpoint; `alg` also signs
    /// `private_key_jwt` client assertions (RFC 7523 §2.2), `dpop` binds its tokens to a key
    /// (RFC 9449).
    private static let clientKeys = ["token_url", "client_id", "client_secret", "client_assertion_key", "alg", "dpop"]

    /// The keys this grant accepts besides ``commonKeys``.
    var specificKeys: [String] {
        switch self {
        case .clientCredentials:
            return Self.clientKeys
        case .refreshToken:
            return Self.clientKeys + ["refresh_token"]
        case .password:
            return Self.clientKeys + ["username", "password"]
        case .authorizationCode:
            return Self.clientKeys + ["authorization_url", "pkce", "redirect_port"]
        case .deviceCode:
            return Self.clientKeys + ["device_authorization_url", "interval"]
        case .jwtBearer:
            return Self.clientKeys + ["service_account_file", "key", "issuer_claim", "subject"]
        case .tokenExchange:
            return Self.clientKeys + [
                "subject_token", "subject_token_type", "actor_token", "actor_token_type", "requested_token_type",
            ]
        case .staticToken:
            return ["token"]
        case .command:
            return ["command", "cache_seconds"]
        case .oauth1:
            return [
                "consumer_key", "consumer_secret", "private_key", "token", "token_secret", "signature_method",
                "realm", "request_token_url", "authorize_url", "access_token_url", "redirect_port",
            ]
        }
    }

    /// Every key this grant accepts.
    var keys: [String] {
        Self.commonKeys + Self.clientCertificateKeys + self.specificKeys
    }

    /// Every provider key of every grant.
    static var allKeys: [String] {
        var seen: Set<String> = []
        return (Self.commonKeys + Self.clientCertificateKeys + Self.allCases.flatMap(\.specificKeys)).filter {
            seen.insert($0).inserted
        }
    }
}
