import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyServer
@testable import TokenProxySupport
@testable import TokenProxyUpstream

struct BusyConnectionTests {
    /// An engine never waits for a connection: one whose context is held elsewhere gets its
    /// answer through its queue later, complete and in order, while the engine goes on
    /// serving other connections.
    @Test
    func aBusyConnectionDoesNotHoldUpItsEngine() throws {
        let engine = try CurlEngine(name: "tokenproxy.test.busy", idleWait: .seconds(3600))
        var recording: ContextRecordingForwarder?
        // Answers are written in place, so the engine meets the held gate itself and must not
        // wait for it.
        let fixture = try ForwardingFixture(engine: engine) { forwarder in
            let recorder = ContextRecordingForwarder(forwarder)
            recording = recorder
            return recorder
        }
        let recorder = try #require(recording)
        let total = 4_000_000
        let path = "/api/download/\(total)"

        let busy = try fixture.client()
        try busy.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let context = try #require(eventually { recorder.context(for: path) })
        let holder = GateHolder(context)

        let other = try fixture.client()
        for index in 0..<5 {
            let response = try other.get("/api/items/\(index)")
            #expect(response.status == 200)
            #expect(response.header("X-Seen-Target") == "/base/items/\(index)")
        }

        holder.release()
        let head = try busy.readHead()
        #expect(head.status == 200)
        var offset = 0
        var misplaced = 0
        let complete = try busy.streamBody(of: head) { bytes in
            for byte in bytes {
                if byte != FakeUpstream.downloadByte(at: offset) { misplaced += 1 }
                offset += 1
            }
        }
        #expect(complete)
        #expect(offset == total)
        #expect(misplaced == 0)
    }
}

/// Passes requests to the libcurl forwarder and keeps each request's connection context.
private final class ContextRecordingForwarder: RouteForwarder, @unchecked Sendable {
    private let inner: CurlForwarder
    private let contexts = Mutex<[String: SerialContext]>([:])

    init(_ inner: CurlForwarder) {
        self.inner = inner
    }

    func forward(_ exchange: HTTPExchange, along match: Router.Match, report: AccessReport, logger: Logger) {
        self.inner.forward(exchange, along: match, report: report, logger: logger)
        self.contexts.withLockedValue { $0[exchange.head.path] = exchange.context }
    }

    func context(for path: String) -> SerialContext? {
        self.contexts.withLockedValue { $0[path] }
    }
}
