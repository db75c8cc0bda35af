import Crypto
import Foundation
import Synchronization
import TokenProxySupport

/// AES-256-GCM for the token store file, under a key derived with HKDF-SHA256 (RFC 5869)
/// from the configured `encryption_key` and a random salt kept in the file.
///
/// HKDF only stretches a key that is already random; it does nothing against guessing, so
/// the configured key must be random bytes (`openssl rand -base64 32`), not a password.
/// Derived keys are cached per (key, salt), so reading the same file again derives nothing.
final class TokenStoreCipher: Sendable {
    /// The `algorithm` written in the file.
    static let algorithm = "AES-256-GCM"
    /// The `kdf` written in the file.
    static let keyDerivation = "HKDF-SHA256"
    /// HKDF `info` (RFC 5869 §3.2) and the GCM additional authenticated data: binds the
    /// key and the ciphertext to this use, so neither opens anything else.
    static let context = Data("tokenproxy token store v1".utf8)
    /// The salt's length in bytes.
    static let saltBytes = 16

    private struct CacheKey: Hashable {
        var secret: SHA256Digest
        var salt: Data
    }

    private struct Cache {
        var keys: [CacheKey: SymmetricKey] = [:]
        var writeSalts: [SHA256Digest: Data] = [:]
    }

    /// Enough for the salts of a few processes writing in turn.
    private static let cacheLimit = 16
    private let cache = Mutex(Cache())

    /// Creates a cipher with an empty key cache.
    init() {}

    /// Encrypts `plaintext` under `secret`: returns the salt to store and the GCM combined
    /// form (12-byte random nonce, ciphertext, 16-byte tag; NIST SP 800-38D). `associated` is
    /// the GCM additional authenticated data: ``open(_:salt:secret:associated:)`` must be
    /// given the same bytes (the Redis store binds each value to its key this way).
    func seal(
        _ plaintext: Data,
        secret: String,
        associated: Data = TokenStoreCipher.context
    ) throws(TokenStoreError) -> (salt: Data, sealed: Data) {
        let salt = self.writeSalt(secret: secret)
        let key = self.key(secret: secret, salt: salt)
        do {
            // A random 96-bit nonce per write: far below the 2^32 messages per key that
            // SP 800-38D §8.3 allows.
            let box = try AES.GCM.seal(plaintext, using: key, authenticating: associated)
            guard let combined = box.combined else {
                throw TokenStoreError(.io, "AES-GCM produced no combined form")
            }
            return (salt, combined)
        } catch let error as TokenStoreError {
            throw error
        } catch {
            throw TokenStoreError(.io, "cannot encrypt the token store: \(error)")
        }
    }

    /// Decrypts what ``seal(_:secret:associated:)`` produced; a wrong key, altered bytes or
    /// other associated data fail GCM's authentication (`decryption_failed`), too few bytes
    /// to be a sealed box are `corrupt`.
    func open(
        _ sealed: Data,
        salt: Data,
        secret: String,
        associated: Data = TokenStoreCipher.context
    ) throws(TokenStoreError) -> Data {
        let box: AES.GCM.SealedBox
        do {
            box = try AES.GCM.SealedBox(combined: sealed)
        } catch {
            throw TokenStoreError(.corrupt, "the sealed contents are too short to be AES-GCM output")
        }
        do {
            return try AES.GCM.open(box, using: self.key(secret: secret, salt: salt), authenticating: associated)
        } catch {
            throw TokenStoreError(
                .decryptionFailed,
                "token_store.encryption_key does not open it (a different key, or altered bytes)"
            )
        }
    }

    /// The salt this process writes with under `secret`: random, chosen once, so writes
    /// reuse its cached key.
    private func writeSalt(secret: String) -> Data {
        let digest = SHA256.hash(data: Data(secret.utf8))
        return self.cache.withLockedValue { cache in
            if let salt = cache.writeSalts[digest] { return salt }
            if cache.writeSalts.count >= Self.cacheLimit { cache.writeSalts.removeAll() }
            var generator = SystemRandomNumberGenerator()
            let salt = Data((0..<Self.saltBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
            cache.writeSalts[digest] = salt
            return salt
        }
    }

    /// HKDF-SHA256(IKM: the secret's UTF-8 bytes, salt, info: ``context``) → 32 bytes.
    private func key(secret: String, salt: Data) -> SymmetricKey {
        let cacheKey = CacheKey(secret: SHA256.hash(data: Data(secret.utf8)), salt: salt)
        if let key = self.cache.withLockedValue({ $0.keys[cacheKey] }) { return key }
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(secret.utf8)),
            salt: salt,
            info: Self.context,
            outputByteCount: 32
        )
        self.cache.withLockedValue { cache in
            if cache.keys.count >= Self.cacheLimit { cache.keys.removeAll() }
            cache.keys[cacheKey] = key
        }
        return key
    }
}
