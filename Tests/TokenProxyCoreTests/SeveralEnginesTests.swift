import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct SeveralEnginesTests {
    /// Each connection is served by one engine; with two, both get connections (32 of them
    /// all landing on one would happen once in two billion runs), and each keeps its own
    /// upstream connection.
    @Test func connectionsAreSpreadOverTheEngines() throws {
        let engines: [CurlEngine] = [
            try CurlEngine(name: "tokenproxy.test.a"), try CurlEngine(name: "tokenproxy.test.b"),
        ]
        let fixture = try ForwardingFixture(engines: engines)
        for connection in 0..<32 {
            let client = try fixture.client()
            for request in 0..<3 {
                try client.send("GET /api/c\(connection)/r\(request) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.header("X-Seen-Target") == "/base/c\(connection)/r\(request)")
            }
        }
        #expect(fixture.upstream.requests.count == 96)
        #expect(fixture.upstream.connectionsAccepted == 2)
    }
}
