import Logging
import TokenProxyConfiguration
import TokenProxySupport

/// A grant this build cannot obtain tokens for yet: every request gets a clear error.
struct UnsupportedCredentialSource: CredentialSource {
    let name: String
    let grant: GrantType

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
