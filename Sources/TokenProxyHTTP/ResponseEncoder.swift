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

        let checked = head.fieldsChecked
        var lengthField: Int64?
        switch self.framing {
        case .contentLength:
            lengthField = head.contentLength ?? 0
        case .noBody:
            // RFC 9110 §8.6: a HEAD answer may carry the length the GET would have had.
            if requestIsHead, let length = head.contentLength, length >= 0, !head.forbidsBody {
                lengthField = length
            }
        case .chunked, .untilClose:
            break
        }
        var connectionField: StaticString?
        if !(100..<200).contains(head.status) {
            if !keepAlive {
                connectionField = "Connection: close\r\n"
            } else if requestVersion == .http1_0 {
                connectionField = "Connection: keep-alive\r\n"
            }
        }
        let status = Int64(head.status)
        var reason = head.reason ?? ReasonPhrase.for(head.status)
        // A bound on the head's size first, then the head itself, written into memory of that
        // size and appended as one copy. The fields are read once: the bound for them is the
        // size of their records, which is never less than what they take in the head.
        var size = "HTTP/1.1 ".utf8.count + HeadWriter.digitCount(status) + 1 + reason.utf8.count + 2
        size += head.headers.encodedSizeBound
        if let lengthField {
            size += "Content-Length: ".utf8.count + HeadWriter.digitCount(lengthField) + 2
        }
        if self.framing == .chunked {
            size += Self.chunkedField.utf8CodeUnitCount
        }
        size += (connectionField?.utf8CodeUnitCount ?? 0) + 2
        withUnsafeTemporaryAllocation(byteCount: size, alignment: 1) { memory in
            var writer = HeadWriter(memory)
            writer.write("HTTP/1.1 ")
            writer.writeDigits(status)
            writer.write(UInt8(ascii: " "))
            reason.withUTF8 { writer.write($0) }
            writer.write("\r\n")
            head.headers.forEachField { name, value in
                guard Self.sends(name, value, checked: checked) else { return }
                writer.write(name)
                writer.write(": ")
                writer.write(value)
                writer.write("\r\n")
            }
            if let lengthField {
                writer.write("Content-Length: ")
                writer.writeDigits(lengthField)
                writer.write("\r\n")
            }
            if self.framing == .chunked {
                writer.write(Self.chunkedField)
            }
            if let connectionField {
                writer.write(connectionField)
            }
            writer.write("\r\n")
            bytes.append(
                contentsOf: UnsafeRawBufferPointer(rebasing: memory[..<writer.written]).assumingMemoryBound(
                    to: UInt8.self
                )
            )
        }
    }

    /// Whether a field goes into the head. Field names and values come from the upstream or
    /// our own code; anything that could split the header section is dropped rather than sent
    /// (RFC 9110 §5.5), and so are the framing fields, which are the encoder's. `checked`:
    /// the fields were checked already (``HTTPResponseHead/fieldsChecked``).
    private static func sends(
        _ name: UnsafeBufferPointer<UInt8>,
        _ value: UnsafeBufferPointer<UInt8>,
        checked: Bool
    ) -> Bool {
        checked
            || (HTTPGrammar.isToken(name) && HTTPGrammar.isValidFieldValue(value)
                && !Self.framingHeaders.contains(name))
    }

    private static let chunkedField: StaticString = "Transfer-Encoding: chunked\r\n"

    /// Appends the digits of a non-negative `value` in `radix` (10 or 16) without building
    /// a String (``HeadWriter`` writes them).
    static func appendDigits(_ value: Int64, radix: Int64 = 10, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: HeadWriter.digitCount(value, radix: radix), alignment: 1) { memory in
            var writer = HeadWriter(memory)
            writer.writeDigits(value, radix: radix)
            bytes.append(contentsOf: UnsafeRawBufferPointer(memory).assumingMemoryBound(to: UInt8.self))
        }
    }

    /// Appends one body part in the chosen framing to `output`. Under `.contentLength`
    /// framing at most the bytes still owed are appended (RFC 9112 §6.3: the client reads the
    /// next response after exactly that many).
    @discardableResult
    package mutating func encodeBody(_ part: UnsafeRawBufferPointer, into output: inout [UInt8]) -> BodyOutcome {
        // Specialized here: the generic method called from another module is not, and ran the
        // standard library's generic append for every body part.
        self.encodeBody(part.assumingMemoryBound(to: UInt8.self), into: &output)
    }

    /// As the method above, for any collection of bytes.
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
