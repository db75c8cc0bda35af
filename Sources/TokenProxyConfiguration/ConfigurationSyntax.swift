import Foundation

/// The syntax rules configuration values are checked against: HTTP field names and values,
/// host names and addresses, OAuth scope tokens.
enum ConfigurationSyntax {
    /// Whether `name` is an RFC 9110 §5.6.2 token, the syntax of a header field name.
    static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(self.isTokenCharacter)
    }

    /// `tchar`: `!#$%&'*+-.^_`|~`, digits and letters.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Whether `value` may be sent as a header field value: no CR, LF, NUL or other control
    /// character except horizontal tab (RFC 9110 §5.5), so it can never split a header.
    static func isFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }

    /// Header names the proxy itself controls: framing and hop-by-hop headers (RFC 9110 §7.6.1,
    /// RFC 9112 §6-7) that no configuration may add, inject or require.
    static let reservedHeaders: Set<String> = [
        "connection", "content-length", "expect", "host", "keep-alive", "proxy-authorization",
        "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// The problem with a header name used in the configuration, if any.
    static func headerNameProblem(_ name: String) -> String? {
        if !self.isToken(name) {
            return "must be a valid header name (RFC 9110 token characters only)"
        }
        if self.reservedHeaders.contains(name.lowercased()) {
            return "the '\(name)' header is managed by the proxy and cannot be configured"
        }
        return nil
    }

    /// Whether `scope` is an RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`.
    static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty
            && scope.utf8.allSatisfy { byte in
                byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
            }
    }

    /// Whether `text` is a dotted-quad IPv4 address (no leading zeros, which some parsers read as octal).
    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        return parts.allSatisfy { part in
            guard (1...3).contains(part.count), part.allSatisfy(self.isDigit), let value = Int(part) else {
                return false
            }
            return value <= 255 && (part.count == 1 || part.first != "0")
        }
    }

    /// The 16 bytes of an IPv6 address written without brackets, or `nil`.
    static func ipv6Bytes(_ text: String) -> [UInt8]? {
        guard text.contains(":") else { return nil }
        var address = in6_addr()
        let result = withUnsafeMutableBytes(of: &address) { buffer in
            inet_pton(AF_INET6, text, buffer.baseAddress)
        }
        guard result == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// Whether `text` is a host name: dot-separated labels of letters, digits, `-` and `_`, at
    /// most 63 bytes each and 253 in all, the last one not all digits (that would be a malformed
    /// IPv4 address such as `127.1`).
    static func isHostName(_ text: String) -> Bool {
        var name = Substring(text)
        if name.hasSuffix(".") { name = name.dropLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.utf8.count), label.first != "-", label.last != "-" else { return false }
            guard label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                return false
            }
        }
        return !(labels.last?.allSatisfy(self.isDigit) ?? true)
    }

    /// The problem with a `Host` header pattern (`allowed_hosts`, a route's `host`), if any:
    /// a name or address with an optional port; IPv6 in brackets, or bare without a port.
    static func hostPatternProblem(_ pattern: String) -> String? {
        let message = "must be a host name or IP address with an optional port, such as api.local:8080 or [::1]"
        if pattern.isEmpty { return "must not be empty" }
        var host = Substring(pattern)
        var port: Substring?
        if pattern.hasPrefix("[") {
            guard let close = pattern.firstIndex(of: "]") else { return message }
            host = pattern[pattern.index(after: pattern.startIndex)..<close]
            let rest = pattern[pattern.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return message }
                port = rest.dropFirst()
            }
            guard self.ipv6Bytes(String(host)) != nil else { return message }
        } else if pattern.filter({ $0 == ":" }).count > 1 {
            return self.ipv6Bytes(pattern) == nil ? message : nil
        } else {
            if let colon = pattern.firstIndex(of: ":") {
                host = pattern[..<colon]
                port = pattern[pattern.index(after: colon)...]
            }
            guard self.isIPv4(String(host)) || self.isHostName(String(host)) else { return message }
        }
        if let port, self.port(port) == nil { return message }
        return nil
    }

    /// A decimal port number 0...65535 written with 1 to 5 digits.
    static func port(_ text: Substring) -> UInt16? {
        guard (1...5).contains(text.count), text.allSatisfy(self.isDigit) else { return nil }
        return UInt16(text)
    }

    /// `0` to `9` only (`Character.isNumber` accepts other scripts' digits too).
    static func isDigit(_ character: Character) -> Bool {
        character >= "0" && character <= "9"
    }
}
