import TokenProxySupport

/// An access token held for a provider.
package struct AccessToken: Sendable, Equatable {
    /// The token value. Never logged, never in an error or status document.
    package var value: String
    /// When it stops being valid, on the monotonic clock; nil means "until a 401".
    package var expiresAt: ContinuousClock.Instant? {
        get { self.expiry?.instant }
        set { self.expiry = newValue.map(MonotonicTime.init) }
    }
    /// When the proxy obtained it from its provider (a token endpoint's answer, a command's
    /// output), on the monotonic clock; nil for a token it did not fetch (a static value, one
    /// read from the store). A request that started before this waited for the fetch, which
    /// its access-log line tells. Not part of the token's identity (`==`).
    package var obtainedAt: ContinuousClock.Instant? {
        get { self.obtained?.instant }
        set { self.obtained = newValue.map(MonotonicTime.init) }
    }
    // The two times are kept as `MonotonicTime`s, whose layout the compiler knows: a token is
    // copied several times a request.
    private var expiry: MonotonicTime?
    private var obtained: MonotonicTime?
    /// For a token bound to a DPoP key (`token_type` `DPoP`, RFC 9449 §5): the key and the
    /// nonces each request's proof is made with. Nil for a bearer token. Not part of the
    /// token's identity (`==`).
    package var binding: DPoPBinding?

    /// Creates a token.
    package init(
        value: String,
        expiresAt: ContinuousClock.Instant? = nil,
        obtainedAt: ContinuousClock.Instant? = nil,
        binding: DPoPBinding? = nil
    ) {
        self.value = value
        self.expiresAt = expiresAt
        self.obtainedAt = obtainedAt
        self.binding = binding
    }

    /// The same token: the same value with the same lifetime, however it was obtained.
    package static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        lhs.value == rhs.value && lhs.expiry == rhs.expiry
    }

    /// Whether the token was obtained at or after `start`: fetched while a request that
    /// arrived then waited.
    package func wasObtained(since start: MonotonicTime) -> Bool {
        self.obtained.map { $0 >= start } ?? false
    }

    /// How long before expiry this token counts as stale: `skew`, but never more than half
    /// the token's lifetime, so a token that lives shorter than the skew is still used for
    /// part of its life instead of prompting a token request per use.
    func refreshSkew(_ skew: Duration) -> Duration {
        guard let expiry = self.expiry, let obtained = self.obtained else { return skew }
        return Self.refreshSkew(skew, lifetime: expiry - obtained)
    }

    /// `skew` capped at half of `lifetime` (never below zero).
    static func refreshSkew(_ skew: Duration, lifetime: Duration) -> Duration {
        min(skew, max(.zero, lifetime / 2))
    }
}
