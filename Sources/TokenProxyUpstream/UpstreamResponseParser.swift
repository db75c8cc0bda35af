import TokenProxyHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Assembles the upstream's response head from the header lines libcurl hands over, and
/// turns it into the head sent to the client: hop-by-hop fields removed, the length kept,
/// and a `Location` on the upstream's own origin rewritten to the proxy's path
/// (`docs/reference/upstream.md`, "Responses"). Pure: no I/O.
struct UpstreamResponseParser: Sendable {
    /// Fields never relayed to the client (RFC 9110 §7.6.1), plus the framing the client
    /// connection recomputes.
    static let hopByHop = HeaderNameSet([
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
        "trailer", "transfer-encoding", "upgrade", "content-length",
    ])

    /// Whether a `101 Switching Protocols` head is final (an upgrade's handshake) rather than
    /// an interim one to drop.
    var switchingProtocolsIsFinal = false
    private var status: Int?
    private var reason: String?
    private var fields = HTTPHeaders()
    private(set) var headComplete = false
    /// The final head's framing, read once when it completes.
    private var framing: Framing?

    /// What a line changed.
    enum LineResult: Equatable {
        /// More lines are needed.
        case pending
        /// An interim (1xx) head ended and was dropped.
        case interim
        /// The final head is complete: read it with ``head(request:route:base:)``.
        case complete
        /// The line is not valid HTTP.
        case invalid
    }

    /// Feeds one header line, CRLF included or not.
    mutating func line(_ raw: String) -> LineResult {
        var raw = raw
        return raw.withUTF8 { self.line(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The offset of the first `byte` in `bytes`, found by `memchr`.
    private static func index(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, let found = memchr(base, Int32(byte), bytes.count) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Feeds one header line as bytes, CRLF included or not. Works on bytes throughout:
    /// this runs for every header of every response.
    mutating func line(bytes raw: UnsafeRawBufferPointer) -> LineResult {
        var end = raw.count
        while end > 0, raw[end - 1] == UInt8(ascii: "\n") || raw[end - 1] == UInt8(ascii: "\r") {
            end -= 1
        }
        let line = UnsafeRawBufferPointer(rebasing: raw[0..<end])
        if line.count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
            line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/")
        {
            // A new status line: an interim head before this one is forgotten.
            guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return .invalid }
            let afterSpace = line[(space + 1)...]
            let codeEnd = afterSpace.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
            let digits = line[(space + 1)..<codeEnd]
            guard digits.count == 3, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return .invalid }
            // Three ASCII digits, read as a number without a String in between.
            let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard (100...599).contains(status) else { return .invalid }
            self.status = status
            // The reason phrase goes onto the client's status line as it is, so one with a
            // control character (a bare CR could split the answer) is replaced by the standard
            // phrase for the status (RFC 9112 §4: clients ignore it anyway).
            let reason = codeEnd < line.endIndex ? line[(codeEnd + 1)...] : nil
            self.reason = reason.flatMap {
                HTTPGrammar.isValidFieldValue($0) ? String(decoding: $0, as: UTF8.self) : nil
            }
            self.fields = HTTPHeaders()
            self.framing = nil
            return .pending
        }
        guard let status = self.status else { return .invalid }
        if line.isEmpty {
            if (100..<200).contains(status), !(status == 101 && self.switchingProtocolsIsFinal) {
                self.status = nil
                self.fields = HTTPHeaders()
                return .interim
            }
            self.headComplete = true
            self.framing = Framing(self.fields)
            return .complete
        }
        if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            // obs-fold from an old upstream: join it to the previous value (RFC 9112 §5.2).
            guard self.fields.count > 0 else { return .invalid }
            let folded = [UInt8(ascii: " ")] + Self.trimmed(line[...])
            folded.withUnsafeBytes { self.fields.appendToLastValue($0) }
            return .pending
        }
        guard let colon = Self.index(of: UInt8(ascii: ":"), in: line), HTTPGrammar.isToken(line[..<colon]) else {
            return .invalid
        }
        if self.fields.count == 0 {
            // Room for a typical head at once rather than growing field by field.
            self.fields.reserveCapacity(16)
        }
        self.fields.add(
            name: UnsafeRawBufferPointer(rebasing: line[..<colon]),
            value: Self.trimmed(line[(colon + 1)...])
        )
        return .pending
    }

    /// `bytes` without surrounding spaces and tabs (RFC 9110 OWS).
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> UnsafeRawBufferPointer {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// The head to send to the client, made from the final head's fields in place: they
    /// are handed over, and the parser keeps none (read ``value(of:)`` first). Its framing
    /// (``framingProblem``, ``hasTransferEncoding``, ``declaredLength``) stays known.
    /// `rewriteLocation` maps a `Location` value (the proxy's routes know how upstream URLs
    /// map back onto the proxy), or returns `nil` to leave it as it came.
    mutating func head(requestIsHead: Bool, rewriteLocation: (String) -> String?) -> HTTPResponseHead {
        let status = self.status ?? 502
        // Field names the upstream's Connection header lists are hop-by-hop too (RFC 9110
        // §7.6.1). Most answers list only `keep-alive`, itself hop-by-hop, and the set of other
        // names stays empty and costs nothing. Each field is looked up in the set by hash, so a
        // head of many fields with a long list costs their sum, not their product.
        var listed = Set<[UInt8]>()
        self.fields.forEachField { name, value in
            guard HTTPHeaders.name(name, is: "connection") else { return }
            HTTPGrammar.forEachListElement(value) { element in
                if !Self.hopByHop.contains(element) {
                    listed.insert(ASCII.lowercased(element))
                }
            }
        }
        // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3 rule 3): libcurl decodes
        // the chunks, so the client's framing is the proxy's own (chunked, or until close).
        var contentLength: Int64?
        if !self.hasTransferEncoding, case .length(let length) = self.declaredLength {
            contentLength = length
        }
        self.framing = self.currentFraming
        // Handed over whole, so that the fields are filtered where they are, not copied.
        var headers = self.fields
        self.fields = HTTPHeaders()
        headers.removeAll { name, value in
            Self.hopByHop.contains(name) || !HTTPGrammar.isValidFieldValue(value)
                || (!listed.isEmpty && listed.contains(ASCII.lowercased(name)))
        }
        headers.replaceValues { name, value in
            // A Location that is not UTF-8 cannot name the upstream's origin; it goes on as it
            // came.
            guard HTTPHeaders.name(name, is: "location"),
                let location = String(validating: value, as: UTF8.self)
            else { return nil }
            return rewriteLocation(location)
        }
        var head = HTTPResponseHead(status: status, reason: self.reason, headers: headers)
        // Names were checked as tokens by `line`, values just above, framing fields dropped.
        head.fieldsChecked = true
        if requestIsHead || !head.forbidsBody {
            head.contentLength = contentLength
        }
        return head
    }

    /// The values of the fields named `name` (case-insensitively), joined with commas as one
    /// list (RFC 9110 §5.3); nil when there is none.
    func value(of name: String) -> String? {
        var values: [String] = []
        self.fields.forEachField { field, value in
            if HTTPHeaders.name(field, equals: name) {
                values.append(String(decoding: value, as: UTF8.self))
            }
        }
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// What the head's `Content-Length` fields say.
    enum DeclaredLength: Equatable {
        /// No `Content-Length` field.
        case absent
        /// One length, possibly repeated identically (RFC 9110 §8.6).
        case length(Int64)
        /// Differing, empty, non-numeric or overflowing values (RFC 9112 §6.3 rule 5).
        case invalid
    }

    /// Whether the head has a `Transfer-Encoding` field.
    var hasTransferEncoding: Bool {
        self.currentFraming.hasTransferEncoding
    }

    /// The length the `Content-Length` fields declare, each field possibly a list; parsed
    /// by the same rule as a request's (``HTTPGrammar/contentLength(in:)``).
    var declaredLength: DeclaredLength {
        self.currentFraming.declaredLength
    }

    /// Why the final head's framing cannot be relayed, or nil when it can (RFC 9112 §6.3):
    /// a `Transfer-Encoding` whose final coding is not chunked, or, without one, a
    /// `Content-Length` that is not a single valid number. Such an answer is not relayed;
    /// the client gets 502.
    var framingProblem: String? {
        let framing = self.currentFraming
        if let lastCodingIsChunked = framing.lastCodingIsChunked {
            return lastCodingIsChunked ? nil : "the upstream's transfer coding is not chunked"
        }
        return framing.declaredLength == .invalid ? "the upstream's Content-Length is invalid or conflicting" : nil
    }

    /// The framing read when the head completed, or read now from the fields so far.
    private var currentFraming: Framing {
        self.framing ?? Framing(self.fields)
    }

    /// What a head's `Transfer-Encoding` and `Content-Length` fields say, read in one pass
    /// over its fields.
    private struct Framing {
        var hasTransferEncoding = false
        /// Whether the last transfer coding of all `Transfer-Encoding` fields is chunked; nil
        /// when they list none.
        var lastCodingIsChunked: Bool?
        var declaredLength = DeclaredLength.absent

        init(_ fields: HTTPHeaders) {
            fields.forEachField { name, value in
                if HTTPHeaders.name(name, is: "transfer-encoding") {
                    self.hasTransferEncoding = true
                    if let last = String(decoding: value, as: UTF8.self).split(separator: ",").last {
                        self.lastCodingIsChunked = last.trimmingHTTPWhitespace().equalsIgnoringASCIICase("chunked")
                    }
                }
            }
            switch HTTPGrammar.contentLength(in: fields) {
            case .success(let length)?: self.declaredLength = .length(length)
            case .failure?: self.declaredLength = .invalid
            case nil: break
            }
        }
    }
}
