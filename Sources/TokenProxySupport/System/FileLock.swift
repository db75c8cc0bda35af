#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An advisory `flock(2)` lock on an open file: the token store's lock between processes
/// (and threads) sharing the file. The lock belongs to the open file description, so closing
/// the descriptor releases it, and the kernel does when the process dies.
package enum FileLock {
    /// Who else may hold the lock at the same time.
    package enum Mode: Sendable {
        /// Readers: any number of shared holders at once.
        case shared
        /// A writer: one holder, and no shared one.
        case exclusive
    }

    /// Takes the lock in `mode` on `descriptor`, polling with short sleeps (5 ms doubling to
    /// 50 ms) until `deadline`: false when it is still taken then. It tries at least once,
    /// even past the deadline. Polling rather than a blocking `flock`, so a holder that
    /// keeps the lock for ever (stopped, hung on a disk) costs a bounded wait, never a thread.
    package static func lock(
        _ descriptor: Int32,
        _ mode: Mode,
        name: @autoclosure () -> String,
        deadline: ContinuousClock.Instant
    ) throws(SystemError) -> Bool {
        let operation = (mode == .shared ? LOCK_SH : LOCK_EX) | LOCK_NB
        var pause = Duration.milliseconds(5)
        while true {
            if case .processed = try syscall(name(), { flock(descriptor, operation) }) { return true }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return false }
            Self.sleep(min(pause, remaining))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    /// Sleeps the calling thread for `duration` (a short pause: a signal starts it again).
    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        _ = try? syscallBlocking("nanosleep", nanosleep(&request, nil))
    }
}
