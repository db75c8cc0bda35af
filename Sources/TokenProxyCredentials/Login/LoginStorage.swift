import Foundation
import Logging
import TokenProxyConfiguration
import TokenProxySupport

/// Keeping what an interactive login obtained: under the provider's store lock, so a proxy
/// refreshing at the same moment re-reads rather than overwriting the new tokens.
struct LoginStorage {
    let provider: ProviderConfiguration
    let store: any TokenStore
    let lockWait: Double

    /// What a login is doing while it waits for the provider's store lock.
    static let lockStep = "waiting for the token store's lock"

    /// The DPoP key a login's token request proves possession of (`dpop`): the configured
    /// one, the one the provider's record keeps, or a new one that ``save(_:proof:deadline:)``
    /// keeps with the tokens bound to it. Nil without `dpop`.
    func proofKey() -> Result<DPoPKeyring.Key?, LoginError> {
        guard let dpop = self.provider.dpop else { return .success(nil) }
        let fingerprint = self.provider.tokenFingerprint()
        let record = (try? self.store.read())?.grants[self.provider.name]
        let stored = record?.configFingerprint == fingerprint ? record?.dpopKey : nil
        let keyring = DPoPKeyring(
            provider: self.provider.name,
            configuration: dpop,
            logger: Logger(label: "tokenproxy.login")
        )
        return keyring.key(stored: stored).map { $0 }.mapError { LoginError(.exchangeFailed, $0.description) }
    }

    /// Stores `issued` as the provider's tokens, replacing what was there, with the DPoP key
    /// `proof` they are bound to; the wait for the lock ends with the login's `deadline`.
    func save(
        _ issued: TokenEndpointClient.Issued,
        proof: DPoPKeyring.Key? = nil,
        deadline: LoginDeadline
    ) -> Result<LoginResult, LoginError> {
        var grant = StoredGrant.issued(
            issued,
            defaultExpiresIn: self.provider.defaultExpiresIn,
            previousRefreshToken: nil,
            fingerprint: self.provider.tokenFingerprint()
        )
        grant.dpopKey = proof?.storedPEM
        grant.certificateThumbprint = self.provider.clientCertificateThumbprint()
        do {
            // The code is spent already: wait for a proxy's refresh longer than a request would.
            let lock = try self.store.lockProvider(
                self.provider.name,
                deadline: deadline.instant(atMost: max(self.lockWait, 120))
            )
            defer { lock.release() }
            try self.store.update { $0.grants[self.provider.name] = grant }
        } catch {
            let failure = LoginError(.store, "cannot store the tokens in \(self.store.location): \(error.message)")
            return .failure(deadline.explain(failure, during: Self.lockStep))
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
    /// What a login is doing while it discovers the provider's endpoints.
    static let discoveryStep = "discovering the provider's endpoints"

    /// The provider's endpoints for a login, waited for on the calling thread (the command
    /// line's own) until the login's `deadline`. Discovery is done first within that
    /// deadline; the endpoints then come from what it cached.
    func loginEndpoints(deadline: LoginDeadline) -> Result<DiscoveredEndpoints, LoginError> {
        let found = deadline.wait(Self.discoveryStep) {
            (done: @escaping @Sendable (Result<Void, ProxyError>) -> Void) in
            guard let discovery = self.discovery else {
                done(.success(()))
                return
            }
            discovery.endpoints(deadline: deadline.end) { done($0.map { _ in () }) }
        }
        .flatMap { primed in
            primed.mapError { deadline.explain(LoginError(.endpointMissing, $0.message), during: Self.discoveryStep) }
        }
        .flatMap { _ in
            deadline.wait(Self.discoveryStep) { done in self.endpoints(completion: done) }
        }
        return found.flatMap { result in
            result.mapError { deadline.explain(LoginError(.endpointMissing, $0.message), during: Self.discoveryStep) }
        }
    }

    /// ``loginEndpoints(deadline:)`` with the endpoint the login cannot start without:
    /// `endpoint` picks it, `key` names its configuration key in the error when it is
    /// neither configured nor discovered.
    func loginEndpoints(
        deadline: LoginDeadline,
        requiring endpoint: KeyPath<DiscoveredEndpoints, String?>,
        key: String
    ) -> Result<(all: DiscoveredEndpoints, required: String), LoginError> {
        self.loginEndpoints(deadline: deadline).flatMap { endpoints in
            guard let required = endpoints[keyPath: endpoint] else {
                return .failure(LoginError(.endpointMissing, "no \(key) (configured or discovered)"))
            }
            return .success((endpoints, required))
        }
    }
}
