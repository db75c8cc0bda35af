import Foundation
import TokenProxyConfiguration
import TokenProxySupport

/// The `command` grant: runs an argv (never a shell), takes a token from its stdout (the
/// bare token, or JSON with `access_token` and optional `expires_in`), and caches it for
/// `cache_seconds` or until `expires_in`, whichever ends first; with neither, until a 401.
/// One run at a time: requests arriving meanwhile share its result.
final class CommandCredentialSource: CredentialSource {
    private let name: String
    private let argv: [String]
    private let cacheSeconds: Double?
    private let timeout: Double
    private let cache: SharedTokenCache

    /// Creates the source for provider `name`; a run taking longer than `timeout` is killed,
    /// a request waits `waitSeconds` at most for it, and a failed run is remembered for at most
    /// `backoffSeconds`.
    init(
        name: String,
        argv: [String],
        cacheSeconds: Double?,
        refreshSkewSeconds: Double,
        timeout: Double,
        waitSeconds: Double,
        backoffSeconds: Double = Limits().tokenFailureBackoffSeconds
    ) {
        self.name = name
        self.argv = argv
        self.cacheSeconds = cacheSeconds
        self.timeout = timeout
        self.cache = SharedTokenCache(
            provider: name,
            refreshSkewSeconds: refreshSkewSeconds,
            waitSeconds: waitSeconds,
            fetchSeconds: timeout,
            backoffSeconds: backoffSeconds
        )
    }

    /// A cached token, or the result of the one run in flight.
    func token(completion: @escaping @Sendable (Result<AccessToken, ProxyError>) -> Void) {
        self.cache.token(completion: completion) { fetch in
            // On a credential thread: the run blocks until the command exits (it is killed at
            // the timeout).
            CredentialWorker.shared.run { [self] in
                self.cache.complete(fetch, self.run(started: .now))
            }
        }
    }

    func tokenAtHand() -> AccessToken? {
        self.cache.tokenAtHand()
    }

    /// Forgets `token` if it is still the cached one.
    func invalidate(_ token: AccessToken) {
        self.cache.invalidate(token)
    }

    private func run(started: ContinuousClock.Instant) -> Result<AccessToken, ProxyError> {
        let output: CommandRunner.Output
        do {
            output = try CommandRunner.run(self.argv, timeout: self.timeout)
        } catch {
            return .failure(ProxyError(.tokenUnavailable, "command failed: \(error)", provider: self.name))
        }
        guard output.status == 0 else {
            let reason =
                output.timedOut ? "timed out after \(Int(self.timeout)) s" : "exited with status \(output.status)"
            let stderr = output.stderr.isEmpty ? "" : ": \(output.stderr)"
            return .failure(ProxyError(.tokenUnavailable, "command \(reason)\(stderr)", provider: self.name))
        }
        switch CommandOutputParser.parse(output.stdout) {
        case .failure(let message):
            return .failure(ProxyError(.tokenUnavailable, "command output: \(message)", provider: self.name))
        case .success(let (value, expiresIn)):
            // Expiry counts from when the command started, on the monotonic clock.
            var lifetimes: [Double] = []
            if let expiresIn { lifetimes.append(expiresIn) }
            if let cacheSeconds = self.cacheSeconds { lifetimes.append(cacheSeconds) }
            let expiresAt = lifetimes.min().map { started + BoundedSeconds.duration($0) }
            return .success(AccessToken(value: value, expiresAt: expiresAt, obtainedAt: .now))
        }
    }
}
