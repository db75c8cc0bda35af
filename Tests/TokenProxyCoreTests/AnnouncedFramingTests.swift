import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// The client connection writes exactly the body its head announced, whatever its producer
/// does (`docs/reference/upstream.md`, "Responses").
struct AnnouncedFramingTests {
    @Test func bytesBeyondTheAnnouncedLengthAreNotWritten() throws {
        let handler = MisframingHandler(announced: 5, sent: "hello" + smuggledAnswer)
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.bodyText == "hello")
        #expect(try client.isClosedByServer())
        #expect(eventually { handler.finished.withLockedValue { $0 } == [false] })
    }

    @Test func aBodyShortOfTheAnnouncedLengthIsAborted() throws {
        let handler = MisframingHandler(announced: 10, sent: "hello")
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        var received: [UInt8] = []
        #expect(try !client.streamBody(of: head) { received += $0 })
        #expect(received == Array("hello".utf8))
        #expect(eventually { handler.finished.withLockedValue { $0 } == [false] })
    }
}

/// A handler that announces one `Content-Length` and sends another number of bytes.
private final class MisframingHandler: HTTPExchangeHandler, Sendable {
    let announced: Int64
    let sent: String
    /// How each exchange ended: true when finished as complete.
    let finished = Mutex<[Bool]>([])

    init(announced: Int64, sent: String) {
        self.announced = announced
        self.sent = sent
    }

    func handle(_ exchange: HTTPExchange) {
        exchange.observer = CompletionObserver { [self] done in self.finished.withLockedValue { $0.append(done) } }
        exchange.sendHead(HTTPResponseHead(status: 200, contentLength: self.announced))
        exchange.sendBody(Array(self.sent.utf8))
        exchange.finish()
    }
}
