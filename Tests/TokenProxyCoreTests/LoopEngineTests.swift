import Crypto
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import TokenProxyUpstream

/// The engines on event loops (``CurlEngine/init(loopOn:)``): each runs on a serial queue
/// that the client connections it serves share, driven by `curl_multi_socket_action`.
struct LoopEngineTests {
    /// Two loop engines for the whole test process, as `serve` makes them.
    static let engines: [CurlEngine] = {
        do {
            return try CurlEngine.makeLoops(count: 2)
        } catch {
            preconditionFailure("the loop engines cannot start: \(error)")
        }
    }()

    @Test func requestsOnAKeptAliveConnectionAreAnswered() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let client = try fixture.client()
        for request in 0..<5 {
            let response = try client.get("/api/r\(request)")
            #expect(response.status == 200)
            #expect(response.header("X-Seen-Target") == "/base/r\(request)")
        }
        #expect(fixture.upstream.requests.count == 5)
        #expect(fixture.upstream.requests.last?.headers.first("Authorization") == "Bearer upstream-token-1")
        // One client connection stays on one loop, whose engine keeps one upstream connection.
        #expect(fixture.upstream.connectionsAccepted == 1)
    }

    @Test func manyConnectionsAtOnceAreAllAnswered() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let failures = Mutex<[String]>([])
        let port = fixture.proxy.port
        DispatchQueue.concurrentPerform(iterations: 48) { connection in
            do {
                let client = try TestClient(port: port)
                for request in 0..<4 {
                    let response = try client.get("/api/c\(connection)/r\(request)")
                    if response.status != 200 || response.header("X-Seen-Target") != "/base/c\(connection)/r\(request)"
                    {
                        failures.withLock { $0.append("c\(connection)/r\(request): \(response.status)") }
                    }
                }
            } catch {
                failures.withLock { $0.append("c\(connection): \(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(fixture.upstream.requests.count == 192)
    }

    /// More ready sockets than one batch takes, client and upstream ones mixed: the loops are
    /// held while every client sends its request, so that each wake-up finds a full batch,
    /// and libcurl's ready sockets must be served between batches rather than coming back
    /// in each of them.
    @Test func moreReadySocketsThanABatchAreAllServed() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let clients = try (0..<200).map { _ in try fixture.client() }
        #expect(eventually { fixture.proxy.service.openConnections == clients.count })
        let release = DispatchSemaphore(value: 0)
        for loop in Self.engines.compactMap(\.eventLoop) {
            loop.queue.async { release.wait() }
        }
        for (index, client) in clients.enumerated() {
            try client.send("GET /api/c\(index) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        }
        for _ in Self.engines {
            release.signal()
        }
        var answered = 0
        for client in clients where try client.readResponse().status == 200 {
            answered += 1
        }
        #expect(answered == clients.count)
    }

    @Test func aLargeDownloadIsRelayedWhole() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let client = try fixture.client()
        try client.send("GET /api/download/5000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        #expect(head.status == 200)
        var received = 0
        var inOrder = true
        let complete = try client.streamBody(of: head) { bytes in
            for (index, byte) in bytes.enumerated() where byte != FakeUpstream.downloadByte(at: received + index) {
                inOrder = false
            }
            received += bytes.count
        }
        #expect(complete)
        #expect(inOrder)
        #expect(received == 5_000_000)
        #expect(try client.get("/api/after").status == 200)
    }

    @Test func anUploadArrivesIntact() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let client = try fixture.client()
        let body = (0..<(2 * 1024 * 1024 + 5)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try client.send("POST /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.send(body)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("X-Body-Length") == String(body.count))
        #expect(response.header("X-Body-SHA256") == sha256Hex(SHA256.hash(data: body)))
    }

    /// The first-byte deadline fires through the loop's timer source: nothing else happens
    /// on the loop while the upstream stays silent.
    @Test func aSilentUpstreamIs504() throws {
        let fixture = try ForwardingFixture(route: #", "timeout_seconds": 1"#, engines: Self.engines)
        let client = try fixture.client()
        let response = try client.get("/api/silent")
        #expect(response.status == 504)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_timeout")
        #expect(try fixture.client().get("/api/echo").status == 200)
    }

    @Test func aClientThatGoesAwayCancelsTheTransfer() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let client = try fixture.client()
        try client.send("GET /api/download/100000000000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readHead().status == 200)
        client.closeNow()
        #expect(eventually { fixture.upstream.aborted == 1 })
        #expect(try fixture.client().get("/api/echo").status == 200)
    }

    @Test func anUnreachableUpstreamIs502() throws {
        let fixture = try ForwardingFixture(engines: Self.engines)
        let response = try fixture.client().get("/dead/x")
        #expect(response.status == 502)
        #expect(response.header("X-Tokenproxy-Error") == "upstream_unreachable")
    }

    /// Connections on queues of their own still reach a loop engine, through its inbox.
    @Test func connectionsOffTheLoopsAreServedToo() throws {
        let fixture = try ForwardingFixture(engines: Self.engines, connectionsOnLoops: false)
        for connection in 0..<4 {
            let client = try fixture.client()
            for request in 0..<3 {
                #expect(try client.get("/api/c\(connection)/r\(request)").status == 200)
            }
        }
        #expect(fixture.upstream.requests.count == 12)
    }
}
