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
