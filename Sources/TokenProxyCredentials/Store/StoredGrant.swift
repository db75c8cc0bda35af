import Foundation

/// What the token store keeps for one provider (`docs/reference/token-store.md`): the tokens, when the
/// access token expires on the wall clock, and the last failure for `tokenproxy status`.
package struct StoredGrant: Codable, Sendable, Equatable {
    /// The access token, when one was obtained.
    var accessToken: String?
    /// The `token_type` the endpoint sent with it (`Bearer`, `DPoP`, `N_A`, ...).
    var tokenType: String?
    /// When the access token expires; nil means "until a 401".
    var expiresAt: Date?
    /// The refresh token: the newest of a rotating chain, or what `login` obtained.
    var refreshToken: String?
    /// The access token's secret of an `oauth1` provider (RFC 5849 §2.3), from `login`.
    var tokenSecret: String?
    /// An `oauth1` out-of-band login waiting for its verifier (`login --verifier`).
    var pendingLogin: PendingOAuth1Login?
    /// The scope the endpoint granted, when it said.
    var scope: String?
    /// When the tokens were obtained.
    var obtainedAt: Date?
    /// SHA-256 (hex) over the provider settings the tokens were obtained under (grant,
    /// endpoints, client, scopes, and the configured `refresh_token` seed): tokens obtained
    /// under other settings are not used, and a new seed starts a new refresh chain.
    var configFingerprint: String?
    /// The `x5t#S256` thumbprint (RFC 8705 §3.1) of the client certificate the provider
    /// presented when the access token was obtained, when it presented one: a token bound to
    /// a certificate that has since been rotated is not used.
    var certificateThumbprint: String? = nil
    /// The refresh token was refused (`invalid_grant`): nothing is tried until a login.
    var needsLogin: Bool?
    /// The last failure obtaining a token (no secret in it), for `status`.
    var lastError: String?
    /// When ``lastError`` happened.
    var lastErrorAt: Date?
    /// The DPoP private key (PEM) the proxy generated for the provider (`dpop` without a
    /// `key`): the tokens are bound to it, so it is kept with them.
    var dpopKey: String?

    /// Creates a record.
    init(
        accessToken: String? = nil,
        tokenType: String? = nil,
        expiresAt: Date? = nil,
        refreshToken: String? = nil,
        tokenSecret: String? = nil,
        pendingLogin: PendingOAuth1Login? = nil,
        scope: String? = nil,
        obtainedAt: Date? = nil,
        configFingerprint: String? = nil,
        needsLogin: Bool? = nil,
        lastError: String? = nil,
        lastErrorAt: Date? = nil,
        dpopKey: String? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.refreshToken = refreshToken
        self.tokenSecret = tokenSecret
        self.pendingLogin = pendingLogin
        self.scope = scope
        self.obtainedAt = obtainedAt
        self.configFingerprint = configFingerprint
        self.needsLogin = needsLogin
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.dpopKey = dpopKey
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresAt = "expires_at"
        case refreshToken = "refresh_token"
        case tokenSecret = "token_secret"
        case pendingLogin = "pending_login"
        case scope
        case obtainedAt = "obtained_at"
        case configFingerprint = "config_fingerprint"
        case certificateThumbprint = "certificate_thumbprint"
        case needsLogin = "needs_login"
        case lastError = "last_error"
        case lastErrorAt = "last_error_at"
        case dpopKey = "dpop_key"
    }
}
