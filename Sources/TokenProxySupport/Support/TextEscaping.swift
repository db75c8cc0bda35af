/// Control characters made visible, for every place text leaves the process as text: the
/// text log format, the command line's messages, `status`'s table, error messages that
/// quote a peer (`docs/reference/log-fields.md`).
///
/// A token endpoint's `error_description`, an upstream's reason or a callback's query is a
/// peer's text: a raw line feed in it would start a forged log line, and an escape sequence
/// (ESC `[` ...) would be run by the terminal that shows it. Every C0 control character
/// (U+0000 to U+001F), DEL (U+007F) and every C1 control character (U+0080 to U+009F) is
/// written as Swift writes it in a string literal: `\n`, `\r` and `\t` for line feed,
/// carriage return and tab, `\u{XX}` with lower-case hex for the others (`\u{1b}` for ESC,
/// `\u{9b}` for the one-character CSI). Everything else, a backslash included, is kept as
/// it is: the escaping makes a line unforgeable, not reversible.
package enum TextEscaping {
    /// `text` with its control characters escaped; `text` itself (no copy made) when it has
    /// none, which is the common case and costs one pass over its bytes.
    package static func escape(_ text: String) -> String {
        guard self.needsEscaping(text.utf8) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: escaped += "\\n"
            case 0x0D: escaped += "\\r"
            case 0x09: escaped += "\\t"
            case 0x00..<0x20, 0x7F...0x9F:
                escaped += "\\u{"
                escaped += String(scalar.value, radix: 16)
                escaped += "}"
            default:
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// `text` escaped as ``escape(_:)`` does, for a substring or other string-like value.
    package static func escape(_ text: some StringProtocol) -> String {
        self.escape(String(text))
    }

    /// Whether the UTF-8 `bytes` hold a control character: a byte below 0x20, 0x7F, or the
    /// two-byte form of U+0080 to U+009F (0xC2 then 0x80 to 0x9F).
    private static func needsEscaping(_ bytes: String.UTF8View) -> Bool {
        var afterC2 = false
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || (afterC2 && byte <= 0x9F) {
                return true
            }
            afterC2 = byte == 0xC2
        }
        return false
    }
}
