import Testing

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// Write back-pressure on an in-memory connection: a client that stops reading makes the
/// exchange unwritable and stops its producer; one that reads again resumes it.
struct BackPressureTests {
    /// Produces `total` bytes in 512-byte parts while the exchange is writable.
    ///
    /// `@unchecked Sendable`: its counts are touched only holding the embedded connection's
    /// context, on the test's thread.
    final class Producer: HTTPExchangeHandler, @unchecked Sendable {
        let total: Int
        /// Bytes sent so far (the connection's context only).
        private(set) var produced = 0
        /// `onWritable` calls so far (the connection's context only).
        private(set) var wakeUps = 0

        init(total: Int) {
            self.total = total
        }

        func handle(_ exchange: HTTPExchange) {
            exchange.sendHead(HTTPResponseHead(status: 200, contentLength: Int64(self.total)))
            exchange.onWritable = { [unowned self, unowned exchange] in
                self.wakeUps += 1
                self.pump(exchange)
            }
            self.pump(exchange)
        }

        private func pump(_ exchange: HTTPExchange) {
            while exchange.isWritable, self.produced < self.total {
                let count = min(512, self.total - self.produced)
                exchange.sendBody((self.produced..<self.produced + count).map { UInt8(truncatingIfNeeded: $0) })
                self.produced += count
            }
            if self.produced == self.total {
                exchange.finish()
            }
        }
    }

    @Test func aClientThatDoesNotReadHoldsTheProducerBackUntilItReads() throws {
        var settings = ConnectionSettings()
        settings.outputHighMark = 4096
        let producer = Producer(total: 100_000)
        let connection = EmbeddedConnection(handler: producer, settings: settings)
        connection.stopReading(after: 1000)
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        // The client took 1000 bytes; the producer stopped at the high mark.
        #expect(connection.run { connection.transport.written.count } == 1000)
        let held = connection.run { producer.produced }
        #expect(held < 1000 + 4096 + 512)
        #expect(connection.run { connection.transport.isWaitingForWritable })
        // Reading on, though, stays on: a reset must still be seen.
        #expect(connection.isReading)
        connection.resumeReading()
        #expect(connection.run { producer.produced } == 100_000)
        #expect(connection.run { producer.wakeUps } >= 1)
        let response = try #require(try connection.readResponse())
        #expect(response.body == (0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(!connection.run { connection.transport.isWaitingForWritable })
    }

    /// A drain (SIGTERM) while a slow client is still taking a finished answer lets the
    /// answer go out whole before the connection closes.
    @Test func aDrainWaitsForAnAnswerStillGoingOut() throws {
        var settings = ConnectionSettings(headerTimeout: 10, idleTimeout: 60)
        settings.outputHighMark = 1024
        let body = [UInt8](repeating: 7, count: 4096)
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held, settings: settings)
        connection.stopReading(after: 100)
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.run { held.last?.respond(HTTPResponse(status: 200, body: body)) }
        connection.drain()
        #expect(!connection.isClosed)
        connection.resumeReading()
        #expect(try connection.readResponse()?.body == body)
        #expect(connection.outputEnded)
    }

    @Test func aClientThatReadsInDribsGetsEveryByteInOrder() throws {
        var settings = ConnectionSettings()
        settings.outputHighMark = 1024
        let producer = Producer(total: 30_000)
        let connection = EmbeddedConnection(handler: producer, settings: settings)
        connection.stopReading()
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        var rounds = 0
        while connection.run({ producer.produced }) < 30_000, rounds < 1000 {
            connection.stopReading(after: 777)
            rounds += 1
        }
        connection.resumeReading()
        let response = try #require(try connection.readResponse())
        #expect(response.body == (0..<30_000).map { UInt8(truncatingIfNeeded: $0) })
        #expect(rounds > 10)
    }

    @Test func aClientThatDoesNotReadHoldsTheHandlerBack() throws {
        let handler = StreamingHandler(total: 64 * 1024 * 1024)
        let connection = EmbeddedConnection(handler: handler)
        connection.stopReading()
        connection.send("GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        // The client reads nothing: the handler may only fill the connection's output buffer
        // (its high mark and one part more), never the whole 64 MiB.
        let producedWhileBlocked = handler.produced
        #expect(producedWhileBlocked <= ConnectionSettings().outputHighMark + 65536)
        #expect(producedWhileBlocked < 16 * 1024 * 1024)
        connection.resumeReading()
        let response = try #require(try connection.readResponse())
        #expect(response.status == 200)
        #expect(response.body.count == 64 * 1024 * 1024)
        #expect(handler.produced == 64 * 1024 * 1024)
    }

    @Test func aSlowClientThatKeepsTakingAnEndlessAnswerIsKept() {
        let handler = EndlessAnswerHandler()
        let connection = EmbeddedConnection(handler: handler, settings: ConnectionSettings(idleTimeout: 1))
        connection.stopReading()
        connection.send("GET /endless HTTP/1.1\r\nHost: a\r\n\r\n")
        // Much slower than the server can send, for well over two idle times: each read lets
        // the server write a little more, which is progress.
        for _ in 0..<10 {
            connection.advance(by: 0.9)
            connection.stopReading(after: 1000)
            #expect(connection.takeWritten().count == 1000)
        }
        #expect(handler.clientsGone == 0)
        #expect(!connection.isClosed)
        // Once it stops taking bytes for the idle time, it is dropped.
        connection.advance(by: 1.001)
        #expect(handler.clientsGone == 1)
        #expect(connection.isClosed)
    }

    @Test func aSlowClientWhoseAnswerNeverDrainsIsKept() {
        // The client takes a little at a time while the answer keeps an output buffer full
        // that is larger than anything the client frees at once, so it never drains: only
        // the progress of each write may restart the send deadline, or it fires one idle
        // time after the output first filled although the client never stopped taking bytes.
        let handler = EndlessAnswerHandler()
        var settings = ConnectionSettings(idleTimeout: 1.5)
        settings.outputHighMark = 32 * 1024 * 1024
        let connection = EmbeddedConnection(handler: handler, settings: settings)
        connection.stopReading()
        connection.send("GET /endless HTTP/1.1\r\nHost: a\r\n\r\n")
        for _ in 0..<10 {
            connection.advance(by: 1.4)
            connection.stopReading(after: 64 * 1024)
            #expect(connection.takeWritten().count == 64 * 1024)
            #expect(connection.run { connection.transport.isWaitingForWritable })
        }
        #expect(handler.clientsGone == 0)
        #expect(!connection.isClosed)
    }
}
