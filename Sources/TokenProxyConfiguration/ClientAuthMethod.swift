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
    /// Mutual TLS with a certificate issued by a PKI the server trusts (RFC 8705 §2.1):
    /// `client_cert` and `client_key` are presented in the TLS handshake, `client_id` is sent
    /// as a parameter, and no secret.
    case tlsClientAuth = "tls_client_auth"
    /// Mutual TLS with a self-signed certificate the server knows by its registration
    /// (RFC 8705 §2.2), sent like ``tlsClientAuth``.
    case selfSignedTLSClientAuth = "self_signed_tls_client_auth"

    /// Whether the client authenticates by its TLS client certificate (RFC 8705 §2).
    package var isMutualTLS: Bool {
        self == .tlsClientAuth || self == .selfSignedTLSClientAuth
    }
}
