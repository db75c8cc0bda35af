import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct EngineDeadlineTests {
    /// A transfer started on the client's thread while the event thread sleeps sets a
    /// first-byte deadline the sleeping thread did not know about; the thread must be woken
    /// for it, or the silent upstream would hold the client for the idle wait (an hour).
    @Test
    func aDeadlineSetWhileTheEngineSleepsStillFires() throws {
        let engine = try sleepyEngine("tokenproxy.test.deadline")
        let fixture = try ForwardingFixture(route: #", "timeout_seconds": 1"#, engine: engine)
        let client = try fixture.client()
        // A first request, then the engine settles into its idle wait with nothing due.
        #expect(try client.get("/api/echo").status == 200)
        #expect(eventually { engine.isAsleep })
        let response = try client.get("/api/silent")
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
    }
}
