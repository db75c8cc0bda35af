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
    /// Whether a `101 Switching Protocols` head is final (an upgrade's handshake) rather than
    /// an interim one to drop.
    var switchingProtocolsIsFinal = false
    private var status: Int?
    private var reason: String?
    /// The fields relayed to the client as they are (end-to-end names with valid values),
    /// and, withheld in the same buffer (``HTTPHeaders/addWithheld(name:value:)``), the ones
    /// that are not: hop-by-hop and framing fields, and any with a value the client must not
    /// get. Sorted as they arrive, so that the head is read in one pass and the relayed
    /// fields need no filtering pass afterwards.
    private var fields = HTTPHeaders()
    /// Whether the last field was withheld, for an obs-fold that continues it; nil before the
    /// first field.
    private var lastFieldWithheld: Bool?
    /// The end-to-end names the `Connection` fields so far list (lowercased), which are
    /// dropped too (RFC 9110 §7.6.1). Most answers list only `keep-alive`, itself hop-by-hop,
    /// and the set stays empty and costs nothing.
    private var listed = Set<[UInt8]>()
    /// Whether a `Location` field arrived, to be rewritten.
    private var hasLocation = false
    /// Whether an obs-fold added bytes to a relayed field: its value is checked again.
    private var foldedIntoRelayed = false
    /// Whether an obs-fold added bytes to a withheld field: the framing and the `Connection`
    /// list are read again from the whole fields.
    private var foldedIntoWithheld = false
    /// The framing read from the fields so far, as they arrived.
    private var reading = Framing()
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
            self.reason = reason.flatMap { Self.reasonPhrase($0, status: status) }
            self.forgetFields()
            self.framing = nil
            return .pending
        }
        guard let status = self.status else { return .invalid }
        if line.isEmpty {
            if (100..<200).contains(status), !(status == 101 && self.switchingProtocolsIsFinal) {
                self.status = nil
                self.forgetFields()
                return .interim
            }
            self.headComplete = true
            self.framing = self.currentFraming
            if self.foldedIntoWithheld {
                self.listed = []
                self.fields.forEachWithheldField { name, value in
                    if HTTPHeaders.name(name, is: "connection") {
                        Self.list(value, into: &self.listed)
                    }
                }
            }
            return .complete
        }
        if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            // obs-fold from an old upstream: join it to the previous value (RFC 9112 §5.2).
            guard let lastFieldWithheld = self.lastFieldWithheld else { return .invalid }
            let folded = [UInt8(ascii: " ")] + Self.trimmed(line[...])
            folded.withUnsafeBytes { self.fields.appendToLastValue($0) }
            if lastFieldWithheld {
                self.foldedIntoWithheld = true
            } else {
                self.foldedIntoRelayed = true
            }
            return .pending
        }
        guard let colon = Self.index(of: UInt8(ascii: ":"), in: line), HTTPGrammar.isToken(line[..<colon]) else {
            return .invalid
        }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        let value = Self.trimmed(line[(colon + 1)...])
        let kind = FieldKind(name)
        switch kind {
        case .other, .hopByHop: break
        case .location: self.hasLocation = true
        case .connection: Self.list(value.assumingMemoryBound(to: UInt8.self), into: &self.listed)
        case .contentLength, .transferEncoding: self.reading.read(kind, value.assumingMemoryBound(to: UInt8.self))
        }
        if self.lastFieldWithheld == nil {
            // Room for a typical head at once rather than growing field by field.
            self.fields.reserveCapacity(16)
        }
        if kind.isRelayed && HTTPGrammar.isValidFieldValue(value) {
            self.fields.add(name: name, value: value)
            self.lastFieldWithheld = false
        } else {
            self.fields.addWithheld(name: name, value: value)
            self.lastFieldWithheld = true
        }
        return .pending
    }

    /// Forgets the fields of an interim head, or of everything before a new status line.
    private mutating func forgetFields() {
        self.fields = HTTPHeaders()
        self.lastFieldWithheld = nil
        self.listed = []
        self.hasLocation = false
        self.foldedIntoRelayed = false
        self.foldedIntoWithheld = false
        self.reading = Framing()
    }

    /// Adds the end-to-end names a `Connection` field's `value` lists to `listed`.
    private static func list(_ value: UnsafeBufferPointer<UInt8>, into listed: inout Set<[UInt8]>) {
        HTTPGrammar.forEachListElement(value) { element in
            if FieldKind(UnsafeRawBufferPointer(element)).isRelayed {
                listed.insert(ASCII.lowercased(element))
            }
        }
    }

    /// What a field name means to the proxy, told by its length first and then by at most two
    /// comparisons: this runs for every field of every response.
    enum FieldKind: Equatable {
        /// End-to-end: relayed as it came.
        case other
        /// `Location`: relayed, possibly rewritten.
        case location
        /// `Connection`: dropped, and the names it lists with it.
        case connection
        /// `Content-Length`: dropped; the client's framing is the proxy's own.
        case contentLength
        /// `Transfer-Encoding`: dropped, as the length.
        case transferEncoding
        /// Hop-by-hop or framing (RFC 9110 §7.6.1; the client connection's framing is the
        /// proxy's own): dropped.
        case hopByHop

        init(_ name: UnsafeRawBufferPointer) {
            let bytes = name.assumingMemoryBound(to: UInt8.self)
            func `is`(_ literal: StaticString) -> Bool { HTTPHeaders.name(bytes, is: literal) }
            switch name.count {
            case 2: self = `is`("te") ? .hopByHop : .other
            case 7: self = `is`("upgrade") || `is`("trailer") ? .hopByHop : .other
            case 8: self = `is`("location") ? .location : .other
            case 10:
                if `is`("connection") {
                    self = .connection
                } else {
                    self = `is`("keep-alive") ? .hopByHop : .other
                }
            case 14: self = `is`("content-length") ? .contentLength : .other
            case 16: self = `is`("proxy-connection") ? .hopByHop : .other
            case 17: self = `is`("transfer-encoding") ? .transferEncoding : .other
            case 18: self = `is`("proxy-authenticate") ? .hopByHop : .other
            case 19: self = `is`("proxy-authorization") ? .hopByHop : .other
            default: self = .other
            }
        }

        /// Whether a field of this kind goes to the client.
        var isRelayed: Bool {
            self == .other || self == .location
        }
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
        // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3 rule 3): libcurl decodes
        // the chunks, so the client's framing is the proxy's own (chunked, or until close).
        var contentLength: Int64?
        if !self.hasTransferEncoding, case .length(let length) = self.declaredLength {
            contentLength = length
        }
        self.framing = self.currentFraming
        // Handed over whole: the hop-by-hop and framing fields were withheld as they came.
        var headers = self.fields
        self.fields = HTTPHeaders()
        // The fields are handed over: a fold line after this continues none.
        self.lastFieldWithheld = nil
        if !self.listed.isEmpty || self.foldedIntoRelayed {
            // Fields a Connection field named, or one a fold made invalid. Each field is looked
            // up in the set by hash, so a head of many fields with a long list costs their
            // sum, not their product.
            let listed = self.listed
            headers.removeAll { name, value in
                !HTTPGrammar.isValidFieldValue(value) || (!listed.isEmpty && listed.contains(ASCII.lowercased(name)))
            }
        }
        if self.hasLocation {
            headers.replaceValues { name, value in
                // A Location that is not UTF-8 cannot name the upstream's origin; it goes on as
                // it came.
                guard HTTPHeaders.name(name, is: "location"),
                    let location = String(validating: value, as: UTF8.self)
                else { return nil }
                return rewriteLocation(location)
            }
        }
        var head = HTTPResponseHead(status: status, reason: self.reason, headers: headers)
        // Names were checked as tokens by `line`, and values; framing fields are withheld.
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
        // Relayed and withheld alike, in the order they came.
        self.fields.forEachFieldIncludingWithheld { field, value in
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

    /// The reason phrase of a status line as a String: the standard phrase for `status` when
    /// the bytes are exactly that (the usual case, with no string decoded), otherwise the
    /// bytes as they came; nil for one with a control character.
    private static func reasonPhrase(_ bytes: UnsafeRawBufferPointer.SubSequence, status: Int) -> String? {
        let standard = ReasonPhrase.for(status)
        let isStandard = standard.utf8.withContiguousStorageIfAvailable {
            UnsafeRawBufferPointer($0).elementsEqual(UnsafeRawBufferPointer(rebasing: bytes))
        }
        if isStandard == true {
            return standard
        }
        return HTTPGrammar.isValidFieldValue(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// The framing read when the head completed, or the one of the fields so far.
    private var currentFraming: Framing {
        if let framing = self.framing { return framing }
        return self.foldedIntoWithheld ? Framing(self.fields) : self.reading
    }

    /// What a head's `Transfer-Encoding` and `Content-Length` fields say, read field by field.
    private struct Framing {
        var hasTransferEncoding = false
        /// Whether the last transfer coding of all `Transfer-Encoding` fields is chunked; nil
        /// when they list none.
        var lastCodingIsChunked: Bool?
        private var lengths = HTTPGrammar.ContentLengthFields()

        init() {}

        /// Reads the withheld fields of `fields`, where the framing fields are: for a head
        /// whose framing field was continued by an obs-fold after it was read.
        init(_ fields: HTTPHeaders) {
            fields.forEachWithheldField { name, value in
                if HTTPHeaders.name(name, is: "content-length") {
                    self.read(.contentLength, value)
                } else if HTTPHeaders.name(name, is: "transfer-encoding") {
                    self.read(.transferEncoding, value)
                }
            }
        }

        /// Reads the value of a `Content-Length` or `Transfer-Encoding` field.
        mutating func read(_ kind: FieldKind, _ value: UnsafeBufferPointer<UInt8>) {
            if kind == .contentLength {
                self.lengths.read(value)
                return
            }
            self.hasTransferEncoding = true
            if let last = String(decoding: value, as: UTF8.self).split(separator: ",").last {
                self.lastCodingIsChunked = last.trimmingHTTPWhitespace().equalsIgnoringASCIICase("chunked")
            }
        }

        var declaredLength: DeclaredLength {
            if let length = self.lengths.validLength { return .length(length) }
            return self.lengths.isValid ? .absent : .invalid
        }
    }
}
