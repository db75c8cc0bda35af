import Foundation

/// Why a Redis command gave no answer: the server cannot be reached (or stopped answering
/// within the timeout), or it refused the login or the database.
struct RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    enum Kind: Sendable, Equatable {
        /// No connection, a broken one, or no answer within the command timeout.
        case unreachable
        /// The server answered but refused the login, the database or a command.
        case refused
    }

    /// The kind of failure.
    var kind: Kind
    /// What happened; never contains a password or a token.
    var message: String

    /// Creates an error.
    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    var description: String { "redis: \(self.message)" }
}
