import Crypto
import Foundation
import Logging
import Synchronization
import Testing

struct EngineDeadlineTests {
    /// A transfer started on the client's thread while the event thread sleeps sets a
    /// first-byte deadline the sleeping thread did not know about; the thread must be woken
    /// for it, or the silent upstream would hold the client for the idle wait (an hour).
    @Test
    func aDeadlineSetWhileTheEngineSleepsStillFires() throws {
        let fixture = try ForwardingFixture(
            route: #", "timeout_seconds": 1"#,
            engine: try sleepyEngine("tokenproxy.test.deadline")
        )
        let client = try fixture.client()
        // A first request lets the engine settle into its idle wait with nothing due.
        #expect(try client.get("/api/echo").status == 200)
        usleep(50_000)
        let response = try client.get("/api/silent")
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
    }
}
