import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyCore

/// Holds a context's gate on a thread of its own (never a Dispatch worker) until released.
private final class GateHolder: @unchecked Sendable {
    private let taken = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(_ context: SerialContext) {
        let thread = Thread { [taken, released] in
            context.run {
                taken.signal()
                released.wait()
            }
        }
        thread.start()
        self.taken.wait()
    }

    func release() {
        self.released.signal()
    }
}

/// Values appended from several threads, in the order the appends ran.
private final class OrderLog: Sendable {
    private let entries = Mutex<[Int]>([])

    func append(_ value: Int) {
        self.entries.withLock { $0.append(value) }
    }

    var values: [Int] {
        self.entries.withLock { $0 }
    }
}

struct SerialContextTests {
    @Test func theGateIsExclusiveAndKnowsItsHolder() {
        let context = SerialContext(queue: DispatchQueue(label: "test.context"))
        #expect(!context.isCurrent)
        var inside = false
        var nestedRan = false
        var nestedInPlace = true
        context.run {
            inside = context.isCurrent
            // Already held here: run nests, an in-place attempt is refused rather than deadlocking.
            context.run { nestedRan = true }
            nestedInPlace = context.runIfIdle {}
        }
        #expect(inside)
        #expect(nestedRan)
        #expect(!nestedInPlace)
        #expect(!context.isCurrent)

        let holder = GateHolder(context)
        var ranWhileHeld = false
        #expect(!context.runIfIdle { ranWhileHeld = true })
        #expect(!ranWhileHeld)
        holder.release()
        #expect(eventually { context.runIfIdle {} })
    }

    @Test func handOffsRunInPlaceOnlyBehindEverythingTheyQueued() {
        let queue = DispatchQueue(label: "test.context.order")
        let context = SerialContext(queue: queue)
        let bound = QueueBound(OrderLog(), context: context)
        let producer = OrderedProducer()

        // Idle: the call runs at once, on this thread.
        bound.executeHereIfIdle(for: producer) { $0.append(0) }
        #expect(Self.values(bound) == [0])

        // Busy: calls 1 and 2 go to the queue, which is kept from running them.
        let queueBlocked = DispatchSemaphore(value: 0)
        let unblockQueue = DispatchSemaphore(value: 0)
        queue.async {
            queueBlocked.signal()
            unblockQueue.wait()
        }
        queueBlocked.wait()
        let holder = GateHolder(context)
        bound.executeHereIfIdle(for: producer) { $0.append(1) }
        bound.executeHereIfIdle(for: producer) { $0.append(2) }
        holder.release()

        // The gate is free now, but 1 and 2 have not run: 3 must wait behind them.
        #expect(eventually { context.runIfIdle {} })
        bound.executeHereIfIdle(for: producer) { $0.append(3) }
        #expect(Self.values(bound) == [0])

        unblockQueue.signal()
        queue.sync {}
        #expect(Self.values(bound) == [0, 1, 2, 3])

        // Everything queued has run: in place again.
        bound.executeHereIfIdle(for: producer) { $0.append(4) }
        #expect(Self.values(bound) == [0, 1, 2, 3, 4])
    }

    /// The log's entries, read holding its context; nil when the context is taken.
    private static func values(_ bound: QueueBound<OrderLog>) -> [Int]? {
        var values: [Int]?
        _ = bound.context.runIfIdle { values = bound.value.values }
        return values
    }
}

/// Passes requests to the libcurl forwarder and keeps each request's connection context.
private final class ContextRecordingForwarder: RouteForwarder, @unchecked Sendable {
    private let inner: CurlForwarder
    private let contexts = Mutex<[String: SerialContext]>([:])

    init(_ inner: CurlForwarder) {
        self.inner = inner
    }

    func forward(_ exchange: HTTPExchange, along match: Router.Match, logger: Logger) {
        self.inner.forward(exchange, along: match, logger: logger)
        self.contexts.withLock { $0[exchange.head.path] = exchange.context }
    }

    func context(for path: String) -> SerialContext? {
        self.contexts.withLock { $0[path] }
    }
}

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

/// Keeps the exchange of each request, its body paused, and what its body handler got.
private final class PausedBodyHandler: HTTPExchangeHandler, @unchecked Sendable {
    private let exchanges = Mutex<[QueueBound<HTTPExchange>]>([])
    private let events = Mutex<[String]>([])

    var bodyEvents: [String] { self.events.withLock { $0 } }

    func exchange(_ index: Int) -> QueueBound<HTTPExchange>? {
        self.exchanges.withLock { $0.count > index ? $0[index] : nil }
    }

    func handle(_ exchange: HTTPExchange) {
        if exchange.head.method == "POST" {
            exchange.readBody { [self] event in
                switch event {
                case .bytes(let bytes): self.events.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
                case .end: self.events.withLock { $0.append("end") }
                }
            }
            exchange.pauseBody()
            self.exchanges.withLock { $0.append(QueueBound(exchange, context: exchange.context)) }
        } else {
            exchange.respond(HTTPResponse(status: 204, body: []))
        }
    }
}

struct InPlaceOrderTests {
    @Test func anAnswerNeverOvertakesABodyResumeStillOnTheQueue() throws {
        // The engine resumed the request body while the connection was busy (so the resume
        // waits on its queue), then the whole answer arrived while the connection was idle.
        // Run in place, the answer would end the exchange before the connection took the
        // rest of the body (in the proxy the connection then closed after the answer, and the
        // client's next request read EOF).
        let handler = PausedBodyHandler()
        let server = try TestHTTPServer(handler: handler)
        let client = try TestClient(port: server.port)
        try client.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
        let bound = try #require(eventually { handler.exchange(0) })
        let context = bound.context
        let sink = ExchangeSink(exchange: bound) { _ in }
        // The sink is handed the transfer it reports for; this one is never driven.
        let transfer = CurlTransfer.unstarted(method: "POST")

        // The queue is kept from running anything, and the gate is held: the resume queues.
        let queueBlocked = DispatchSemaphore(value: 0)
        let unblockQueue = DispatchSemaphore(value: 0)
        context.queue.async {
            queueBlocked.signal()
            unblockQueue.wait()
        }
        queueBlocked.wait()
        let holder = GateHolder(context)
        sink.resumeRequestBody()
        holder.release()

        // The gate is free now, with the resume still queued: the answer must queue behind it.
        #expect(eventually { context.runIfIdle {} })
        sink.deliver(CurlDelivery(head: HTTPResponseHead(status: 200), end: .finish), from: transfer)
        var completeBeforeTheQueueRan: Bool?
        _ = context.runIfIdle { completeBeforeTheQueueRan = bound.value.isComplete }
        #expect(completeBeforeTheQueueRan == false)

        unblockQueue.signal()
        #expect(try client.readResponse().status == 200)
        #expect(handler.bodyEvents == ["hello", "end"])
        // The connection took the whole body, so it stays open for the next request.
        #expect(try client.get("/next").status == 204)
    }
}
