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

        // RFC 9112 §3.2: an HTTP/1.1 request carries exactly one Host; more is never valid.
        var hosts = 0
        var validHost = true
        headers.forEachField { name, value in
            guard HTTPHeaders.name(name, is: "host") else { return }
            hosts += 1
            validHost = validHost && HTTPGrammar.isValidHost(bytes: value)
        }
        if hosts > 1 || (version == .http1_1 && hosts != 1) {
            return self.fail(.badRequest, "an HTTP/1.1 request needs exactly one Host header")
        }
        if !validHost {
            return self.fail(.badRequest, "invalid Host header")
        }

        var framing = RequestFraming.none
        let contentLength = HTTPGrammar.contentLength(in: headers)
        if headers.contains("Transfer-Encoding") {
            // RFC 9112 §6.1: HTTP/1.0 has no chunked coding; the framing is faulty.
            guard version == .http1_1 else {
                return self.fail(.badRequest, "Transfer-Encoding in an HTTP/1.0 request")
            }
            // RFC 9112 §6.3 rule 3: both present is a smuggling vector; reject, never guess.
            guard contentLength == nil else {
                return self.fail(.badRequest, "both Content-Length and Transfer-Encoding")
            }
            guard headers.tokens("Transfer-Encoding") == ["chunked"] else {
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

        let connection = headers.tokens("Connection")
        let keepAlive: Bool
        if connection.contains("close") {
            keepAlive = false
        } else {
            keepAlive = version == .http1_1 || connection.contains("keep-alive")
        }
        let expectsContinue =
            version == .http1_1 && framing != .none && framing != .contentLength(0)
            && headers.tokens("Expect").contains("100-continue")

        let head = HTTPRequestHead(
            method: partial.method,
            target: partial.target,
            targetForm: partial.targetForm,
            path: partial.path,
            query: partial.query,
            version: version,
            headers: headers,
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
