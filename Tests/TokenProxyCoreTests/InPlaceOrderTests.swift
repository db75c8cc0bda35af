import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport
@testable import TokenProxyUpstream

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
        let sink = RelayingSink(exchange: bound)
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

/// Relays every delivery as it is, in the order ``ExchangeSink`` keeps: its deliveries and
/// body resumes go through one ``OrderedProducer`` of its own, as the sink's do.
private final class RelayingSink: CurlResponseSink {
    let exchange: QueueBound<HTTPExchange>
    private let producer = OrderedProducer()

    init(exchange: QueueBound<HTTPExchange>) {
        self.exchange = exchange
    }

    func deliver(_ delivery: CurlDelivery, from transfer: CurlTransfer) {
        self.handOff { exchange in
            exchange.batch { exchange in
                if let head = delivery.head {
                    exchange.sendHead(head)
                }
                if !delivery.body.isEmpty {
                    exchange.sendBody(delivery.body)
                }
                switch delivery.end {
                case .finish?: exchange.finish()
                case .abort?: exchange.abort()
                case .fail(let error)?, .lostReusedConnection(let error)?: exchange.respond(to: error)
                case nil: break
                }
            }
            transfer.bodyDelivered(delivery.bodyBytes, consumerWritable: true)
        }
    }

    func resumeRequestBody() {
        self.handOff { $0.resumeBody() }
    }

    private func handOff(_ body: @escaping @Sendable (HTTPExchange) -> Void) {
        let context = self.exchange.context
        if self.producer.runHereIfIdle(on: context, { body(self.exchange.value) }) {
            return
        }
        self.producer.willQueue()
        context.async {
            self.producer.started()
            body(self.exchange.value)
        }
    }
}

/// Keeps the exchange of each request, its body paused, and what its body handler got.
private final class PausedBodyHandler: HTTPExchangeHandler, @unchecked Sendable {
    private let exchanges = Mutex<[QueueBound<HTTPExchange>]>([])
    private let events = Mutex<[String]>([])

    var bodyEvents: [String] { self.events.withLockedValue { $0 } }

    func exchange(_ index: Int) -> QueueBound<HTTPExchange>? {
        self.exchanges.withLockedValue { $0.count > index ? $0[index] : nil }
    }

    func handle(_ exchange: HTTPExchange) {
        if exchange.head.method == "POST" {
            exchange.readBody { [self] event in
                switch event {
                case .bytes(let bytes):
                    self.events.withLockedValue { $0.append(String(decoding: bytes, as: UTF8.self)) }
                case .end: self.events.withLockedValue { $0.append("end") }
                }
            }
            exchange.pauseBody()
            self.exchanges.withLockedValue { $0.append(QueueBound(exchange, context: exchange.context)) }
        } else {
            exchange.respond(HTTPResponse(status: 204, body: []))
        }
    }
}
