import Crypto
import Foundation
import TokenProxySupport

/// Proof Key for Code Exchange (RFC 7636) with the S256 method: a random verifier kept by
/// the client and its SHA-256 challenge sent with the authorization request.
struct PKCE: Sendable {
    /// 64 characters of base64url from 48 random bytes (RFC 7636 §4.1 asks for 43 to 128).
    let verifier: String
    /// `BASE64URL(SHA256(verifier))` (RFC 7636 §4.2).
    let challenge: String
    /// Always `S256`; `plain` is never offered.
    let method = "S256"

    /// A fresh verifier and its challenge.
    init() {
        self.init(verifier: SecureRandom.base64URL(48))
    }

    /// The challenge for a given verifier (RFC 7636 Appendix B gives a test vector).
    init(verifier: String) {
        self.verifier = verifier
        self.challenge = Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
    }
}
