import Foundation

/// Keeping what an interactive login obtained: under the provider's store lock, so a proxy
/// refreshing at the same moment re-reads rather than overwriting the new tokens.
struct LoginStorage {
    let provider: ProviderConfiguration
    let store: any TokenStore
    let lockWait: Double

    /// Stores `issued` as the provider's tokens, replacing what was there.
    func save(_ issued: TokenEndpointClient.Issued) -> Result<LoginResult, LoginError> {
        let grant = StoredGrant.issued(
            issued,
            defaultExpiresIn: self.provider.defaultExpiresIn,
            previousRefreshToken: nil,
            fingerprint: self.provider.tokenFingerprint()
        )
        do {
            // The code is spent already: wait for a proxy's refresh longer than a request would.
            let lock = try self.store.lockProvider(
                self.provider.name,
                deadline: .now + BoundedSeconds.duration(max(self.lockWait, 120))
            )
            defer { lock.release() }
            try self.store.update { $0.grants[self.provider.name] = grant }
        } catch {
            return .failure(LoginError(.store, "cannot store the tokens in \(self.store.location): \(error.message)"))
        }
        return .success(
            LoginResult(
                expiresIn: grant.expiresAt.map { $0.timeIntervalSinceNow },
                hasRefreshToken: grant.refreshToken != nil,
                scope: grant.scope
            )
        )
    }
}

extension TokenEndpointClient {
    /// The provider's endpoints for a login, waited for on the calling thread (the command
    /// line's own).
    func loginEndpoints() -> Result<DiscoveredEndpoints, LoginError> {
        Blocking.wait { done in self.endpoints(completion: done) }.mapError {
            LoginError(.endpointMissing, $0.message)
        }
    }
}
