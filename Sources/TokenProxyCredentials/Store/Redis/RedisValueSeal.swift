import Foundation
import TokenProxyConfiguration

/// How a value of the Redis store is sealed: `tp1:` + base64(salt) + `:` + base64(AES-256-GCM
/// combined form), under a key derived from `encryption_key` as the file store derives its
/// key (``TokenStoreCipher``).
///
/// The associated data names the value's place, `tokenproxy redis store v1`, the hash key
/// and the field (`grant:PROVIDER`): a value copied to another provider's field, to another
/// prefix, or written without the key fails authentication and is refused. Which client and
/// endpoint the tokens belong to is inside the sealed record (its configuration fingerprint),
/// so tokens of other settings are not used either.
struct RedisValueSeal: Sendable {
    /// The configured key.
    let encryptionKey: Secret
    /// The hash all values live in (`PREFIX` + `tokens`).
    let hashKey: String
    /// Key derivation, cached per salt.
    let cipher = TokenStoreCipher()

    /// The marker every sealed value starts with.
    static let marker = "tp1:"
    /// The context every associated data starts with.
    static let context = "tokenproxy redis store v1"

    /// The associated data of `field`.
    func associatedData(field: String) -> Data {
        Data("\(Self.context)\n\(self.hashKey)\n\(field)".utf8)
    }

    /// The key's value; `encryption_key_missing` when it cannot be read.
    func secret() throws(TokenStoreError) -> String {
        do {
            return try self.encryptionKey.resolve()
        } catch {
            let reason = error.problems.map(\.message).joined(separator: "; ")
            throw TokenStoreError(
                .encryptionKeyMissing,
                "token_store.redis.encryption_key (\(self.encryptionKey)) cannot be read: \(reason)"
            )
        }
    }

    /// `plaintext` sealed for `field`.
    func seal(_ plaintext: Data, field: String) throws(TokenStoreError) -> [UInt8] {
        let (salt, sealed) = try self.cipher.seal(
            plaintext,
            secret: try self.secret(),
            associated: self.associatedData(field: field)
        )
        return Array("\(Self.marker)\(salt.base64EncodedString()):\(sealed.base64EncodedString())".utf8)
    }

    /// The plaintext of `value` read from `field`; `decryption_failed` when it was not sealed
    /// for this field under this key, `corrupt` when it is not a sealed value at all.
    func open(_ value: [UInt8], field: String) throws(TokenStoreError) -> Data {
        let text = String(decoding: value, as: UTF8.self)
        guard text.hasPrefix(Self.marker) else {
            throw TokenStoreError(.corrupt, "the value of \(field) is not sealed (written without the key)")
        }
        let parts = text.dropFirst(Self.marker.count).split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let salt = Data(base64Encoded: String(parts[0])),
            let sealed = Data(base64Encoded: String(parts[1]))
        else {
            throw TokenStoreError(.corrupt, "the value of \(field) is not a sealed value")
        }
        do {
            return try self.cipher.open(
                sealed,
                salt: salt,
                secret: try self.secret(),
                associated: self.associatedData(field: field)
            )
        } catch  where error.code == .decryptionFailed {
            throw TokenStoreError(
                .decryptionFailed,
                "the value of \(field) does not open under token_store.redis.encryption_key for this key "
                    + "(another key, altered bytes, or a value copied from another place)"
            )
        }
    }
}
