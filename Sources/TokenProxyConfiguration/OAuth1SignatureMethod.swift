import Foundation

/// The OAuth 1.0a signature methods (RFC 5849 §3.4, plus the common HMAC-SHA256).
package enum OAuth1SignatureMethod: String, Sendable, Equatable, CaseIterable {
    /// RFC 5849 §3.4.2, the default.
    case hmacSHA1 = "HMAC-SHA1"
    /// HMAC with SHA-256, as in §3.4.2 with another hash.
    case hmacSHA256 = "HMAC-SHA256"
    /// RFC 5849 §3.4.3: `consumer_secret` holds the PEM RSA private key.
    case rsaSHA1 = "RSA-SHA1"
    /// RFC 5849 §3.4.4: the secrets themselves (only over TLS).
    case plaintext = "PLAINTEXT"
}
