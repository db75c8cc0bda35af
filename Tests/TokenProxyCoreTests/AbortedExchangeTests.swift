import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// An exchange aborted while its answer still waits for the client: what was queued still
/// goes out, and a failure of the connection meanwhile closes it.
struct AbortedExchangeTests {
    @Test func anAbortedAnswerWaitingForTheClientClosesWhenTheClientResets() throws {
        let handler = StallThenAbortHandler()
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        try client.send("GET /stall HTTP/1.1\r\nHost: a\r\n\r\n")
        _ = try client.readHead()
        #expect(eventually { handler.aborted })
        // The answer is queued behind a full socket, and the send deadline is far away.
        #expect(server.server.openConnections == 1)
        // Unread data makes the close a reset, so the server's next write or read fails.
        client.closeNow()
        #expect(eventually { server.server.openConnections == 0 })
    }
}

/// Answers with an announced length it never reaches: it writes until the connection is no
/// longer writable, then aborts.
private final class StallThenAbortHandler: HTTPExchangeHandler, Sendable {
    private let done = Mutex(false)

    var aborted: Bool { self.done.withLockedValue { $0 } }

    func handle(_ exchange: HTTPExchange) {
        exchange.sendHead(HTTPResponseHead(status: 200, contentLength: 1 << 40))
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
        while exchange.isWritable {
            exchange.sendBody(chunk)
        }
        exchange.abort()
        self.done.withLockedValue { $0 = true }
    }
}
