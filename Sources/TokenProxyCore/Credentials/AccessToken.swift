/// An access token held for a provider.
package struct AccessToken: Sendable, Equatable {
    /// The token value. Never logged, never in an error or status document.
    package var value: String
    /// When it stops being valid, on the monotonic clock; nil means "until a 401".
    package var expiresAt: ContinuousClock.Instant?
    /// When the proxy obtained it from its provider (a token endpoint's answer, a command's
    /// output), on the monotonic clock; nil for a token it did not fetch (a static value, one
    /// read from the store). A request that started before this waited for the fetch, which
    /// its access-log line tells. Not part of the token's identity (`==`).
    package var obtainedAt: ContinuousClock.Instant?

    /// Creates a token.
    package init(value: String, expiresAt: ContinuousClock.Instant? = nil, obtainedAt: ContinuousClock.Instant? = nil) {
        self.value = value
        self.expiresAt = expiresAt
        self.obtainedAt = obtainedAt
    }

    /// The same token: the same value with the same lifetime, however it was obtained.
    package static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        lhs.value == rhs.value && lhs.expiresAt == rhs.expiresAt
    }
}
