import Logging
import TokenProxyConfiguration
import TokenProxySupport

/// A grant this build cannot obtain tokens for yet: every request gets a clear error.
final class UnsupportedCredentialSource: CredentialSource {
    let name: String
    let grant: GrantType

    /// The source for provider `name`, configured with `grant`.
    init(name: String, grant: GrantType) {
        self.name = name
        self.grant = grant
    }

    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        if self.grant.isInteractive {
            completion(
                .failure(
                    ProxyError(.loginRequired, "run `tokenproxy login \(self.name)` first", provider: self.name)
                )
            )
        } else {
            completion(
                .failure(
                    ProxyError(
                        .tokenUnavailable,
                        "the \(self.grant.rawValue) grant is not available in this version",
                        provider: self.name
                    )
                )
            )
        }
    }
}
