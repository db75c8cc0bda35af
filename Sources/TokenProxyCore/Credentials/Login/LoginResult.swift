/// What a successful login stored, for the confirmation line (no token values).
public struct LoginResult: Sendable, Equatable {
    /// Seconds until the access token expires, when known.
    public var expiresIn: Double?
    /// Whether a refresh token was issued (without one, the login lasts as long as the
    /// access token).
    public var hasRefreshToken: Bool
    /// The scope granted, when reported.
    public var scope: String?
}
