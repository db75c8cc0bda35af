import TokenProxySupport

/// Where a provider's tokens come from: one implementation per grant, each an object, so
/// that a request takes its provider's source as one reference rather than copying a boxed
/// value.
package protocol CredentialSource: AnyObject, Sendable {
    /// Produces a currently valid token, or the error the client gets (`token_unavailable`,
    /// `login_required`). `completion` may run on any thread.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void)

    /// The token ``token(completion:)`` would give at once without any other effect (a
    /// static token, a cached one still fresh), else `nil`: the caller then asks
    /// ``token(completion:)``. Spares the usual request a completion closure and a hop.
    func tokenAtHand() -> AccessToken?

    /// Whether asking again can give a different token (false for `static`), which is what
    /// makes replaying a request after a 401 worthwhile.
    var canRenew: Bool { get }

    /// The thumbprint (`jkt`, RFC 7638) of the DPoP key the tokens are bound to, once known;
    /// nil for a source without `dpop`.
    var proofThumbprint: String? { get }

    /// Forgets `token` if it is still the current one: the upstream refused it (a 401).
    /// A newer token obtained meanwhile is kept.
    func invalidate(_ token: AccessToken)

    /// The token store's contents changed (a `logout`, a `login`, another process): a source
    /// that caches what the store holds drops what the store no longer has.
    func storeChanged(_ contents: TokenStoreContents)

    /// A reload replaced this provider with `successor` (nil: removed it). Work in flight is
    /// abandoned, so the successor never waits on it, and callers still waiting go to the
    /// successor instead.
    func retire(handingOverTo successor: (any CredentialSource)?)
}

extension CredentialSource {
    /// Sources that cannot produce a different token say so, and a 401 is not replayed.
    var canRenew: Bool { true }

    /// Sources without `dpop` have no key.
    var proofThumbprint: String? { nil }

    /// Forgets `token` if it is still the current one; by default there is nothing to forget.
    func invalidate(_ token: AccessToken) {}

    /// By default nothing is cached from the store.
    func storeChanged(_ contents: TokenStoreContents) {}

    /// By default nothing runs that a successor could wait on.
    func retire(handingOverTo successor: (any CredentialSource)?) {}
}

extension CredentialSource {
    /// No token is at hand without asking.
    package func tokenAtHand() -> AccessToken? { nil }
}
