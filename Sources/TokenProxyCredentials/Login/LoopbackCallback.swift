import Dispatch
import Logging
import Synchronization
import TokenProxySupport

/// A login's wait for the browser to come back (RFC 8252 §7.3): the loopback listener, whose
/// requests `judge` decides, and the first one it accepts or fails the login on. Requests it
/// refuses are answered and the wait goes on.
final class LoopbackCallback: Sendable {
    /// How the wait ended.
    enum Outcome: Sendable {
        /// The value to exchange, and how to answer the browser once that is done.
        case exchange(String, respond: @Sendable (Int, String, String) -> Void)
        /// The login failed for this reason (the browser was answered).
        case failed(String)
    }

    /// What the listener's handler and the waiting thread share.
    private final class Handoff: Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        let outcome = Mutex<Outcome?>(nil)

        func end(_ outcome: Outcome) {
            self.outcome.withLockedValue { $0 = outcome }
            self.semaphore.signal()
        }
    }

    private let listener: LoopbackListener
    private let handoff: Handoff

    private init(listener: LoopbackListener, handoff: Handoff) {
        self.listener = listener
        self.handoff = handoff
    }

    /// Listens on 127.0.0.1 (`port`, or an ephemeral one), `judge` deciding each request.
    static func open(
        port: UInt16?,
        logger: Logger,
        judge: @escaping @Sendable (_ path: String, _ parameters: [(String, String)]) -> CallbackDecision
    ) -> Result<LoopbackCallback, LoginError> {
        let handoff = Handoff()
        let handler = LoopbackCallbackHandler { path, parameters, respond in
            switch judge(path, parameters) {
            case .refuse(let status, let reason):
                respond(status, "Not this login", reason)
            case .fail(let reason):
                respond(400, "Login failed", "tokenproxy could not sign in: \(reason). Return to the terminal.")
                handoff.end(.failed(reason))
            case .exchange(let value):
                handoff.end(.exchange(value, respond: respond))
            }
        }
        return LoopbackListener.open(port: port, handler: handler, logger: logger).map {
            LoopbackCallback(listener: $0, handoff: handoff)
        }
    }

    /// The longest wait ``wait(seconds:)`` takes.
    static let longestWait: Double = 365 * 86400

    /// How `seconds` reads in a message, as a whole number within the longest wait.
    static func describe(_ seconds: Double) -> String {
        String(Int(seconds.isFinite ? min(max(seconds, 0), Self.longestWait) : 0))
    }

    /// The callback URI the provider sends the browser to.
    var callbackURI: String { self.listener.callbackURI }

    /// Waits `seconds` at most (a year at most; not at all for a negative or NaN value) for
    /// the outcome; nil when none came.
    func wait(seconds: Double) -> Outcome? {
        let bounded = seconds.isFinite ? min(max(seconds, 0), Self.longestWait) : 0
        guard self.handoff.semaphore.wait(timeout: .now() + bounded) == .success else { return nil }
        return self.handoff.outcome.withLockedValue { $0.take() }
    }

    /// What a login is doing while it waits for the browser.
    static let callbackStep = "waiting for the browser to come back to the callback"

    /// Waits for the callback until the login's `deadline`, exchanges what it accepted,
    /// answers the browser with the outcome (`signedIn` on success), and lets the page go
    /// out: the end of a browser login. A failed callback is `callback_rejected`; none,
    /// `timed_out`.
    func conclude<Value>(
        deadline: LoginDeadline,
        signedIn: String,
        exchange: (String) -> Result<Value, LoginError>
    ) -> Result<Value, LoginError> {
        guard let result = self.wait(seconds: deadline.remaining) else {
            return .failure(deadline.timedOut(Self.callbackStep))
        }
        // Each page goes out before the listener closes.
        defer { self.finish() }
        switch result {
        case .failed(let reason):
            return .failure(LoginError(.callbackRejected, reason))
        case .exchange(let value, let respond):
            let outcome = exchange(value)
            switch outcome {
            case .success:
                respond(200, "Signed in", signedIn)
            case .failure(let error):
                respond(502, "Login failed", "tokenproxy could not sign in: \(error.message). Return to the terminal.")
            }
            return outcome
        }
    }

    /// Lets the pages already answered go out (2 seconds at most), then stops listening.
    func finish() {
        self.listener.finish()
    }

    /// Stops listening.
    func close() {
        self.listener.close()
    }
}
