import TokenProxySupport

/// The polling rules of the device authorization grant (RFC 8628 §3.5) as a pure state
/// machine: what to do after each answer of the token endpoint.
///
/// The interval starts at what the device authorization response said (5 seconds when it
/// said nothing), grows by 5 seconds for good with every `slow_down` (up to an hour), and polling stops at
/// `access_denied`, `expired_token`, any other error, or when the device code's lifetime
/// has passed.
struct DevicePollingStateMachine {
    /// What the poller does next.
    enum Action: Equatable {
        /// Wait this many seconds, then poll.
        case wait(Double)
        /// The login failed.
        case fail(LoginError)
    }

    /// How an attempt ended, as far as polling cares.
    enum Answer: Equatable {
        /// The OAuth `error` code of a refused poll.
        case error(String, description: String?)
        /// No answer at all (connection failed, timed out) after the token client's retries.
        case unreachable(String)
    }

    /// The longest wait between polls, however many `slow_down` answers came: an hour.
    static let maximumInterval: Double = 3600

    private(set) var interval: Double
    private let lifetime: Double

    /// Polling for a device code valid `lifetime` seconds, at `interval` (default 5); both are
    /// clamped (1 s to an hour between polls), whatever the server said.
    init(interval: Double?, lifetime: Double) {
        self.interval = max(1, BoundedSeconds.clamp(interval ?? 5, atMost: Self.maximumInterval))
        self.lifetime = BoundedSeconds.clamp(lifetime)
    }

    /// The first wait, before any poll (RFC 8628 §3.5: the client waits the interval).
    var firstAction: Action { .wait(self.interval) }

    /// The next step after `answer`, `elapsed` seconds after the device code was issued.
    mutating func next(after answer: Answer, elapsed: Double) -> Action {
        switch answer {
        case .error("authorization_pending", _):
            break
        case .error("slow_down", _):
            self.interval = min(self.interval + 5, Self.maximumInterval)
        case .error("access_denied", let description):
            return .fail(LoginError(.denied, "the login was refused" + (description.map { ": \($0)" } ?? "")))
        case .error("expired_token", _):
            return .fail(LoginError(.expired, "the device code expired before the login was approved"))
        case .error(let code, let description):
            return .fail(LoginError(.exchangeFailed, "token endpoint: \(code)" + (description.map { ": \($0)" } ?? "")))
        case .unreachable(let message):
            return .fail(LoginError(.exchangeFailed, message))
        }
        guard elapsed + self.interval < self.lifetime else {
            return .fail(LoginError(.expired, "the device code expired before the login was approved"))
        }
        return .wait(self.interval)
    }
}
