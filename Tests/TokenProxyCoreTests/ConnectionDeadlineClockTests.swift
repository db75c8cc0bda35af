import Testing

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// The connection's deadlines on a manual clock: each fires exactly when its time has come,
/// never a moment before, whatever the client does in between.
struct ConnectionDeadlineClockTests {
    private static let settings = ConnectionSettings(headerTimeout: 10, idleTimeout: 60)

    @Test func theHeaderDeadlineIsTotalNotPerRead() throws {
        let connection = EmbeddedConnection(handler: EchoHandler(), settings: Self.settings)
        // A slowloris client: a byte every 3 s keeps every read fresh, but the head is never
        // complete, so the total deadline ends it with 408.
        for byte in "GET / HTTP/1.1\r\nHost: a\r\nX-Slow:".utf8.prefix(3) {
            connection.send([byte])
            connection.advance(by: 3)
        }
        #expect(connection.takeWritten().isEmpty)
        connection.advance(by: 0.999)
        #expect(connection.takeWritten().isEmpty)
        connection.advance(by: 0.002)
        let response = try #require(try connection.readResponse())
        #expect(response.status == 408)
        #expect(response.header("X-Tokenproxy-Error") == "request_timeout")
        #expect(response.header("Connection") == "close")
        #expect(connection.outputEnded)
    }

    @Test func aConnectionThatSendsNothingIsClosedQuietlyAtTheHeaderDeadline() {
        let connection = EmbeddedConnection(handler: EchoHandler(), settings: Self.settings)
        connection.advance(by: 9.999)
        #expect(!connection.isClosed)
        connection.advance(by: 0.002)
        #expect(connection.isClosed)
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func anIdleKeepAliveConnectionIsClosedQuietlyAtTheIdleDeadline() throws {
        let connection = EmbeddedConnection(handler: EchoHandler(), settings: Self.settings)
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
        // The header deadline no longer counts: the idle one does.
        connection.advance(by: 59.999)
        #expect(!connection.isClosed)
        connection.advance(by: 0.002)
        #expect(connection.isClosed)
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func aBodyThatStopsArrivingIsAnswered408AtTheIdleDeadline() throws {
        let held = HeldExchanges(readsBodies: true)
        let connection = EmbeddedConnection(handler: held, settings: Self.settings)
        connection.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        // Each piece of the body starts the inactivity deadline again.
        connection.advance(by: 59)
        connection.send("de")
        connection.advance(by: 59.999)
        #expect(connection.takeWritten().isEmpty)
        connection.advance(by: 0.002)
        #expect(try connection.readResponse()?.status == 408)
        #expect(connection.run { held.closed } == [0])
    }

    @Test func anExchangeWithoutABodyHasNoDeadlineWhileItsHandlerWorks() throws {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held, settings: Self.settings)
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.advance(by: 3600)
        #expect(!connection.isClosed)
        connection.run { held.last?.respond(HTTPResponse(status: 204, body: [])) }
        #expect(try connection.readResponse()?.status == 204)
    }

    @Test func aClosingConnectionLingersForTwoSecondsAtMost() throws {
        let connection = EmbeddedConnection(handler: EchoHandler(), settings: Self.settings)
        connection.send("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(try connection.readResponse()?.status == 200)
        #expect(connection.outputEnded)
        // What the client still sends is read and dropped meanwhile.
        connection.send("GET /ignored HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.advance(by: 1.999)
        #expect(!connection.isClosed)
        connection.advance(by: 0.002)
        #expect(connection.isClosed)
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func aClientThatTakesNothingOfItsAnswerIsDroppedAtTheSendDeadline() {
        var settings = Self.settings
        settings.outputHighMark = 1024
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held, settings: settings)
        connection.stopReading()
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: 4096))
            held.last?.sendBody([UInt8](repeating: 1, count: 4096))
        }
        connection.advance(by: 59.999)
        #expect(!connection.isClosed)
        connection.advance(by: 0.002)
        #expect(connection.isClosed)
        #expect(connection.run { held.completions } == [0: false])
    }

    /// The idle deadline does not cut an answer a client is still taking. (The in-memory
    /// client is writable again after any byte it takes; a socket's sender waits for more
    /// room, so on a socket the send deadline bounds such a client as well.)
    @Test func theIdleDeadlineWaitsForAnAnswerTheClientKeepsTaking() throws {
        var settings = Self.settings
        settings.outputHighMark = 1024
        let body = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held, settings: settings)
        connection.stopReading()
        connection.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: Int64(body.count)))
            held.last?.sendBody(body)
            held.last?.finish()
        }
        // 100 bytes every 50 s: far slower than the answer, yet never idle for 60 s.
        #expect(connection.run { connection.transport.isWaitingForWritable })
        while connection.run({ connection.transport.isWaitingForWritable }), !connection.isClosed {
            connection.advance(by: 50)
            connection.stopReading(after: 100)
        }
        #expect(!connection.isClosed)
        #expect(try connection.readResponse()?.body == body)
        #expect(connection.run { held.completions } == [0: true])
    }
}
