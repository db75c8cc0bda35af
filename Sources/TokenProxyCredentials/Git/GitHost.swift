/// git's `host` and `path` attributes read literally (git-credential(1)): what a route's
/// upstream is compared with. Anything outside the narrow forms git itself writes matches
/// nothing, so a string crafted to look like a route's host to a lenient URL parser never
/// receives that route's token (`docs/reference/security.md`).
enum GitHost {
    /// The longest host name accepted (RFC 1035 §2.3.4 allows 253 characters in text form).
    static let maximumNameLength = 253

    /// `host` as `name[:port]` or `[v6][:port]`, lowercased, with `:port` dropped when it is
    /// `defaultPort`; nil for anything else: user-info (`@`), a backslash, a path (`/`),
    /// percent-encoding, white space, control characters, an empty name, a port that is not
    /// 1 to 65535 in decimal digits (no leading zero), or an IPv6 literal with other than hex digits, `:` and
    /// `.` (no zone identifier).
    static func authority(_ host: String, defaultPort: Int?) -> String? {
        let bytes = Array(host.utf8)
        let nameEnd: Int
        let name: String
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return nil }
            let literal = bytes[1..<close]
            guard literal.contains(UInt8(ascii: ":")), literal.allSatisfy(Self.isIPv6LiteralByte) else { return nil }
            name = "[" + String(decoding: literal, as: UTF8.self).lowercased() + "]"
            nameEnd = close + 1
        } else {
            let end = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.count
            let label = bytes[..<end]
            guard !label.isEmpty, label.count <= Self.maximumNameLength, label.allSatisfy(Self.isNameByte) else {
                return nil
            }
            name = String(decoding: label, as: UTF8.self).lowercased()
            nameEnd = end
        }
        guard nameEnd < bytes.count else { return name }
        guard bytes[nameEnd] == UInt8(ascii: ":"), let port = Self.port(bytes[(nameEnd + 1)...]) else { return nil }
        return port == defaultPort ? name : "\(name):\(port)"
    }

    /// The segments of git's `path` (no leading `/`), or nil when a server could resolve it
    /// to another route's repository: a `.` or `..` segment (plain, percent-encoded, or before
    /// a `;` parameter as servlet containers read `..;`), an empty segment inside it (`a//b`),
    /// an encoded `/`, `\` or `%`, a backslash, a control character or a byte outside ASCII (plain or
    /// decoded, which covers overlong and full-width dots), or a control character.
    static func pathSegments(_ path: String) -> [Substring]? {
        for byte in path.utf8 where byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\\") {
            return nil
        }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.last?.isEmpty == true {
            segments.removeLast()  // `org/repo.git/`
        }
        for segment in segments {
            guard !segment.isEmpty else { return nil }
            let decoded = PercentEncodedSegment(segment)
            guard !decoded.isDotSegment, !decoded.isUnsafe else { return nil }
        }
        return segments
    }

    /// 1 to 65535 written as 1 to 5 decimal digits without a leading zero; nil otherwise.
    private static func port(_ digits: ArraySlice<UInt8>) -> Int? {
        guard (1...5).contains(digits.count), digits.first != UInt8(ascii: "0") else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return (1...65_535).contains(value) ? value : nil
    }

    /// Letters, digits, `-`, `.` and `_` (found in internal host names).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// Hex digits, `:` and `.` (an embedded IPv4 address).
    private static func isIPv6LiteralByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }
}

/// A path segment with its `%XX` escapes decoded only as far as the checks need: whether it
/// is a dot segment (also before a `;` parameter), and whether it hides a separator, a
/// percent sign (a second round of decoding) or a byte outside printable ASCII.
private struct PercentEncodedSegment {
    let isDotSegment: Bool
    let isUnsafe: Bool

    init(_ segment: Substring) {
        var decoded: [UInt8] = []
        var separator = false
        var bytes = segment.utf8[...]
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "%"), bytes.count >= 2,
                let high = Self.hexValue(bytes[bytes.startIndex]),
                let low = Self.hexValue(bytes[bytes.index(after: bytes.startIndex)])
            {
                let value = high << 4 | low
                if value == UInt8(ascii: "/") || value == UInt8(ascii: "\\") || value == UInt8(ascii: "%")
                    || value < 0x20 || value >= 0x7F
                {
                    separator = true
                }
                decoded.append(value)
                bytes = bytes.dropFirst(2)
            } else {
                decoded.append(byte)
            }
        }
        let name = decoded.prefix { $0 != UInt8(ascii: ";") }
        self.isDotSegment =
            name.elementsEqual([UInt8(ascii: ".")]) || name.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
        self.isUnsafe = separator
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
