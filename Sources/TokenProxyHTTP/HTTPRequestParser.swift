import TokenProxySupport

/// A strict HTTP/1.1 request parser (RFC 9112) as a pure state machine.
///
/// The parser does no I/O and keeps no bytes: the caller passes the unconsumed input on
/// every call and drops the `consumed` prefix afterwards. One call yields at most one
/// ``Outcome``. After ``Outcome/end`` the parser is ready for the next request, but it is
/// the caller that decides when to feed it again, which is how pipelined requests are
/// answered strictly in order. After ``Outcome/failed(_:)`` it stays failed: the framing
/// of the stream is lost and the connection must close.
///
/// Anything ambiguous is rejected rather than repaired (`docs/reference/http-behaviour.md`, "Parsing"): bare CR or LF,
/// obs-fold, whitespace before a colon, control characters in values, Content-Length with
/// Transfer-Encoding, differing Content-Lengths, invalid chunk sizes.
package struct HTTPRequestParser: Sendable {
    /// What one call produced.
    package enum Outcome: Sendable, Equatable {
        /// A complete, framing-checked request head.
        case head(HTTPRequestHead)
        /// Body bytes: this range of the input passed to the call.
        case body(Range<Int>)
        /// The request (head and body) is complete.
        case end
        /// The input holds no further complete element; call again with more bytes.
        case needMoreData
        /// The request is malformed; answer with this error and close the connection.
        case failed(ProxyError)
    }

    enum State: Sendable {
        case requestLine(leadingEmptyBytes: Int)
        /// Reading header fields into ``partial``.
        case headerLines
        case fixedBody(remaining: Int64)
        case endOfMessage
        case chunkSize
        case chunkData(remaining: Int64)
        case chunkDataEnd
        case trailers(bytes: Int, count: Int)
        case failed(ProxyError)
    }

    struct PartialHead: Sendable {
        var method = ""
        var target = ""
        var targetForm = RequestTargetForm.origin
        var path = ""
        var query: String?
        var version = HTTPVersion.http1_1
        var headers = HTTPHeaders()
        var headerBytes = 0
    }

    let limits: HTTPParserLimits
    var state: State = .requestLine(leadingEmptyBytes: 0)
    /// The head being read while in ``State/headerLines``. Kept outside the state, so that
    /// each field is added in place rather than the head being copied out of the state and
    /// back for every line.
    var partial = PartialHead()
    /// Bytes at the start of the pending input already scanned without finding a line end.
    var scanned = 0
    /// Chunk-extension bytes seen in the current body.
    var chunkExtensionBytes = 0

    /// Creates a parser enforcing `limits`.
    package init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Whether the parser is between requests, with no byte of a next request consumed.
    package var isIdle: Bool {
        if case .requestLine(0) = self.state { return self.scanned == 0 }
        return false
    }

    /// Whether the message is complete and the next call yields ``Outcome/end`` without
    /// needing any input.
    package var isAtEndOfMessage: Bool {
        if case .endOfMessage = self.state { return true }
        return false
    }

    /// Parses the next element of `input`, the bytes not yet consumed.
    package mutating func next(_ input: UnsafeBufferPointer<UInt8>) -> (outcome: Outcome, consumed: Int) {
        var consumed = 0
        while true {
            let rest = UnsafeBufferPointer(rebasing: input[consumed...])
            let (step, used) = self.step(rest)
            consumed += used
            switch step {
            case .again:
                continue
            case .yield(.body(let range)):
                return (.body(range.lowerBound + consumed - used..<range.upperBound + consumed - used), consumed)
            case .yield(let outcome):
                return (outcome, consumed)
            }
        }
    }

    enum Step {
        case again
        case yield(Outcome)
    }

    mutating func fail(_ code: ProxyError.Code, _ message: String) -> (Step, Int) {
        self.fail(ProxyError(code, message))
    }

    /// Stays failed with `error`, letting go of a head being read.
    mutating func fail(_ error: ProxyError) -> (Step, Int) {
        self.state = .failed(error)
        self.partial = PartialHead()
        return (.yield(.failed(error)), 0)
    }

    private mutating func step(_ input: UnsafeBufferPointer<UInt8>) -> (Step, Int) {
        switch self.state {
        case .failed(let error):
            return (.yield(.failed(error)), 0)

        case .requestLine(let leading):
            switch self.readLine(input, limit: self.limits.maxRequestLineBytes) {
            case .incomplete:
                return (.yield(.needMoreData), 0)
            case .tooLong:
                return self.fail(.uriTooLong, "request line longer than \(self.limits.maxRequestLineBytes) bytes")
            case .invalid(let message):
                return self.fail(.badRequest, message)
            case .line(let end, let next):
                if end == 0 {
                    // RFC 9112 §2.2: empty lines before the request line are ignored, within reason.
                    guard leading + next <= 8 else { return self.fail(.badRequest, "too many empty lines") }
                    self.state = .requestLine(leadingEmptyBytes: leading + next)
                    return (.again, next)
                }
                switch RequestLineParser.parse(UnsafeBufferPointer(rebasing: input[..<end])) {
                case .failure(let error):
                    return self.fail(error)
                case .success(let line):
                    self.partial = PartialHead(
                        method: line.method,
                        target: line.target,
                        targetForm: line.form,
                        path: line.path,
                        query: line.query,
                        version: line.version
                    )
                    self.partial.headers.reserveCapacity(16)
                    self.state = .headerLines
                    return (.again, next)
                }
            }

        case .headerLines:
            let budget = self.limits.maxHeaderBytes - self.partial.headerBytes
            switch self.readLine(input, limit: budget) {
            case .incomplete:
                return (.yield(.needMoreData), 0)
            case .tooLong:
                return self.fail(.headersTooLarge, "header section larger than \(self.limits.maxHeaderBytes) bytes")
            case .invalid(let message):
                return self.fail(.badRequest, message)
            case .line(let end, let next):
                if end == 0 {
                    // Taken out by a swap: moved, not copied and then released.
                    var head = PartialHead()
                    swap(&head, &self.partial)
                    return self.finishHead(head, consumed: next)
                }
                guard self.partial.headers.count < self.limits.maxHeaderCount else {
                    return self.fail(.headersTooLarge, "more than \(self.limits.maxHeaderCount) header fields")
                }
                let line = UnsafeBufferPointer(rebasing: input[..<end])
                switch HeaderFieldParser.parse(line) {
                case .failure(let error):
                    return self.fail(error)
                case .success(let field):
                    self.partial.headers.add(
                        name: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: line[field.name])),
                        value: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: line[field.value]))
                    )
                    self.partial.headerBytes += next
                    return (.again, next)
                }
            }

        case .fixedBody(let remaining):
            guard input.count > 0 else { return (.yield(.needMoreData), 0) }
            let take = Int(min(Int64(input.count), remaining))
            // The caller sees the last bytes now and `.end` on its next call.
            self.state = remaining == Int64(take) ? .endOfMessage : .fixedBody(remaining: remaining - Int64(take))
            return (.yield(.body(0..<take)), take)

        case .endOfMessage:
            self.finishRequest()
            return (.yield(.end), 0)

        case .chunkSize:
            let limit = 16 + 2 + (self.limits.maxChunkExtensionBytes - self.chunkExtensionBytes)
            switch self.readLine(input, limit: limit) {
            case .incomplete:
                return (.yield(.needMoreData), 0)
            case .tooLong:
                return self.fail(.badRequest, "chunk size line too long")
            case .invalid(let message):
                return self.fail(.badRequest, message)
            case .line(let end, let next):
                switch ChunkSizeParser.parse(UnsafeBufferPointer(rebasing: input[..<end])) {
                case .failure(let error):
                    return self.fail(error)
                case .success(let chunk):
                    self.chunkExtensionBytes += chunk.extensionBytes
                    guard self.chunkExtensionBytes <= self.limits.maxChunkExtensionBytes else {
                        return self.fail(
                            .badRequest,
                            "chunk extensions larger than \(self.limits.maxChunkExtensionBytes) bytes"
                        )
                    }
                    self.state = chunk.size == 0 ? .trailers(bytes: 0, count: 0) : .chunkData(remaining: chunk.size)
                    return (.again, next)
                }
            }

        case .chunkData(let remaining):
            guard input.count > 0 else { return (.yield(.needMoreData), 0) }
            let take = Int(min(Int64(input.count), remaining))
            self.state = remaining == Int64(take) ? .chunkDataEnd : .chunkData(remaining: remaining - Int64(take))
            return (.yield(.body(0..<take)), take)

        case .chunkDataEnd:
            guard input.count >= 2 else {
                if input.count == 1 && input[0] != UInt8(ascii: "\r") {
                    return self.fail(.badRequest, "chunk data not followed by CRLF")
                }
                return (.yield(.needMoreData), 0)
            }
            guard input[0] == UInt8(ascii: "\r"), input[1] == UInt8(ascii: "\n") else {
                return self.fail(.badRequest, "chunk data not followed by CRLF")
            }
            self.state = .chunkSize
            return (.again, 2)

        case .trailers(let bytes, let count):
            switch self.readLine(input, limit: self.limits.maxHeaderBytes - bytes) {
            case .incomplete:
                return (.yield(.needMoreData), 0)
            case .tooLong:
                return self.fail(.badRequest, "trailer section larger than \(self.limits.maxHeaderBytes) bytes")
            case .invalid(let message):
                return self.fail(.badRequest, message)
            case .line(let end, let next):
                if end == 0 {
                    self.finishRequest()
                    return (.yield(.end), next)
                }
                guard count < self.limits.maxHeaderCount else {
                    return self.fail(.badRequest, "more than \(self.limits.maxHeaderCount) trailer fields")
                }
                // Trailer fields are checked like header fields and then dropped: none of
                // them is forwarded (RFC 9110 §6.5.1 lets a proxy discard them).
                if case .failure(let error) = HeaderFieldParser.parse(UnsafeBufferPointer(rebasing: input[..<end])) {
                    return self.fail(error)
                }
                self.state = .trailers(bytes: bytes + next, count: count + 1)
                return (.again, next)
            }
        }
    }
}
