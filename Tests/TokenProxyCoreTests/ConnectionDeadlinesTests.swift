import Testing
import TokenProxySupport

@testable import TokenProxyServer

struct ConnectionDeadlinesTests {
    private func at(_ seconds: Int64) -> MonotonicTime {
        MonotonicTime(nanoseconds: 1_000_000_000 + seconds * 1_000_000_000)
    }

    @Test func theSourceIsRescheduledOnlyForAnEarlierDeadline() {
        var deadlines = ConnectionDeadlines()
        #expect(deadlines.setInput(self.at(60)) == self.at(60))
        #expect(deadlines.setInput(self.at(70)) == nil)
        #expect(deadlines.setSend(self.at(30)) == self.at(30))
        #expect(deadlines.setInput(nil) == nil)
    }

    @Test func aLaterDeadlineIsLookedAtWhenTheSourceFires() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.setInput(self.at(10))
        _ = deadlines.setInput(self.at(20))
        let early = deadlines.fired(now: self.at(10))
        #expect(early.expired == nil)
        #expect(early.reschedule == self.at(20))
        let due = deadlines.fired(now: self.at(20))
        #expect(due.expired == .input)
        #expect(due.reschedule == nil)
        let after = deadlines.fired(now: self.at(30))
        #expect(after.expired == nil)
        #expect(after.reschedule == nil)
    }

    @Test func theSendDeadlineComesFirstAndStaysPendingBehindAnExpiredInput() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.setInput(self.at(10))
        _ = deadlines.setSend(self.at(15))
        let input = deadlines.fired(now: self.at(12))
        #expect(input.expired == .input)
        #expect(input.reschedule == self.at(15))
        #expect(deadlines.fired(now: self.at(15)).expired == .send)

        var cleared = ConnectionDeadlines()
        _ = cleared.setSend(self.at(5))
        _ = cleared.setSend(nil)
        #expect(cleared.fired(now: self.at(6)).expired == nil)
    }

    @Test func onlyTheLingerDeadlineCountsOnceItIsSet() {
        var deadlines = ConnectionDeadlines()
        _ = deadlines.setInput(self.at(1))
        _ = deadlines.setSend(self.at(1))
        _ = deadlines.setLinger(self.at(2))
        let early = deadlines.fired(now: self.at(1))
        #expect(early.expired == nil)
        #expect(early.reschedule == self.at(2))
        #expect(deadlines.fired(now: self.at(2)).expired == .linger)
    }
}
