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
}
