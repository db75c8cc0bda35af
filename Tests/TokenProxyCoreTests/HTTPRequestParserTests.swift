import Testing

@testable import TokenProxyHTTP
@testable import TokenProxySupport

/// Drives the pure parser over input delivered `step` bytes at a time, as a socket might.
private struct ParserDriver {
    enum Event: Equatable {
        case head(HTTPRequestHead)
        case body([UInt8])
        case end
        case failed(ProxyError.Code)
    }

    static func run(_ input: [UInt8], step: Int = .max, limits: HTTPParserLimits = HTTPParserLimits()) -> [Event] {
        var parser = HTTPRequestParser(limits: limits)
        var pending: [UInt8] = []
        var events: [Event] = []
        var offset = 0
        while true {
            let take = min(step, input.count - offset)
            pending += input[offset..<offset + take]
            offset += take
            while true {
                let (outcome, consumed) = pending.withUnsafeBufferPointer { parser.next($0) }
                var done = false
                switch outcome {
                case .head(let head): events.append(.head(head))
                case .body(let range):
                    // Merge adjacent body events so results do not depend on the step size.
                    if case .body(let previous) = events.last {
                        events[events.count - 1] = .body(previous + pending[range])
                    } else {
                        events.append(.body(Array(pending[range])))
                    }
                case .end: events.append(.end)
                case .needMoreData: done = true
                case .failed(let error):
                    events.append(.failed(error.code))
                    return events
                }
                pending.removeFirst(consumed)
                if done { break }
            }
            if offset == input.count { return events }
        }
    }

    static func run(_ text: String, step: Int = .max, limits: HTTPParserLimits = HTTPParserLimits()) -> [Event] {
        self.run(Array(text.utf8), step: step, limits: limits)
    }
}

private func head(_ events: [ParserDriver.Event], _ index: Int = 0) -> HTTPRequestHead? {
    let heads = events.compactMap { event -> HTTPRequestHead? in
        if case .head(let head) = event { return head }
        return nil
    }
    return index < heads.count ? heads[index] : nil
}

struct HTTPRequestParserTests {
    @Test func parsesASimpleGet() throws {
        let events = ParserDriver.run(
            "GET /gh/repos?per_page=5 HTTP/1.1\r\nHost: localhost:8080\r\nAccept: */*\r\n\r\n"
        )
        let request = try #require(head(events))
        #expect(events.count == 2 && events.last == .end)
        #expect(request.method == "GET")
        #expect(request.path == "/gh/repos")
        #expect(request.query == "per_page=5")
        #expect(request.version == .http1_1)
        #expect(request.targetForm == .origin)
        #expect(request.headers.first("host") == "localhost:8080")
        #expect(request.framing == .none)
        #expect(request.keepAlive)
        #expect(!request.expectsContinue)
    }

    @Test(arguments: [1, 2, 7, 1000])
    func contentLengthBodyArrivesWhateverTheSegmentation(step: Int) throws {
        let events = ParserDriver.run(
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello worldGET /y HTTP/1.1\r\nHost: a\r\n\r\n",
            step: step
        )
        #expect(events.count == 5)
        #expect(events[1] == .body(Array("hello world".utf8)))
        #expect(events[2] == .end)
        #expect(head(events, 1)?.path == "/y")
        #expect(events[4] == .end)
    }

    @Test(arguments: [1, 3, 1000])
    func chunkedBodyWithExtensionsAndTrailers(step: Int) throws {
        let request =
            "POST /u HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6 ; quoted=\"x\"\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n"
        let events = ParserDriver.run(request, step: step)
        #expect(head(events)?.framing == .chunked)
        #expect(events[1] == .body(Array("hello world".utf8)))
        #expect(events.last == .end)
        #expect(events.count == 3)
    }

    @Test func threePipelinedRequestsComeOutInOrder() {
        let requests = ["/one", "/two", "/three"].map { "GET \($0) HTTP/1.1\r\nHost: a\r\n\r\n" }
        let events = ParserDriver.run(requests.joined())
        #expect(events.count == 6)
        #expect([0, 1, 2].compactMap { head(events, $0)?.path } == ["/one", "/two", "/three"])
    }

    @Test func absoluteFormKeepsTheAuthority() throws {
        let request = try #require(head(ParserDriver.run("GET http://localhost:8080/a?b HTTP/1.1\r\nHost: x\r\n\r\n")))
        #expect(request.targetForm == .absolute(authority: "localhost:8080"))
        #expect(request.authority == "localhost:8080")
        #expect(request.path == "/a")
        #expect(request.query == "b")
    }

    @Test func http10KeepAliveOnlyWhenAsked() throws {
        let plain = try #require(head(ParserDriver.run("GET / HTTP/1.0\r\n\r\n")))
        #expect(!plain.keepAlive)
        let asked = try #require(head(ParserDriver.run("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")))
        #expect(asked.keepAlive)
        let closing = try #require(head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")))
        #expect(!closing.keepAlive)
    }

    @Test(arguments: [
        // Transfer codings: only `chunked`, alone, in any case; empty list elements are skipped.
        ("Transfer-Encoding: Chunked", true),
        ("Transfer-Encoding: , chunked ,", true),
        ("Transfer-Encoding: chunked, chunked", false),
        ("Transfer-Encoding: gzip, chunked", false),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", false),
        ("Transfer-Encoding: chunkedx", false),
        ("Transfer-Encoding: chunked\r\nContent-Length: 3", false),
    ])
    func transferCodingsAreReadAcrossFields(fields: String, accepted: Bool) throws {
        let events = ParserDriver.run("POST / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n\r\n0\r\n\r\n")
        #expect((head(events)?.framing == .chunked) == accepted, "\(fields)")
    }

    @Test func connectionExpectAndHostAreReadFromTheirFields() throws {
        let listed = try #require(
            head(ParserDriver.run("GET / HTTP/1.0\r\nConnection: TE, Keep-Alive\r\nConnection: x\r\n\r\n"))
        )
        #expect(listed.keepAlive)
        #expect(listed.host == nil)
        let both = try #require(
            head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, CLOSE\r\n\r\n"))
        )
        #expect(!both.keepAlive)
        #expect(both.host == "a")
        #expect(both.authority == "a")
        let expecting = try #require(
            head(ParserDriver.run("PUT / HTTP/1.1\r\nHost: b:8\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n"))
        )
        #expect(expecting.expectsContinue)
        #expect(expecting.host == "b:8")
        // List elements are tokens, compared as ASCII bytes (RFC 9110 §5.6.2): a Kelvin sign is
        // not a `k`.
        let kelvin = try #require(head(ParserDriver.run("GET / HTTP/1.0\r\nConnection: \u{212A}eep-alive\r\n\r\n")))
        #expect(!kelvin.keepAlive)
        #expect(
            head(ParserDriver.run("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chun\u{212A}ed\r\n\r\n")) == nil
        )
        #expect(head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")) == nil)
        #expect(head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")) == nil)
    }

    @Test func expectContinueOnlyWithABody() throws {
        let withBody = try #require(
            head(ParserDriver.run("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"))
        )
        #expect(withBody.expectsContinue)
        let without = try #require(head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n")))
        #expect(!without.expectsContinue)
    }

    @Test func identicalDuplicateContentLengthsAreOne() throws {
        let request = try #require(
            head(ParserDriver.run("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok"))
        )
        #expect(request.framing == .contentLength(2))
    }

    @Test func leadingEmptyLinesAreIgnored() {
        #expect(head(ParserDriver.run("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"))?.path == "/")
    }

    @Test func laterMinorVersionsAreServedAsHTTP11() {
        #expect(head(ParserDriver.run("GET / HTTP/1.7\r\nHost: a\r\n\r\n"))?.version == .http1_1)
    }

    @Test func headerValuesAreTrimmedAndUTF8IsKept() throws {
        let request = try #require(
            head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nX-Name: \t caf\u{e9} \t\r\n\r\n"))
        )
        #expect(request.headers.first("x-name") == "caf\u{e9}")
    }

    @Test func requestLineLimitIsExact() {
        let limits = HTTPParserLimits(maxRequestLineBytes: 64)
        let fits = "GET /" + String(repeating: "a", count: 64 - 14) + " HTTP/1.1"
        #expect(fits.utf8.count == 64)
        #expect(head(ParserDriver.run(fits + "\r\nHost: a\r\n\r\n", limits: limits)) != nil)
        let over = "GET /" + String(repeating: "a", count: 64 - 13) + " HTTP/1.1"
        #expect(ParserDriver.run(over + "\r\nHost: a\r\n\r\n", limits: limits).last == .failed(.uriTooLong))
        // Without any line end, the limit still applies once it is passed.
        #expect(
            ParserDriver.run("GET /" + String(repeating: "a", count: 100), limits: limits).last == .failed(.uriTooLong)
        )
    }

    @Test(arguments: [1, 3, 1000])
    func aLineOverItsLimitIsRefusedAlikeHoweverItArrives(step: Int) {
        // Past the limit the line holds a bare LF (a request line) or a NUL and bare CR (a
        // header line): the limit decides, whether the bytes come one at a time or at once.
        let limits = HTTPParserLimits(maxRequestLineBytes: 64, maxHeaderBytes: 64)
        let requestLine = "GET /" + String(repeating: "a", count: 80) + "\n"
        #expect(ParserDriver.run(requestLine, step: step, limits: limits) == [.failed(.uriTooLong)])
        let headerLine = "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 80) + "\u{0}\rx\r\n\r\n"
        #expect(ParserDriver.run(headerLine, step: step, limits: limits) == [.failed(.headersTooLarge)])
    }

    @Test func headerCountLimitIsExact() {
        let limits = HTTPParserLimits(maxHeaderCount: 5)
        let four = (0..<4).map { "X-\($0): v\r\n" }.joined()
        #expect(head(ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\n" + four + "\r\n", limits: limits)) != nil)
        let five = (0..<5).map { "X-\($0): v\r\n" }.joined()
        #expect(
            ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\n" + five + "\r\n", limits: limits).last
                == .failed(.headersTooLarge)
        )
    }

    @Test func headerBytesLimitAppliesWithoutALineEnd() {
        let limits = HTTPParserLimits(maxHeaderBytes: 128)
        let events = ParserDriver.run(
            "GET / HTTP/1.1\r\nX-Big: " + String(repeating: "b", count: 200),
            step: 10,
            limits: limits
        )
        #expect(events.last == .failed(.headersTooLarge))
    }

    @Test func chunkExtensionBudgetIsPerRequest() {
        let limits = HTTPParserLimits(maxChunkExtensionBytes: 20)
        let chunks = String(repeating: "1;abcdefgh\r\nx\r\n", count: 3)
        let events = ParserDriver.run(
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + "0\r\n\r\n",
            limits: limits
        )
        #expect(events.last == .failed(.badRequest))
    }

    @Test(
        arguments: [
            ("/a?", "/a", ""), ("/a?b?c", "/a", "b?c"), ("/a", "/a", nil), ("/?x=1", "/", "x=1"),
            ("/a/b%2Fc?d=%20", "/a/b%2Fc", "d=%20"),
        ] as [(String, String, String?)]
    )
    func theOriginFormTargetSplitsAtTheFirstQuestionMark(target: String, path: String, query: String?) throws {
        let request = try #require(head(ParserDriver.run("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")))
        #expect(request.target == target)
        #expect(request.path == path)
        #expect(request.query == query)
        #expect(request.targetForm == .origin)
    }

    @Test func aFailureLetsGoOfTheHeadBeingRead() {
        var parser = HTTPRequestParser()
        let bad = Array(
            "GET / HTTP/1.1\r\nHost: a\r\nX-Long: \(String(repeating: "v", count: 4000))\r\nBad Header: x\r\n".utf8
        )
        let outcome = bad.withUnsafeBufferPointer { parser.next($0).outcome }
        guard case .failed = outcome else {
            Issue.record("expected failure, got \(outcome)")
            return
        }
        #expect(parser.partial.headers.count == 0)
        #expect(parser.partial.headerBytes == 0)
    }

    @Test func aFailedParserStaysFailed() {
        var parser = HTTPRequestParser()
        let bad = Array("GET / HTTP/1.1\r\nBad Header: x\r\n\r\n".utf8)
        let first = bad.withUnsafeBufferPointer { parser.next($0) }
        guard case .failed = first.outcome else {
            Issue.record("expected failure, got \(first.outcome)")
            return
        }
        let good = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let second = good.withUnsafeBufferPointer { parser.next($0) }
        guard case .failed = second.outcome else {
            Issue.record("a failed parser accepted more input")
            return
        }
    }

    @Test(arguments: [1, 5, 1000])
    func manyFieldsKeepTheirOrderWhateverTheSegmentation(step: Int) {
        let fields = (0..<40).map { "X-Field-\($0): value \($0)\r\n" }.joined()
        let events = ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\n\(fields)\r\n", step: step)
        let headers = head(events)?.headers.map { "\($0.name)=\($0.value)" }
        #expect(headers == ["Host=a"] + (0..<40).map { "X-Field-\($0)=value \($0)" })
    }

    @Test func byteAtATimeDeliveryParsesALongHeader() {
        // 60 KiB of header delivered one byte per call parses; the scan resumes where it stopped.
        let value = String(repeating: "v", count: 60_000)
        let events = ParserDriver.run("GET / HTTP/1.1\r\nHost: a\r\nX-Long: \(value)\r\n\r\n", step: 1)
        #expect(head(events)?.headers.first("X-Long")?.count == 60_000)
    }
}

/// The request line's method, target, path and query as strings, whichever way they are
/// made: a common method is its literal, any other is decoded from the bytes (case kept, since
/// methods are case-sensitive, RFC 9110 §9.1), and a target without a query is its own path.
struct RequestLineStringsTests {
    @Test(arguments: [
        "GET", "PUT", "POST", "HEAD", "PATCH", "DELETE", "OPTIONS", "get", "Get", "GETS", "GE", "PROPFIND", "M-SEARCH",
        "OPTIONX", "POSTS",
    ])
    func methodsAreTheirBytes(method: String) throws {
        let line = Array("\(method) /a/b?c=d HTTP/1.1".utf8)
        let parsed = try line.withUnsafeBufferPointer { try RequestLineParser.parse($0).get() }
        #expect(parsed.method == method)
        #expect(parsed.target == "/a/b?c=d" && parsed.path == "/a/b" && parsed.query == "c=d")
    }

    @Test(arguments: ["/", "/a/b", "/a-long-path-that-does-not-fit-in-a-small-string/x"])
    func aTargetWithoutAQueryIsItsPath(target: String) throws {
        let line = Array("GET \(target) HTTP/1.1".utf8)
        let parsed = try line.withUnsafeBufferPointer { try RequestLineParser.parse($0).get() }
        #expect(parsed.target == target && parsed.path == target && parsed.query == nil)
    }
}
