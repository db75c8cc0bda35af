import TokenProxyHTTP
import TokenProxySupport

/// Formats a token into the header the provider names (`docs/reference/configuration.md`,
/// provider keys `header`, `format`).
package struct CredentialFormatter: Sendable, Equatable {
    /// The header name, `Authorization` by default.
    package let header: String
    /// The value template containing `{token}`, `Bearer {token}` by default.
    let format: String
    /// The template split at its placeholders once, so formatting is one join per request.
    private let pieces: [Substring]

    /// Creates a formatter.
    init(header: String, format: String) {
        self.header = header
        self.format = format
        self.pieces = format.split(separator: "{token}", omittingEmptySubsequences: false)
    }

    /// The header for `token`, or an error when the result could not be sent safely (a token
    /// with CR, LF or another control character would split the upstream request).
    package func header(for token: AccessToken, provider: String) -> Result<
        CredentialHeader, ProxyError
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
        return .success(CredentialHeader(name: self.header, value: value))
    }
}
