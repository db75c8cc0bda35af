import Foundation

/// A token `logout` could not revoke because the provider was unavailable (RFC 7009 §2.2.1:
/// 503); kept so the revocation is retried later.
package struct PendingRevocation: Codable, Sendable, Equatable {
    /// The provider the token belonged to.
    var provider: String
    /// The token to revoke.
    var token: String
    /// `refresh_token` or `access_token` (RFC 7009 §2.1 `token_type_hint`).
    var tokenTypeHint: String
    /// The revocation endpoint it is sent to.
    var revocationURL: String
    /// When the first attempt failed.
    var since: Date

    /// Creates a pending revocation.
    init(provider: String, token: String, tokenTypeHint: String, revocationURL: String, since: Date) {
        self.provider = provider
        self.token = token
        self.tokenTypeHint = tokenTypeHint
        self.revocationURL = revocationURL
        self.since = since
    }

    enum CodingKeys: String, CodingKey {
        case provider
        case token
        case tokenTypeHint = "token_type_hint"
        case revocationURL = "revocation_url"
        case since
    }
}
