import Foundation
import Logging

/// `tokenproxy login` for a `device_code` provider (RFC 8628): asks for a device code,
/// shows the user code and where to enter it, and polls the token endpoint until the
/// person approved, refused, or the code expired. Works on a machine with no browser.
///
/// ``run(present:)`` blocks its thread: call it from the command line's own thread.
package final class DeviceCodeLogin: Sendable {
    /// What the person is shown (RFC 8628 §3.3).
    package struct Prompt: Sendable, Equatable {
        /// The code to enter.
        package var userCode: String
        /// Where to enter it.
        package var verificationURI: String
        /// A URI that includes the code, when the server offers one (for a QR code or a click).
        package var verificationURIComplete: String?
        /// Seconds the code stays valid.
        package var expiresIn: Double
    }

    private let provider: ProviderConfiguration
    private let client: TokenEndpointClient
    private let storage: LoginStorage
    private let tokenWait: Double
    private let sleep: @Sendable (Double) -> Void

    /// A login for `provider`, storing the tokens in `store`. `sleep` waits between polls
    /// (a test passes one that records the intervals instead).
    package init(
        provider: ProviderConfiguration,
        fetcher: UpstreamFetcher,
        store: any TokenStore,
        limits: Limits,
        sleep: @escaping @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) }
    ) {
        self.provider = provider
        self.client = TokenEndpointClient(provider: provider, fetcher: fetcher, limits: limits)
        self.storage = LoginStorage(provider: provider, store: store, lockWait: limits.tokenWaitSeconds)
        self.tokenWait = limits.tokenWaitSeconds
        self.sleep = sleep
    }

    /// Runs the login; `present` gets the user code and verification URI.
    package func run(present: (Prompt) -> Void) -> Result<LoginResult, LoginError> {
        let endpoints: DiscoveredEndpoints
        switch self.client.loginEndpoints() {
        case .failure(let error): return .failure(error)
        case .success(let found): endpoints = found
        }
        guard let deviceEndpoint = endpoints.deviceAuthorizationEndpoint else {
            return .failure(LoginError(.endpointMissing, "no device_authorization_url (configured or discovered)"))
        }

        // RFC 8628 §3.1.
        var request: [(String, String)] = []
        if !self.provider.scopes.isEmpty {
            request.append(("scope", self.provider.scopes.joined(separator: " ")))
        }
        if let audience = self.provider.audience { request.append(("audience", audience)) }
        if let resource = self.provider.resource { request.append(("resource", resource)) }
        let answer = Blocking.wait { done in
            self.client.post(request, to: deviceEndpoint, timeout: self.tokenWait, completion: done)
        }
        let authorization: DeviceAuthorization
        switch answer.mapError({ LoginError(.exchangeFailed, $0.message) }).flatMap(DeviceAuthorization.parse) {
        case .failure(var error):
            // The answer's error_description is the server's text: the client secret stays out.
            error.message = Redaction.redact(error.message, self.client.secrets(in: nil))
            return .failure(error)
        case .success(let parsed): authorization = parsed
        }
        let issuedAt = ContinuousClock.now
        present(authorization.prompt)

        // RFC 8628 §3.4 and §3.5.
        var machine = DevicePollingStateMachine(
            interval: authorization.interval,
            lifetime: authorization.prompt.expiresIn
        )
        var action = machine.firstAction
        let parameters = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", authorization.deviceCode),
        ]
        while case .wait(let seconds) = action {
            self.sleep(seconds)
            let deadline = ContinuousClock.now + BoundedSeconds.duration(self.tokenWait)
            let result = Blocking.wait { done in self.client.request(parameters, deadline: deadline, completion: done) }
            let elapsed = Double((ContinuousClock.now - issuedAt).milliseconds) / 1000
            switch result {
            case .success(let issued):
                return self.storage.save(issued)
            case .failure(let failure):
                let endpointAnswer: DevicePollingStateMachine.Answer =
                    failure.oauthError.map { .error($0, description: failure.errorDescription) }
                    ?? .unreachable(failure.error.message)
                action = machine.next(after: endpointAnswer, elapsed: elapsed)
            }
        }
        guard case .fail(let error) = action else {
            // Safe because the loop only ends on a failure.
            preconditionFailure("device polling ended without a failure")
        }
        return .failure(error)
    }
}
