import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct DroppedUpstreamConnectionTests {
    /// The upstream closes kept-alive connections after 0.2 s idle. The closed socket must not
    /// make the idle engine spin, and the next request must get a new connection, usually
    /// under the same descriptor number, and be answered.
    @Test
    func idleConnectionsClosedByTheUpstreamAreReplaced() throws {
        let name = "tp-drop"
        let engine = try sleepyEngine(name)
        let fixture = try ForwardingFixture(
            engine: engine,
            upstream: try FakeUpstream(idleTimeout: 0.2)
        )
        let client = try fixture.client()
        for round in 0..<4 {
            let response = try client.get("/api/r\(round)")
            #expect(response.status == 200)
            #expect(response.header("X-Seen-Target") == "/base/r\(round)")
            #expect(eventually { fixture.upstream.connectionsAccepted == round + 1 })
            // Once the upstream closed its side and the engine is idle again, measure it.
            #expect(eventually { fixture.upstream.openConnections == 0 })
            #expect(eventually { engine.isAsleep })
            let before = try #require(threadCPUTime(named: name))
            usleep(500_000)
            let after = try #require(threadCPUTime(named: name))
            // A spinning thread would use about 500 ms; an idle one close to nothing.
            #expect(after - before < .milliseconds(100))
        }
    }
}
