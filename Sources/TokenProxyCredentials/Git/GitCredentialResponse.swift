import Foundation

/// What `credential git get` prints (git-credential(1)): `username=`/`password=` (with
/// `password_expiry_utc=` when the expiry is known), or, when git announced
/// `capability[]=authtype`, `authtype=Bearer` and `credential=` so git sends the token as a
/// bearer token (RFC 6750 §2.1).
package struct GitCredentialResponse: Sendable, Equatable {
    /// The token.
    package var token: String
    /// The provider's `git_username`.
    package var username: String
    /// When the token expires, on the wall clock; nil when unknown.
    package var expiresAt: Date?
    /// Whether git announced `capability[]=authtype`.
    package var bearer: Bool

    /// Creates a response.
    package init(token: String, username: String, expiresAt: Date?, bearer: Bool) {
        self.token = token
        self.username = username
        self.expiresAt = expiresAt
        self.bearer = bearer
    }

    /// The lines for stdout, each ended by LF. The token and user name were checked to hold
    /// no line break (a token's syntax, `git_username`'s validation), so no attribute can be
    /// injected.
    package var text: String {
        var lines: [String] = []
        if self.bearer {
            lines.append("capability[]=authtype")
            lines.append("authtype=Bearer")
            lines.append("credential=\(self.token)")
        } else {
            lines.append("username=\(self.username)")
            lines.append("password=\(self.token)")
        }
        if let expiresAt = self.expiresAt {
            let seconds = expiresAt.timeIntervalSince1970.rounded(.down)
            if seconds.isFinite, seconds >= 0, seconds < 1e15 {
                lines.append("password_expiry_utc=\(Int64(seconds))")
            }
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// The wall-clock time of a monotonic `instant`, measured from `now`.
    package static func wallClock(
        _ instant: ContinuousClock.Instant?,
        now: ContinuousClock.Instant = .now,
        date: Date = Date()
    ) -> Date? {
        guard let instant else { return nil }
        let remaining = now.duration(to: instant)
        let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
        return date.addingTimeInterval(seconds)
    }
}
