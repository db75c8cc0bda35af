import TokenProxySupport

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
        // Exactly two single spaces, with something between and around them.
        let space = UInt8(ascii: " ")
        guard let methodEnd = line.firstIndex(of: space), methodEnd > line.startIndex,
            let targetEnd = line[(methodEnd + 1)...].firstIndex(of: space), targetEnd > methodEnd + 1,
            targetEnd + 1 < line.endIndex, !line[(targetEnd + 1)...].contains(space)
        else {
            return .failure(ProxyError(.badRequest, "malformed request line"))
        }
        let methodBytes = line[..<methodEnd]
        guard HTTPGrammar.isToken(methodBytes) else {
            return .failure(ProxyError(.badRequest, "invalid method"))
        }
        let version: HTTPVersion
        switch self.version(line[(targetEnd + 1)...]) {
        case .success(let parsed): version = parsed
        case .failure(let error): return .failure(error)
        }
        let targetBytes = line[(methodEnd + 1)..<targetEnd]
        guard isValidTarget(targetBytes) else {
            return .failure(ProxyError(.badRequest, "invalid characters or percent-encoding in the request target"))
        }
        let method = Self.method(methodBytes)
        let target = String(decoding: targetBytes, as: UTF8.self)
        if targetBytes.first == UInt8(ascii: "/"), method != "CONNECT" {
            // Origin-form, nearly every request: path and query straight from the bytes; a
            // target without a query is its own path (one string, not two).
            let mark = targetBytes.firstIndex(of: UInt8(ascii: "?"))
            let path = mark.map { String(decoding: targetBytes[..<$0], as: UTF8.self) } ?? target
            let query = mark.map { String(decoding: targetBytes[($0 + 1)...], as: UTF8.self) }
            return .success(
                Line(method: method, target: target, form: .origin, path: path, query: query, version: version)
            )
        }
        guard let (form, path, query) = self.form(of: target, method: method) else {
            return .failure(ProxyError(.badRequest, "invalid request target"))
        }
        return .success(Line(method: method, target: target, form: form, path: path, query: query, version: version))
    }

    private static func version(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> Result<HTTPVersion, ProxyError> {
        let start = bytes.startIndex
        // Byte by byte: a generic comparison with a string literal's UTF-8 view takes about
        // three hundred instructions.
        guard bytes.count == 8, bytes[start] == UInt8(ascii: "H"), bytes[start + 1] == UInt8(ascii: "T"),
            bytes[start + 2] == UInt8(ascii: "T"), bytes[start + 3] == UInt8(ascii: "P"),
            bytes[start + 4] == UInt8(ascii: "/"),
            bytes[start + 6] == UInt8(ascii: "."), let major = digit(bytes[start + 5]),
            let minor = digit(bytes[start + 7])
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

    /// The method as a String: the common ones as their literals rather than a string decoded
    /// and validated from the bytes of every request (method names are case-sensitive,
    /// RFC 9110 §9.1, so only the exact bytes match).
    private static func method(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> String {
        let raw = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes))
        switch raw.count {
        case 3 where Self.equal(raw, "GET"): return "GET"
        case 3 where Self.equal(raw, "PUT"): return "PUT"
        case 4 where Self.equal(raw, "POST"): return "POST"
        case 4 where Self.equal(raw, "HEAD"): return "HEAD"
        case 5 where Self.equal(raw, "PATCH"): return "PATCH"
        case 6 where Self.equal(raw, "DELETE"): return "DELETE"
        case 7 where Self.equal(raw, "OPTIONS"): return "OPTIONS"
        default: return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func equal(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        bytes.elementsEqual(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
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
        // Origin-form targets were read from the bytes by `parse`.
        if method == "CONNECT" {
            return (.authority, "", nil)
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
