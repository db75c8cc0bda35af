import Foundation

/// Random values from the system's cryptographically secure generator: PKCE verifiers,
/// `state`, JWT ids, temp-file names, demo secrets.
package enum SecureRandom {
    /// `count` random bytes.
    static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// `count` random bytes as lowercase hex.
    package static func hex(_ count: Int) -> String {
        Hex.encode(self.bytes(count))
    }

    /// `count` random bytes, base64url without padding (RFC 4648 §5).
    package static func base64URL(_ count: Int) -> String {
        Base64URL.encode(Data(self.bytes(count)))
    }
}
