import Foundation
import TokenProxyConfiguration

/// One provider's line in `tokenproxy status` and the admin status document: what is known
/// about its tokens, never a token itself.
package struct ProviderStatus: Sendable, Equatable {
    /// The provider's name.
    package var name: String
    /// Its grant.
    package var grant: GrantType
    /// Whether an access token is stored.
    package var hasAccessToken: Bool
    /// Whether a refresh token is stored.
    package var hasRefreshToken: Bool
    /// Seconds until the stored access token expires (negative once expired), when known.
    package var expiresIn: Double?
    /// Whether a login is needed before requests can succeed.
    package var loginRequired: Bool
    /// The last failure recorded, when there is one.
    package var lastError: String?
    /// The thumbprint (`jkt`, RFC 7638) of the provider's DPoP key: the configured key's, or
    /// the stored one's; nil without `dpop`, or before a key was made.
    package var dpopThumbprint: String?

    /// The status of every provider in `configuration` from `contents` of the store, in name order.
    package static func all(
        _ configuration: ProxyConfiguration,
        contents: TokenStoreContents,
        now: Date = Date()
    ) -> [ProviderStatus] {
        configuration.providers.keys.sorted().compactMap { name in
            guard let provider = configuration.providers[name] else { return nil }
            var grant = contents.grants[name]
            if let stored = grant, stored.configFingerprint != provider.tokenFingerprint() {
                // Tokens from other settings are not used.
                grant = nil
            }
            let hasRefresh = grant?.refreshToken != nil
            let expiresIn = grant?.expiresAt.map { $0.timeIntervalSince(now) }
            let accessUsable = grant?.accessToken != nil && (expiresIn.map { $0 > 0 } ?? true)
            let loginRequired: Bool
            if grant?.needsLogin == true {
                loginRequired = true
            } else if provider.grant == .authorizationCode || provider.grant == .deviceCode {
                loginRequired = !hasRefresh && !accessUsable
            } else if provider.grant == .oauth1, provider.needsLogin {
                loginRequired = grant?.accessToken == nil || grant?.tokenSecret == nil
            } else {
                loginRequired = false
            }
            return ProviderStatus(
                name: name,
                grant: provider.grant,
                hasAccessToken: grant?.accessToken != nil,
                hasRefreshToken: hasRefresh,
                expiresIn: grant?.accessToken == nil ? nil : expiresIn,
                loginRequired: loginRequired,
                lastError: grant?.lastError ?? contents.grants[name]?.lastError,
                dpopThumbprint: provider.dpop.flatMap { dpop -> String? in
                    let pem: String?
                    if let key = dpop.key {
                        pem = try? key.resolve()
                    } else {
                        pem = grant?.dpopKey
                    }
                    return pem.flatMap { try? DPoPKey(pem: $0, algorithm: dpop.algorithm).thumbprint }
                }
            )
        }
    }
}
