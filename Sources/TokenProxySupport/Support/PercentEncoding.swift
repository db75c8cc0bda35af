/// Percent-encoding of UTF-8 bytes (RFC 3986 §2.1), with the set of bytes kept as they are
/// and the treatment of a space chosen by the caller: the one encoder behind form encoding,
/// OAuth 1 signatures and the secret forms redaction looks for.
package enum PercentEncoding {
    /// Which bytes stay as they are.
    package enum Kept: Sendable {
        /// RFC 3986 §2.3's unreserved characters, `A-Z a-z 0-9 - . _ ~` (RFC 5849 §3.6).
        case unreserved
        /// The WHATWG form serializer's set, `A-Z a-z 0-9 * - . _`.
        case form
    }

    /// `text` with every byte outside `kept` as `%XX` (upper-case hex unless `uppercase` is
    /// false), and a space as `+` when `spaceAsPlus`.
    package static func encode(_ text: String, keeping kept: Kept, spaceAsPlus: Bool = false, uppercase: Bool = true)
        -> String
    {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if Self.keeps(byte, kept) {
                output.append(byte)
            } else if spaceAsPlus, byte == UInt8(ascii: " ") {
                output.append(UInt8(ascii: "+"))
            } else {
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func keeps(_ byte: UInt8, _ kept: Kept) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        case UInt8(ascii: "~"):
            return kept == .unreserved
        case UInt8(ascii: "*"):
            return kept == .form
        default:
            return false
        }
    }
}
