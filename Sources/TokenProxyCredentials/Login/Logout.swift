import Foundation
import Logging
import TokenProxyConfiguration
import TokenProxySupport
import TokenProxyUpstream

/// `tokenproxy logout`: revokes the provider's refresh token and access token at its
/// revocation endpoint (RFC 7009) when one is known, then deletes them from the store.
///
/// A revocation the provider could not take now (503, another 5xx, 429, no connection) is
/// kept in the store as pending and retried by the next `logout`, which also sends every
/// other pending revocation. ``run()`` blocks its thread.
///
/// Discovery and every revocation share one whole-life deadline of
/// `limits.token_request_seconds`, counted once the provider's store lock is held: a
/// revocation endpoint that never answers costs that long at most, the tokens are deleted
/// locally anyway, and what was not revoked stays pending.
package final class Logout: Sendable {
    /// What happened to each token.
    package struct Report: Sendable, Equatable {
        /// Whether the store held tokens for the provider.
        package var hadTokens = false
        /// Whether an `oauth1` out-of-band login was waiting for its verifier (now deleted).
        package var hadWaitingLogin = false
        /// `token_type_hint`s revoked now, in order.
        package var revoked: [String] = []
        /// Revocations kept for later, each with the reason.
        package var pending: [String] = []
        /// Revocations the provider refused for good, each with the reason.
        package var refused: [String] = []
        /// Earlier pending revocations sent successfully this time.
        package var retriedPending = 0
        /// Whether no revocation endpoint was known (tokens deleted locally only).
        package var noRevocationEndpoint = false
        /// Whether the stored tokens were obtained under other provider settings (another
        /// issuer, client or endpoint) and so were deleted without being sent anywhere.
        package var otherSettings = false
        /// Why discovery of the revocation endpoint failed; then nothing was deleted.
        package var discoveryFailure: String?
    }

    private let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let store: any TokenStore
    private let lockWait: Double
    private let requestSeconds: Double

    /// A logout for `provider` from `store`.
    package init(provider: ProviderConfiguration, fetcher: UpstreamFetcher, store: any TokenStore, limits: Limits) {
        self.provider = provider
        self.client = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: limits)
        self.store = store
        self.lockWait = limits.tokenWaitSeconds
        self.requestSeconds = limits.tokenRequestSeconds
    }

    /// Revokes, deletes and reports; fails only when the store cannot be read or written.
    package func run() -> Result<Report, TokenStoreError> {
        var report = Report()
        let name = self.provider.name
        let lock: any TokenStoreLock
        let contents: TokenStoreContents
        do {
            lock = try self.store.lockProvider(name, deadline: .now + BoundedSeconds.duration(self.lockWait))
            contents = try self.store.read()
        } catch {
            return .failure(error)
        }
        defer { lock.release() }
        let deadline = LoginDeadline(seconds: self.requestSeconds)
        let grant = contents.grants[name]
        report.hadTokens = grant?.accessToken != nil || grant?.refreshToken != nil
        report.hadWaitingLogin = grant?.pendingLogin != nil

        var newlyPending: [PendingRevocation] = []
        if report.hadTokens, let grant, grant.configFingerprint != self.provider.tokenFingerprint() {
            // Tokens of another issuer or client must not be sent to this one's endpoint.
            report.otherSettings = true
        } else if report.hadTokens, let grant {
            let endpoint = self.revocationEndpoint(deadline: deadline)
            if case .undiscovered(let reason) = endpoint {
                // Deleting now would leave live tokens nobody can revoke later: keep them.
                report.discoveryFailure = reason
                return .success(report)
            }
            if case .known(let url?) = endpoint {
                // The refresh token first: revoking it usually ends its access tokens too.
                for (hint, token) in [("refresh_token", grant.refreshToken), ("access_token", grant.accessToken)] {
                    guard let token else { continue }
                    let revocation = PendingRevocation(
                        provider: name,
                        token: token,
                        tokenTypeHint: hint,
                        revocationURL: url,
                        since: Date()
                    )
                    switch self.revoke(revocation, deadline: deadline) {
                    case .revoked: report.revoked.append(hint)
                    case .later(let reason):
                        report.pending.append("\(hint): \(reason)")
                        newlyPending.append(revocation)
                    case .refused(let reason): report.refused.append("\(hint): \(reason)")
                    }
                }
            } else {
                report.noRevocationEndpoint = true
            }
        }

        // Earlier pending revocations, of any provider.
        var stillPending: [PendingRevocation] = []
        for revocation in contents.pendingRevocations {
            switch self.revoke(revocation, deadline: deadline) {
            case .revoked, .refused: report.retriedPending += 1
            case .later: stillPending.append(revocation)
            }
        }
        let sent = Set(contents.pendingRevocations.map(\.token)).subtracting(stillPending.map(\.token))
        do {
            try self.store.update { contents in
                contents.grants[name] = nil
                contents.pendingRevocations.removeAll { sent.contains($0.token) }
                contents.pendingRevocations.append(contentsOf: newlyPending)
            }
        } catch {
            return .failure(error)
        }
        return .success(report)
    }

    private enum Outcome {
        case revoked
        case later(String)
        case refused(String)
    }

    /// Why a request got no answer in time.
    private var outOfTime: String {
        "no answer within the logout's \(LoopbackCallback.describe(self.requestSeconds)) seconds "
            + "(limits.token_request_seconds)"
    }

    /// Where revocations go, as far as the logout found out.
    private enum RevocationEndpoint {
        /// The endpoint, nil when the provider has none.
        case known(String?)
        /// Discovery failed for this reason.
        case undiscovered(String)
    }

    /// The revocation endpoint: the configured one, else the discovered one.
    private func revocationEndpoint(deadline: LoginDeadline) -> RevocationEndpoint {
        if let configured = self.provider.revocationURL {
            return .known(configured)
        }
        guard let discovery = self.client.discovery else { return .known(nil) }
        let found = deadline.wait("discovery") { done in discovery.endpoints(deadline: deadline.end, completion: done) }
        switch found {
        case .failure:
            return .undiscovered("discovery: \(self.outOfTime)")
        case .success(.failure(let error)):
            return .undiscovered(deadline.hasPassed ? "discovery: \(self.outOfTime)" : error.message)
        case .success(.success(let endpoints)):
            return .known(endpoints.revocationEndpoint)
        }
    }

    /// RFC 7009 §2.1 and §2.2: 200 means revoked (also for a token the server no longer
    /// knows); 503 asks to try again later. Past the logout's `deadline` nothing is sent and
    /// the revocation stays pending.
    private func revoke(_ revocation: PendingRevocation, deadline: LoginDeadline) -> Outcome {
        guard !deadline.hasPassed else { return .later("not sent: the logout's time ran out") }
        let form = [("token", revocation.token), ("token_type_hint", revocation.tokenTypeHint)]
        let seconds = deadline.requestSeconds(atMost: self.requestSeconds)
        let result = deadline.wait("revocation") { done in
            self.client.post(form, to: revocation.revocationURL, timeout: seconds, completion: done)
        }
        switch result {
        case .failure:
            return .later(self.outOfTime)
        case .success(.failure(let error)):
            return .later(deadline.hasPassed ? self.outOfTime : error.message)
        case .success(.success(let response)) where response.status == 200:
            return .revoked
        case .success(.success(let response)) where response.status == 429 || response.status >= 500:
            return .later("HTTP \(response.status)")
        case .success(.success(let response)):
            let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
            let error = object?["error"] as? String ?? "refused"
            return .refused("\(error) (HTTP \(response.status))")
        }
    }
}
