import TokenProxyConfiguration
import TokenProxySupport

/// What `tokenproxy sign` prints: how the proxy would sign one request for an `oauth1`
/// provider, so that it can be compared with a provider's documented example
/// (`docs/guide/oauth1.md`). No secret is part of it: the base string and the parameters never
/// hold one, and the signature (which for PLAINTEXT is the secrets themselves) is only
/// given when asked for.
package struct OAuth1Diagnostics: Sendable {
    /// The signature base string (RFC 5849 §3.4.1.1).
    package var baseString: String
    /// The normalised parameters, encoded, in signing order.
    package var parameters: [(name: String, value: String)]
    /// The `Authorization` header, its `oauth_signature` hidden unless asked for.
    package var header: String
    /// The signature, when asked for.
    package var signature: String?

    /// Signs `method` on `url` with `form` (an `application/x-www-form-urlencoded` body, or
    /// nil) for `provider` as a forwarded request would be, with a fresh nonce and the time
    /// now, or with `nonce` and `timestamp` when given (to reproduce an example). A token
    /// pair that is not configured comes from `store`, where `tokenproxy login` put it.
    package static func sign(
        provider: ProviderConfiguration,
        store: (any TokenStore)? = nil,
        method: String,
        url: String,
        form: String?,
        nonce: String? = nil,
        timestamp: String? = nil,
        showSignature: Bool
    ) -> Result<OAuth1Diagnostics, ProxyError> {
        guard provider.grant == .oauth1 else {
            return .failure(
                ProxyError(
                    .tokenUnavailable,
                    "provider \(provider.name) does not use the oauth1 grant",
                    provider: provider.name
                )
            )
        }
        let source = OAuth1CredentialSource(provider: provider, store: store)
        // Reads the stored pair, when there is one to read.
        _ = Blocking.wait { done in source.token(completion: done) }
        return source.credentials().flatMap { credentials in
            do {
                let signature = try OAuth1Signer(credentials: credentials).sign(
                    method: method,
                    url: url,
                    formBody: form.map { Array($0.utf8) },
                    nonce: nonce ?? OAuth1Signer.nonce(),
                    timestamp: timestamp ?? OAuth1Signer.timestamp()
                )
                var header = signature.header
                if !showSignature {
                    header = header.replacingOccurrences(
                        of: "oauth_signature=\"\(OAuth1Signer.encode(signature.signature))\"",
                        with: "oauth_signature=\"(hidden: --show-signature)\""
                    )
                }
                return .success(
                    OAuth1Diagnostics(
                        baseString: signature.baseString,
                        parameters: signature.parameters.map { ($0.name, $0.value) },
                        header: header,
                        signature: showSignature ? signature.signature : nil
                    )
                )
            } catch {
                return .failure(ProxyError(.badRequest, "\(error)", provider: provider.name))
            }
        }
    }
}
