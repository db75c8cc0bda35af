import Testing

@testable import TokenProxyHTTP

struct ResponseEncoderTests {
    private func encode(
        _ head: HTTPResponseHead,
        version: HTTPVersion = .http1_1,
        isHead: Bool = false,
        keepAlive: Bool = true
    ) -> (String, Bool, ResponseEncoder) {
        var encoder = ResponseEncoder()
        var keep = keepAlive
        let bytes = encoder.encodeHead(head, requestVersion: version, requestIsHead: isHead, keepAlive: &keep)
        return (String(decoding: bytes, as: UTF8.self), keep, encoder)
    }

    @Test func aHeadIsWrittenWithinItsFieldsBoundWhateverTheirRecordsHold() {
        // Removed and withheld records, a record over 1 KiB, one-byte fields (the tightest
        // record against its line) and a value grown by a fold: the head is written within the
        // bound and holds exactly the live fields.
        var headers = HTTPHeaders([("A", ""), ("B", "1"), ("Gone", "x"), ("Long", String(repeating: "v", count: 1500))])
        Array("Connection".utf8).withUnsafeBytes { name in
            Array("close".utf8).withUnsafeBytes { headers.addWithheld(name: name, value: $0) }
        }
        Array(", more".utf8).withUnsafeBytes { headers.appendToLastValue($0) }
        headers.add(name: "C", value: "")
        headers.remove(name: "gone")
        var head = HTTPResponseHead(status: 299, reason: "", headers: headers, contentLength: 0)
        head.fieldsChecked = true
        let (text, _, _) = self.encode(head, version: .http1_0)
        let long = String(repeating: "v", count: 1500)
        #expect(
            text == "HTTP/1.1 299 \r\nA: \r\nB: 1\r\nLong: \(long)\r\nC: \r\nContent-Length: 0\r\n"
                + "Connection: keep-alive\r\n\r\n"
        )
        #expect(text.utf8.count <= headers.encodedSizeBound + "HTTP/1.1 299 \r\n".utf8.count + 64)
    }

    @Test func knownLengthUsesContentLength() {
        var (text, keep, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 5))
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
        #expect(keep)
        var body: [UInt8] = []
        encoder.encodeBody(Array("hello".utf8), into: &body)
        encoder.encodeEnd(into: &body)
        #expect(body == Array("hello".utf8))
    }

    @Test func bytesPastTheAnnouncedLengthAreNotEncoded() {
        var (_, _, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 5))
        var body: [UInt8] = []
        #expect(encoder.encodeBody(Array("hel".utf8), into: &body) == .accepted)
        #expect(!encoder.isBodyComplete)
        #expect(encoder.encodeBody(Array("loEXTRA".utf8), into: &body) == .exceedsLength)
        #expect(body == Array("hello".utf8))
        #expect(encoder.isBodyComplete)
    }

    @Test func unknownLengthIsChunkedForHTTP11() {
        var (text, _, encoder) = self.encode(HTTPResponseHead(status: 200))
        #expect(text.contains("Transfer-Encoding: chunked\r\n"))
        var body: [UInt8] = []
        encoder.encodeBody(Array("0123456789abcdefX".utf8), into: &body)
        encoder.encodeBody([UInt8](), into: &body)
        encoder.encodeEnd(into: &body)
        #expect(String(decoding: body, as: UTF8.self) == "11\r\n0123456789abcdefX\r\n0\r\n\r\n")
    }

    @Test func unknownLengthForHTTP10EndsWithTheConnection() {
        let (text, keep, _) = self.encode(HTTPResponseHead(status: 200), version: .http1_0)
        #expect(!keep)
        #expect(text.contains("Connection: close\r\n"))
        #expect(!text.contains("Transfer-Encoding"))
    }

    @Test func headAnswersKeepTheLengthButSendNoBody() {
        var (text, _, encoder) = self.encode(HTTPResponseHead(status: 200, contentLength: 42), isHead: true)
        #expect(text.contains("Content-Length: 42\r\n"))
        var body: [UInt8] = []
        encoder.encodeBody(Array("x".utf8), into: &body)
        #expect(body.isEmpty)
    }

    @Test func noContentHasNoFraming() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 204))
        #expect(!text.contains("Content-Length"))
        #expect(!text.contains("Transfer-Encoding"))
    }

    @Test func framingAndUnsafeFieldsFromHandlersAreDropped() {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Length", value: "999")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Connection", value: "keep-alive")
        headers.add(name: "X-Split", value: "a\r\nInjected: yes")
        headers.add(name: "Bad Name", value: "v")
        headers.add(name: "X-Fine", value: "ok")
        let (text, _, _) = self.encode(HTTPResponseHead(status: 200, headers: headers, contentLength: 0))
        #expect(text == "HTTP/1.1 200 OK\r\nX-Fine: ok\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func closingConnectionsAnnounceIt() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 200, contentLength: 0), keepAlive: false)
        #expect(text.hasSuffix("Connection: close\r\n\r\n"))
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 65535, 1_048_576, Int64.max])
    func numbersAreWrittenInDecimalAndHex(value: Int64) {
        var decimal: [UInt8] = []
        ResponseEncoder.appendDigits(value, to: &decimal)
        #expect(String(decoding: decimal, as: UTF8.self) == String(value))
        var hex: [UInt8] = []
        ResponseEncoder.appendDigits(value, radix: 16, to: &hex)
        #expect(String(decoding: hex, as: UTF8.self) == String(value, radix: 16))
    }

    @Test func aLargeLengthAndAnUnusualStatusAreWrittenExactly() {
        let (text, _, _) = self.encode(HTTPResponseHead(status: 599, contentLength: 8_589_934_592))
        #expect(text == "HTTP/1.1 599 Unknown\r\nContent-Length: 8589934592\r\n\r\n")
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 65535, 1_048_576, Int64.max])
    func theHeadWriterCountsTheDigitsItWrites(value: Int64) {
        for radix: Int64 in [10, 16] {
            let count = HeadWriter.digitCount(value, radix: radix)
            let text = withUnsafeTemporaryAllocation(byteCount: count, alignment: 1) { memory in
                var writer = HeadWriter(memory)
                writer.writeDigits(value, radix: radix)
                #expect(writer.written == count)
                return String(decoding: UnsafeRawBufferPointer(memory), as: UTF8.self)
            }
            #expect(text == String(value, radix: Int(radix)))
        }
    }

    /// Heads of every size, below and above what is laid out on the stack, checked and
    /// unchecked fields alike, come out byte for byte as the fields say, appended after what
    /// the buffer held.
    @Test(arguments: [0, 1, 500, 1_000, 1_024, 5_000])
    func headsOfAnySizeAreWrittenExactly(valueLength: Int) {
        let value = String(repeating: "v", count: valueLength)
        for checked in [false, true] {
            var head = HTTPResponseHead(
                status: 201,
                reason: "Made",
                headers: HTTPHeaders([("X-Long", value), ("ETag", "\"1\""), ("Empty", "")])
            )
            head.fieldsChecked = checked
            var encoder = ResponseEncoder()
            var keepAlive = true
            var bytes = Array("before".utf8)
            encoder.encodeHead(
                head,
                requestVersion: .http1_0,
                requestIsHead: false,
                keepAlive: &keepAlive,
                into: &bytes
            )
            #expect(
                String(decoding: bytes, as: UTF8.self)
                    == "beforeHTTP/1.1 201 Made\r\nX-Long: \(value)\r\nETag: \"1\"\r\nEmpty: \r\nConnection: close\r\n\r\n"
            )
            #expect(!keepAlive)
        }
    }
}
