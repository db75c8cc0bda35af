import Dispatch

extension DispatchTime {
    /// The Dispatch time `duration` from now (at least one nanosecond, at most about a
    /// century), for waits whose deadlines are kept on Swift's clocks.
    package static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        let whole = min(max(seconds, 0), 3_000_000_000)
        let nanoseconds = Int(whole) * 1_000_000_000 + Int(max(attoseconds, 0) / 1_000_000_000)
        return .now() + .nanoseconds(max(1, nanoseconds))
    }
}
