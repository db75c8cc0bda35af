/// Byte-level rules of RFC 9110 and RFC 9112 that the parser and the policy share.
enum HTTPGrammar {
    /// `tchar` (RFC 9110 §5.6.2): the characters of a token such as a method or field name.
    static let tokenCharacters: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for character in "!#$%&'*+-.^_`|~".utf8 { table[Int(character)] = true }
        return table
    }()

    /// Whether `bytes` is a non-empty token.
    static func isToken(_ bytes: some Sequence<UInt8>) -> Bool {
        // Contiguous bytes (a native String's UTF-8, a buffer) take the fast path: this runs
        // for every header field in both directions.
        if let result = bytes.withContiguousStorageIfAvailable(Self.isToken(buffer:)) {
            return result
        }
        var empty = true
        for byte in bytes {
            guard tokenCharacters[Int(byte)] else { return false }
            empty = false
        }
        return !empty
    }

    private static func isToken(buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        !buffer.isEmpty
            && Self.tokenCharacters.withUnsafeBufferPointer { table in buffer.allSatisfy { table[Int($0)] } }
    }

    /// Whether `name` is a valid field name.
    static func isToken(_ name: String) -> Bool {
        isToken(name.utf8)
    }

    /// Whether `value` may be sent as a field value: no CR, LF, NUL or other control
    /// character except HTAB (RFC 9110 §5.5).
    static func isValidFieldValue(_ value: some Sequence<UInt8>) -> Bool {
        if let result = value.withContiguousStorageIfAvailable({ $0.allSatisfy(Self.isFieldValueByte) }) {
            return result
        }
        return value.allSatisfy(Self.isFieldValueByte)
    }

    private static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        hexValue(byte) != nil
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Whether `value` is `uri-host [ ":" port ]` (RFC 9110 §7.2), with a non-empty host.
    static func isValidHost(_ value: String) -> Bool {
        var bytes = Substring(value).utf8[...]
        guard let first = bytes.first else { return false }
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return false }
            let literal = bytes[bytes.index(after: bytes.startIndex)..<close]
            guard !literal.isEmpty,
                literal.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { return false }
            bytes = bytes[bytes.index(after: close)...]
        } else {
            let end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            let name = bytes[..<end]
            guard !name.isEmpty, name.allSatisfy(isRegNameCharacter) else { return false }
            bytes = bytes[end...]
        }
        guard let colon = bytes.first else { return true }
        guard colon == UInt8(ascii: ":") else { return false }
        let port = bytes.dropFirst()
        return port.count <= 5 && port.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 §3.2.2).
    private static func isRegNameCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~%!$&'()*+,;=".utf8.contains(byte)
        }
    }

    /// The single length named by every Content-Length field and list element; differing
    /// values, non-digits and overflow are errors (RFC 9112 §6.3 rule 5).
    static func contentLength(_ values: [String]) -> Result<Int64, ProxyError> {
        var length: Int64?
        for value in values {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = element.trimmingHTTPWhitespace()
                guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    return .failure(ProxyError(.badRequest, "invalid Content-Length"))
                }
                guard let parsed = Int64(digits) else {
                    return .failure(ProxyError(.badRequest, "Content-Length too large"))
                }
                if let previous = length, previous != parsed {
                    return .failure(ProxyError(.badRequest, "differing Content-Length values"))
                }
                length = parsed
            }
        }
        guard let length else { return .failure(ProxyError(.badRequest, "invalid Content-Length")) }
        return .success(length)
    }
}

/// Parses `method SP request-target SP HTTP-version` (RFC 9112 §3).
enum RequestLineParser {
    struct Line {
        var method: String
        var target: String
        var form: RequestTargetForm
        var path: String
        var query: String?
        var version: HTTPVersion
    }

    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<Line, ProxyError> {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            return .failure(ProxyError(.badRequest, "malformed request line"))
        }
        guard HTTPGrammar.isToken(parts[0]) else {
            return .failure(ProxyError(.badRequest, "invalid method"))
        }
        let versionResult = self.version(parts[2])
        guard case .success(let version) = versionResult else {
            if case .failure(let error) = versionResult { return .failure(error) }
            return .failure(ProxyError(.badRequest, "invalid HTTP version"))
        }
        let targetBytes = parts[1]
        guard isValidTarget(targetBytes) else {
            return .failure(ProxyError(.badRequest, "invalid characters or percent-encoding in the request target"))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: targetBytes, as: UTF8.self)
        guard let (form, path, query) = self.form(of: target, method: method) else {
            return .failure(ProxyError(.badRequest, "invalid request target"))
        }
        return .success(Line(method: method, target: target, form: form, path: path, query: query, version: version))
    }

    private static func version(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> Result<HTTPVersion, ProxyError> {
        let text = Array(bytes)
        guard text.count == 8, text[0..<5].elementsEqual("HTTP/".utf8), text[6] == UInt8(ascii: "."),
            let major = digit(text[5]), let minor = digit(text[7])
        else {
            return .failure(ProxyError(.badRequest, "invalid HTTP version"))
        }
        guard major == 1 else {
            return major == 0
                ? .failure(ProxyError(.badRequest, "invalid HTTP version"))
                : .failure(ProxyError(.versionNotSupported, "only HTTP/1.x is served on this port"))
        }
        // RFC 9110 §6.2: a higher 1.x minor is answered as the highest we speak.
        return .success(minor == 0 ? .http1_0 : .http1_1)
    }

    private static func digit(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    /// Visible ASCII only, no `#` (fragments are never sent, RFC 9112 §3.2), and every `%`
    /// followed by two hex digits.
    private static func isValidTarget(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "#") else { return false }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, HTTPGrammar.isHexDigit(bytes[index + 1]),
                    HTTPGrammar.isHexDigit(bytes[index + 2])
                else { return false }
                index += 2
            }
            index += 1
        }
        return true
    }

    private static func form(of target: String, method: String) -> (RequestTargetForm, String, String?)? {
        func split(_ pathAndQuery: Substring) -> (String, String?) {
            guard let mark = pathAndQuery.firstIndex(of: "?") else { return (String(pathAndQuery), nil) }
            return (String(pathAndQuery[..<mark]), String(pathAndQuery[pathAndQuery.index(after: mark)...]))
        }
        if method == "CONNECT" {
            return (.authority, "", nil)
        }
        if target.hasPrefix("/") {
            let (path, query) = split(Substring(target))
            return (.origin, path, query)
        }
        if target == "*" {
            return method == "OPTIONS" ? (.asterisk, "", nil) : nil
        }
        let lowered = target.lowercased()
        let schemeLength: Int
        if lowered.hasPrefix("http://") {
            schemeLength = 7
        } else if lowered.hasPrefix("https://") {
            schemeLength = 8
        } else {
            return nil
        }
        let rest = target.dropFirst(schemeLength)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<authorityEnd])
        // Userinfo in a request target is never legitimate (RFC 9110 §4.2.4).
        guard !authority.isEmpty, !authority.contains("@"), HTTPGrammar.isValidHost(authority) else { return nil }
        var (path, query) = split(rest[authorityEnd...])
        if path.isEmpty {
            path = "/"
        }
        return (.absolute(authority: authority), path, query)
    }
}

/// Parses `field-name ":" OWS field-value OWS` (RFC 9112 §5).
enum HeaderFieldParser {
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<HTTPHeaders.Field, ProxyError> {
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
        let value: String
        if valueBytes.allSatisfy({ $0 < 0x80 }) {
            value = String(decoding: valueBytes, as: UTF8.self)
        } else if let decoded = String(validating: valueBytes, as: UTF8.self) {
            value = decoded
        } else {
            return .failure(ProxyError(.badRequest, "header value is not valid UTF-8"))
        }
        return .success(HTTPHeaders.Field(name: String(decoding: name, as: UTF8.self), value: value))
    }
}

/// Parses `chunk-size [ chunk-ext ]` (RFC 9112 §7.1).
enum ChunkSizeParser {
    struct ChunkHead {
        var size: Int64
        var extensionBytes: Int
    }

    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<ChunkHead, ProxyError> {
        var size: Int64 = 0
        var index = 0
        while index < line.count, let value = HTTPGrammar.hexValue(line[index]) {
            guard size <= (Int64.max - Int64(value)) / 16 else {
                return .failure(ProxyError(.badRequest, "chunk size overflows"))
            }
            size = size * 16 + Int64(value)
            index += 1
        }
        guard index > 0 else {
            return .failure(ProxyError(.badRequest, "invalid chunk size"))
        }
        let extensionPart = line[index...]
        if !extensionPart.isEmpty {
            // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ): after the size
            // only optional whitespace and then ";" may follow.
            guard let semicolon = extensionPart.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
                line[semicolon] == UInt8(ascii: ";"),
                HTTPGrammar.isValidFieldValue(extensionPart)
            else {
                return .failure(ProxyError(.badRequest, "invalid chunk size"))
            }
        }
        return .success(ChunkHead(size: size, extensionBytes: extensionPart.count))
    }
}
