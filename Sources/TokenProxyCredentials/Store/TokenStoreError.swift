import Foundation
import TokenProxySupport

/// Why the token store could not be used. The message says what to do about it.
package struct TokenStoreError: Error, Sendable, Equatable, CustomStringConvertible, ErrorCodeFamily {
    /// A stable code of this family (``ErrorCode``).
    package typealias Code = ErrorCode<TokenStoreError>

    /// The cases behind the codes; use the ``Code`` values.
    package enum Base: String, Sendable, CaseIterable {
        case corrupt
        case unsupportedVersion = "unsupported_version"
        case decryptionFailed = "decryption_failed"
        case encryptionKeyMissing = "encryption_key_missing"
        case insecurePermissions = "insecure_permissions"
        case lockTimeout = "lock_timeout"
        case io
        case unavailable
    }

    /// What went wrong.
    package var code: Code
    /// What happened and how to fix it; never contains a token.
    var message: String

    /// Creates an error.
    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `token store: CODE: message`, the stable code first (docs/reference/token-store.md#errors).
    package var description: String { "token store: \(self.code): \(self.message)" }
}

extension ErrorCode where Family == TokenStoreError {
    /// The file is not a token store (not JSON, truncated); it was moved aside.
    package static let corrupt = Self(.corrupt)
    /// The file names a format version this build does not know; it was moved aside.
    package static let unsupportedVersion = Self(.unsupportedVersion)
    /// The file is encrypted and `encryption_key` does not open it (left untouched).
    static let decryptionFailed = Self(.decryptionFailed)
    /// The file is encrypted and no `encryption_key` is configured (left untouched).
    static let encryptionKeyMissing = Self(.encryptionKeyMissing)
    /// The file or its directory is open to group or others, or owned by another user.
    static let insecurePermissions = Self(.insecurePermissions)
    /// The provider's lock was not obtained before the deadline.
    static let lockTimeout = Self(.lockTimeout)
    /// A system call failed (the message names it and errno).
    static let io = Self(.io)
    /// A shared store (Redis) cannot be reached or refused the change, and the caller has no
    /// memory to fall back on (a one-shot command such as `login`, whose memory ends with it).
    package static let unavailable = Self(.unavailable)
}
