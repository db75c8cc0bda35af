import Foundation

/// How a provider authenticates itself at the token endpoint (`client_auth`, RFC 6749 §2.3).
package enum ClientAuthMethod: String, Sendable, Equatable, Hashable, CaseIterable {
    /// HTTP Basic with the client ID and secret (RFC 6749 §2.3.1).
    case clientSecretBasic = "client_secret_basic"
    /// The client ID and secret as form parameters (RFC 6749 §2.3.1).
    case clientSecretPost = "client_secret_post"
    /// A JWT signed with `client_assertion_key` (RFC 7523 §2.2, OpenID Connect Core §9).
    case privateKeyJWT = "private_key_jwt"
    /// No client authentication; `client_id` is sent as a parameter when set (public clients).
    case none
}
