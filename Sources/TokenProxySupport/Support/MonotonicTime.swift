#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A reading of the continuous clock (`ContinuousClock`: monotonic, and counting while the
/// machine sleeps), kept as whole nanoseconds from the clock's epoch.
///
/// The times a request's transfer, exchange and token carry several times a request
/// (deadlines, when a token expires, how long a request took) are kept as this rather than
/// as `ContinuousClock.Instant` or `Duration`: those come from libraries built for evolution,
/// so each copy of an instant goes through the library's value witnesses, and each reading
/// of the clock, comparison or sum is a call into the library, with 128-bit arithmetic for a
/// `Duration`. Nanoseconds in 64 bits last 292 years from the machine's boot. ``now`` reads
/// the clock `ContinuousClock` reads on Linux, `CLOCK_BOOTTIME` (the Swift runtime's
/// `Clock.cpp`), directly. `MonotonicTimeTests` checks that the readings agree, which
/// catches another epoch or the wall clock; `CLOCK_MONOTONIC` would differ only by the time
/// the machine slept.
package struct MonotonicTime: Sendable, Hashable, Comparable {
    /// Nanoseconds from the clock's epoch (the machine's boot).
    package var nanoseconds: Int64

    /// The reading `nanoseconds` after the clock's epoch.
    package init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The reading `sinceEpoch` after the clock's epoch (to the nanosecond, saturating).
    package init(sinceEpoch: Duration) {
        self.nanoseconds = sinceEpoch.saturatingNanoseconds
    }

    /// The same point as `instant`.
    package init(_ instant: ContinuousClock.Instant) {
        self.init(sinceEpoch: ContinuousClock().systemEpoch.duration(to: instant))
    }

    /// The distance from the clock's epoch.
    package var sinceEpoch: Duration { .nanoseconds(self.nanoseconds) }

    /// The same point as a `ContinuousClock.Instant`.
    package var instant: ContinuousClock.Instant {
        ContinuousClock().systemEpoch + self.sinceEpoch
    }

    /// The clock now.
    package static var now: MonotonicTime {
        var reading = timespec()
        // Cannot fail: the clock exists on every Linux this runs on, and `reading` is valid.
        clock_gettime(CLOCK_BOOTTIME, &reading)
        // Cannot overflow: seconds since boot times 10^9 stay far below 2^63.
        return MonotonicTime(nanoseconds: Int64(reading.tv_sec) &* 1_000_000_000 &+ Int64(reading.tv_nsec))
    }

    /// Whether `lhs` comes before `rhs`.
    package static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The reading `rhs` after `lhs` (saturating).
    package static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: Self.saturating(lhs.nanoseconds, plus: rhs.saturatingNanoseconds))
    }

    /// The reading `milliseconds` after this one (saturating): the request path's deadlines,
    /// whose limits are kept in milliseconds, without a `Duration`.
    package func advanced(byMilliseconds milliseconds: Int) -> MonotonicTime {
        let (product, overflow) = Int64(clamping: milliseconds).multipliedReportingOverflow(by: 1_000_000)
        return MonotonicTime(
            nanoseconds: Self.saturating(self.nanoseconds, plus: overflow ? (milliseconds < 0 ? .min : .max) : product)
        )
    }

    /// The reading `seconds` after this one, to the nanosecond (saturating; not a number
    /// counts as none): a connection's deadlines, whose limits are configured in seconds.
    package func advanced(bySeconds seconds: Double) -> MonotonicTime {
        let nanoseconds = (seconds * 1_000_000_000).rounded()
        let interval: Int64
        if nanoseconds.isNaN {
            interval = 0
        } else if nanoseconds >= 0x1p63 {
            // 2^63 is exactly representable as a Double, `Int64.max` is not.
            interval = .max
        } else if nanoseconds < -0x1p63 {
            interval = .min
        } else {
            interval = Int64(nanoseconds)
        }
        return MonotonicTime(nanoseconds: Self.saturating(self.nanoseconds, plus: interval))
    }

    /// The time from `rhs` to `lhs` (negative when `lhs` comes first).
    package static func - (lhs: MonotonicTime, rhs: MonotonicTime) -> Duration {
        .nanoseconds(lhs.nanoseconds(since: rhs))
    }

    /// The nanoseconds from `earlier` to this reading (negative when this one comes first;
    /// saturating).
    package func nanoseconds(since earlier: MonotonicTime) -> Int64 {
        let (difference, overflow) = self.nanoseconds.subtractingReportingOverflow(earlier.nanoseconds)
        guard !overflow else { return earlier.nanoseconds > 0 ? .min : .max }
        return difference
    }

    private static func saturating(_ value: Int64, plus addend: Int64) -> Int64 {
        let (sum, overflow) = value.addingReportingOverflow(addend)
        guard !overflow else { return addend < 0 ? .min : .max }
        return sum
    }
}
