import Foundation

/// One credential provider (`providers.NAME`): how to obtain a token and how to present it.
///
/// `grant` selects the kind; each grant accepts its own keys plus the common ones (see
/// `docs/reference/configuration.md`). Keys are optional here; which ones a grant requires is checked
/// when the configuration is validated.
package struct ProviderConfiguration: Sendable, Equatable {
    /// The provider's name: its key under `providers`, used by routes, `tokenproxy login NAME`,
    /// logs and metrics.
    package var name: String
    /// `grant`: how tokens are obtained.
    package var grant: GrantType

    // MARK: Common keys

    /// `issuer`: OIDC / RFC 8414 discovery fills the endpoints not given explicitly.
    package var issuer: String?
    /// `token_url`: the token endpoint (RFC 6749 §3.2).
    package var tokenURL: String?
    /// `authorization_url`: the authorization endpoint (RFC 6749 §3.1), authorization_code only.
    package var authorizationURL: String?
    /// `device_authorization_url`: the device authorization endpoint (RFC 8628 §3.1), device_code only.
    package var deviceAuthorizationURL: String?
    /// `revocation_url`: the revocation endpoint used by `logout` (RFC 7009).
    package var revocationURL: String?
    /// `client_id`.
    package var clientID: String?
    /// `client_secret`.
    package var clientSecret: Secret?
    /// `client_assertion_key`: PEM private key signing `private_key_jwt` client assertions.
    package var clientAssertionKey: Secret?
    /// `client_auth`, resolved: the configured method, else `private_key_jwt` when a
    /// `client_assertion_key` is given, else `client_secret_basic` when a `client_secret` is
    /// given, else `none`.
    package var clientAuth: ClientAuthMethod = .none
    /// `scopes`: sent space-separated as `scope` (RFC 6749 §3.3). Default `[]` (no `scope`).
    package var scopes: [String] = []
    /// `audience`: the `audience` token request parameter (RFC 8693 §2.1, Auth0 and others);
    /// for jwt_bearer, the assertion's `aud` claim instead (RFC 7523 §3).
    package var audience: String?
    /// `resource`: the `resource` token request parameter (RFC 8707).
    package var resource: String?
    /// `token_request_params`: extra form parameters for every token request.
    package var tokenRequestParams: [String: String] = [:]
    /// `token_request_headers`: extra headers for every token request.
    package var tokenRequestHeaders: [String: String] = [:]
    /// `refresh_skew_seconds`: a token is renewed this long before it expires. Default 60.
    package var refreshSkewSeconds: Double = 60
    /// `default_expires_in`: lifetime assumed when a token response has no `expires_in`;
    /// absent means valid until the upstream answers 401.
    package var defaultExpiresIn: Double?
    /// `header`: the request header carrying the credential. Default `Authorization`.
    package var header: String = "Authorization"
    /// `format`: the header value, `{token}` replaced by the token. Default `Bearer {token}`.
    package var format: String = "Bearer {token}"
    /// `git_username`: the user name `tokenproxy credential git` gives git with the token
    /// (hosts that take a token as the password ignore or check it).
    package var gitUsername: String = "x-access-token"
    /// `ca_file`: PEM trust anchors for the provider's own endpoints (default: system CAs).
    package var caFile: String?
    /// `allow_insecure_endpoints`: allow `http://` endpoints (tests, local servers). Default false.
    package var allowInsecureEndpoints: Bool = false
    /// `dpop`: sender-constrained tokens (RFC 9449): every token request and every request
    /// with a bound token carries a proof signed with this key. Absent: bearer tokens.
    package var dpop: DPoPConfiguration?
    /// `client_cert`: the PEM client certificate (a secret, usually a file) presented in the
    /// TLS handshake with the provider's endpoints and, unless a route has its own, with the
    /// upstreams of its routes (RFC 8705: mTLS client authentication and certificate-bound tokens).
    package var clientCert: Secret?
    /// `client_key`: the PEM private key of `client_cert` (a secret, usually a file).
    package var clientKey: Secret?

    // MARK: Grant keys

    /// `refresh_token` (refresh_token): the seed refresh token; rotated ones are persisted.
    package var refreshToken: Secret?
    /// `username` (password).
    package var username: String?
    /// `password` (password).
    package var password: Secret?
    /// `pkce` (authorization_code): use PKCE with S256 (RFC 7636). Default true.
    package var pkce: Bool = true
    /// `redirect_port` (authorization_code): port of the `http://127.0.0.1:PORT/callback`
    /// redirect URI; absent means an ephemeral port.
    package var redirectPort: UInt16?
    /// `interval` (device_code): seconds between polls when the server gives none (RFC 8628 §3.5 default 5).
    package var interval: Double?
    /// `service_account_file` (jwt_bearer): a Google service-account JSON key file.
    package var serviceAccountFile: String?
    /// `key` (jwt_bearer): the PEM private key signing the assertion.
    package var key: Secret?
    /// `issuer_claim` (jwt_bearer): the assertion's `iss` claim.
    package var issuerClaim: String?
    /// `subject` (jwt_bearer): the assertion's `sub` claim; defaults to `issuer_claim` (a client
    /// acting as itself), or, with a service-account file, to the account's e-mail. Set it to
    /// a user's e-mail for Google domain-wide delegation.
    package var subject: String?
    /// `alg` (jwt_bearer, and `private_key_jwt` assertions): `RS256` (default) or `ES256`.
    var alg: String?
    /// `subject_token` (token_exchange): the token to exchange, usually a file.
    package var subjectToken: Secret?
    /// `subject_token_type` (token_exchange): its type URI (RFC 8693 §3).
    package var subjectTokenType: String?
    /// `actor_token` (token_exchange): optional actor token (delegation).
    package var actorToken: Secret?
    /// `actor_token_type` (token_exchange): required with `actor_token`.
    package var actorTokenType: String?
    /// `requested_token_type` (token_exchange): optional type URI of the wanted token.
    package var requestedTokenType: String?
    /// `token` (static: the token itself; oauth1: the access token).
    package var token: Secret?
    /// `command` (command): argv of a program whose stdout is a token or a JSON token response.
    package var command: [String]?
    /// `cache_seconds` (command): how long a printed token is reused when it has no `expires_in`.
    package var cacheSeconds: Double?
    /// `consumer_key` (oauth1).
    package var consumerKey: String?
    /// `consumer_secret` (oauth1): the consumer secret (HMAC and PLAINTEXT methods).
    package var consumerSecret: Secret?
    /// `private_key` (oauth1, RSA-SHA1): the consumer's PEM RSA private key. A PEM key in
    /// `consumer_secret` is still accepted when this is absent.
    package var privateKey: Secret?
    /// `token_secret` (oauth1): the access token's secret.
    package var tokenSecret: Secret?
    /// `signature_method` (oauth1): `HMAC-SHA1` (default), `HMAC-SHA256`, `RSA-SHA1` or `PLAINTEXT`.
    var signatureMethod: String?
    /// `realm` (oauth1): the `realm` parameter of the `Authorization` header (RFC 5849 §3.5.1).
    package var realm: String?
    /// `request_token_url` (oauth1 three-legged login, RFC 5849 §2.1).
    package var requestTokenURL: String?
    /// `authorize_url` (oauth1 three-legged login, RFC 5849 §2.2).
    package var authorizeURL: String?
    /// `access_token_url` (oauth1 three-legged login, RFC 5849 §2.3).
    package var accessTokenURL: String?

    /// Creates a provider with every optional key absent and every default in place.
    package init(name: String, grant: GrantType) {
        self.name = name
        self.grant = grant
    }

    /// Whether tokens come only from `tokenproxy login`: an interactive grant, except an
    /// oauth1 provider configured with its `token` and `token_secret`.
    package var needsLogin: Bool {
        if self.grant == .oauth1 { return self.token == nil }
        return self.grant.isInteractive
    }

    /// `alg` as a value, `RS256` when absent or unknown (an unknown one fails validation).
    package var jwtAlgorithm: JWTAlgorithm {
        self.alg.flatMap(JWTAlgorithm.init(rawValue:)) ?? .rs256
    }

    /// `signature_method` as a value, `HMAC-SHA1` when absent or unknown (an unknown one fails validation).
    package var oauth1SignatureMethod: OAuth1SignatureMethod {
        self.signatureMethod.flatMap(OAuth1SignatureMethod.init(rawValue:)) ?? .hmacSHA1
    }

    /// The secret-valued keys with their JSON names.
    static var secretKeys: [(key: String, field: WritableKeyPath<ProviderConfiguration, Secret?>)] {
        [
            ("client_secret", \.clientSecret), ("client_assertion_key", \.clientAssertionKey),
            ("refresh_token", \.refreshToken), ("password", \.password), ("key", \.key),
            ("subject_token", \.subjectToken), ("actor_token", \.actorToken), ("token", \.token),
            ("consumer_secret", \.consumerSecret), ("private_key", \.privateKey), ("token_secret", \.tokenSecret),
            ("client_cert", \.clientCert), ("client_key", \.clientKey),
        ]
    }

    /// The endpoint URLs with their JSON names: https unless `allow_insecure_endpoints`.
    static var endpointKeys: [(key: String, field: WritableKeyPath<ProviderConfiguration, String?>)] {
        [
            ("issuer", \.issuer), ("token_url", \.tokenURL), ("authorization_url", \.authorizationURL),
            ("device_authorization_url", \.deviceAuthorizationURL), ("revocation_url", \.revocationURL),
            ("request_token_url", \.requestTokenURL), ("authorize_url", \.authorizeURL),
            ("access_token_url", \.accessTokenURL),
        ]
    }

    /// The keys naming files, with their JSON names (made absolute when a file is loaded).
    static var pathKeys: [(key: String, field: WritableKeyPath<ProviderConfiguration, String?>)] {
        [("ca_file", \.caFile), ("service_account_file", \.serviceAccountFile)]
    }
}
