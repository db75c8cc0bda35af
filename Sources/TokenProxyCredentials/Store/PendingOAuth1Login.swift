import Foundation

/// The temporary credentials (RFC 5849 §2.1) of an `oauth1` out-of-band login between its
/// two steps: `tokenproxy login --oob` obtains them and prints the authorization URL, and
/// `tokenproxy login --verifier CODE` exchanges them with the verifier the person was shown.
struct PendingOAuth1Login: Codable, Sendable, Equatable {
    /// `oauth_token` of the temporary credentials.
    var token: String
    /// `oauth_token_secret` of the temporary credentials.
    var tokenSecret: String
    /// When they were obtained; older ones are not used (``maximumAge``).
    var since: Date

    /// Providers let temporary credentials expire within minutes to an hour; a verifier for
    /// an older pair would only be refused.
    static let maximumAge: Double = 3600

    enum CodingKeys: String, CodingKey {
        case token
        case tokenSecret = "token_secret"
        case since
    }
}
