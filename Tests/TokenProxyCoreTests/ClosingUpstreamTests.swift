import Crypto
import Foundation
import Logging
import Synchronization
import Testing

struct ClosingUpstreamTests {
    /// An upstream answering `Connection: close` makes libcurl close the socket it has just
    /// stopped watching, with no event in between; the next connection usually gets the same
    /// descriptor number and must be watched afresh.
    @Test
    func connectionsTheUpstreamClosesAreReplaced() throws {
        let fixture = try ForwardingFixture(engine: try sleepyEngine("tp-close"))
        let client = try fixture.client()
        for round in 0..<6 {
            let path = round % 2 == 0 ? "close" : "echo"
            #expect(try client.get("/api/\(path)").status == 200)
        }
        // Every closing answer forced a new connection for the request after it.
        #expect(fixture.upstream.connectionsAccepted == 4)
    }
}
