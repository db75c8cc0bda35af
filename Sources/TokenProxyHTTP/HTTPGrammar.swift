import TokenProxySupport

/// Byte-level rules of RFC 9110 and RFC 9112 that the parser and the policy share.
package enum HTTPGrammar {
    /// `tchar` (RFC 9110 §5.6.2): the characters of a token such as a method or field name.
    static let tokenCharacters = Self.byteTable(lettersDigitsAnd: "!#$%&'*+-.^_`|~")

    /// A table by byte value, true for ASCII letters, digits and the bytes of `others`.
    private static func byteTable(lettersDigitsAnd others: String) -> [Bool] {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for byte in others.utf8 { table[Int(byte)] = true }
        return table
    }

    /// Whether `bytes` is a non-empty token.
    package static func isToken(_ bytes: some Sequence<UInt8>) -> Bool {
        // Contiguous bytes (a native String's UTF-8, a buffer) take the fast path: this runs
        // for every header field in both directions.
        if let result = bytes.withContiguousStorageIfAvailable({ Self.isToken($0) }) {
            return result
        }
        var empty = true
        for byte in bytes {
            guard tokenCharacters[Int(byte)] else { return false }
            empty = false
        }
        return !empty
    }

    // The buffer forms below are what the header checks of both directions pass. Being
    // concrete, they are chosen over the generic form from other modules too, where a call to
    // the generic one would not be specialized and would look up type metadata for every field.

    /// Whether `buffer` is a non-empty token.
    package static func isToken(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        !buffer.isEmpty
            && Self.tokenCharacters.withUnsafeBufferPointer { table in buffer.allSatisfy { table[Int($0)] } }
    }

    /// Whether `bytes` is a non-empty token.
    package static func isToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.isEmpty
            && Self.tokenCharacters.withUnsafeBufferPointer { table in bytes.allSatisfy { table[Int($0)] } }
    }

    /// Whether `bytes` is a non-empty token.
    package static func isToken(_ bytes: Slice<UnsafeRawBufferPointer>) -> Bool {
        Self.isToken(UnsafeRawBufferPointer(rebasing: bytes))
    }

    /// Whether `name` is a valid field name.
    static func isToken(_ name: String) -> Bool {
        isToken(name.utf8)
    }

    /// Whether `value` may be sent as a field value: no CR, LF, NUL or other control
    /// character except HTAB (RFC 9110 §5.5).
    package static func isValidFieldValue(_ value: some Sequence<UInt8>) -> Bool {
        if let result = value.withContiguousStorageIfAvailable({ Self.isValidFieldValue($0) }) {
            return result
        }
        return value.allSatisfy(Self.isFieldValueByte)
    }

    /// Whether `value` may be sent as a field value (RFC 9110 §5.5).
    package static func isValidFieldValue(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        Self.isValidFieldValue(UnsafeRawBufferPointer(value))
    }

    /// Whether `value` may be sent as a field value (RFC 9110 §5.5). Eight bytes at a time: a
    /// word with no byte below 0x20 and none equal to 0x7F is valid whole, and only a word
    /// with one of them (an HTAB, most often) is looked at byte by byte.
    package static func isValidFieldValue(_ value: UnsafeRawBufferPointer) -> Bool {
        let count = value.count
        var index = 0
        while index + 8 <= count {
            let word = value.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            if Self.mayHoldControl(word) {
                for offset in index..<(index + 8) where !Self.isFieldValueByte(value[offset]) {
                    return false
                }
            }
            index += 8
        }
        while index < count {
            guard Self.isFieldValueByte(value[index]) else { return false }
            index += 1
        }
        return true
    }

    /// Whether some byte of `word` is below 0x20 or is 0x7F: the two exact tests "has a byte
    /// less than n" (for n ≤ 128) and "has a zero byte" from the usual bit tricks, the second
    /// applied to the word with every byte XORed with 0x7F. Bytes from 0x80 up (obs-text)
    /// never trigger either.
    private static func mayHoldControl(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let below = (word &- ones &* 0x20) & ~word & highs
        let delete = word ^ (ones &* 0x7F)
        let isDelete = (delete &- ones) & ~delete & highs
        return (below | isDelete) != 0
    }

    /// Whether `value` may be sent as a field value (RFC 9110 §5.5).
    package static func isValidFieldValue(_ value: Slice<UnsafeRawBufferPointer>) -> Bool {
        Self.isValidFieldValue(UnsafeRawBufferPointer(rebasing: value))
    }

    private static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Calls `body` with each element of the comma-separated list `list` (RFC 9110 §5.6.1),
    /// without its surrounding whitespace; empty elements are skipped.
    package static func forEachListElement(
        _ list: UnsafeBufferPointer<UInt8>,
        _ body: (UnsafeBufferPointer<UInt8>) -> Void
    ) {
        var start = list.startIndex
        while start < list.endIndex {
            let comma = list[start...].firstIndex(of: UInt8(ascii: ",")) ?? list.endIndex
            var first = start
            var end = comma
            while first < end, list[first] == 0x20 || list[first] == 0x09 { first += 1 }
            while end > first, list[end - 1] == 0x20 || list[end - 1] == 0x09 { end -= 1 }
            if first < end {
                body(UnsafeBufferPointer(rebasing: list[first..<end]))
            }
            start = comma + 1
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        Hex.value(of: byte) != nil
    }

    /// Whether `value` is `uri-host [ ":" port ]` (RFC 9110 §7.2), with a non-empty host.
    static func isValidHost(_ value: String) -> Bool {
        var value = value
        return value.withUTF8(Self.isValidHost(bytes:))
    }

    /// The same rule over the value's bytes.
    static func isValidHost(bytes all: UnsafeBufferPointer<UInt8>) -> Bool {
        var bytes = all[...]
        guard let first = bytes.first else { return false }
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = bytes[(bytes.startIndex + 1)..<close]
            guard !literal.isEmpty,
                literal.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { return false }
            bytes = bytes[(close + 1)...]
        } else {
            let end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            let name = bytes[..<end]
            guard !name.isEmpty,
                Self.regNameCharacters.withUnsafeBufferPointer({ table in name.allSatisfy { table[Int($0)] } })
            else { return false }
            bytes = bytes[end...]
        }
        guard let colon = bytes.first else { return true }
        guard colon == UInt8(ascii: ":") else { return false }
        let port = bytes.dropFirst()
        return port.count <= 5 && port.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 §3.2.2), by byte.
    private static let regNameCharacters = Self.byteTable(lettersDigitsAnd: "-._~%!$&'()*+,;=")

    /// The single length named by every `Content-Length` field of `headers` and each
    /// element of their lists, or nil without such a field; differing values, non-digits and
    /// overflow are errors (RFC 9112 §6.3 rule 5). Reads the fields' bytes where they lie:
    /// this runs for every answer with a length and every request with a body.
    package static func contentLength(in headers: HTTPHeaders) -> Result<Int64, ProxyError>? {
        var lengths = ContentLengthFields()
        headers.forEachField { name, value in
            if HTTPHeaders.name(name, is: "content-length") {
                lengths.read(value)
            }
        }
        return lengths.result
    }

    /// The `Content-Length` fields of a head, read one value at a time by the rule of
    /// ``contentLength(in:)``, for a reader that finds them itself.
    package struct ContentLengthFields {
        private var length: Int64?
        private var found = false
        /// Kept as a plain value, so that the reader copies as bytes: the error is made when
        /// asked for.
        private var failure: ContentLengthElement.Failure?

        package init() {}

        /// Reads the value of one `Content-Length` field.
        package mutating func read(_ value: UnsafeBufferPointer<UInt8>) {
            self.found = true
            guard self.failure == nil else { return }
            var element = ContentLengthElement()
            for byte in value {
                if byte == UInt8(ascii: ",") {
                    self.failure = element.end(into: &self.length)
                    if self.failure != nil { return }
                    element = ContentLengthElement()
                } else {
                    element.add(byte)
                }
            }
            self.failure = element.end(into: &self.length)
        }

        /// The length the fields read declare, or nil when none was read.
        package var result: Result<Int64, ProxyError>? {
            guard self.found else { return nil }
            if let failure = self.failure { return .failure(ProxyError(.badRequest, failure.rawValue)) }
            guard let length = self.length else { return .failure(ProxyError(.badRequest, "invalid Content-Length")) }
            return .success(length)
        }

        /// Whether the fields read declare one valid length, or none was read.
        package var isValid: Bool {
            !self.found || (self.failure == nil && self.length != nil)
        }

        /// The length declared, when the fields read declare one valid length.
        package var validLength: Int64? {
            self.failure == nil ? self.length : nil
        }
    }

    /// One element of a Content-Length list, read byte by byte: optional whitespace, digits,
    /// optional whitespace.
    private struct ContentLengthElement {
        private var value: Int64 = 0
        private var digits = 0
        private var trailingSpace = false
        private var invalid = false
        private var overflow = false

        mutating func add(_ byte: UInt8) {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                // Whitespace after the digits ends them; before them it is skipped.
                if self.digits > 0 { self.trailingSpace = true }
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard !self.trailingSpace else {
                    self.invalid = true
                    return
                }
                self.digits += 1
                let (times10, o1) = self.value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                self.overflow = self.overflow || o1 || o2
                self.value = sum
            default:
                self.invalid = true
            }
        }

        /// Why a list of lengths is refused, as the error's message.
        enum Failure: String {
            case invalid = "invalid Content-Length"
            case tooLarge = "Content-Length too large"
            case differing = "differing Content-Length values"
        }

        /// Checks the finished element against the length so far: nil when it agrees.
        func end(into length: inout Int64?) -> Failure? {
            guard !self.invalid, self.digits > 0 else { return .invalid }
            guard !self.overflow else { return .tooLarge }
            if let previous = length, previous != self.value {
                return .differing
            }
            length = self.value
            return nil
        }
    }
}
