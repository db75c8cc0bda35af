import Testing

/// One malformed request and what the proxy must answer.
struct MalformedCase: CustomTestStringConvertible, Sendable {
    /// Which server receives it: the proxy handler (policy checks) or an echo handler that
    /// reads bodies (chunked decoding happens only when a body is read).
    enum Target: Sendable {
        case proxy
        case bodyReader
    }

    var name: String
    var request: [UInt8]
    var status: Int
    var target: Target

    init(_ name: String, _ request: String, _ status: Int = 400, _ target: Target = .proxy) {
        self.name = name
        self.request = Array(request.utf8)
        self.status = status
        self.target = target
    }

    init(_ name: String, bytes: [UInt8], _ status: Int = 400) {
        self.name = name
        self.request = bytes
        self.status = status
        self.target = .proxy
    }

    var testDescription: String { self.name }
}

private let ok = "Host: localhost\r\n"

private func chunked(_ body: String) -> String {
    "POST /echo HTTP/1.1\r\n\(ok)Transfer-Encoding: chunked\r\n\r\n\(body)"
}

private let malformedCases: [MalformedCase] = [
    // Framing: Content-Length and Transfer-Encoding (RFC 9112 §6).
    .init("CL with TE", "POST / HTTP/1.1\r\n\(ok)Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
    .init("TE with CL", "POST / HTTP/1.1\r\n\(ok)Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
    .init("differing duplicate CL", "POST / HTTP/1.1\r\n\(ok)Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
    .init("differing CL list", "POST / HTTP/1.1\r\n\(ok)Content-Length: 3, 4\r\n\r\nabcd"),
    .init("non-numeric CL", "POST / HTTP/1.1\r\n\(ok)Content-Length: abc\r\n\r\n"),
    .init("negative CL", "POST / HTTP/1.1\r\n\(ok)Content-Length: -1\r\n\r\n"),
    .init("signed CL", "POST / HTTP/1.1\r\n\(ok)Content-Length: +5\r\n\r\n"),
    .init("empty CL", "POST / HTTP/1.1\r\n\(ok)Content-Length: \r\n\r\n"),
    .init("CL overflow", "POST / HTTP/1.1\r\n\(ok)Content-Length: 99999999999999999999\r\n\r\n"),
    .init("CL hex", "POST / HTTP/1.1\r\n\(ok)Content-Length: 0x10\r\n\r\n"),
    .init("unknown transfer coding", "POST / HTTP/1.1\r\n\(ok)Transfer-Encoding: gzip\r\n\r\n"),
    .init("chunked twice", "POST / HTTP/1.1\r\n\(ok)Transfer-Encoding: chunked, chunked\r\n\r\n"),
    .init("chunked not last", "POST / HTTP/1.1\r\n\(ok)Transfer-Encoding: chunked, gzip\r\n\r\n"),
    .init("TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    // Header syntax (RFC 9112 §5, RFC 9110 §5.5).
    .init("obs-fold", "GET / HTTP/1.1\r\n\(ok)X-A: b\r\n c\r\n\r\n"),
    .init("obs-fold with tab", "GET / HTTP/1.1\r\n\(ok)X-A: b\r\n\tc\r\n\r\n"),
    .init("space before colon", "GET / HTTP/1.1\r\nHost : localhost\r\n\r\n"),
    .init("tab before colon", "GET / HTTP/1.1\r\n\(ok)X-A\t: b\r\n\r\n"),
    .init("bare CR in value", "GET / HTTP/1.1\r\n\(ok)X-A: a\rb\r\n\r\n"),
    .init("bare LF line ends", "GET / HTTP/1.1\nHost: localhost\n\n"),
    .init("bare LF after header", "GET / HTTP/1.1\r\n\(ok)X-A: b\n\r\n"),
    .init("NUL in value", "GET / HTTP/1.1\r\n\(ok)X-A: a\u{0}b\r\n\r\n"),
    .init("control character in value", "GET / HTTP/1.1\r\n\(ok)X-A: a\u{1}b\r\n\r\n"),
    .init("DEL in value", "GET / HTTP/1.1\r\n\(ok)X-A: a\u{7f}b\r\n\r\n"),
    .init("escape in value", "GET / HTTP/1.1\r\n\(ok)X-A: a\u{1b}[31mb\r\n\r\n"),
    .init("line without colon", "GET / HTTP/1.1\r\n\(ok)NoColonHere\r\n\r\n"),
    .init("empty header name", "GET / HTTP/1.1\r\n\(ok): value\r\n\r\n"),
    .init("invalid header name", "GET / HTTP/1.1\r\n\(ok)X(A): b\r\n\r\n"),
    .init(
        "invalid UTF-8 in value",
        bytes: Array("GET / HTTP/1.1\r\n\(ok)X-A: ".utf8) + [0xC3, 0x28] + Array("\r\n\r\n".utf8)
    ),
    // Host (RFC 9112 §3.2).
    .init("missing Host in HTTP/1.1", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"),
    .init("two Host headers", "GET / HTTP/1.1\r\n\(ok)\(ok)\r\n"),
    .init("Host with a space", "GET / HTTP/1.1\r\nHost: local host\r\n\r\n"),
    .init("Host with userinfo", "GET / HTTP/1.1\r\nHost: user@localhost\r\n\r\n"),
    // Request line (RFC 9112 §3).
    .init("double space", "GET  / HTTP/1.1\r\n\(ok)\r\n"),
    .init("space before the method", " GET / HTTP/1.1\r\n\(ok)\r\n"),
    .init("space after the version", "GET / HTTP/1.1 \r\n\(ok)\r\n"),
    .init("four parts", "GET / HTTP/1.1 x\r\n\(ok)\r\n"),
    .init("tab separator", "GET\t/ HTTP/1.1\r\n\(ok)\r\n"),
    .init("lowercase version", "GET / http/1.1\r\n\(ok)\r\n"),
    .init("version without minor", "GET / HTTP/1\r\n\(ok)\r\n"),
    .init("two-digit version", "GET / HTTP/11.1\r\n\(ok)\r\n"),
    .init("HTTP/0.9 request", "GET /\r\n\r\n"),
    .init("invalid method", "G(ET / HTTP/1.1\r\n\(ok)\r\n"),
    .init("fragment in target", "GET /a#b HTTP/1.1\r\n\(ok)\r\n"),
    .init("bad percent-encoding", "GET /a%zz HTTP/1.1\r\n\(ok)\r\n"),
    .init("truncated percent-encoding", "GET /a% HTTP/1.1\r\n\(ok)\r\n"),
    .init("non-ASCII target", bytes: Array("GET /caf".utf8) + [0xC3, 0xA9] + Array(" HTTP/1.1\r\n\(ok)\r\n".utf8)),
    .init("relative target", "GET foo HTTP/1.1\r\n\(ok)\r\n"),
    .init("asterisk for GET", "GET * HTTP/1.1\r\n\(ok)\r\n"),
    .init("absolute-form with userinfo", "GET http://user@localhost/ HTTP/1.1\r\n\(ok)\r\n"),
    .init("absolute-form with another scheme", "GET ftp://localhost/ HTTP/1.1\r\n\(ok)\r\n"),
    .init("HTTP/2 on an HTTP/1 port", "GET / HTTP/2.0\r\n\(ok)\r\n", 505),
    // Limits (`docs/reference/configuration.md`, "Limits").
    .init("request line too long", "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\(ok)\r\n", 414),
    .init(
        "header too large",
        "GET / HTTP/1.1\r\n\(ok)X-Big: " + String(repeating: "b", count: 70_000) + "\r\n\r\n",
        431
    ),
    .init("too many headers", "GET / HTTP/1.1\r\n\(ok)" + (0..<101).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431),
    // Policy checks whose failure is a 400 (`docs/reference/security.md`).
    .init("two Authorization headers", "GET / HTTP/1.1\r\n\(ok)Authorization: a\r\nAuthorization: b\r\n\r\n"),
    // Chunked bodies (RFC 9112 §7.1), seen by a handler that reads the body.
    .init("chunk size not hex", chunked("zz\r\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("negative chunk size", chunked("-5\r\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("chunk size overflow", chunked("FFFFFFFFFFFFFFFFFF\r\nx\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("chunk data without CRLF", chunked("5\r\nhelloXX0\r\n\r\n"), 400, .bodyReader),
    .init("chunk size with trailing space only", chunked("5 \r\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("empty chunk size", chunked("\r\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init(
        "chunk extension too long",
        chunked("5;" + String(repeating: "e", count: 17_000) + "\r\nhello\r\n0\r\n\r\n"),
        400,
        .bodyReader
    ),
    .init("control character in chunk extension", chunked("5;a\u{1}b\r\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("bare LF after chunk size", chunked("5\nhello\r\n0\r\n\r\n"), 400, .bodyReader),
    .init("obs-fold in trailer", chunked("5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n"), 400, .bodyReader),
    .init("space before colon in trailer", chunked("5\r\nhello\r\n0\r\nX-T : a\r\n\r\n"), 400, .bodyReader),
]

struct MalformedRequestTests {
    @Test func thereAreAtLeastFortyDistinctCases() {
        #expect(malformedCases.count >= 40)
        #expect(Set(malformedCases.map(\.name)).count == malformedCases.count)
    }

    @Test(arguments: malformedCases)
    func isRejectedAndTheConnectionClosed(_ testCase: MalformedCase) throws {
        let connection =
            testCase.target == .proxy
            ? EmbeddedProxy.connection()
            : EmbeddedConnection(handler: EchoHandler())
        connection.send(testCase.request)
        let response = try #require(try connection.readResponse())
        #expect(response.status == testCase.status)
        let expectedCode: String
        switch testCase.status {
        case 414: expectedCode = "uri_too_long"
        case 431: expectedCode = "headers_too_large"
        case 505: expectedCode = "http_version_not_supported"
        default: expectedCode = "bad_request"
        }
        #expect(response.header("X-Tokenproxy-Error") == expectedCode)
        #expect(response.header("Connection") == "close")
        #expect(response.header("Content-Type") == "application/json")
        // Nothing follows the answer, and the server ends its side (a lingering close).
        #expect(connection.takeWritten().isEmpty)
        #expect(connection.outputEnded)
        connection.endInput()
        #expect(connection.isClosed)
    }
}
