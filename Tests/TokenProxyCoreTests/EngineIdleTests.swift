import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct EngineIdleTests {
    /// A wake-up is used up by the turn it causes: once the answers are out and nothing more
    /// comes, the event thread sleeps. A wake-up signal left set (an eventfd never read)
    /// would instead turn the loop without pause, thousands of times in the window below.
    @Test
    func anEngineWithNothingToDoSleeps() throws {
        let engine = try sleepyEngine("tokenproxy.test.idle")
        let fixture = try ForwardingFixture(engine: engine)
        let client = try fixture.client()
        for request in 0..<5 {
            // Some requests find the thread asleep and wake it.
            if request % 2 == 0 { #expect(eventually { engine.isAsleep }) }
            #expect(try client.get("/api/echo").status == 200)
        }
        // Once a turn still under way after the last answer ended and the thread is asleep,
        // a quiet window must see at most the one turn of a spurious wake-up.
        #expect(eventually { engine.isAsleep })
        let settled = engine.turns.load(ordering: .relaxed)
        usleep(300_000)
        let later = engine.turns.load(ordering: .relaxed)
        #expect(later - settled <= 1, "\(later - settled) turns with nothing to do")
    }
}
