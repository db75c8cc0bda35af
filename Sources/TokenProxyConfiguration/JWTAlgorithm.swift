import Foundation

/// The JWT signature algorithms for `jwt_bearer` assertions and `private_key_jwt`.
package enum JWTAlgorithm: String, Sendable, Equatable, CaseIterable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3), the default.
    case rs256 = "RS256"
    /// ECDSA P-256 with SHA-256 (RFC 7518 §3.4).
    case es256 = "ES256"
}
