import Testing

@testable import TokenProxySupport

/// `MonotonicTime` reads the clock `ContinuousClock` reads, and converts to and from it
/// without loss.
struct MonotonicTimeTests {
    /// A reading taken between two of `ContinuousClock` lies between them: the same epoch
    /// and the same units. The wall clock would be decades off. (`CLOCK_MONOTONIC`, which
    /// stops while the machine sleeps, differs from `ContinuousClock`'s `CLOCK_BOOTTIME` only
    /// by the time slept, nothing on a machine that never suspended: this cannot tell them
    /// apart there.)
    @Test func readsTheClockContinuousClockReads() {
        for _ in 0..<100 {
            let before = ContinuousClock.now
            let reading = MonotonicTime.now
            let after = ContinuousClock.now
            #expect(MonotonicTime(before) <= reading)
            #expect(reading <= MonotonicTime(after))
            #expect(before <= reading.instant && reading.instant <= after)
        }
    }

    @Test func convertsBothWaysAndCountsDurations() {
        let instant = ContinuousClock.now + .milliseconds(1_500)
        let time = MonotonicTime(instant)
        #expect(time.instant == instant)
        #expect(MonotonicTime(time.instant) == time)
        let later = time + .seconds(2)
        #expect(later - time == .seconds(2))
        #expect(time - later == .seconds(-2))
        #expect(time < later && !(later < time) && !(time < time))
        #expect(later.instant == instant + .seconds(2))
    }

    /// The request path's arithmetic in nanoseconds agrees with `Duration`'s, and saturates
    /// rather than traps at the ends of the range (a configured limit is bounded, but the
    /// arithmetic itself must not be able to crash the process).
    @Test func countsInNanosecondsAndSaturates() {
        let time = MonotonicTime(nanoseconds: 5_000_000_000)
        #expect(time.advanced(byMilliseconds: 1_500) == time + .milliseconds(1_500))
        #expect(time.advanced(byMilliseconds: -2_000).nanoseconds == 3_000_000_000)
        #expect(time.advanced(byMilliseconds: 1_500).nanoseconds(since: time) == 1_500_000_000)
        #expect(time.nanoseconds(since: time.advanced(byMilliseconds: 1)) == -1_000_000)
        #expect(MonotonicTime(sinceEpoch: .nanoseconds(7) + .seconds(3)).nanoseconds == 3_000_000_007)
        #expect(time.sinceEpoch == .seconds(5))
        #expect(time.advanced(byMilliseconds: .max).nanoseconds == .max)
        // The interval saturates first (at `Int64.min` nanoseconds), and the sum stays in range.
        #expect(time.advanced(byMilliseconds: .min).nanoseconds == .min + 5_000_000_000)
        #expect((time + .seconds(Int64.max)).nanoseconds == .max)
        #expect(MonotonicTime(nanoseconds: .max).nanoseconds(since: MonotonicTime(nanoseconds: -1)) == .max)
        #expect(MonotonicTime(nanoseconds: .min).nanoseconds(since: MonotonicTime(nanoseconds: 1)) == .min)
    }

    /// Seconds as a connection's limits give them: to the nanosecond, and bounded whatever
    /// the value (a limit is validated, but the conversion must hold for any double).
    @Test func advancesBySecondsWithinBounds() {
        let time = MonotonicTime(nanoseconds: 1_000_000_000_000)
        #expect(time.advanced(bySeconds: 0.999).nanoseconds(since: time) == 999_000_000)
        #expect(time.advanced(bySeconds: 60).nanoseconds(since: time) == 60_000_000_000)
        #expect(time.advanced(bySeconds: 1e-9).nanoseconds(since: time) == 1)
        #expect(time.advanced(bySeconds: -1.5).nanoseconds(since: time) == -1_500_000_000)
        #expect(time.advanced(bySeconds: .infinity).nanoseconds == .max)
        #expect(time.advanced(bySeconds: 1e300).nanoseconds == .max)
        #expect(time.advanced(bySeconds: 9_223_372_036.854_775_807).nanoseconds == .max)
        #expect(time.advanced(bySeconds: -.infinity).nanoseconds == .min + 1_000_000_000_000)
        #expect(time.advanced(bySeconds: .nan) == time)
    }
}
