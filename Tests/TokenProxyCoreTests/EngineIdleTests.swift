import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct EngineIdleTests {
    /// A wake-up is used up by the turn it causes: once the answers are out and nothing more
    /// comes, the event thread sleeps. A wake-up signal left set (an eventfd never read)
    /// would instead turn the loop without pause, thousands of times in the window below,
    /// and a wait cut short would block and wake again and again.
    @Test
    func anEngineWithNothingToDoSleeps() throws {
        let name = "tp-test-idle"
        let engine = try sleepyEngine(name)
        let fixture = try ForwardingFixture(engine: engine)
        let client = try fixture.client()
        for request in 0..<5 {
            // Some requests find the thread asleep and wake it.
            if request % 2 == 0 { #expect(eventually { engine.isAsleep }) }
            #expect(try client.get("/api/echo").status == 200)
        }
        // Once a turn still under way after the last answer ended and the thread is asleep,
        // a quiet window must see at most the one turn of a spurious wake-up: a few blocking
        // calls, and next to no processor time (a spinning thread would use about 500 ms).
        #expect(eventually { engine.isAsleep })
        let blocksBefore = try #require(threadBlockCount(named: name))
        let cpuBefore = try #require(threadCPUTime(named: name))
        usleep(500_000)
        let blocks = try #require(threadBlockCount(named: name)) - blocksBefore
        let cpu = try #require(threadCPUTime(named: name)) - cpuBefore
        #expect(blocks <= 3, "\(blocks) blocking calls with nothing to do")
        #expect(cpu < .milliseconds(100), "\(cpu) of processor time with nothing to do")
    }
}
