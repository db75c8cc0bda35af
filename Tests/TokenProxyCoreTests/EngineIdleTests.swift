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
            // Pauses let the thread fall asleep, so that some requests wake it.
            if request % 2 == 0 { usleep(20_000) }
            #expect(try client.get("/api/echo").status == 200)
        }
        // Two quiet windows: the first lets a turn still under way after the last answer end.
        usleep(100_000)
        let settled = engine.turns.load(ordering: .relaxed)
        usleep(300_000)
        let later = engine.turns.load(ordering: .relaxed)
        #expect(later - settled <= 1, "\(later - settled) turns with nothing to do")
    }
}
