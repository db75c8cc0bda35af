extension HTTPRequestParser {
    enum LineResult {
        /// A line whose content ends at `end` (the CR) and whose CRLF ends before `next`.
        case line(end: Int, next: Int)
        case incomplete
        case tooLong
        case invalid(String)
    }

    /// Finds the next CRLF-terminated line of at most `limit` content bytes, resuming the
    /// scan where the previous call for the same line stopped. A CR not followed by LF, or
    /// an LF without a CR, is rejected (RFC 9112 §2.2: nothing ambiguous is accepted).
    /// Nothing past the limit is looked at: a line longer than `limit` is `tooLong` whatever
    /// it holds further on, so the answer does not depend on how the bytes arrived.
    mutating func readLine(_ input: UnsafeBufferPointer<UInt8>, limit: Int) -> LineResult {
        var index = self.scanned
        while index < input.count {
            guard index <= limit else {
                self.scanned = index
                return .tooLong
            }
            switch input[index] {
            case UInt8(ascii: "\n"):
                return .invalid("line ends with a bare LF")
            case UInt8(ascii: "\r"):
                guard index + 1 < input.count else {
                    self.scanned = index
                    return .incomplete
                }
                guard input[index + 1] == UInt8(ascii: "\n") else {
                    return .invalid("bare CR in the request")
                }
                self.scanned = 0
                return .line(end: index, next: index + 2)
            default:
                index += 1
            }
        }
        self.scanned = index
        return index > limit ? .tooLong : .incomplete
    }

    /// Checks the framing and connection fields of a complete head and moves to the body.
    mutating func finishHead(_ partial: PartialHead, consumed: Int) -> (Step, Int) {
        let headers = partial.headers
        let version = partial.version

        // The fields that frame the request and its connection, read in one pass: each name
        // is told by its length first, and values are read as bytes where they lie.
        var fields = FramingFields()
        headers.forEachField { name, value in fields.read(name, value) }

        // RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host; more is never valid.
        if fields.hosts > 1 || (version == .http1_1 && fields.hosts != 1) {
            return self.fail(.badRequest, "an HTTP/1.1 request needs exactly one Host header")
        }
        if !fields.validHost {
            return self.fail(.badRequest, "invalid Host header")
        }

        var framing = RequestFraming.none
        let contentLength = fields.lengths.result
        if fields.hasTransferEncoding {
            // RFC 9112 §6.1: HTTP/1.0 has no chunked coding; the framing is faulty.
            guard version == .http1_1 else {
                return self.fail(.badRequest, "Transfer-Encoding in an HTTP/1.0 request")
            }
            // RFC 9112 §6.3 rule 3: both present is a smuggling vector; reject, never guess.
            guard contentLength == nil else {
                return self.fail(.badRequest, "both Content-Length and Transfer-Encoding")
            }
            guard fields.codings == 1, fields.onlyCodingIsChunked else {
                return self.fail(.badRequest, "unsupported Transfer-Encoding (only chunked is accepted)")
            }
            framing = .chunked
        } else if let contentLength {
            switch contentLength {
            case .failure(let error):
                self.state = .failed(error)
                return (.yield(.failed(error)), 0)
            case .success(let length):
                framing = .contentLength(length)
            }
        }

        let keepAlive: Bool
        if fields.connectionClose {
            keepAlive = false
        } else {
            keepAlive = version == .http1_1 || fields.connectionKeepAlive
        }
        let expectsContinue =
            version == .http1_1 && framing != .none && framing != .contentLength(0) && fields.expectsContinue

        let head = HTTPRequestHead(
            method: partial.method,
            target: partial.target,
            targetForm: partial.targetForm,
            path: partial.path,
            query: partial.query,
            version: version,
            headers: headers,
            host: fields.host,
            framing: framing,
            expectsContinue: expectsContinue,
            keepAlive: keepAlive
        )
        switch framing {
        case .none, .contentLength(0):
            self.state = .endOfMessage
        case .contentLength(let length):
            self.state = .fixedBody(remaining: length)
        case .chunked:
            self.chunkExtensionBytes = 0
            self.state = .chunkSize
        }
        return (.yield(.head(head)), consumed)
    }

    mutating func finishRequest() {
        self.state = .requestLine(leadingEmptyBytes: 0)
        self.scanned = 0
        self.chunkExtensionBytes = 0
    }
}

/// What a request head's framing and connection fields say (Host, Content-Length,
/// Transfer-Encoding, Connection, Expect), gathered field by field in one pass.
struct FramingFields {
    /// How many Host fields there are, and whether each is a valid host.
    var hosts = 0
    var validHost = true
    /// The first Host field's value.
    var host: String?
    var lengths = HTTPGrammar.ContentLengthFields()
    var hasTransferEncoding = false
    /// How many transfer codings all Transfer-Encoding fields list, and whether the one they
    /// list, when it is one, is `chunked`.
    var codings = 0
    var onlyCodingIsChunked = false
    /// Whether a Connection field lists `close`, and `keep-alive`.
    var connectionClose = false
    var connectionKeepAlive = false
    /// Whether an Expect field lists `100-continue`.
    var expectsContinue = false

    mutating func read(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        switch name.count {
        case 4 where HTTPHeaders.name(name, is: "host"):
            self.hosts += 1
            self.validHost = self.validHost && HTTPGrammar.isValidHost(bytes: value)
            if self.host == nil {
                self.host = String(decoding: value, as: UTF8.self)
            }
        case 6 where HTTPHeaders.name(name, is: "expect"):
            HTTPGrammar.forEachListElement(value) { element in
                if Self.element(element, is: "100-continue") { self.expectsContinue = true }
            }
        case 10 where HTTPHeaders.name(name, is: "connection"):
            HTTPGrammar.forEachListElement(value) { element in
                if Self.element(element, is: "close") {
                    self.connectionClose = true
                } else if Self.element(element, is: "keep-alive") {
                    self.connectionKeepAlive = true
                }
            }
        case 14 where HTTPHeaders.name(name, is: "content-length"):
            self.lengths.read(value)
        case 17 where HTTPHeaders.name(name, is: "transfer-encoding"):
            self.hasTransferEncoding = true
            HTTPGrammar.forEachListElement(value) { element in
                self.codings += 1
                self.onlyCodingIsChunked = Self.element(element, is: "chunked")
            }
        default:
            break
        }
    }

    /// Whether a list element is the lowercase literal `literal`, ignoring ASCII case.
    private static func element(_ element: UnsafeBufferPointer<UInt8>, is literal: StaticString) -> Bool {
        HTTPHeaders.name(element, is: literal)
    }
}
