/// An access token held for a provider.
public struct AccessToken: Sendable, Equatable {
    /// The token value. Never logged, never in an error or status document.
    public var value: String
    /// When it stops being valid, on the monotonic clock; nil means "until a 401".
    public var expiresAt: ContinuousClock.Instant?
    /// When the proxy obtained it from its provider (a token endpoint's answer, a command's
    /// output), on the monotonic clock; nil for a token it did not fetch (a static value, one
    /// read from the store). A request that started before this waited for the fetch, which
    /// its access-log line tells. Not part of the token's identity (`==`).
    public var obtainedAt: ContinuousClock.Instant?

    /// Creates a token.
    public init(value: String, expiresAt: ContinuousClock.Instant? = nil, obtainedAt: ContinuousClock.Instant? = nil) {
        self.value = value
        self.expiresAt = expiresAt
        self.obtainedAt = obtainedAt
    }

    /// The same token: the same value with the same lifetime, however it was obtained.
    public static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        lhs.value == rhs.value && lhs.expiresAt == rhs.expiresAt
    }
}

/// Where a provider's tokens come from: one implementation per grant.
public protocol CredentialSource: Sendable {
    /// Produces a currently valid token, or the error the client gets (`token_unavailable`,
    /// `login_required`). `completion` may run on any thread.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void)

    /// Whether asking again can give a different token (false for `static`), which is what
    /// makes replaying a request after a 401 worthwhile.
    var canRenew: Bool { get }

    /// Forgets `token` if it is still the current one: the upstream refused it (a 401).
    /// A newer token obtained meanwhile is kept.
    func invalidate(_ token: AccessToken)
}

/// Formats a token into the header the provider names (`docs/configuration.md`, provider keys `header`, `format`).
public struct CredentialFormatter: Sendable, Equatable {
    /// The header name, `Authorization` by default.
    public let header: String
    /// The value template containing `{token}`, `Bearer {token}` by default.
    public let format: String
    /// The template split at its placeholders once, so formatting is one join per request.
    private let pieces: [Substring]

    /// Creates a formatter.
    public init(header: String, format: String) {
        self.header = header
        self.format = format
        self.pieces = format.split(separator: "{token}", omittingEmptySubsequences: false)
    }

    /// The header for `token`, or an error when the result could not be sent safely (a token
    /// with CR, LF or another control character would split the upstream request).
    public func header(for token: AccessToken, provider: String) -> Result<
        UpstreamRequestBuilder.Credential, ProxyError
    > {
        let value = self.pieces.joined(separator: token.value)
        guard !token.value.isEmpty, HTTPGrammar.isValidFieldValue(value.utf8) else {
            return .failure(
                ProxyError(
                    .tokenUnavailable,
                    "the provider produced an empty token or one with control characters",
                    provider: provider
                )
            )
        }
        return .success(UpstreamRequestBuilder.Credential(name: self.header, value: value))
    }
}

extension CredentialSource {
    /// Sources that cannot produce a different token say so, and a 401 is not replayed.
    public var canRenew: Bool { true }

    /// Forgets `token` if it is still the current one; by default there is nothing to forget.
    public func invalidate(_ token: AccessToken) {}
}
