import Foundation
import TokenProxySupport

/// The rule that keeps a forwarded path inside its route's upstream base path
/// (`docs/reference/http-behaviour.md`, "A route's base path is a boundary").
///
/// Upstreams normalise paths in different ways before they route them: nginx decodes escapes
/// and merges slashes, Tomcat and Spring drop `;` path parameters, IIS and Windows treat `\`
/// as a separator and trim trailing dots and spaces, some decoders decode twice or accept
/// overlong UTF-8, some apply Unicode compatibility mapping. A path is refused when any of
/// those readings could find a segment that moves up (RFC 3986 §5.2.4). Every separator any
/// of them might see is split on (`/`, `\`, literally or encoded at any depth), so an encoded
/// slash alone (GitLab's `group%2Fproject`) passes: splitting it only goes deeper.
///
/// A segment is refused when it is still changing after four rounds of percent-decoding, or
/// when one of its readings (the bytes as sent, then each round of percent-decoding until
/// nothing changes):
/// - has a piece (between separators) that, with its `;` parameters removed, is made of dots
///   and spaces only and has a dot (`.`, `..`, `...`, `.. `),
/// - has a control character (`%00`, `%0a`, ... `%7f`, and the C1 controls `%c2%80` to
///   `%c2%9f`),
/// - is not valid UTF-8 (overlong forms such as `%c0%ae` included),
/// - or, as Unicode and after compatibility mapping (NFKC: `%ef%bc%8e`, U+FF0E, is a dot),
///   has a piece of dots, white space and invisible characters (U+2003, U+200B) with a dot.
///
/// Empty segments (`//`) pass: every normaliser merges or keeps them, none climbs with them,
/// and the base path (or `/`) always comes first, so they never start an authority.
enum BasePathBoundary {
    /// Why `path` (percent-encoded as the client sent it) could leave the base path it is
    /// appended to, or nil when no normalising upstream could read it as leaving.
    static func violation(in path: String) -> String? {
        var path = path
        return path.withUTF8 { bytes -> String? in
            var start = 0
            var index = 0
            while index <= bytes.count {
                if index == bytes.count || bytes[index] == UInt8(ascii: "/") {
                    if index > start, let reason = Self.violation(inSegment: bytes[start..<index]) {
                        return reason
                    }
                    start = index + 1
                }
                index += 1
            }
            return nil
        }
    }

    /// Checks one segment between literal slashes. Segments without `%` or `\` (nearly all)
    /// are checked in place; the others are decoded round by round.
    private static func violation(inSegment segment: Slice<UnsafeBufferPointer<UInt8>>) -> String? {
        let needsDecoding = segment.contains { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "\\") }
        guard needsDecoding else {
            return Self.isDotPiece(segment) ? "the path has a dot-segment" : nil
        }
        var reading = Array(segment)
        var rounds = 0
        while true {
            if let reason = Self.violation(inReading: reading, decoded: rounds > 0) {
                return reason
            }
            guard let next = Self.percentDecoded(reading) else { return nil }
            // No real path is encoded over and over; bounding the rounds bounds the work.
            guard rounds < Self.maxDecodingRounds else {
                return "the path is percent-encoded more than \(Self.maxDecodingRounds) times over"
            }
            reading = next
            rounds += 1
        }
    }

    /// How many rounds of percent-decoding a segment may take before it stops changing.
    static let maxDecodingRounds = 4

    /// Checks one reading of a segment: its pieces, its bytes, and its NFKC form.
    private static func violation(inReading reading: [UInt8], decoded: Bool) -> String? {
        var ascii = true
        for byte in reading {
            if byte < 0x20 || byte == 0x7F {
                return "the path has a control character once decoded"
            }
            if byte >= 0x80 {
                ascii = false
            }
        }
        if Self.hasDotPiece(reading) {
            return decoded ? "the path has a dot-segment once decoded" : "the path has a dot-segment"
        }
        if ascii {
            return nil
        }
        guard let text = String(validating: reading, as: UTF8.self) else {
            return "the path is not UTF-8 once decoded"
        }
        // Compatibility mapping turns fullwidth and small dots and solidi (U+FF0E, U+FF0F,
        // U+FF3C, U+FE52, U+2024, U+2025...) into their ASCII forms.
        for form in [text, text.precomposedStringWithCompatibilityMapping] {
            if form.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return "the path has a control character once decoded"
            }
            if Self.hasUnicodeDotPiece(form) {
                return "the path has a dot-segment once Unicode is normalised"
            }
        }
        return nil
    }

    /// Whether a piece between `/` or `\` separators in `text` is made of dots, white space
    /// and invisible characters only (up to its first `;`) and has a dot: servers that trim
    /// Unicode white space (U+00A0, U+2003, U+3000...) or drop invisible characters (U+200B,
    /// U+FEFF) would read it as `.` or `..`.
    private static func hasUnicodeDotPiece(_ text: String) -> Bool {
        var dots = 0
        var onlyDotsSoFar = true
        var inParameters = false
        for scalar in text.unicodeScalars {
            if scalar == "/" || scalar == "\\" {
                if onlyDotsSoFar && dots > 0 {
                    return true
                }
                dots = 0
                onlyDotsSoFar = true
                inParameters = false
            } else if inParameters || !onlyDotsSoFar {
                continue
            } else if scalar == "." {
                dots += 1
            } else if scalar == ";" {
                inParameters = true
            } else if !(scalar.properties.isWhitespace || scalar.properties.isDefaultIgnorableCodePoint) {
                onlyDotsSoFar = false
            }
        }
        return onlyDotsSoFar && dots > 0
    }

    /// Whether a piece between `/` or `\` separators in `reading` is a dot piece.
    private static func hasDotPiece(_ reading: [UInt8]) -> Bool {
        var start = 0
        for index in 0...reading.count {
            if index == reading.count || reading[index] == UInt8(ascii: "/") || reading[index] == UInt8(ascii: "\\") {
                if Self.isDotPiece(reading[start..<index]) {
                    return true
                }
                start = index + 1
            }
        }
        return false
    }

    /// Whether `piece`, up to its first `;` (path parameters, as Tomcat and Spring drop them),
    /// is made of dots and spaces only and has at least one dot. Windows trims trailing dots
    /// and spaces, so `.. ` and `...` are refused along with `.` and `..`.
    private static func isDotPiece<Bytes: Collection<UInt8>>(_ piece: Bytes) -> Bool {
        var dots = 0
        for byte in piece {
            switch byte {
            case UInt8(ascii: "."): dots += 1
            case UInt8(ascii: " "): continue
            case UInt8(ascii: ";"): return dots > 0
            default: return false
            }
        }
        return dots > 0
    }

    /// `bytes` with every valid `%XX` escape decoded (others kept as they are), or nil when
    /// there is none. Each round shortens the reading, so decoding until nil ends.
    private static func percentDecoded(_ bytes: [UInt8]) -> [UInt8]? {
        var result: [UInt8] = []
        var changed = false
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = Hex.value(of: bytes[index + 1]), let low = Hex.value(of: bytes[index + 2])
            {
                if !changed {
                    result.reserveCapacity(bytes.count)
                    result += bytes[..<index]
                    changed = true
                }
                result.append(high << 4 | low)
                index += 3
            } else {
                if changed {
                    result.append(bytes[index])
                }
                index += 1
            }
        }
        return changed ? result : nil
    }
}
