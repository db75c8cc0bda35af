import Dispatch
import Foundation
import Logging
import Synchronization
import TokenProxyConfiguration
import TokenProxyServer
import TokenProxySupport
import TokenProxyUpstream

/// `tokenproxy login` for an `authorization_code` provider (RFC 6749 §4.1): PKCE with S256
/// (RFC 7636), a random `state`, the `iss` response parameter checked (RFC 9207), and a
/// loopback redirect on 127.0.0.1 (RFC 8252 §7.3) that listens only during the login.
///
/// ``run(timeout:present:)`` blocks its thread until the login ends: call it from the
/// command line's own thread.
package final class AuthorizationCodeLogin: Sendable {
    /// What the person is shown.
    package struct Prompt: Sendable {
        /// The authorization URL to open in a browser.
        package var url: String
        /// Where the browser comes back to.
        package var redirectURI: String
    }

    private let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let storage: LoginStorage
    private let requestSeconds: Double
    private let logger: Logger

    /// A login for `provider`, storing the tokens in `store`.
    package init(
        provider: ProviderConfiguration,
        fetcher: UpstreamFetcher,
        store: any TokenStore,
        limits: Limits,
        logger: Logger
    ) {
        self.provider = provider
        self.client = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: limits)
        self.storage = LoginStorage(provider: provider, store: store, lockWait: limits.tokenWaitSeconds)
        self.requestSeconds = limits.tokenRequestSeconds
        self.logger = logger
    }

    /// What the login is doing while it exchanges the code.
    private static let exchangeStep = "exchanging the code at the token endpoint"

    /// Runs the login: `present` gets the URL once the listener is up; the tokens are stored
    /// when the browser comes back with a code and the exchange succeeds. The whole login,
    /// discovery and storing included, ends within `timeout` seconds (``LoginDeadline``).
    package func run(timeout: Double, present: (Prompt) -> Void) -> Result<LoginResult, LoginError> {
        let deadline = LoginDeadline(seconds: timeout)
        let (endpoints, authorizationEndpoint): (DiscoveredEndpoints, String)
        switch self.client.loginEndpoints(
            deadline: deadline,
            requiring: \.authorizationEndpoint,
            key: "authorization_url"
        ) {
        case .failure(let error): return .failure(error)
        case .success(let found): (endpoints, authorizationEndpoint) = found
        }

        let pkce = self.provider.pkce ? PKCE() : nil
        let state = SecureRandom.base64URL(32)
        let machine = Mutex(
            AuthorizationCallbackStateMachine(
                state: state,
                issuer: endpoints.issuer,
                issuerRequired: endpoints.issParameterSupported
            )
        )
        let listener: LoopbackCallback
        let opened = LoopbackCallback.open(port: self.provider.redirectPort, logger: self.logger) { path, parameters in
            machine.withLockedValue { $0.request(path: path, parameters: parameters) }
        }
        switch opened {
        case .failure(let error): return .failure(error)
        case .success(let callback): listener = callback
        }
        defer { listener.close() }
        let redirectURI = listener.callbackURI

        var query: [(String, String)] = [
            ("response_type", "code"), ("client_id", self.provider.clientID ?? ""), ("redirect_uri", redirectURI),
        ]
        if !self.provider.scopes.isEmpty {
            query.append(("scope", self.provider.scopes.joined(separator: " ")))
        }
        query.append(("state", state))
        if let pkce {
            query.append(("code_challenge", pkce.challenge))
            query.append(("code_challenge_method", pkce.method))
        }
        if let audience = self.provider.audience { query.append(("audience", audience)) }
        if let resource = self.provider.resource { query.append(("resource", resource)) }
        let separator = authorizationEndpoint.contains("?") ? "&" : "?"
        present(Prompt(url: authorizationEndpoint + separator + FormEncoding.encode(query), redirectURI: redirectURI))

        return listener.conclude(
            deadline: deadline,
            signedIn: "tokenproxy stored the tokens for \(self.provider.name). You can close this tab."
        ) { code in
            // RFC 6749 §4.1.3, with the PKCE verifier (RFC 7636 §4.5).
            var parameters = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI)]
            if let pkce {
                parameters.append(("code_verifier", pkce.verifier))
            }
            return self.exchange(parameters, deadline: deadline)
        }
    }

    /// The code exchange, one token request of at most `limits.token_request_seconds`
    /// (retries included) within the login's deadline, then storing.
    private func exchange(
        _ parameters: [(String, String)],
        deadline: LoginDeadline
    ) -> Result<LoginResult, LoginError> {
        let requestEnd = deadline.instant(atMost: self.requestSeconds)
        let proof: DPoPKeyring.Key?
        switch self.storage.proofKey() {
        case .success(let key): proof = key
        case .failure(let error): return .failure(error)
        }
        let answer = deadline.wait(Self.exchangeStep) { done in
            self.client.request(parameters, deadline: requestEnd, proof: proof?.binding, completion: done)
        }
        switch answer {
        case .failure(let error):
            return .failure(error)
        case .success(.failure(let failure)):
            let error = LoginError(.exchangeFailed, failure.error.message)
            return .failure(deadline.explain(error, during: Self.exchangeStep))
        case .success(.success(let issued)):
            return self.storage.save(issued, proof: proof, deadline: deadline)
        }
    }
}

extension HTTPServer {
    /// Stops accepting and waits (blocking) until open connections finished, `seconds` at most.
    func drainWithin(seconds: Double) {
        let semaphore = DispatchSemaphore(value: 0)
        self.drain { semaphore.signal() }
        _ = semaphore.wait(timeout: .now() + seconds)
    }
}
