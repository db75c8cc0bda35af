import Dispatch
import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyMetrics
import TokenProxySupport
import TokenProxyUpstream

/// Tokens from an OAuth 2 token endpoint: the machine grants that need no person
/// (`client_credentials` RFC 6749 §4.4, `password` §4.3, `refresh_token` §6, `jwt_bearer`
/// RFC 7523, `token_exchange` RFC 8693), and the refreshing of what `tokenproxy login`
/// stored for `authorization_code` and `device_code`.
///
/// Within a process, one fetch per provider runs at a time and every request arriving
/// meanwhile shares its result (``SharedTokenCache``). Across processes sharing a token
/// store, a fetch holds the provider's store lock and first re-reads the store: a token
/// another process obtained meanwhile is used, so a rotated refresh token is never spent
/// twice. What the endpoint answers is written to the store before any request uses it.
///
/// A reload that changes the provider retires this source (``retire(handingOverTo:)``): its
/// token request is abandoned at once (the transfer stopped, the store lock released, a late
/// answer neither used nor written), so its successor starts afresh.
final class OAuthGrantSource: CredentialSource {
    let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let cache: SharedTokenCache
    private let store: any TokenStore
    private let logger: Logger
    private let metrics: ProxyMetrics?
    /// The last access token a 401 refused: never taken back from the store.
    private let refused = Mutex<String?>(nil)
    /// Tokens obtained but not yet written (the store could not be written): newer than
    /// anything in the store, so used in its place and written by the next fetch. Without
    /// this, a refresh token rotated by that answer would be lost and the spent one sent again.
    private let unsaved = Mutex<StoredGrant?>(nil)
    /// The one pending early refresh.
    private let refreshTimer: RefreshTimer
    /// The longest `Retry-After` a token request waits for itself (`token_wait_seconds`):
    /// past it the requests would wait in vain, and the remembered failure answers them.
    private let longestRetryAfter: Double
    /// Fired when a reload retires the source: stops its token request in flight.
    private let abandonment = CancellationSignal()
    /// The source a reload replaced this one with, once retired.
    private let successor = Mutex<(any CredentialSource)?>(nil)
    /// The DPoP key and nonces, with `dpop` configured (``DPoPKeyring``).
    let keyring: DPoPKeyring?
    /// The thumbprint of the client certificate presented when the cached token was obtained
    /// (RFC 8705 §3): a token bound to a certificate rotated since is dropped.
    private let boundCertificate = Mutex<String?>(nil)
    /// The client certificate last read and its thumbprint: every request compares the
    /// certificate on disk with ``boundCertificate``, and hashing it once per change is
    /// enough.
    private let lastCertificate = Mutex<(pem: String, thumbprint: String?)?>(nil)

    init(
        provider: ProviderConfiguration,
        fetcher: UpstreamFetcher,
        store: any TokenStore,
        limits: Limits,
        metrics: ProxyMetrics? = nil,
        logger: Logger
    ) {
        self.metrics = metrics
        var provider = provider
        if provider.tokenURL == nil, let file = provider.serviceAccountFile {
            // A Google service-account key names its token endpoint.
            provider.tokenURL = (try? ServiceAccountKey.load(file))?.tokenURI
        }
        self.provider = provider
        self.client = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: limits)
        self.cache = SharedTokenCache(
            provider: provider.name,
            refreshSkewSeconds: provider.refreshSkewSeconds,
            waitSeconds: limits.tokenWaitSeconds,
            fetchSeconds: limits.tokenRequestSeconds,
            backoffSeconds: limits.tokenFailureBackoffSeconds
        )
        self.store = store
        self.logger = logger
        self.keyring = provider.dpop.map {
            DPoPKeyring(provider: provider.name, configuration: $0, metrics: metrics, logger: logger)
        }
        self.longestRetryAfter = limits.tokenWaitSeconds
        let source = WeakBox()
        self.refreshTimer = RefreshTimer { token in source.object?.refreshEarly(token) }
        source.object = self
    }

    /// The timer's way back to its source, which owns it.
    private final class WeakBox: @unchecked Sendable {
        // Safe because it is written once, in the source's initializer, before the timer can
        // fire, and only read afterwards.
        weak var object: OAuthGrantSource?
    }

    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        self.token(completion: completion, until: nil)
    }

    func tokenAtHand() -> AccessToken? {
        self.dropTokenOfRotatedCertificate()
        return self.cache.tokenAtHand()
    }

    var proofThumbprint: String? {
        self.keyring?.thumbprint
    }

    /// A token for a caller whose wait ends at `until` (nil: the wait limit from now).
    private func token(
        completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void,
        until: ContinuousClock.Instant?
    ) {
        self.dropTokenOfRotatedCertificate()
        self.cache.token(completion: completion, until: until) { self.fetch($0, replacing: nil) }
    }

    func retire(handingOverTo successor: (any CredentialSource)?) {
        let name = self.provider.name
        self.successor.withLockedValue { $0 = successor }
        // A successor whose tokens are the same (a rotated client secret, another header
        // format) lets the running request end: its answer may carry a rotated refresh token
        // that only it can save. Otherwise the request is abandoned.
        let sameTokens =
            (successor as? OAuthGrantSource)?.provider.tokenFingerprint() == self.provider.tokenFingerprint()
        // The cache first: the waiters go to the successor, and the abandoned fetch's failure,
        // which the cancellation brings at once, reaches nobody.
        defer {
            if !sameTokens {
                self.abandonment.cancel()
            }
        }
        self.cache.retire { completion, until in
            switch successor {
            case let successor as OAuthGrantSource:
                successor.token(completion: completion, until: until)
            case let successor?:
                successor.token(completion: completion)
            case nil:
                let error = ProxyError(
                    .tokenUnavailable,
                    "provider \(name) was removed by a configuration reload",
                    provider: name
                )
                completion(.failure(error))
            }
        }
    }

    /// The failure of a token request abandoned because a reload retired the source; nobody
    /// sees it, since the source's waiters went to its successor.
    private func abandoned() -> ProxyError {
        self.failure("the token request was abandoned: a reload replaced provider \(self.provider.name)")
    }

    /// The token store changed (a logout, a login, another process): a cached token the
    /// store no longer holds is dropped, and a remembered failure is forgotten once the store
    /// holds a fresh token of this configuration (a login, another process's token request),
    /// so the next request reads the store again. A failure's own note in the store (its last
    /// error) changes nothing: the backoff holds. A record written under another configuration
    /// of the provider is not this source's to follow.
    func storeChanged(_ contents: TokenStoreContents) {
        let stored = contents.grants[self.provider.name]
        if let stored, stored.configFingerprint != self.provider.tokenFingerprint() {
            return
        }
        let refused = self.refused.withLockedValue { $0 }
        let usable =
            stored.flatMap { $0.needsLogin == true ? nil : $0.freshAccessToken(skew: self.provider.refreshSkewSeconds) }
            .map { $0.value != refused } ?? false
        self.cache.reset { cached, failing in
            if let cached {
                return stored?.accessToken != cached.value || stored?.needsLogin == true
            }
            return failing && usable
        }
    }

    /// Forgets `token` if it is still the cached one; the store's copy is not used again.
    func invalidate(_ token: AccessToken) {
        self.refused.withLockedValue { $0 = token.value }
        self.cache.invalidate(token)
        // A request that began before a reload reports its refused token to the successor.
        self.successor.withLockedValue { $0 }?.invalidate(token)
    }

    /// Starts the one fetch on a credential thread (``CredentialWorker``): taking the store
    /// lock and writing the store block. Every step stops at the fetch's deadline. `replacing` is the token a background refresh
    /// renews (the store's copy of it does not count as new).
    private func fetch(_ fetch: SharedTokenCache.Fetch, replacing: AccessToken?) {
        CredentialWorker.shared.run { [self] in
            var asked = Asked()
            let outcome = self.fetchHoldingLock(replacing: replacing, deadline: fetch.deadline, asked: &asked)
            if case .success(let token) = outcome {
                self.scheduleBackgroundRefresh(of: token)
                self.metrics?.tokenObtained(provider: self.provider.name, expiresAt: token.expiresAt)
            }
            self.cache.complete(
                fetch,
                outcome,
                retryAfter: asked.retryAfter.map { BoundedSeconds.duration($0) },
                remember: asked.endpoint
            )
        }
    }

    private func fetchHoldingLock(
        replacing: AccessToken?,
        deadline: ContinuousClock.Instant,
        asked: inout Asked
    ) -> Result<AccessToken, ProxyError> {
        let name = self.provider.name
        let lock: any TokenStoreLock
        do {
            lock = try self.store.lockProvider(name, deadline: deadline)
        } catch {
            return .failure(self.failure(error.description))
        }
        defer { lock.release() }
        guard !self.abandonment.isCancelled else { return .failure(self.abandoned()) }

        let fingerprint = self.provider.tokenFingerprint()
        var record: StoredGrant?
        do {
            record = try self.store.read().grants[name]
        } catch  where error.code == .corrupt || error.code == .unsupportedVersion {
            // The unusable file was moved aside (the error says where); carry on without it.
            self.logger.error("token store moved aside", metadata: ["provider": "\(name)", "error": "\(error)"])
        } catch {
            // Unreadable now (a changed key, permissions): spending a refresh token whose
            // successor could not be stored would lose the chain, so ask nothing.
            return .failure(self.failure(error.description))
        }
        if let pending = self.unsaved.withLockedValue({ $0 }), pending.configFingerprint == fingerprint {
            record = pending
            if self.save({ $0 = pending }) {
                self.unsaved.withLockedValue { $0 = nil }
            }
        }
        if let stored = record, stored.configFingerprint != fingerprint {
            record = nil
        }
        // Tokens bound to a generated key the record no longer holds (an older binary that
        // rewrote the store, a hand edit) can never be used again: start afresh.
        if self.provider.dpop != nil, self.provider.dpop?.key == nil, record?.dpopKey == nil,
            record?.tokenType?.lowercased() == "dpop"
        {
            record = nil
        }
        // The key the tokens are bound to: configured, kept in the record, or made now.
        var proof: DPoPKeyring.Key?
        if let keyring = self.keyring {
            switch keyring.key(stored: record?.dpopKey) {
            case .success(let key): proof = key
            case .failure(let failure): return .failure(self.failure(failure.description))
            }
        }
        // Another process (or `tokenproxy login`) may have stored a token since ours.
        let refused = self.refused.withLockedValue { $0 }
        let thumbprint = self.currentCertificateThumbprint()
        if var stored = record?.freshAccessToken(skew: self.provider.refreshSkewSeconds),
            stored.value != refused, stored.value != replacing?.value, record?.certificateThumbprint == thumbprint
        {
            stored.binding = proof.flatMap { $0.binding(for: record?.tokenType) }
            self.boundCertificate.withLockedValue { $0 = thumbprint }
            return .success(stored)
        }

        let refreshToken: String?
        switch self.provider.grant {
        case .refreshToken:
            if record?.needsLogin == true {
                return .failure(self.refreshRefused())
            }
            if let stored = record?.refreshToken {
                refreshToken = stored
            } else {
                do {
                    refreshToken = try self.provider.refreshToken?.resolve()
                } catch {
                    return .failure(self.failure("the refresh_token seed cannot be read: \(error)"))
                }
                guard refreshToken != nil else {
                    return .failure(self.failure("no refresh token: the refresh_token seed is empty or missing"))
                }
            }
        case .authorizationCode, .deviceCode:
            guard let stored = record?.refreshToken, record?.needsLogin != true else {
                return .failure(self.loginRequired("no usable token stored"))
            }
            refreshToken = stored
        case .password:
            // RFC 9700 §2.4, RFC 6749 §4.3: the user's password is sent as seldom as possible;
            // a refresh token from an earlier answer renews the token, and the password goes
            // out again only when that is refused or there is none.
            refreshToken = record?.refreshToken
        default:
            refreshToken = nil
        }
        let first = self.ask(
            refreshToken: refreshToken,
            proof: proof,
            fingerprint: fingerprint,
            deadline: deadline,
            asked: &asked
        )
        guard self.provider.grant == .password, refreshToken != nil, case .failure(let failure) = first,
            failure.refusedRefresh
        else {
            return first.mapError(\.error)
        }
        let second = self.ask(
            refreshToken: nil,
            proof: proof,
            fingerprint: fingerprint,
            deadline: deadline,
            asked: &asked
        )
        return second.mapError(\.error)
    }

    /// One token request (with its retries of transient failures) with the grant's parameters,
    /// or a refresh with `refreshToken`; the answer is written to the store. A refused refresh
    /// token is forgotten: a `password` provider then sends the password (the caller does),
    /// the others need a new seed or login.
    private func ask(
        refreshToken: String?,
        proof: DPoPKeyring.Key?,
        fingerprint: String,
        deadline: ContinuousClock.Instant,
        asked: inout Asked
    ) -> Result<AccessToken, AskFailure> {
        let name = self.provider.name
        let parameters: [(String, String)]
        switch self.parameters(refreshToken: refreshToken) {
        case .failure(let error): return .failure(AskFailure(error: error))
        case .success(let built): parameters = built
        }

        let thumbprint = self.currentCertificateThumbprint()
        asked.endpoint = true
        let abandoned = self.abandoned()
        var registration: UInt64?
        let answer: Result<TokenEndpointClient.Issued, TokenEndpointClient.Failure>? = Blocking.wait(
            until: deadline + .milliseconds(500)
        ) { done in
            // A reload ends the wait at once, and with it this thread's hold on the lock.
            registration = self.abandonment.onCancel { done(.failure(TokenEndpointClient.Failure(error: abandoned))) }
            self.client.request(
                parameters,
                deadline: deadline,
                longestRetryAfter: self.longestRetryAfter,
                cancellation: self.abandonment,
                proof: proof?.binding,
                completion: done
            )
        }
        self.abandonment.remove(registration)
        guard !self.abandonment.isCancelled else {
            // Whatever came, the successor owns the provider's record now.
            return .failure(AskFailure(error: abandoned))
        }
        let result =
            answer
            ?? .failure(TokenEndpointClient.Failure(error: self.failure("the token request did not end in time")))
        self.metrics?.tokenRequested(provider: name, succeeded: (try? result.get()) != nil)
        switch result {
        case .success(let issued):
            var grant = StoredGrant.issued(
                issued,
                defaultExpiresIn: self.provider.defaultExpiresIn,
                previousRefreshToken: refreshToken,
                fingerprint: fingerprint
            )
            grant.dpopKey = proof?.storedPEM
            grant.certificateThumbprint = thumbprint
            self.boundCertificate.withLockedValue { $0 = thumbprint }
            if !self.save({ $0 = grant }) {
                self.unsaved.withLockedValue { $0 = grant }
            }
            let lifetime = issued.response.expiresIn ?? self.provider.defaultExpiresIn
            return .success(
                AccessToken(
                    value: issued.response.accessToken,
                    expiresAt: lifetime.map { issued.sentAt + BoundedSeconds.duration($0) },
                    obtainedAt: .now,
                    binding: proof.flatMap { $0.binding(for: issued.response.tokenType) }
                )
            )
        case .failure(let failure):
            let now = Date()
            let refused =
                refreshToken != nil && AskFailure.refusesRefresh(failure.oauthError, grant: self.provider.grant)
            if refused, let refreshToken {
                // The refresh token is dead: forget it, unless another one replaced it.
                let password = self.provider.grant == .password
                self.unsaved.withLockedValue { $0 = nil }
                self.save { stored in
                    // Unless another process stored a newer token of this configuration meanwhile.
                    guard
                        stored.configFingerprint != fingerprint || stored.refreshToken == nil
                            || stored.refreshToken == refreshToken
                    else { return }
                    stored = StoredGrant(
                        configFingerprint: fingerprint,
                        // A password provider logs in again by itself.
                        needsLogin: password ? nil : true,
                        lastError: failure.error.message,
                        lastErrorAt: now,
                        dpopKey: proof?.storedPEM
                    )
                }
                if password {
                    self.logger.notice(
                        "the refresh token was refused; sending the password again",
                        metadata: ["provider": "\(name)", "error": "\(failure.oauthError ?? "")"]
                    )
                    return .failure(AskFailure(error: failure.error, refusedRefresh: true))
                }
                return .failure(AskFailure(error: self.refreshRefused()))
            }
            self.save { stored in
                stored.lastError = failure.error.message
                stored.lastErrorAt = now
                if stored.configFingerprint == nil {
                    stored.configFingerprint = fingerprint
                }
                if stored.configFingerprint == fingerprint, stored.dpopKey == nil {
                    stored.dpopKey = proof?.storedPEM
                }
            }
            asked.retryAfter = failure.retryAfter
            return .failure(AskFailure(error: failure.error))
        }
    }

    /// Why one token request failed: the client's error, and whether it was a refresh whose
    /// token the endpoint refused.
    private struct AskFailure: Error {
        var error: ProxyError
        var refusedRefresh = false

        /// Whether the OAuth `error` refuses a refresh token (RFC 6749 §5.2): `invalid_grant`;
        /// for a `password` provider also `unauthorized_client` and `unsupported_grant_type`,
        /// which a server answers when it does not refresh tokens of the password grant.
        static func refusesRefresh(_ code: String?, grant: GrantType) -> Bool {
            switch code {
            case "invalid_grant": return true
            case "unauthorized_client", "unsupported_grant_type": return grant == .password
            default: return false
            }
        }
    }

    /// What a fetch asked of the token endpoint, for the cache's memory of failures.
    private struct Asked {
        /// Whether a token request was sent (a failure without one is not remembered).
        var endpoint = false
        /// The endpoint's Retry-After, in seconds.
        var retryAfter: Double?
    }

    /// Changes the provider's record in the store. A store that cannot be written is logged:
    /// the token just obtained is still used, since a refresh token rotated by the answer
    /// has already replaced the old one at the server.
    /// Returns whether the change was written. A corrupt file is moved aside by the first
    /// attempt, so that one is tried again at once.
    @discardableResult
    private func save(_ change: (inout StoredGrant) -> Void) -> Bool {
        let name = self.provider.name
        for attempt in 1...2 {
            do {
                try self.store.update { contents in
                    var grant = contents.grants[name] ?? StoredGrant()
                    change(&grant)
                    contents.grants[name] = grant
                }
                return true
            } catch {
                self.logger.error(
                    "cannot write the token store",
                    metadata: ["provider": "\(name)", "error": "\(error)"]
                )
                guard attempt == 1, error.code == .corrupt || error.code == .unsupportedVersion else { break }
            }
        }
        return false
    }

    /// 401 `login_required` after `invalid_grant` on a refresh, saying what fixes it for
    /// this grant.
    private func refreshRefused() -> ProxyError {
        guard self.provider.grant == .refreshToken else {
            return self.loginRequired("the refresh token was refused (invalid_grant)")
        }
        return ProxyError(
            .loginRequired,
            "the refresh token was refused (invalid_grant); configure a new refresh_token for provider "
                + "\(self.provider.name)",
            provider: self.provider.name
        )
    }

    /// Refreshes a little before the token goes stale (a tenth of its life, between 1 and
    /// 30 seconds ahead), so requests rarely wait for a token request.
    private func scheduleBackgroundRefresh(of token: AccessToken) {
        guard let expiresAt = token.expiresAt else { return }
        let stale = expiresAt - token.refreshSkew(BoundedSeconds.duration(self.provider.refreshSkewSeconds))
        let remaining = Double((stale - .now).milliseconds) / 1000
        let lead = max(1, min(30, remaining / 10))
        let delay = remaining - lead
        guard delay > 0 else { return }
        self.refreshTimer.plan(token, at: .now + BoundedSeconds.duration(delay))
    }

    /// The planned early refresh of `token` is due.
    private func refreshEarly(_ token: AccessToken) {
        guard let fetch = self.cache.beginBackgroundRefresh(of: token) else { return }
        self.fetch(fetch, replacing: token)
    }
}

// MARK: Certificate-bound tokens

extension OAuthGrantSource {
    /// Drops the cached token when the provider's client certificate changed on disk since
    /// the token was obtained (RFC 8705 §3: the token is bound to the old one), so the next
    /// caller obtains a new one. A provider without `client_cert` has nothing to check.
    /// The thumbprint of the certificate the provider presents now (nil without
    /// `client_cert`, or when it cannot be read), computed again only when the file changed.
    fileprivate func currentCertificateThumbprint() -> String? {
        guard let secret = self.provider.clientCert, let pem = try? secret.resolve() else { return nil }
        if let last = self.lastCertificate.withLockedValue({ $0 }), last.pem == pem {
            return last.thumbprint
        }
        let thumbprint = ClientCertificate.thumbprint(pem: pem)
        self.lastCertificate.withLockedValue { $0 = (pem, thumbprint) }
        return thumbprint
    }

    fileprivate func dropTokenOfRotatedCertificate() {
        guard self.provider.clientCert != nil else { return }
        let current = self.currentCertificateThumbprint()
        guard self.boundCertificate.withLockedValue({ $0 }) != current else { return }
        self.cache.reset { cached, _ in cached != nil }
    }
}
