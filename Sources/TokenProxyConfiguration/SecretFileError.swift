/// Why a `{"file": PATH}` secret or a service-account file was not used. The message names
/// the file, says what is wrong and, for a refusal, how to fix it; it never holds the
/// file's contents.
struct SecretFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure: one that may pass (a mount not there yet) or a refusal by the
    /// ownership and mode rules (`docs/reference/security.md`, "Secret files").
    struct Code: Hashable, Sendable {
        private enum Base: Hashable, Sendable {
            case unreadable, refused
        }
        private let base: Base

        /// Missing, unreadable, not a regular file, too large, empty or not UTF-8.
        static let unreadable = Code(base: .unreadable)
        /// Readable, but someone other than its owner could have chosen or changed it.
        static let refused = Code(base: .refused)
    }

    /// The kind of failure.
    var code: Code
    /// The message shown to the user.
    var message: String

    /// An error of kind `code` saying `message`.
    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// "cannot read secret file PATH: REASON".
    static func unreadable(_ file: String, _ reason: String) -> SecretFileError {
        SecretFileError(.unreadable, "cannot read secret file \(file): \(reason)")
    }

    /// The message.
    var description: String { self.message }
}
