import Dispatch
import Synchronization
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxySupport

/// The `readyz` check (`docs/reference/admin-endpoints.md` "Probes"): every configured provider must hold a
/// valid token, or obtain one within ``timeout``.
///
/// Each provider is asked through its credential source, the same shared cache requests use:
/// a cached valid token answers at once, without a token request, and a probe arriving while
/// a fetch runs waits for that fetch instead of starting another. A provider that has not
/// answered within ``timeout`` is reported `timeout`; its fetch carries on and fills the cache
/// for the next probe.
struct ReadinessCheck: Sendable {
    /// How long a probe waits for the slowest provider, in seconds.
    static let defaultTimeout = 3.0

    /// One provider's answer.
    struct ProviderState: Encodable, Sendable {
        /// The provider's name (from the configuration).
        var name: String
        /// Its grant.
        var grant: String
        /// `ready`, `login_required`, `unavailable` or `timeout`.
        var state: String
        /// Seconds until the token expires, when ready and known.
        var expires_in_seconds: Int?
        /// The error code (`token_unavailable`, `login_required`), when not ready.
        var error: String?
        /// The error message the proxy would give a client (never a secret).
        var message: String?
    }

    private struct Document: Encodable {
        var status: String
        var providers: [ProviderState]
    }

    let providers: [ProviderConfiguration]
    let credentials: CredentialRegistry?
    let timeout: Double

    /// Runs the check; `completion` is called once, on any thread.
    func run(completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let providers = self.providers.sorted { $0.name < $1.name }
        let results = Mutex<[String: ProviderState]>([:])
        let once = OnceFlag()
        let finish: @Sendable () -> Void = {
            guard once.claim() else { return }
            let answered = results.withLockedValue { $0 }
            let states = providers.map { provider in
                answered[provider.name]
                    ?? ProviderState(
                        name: provider.name,
                        grant: provider.grant.rawValue,
                        state: "timeout",
                        error: ProxyError.Code.tokenUnavailable.description,
                        message: "no token within \(Int(self.timeout)) s"
                    )
            }
            completion(Self.response(states))
        }
        guard !providers.isEmpty else {
            finish()
            return
        }
        // `finish` calls the probe's completion: not on the deadline thread, whose actions
        // must stay short.
        DeadlineScheduler.shared.schedule(at: .now + BoundedSeconds.duration(self.timeout)) {
            DispatchQueue.global().async(execute: finish)
        }
        for provider in providers {
            let record: @Sendable (ProviderState) -> Void = { state in
                let complete = results.withLockedValue { results -> Bool in
                    results[provider.name] = state
                    return results.count == providers.count
                }
                if complete {
                    finish()
                }
            }
            guard let entry = self.credentials?.entry(provider.name) else {
                record(
                    ProviderState(
                        name: provider.name,
                        grant: provider.grant.rawValue,
                        state: "unavailable",
                        error: ProxyError.Code.tokenUnavailable.description,
                        message: "no credential source for this provider"
                    )
                )
                continue
            }
            entry.source.token { result in
                record(Self.state(of: provider, result))
            }
        }
    }

    private static func state(of provider: ProviderConfiguration, _ result: Result<AccessToken, ProxyError>)
        -> ProviderState
    {
        var state = ProviderState(name: provider.name, grant: provider.grant.rawValue, state: "ready")
        switch result {
        case .success(let token):
            if let expiresAt = token.expiresAt {
                state.expires_in_seconds = max(0, Int((expiresAt - .now).milliseconds / 1000))
            }
        case .failure(let error):
            state.state = error.code == .loginRequired ? "login_required" : "unavailable"
            state.error = error.code.description
            state.message = error.message
        }
        return state
    }

    private static func response(_ states: [ProviderState]) -> HTTPResponse {
        let ready = states.allSatisfy { $0.state == "ready" }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return HTTPResponse(
            status: ready ? 200 : 503,
            headers: headers,
            body: JSONOutput.encode(Document(status: ready ? "ready" : "not_ready", providers: states))
        )
    }
}
