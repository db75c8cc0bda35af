import Testing

@testable import TokenProxyHTTP
@testable import TokenProxyServer

/// ``HTTPConnection`` over an in-memory transport: keep-alive, pipelining, heads and bodies
/// split anywhere, and a client that leaves mid-exchange, each step taking effect at once.
struct HTTPConnectionTests {
    private static let get = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"

    @Test func keepAliveServesSeveralRequestsThenClosesWhenAsked() throws {
        let connection = EmbeddedConnection(handler: EchoHandler())
        for index in 0..<3 {
            connection.send("GET /\(index) HTTP/1.1\r\nHost: a\r\n\r\n")
            let response = try #require(try connection.readResponse())
            #expect(response.header("X-Target") == "/\(index)")
            #expect(response.header("Connection") == nil)
            #expect(!connection.outputEnded)
        }
        connection.send("GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        #expect(try connection.readResponse()?.header("Connection") == "close")
        // A lingering close: our side is finished, the client's end of input ends it.
        #expect(connection.outputEnded)
        #expect(!connection.isClosed)
        connection.endInput()
        #expect(connection.isClosed)
    }

    @Test func pipelinedRequestsInOnePieceAreAnsweredInOrder() throws {
        let connection = EmbeddedConnection(handler: EchoHandler())
        connection.send(
            "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\none"
                + "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
                + "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nthree\r\n0\r\n\r\n"
        )
        var responses: [TestClient.Response] = []
        while let response = try connection.readResponse() {
            responses.append(response)
        }
        #expect(responses.map { $0.header("X-Target") } == ["/1", "/2", "/3"])
        #expect(responses.map(\.bodyText) == ["one", "", "three"])
    }

    @Test func aPipelinedRequestWaitsForTheAnswerBeforeIt() throws {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send(Self.get + "GET /b HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(connection.run { held.exchanges.count } == 1)
        connection.run { held.last?.respond(HTTPResponse(status: 200, body: Array("first".utf8))) }
        #expect(connection.run { held.exchanges.map(\.head.target) } == ["/a", "/b"])
        connection.run { held.last?.respond(HTTPResponse(status: 200, body: Array("second".utf8))) }
        #expect(try connection.readResponse()?.bodyText == "first")
        #expect(try connection.readResponse()?.bodyText == "second")
    }

    @Test func aHeadSplitAtEveryByteIsParsedOnceComplete() throws {
        let long = String(repeating: "v", count: 40)
        let request = Array("GET /split?q=1 HTTP/1.1\r\nHost: a\r\nX-Long: \(long)\r\n\r\n".utf8)
        for split in 1..<request.count {
            let connection = EmbeddedConnection(handler: EchoHandler())
            connection.send(request[..<split])
            #expect(connection.takeWritten().isEmpty, "answered before the head was complete (split \(split))")
            connection.send(request[split...])
            let response = try #require(try connection.readResponse(), "split \(split)")
            #expect(response.header("X-Target") == "/split?q=1")
        }
        // And one byte at a time.
        let connection = EmbeddedConnection(handler: EchoHandler())
        for byte in request {
            connection.send([byte])
        }
        #expect(try connection.readResponse()?.status == 200)
    }

    @Test(arguments: [
        "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world",
        "POST /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n \r\n5\r\nworld\r\n0\r\n\r\n",
    ])
    func aRequestSplitAnywhereDeliversItsWholeBody(request: String) throws {
        let bytes = Array(request.utf8)
        for first in 1..<bytes.count {
            for second in [first + 1, (first + bytes.count) / 2] where second < bytes.count && second > first {
                let connection = EmbeddedConnection(handler: EchoHandler())
                connection.send(bytes[..<first])
                connection.send(bytes[first..<second])
                connection.send(bytes[second...])
                let response = try #require(try connection.readResponse(), "split at \(first), \(second)")
                #expect(response.bodyText == "hello world", "split at \(first), \(second)")
            }
        }
    }

    @Test func aBodyIsNotReadUntilTheHandlerAsksAndStopsWhilePaused() throws {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send("POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nabc")
        var events: [RequestBodyEvent] = []
        connection.run {
            held.last?.readBody { events.append($0) }
        }
        #expect(events == [.bytes(Array("abc".utf8))])
        connection.run { held.last?.pauseBody() }
        connection.send("def")
        #expect(events.count == 1)
        #expect(!connection.isReading)
        connection.run { held.last?.resumeBody() }
        #expect(events == [.bytes(Array("abc".utf8)), .bytes(Array("def".utf8)), .end])
    }

    @Test func aClientThatEndsItsInputMidExchangeAbortsIt() {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send("POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nsome")
        connection.run { held.last?.readBody { _ in } }
        connection.endInput()
        #expect(connection.run { held.closed } == [0])
        #expect(connection.run { held.completions } == [0: false])
        #expect(connection.isClosed)
        // A late answer goes nowhere.
        connection.run { held.last?.respond(HTTPResponse(status: 200, body: [])) }
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func aClientThatEndsItsInputWhileItsAnswerIsAwaitedAbortsIt() {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send(Self.get)
        connection.endInput()
        #expect(connection.run { held.closed } == [0])
        #expect(connection.isClosed)
    }

    @Test func anEndOfInputInsideAHeadClosesQuietly() {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send("GET /a HTTP/1.1\r\nHo")
        connection.endInput()
        #expect(connection.isClosed)
        #expect(connection.run { held.exchanges.isEmpty })
        #expect(connection.takeWritten().isEmpty)
    }

    @Test func aResetMidResponseAbortsTheExchangeAndClosesAtOnce() {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send(Self.get)
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: 10))
        }
        connection.reset()
        #expect(connection.isClosed)
        #expect(connection.run { held.closed } == [0])
        #expect(connection.run { held.completions } == [0: false])
    }

    @Test func expectContinueGets100BeforeTheBodyAndOnlyWhenItIsAskedFor() throws {
        let connection = EmbeddedConnection(handler: EchoHandler())
        connection.send("PUT /upload HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try #require(try connection.readResponse())
        #expect(interim.status == 100)
        #expect(try connection.readResponse() == nil)
        connection.send("hello")
        let final = try #require(try connection.readResponse())
        #expect(final.status == 200)
        #expect(final.bodyText == "hello")
        // The connection stays usable afterwards.
        connection.send("GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try connection.readResponse()?.header("X-Target") == "/again")
    }

    @Test func chunkedBodiesAreDecodedForTheHandler() throws {
        let body = String(repeating: "0123456789abcdef", count: 20_000)
        var request = "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        var rest = Substring(body)
        while !rest.isEmpty {
            let piece = rest.prefix(7_777)
            request += String(piece.count, radix: 16) + "\r\n" + piece + "\r\n"
            rest = rest.dropFirst(piece.count)
        }
        let connection = EmbeddedConnection(handler: EchoHandler())
        // In reads of 1000 bytes, so chunk boundaries fall everywhere in them.
        connection.run { connection.transport.readSize = 1000 }
        connection.send(request + "0\r\n\r\n")
        let response = try #require(try connection.readResponse())
        #expect(response.header("X-Body-Length") == String(body.utf8.count))
        #expect(response.bodyText == body)
    }
}
