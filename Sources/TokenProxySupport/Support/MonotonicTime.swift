#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A reading of the continuous clock (`ContinuousClock`: monotonic, and counting while the
/// machine sleeps), kept as its distance from the clock's epoch in a `Duration`.
///
/// The times a request's transfer and token carry several times a request (deadlines, when
/// a token expires) are kept as this rather than as `ContinuousClock.Instant`: that type
/// comes from a library built for evolution, so each copy of one, or of an optional one, goes
/// through the library's value witnesses, and each reading of the clock through two calls
/// into it. A `Duration`'s layout is known to the compiler, and ``now`` reads the clock
/// `ContinuousClock` reads on Linux, `CLOCK_BOOTTIME` (the Swift runtime's `Clock.cpp`),
/// directly. `MonotonicTimeTests` checks that the readings agree, which catches another epoch
/// or the wall clock; `CLOCK_MONOTONIC` would differ only by the time the machine slept.
package struct MonotonicTime: Sendable, Hashable, Comparable {
    /// The distance from the clock's epoch (the machine's boot).
    package var sinceEpoch: Duration

    /// The reading `sinceEpoch` after the clock's epoch.
    package init(sinceEpoch: Duration) {
        self.sinceEpoch = sinceEpoch
    }

    /// The same point as `instant`.
    package init(_ instant: ContinuousClock.Instant) {
        self.sinceEpoch = ContinuousClock().systemEpoch.duration(to: instant)
    }

    /// The same point as a `ContinuousClock.Instant`.
    package var instant: ContinuousClock.Instant {
        ContinuousClock().systemEpoch + self.sinceEpoch
    }

    /// The clock now.
    package static var now: MonotonicTime {
        var reading = timespec()
        // Cannot fail: the clock exists on every Linux this runs on, and `reading` is valid.
        clock_gettime(CLOCK_BOOTTIME, &reading)
        return MonotonicTime(
            sinceEpoch: Duration(
                secondsComponent: Int64(reading.tv_sec),
                attosecondsComponent: Int64(reading.tv_nsec) * 1_000_000_000
            )
        )
    }

    /// Whether `lhs` comes before `rhs`.
    package static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool {
        lhs.sinceEpoch < rhs.sinceEpoch
    }

    /// The reading `rhs` after `lhs`.
    package static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        MonotonicTime(sinceEpoch: lhs.sinceEpoch + rhs)
    }

    /// The time from `rhs` to `lhs` (negative when `lhs` comes first).
    package static func - (lhs: MonotonicTime, rhs: MonotonicTime) -> Duration {
        lhs.sinceEpoch - rhs.sinceEpoch
    }
}
