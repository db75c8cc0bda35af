import TokenProxySupport

/// Parses `field-name ":" OWS field-value OWS` (RFC 9112 §5).
enum HeaderFieldParser {
    /// Where a field's name and value lie in the line it was parsed from.
    struct Field: Equatable {
        /// The name's bytes: a token.
        var name: Range<Int>
        /// The value's bytes, without surrounding whitespace: no control character but HTAB,
        /// valid UTF-8.
        var value: Range<Int>
    }

    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<Field, ProxyError> {
        guard let first = line.first, first != UInt8(ascii: " "), first != UInt8(ascii: "\t") else {
            // RFC 9112 §5.2: obs-fold is rejected with 400 outside message/http.
            return .failure(ProxyError(.badRequest, "obsolete line folding in a header"))
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return .failure(ProxyError(.badRequest, "header line without a colon"))
        }
        let name = line[..<colon]
        guard HTTPGrammar.isToken(name) else {
            if let last = name.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
                // RFC 9112 §5.1: whitespace between name and colon MUST be rejected.
                return .failure(ProxyError(.badRequest, "whitespace before the colon in a header"))
            }
            return .failure(ProxyError(.badRequest, "invalid header name"))
        }
        var start = colon + 1
        var end = line.endIndex
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        let valueBytes = line[start..<end]
        guard HTTPGrammar.isValidFieldValue(valueBytes) else {
            return .failure(ProxyError(.badRequest, "control character in a header value"))
        }
        guard valueBytes.allSatisfy({ $0 < 0x80 }) || String(validating: valueBytes, as: UTF8.self) != nil else {
            return .failure(ProxyError(.badRequest, "header value is not valid UTF-8"))
        }
        return .success(Field(name: line.startIndex..<colon, value: start..<end))
    }
}
