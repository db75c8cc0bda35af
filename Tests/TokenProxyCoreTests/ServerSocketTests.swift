import Foundation
import Synchronization
import Testing

@testable import TokenProxyApp
@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

#if canImport(Glibc)
    import Glibc
#endif

struct ServerSocketTests {
    @Test func ipv6LoopbackListens() throws {
        var configuration = TestProxy.configuration()
        configuration.listen = .inet(host: "::1", port: 0)
        let proxy = try TestProxy(configuration)
        let client = try TestClient(ipv6LoopbackPort: proxy.port)
        try client.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: [::1]:\(proxy.port)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    @Test func readingStartsAgainWhenALaterAnswerLeavesInOneWrite() throws {
        // The answer comes from a later hop, as the upstream engine's do, and is bigger than
        // the output mark, with the start of the next request waiting in the input. The
        // socket takes the whole answer at once, so no writable event follows; reading must
        // not depend on one, or the rest of the next request is never read (a hang seen when
        // reading stopped while the output was over its mark).
        var settings = ConnectionSettings()
        settings.outputHighMark = 1024
        let server = try TestHTTPServer(settings: settings, handler: LaterAnswerHandler(size: 4096))
        let client = try TestClient(port: server.port)
        try client.send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\n")
        #expect(try client.readResponse().body.count == 4096)
        try client.send("Host: a\r\n\r\n")
        #expect(try client.readResponse().body.count == 4096)
    }

    @Test func aPipelinedRequestIsHandledOnTheQueueAfterAnAnswerWrittenInPlace() throws {
        // An upstream engine writes an answer in place, holding the connection's gate from
        // its own thread. The next request, already buffered, must not be parsed and routed
        // there: that would run a handler on the engine's thread while its other transfers
        // wait.
        let handler = InPlaceAnswerHandler()
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        try client.send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try client.readResponse().status == 200)
        #expect(eventually { handler.answeredInPlace == 2 })
        #expect(handler.handledInPlace == [false, false])
    }

    @Test func everyClientThatLeavesMidResponseIsNoticed() throws {
        // Each client asks for an endless answer and resets the connection after a varying
        // pause, so the reset lands at different points of the server's first fill of the
        // socket, including just as it first waits for the socket to take more. Every
        // exchange must learn that its client left; one that did not would keep its
        // producer (an upstream transfer, in the proxy) going for ever.
        let handler = EndlessAnswerHandler()
        let server = try TestHTTPServer(handler: handler)
        let rounds = 1000
        for round in 0..<rounds {
            let client = try EndlessAnswerHandler.client(of: server)
            usleep(UInt32(round % 50) * 10)
            client.closeNow()
        }
        #expect(eventually { handler.clientsGone == rounds })
        #expect(handler.clientsGone == rounds)
    }

    @Test func aClientThatClosesItsSendingSideDuringItsExchangeAbortsIt() throws {
        // nginx's default: the end of the client's input during an exchange ends the exchange,
        // so a client that gave up frees its producer (in the proxy, an upstream transfer)
        // and its connection, even when it left only by half-closing.
        let handler = EndlessAnswerHandler()
        let server = try TestHTTPServer(handler: handler)
        let client = try EndlessAnswerHandler.client(of: server)
        client.shutdownWrite()
        withExtendedLifetime(client) {
            #expect(eventually { handler.clientsGone == 1 })
        }
    }

    @Test func aClientThatTakesNothingOfItsAnswerForTheIdleTimeIsDropped() throws {
        let handler = EndlessAnswerHandler()
        let server = try TestHTTPServer(settings: ConnectionSettings(idleTimeout: 0.5), handler: handler)
        let client = try EndlessAnswerHandler.client(of: server)
        // The client reads nothing more, and stays connected (a closed socket would end the
        // exchange by itself): once the socket is full, the answer stalls.
        withExtendedLifetime(client) {
            #expect(eventually { handler.clientsGone == 1 })
        }
    }

    @Test func unixSocketIsCreatedWithMode0600() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("proxy.sock").path
        var configuration = TestProxy.configuration()
        configuration.listen = .unix(path: path)
        let service = ProxyService(
            configuration: configuration,
            forwarder: UnavailableForwarder(),
            logger: TestLogging.logger
        )
        _ = try service.start()
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o600)
        let client = try TestClient(unixPath: path)
        try client.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        let drained = DispatchSemaphore(value: 0)
        service.drain(timeout: 2) { _ in drained.signal() }
        drained.wait()
    }

    @Test func aSeparateAdminListenerServesAtItsRoot() throws {
        var configuration = TestProxy.configuration()
        configuration.admin = .listener(.inet(host: "127.0.0.1", port: 0))
        let proxy = try TestProxy(configuration)
        guard case .inet(_, let adminPort)? = proxy.addresses.admin else {
            Issue.record("no admin listener")
            return
        }
        let admin = try TestClient(port: adminPort)
        try admin.send(
            "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /status HTTP/1.1\r\nHost: localhost\r\n\r\n"
        )
        #expect(try admin.readResponse().status == 200)
        let status = try admin.readResponse()
        #expect(status.status == 200)
        #expect(status.bodyText.contains("\"routes\""))
        // The proxy listener no longer serves the admin prefix.
        let client = try proxy.client()
        try client.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try client.readResponse().status == 404)
    }

    /// An answer to a head far larger than the limit reaches the client whole: the server
    /// closes lingering, so the unread input does not make the kernel reset the connection
    /// under the answer.
    @Test func anOversizedHeadIsAnsweredWholeBeforeTheClose() throws {
        let proxy = try TestProxy()
        let client = try proxy.client()
        let big = "X-Big: " + String(repeating: "b", count: 200_000) + "\r\n"
        try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n" + big + "\r\n")
        let response = try client.readResponse()
        #expect(response.status == 431)
        #expect(response.header("X-Tokenproxy-Error") == "headers_too_large")
        #expect(try client.isClosedByServer())
    }

    /// The configuration's `limits` reach every client connection: the parser's bounds and
    /// the header deadline.
    @Test func theConfiguredConnectionLimitsApply() throws {
        var configuration = TestProxy.configuration()
        configuration.limits.maxHeaderCount = 3
        configuration.limits.headerTimeoutSeconds = 0.5
        let proxy = try TestProxy(configuration)
        let crowded = try proxy.client()
        try crowded.send("GET / HTTP/1.1\r\nHost: localhost\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n")
        #expect(try crowded.readResponse().status == 431)
        let slow = try proxy.client()
        try slow.send("GET / HTTP/1.1\r\nHost: local")
        let late = try slow.readResponse()
        #expect(late.status == 408)
        #expect(late.header("X-Tokenproxy-Error") == "request_timeout")
    }

    @Test func connectionsOverTheLimitGet503() throws {
        var configuration = TestProxy.configuration()
        configuration.limits.maxConnections = 2
        let proxy = try TestProxy(configuration)
        let first = try proxy.client()
        let second = try proxy.client()
        // Make sure both are registered before the third arrives.
        for client in [first, second] {
            try client.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        let third = try proxy.client()
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.header("X-Tokenproxy-Error") == "too_many_connections")
    }

    @Test func drainingFinishesInFlightAndClosesIdleConnections() throws {
        let proxy = try TestProxy()
        let idle = try proxy.client()
        try idle.send("GET /_tokenproxy/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        let finished = DispatchSemaphore(value: 0)
        let clean = LockedFlag()
        proxy.service.drain(timeout: 5) { ok in
            clean.set(ok)
            finished.signal()
        }
        #expect(try idle.isClosedByServer())
        finished.wait()
        #expect(clean.value)
        #expect(throws: (any Error).self) { try proxy.client() }
    }
}

/// Streams `total` bytes of chunked body, writing only while the exchange is writable and
/// waiting for `onWritable` otherwise: what a well-behaved producer does.
final class StreamingHandler: HTTPExchangeHandler, @unchecked Sendable {
    private let lock = NSLock()
    /// The bytes sent so far (guarded by `lock`).
    private var producedBytes = 0
    private let total: Int

    init(total: Int) {
        self.total = total
    }

    var produced: Int { self.lock.withLock { self.producedBytes } }

    func handle(_ exchange: HTTPExchange) {
        exchange.sendHead(HTTPResponseHead(status: 200))
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
        func pump() {
            while exchange.isWritable {
                let sent = self.lock.withLock { () -> Bool in
                    guard self.producedBytes < self.total else { return false }
                    self.producedBytes += chunk.count
                    return true
                }
                guard sent else {
                    exchange.finish()
                    return
                }
                exchange.sendBody(chunk)
            }
            exchange.onWritable = { pump() }
        }
        pump()
    }
}

/// Answers every request from a later hop through the connection's context, in one batch,
/// with `size` bytes of body.
struct LaterAnswerHandler: HTTPExchangeHandler {
    let size: Int

    func handle(_ exchange: HTTPExchange) {
        let size = self.size
        QueueBound(exchange, context: exchange.context).execute { exchange in
            exchange.respond(HTTPResponse(status: 200, body: [UInt8](repeating: UInt8(ascii: "a"), count: size)))
        }
    }
}

/// Answers every request from a thread of its own holding the connection's gate there, as
/// an upstream engine writing in place does, and records whether each request's handler ran
/// in place.
final class InPlaceAnswerHandler: HTTPExchangeHandler, @unchecked Sendable {
    private let handled = Mutex<[Bool]>([])
    private let inPlace = Mutex(0)

    var handledInPlace: [Bool] { self.handled.withLockedValue { $0 } }
    var answeredInPlace: Int { self.inPlace.withLockedValue { $0 } }

    func handle(_ exchange: HTTPExchange) {
        let handledInPlace = exchange.context.isHeldInPlace
        self.handled.withLockedValue { $0.append(handledInPlace) }
        let bound = QueueBound(exchange, context: exchange.context)
        Thread { [self] in
            // The gate is free once the handler's caller lets go of it.
            let answered = eventually {
                bound.context.runIfIdle {
                    bound.value.respond(HTTPResponse(status: 200, body: Array("ok".utf8)))
                }
            }
            if answered {
                self.inPlace.withLockedValue { $0 += 1 }
            }
        }.start()
    }
}

/// Streams an endless answer while the client takes it, counting the exchanges whose client
/// went away.
final class EndlessAnswerHandler: HTTPExchangeHandler, @unchecked Sendable {
    private let gone = Mutex(0)

    var clientsGone: Int { self.gone.withLockedValue { $0 } }

    /// A client of `server` (over such a handler) that asked for the answer and read its head.
    static func client(of server: TestHTTPServer) throws -> TestClient {
        let client = try TestClient(port: server.port)
        try client.send("GET /endless HTTP/1.1\r\nHost: a\r\n\r\n")
        _ = try client.readHead()
        return client
    }

    func handle(_ exchange: HTTPExchange) {
        exchange.onClose = { [self] in self.gone.withLockedValue { $0 += 1 } }
        exchange.sendHead(HTTPResponseHead(status: 200))
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
        func pump() {
            while exchange.isWritable {
                exchange.sendBody(chunk)
            }
            exchange.onWritable = { pump() }
        }
        pump()
    }
}

/// A Bool set from a completion handler and read by the test.
final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    /// The flag (guarded by `lock`).
    private var stored = false
    var value: Bool { self.lock.withLock { self.stored } }
    func set(_ value: Bool) { self.lock.withLock { self.stored = value } }
}

/// Answers like a forwarder does, with callbacks that capture the exchange strongly, and
/// keeps only weak references, so a test can see whether finished exchanges are freed.
final class CapturingHandler: HTTPExchangeHandler, @unchecked Sendable {
    private final class WeakBox {
        weak var exchange: HTTPExchange?
        init(_ exchange: HTTPExchange) { self.exchange = exchange }
    }

    private let lock = NSLock()
    /// A weak reference to each exchange handled (guarded by `lock`).
    private var boxes: [WeakBox] = []

    var handled: Int { self.lock.withLock { self.boxes.count } }
    var alive: Int { self.lock.withLock { self.boxes.filter { $0.exchange != nil }.count } }

    func handle(_ exchange: HTTPExchange) {
        self.lock.withLock { self.boxes.append(WeakBox(exchange)) }
        exchange.onClose = { _ = exchange.head }
        exchange.onWritable = { _ = exchange.head }
        exchange.readBody { event in
            guard case .end = event else { return }
            exchange.respond(HTTPResponse(status: 200, body: Array("ok".utf8)))
        }
    }
}
