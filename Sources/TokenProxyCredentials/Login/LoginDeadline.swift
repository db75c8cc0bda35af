import TokenProxySupport

/// The one deadline of an interactive login (`tokenproxy login --timeout`), fixed when the
/// login starts and carried through every step: discovery, each request to the provider,
/// the wait for the browser, the person or the device approval, and the store's lock. A
/// request gets the shorter of its own limit and what is left, and the login's thread never
/// waits past the deadline, whatever a peer does; past it the login fails with
/// ``LoginError/Code/timedOut`` naming the step it was in (`docs/guide/logins.md`). A logout's
/// discovery and revocations share one too (`limits.token_request_seconds`).
struct LoginDeadline: Sendable {
    /// When the login gives up.
    let end: ContinuousClock.Instant
    /// The whole allowance in seconds, for messages.
    let seconds: Double

    /// A request that would fail because the deadline passed within this margin is reported
    /// as the deadline's: libcurl counts its timeout in whole milliseconds.
    private static let margin: Duration = .milliseconds(100)

    /// The shortest time a request is given, even once the deadline has passed: libcurl
    /// reads a zero timeout as none.
    private static let shortestRequest = 0.001

    /// A deadline `seconds` from `start` (clamped to ``BoundedSeconds``' range).
    init(seconds: Double, from start: ContinuousClock.Instant = .now) {
        self.seconds = BoundedSeconds.clamp(seconds)
        self.end = start + BoundedSeconds.duration(seconds)
    }

    /// Seconds left, zero once the deadline passed.
    var remaining: Double {
        let left = self.end - ContinuousClock.now
        guard left > .zero else { return 0 }
        return Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
    }

    /// Whether the deadline has passed (or is about to, within the rounding of a timeout).
    var hasPassed: Bool {
        ContinuousClock.now + Self.margin >= self.end
    }

    /// A request's whole life: `step` seconds, or less when the login has less left.
    func requestSeconds(atMost step: Double) -> Double {
        max(Self.shortestRequest, min(BoundedSeconds.clamp(step), self.remaining))
    }

    /// The instant a step that allows itself `step` seconds must end by.
    func instant(atMost step: Double) -> ContinuousClock.Instant {
        min(ContinuousClock.now + BoundedSeconds.duration(step), self.end)
    }

    /// The failure of a login whose deadline passed while it was `step` (a phrase such as
    /// "waiting for the browser's callback").
    func timedOut(_ step: String) -> LoginError {
        LoginError(
            .timedOut,
            "the login timed out after \(LoopbackCallback.describe(self.seconds)) seconds (--timeout) while \(step)"
        )
    }

    /// `failure` as it is, unless the deadline passed meanwhile: then the timeout of `step`,
    /// which is what ended the request.
    func explain(_ failure: LoginError, during step: String) -> LoginError {
        self.hasPassed ? self.timedOut(step) : failure
    }

    /// Starts `operation` and blocks the calling thread until it calls its completion or the
    /// deadline passes (then ``timedOut(_:)`` for `step`; a later completion is dropped).
    /// Only for the command line's own thread.
    func wait<Value: Sendable>(
        _ step: String,
        _ operation: (@escaping @Sendable (Value) -> Void) -> Void
    ) -> Result<Value, LoginError> {
        guard let value = Blocking.wait(until: self.end, operation) else {
            return .failure(self.timedOut(step))
        }
        return .success(value)
    }
}
