import Testing

@testable import TokenProxyHTTP

/// The ways an ``HTTPExchange`` answers, seen byte for byte on an in-memory connection.
struct HTTPExchangeTests {
    private static func exchange(
        _ request: String = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"
    ) -> (EmbeddedConnection, HeldExchanges) {
        let held = HeldExchanges()
        let connection = EmbeddedConnection(handler: held)
        connection.send(request)
        return (connection, held)
    }

    @Test func respondWritesALengthFramedAnswerAndKeepsTheConnection() throws {
        let (connection, held) = Self.exchange()
        connection.run { held.last?.respond(HTTPResponse(status: 201, body: Array("made".utf8))) }
        let response = try #require(try connection.readResponse())
        #expect(response.status == 201)
        #expect(response.header("Content-Length") == "4")
        #expect(response.bodyText == "made")
        #expect(connection.run { held.completions } == [0: true])
        #expect(connection.run { (held.last?.responseStatus, held.last?.responseBodyBytes) } == (201, 4))
        #expect(!connection.outputEnded)
    }

    @Test func aStreamedAnswerWithoutALengthIsChunked() throws {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200))
            held.last?.sendBody(Array("one ".utf8))
            held.last?.sendBody(Array("two".utf8)[...])
        }
        #expect(try connection.readResponse() == nil)
        connection.run { held.last?.finish() }
        let response = try #require(try connection.readResponse())
        #expect(response.header("Transfer-Encoding") == "chunked")
        #expect(response.bodyText == "one two")
        #expect(connection.run { held.completions } == [0: true])
    }

    @Test func anHTTP10AnswerWithoutALengthEndsWithTheConnection() throws {
        let (connection, held) = Self.exchange("GET /x HTTP/1.0\r\n\r\n")
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200))
            held.last?.sendBody(Array("until close".utf8))
            held.last?.finish()
        }
        #expect(connection.outputEnded)
        let response = try #require(try connection.readResponse())
        #expect(response.header("Connection") == "close")
        #expect(response.bodyText == "until close")
    }

    @Test func aBodyShorterThanItsLengthAbortsTheConnection() throws {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: 10))
            held.last?.sendBody(Array("short".utf8))
            held.last?.finish()
        }
        #expect(connection.run { held.completions } == [0: false])
        // What was queued went out, then the connection ended: never a complete-looking body.
        #expect(connection.outputEnded)
        #expect(try connection.readResponse() == nil)
        #expect(String(decoding: connection.takeWritten(), as: UTF8.self).hasSuffix("\r\n\r\nshort"))
    }

    @Test func bytesBeyondTheLengthAreNeverWritten() {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: 3))
            held.last?.sendBody(Array("abcdef".utf8))
        }
        #expect(connection.run { held.completions } == [0: false])
        let written = String(decoding: connection.takeWritten(), as: UTF8.self)
        #expect(!written.contains("d"))
        #expect(connection.outputEnded)
    }

    @Test func anAnswerToHEADHasNoBodyOnTheWire() throws {
        let (connection, held) = Self.exchange("HEAD /x HTTP/1.1\r\nHost: a\r\n\r\nGET /y HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.run { held.last?.respond(HTTPResponse(status: 200, body: Array("hidden".utf8))) }
        let head = try #require(try connection.readResponse(headRequest: true))
        #expect(head.header("Content-Length") == "6")
        // The next answer follows the head at once: no body bytes in between.
        connection.run { held.last?.respond(HTTPResponse(status: 204, body: [])) }
        #expect(try connection.readResponse()?.status == 204)
    }

    @Test func abortAfterTheHeadEndsTheConnectionAndLaterCallsAreIgnored() {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.sendHead(HTTPResponseHead(status: 200, contentLength: 100))
            held.last?.abort()
            held.last?.sendBody(Array("late".utf8))
            held.last?.finish()
        }
        #expect(connection.run { held.completions } == [0: false])
        #expect(connection.run { held.last?.isWritable } == false)
        #expect(!String(decoding: connection.takeWritten(), as: UTF8.self).contains("late"))
        #expect(connection.outputEnded)
    }

    @Test func anAnswerThatAsksToCloseEndsTheConnectionAfterIt() throws {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.respond(HTTPResponse(status: 503, body: Array("bye".utf8), closeConnection: true))
        }
        let response = try #require(try connection.readResponse())
        #expect(response.header("Connection") == "close")
        #expect(connection.outputEnded)
        connection.endInput()
        #expect(connection.isClosed)
    }

    @Test func aBatchGoesOutInOneWrite() throws {
        let (connection, held) = Self.exchange()
        connection.run {
            held.last?.batch { exchange in
                exchange.sendHead(HTTPResponseHead(status: 200, contentLength: 6))
                exchange.sendBody(Array("abc".utf8))
                exchange.sendBody(Array("def".utf8))
                exchange.finish()
            }
        }
        #expect(try connection.readResponse()?.bodyText == "abcdef")
        #expect(connection.run { connection.transport.writes } == 1)
    }
}
