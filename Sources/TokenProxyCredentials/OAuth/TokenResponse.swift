import Foundation

/// A validated token endpoint answer (RFC 6749 §5.1), or the OAuth error it carried (§5.2).
struct TokenResponse: Sendable, Equatable {
    /// The access token.
    var accessToken: String
    /// Seconds until expiry, when the endpoint said.
    var expiresIn: Double?
    /// A refresh token, when issued.
    var refreshToken: String?
    /// The granted scope, when reported.
    var scope: String?
    /// The `token_type`, when sent (`Bearer`, or `N_A` from a token exchange).
    var tokenType: String? = nil
}
