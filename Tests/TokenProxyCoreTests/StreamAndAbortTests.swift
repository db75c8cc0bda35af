import Crypto
import Foundation
import Logging
import Synchronization
import Testing

/// Upload, download and both kinds of abort on one connection after another.
struct StreamAndAbortTests {
    @Test func forwardsStreamsAndAborts() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try client.send("POST /api/echo?k=v HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        let echoed = try client.readResponse()
        #expect(echoed.header("X-Body-SHA256") == sha256Hex(SHA256.hash(data: body)))
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer upstream-token-1")

        try client.send("GET /api/download/2000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        var received = 0
        #expect(try client.streamBody(of: head) { received += $0.count })
        #expect(received == 2_000_000)

        try client.send("GET /api/reset/100000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let broken = try client.readHead()
        #expect(try !client.streamBody(of: broken) { _ in })

        let leaving = try fixture.client()
        try leaving.send("GET /api/download/100000000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        _ = try leaving.readHead()
        leaving.closeNow()
        #expect(eventually { fixture.upstream.aborted == 1 })
    }
}
