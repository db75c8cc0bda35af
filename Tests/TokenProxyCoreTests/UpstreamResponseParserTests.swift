import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxyUpstream

struct UpstreamResponseParserTests {
    private let match = Router.Match(
        route: TestProxy.configuration(
            #"{"providers": {}, "routes": [{"path_prefix": "/gh", "upstream": "https://api.example.com/v3"}]}"#
        ).routes[0],
        upstreamPath: "/x"
    )

    private var base: UpstreamURL.Base {
        get throws { try UpstreamURL.parseBase("https://api.example.com/v3") }
    }

    private func parse(_ lines: [String], head: Bool = false) throws -> HTTPResponseHead {
        var parser = UpstreamResponseParser()
        for line in lines {
            _ = parser.line(line + "\r\n")
        }
        #expect(parser.line("\r\n") == .complete)
        let match = self.match
        let base = try self.base
        return parser.head(requestIsHead: head) { LocationRewrite.rewrite($0, match: match, base: base) }
    }

    @Test func hopByHopFieldsAndThoseConnectionNamesAreDropped() throws {
        let head = try self.parse([
            "HTTP/1.1 200 OK", "Connection: keep-alive, X-Private", "X-Private: 1", "Keep-Alive: timeout=5",
            "Transfer-Encoding: chunked", "Upgrade: h2c", "Proxy-Authenticate: Basic", "Trailer: X-T", "X-Kept: yes",
        ])
        #expect(head.headers.map(\.name) == ["X-Kept"])
        #expect(head.contentLength == nil)
    }

    @Test func aConnectionFieldListingOnlyHopByHopNamesDropsNothingElse() throws {
        let head = try self.parse([
            "HTTP/1.1 200 OK", "Connection: , keep-alive ,close", "X-Kept: yes", "Server: nginx",
        ])
        #expect(head.headers.map(\.name) == ["X-Kept", "Server"])
        let named = try self.parse(["HTTP/1.1 200 OK", "X-Private: 1", "connection: close,\tx-private ", "X-Kept: yes"])
        #expect(named.headers.map(\.name) == ["X-Kept"])
    }

    @Test func everyFieldAConnectionFieldListsIsDroppedCloseIncluded() throws {
        let head = try self.parse([
            "HTTP/1.1 200 OK", "Close: x", "X-A: 1", "Connection: close, X-a", "x-A: 2", "connection: ,X-B ,",
            "X-B: 3", "X-C: 4",
        ])
        #expect(head.headers.map(\.name) == ["X-C"])
        // `close` alone names a field too.
        let closing = try self.parse(["HTTP/1.1 200 OK", "Connection: close", "Close: x", "X-C: 4"])
        #expect(closing.headers.map(\.name) == ["X-C"])
    }

    @Test func aLocationThatIsNotUTF8GoesOnAsItCame() throws {
        var parser = UpstreamResponseParser()
        #expect(parser.line("HTTP/1.1 302 Found\r\n") == .pending)
        let location: [UInt8] = Array("Location: https://api.example.com/v3/caf".utf8) + [0xE9, 0x0D, 0x0A]
        #expect(location.withUnsafeBytes { parser.line(bytes: $0) } == .pending)
        #expect(parser.line("\r\n") == .complete)
        let head = parser.head(requestIsHead: false) { _ in "/rewritten" }
        var value: [UInt8] = []
        head.headers.forEachField { _, bytes in value = Array(bytes) }
        #expect(value == Array("https://api.example.com/v3/caf".utf8) + [0xE9])
    }

    @Test func aRewrittenLocationKeepsItsPlaceAndTheFramingStaysKnownAfterTheHead() throws {
        var parser = UpstreamResponseParser()
        for line in ["HTTP/1.1 302 Found", "X-A: 1", "Location: https://api.example.com/v3/x", "X-B: 2"] {
            #expect(parser.line(line + "\r\n") == .pending)
        }
        #expect(parser.line("Content-Length: 5\r\n") == .pending)
        #expect(parser.line("\r\n") == .complete)
        let head = parser.head(requestIsHead: false) { _ in "/proxied/x" }
        #expect(head.headers == HTTPHeaders([("X-A", "1"), ("Location", "/proxied/x"), ("X-B", "2")]))
        #expect(head.contentLength == 5)
        // The fields were handed over; what the parser read of the framing was not.
        #expect(parser.value(of: "x-a") == nil)
        #expect(parser.declaredLength == .length(5))
        #expect(parser.framingProblem == nil)
    }

    @Test func aFoldedLineIsJoinedAndAValueWithAControlCharacterDropped() throws {
        let head = try self.parse(["HTTP/1.1 200 OK", "X-Folded: one", " \t two ", "X-Bad: a\u{01}b", "X-Kept: yes"])
        #expect(head.headers == HTTPHeaders([("X-Folded", "one two"), ("X-Kept", "yes")]))
    }

    @Test func aFoldContinuesTheListItsFieldWentTo() throws {
        // A control character folded into a relayed field drops that field.
        let folded = try self.parse(["HTTP/1.1 200 OK", "X-Folded: one", " t\u{01}wo", "X-Kept: yes"])
        #expect(folded.headers.map(\.name) == ["X-Kept"])
        // A fold that continues a Connection field names fields too, before and after it.
        let listed = try self.parse([
            "HTTP/1.1 200 OK", "X-Before: 1", "Connection: close,", "  x-before, X-After", "X-After: 2", "X-Kept: yes",
        ])
        #expect(listed.headers.map(\.name) == ["X-Kept"])
        // A fold that continues a framing field changes the framing read.
        for (lines, problem) in [
            (["Content-Length: 10", " ,20"], "the upstream's Content-Length is invalid or conflicting"),
            (
                ["Transfer-Encoding: chunked", "\t, gzip", "Content-Length: 3"],
                "the upstream's transfer coding is not chunked"
            ),
            (["Content-Length: 10", " , 10"], nil),
        ] {
            var parser = UpstreamResponseParser()
            for line in ["HTTP/1.1 200 OK"] + lines + [""] {
                _ = parser.line(line + "\r\n")
            }
            #expect(parser.headComplete)
            #expect(parser.framingProblem == problem, "\(lines)")
        }
    }

    @Test func valuesAreReadInTheOrderTheyCameAndNoFoldFollowsTheHead() {
        var parser = UpstreamResponseParser()
        for line in ["HTTP/1.1 200 OK", "X-A: a\u{01}", "X-A: b", "Upgrade: u", "x-a: c"] {
            #expect(parser.line(line + "\r\n") == .pending)
        }
        #expect(parser.line("\r\n") == .complete)
        #expect(parser.value(of: "x-a") == "a\u{01}, b, c")
        #expect(parser.head(requestIsHead: false) { _ in nil }.headers.map(\.value) == ["b", "c"])
        #expect(parser.line(" folded\r\n") == .invalid)
    }

    @Test func hopByHopValuesStayReadableUntilTheHead() {
        var parser = UpstreamResponseParser()
        parser.switchingProtocolsIsFinal = true
        for line in ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", "upgrade: x"] {
            #expect(parser.line(line + "\r\n") == .pending)
        }
        #expect(parser.line("\r\n") == .complete)
        #expect(parser.value(of: "Upgrade") == "websocket, x")
        #expect(parser.value(of: "connection") == "Upgrade")
        #expect(parser.head(requestIsHead: false) { _ in nil }.headers.count == 0)
    }

    @Test func fieldNamesAreSortedAsTheHopByHopListSays() {
        let dropped = [
            "Connection", "keep-alive", "PROXY-AUTHENTICATE", "proxy-authorization", "Proxy-Connection", "TE",
            "trailer", "Transfer-Encoding", "upgrade", "content-length",
        ]
        // Names of the same lengths that are not on the list.
        let relayed = ["tx", "Updates", "locatio2", "Connectiox", "keep-alivx", "content-lengtx", "proxy-connectiox"]
        for name in dropped {
            #expect(Array(name.utf8).withUnsafeBytes { !UpstreamResponseParser.FieldKind($0).isRelayed }, "\(name)")
        }
        for name in relayed + ["Location", "Content-Type", "keep-alivE2", "Proxy-Authenticatx"] {
            #expect(Array(name.utf8).withUnsafeBytes { UpstreamResponseParser.FieldKind($0).isRelayed }, "\(name)")
        }
        #expect(Array("LOCATION".utf8).withUnsafeBytes { UpstreamResponseParser.FieldKind($0) } == .location)
        #expect(Array("connection".utf8).withUnsafeBytes { UpstreamResponseParser.FieldKind($0) } == .connection)
    }

    @Test func aLocationOnTheUpstreamsOriginIsRewrittenAndOthersAreRelayedAsTheyCame() throws {
        var parser = UpstreamResponseParser()
        for line in ["HTTP/1.1 302 Found\r\n", "Location: https://api.example.com/v3/x/y\r\n"] {
            #expect(parser.line(line) == .pending)
        }
        // obs-text in a value (RFC 9110 §5.5) goes on byte for byte.
        let latin1: [UInt8] = Array("X-Name: caf".utf8) + [0xE9] + Array("\r\n".utf8)
        #expect(latin1.withUnsafeBytes { parser.line(bytes: $0) } == .pending)
        #expect(parser.line("\r\n") == .complete)
        let match = self.match
        let base = try self.base
        let head = parser.head(requestIsHead: false) { LocationRewrite.rewrite($0, match: match, base: base) }
        #expect(
            head.headers.first("Location")
                == LocationRewrite.rewrite("https://api.example.com/v3/x/y", match: match, base: base)
        )
        var value: [UInt8] = []
        head.headers.forEachField { name, bytes in
            if HTTPHeaders.name(name, equals: "x-name") { value = Array(bytes) }
        }
        #expect(value == Array("caf".utf8) + [0xE9])
    }

    @Test func interimResponsesAreSkipped() {
        var parser = UpstreamResponseParser()
        #expect(parser.line("HTTP/1.1 100 Continue\r\n") == .pending)
        #expect(parser.line("\r\n") == .interim)
        #expect(parser.line("HTTP/1.1 201 Created\r\n") == .pending)
        #expect(parser.line("Content-Length: 3\r\n") == .pending)
        #expect(parser.line("\r\n") == .complete)
    }

    @Test func aReasonPhraseWithAControlCharacterIsReplaced() throws {
        let head = try self.parse(["HTTP/1.1 200 OK\rSet-Cookie: injected=1", "X-Kept: yes"])
        #expect(head.reason == nil)
        var encoder = ResponseEncoder()
        var keepAlive = true
        let bytes = encoder.encodeHead(head, requestVersion: .http1_1, requestIsHead: false, keepAlive: &keepAlive)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nX-Kept: yes\r\n"))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("injected"))
        #expect(try self.parse(["HTTP/1.1 299 Fine Enough"]).reason == "Fine Enough")
    }

    /// The phrase is relayed as it came, whether it is the standard one for the status (taken
    /// without decoding), another one, a standard one in another case, or one that belongs to
    /// another status.
    @Test(arguments: [
        ("HTTP/1.1 200 OK", "OK"), ("HTTP/1.1 200 ok", "ok"), ("HTTP/1.1 200 OKAY", "OKAY"), ("HTTP/1.1 200 O", "O"),
        ("HTTP/1.1 404 Not Found", "Not Found"), ("HTTP/1.1 404 OK", "OK"), ("HTTP/1.1 200 ", ""),
        ("HTTP/1.1 599 Unknown", "Unknown"), ("HTTP/1.1 200 OK\u{7F}", nil),
    ])
    func reasonPhrasesAreRelayedAsTheyCame(line: String, reason: String?) throws {
        #expect(try self.parse([line]).reason == reason)
    }

    @Test func http2StatusLinesAndLengthsAreRead() throws {
        let head = try self.parse(["HTTP/2 404", "content-length: 12", "content-type: text/plain"])
        #expect(head.status == 404)
        #expect(head.contentLength == 12)
        #expect(head.headers.first("content-type") == "text/plain")
    }

    @Test(
        arguments: [
            (["5"], .length(5)),
            (["5", " 5 ,5"], .length(5)),
            (["0005"], .length(5)),
            (["9223372036854775807"], .length(Int64.max)),
            (["\t42\t"], .length(42)),
            (["9223372036854775808"], .invalid),
            (["5", "6"], .invalid),
            (["5, 6"], .invalid),
            (["5,"], .invalid),
            (["5 6"], .invalid),
            ([""], .invalid),
            (["-5"], .invalid),
            (["+5"], .invalid),
            (["0x10"], .invalid),
            (["５"], .invalid),
            ([], .absent),
        ] as [([String], UpstreamResponseParser.DeclaredLength)]
    )
    func contentLengthFieldsDeclareOneLength(values: [String], expected: UpstreamResponseParser.DeclaredLength) {
        var parser = UpstreamResponseParser()
        _ = parser.line("HTTP/1.1 200 OK")
        for value in values {
            _ = parser.line("Content-Length: \(value)")
        }
        #expect(parser.line("") == .complete)
        #expect(parser.declaredLength == expected)
        #expect((parser.framingProblem == nil) == (expected != .invalid))
    }

    @Test(
        arguments: [
            (["chunked"], nil),
            (["gzip, Chunked"], nil),
            (["gzip", "chunked,"], nil),
            (["chunked", ""], nil),
            (["chunked", "gzip"], "the upstream's transfer coding is not chunked"),
            (["chunked, gzip"], "the upstream's transfer coding is not chunked"),
            (["chunked, ,"], "the upstream's transfer coding is not chunked"),
            ([""], "the upstream's Content-Length is invalid or conflicting"),
        ] as [([String], String?)]
    )
    func theLastTransferCodingDecides(values: [String], problem: String?) {
        var parser = UpstreamResponseParser()
        _ = parser.line("HTTP/1.1 200 OK")
        _ = parser.line("Content-Length: x")
        for value in values {
            _ = parser.line("Transfer-Encoding: \(value)")
        }
        #expect(parser.line("") == .complete)
        #expect(parser.framingProblem == problem)
        #expect(parser.hasTransferEncoding)
    }

    @Test func anInterimHeadsFramingIsForgotten() {
        var parser = UpstreamResponseParser()
        _ = parser.line("HTTP/1.1 103 Early Hints")
        _ = parser.line("Content-Length: x")
        #expect(parser.line("") == .interim)
        _ = parser.line("HTTP/1.1 200 OK")
        _ = parser.line("Content-Length: 3")
        #expect(parser.line("") == .complete)
        #expect(parser.declaredLength == .length(3))
        #expect(parser.framingProblem == nil)
    }

    @Test(arguments: [
        ("https://api.example.com/v3/next?p=2", "/gh/next?p=2"),
        ("https://API.example.com:443/v3", "/gh"),
        ("https://api.example.com/v3#frag", "/gh#frag"),
        ("https://api.example.com/other", "https://api.example.com/other"),
        ("https://api.example.com/v30/x", "https://api.example.com/v30/x"),
        ("https://evil.example/v3/x", "https://evil.example/v3/x"),
        ("http://api.example.com/v3/x", "http://api.example.com/v3/x"),
        ("https://api.example.com:8443/v3/x", "https://api.example.com:8443/v3/x"),
        ("/relative/path", "/relative/path"),
    ])
    func locationsOnTheUpstreamOriginAreRewritten(location: String, expected: String) throws {
        #expect(LocationRewrite.rewrite(location, match: self.match, base: try self.base) == expected)
    }
}
