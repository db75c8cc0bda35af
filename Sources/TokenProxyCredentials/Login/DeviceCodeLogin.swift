import Foundation
import Logging
import TokenProxyConfiguration
import TokenProxySupport
import TokenProxyUpstream

/// `tokenproxy login` for a `device_code` provider (RFC 8628): asks for a device code,
/// shows the user code and where to enter it, and polls the token endpoint until the
/// person approved, refused, or the code expired. Works on a machine with no browser.
///
/// ``run(timeout:present:)`` blocks its thread: call it from the command line's own thread.
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
    private let requestSeconds: Double
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
        self.requestSeconds = limits.tokenRequestSeconds
        self.sleep = sleep
    }

    /// What the login is doing at each step, for the message when its deadline passes.
    private enum Step {
        static let authorization = "requesting a device code at the device authorization endpoint"
        static let approval = "waiting for the login to be approved"
        static let poll = "polling the token endpoint"
    }

    /// Runs the login; `present` gets the user code and verification URI. The whole login
    /// ends within `timeout` seconds (``LoginDeadline``), and polling ends when the code
    /// expires: each request has its own whole-life limit (`limits.token_request_seconds`)
    /// within what is left.
    package func run(timeout: Double, present: (Prompt) -> Void) -> Result<LoginResult, LoginError> {
        let deadline = LoginDeadline(seconds: timeout)
        let deviceEndpoint: String
        switch self.client.loginEndpoints(
            deadline: deadline,
            requiring: \.deviceAuthorizationEndpoint,
            key: "device_authorization_url"
        ) {
        case .failure(let error): return .failure(error)
        case .success(let found): deviceEndpoint = found.required
        }

        // RFC 8628 §3.1.
        var request: [(String, String)] = []
        if !self.provider.scopes.isEmpty {
            request.append(("scope", self.provider.scopes.joined(separator: " ")))
        }
        if let audience = self.provider.audience { request.append(("audience", audience)) }
        if let resource = self.provider.resource { request.append(("resource", resource)) }
        let requestSeconds = deadline.requestSeconds(atMost: self.requestSeconds)
        let answer = deadline.wait(Step.authorization) { done in
            self.client.post(request, to: deviceEndpoint, timeout: requestSeconds, completion: done)
        }
        let parsed = answer.flatMap { result in
            result.mapError {
                deadline.explain(LoginError(.exchangeFailed, $0.message), during: Step.authorization)
            }
        }
        let authorization: DeviceAuthorization
        switch parsed.flatMap(DeviceAuthorization.parse) {
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
        let proof: DPoPKeyring.Key?
        switch self.storage.proofKey() {
        case .success(let key): proof = key
        case .failure(let error): return .failure(error)
        }
        let parameters = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", authorization.deviceCode),
        ]
        while case .wait(let seconds) = action {
            self.sleep(min(seconds, deadline.remaining))
            guard !deadline.hasPassed else { return .failure(deadline.timedOut(Step.approval)) }
            let requestEnd = deadline.instant(atMost: self.requestSeconds)
            let result = deadline.wait(Step.poll) { done in
                self.client.request(parameters, deadline: requestEnd, proof: proof?.binding, completion: done)
            }
            let elapsed = Double((ContinuousClock.now - issuedAt).milliseconds) / 1000
            switch result {
            case .failure(let error):
                return .failure(error)
            case .success(.success(let issued)):
                return self.storage.save(issued, proof: proof, deadline: deadline)
            case .success(.failure(let failure)) where failure.oauthError == nil && deadline.hasPassed:
                return .failure(deadline.timedOut(Step.poll))
            case .success(.failure(let failure)):
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
