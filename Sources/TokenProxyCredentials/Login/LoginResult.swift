/// What a successful login stored, for the confirmation line (no token values).
package struct LoginResult: Sendable, Equatable {
    /// Seconds until the access token expires, when known.
    package var expiresIn: Double?
    /// Whether a refresh token was issued (without one, the login lasts as long as the
    /// access token).
    package var hasRefreshToken: Bool
    /// The scope granted, when reported.
    package var scope: String?
}
