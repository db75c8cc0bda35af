import TokenProxySupport

/// Why `tokenproxy login` (or `logout`) did not complete. The message says what happened
/// and never contains a token, code or secret.
package struct LoginError: Error, Sendable, Equatable, CustomStringConvertible, ErrorCodeFamily {
    /// A stable code of this family (``ErrorCode``).
    package typealias Code = ErrorCode<LoginError>

    /// The cases behind the codes; use the ``Code`` values.
    package enum Base: String, Sendable, CaseIterable {
        case notInteractive = "not_interactive"
        case endpointMissing = "endpoint_missing"
        case listenFailed = "listen_failed"
        case timedOut = "timed_out"
        case denied
        case expired
        case callbackRejected = "callback_rejected"
        case exchangeFailed = "exchange_failed"
        case store
    }

    /// What went wrong.
    package var code: Code
    /// What happened, for the user.
    package var message: String

    /// Creates an error.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { self.message }
}

extension ErrorCode where Family == LoginError {
    /// The provider's grant has no interactive login.
    static let notInteractive = Self(.notInteractive)
    /// An endpoint the login needs is neither configured nor discovered.
    static let endpointMissing = Self(.endpointMissing)
    /// The loopback redirect listener could not be opened.
    static let listenFailed = Self(.listenFailed)
    /// Nobody completed the login in time.
    package static let timedOut = Self(.timedOut)
    /// The user or the authorization server refused (`access_denied`).
    static let denied = Self(.denied)
    /// The device code expired before it was approved (`expired_token`).
    package static let expired = Self(.expired)
    /// The callback carried an error, a foreign `iss`, or no code.
    package static let callbackRejected = Self(.callbackRejected)
    /// The token endpoint refused the code or the device code.
    package static let exchangeFailed = Self(.exchangeFailed)
    /// The tokens could not be stored.
    package static let store = Self(.store)
}
