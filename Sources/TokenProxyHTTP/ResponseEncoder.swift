/// Turns response heads and body parts into bytes for an HTTP/1.x client, choosing the
/// framing (RFC 9112 §6): `Content-Length` when the length is known, chunked for an
/// HTTP/1.1 client otherwise, and end-of-connection for an HTTP/1.0 client.
///
/// It is also where the announced framing is kept (`docs/reference/upstream.md`, "Responses"): body
/// bytes are counted against the `Content-Length` written in the head, bytes beyond it are
/// never encoded, and ``isBodyComplete`` tells whether the body may be ended as complete.
package struct ResponseEncoder: Sendable {
    enum Framing: Sendable, Equatable {
        /// No body is sent at all (HEAD, 1xx, 204, 304).
        case noBody
        case contentLength
        case chunked
        /// The body ends when the connection closes.
        case untilClose
    }

    /// Header names the encoder owns; a handler's values for them are dropped.
    static let framingHeaders = HeaderNameSet(["content-length", "transfer-encoding", "connection", "keep-alive"])

    private(set) var framing: Framing = .noBody
    /// Body bytes still owed under `.contentLength` framing.
    private(set) var remaining: Int64 = 0

    /// An encoder for one response, before its head.
    package init() {}

    /// What ``encodeBody(_:into:)`` did with a part.
    package enum BodyOutcome: Sendable, Equatable {
        /// The part was encoded (or dropped, when the framing allows no body).
        case accepted
        /// The part went past the announced `Content-Length`: only the bytes up to it were
        /// encoded; the connection must end, since the client's framing is exhausted.
        case exceedsLength
    }

    /// Whether the body sent so far is everything the head announced: false while a
    /// `Content-Length` is not yet met, when the exchange may only be aborted.
    package var isBodyComplete: Bool {
        self.framing != .contentLength || self.remaining == 0
    }

    /// Encodes the status line and header section. `keepAlive` is whether the connection stays
    /// open; it returns false when the framing chosen forces a close.
    package mutating func encodeHead(
        _ head: HTTPResponseHead,
        requestVersion: HTTPVersion,
        requestIsHead: Bool,
        keepAlive: inout Bool
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        self.encodeHead(
            head,
            requestVersion: requestVersion,
            requestIsHead: requestIsHead,
            keepAlive: &keepAlive,
            into: &bytes
        )
        return bytes
    }

    /// As ``encodeHead(_:requestVersion:requestIsHead:keepAlive:)``, appending to `bytes`: a
    /// connection encodes each head into one buffer it keeps, rather than a new one.
    package mutating func encodeHead(
        _ head: HTTPResponseHead,
        requestVersion: HTTPVersion,
        requestIsHead: Bool,
        keepAlive: inout Bool,
        into bytes: inout [UInt8]
    ) {
        if head.forbidsBody || requestIsHead {
            self.framing = .noBody
        } else if let length = head.contentLength, length >= 0 {
            self.framing = .contentLength
            self.remaining = length
        } else if requestVersion == .http1_1 {
            self.framing = .chunked
        } else {
            self.framing = .untilClose
            keepAlive = false
        }

        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        Self.appendDigits(Int64(head.status), to: &bytes)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: (head.reason ?? ReasonPhrase.for(head.status)).utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        head.headers.forEachField { name, value in
            // Field names and values come from the upstream or our own code; anything that could
            // split the header section is dropped rather than sent (RFC 9110 §5.5).
            guard
                head.fieldsChecked
                    || (HTTPGrammar.isToken(name) && HTTPGrammar.isValidFieldValue(value)
                        && !Self.framingHeaders.contains(name))
            else { return }
            bytes.append(contentsOf: name)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: value)
            bytes.append(UInt8(ascii: "\r"))
            bytes.append(UInt8(ascii: "\n"))
        }
        switch self.framing {
        case .contentLength:
            bytes.append(contentsOf: "Content-Length: ".utf8)
            Self.appendDigits(head.contentLength ?? 0, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        case .chunked:
            bytes.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        case .noBody:
            // RFC 9110 §8.6: a HEAD answer may carry the length the GET would have had.
            if requestIsHead, let length = head.contentLength, length >= 0, !head.forbidsBody {
                bytes.append(contentsOf: "Content-Length: ".utf8)
                Self.appendDigits(length, to: &bytes)
                bytes.append(contentsOf: "\r\n".utf8)
            }
        case .untilClose:
            break
        }
        if !(100..<200).contains(head.status) {
            if !keepAlive {
                bytes.append(contentsOf: "Connection: close\r\n".utf8)
            } else if requestVersion == .http1_0 {
                bytes.append(contentsOf: "Connection: keep-alive\r\n".utf8)
            }
        }
        bytes.append(contentsOf: "\r\n".utf8)
    }

    /// Appends the digits of a non-negative `value` in `radix` (10 or 16) without building
    /// a String.
    static func appendDigits(_ value: Int64, radix: Int64 = 10, to bytes: inout [UInt8]) {
        var width = 1
        var scale: Int64 = 1
        while value / scale >= radix {
            scale *= radix
            width += 1
        }
        var remaining = value
        for _ in 0..<width {
            let digit = UInt8(remaining / scale)
            bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            remaining %= scale
            scale /= radix
        }
    }

    /// Appends one body part in the chosen framing to `output`. Under `.contentLength`
    /// framing at most the bytes still owed are appended (RFC 9112 §6.3: the client reads the
    /// next response after exactly that many).
    @discardableResult
    package mutating func encodeBody(_ part: some Collection<UInt8>, into output: inout [UInt8]) -> BodyOutcome {
        guard !part.isEmpty else { return .accepted }
        switch self.framing {
        case .noBody:
            return .accepted
        case .contentLength:
            let count = Int64(part.count)
            if count <= self.remaining {
                output.append(contentsOf: part)
                self.remaining -= count
                return .accepted
            }
            output.append(contentsOf: part.prefix(Int(self.remaining)))
            self.remaining = 0
            return .exceedsLength
        case .untilClose:
            output.append(contentsOf: part)
        case .chunked:
            Self.appendDigits(Int64(part.count), radix: 16, to: &output)
            output.append(contentsOf: "\r\n".utf8)
            output.append(contentsOf: part)
            output.append(contentsOf: "\r\n".utf8)
        }
        return .accepted
    }

    /// Appends the end of the body (the last chunk for chunked framing).
    package func encodeEnd(into output: inout [UInt8]) {
        if self.framing == .chunked {
            output.append(contentsOf: "0\r\n\r\n".utf8)
        }
    }
}
