import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxySupport
import TokenProxyUpstream

/// `tokenproxy login` for an `oauth1` provider, the three-legged flow of RFC 5849 §2:
/// temporary credentials from `request_token_url` with the loopback callback (or `oob`),
/// the person's approval at `authorize_url`, and the verifier exchanged at
/// `access_token_url` for the token and its secret, which go to the token store.
///
/// Every request is signed with the consumer's credentials (and the temporary ones for the
/// last), a fresh nonce and the time. The runs block their thread until the login ends:
/// call them from the command line's own thread.
package final class OAuth1Login: Sendable {
    /// What the person is shown.
    package struct Prompt: Sendable {
        /// The authorization URL to open in a browser.
        package var url: String
        /// Where the provider sends the browser back, or `oob` when it shows a verifier.
        package var callback: String
    }

    /// The provider signed in to.
    let provider: ProviderConfiguration
    /// Sends the requests to the provider's token endpoints.
    let fetcher: UpstreamFetcher
    private let store: any TokenStore
    /// The limits: `token_request_seconds` bounds each request, `token_wait_seconds` the lock.
    let limits: Limits
    private let logger: Logger

    /// A login for `provider`, storing the token pair in `store`.
    package init(
        provider: ProviderConfiguration,
        fetcher: UpstreamFetcher,
        store: any TokenStore,
        limits: Limits,
        logger: Logger
    ) {
        self.provider = provider
        self.fetcher = fetcher
        self.store = store
        self.limits = limits
        self.logger = logger
    }

    /// Temporary credentials (RFC 5849 §2.1).
    struct Temporary {
        var token: String
        var secret: String
    }

    /// Runs the login with the loopback callback: `present` gets the URL once the listener
    /// is up; the pair is stored when the browser comes back with the verifier and the
    /// exchange succeeds. The whole login, every request and storing included, ends within
    /// `timeout` seconds (``LoginDeadline``).
    package func run(timeout: Double, present: (Prompt) -> Void) -> Result<LoginResult, LoginError> {
        let deadline = LoginDeadline(seconds: timeout)
        let pending = Mutex<OAuth1CallbackStateMachine?>(nil)
        let listener: LoopbackCallback
        let opened = LoopbackCallback.open(port: self.provider.redirectPort, logger: self.logger) { path, parameters in
            pending.withLockedValue { machine -> CallbackDecision in
                // A request before the temporary credentials exist names no token of this login.
                guard var current = machine else {
                    return .refuse(status: 400, reason: "This login has not started yet; nothing was done.")
                }
                let decision = current.request(path: path, parameters: parameters)
                machine = current
                return decision
            }
        }
        switch opened {
        case .failure(let error): return .failure(error)
        case .success(let callback): listener = callback
        }
        defer { listener.close() }

        let temporary: Temporary
        switch self.temporaryCredentials(callback: listener.callbackURI, deadline: deadline) {
        case .failure(let error): return .failure(error)
        case .success(let obtained): temporary = obtained
        }
        pending.withLockedValue { $0 = OAuth1CallbackStateMachine(token: temporary.token) }
        present(Prompt(url: self.authorizationURL(temporary), callback: listener.callbackURI))

        return listener.conclude(
            deadline: deadline,
            signedIn: "tokenproxy stored the token for \(self.provider.name). You can close this tab."
        ) { verifier in
            self.exchange(temporary, verifier: verifier, deadline: deadline)
        }
    }

    /// Starts an out-of-band login (`oauth_callback=oob`, RFC 5849 §2.1): obtains temporary
    /// credentials, keeps them in the store, and gives `present` the URL where the person
    /// approves and is shown a verifier. `verifier` is then asked for it: a verifier
    /// finishes the login at once; nil leaves it for ``finish(verifier:timeout:)`` (returned
    /// as nil). The whole login, the wait for `verifier` included (it runs on a credential
    /// thread), ends within `timeout` seconds; the login then stays waiting for a verifier.
    package func runOutOfBand(
        timeout: Double,
        present: (Prompt) -> Void,
        verifier: @escaping @Sendable () -> String?
    ) -> Result<LoginResult?, LoginError> {
        let deadline = LoginDeadline(seconds: timeout)
        let temporary: Temporary
        switch self.temporaryCredentials(callback: "oob", deadline: deadline) {
        case .failure(let error): return .failure(error)
        case .success(let obtained): temporary = obtained
        }
        let pending = PendingOAuth1Login(token: temporary.token, tokenSecret: temporary.secret, since: Date())
        if case .failure(let error) = self.save({ $0.pendingLogin = pending }, deadline: deadline) {
            return .failure(error)
        }
        present(Prompt(url: self.authorizationURL(temporary), callback: "oob"))
        let read = deadline.wait("waiting for the verifier") { (done: @escaping @Sendable (String?) -> Void) in
            CredentialWorker.shared.run { done(verifier()) }
        }
        let entered: String?
        switch read {
        case .failure(let error): return .failure(error)
        case .success(let value): entered = value
        }
        guard let code = entered else { return .success(nil) }
        let trimmed = code.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            return .failure(LoginError(.callbackRejected, "the verifier is empty"))
        }
        // These temporary credentials, not whatever the store holds by now (another
        // `login --oob` may have replaced them).
        return self.exchange(temporary, verifier: trimmed, deadline: deadline).map { $0 }
    }

    /// Finishes the out-of-band login the store holds with the verifier the person was shown,
    /// within `timeout` seconds.
    package func finish(verifier: String, timeout: Double) -> Result<LoginResult, LoginError> {
        let deadline = LoginDeadline(seconds: timeout)
        let code = verifier.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !code.isEmpty else {
            return .failure(LoginError(.callbackRejected, "the verifier is empty"))
        }
        let grant: StoredGrant?
        do {
            grant = try self.store.read().grants[self.provider.name]
        } catch {
            return .failure(LoginError(.store, "cannot read \(self.store.location): \(error.message)"))
        }
        guard let pending = grant?.pendingLogin,
            grant?.configFingerprint == self.provider.tokenFingerprint()
        else {
            return .failure(
                LoginError(
                    .callbackRejected,
                    "no out-of-band login is waiting for a verifier; start one with `tokenproxy login \(self.provider.name) --oob`"
                )
            )
        }
        // A clock set back a little since the first step is forgiven; the store's dates are
        // within years 1970 to 9999 (a damaged one is refused when read).
        let age = Date().timeIntervalSince(pending.since)
        guard age > -300, age < PendingOAuth1Login.maximumAge else {
            return .failure(
                LoginError(
                    .expired,
                    "the login waiting for a verifier was started more than an hour ago (or in the future); start a new one with `tokenproxy login \(self.provider.name) --oob`"
                )
            )
        }
        return self.exchange(
            Temporary(token: pending.token, secret: pending.tokenSecret),
            verifier: code,
            deadline: deadline
        )
    }

    /// `authorize_url` with the temporary token (RFC 5849 §2.2), its own query and fragment
    /// kept.
    private func authorizationURL(_ temporary: Temporary) -> String {
        let configured = self.provider.authorizeURL ?? ""
        let fragmentStart = configured.firstIndex(of: "#") ?? configured.endIndex
        let base = configured[..<fragmentStart]
        let parameter = FormEncoding.encode([("oauth_token", temporary.token)])
        return base + (base.contains("?") ? "&" : "?") + parameter + configured[fragmentStart...]
    }

    /// RFC 5849 §2.1: the temporary credentials for `callback`, whose acceptance the
    /// provider must confirm.
    private func temporaryCredentials(callback: String, deadline: LoginDeadline) -> Result<Temporary, LoginError> {
        guard let url = self.provider.requestTokenURL else {
            return .failure(LoginError(.endpointMissing, "no request_token_url"))
        }
        let answer = self.signedPost(
            url: url,
            token: nil,
            extra: [OAuth1Signer.Parameter(name: "oauth_callback", value: callback)],
            what: "the temporary credentials",
            endpoint: "request_token_url",
            deadline: deadline
        )
        return answer.flatMap { pairs in
            // Without the confirmation, the provider may not have bound this callback to
            // the token (the session fixation RFC 5849 §2.1 closes).
            guard FormEncoding.single("oauth_callback_confirmed", in: pairs) == "true" else {
                return .failure(
                    LoginError(
                        .exchangeFailed,
                        "the request_token_url answer does not confirm the callback (oauth_callback_confirmed=true)"
                    )
                )
            }
            return Self.credentialPair(pairs, from: "request_token_url").map {
                Temporary(token: $0.token, secret: $0.secret)
            }
        }
    }

    /// RFC 5849 §2.3: the verifier and the temporary credentials exchanged for the token
    /// pair, which replaces whatever the store held for the provider.
    private func exchange(
        _ temporary: Temporary,
        verifier: String,
        deadline: LoginDeadline
    ) -> Result<LoginResult, LoginError> {
        guard let url = self.provider.accessTokenURL else {
            return .failure(LoginError(.endpointMissing, "no access_token_url"))
        }
        let answer = self.signedPost(
            url: url,
            token: temporary,
            extra: [OAuth1Signer.Parameter(name: "oauth_verifier", value: verifier)],
            what: "the token",
            endpoint: "access_token_url",
            deadline: deadline
        )
        return answer.flatMap { Self.credentialPair($0, from: "access_token_url") }.flatMap { pair in
            let grant = StoredGrant(
                accessToken: pair.token,
                tokenSecret: pair.secret,
                obtainedAt: Date(),
                configFingerprint: self.provider.tokenFingerprint()
            )
            return self.save({ $0 = grant }, deadline: deadline).map {
                LoginResult(expiresIn: nil, hasRefreshToken: false, scope: nil)
            }
        }
    }

    /// Changes the provider's record under its store lock (a proxy refreshing at the same
    /// moment re-reads rather than overwrites); the wait for the lock ends with the login.
    private func save(_ change: (inout StoredGrant) -> Void, deadline: LoginDeadline) -> Result<Void, LoginError> {
        let name = self.provider.name
        do {
            let lock = try self.store.lockProvider(
                name,
                deadline: deadline.instant(atMost: max(self.limits.tokenWaitSeconds, 120))
            )
            defer { lock.release() }
            try self.store.update { contents in
                var grant = contents.grants[name] ?? StoredGrant()
                if grant.configFingerprint != self.provider.tokenFingerprint() {
                    grant = StoredGrant(configFingerprint: self.provider.tokenFingerprint())
                }
                change(&grant)
                contents.grants[name] = grant
            }
            return .success(())
        } catch {
            let failure = LoginError(.store, "cannot store the token in \(self.store.location): \(error.message)")
            return .failure(deadline.explain(failure, during: LoginStorage.lockStep))
        }
    }
}
